"""Exact divergences between Gaussian laws, in float64 numpy/scipy.

- :func:`gaussian_renyi` — D_a(N(m1, S1) || N(m2, S2)) in d dimensions (closed form). For
  d = 1 it is the corrected univariate formula of NOTES 000 (the paper's printed one is wrong):
  D_a = ln(s2/s1) + ln(s2^2/s*^2)/(2(a-1)) + a (m1-m2)^2/(2 s*^2), s*^2 = a s2^2 + (1-a) s1^2.
- :func:`gaussian_kl` — the a -> 1 limit.
- :func:`gaussian_hockey_stick` — delta(eps) = sup_S P(S) - e^eps Q(S) of two univariate
  Gaussians, exact for unequal variances: the privacy loss is quadratic in the output, so the
  optimal set S = {loss > eps} is an interval or the complement of one.
- :func:`gaussian_epsilon` — the tight eps at delta (root of the hockey-stick curve).
- :func:`analytic_gaussian_delta` / :func:`analytic_gaussian_epsilon` — the equal-variance
  special case, Balle & Wang (2018) Theorem 8:
  delta = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu), mu = |m1 - m2| / sigma.

Numerics: covariances enter only through a Cholesky factor of the second covariance and the
eigenvalues of the whitened difference W = L2^{-1}(S1 - S2)L2^{-T}; log-determinant ratios are
sums of log1p terms, so nearly equal covariances do not cancel catastrophically; probabilities
are handled as log_ndtr values.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import linalg, optimize, special
from .. import _validate

__all__ = [
    "gaussian_renyi",
    "gaussian_kl",
    "gaussian_hockey_stick",
    "gaussian_log_hockey_stick",
    "gaussian_epsilon",
    "analytic_gaussian_delta",
    "analytic_gaussian_epsilon",
]


# ------------------------------------------------------------------------------------------
# helpers
def log1p_minus_x(x):
    """log(1 + x) - x, accurate for small |x| (where the two terms cancel to O(x^2))."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    small = np.abs(x) < 0.1
    xs = x[small]
    # Series -x^2/2 + x^3/3 - ... ; 20 terms reach float64 accuracy for |x| < 0.1.
    acc = np.zeros_like(xs)
    power = xs * xs
    for k in range(2, 22):
        acc += (-1.0) ** (k + 1) * power / k
        power = power * xs
    out[small] = acc
    xl = x[~small]
    with np.errstate(divide="ignore", invalid="ignore"):
        out[~small] = np.log1p(xl) - xl
    return out


def _as_mean_cov(mean, cov, name: str) -> tuple[np.ndarray, np.ndarray]:
    m = np.atleast_1d(np.asarray(mean, dtype=np.float64))
    if m.ndim != 1:
        raise ValueError(f"{name} mean must be a scalar or a 1-D array; got shape {m.shape}")
    c = np.asarray(cov, dtype=np.float64)
    if c.ndim == 0:
        c = c * np.eye(m.size)
    elif c.ndim == 1:
        # A vector is read as the diagonal of the covariance.
        c = np.diag(c)
    if c.shape != (m.size, m.size):
        raise ValueError(f"{name} covariance has shape {c.shape}; expected ({m.size}, {m.size}) to match its mean")
    if not (np.all(np.isfinite(m)) and np.all(np.isfinite(c))):
        raise ValueError(f"{name} mean and covariance must be finite")
    if not np.allclose(c, c.T, rtol=1e-12, atol=0):
        raise ValueError(f"{name} covariance must be symmetric")
    return m, c


def _whitened(mean1, cov1, mean2, cov2):
    """Eigenvalues mu_i of W = L2^{-1}(S1 - S2)L2^{-T} and z = U^T L2^{-1}(m1 - m2)."""
    m1, c1 = _as_mean_cov(mean1, cov1, "first")
    m2, c2 = _as_mean_cov(mean2, cov2, "second")
    if m1.size != m2.size:
        raise ValueError(f"the two Gaussians have dimensions {m1.size} and {m2.size}; they must match")
    try:
        chol2 = linalg.cholesky(c2, lower=True)
        linalg.cholesky(c1, lower=True)
    except linalg.LinAlgError as err:
        raise ValueError("both covariances must be positive definite") from err
    w = linalg.solve_triangular(chol2, (c1 - c2), lower=True)
    w = linalg.solve_triangular(chol2, w.T, lower=True)
    w = 0.5 * (w + w.T)
    eig, vec = linalg.eigh(w)
    eig = np.maximum(eig, -1.0 + 1e-300)  # eigenvalues of S2^{-1}S1 minus 1 are > -1
    z = vec.T @ linalg.solve_triangular(chol2, m1 - m2, lower=True)
    return eig, z


def _check_order(order) -> np.ndarray:
    a = np.asarray(order, dtype=np.float64)
    if np.any(~(a > 0)) or np.any(~np.isfinite(a)):
        raise ValueError(f"order={order!r} violates 0 < order < inf")
    return a


# ------------------------------------------------------------------------------------------
# Rényi and KL
@_validate.arguments(mean1="numbers", cov1="numbers", mean2="numbers", cov2="numbers")
def gaussian_kl(mean1, cov1, mean2, cov2) -> float:
    """KL(N(m1, S1) || N(m2, S2)) = 1/2 [sum_i (mu_i - log1p(mu_i)) + |L2^{-1}(m1 - m2)|^2].

    Scalars are read as 1-D (a scalar covariance is a variance); a 1-D covariance as a diagonal.
    """
    eig, z = _whitened(mean1, cov1, mean2, cov2)
    return float(0.5 * (-np.sum(log1p_minus_x(eig)) + np.sum(z * z)))


@_validate.arguments(mean1="numbers", cov1="numbers", mean2="numbers", cov2="numbers", order="numbers")
def gaussian_renyi(mean1, cov1, mean2, cov2, order):
    """Rényi divergence D_a(N(m1, S1) || N(m2, S2)) of order a > 0 (a = 1: KL).

    Closed form (e.g. Gil, Alajaji & Linder 2013; NOTES 000 erratum for d = 1):
    D_a = a/2 dm^T S*^{-1} dm - 1/(2(a-1)) ln[det S* / (det S1^(1-a) det S2^a)],
    S* = a S2 + (1-a) S1. Returns +inf where S* is not positive definite (a > 1 only).
    In whitened coordinates S* has eigenvalues 1 + (1-a) mu_i, and the log-det ratio is
    sum_i [log1p((1-a) mu_i) - (1-a) log1p(mu_i)], computed via log1p(x) - x so nearly equal
    covariances do not cancel. ``order`` may be an array; the result has its shape.
    """
    a = _check_order(order)
    eig, z = _whitened(mean1, cov1, mean2, cov2)
    flat = np.atleast_1d(a).ravel()
    out = np.empty_like(flat)
    for i, ai in enumerate(flat):
        if ai == 1.0:
            out[i] = 0.5 * (-np.sum(log1p_minus_x(eig)) + np.sum(z * z))
            continue
        b = 1.0 - ai
        star = 1.0 + b * eig
        if np.any(~(star > 0)):
            out[i] = np.inf
            continue
        # ln det ratio: sum log1p(b mu) - b log1p(mu) = sum f(b mu) - b f(mu), f(x) = log1p(x) - x
        logdet = np.sum(log1p_minus_x(b * eig) - b * log1p_minus_x(eig))
        out[i] = 0.5 * ai * np.sum(z * z / star) - logdet / (2.0 * (ai - 1.0))
    out = np.maximum(out, 0.0)
    return out.reshape(a.shape) if a.ndim else float(out[0])


# ------------------------------------------------------------------------------------------
# hockey-stick divergence of two univariate Gaussians
def _log_diff_ndtr(lo: float, hi: float) -> float:
    """log(Phi(hi) - Phi(lo)) for lo <= hi, without cancellation in either tail."""
    if hi <= lo:
        return -np.inf
    if lo > 0:  # upper tail: use Phi(-lo) - Phi(-hi)
        lo, hi = -hi, -lo
    lh = special.log_ndtr(hi)
    ll = special.log_ndtr(lo)
    return float(lh + _log1mexp(ll - lh))


def _log1mexp(x: float) -> float:
    """log(1 - e^x) for x <= 0."""
    if x == -np.inf:
        return 0.0
    if x > -math.log(2.0):
        return math.log(-math.expm1(x))
    return math.log1p(-math.exp(x))


def _log_prob(kind: str, lo: float, hi: float, mean: float, sd: float) -> float:
    """log P(X in S) for X ~ N(mean, sd^2); S = (lo, hi) ("inside") or its complement."""
    a = (lo - mean) / sd
    b = (hi - mean) / sd
    if kind == "inside":
        return _log_diff_ndtr(a, b)
    return float(np.logaddexp(special.log_ndtr(a), special.log_ndtr(-b)))


def _loss_set(mu: float, rho: float, rho2_minus_1: float, eps: float):
    """The set {u : log p(u) - log q(u) > eps} for p = N(mu, rho^2), q = N(0, 1).

    2 rho^2 (loss - eps) = A u^2 + B u + C with A = rho^2 - 1, B = 2 mu,
    C = -mu^2 - 2 rho^2 (ln rho + eps). Returns (kind, lo, hi), kind "inside"/"outside".
    """
    A = rho2_minus_1
    B = 2.0 * mu
    C = -mu * mu - 2.0 * rho * rho * (math.log(rho) + eps)
    if A == 0.0:
        if B > 0:
            return "outside", -np.inf, -C / B  # u > -C/B
        if B < 0:
            return "inside", -np.inf, -C / B
        return ("outside", 0.0, 0.0) if C > 0 else ("inside", 0.0, 0.0)
    disc = B * B - 4.0 * A * C
    if disc <= 0:
        # no real roots: the quadratic has the sign of A everywhere
        return ("outside", 0.0, 0.0) if A > 0 else ("inside", 0.0, 0.0)
    sq = math.sqrt(disc)
    q = -0.5 * (B + math.copysign(sq, B)) if B != 0 else -0.5 * sq
    r1, r2 = q / A, C / q
    lo, hi = min(r1, r2), max(r1, r2)
    return ("outside", lo, hi) if A > 0 else ("inside", lo, hi)


def _check_sd(name: str, value) -> float:
    v = float(value)
    if not (v > 0 and math.isfinite(v)):
        raise ValueError(f"{name}={value!r} violates {name} > 0 (finite)")
    return v


def _log_hockey_scalar(mean1: float, sd1: float, mean2: float, sd2: float, eps: float) -> float:
    sd1 = _check_sd("sd1", sd1)
    sd2 = _check_sd("sd2", sd2)
    if not (math.isfinite(mean1) and math.isfinite(mean2)):
        raise ValueError(f"means ({mean1!r}, {mean2!r}) must be finite")
    if math.isnan(eps):
        raise ValueError("epsilon must not be NaN")
    # Standardise by Q: u = (x - m2)/s2, P = N(mu, rho^2).
    mu = (mean1 - mean2) / sd2
    rho = sd1 / sd2
    rho2_minus_1 = (sd1 - sd2) * (sd1 + sd2) / (sd2 * sd2)
    if eps == np.inf:
        return -np.inf
    kind, lo, hi = _loss_set(mu, rho, rho2_minus_1, eps)
    log_p = _log_prob(kind, lo, hi, mu, rho)
    if log_p == -np.inf:
        return -np.inf
    log_q = _log_prob(kind, lo, hi, 0.0, 1.0)
    gap = eps + log_q - log_p  # < 0 on the optimal set
    if gap >= 0:
        return -np.inf
    return log_p + _log1mexp(gap)


@_validate.arguments(mean1="numbers", sd1="numbers", mean2="numbers", sd2="numbers", epsilon="numbers")
def gaussian_log_hockey_stick(mean1, sd1, mean2, sd2, epsilon):
    """log delta(eps) for P = N(mean1, sd1^2) vs Q = N(mean2, sd2^2) (see gaussian_hockey_stick)."""
    vec = np.vectorize(_log_hockey_scalar, otypes=[np.float64])
    out = vec(mean1, sd1, mean2, sd2, epsilon)
    return out if np.ndim(out) else float(out)


@_validate.arguments(mean1="numbers", sd1="numbers", mean2="numbers", sd2="numbers", epsilon="numbers")
def gaussian_hockey_stick(mean1, sd1, mean2, sd2, epsilon):
    """delta(eps) = sup_S [P(S) - e^eps Q(S)] for P = N(mean1, sd1^2), Q = N(mean2, sd2^2).

    Exact for unequal variances: the log-likelihood ratio is quadratic, S = {loss > eps} is an
    interval (sd1 < sd2) or the complement of one (sd1 > sd2), or a half-line (equal sds,
    where this reduces to Balle & Wang 2018). Broadcasts over its arguments.
    """
    out = np.exp(gaussian_log_hockey_stick(mean1, sd1, mean2, sd2, epsilon))
    return out if np.ndim(out) else float(out)


def _epsilon_from_log_delta(log_delta_fn, delta: float) -> float:
    """Smallest eps >= 0 with delta(eps) <= delta, for a non-increasing delta(eps)."""
    target = math.log(delta)
    if log_delta_fn(0.0) <= target:
        return 0.0
    hi = 1.0
    while log_delta_fn(hi) > target:
        hi *= 2.0
        if hi > 1e300:  # delta(eps) > 0 for every finite eps a float can hold
            return np.inf
    lo = hi / 2.0 if hi > 1.0 else 0.0
    return float(optimize.brentq(lambda e: log_delta_fn(e) - target, lo, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps))


def _check_delta(delta) -> float:
    d = float(delta)
    if not (0 < d < 1):
        raise ValueError(f"delta={delta!r} violates 0 < delta < 1")
    return d


@_validate.arguments(mean1="number", sd1="number", mean2="number", sd2="number", delta="number")
def gaussian_epsilon(mean1, sd1, mean2, sd2, delta) -> float:
    """Tight eps at ``delta`` for P = N(mean1, sd1^2) vs Q = N(mean2, sd2^2) (one direction).

    The smallest eps >= 0 with hockey-stick delta_P||Q(eps) <= delta, by bracketing and
    Brent's method on log delta(eps). For the symmetric DP notion take the max of both orders.
    """
    d = _check_delta(delta)
    return _epsilon_from_log_delta(lambda e: _log_hockey_scalar(float(mean1), float(sd1), float(mean2), float(sd2), e), d)


# ------------------------------------------------------------------------------------------
# equal variances: the analytic Gaussian mechanism
def _log_analytic_delta(mu: float, eps: float) -> float:
    if mu == 0.0:
        return -np.inf
    la = special.log_ndtr(mu / 2.0 - eps / mu)
    lb = eps + special.log_ndtr(-mu / 2.0 - eps / mu)
    if lb >= la:
        return -np.inf
    return float(la + _log1mexp(lb - la))


@_validate.arguments(sensitivity_over_sigma="numbers", epsilon="numbers")
def analytic_gaussian_delta(sensitivity_over_sigma, epsilon):
    """Balle & Wang (2018) Thm 8: delta(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu),
    for the Gaussian mechanism with mu = sensitivity / sigma (equal variances)."""
    mu = np.asarray(sensitivity_over_sigma, dtype=np.float64)
    if np.any(~(mu >= 0)) or np.any(~np.isfinite(mu)):
        raise ValueError(f"sensitivity_over_sigma={sensitivity_over_sigma!r} violates 0 <= value < inf")
    out = np.exp(np.vectorize(_log_analytic_delta, otypes=[np.float64])(mu, epsilon))
    return out if np.ndim(out) else float(out)


@_validate.arguments(sensitivity_over_sigma="number", delta="number")
def analytic_gaussian_epsilon(sensitivity_over_sigma, delta) -> float:
    """Tight eps at ``delta`` of the Gaussian mechanism with mu = sensitivity / sigma."""
    mu = float(sensitivity_over_sigma)
    if not (mu >= 0 and math.isfinite(mu)):
        raise ValueError(f"sensitivity_over_sigma={sensitivity_over_sigma!r} violates 0 <= value < inf")
    d = _check_delta(delta)
    return _epsilon_from_log_delta(lambda e: _log_analytic_delta(mu, e), d)

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
from ... import _validate

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


def _as_mean_cov(mean, cov, mean_name: str, cov_name: str) -> tuple[np.ndarray, np.ndarray]:
    """(mean, covariance) as float64 arrays, checked: each error names the argument it is about."""
    m = np.atleast_1d(np.asarray(mean, dtype=np.float64))
    if m.ndim != 1:
        raise ValueError(f"{mean_name} must be a scalar or a 1-D array; got shape {m.shape}")
    c = np.asarray(cov, dtype=np.float64)
    if c.ndim == 0:
        c = c * np.eye(m.size)
    elif c.ndim == 1:
        # A vector is read as the diagonal of the covariance.
        c = np.diag(c)
    if c.shape != (m.size, m.size):
        raise ValueError(f"{cov_name} has shape {c.shape}; expected ({m.size}, {m.size}) to match {mean_name}")
    check_gaussian(mean_name, m, cov_name, c)
    return m, c


def check_gaussian(mean_name: str, mean: np.ndarray, cov_name: str, cov: np.ndarray) -> None:
    """A Gaussian N(mean, cov) must have a finite mean and a finite, symmetric, positive-definite
    covariance; the error names the argument (``mean_name`` or ``cov_name``), its value and the rule."""
    _validate.finite_array(mean_name, mean)
    _validate.finite_array(cov_name, cov)
    if not np.allclose(cov, cov.T, rtol=1e-12, atol=0):
        raise ValueError(f"{cov_name}={_validate._fmt(cov.tolist())} violates {cov_name} symmetric")
    try:
        linalg.cholesky(cov, lower=True)
    except linalg.LinAlgError:
        smallest = float(linalg.eigvalsh(cov)[0]) if cov.size else float("nan")
        raise ValueError(
            f"{cov_name}={_validate._fmt(cov.tolist())} violates {cov_name} positive definite "
            f"(its smallest eigenvalue is {smallest:.6g})"
        ) from None


def _whitened(mean1, cov1, mean2, cov2, names=("mean1", "cov1", "mean2", "cov2")):
    """Eigenvalues mu_i of W = L2^{-1}(S1 - S2)L2^{-T} and z = U^T L2^{-1}(m1 - m2)."""
    m1, c1 = _as_mean_cov(mean1, cov1, names[0], names[1])
    m2, c2 = _as_mean_cov(mean2, cov2, names[2], names[3])
    if m1.size != m2.size:
        raise ValueError(f"{names[0]} and {names[2]} have dimensions {m1.size} and {m2.size}; they must match")
    chol2 = linalg.cholesky(c2, lower=True)
    w = linalg.solve_triangular(chol2, (c1 - c2), lower=True)
    w = linalg.solve_triangular(chol2, w.T, lower=True)
    w = 0.5 * (w + w.T)
    eig, vec = linalg.eigh(w)
    eig = np.maximum(eig, -1.0 + 1e-300)  # eigenvalues of S2^{-1}S1 minus 1 are > -1
    z = vec.T @ linalg.solve_triangular(chol2, m1 - m2, lower=True)
    # log(1 + mu) - mu: near mu = 0 from mu itself; near mu = -1 (S1 far narrower than S2 along
    # some direction, e.g. variances 1 and 1e300) from the eigenvalues of S2^{-1}S1 themselves,
    # since 1 + mu rounds to 0 there (and the divergence would come out +inf instead of finite).
    ratio = linalg.solve_triangular(chol2, c1, lower=True)
    ratio = linalg.solve_triangular(chol2, ratio.T, lower=True)
    lam = np.maximum(linalg.eigvalsh(0.5 * (ratio + ratio.T)), 1e-320)
    with np.errstate(divide="ignore"):
        f_eig = np.where(eig < -0.5, np.log(lam) - eig, log1p_minus_x(eig))
    if not (np.all(np.isfinite(eig)) and np.all(np.isfinite(z))):
        raise ValueError(
            f"{names[0]}, {names[1]}, {names[2]}, {names[3]}: the whitened covariance ratio or mean gap overflows "
            "float64 (the two Gaussians are too far apart to resolve)"
        )
    return eig, z, f_eig


def _check_order(order) -> np.ndarray:
    a = np.asarray(order, dtype=np.float64)
    if np.any(~(a > 0)) or np.any(~np.isfinite(a)):
        bad = a[~((a > 0) & np.isfinite(a))].ravel()[0] if a.ndim else float(a)
        raise ValueError(f"order={_validate._fmt(float(bad))} violates 0 < order < inf")
    return a


# ------------------------------------------------------------------------------------------
# Rényi and KL
@_validate.arguments(mean1="numbers", cov1="numbers", mean2="numbers", cov2="numbers")
def gaussian_kl(mean1, cov1, mean2, cov2) -> float:
    """KL(N(m1, S1) || N(m2, S2)) = 1/2 [sum_i (mu_i - log1p(mu_i)) + |L2^{-1}(m1 - m2)|^2].

    Scalars are read as 1-D (a scalar covariance is a variance); a 1-D covariance as a diagonal.
    """
    eig, z, f_eig = _whitened(mean1, cov1, mean2, cov2)
    return float(0.5 * (-np.sum(f_eig) + np.sum(z * z)))


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
    eig, z, f_eig = _whitened(mean1, cov1, mean2, cov2)
    flat = np.atleast_1d(a).ravel()
    out = np.empty_like(flat)
    for i, ai in enumerate(flat):
        if ai == 1.0:
            out[i] = 0.5 * (-np.sum(f_eig) + np.sum(z * z))
            continue
        b = 1.0 - ai
        star = 1.0 + b * eig
        if np.any(~(star > 0)):
            out[i] = np.inf
            continue
        # ln det ratio: sum log1p(b mu) - b log1p(mu) = sum f(b mu) - b f(mu), f(x) = log1p(x) - x
        logdet = np.sum(log1p_minus_x(b * eig) - b * f_eig)
        out[i] = 0.5 * ai * np.sum(z * z / star) - logdet / (2.0 * (ai - 1.0))
    out = np.maximum(out, 0.0)
    return out.reshape(a.shape) if a.ndim else float(out[0])


# ------------------------------------------------------------------------------------------
# hockey-stick divergence of two univariate Gaussians
# 20-point Gauss–Legendre rule on [-1, 1]: exact to float64 for the smooth integrands below.
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(20)


def _log_diff_ndtr(lo: float, hi: float) -> float:
    """log(Phi(hi) - Phi(lo)) for lo <= hi, without cancellation in either tail.

    A narrow interval (half-width h with h (|m| + h) < 1 around its midpoint m) is integrated
    directly: Phi(hi) - Phi(lo) = h phi(m) int_{-1}^{1} exp(-m h s - h^2 s^2 / 2) ds, so an
    interval of width 1e-300 keeps full relative precision (the difference of two log_ndtr
    values would round to 0 and the log to a domain error)."""
    if hi <= lo:
        return -np.inf
    if lo > 0:  # upper tail: use Phi(-lo) - Phi(-hi)
        lo, hi = -hi, -lo
    half = 0.5 * (hi - lo)
    mid = lo + half
    if math.isfinite(half) and half * (abs(mid) + half) < 1.0:
        s = _GL_NODES
        integral = float(np.dot(_GL_WEIGHTS, np.exp(-mid * half * s - 0.5 * half * half * s * s)))
        return math.log(half) - 0.5 * mid * mid - 0.5 * math.log(2.0 * math.pi) + math.log(integral)
    lh = special.log_ndtr(hi)
    ll = special.log_ndtr(lo)
    return float(lh + _log1mexp(ll - lh))


def _log_mills(x: float) -> float:
    """log m(x), m(x) = Phi(-x) / phi(x) (the Mills ratio), for any real x without overflow or
    cancellation: via erfcx for x >= -20, via log_ndtr(-x) + x^2/2 + log sqrt(2 pi) below."""
    if x >= -20.0:
        return 0.5 * math.log(0.5 * math.pi) + math.log(float(special.erfcx(x / math.sqrt(2.0))))
    return float(special.log_ndtr(-x)) + 0.5 * x * x + 0.5 * math.log(2.0 * math.pi)


def _log_gap_on_tails(pieces, mu: float, rho: float) -> float:
    """log(e^eps Q(S)) - log P(S) for S a union of half-lines whose finite ends b lie on the
    level set {loss = eps}, p = N(mu, rho^2), q = N(0, 1).

    At such a b, e^eps q(b) = p(b), so each tail's e^eps Q-mass is p(b) m(s b) and its P-mass
    rho p(b) m(s (b - mu)/rho) (s = +1 for u > b, -1 for u < b; m the Mills ratio). The
    common factors p(b) then cancel in the ratio instead of eps cancelling against log Q(S),
    which at eps ~ 1e16 and beyond would leave only rounding noise."""
    log_w = [-0.5 * ((b - mu) / rho) ** 2 for b, _ in pieces]  # log p(b) up to a common constant
    top = [w + _log_mills(sign * b) for w, (b, sign) in zip(log_w, pieces)]
    bottom = [w + _log_mills(sign * (b - mu) / rho) for w, (b, sign) in zip(log_w, pieces)]
    return float(np.logaddexp.reduce(top) - math.log(rho) - np.logaddexp.reduce(bottom))


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


def _loss_set(mu: float, rho: float, rho_minus_1: float, rho_plus_1: float, eps: float):
    """The set {u : log p(u) - log q(u) > eps} for p = N(mu, rho^2), q = N(0, 1).

    2 rho^2 (loss - eps) = A u^2 + B u + C with A = rho^2 - 1, B = 2 mu,
    C = -mu^2 - 2 rho^2 (ln rho + eps). Returns (kind, lo, hi), kind "inside"/"outside".

    The quadratic is solved in scaled form so that neither mu^2 nor rho^2 over- or underflows
    (|mu| or rho up to ~1e308 or down to ~1e-308): with u = k v and the equation divided by
    r^2, where r ~ max(|mu|, rho) and k = r / max(1, rho) are powers of two (so the scaling is
    exact and, for moderate mu and rho, the roots are those of the unscaled quadratic),
    A' = A k^2/r^2, B' = 2 mu k/r^2, C' = -(mu/r)^2 - 2 (rho/r)^2 (ln rho + eps) are all of
    order one unless eps itself is near the float64 limit.
    """
    e_r = math.frexp(max(abs(mu), rho))[1] - 1
    e_rho = max(0, math.frexp(rho)[1] - 1)
    r = math.ldexp(1.0, e_r)
    k = math.ldexp(1.0, e_r - e_rho)
    A = (rho_minus_1 * k / r) * (rho_plus_1 * k / r)
    B = 2.0 * (mu / r) * (k / r)
    C = -((mu / r) ** 2) - 2.0 * (rho / r) ** 2 * (math.log(rho) + eps)
    if not (math.isfinite(A) and math.isfinite(B) and math.isfinite(C)):
        raise OverflowError("loss quadratic")
    if A == 0.0:
        if B > 0:
            return "outside", -np.inf, k * (-C / B)  # u > -C/B
        if B < 0:
            return "inside", -np.inf, k * (-C / B)
        return ("outside", 0.0, 0.0) if C > 0 else ("inside", 0.0, 0.0)
    disc = B * B - 4.0 * A * C
    if disc <= 0:
        # no real roots: the quadratic has the sign of A everywhere
        return ("outside", 0.0, 0.0) if A > 0 else ("inside", 0.0, 0.0)
    sq = math.sqrt(disc)
    q = -0.5 * (B + math.copysign(sq, B)) if B != 0 else -0.5 * sq
    r1, r2 = q / A, C / q
    lo, hi = k * min(r1, r2), k * max(r1, r2)
    return ("outside", lo, hi) if A > 0 else ("inside", lo, hi)


def _check_sd(name: str, value) -> float:
    v = float(value)
    if not (v > 0 and math.isfinite(v)):
        raise ValueError(f"{name}={value!r} violates {name} > 0 (finite)")
    return v


def _check_mean(name: str, value) -> float:
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name}={_validate._fmt(v)} violates {name} finite (a Gaussian's mean)")
    return v


# Below this eps, e^eps is 0 in float64, so delta(eps) = sup_S P(S) - e^eps Q(S) is 1 to
# float64 precision (it lies in [1 - e^eps, 1]).
_EPS_DELTA_ONE = -746.0


def _delta_is_one(mu: float, rho: float, eps: float) -> bool:
    """Whether delta(eps) = 1 to float64 precision, from the lower bound P(S) - e^eps Q(S) on
    three simple sets S (delta <= 1 always): the half-line split where both laws are equally
    many sds away, |u| > 40 (P wider than Q) and P's central +-40 sds (P narrower). This
    settles laws too far apart (or too different in width) for the loss set itself to be
    resolved in float64, e.g. a mean gap of 1e300 sds, where the roots of the loss quadratic
    lose all relative precision."""
    z = abs(mu) / (1.0 + rho)
    sets = [(float(special.log_ndtr(z)), float(special.log_ndtr(-z)))]
    if rho > 1.0:
        # |u| > c with c^2/2 beyond eps by a relative margin that float rounding cannot eat
        for c in (40.0, math.sqrt(2.0 * (max(eps, 0.0) * (1.0 + 1e-9) + 100.0))):
            sets.append((_log_prob("outside", -c, c, mu, rho), math.log(2.0) + float(special.log_ndtr(-c))))
    elif rho < 1.0:
        lo, hi = mu - 40.0 * rho, mu + 40.0 * rho
        sets.append((_log_prob("inside", lo, hi, mu, rho), _log_prob("inside", lo, hi, 0.0, 1.0)))
    for log_p, log_q in sets:
        gap = eps + log_q - log_p
        if gap < 0 and math.exp(log_p + _log1mexp(gap)) == 1.0:
            return True
    return False


def _log_hockey_scalar(mean1: float, sd1: float, mean2: float, sd2: float, eps: float) -> float:
    sd1 = _check_sd("sd1", sd1)
    sd2 = _check_sd("sd2", sd2)
    mean1 = _check_mean("mean1", mean1)
    mean2 = _check_mean("mean2", mean2)
    eps = float(eps)
    if math.isnan(eps):
        raise ValueError("epsilon=nan violates epsilon a real number (not NaN)")
    if eps == np.inf:
        return -np.inf  # e^eps Q(S) = inf for every S with Q(S) > 0, and P << Q: delta = 0
    if eps < _EPS_DELTA_ONE:
        return 0.0
    # Standardise by Q: u = (x - m2)/s2, P = N(mu, rho^2). rho^2 - 1 = (rho - 1)(rho + 1) is
    # kept as two factors formed from sd1 - sd2 (exact for close sds, and no overflow of rho^2).
    mu = mean1 / sd2 - mean2 / sd2 if abs(mean1 - mean2) == math.inf else (mean1 - mean2) / sd2
    rho = sd1 / sd2
    where = (
        f"mean1={_validate._fmt(mean1)}, sd1={_validate._fmt(sd1)}, mean2={_validate._fmt(mean2)}, "
        f"sd2={_validate._fmt(sd2)}, epsilon={_validate._fmt(eps)}"
    )
    if not (math.isfinite(mu) and math.isfinite(rho) and rho > 0):
        raise ValueError(
            f"{where}: the standardised gap (mean1 - mean2)/sd2 = {_validate._fmt(mu)} or the sd ratio sd1/sd2 = "
            f"{_validate._fmt(rho)} is outside float64's range; the hockey-stick divergence is not resolvable there"
        )
    if _delta_is_one(mu, rho, eps):
        return 0.0
    try:
        kind, lo, hi = _loss_set(mu, rho, (sd1 - sd2) / sd2, (sd1 + sd2) / sd2, eps)
    except OverflowError:
        raise ValueError(f"{where}: the privacy-loss quadratic overflows float64 (epsilon too large in magnitude to resolve)") from None
    log_p = _log_prob(kind, lo, hi, mu, rho)
    if log_p == -np.inf:
        return -np.inf
    if kind == "outside" and lo < hi:  # two tails (or one: lo = -inf), ends on the level set
        pieces = [(b, sign) for b, sign in ((lo, -1.0), (hi, 1.0)) if math.isfinite(b)]
        gap = _log_gap_on_tails(pieces, mu, rho) if pieces else -np.inf
    elif kind == "inside" and lo == -np.inf and math.isfinite(hi):  # one tail u < hi
        gap = _log_gap_on_tails([(hi, -1.0)], mu, rho)
    else:  # an interval: bounded loss, eps below its maximum
        log_q = _log_prob(kind, lo, hi, 0.0, 1.0)
        gap = eps + log_q - log_p  # < 0 on the optimal set
        rounding = 4.0 * np.finfo(float).eps * (abs(eps) + abs(log_q) + abs(log_p))
        if abs(gap) <= rounding:
            raise ValueError(f"{where}: eps + log Q(S) - log P(S) = {gap:.3g} is below its rounding error {rounding:.3g}; "
                             "the hockey-stick divergence is not resolvable in float64 here")
    if gap >= 0:
        return -np.inf
    out = log_p + _log1mexp(gap)
    if math.isnan(out):  # never a silent NaN
        raise ValueError(f"{where}: the hockey-stick divergence is not resolvable in float64 here")
    return out


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
    if eps == np.inf:
        return -np.inf  # the limit eps -> inf of delta(eps) (P << Q)
    if eps < _EPS_DELTA_ONE:
        return 0.0  # e^eps = 0 in float64: delta = 1 (see _EPS_DELTA_ONE)
    if mu == 0.0:  # P = Q: delta(eps) = (1 - e^eps)_+
        return _log1mexp(eps) if eps < 0 else -np.inf
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

"""From a 2-Wasserstein distance and Lipschitz densities to a DP-like bound: paper 000 §5
(Claim 5.1, Theorem 2, Claims E.1-E.2), as functions, with closed forms for Gaussian pairs.

Notation of the paper: W2(p, q) < eps^2 (so eps = sqrt(W2) plays the role of a radius),
p_lambda(x) = P(B_lambda(x)) / vol_d(lambda) the density averaged over a ball of radius lambda,
vol_d(r) = pi^{d/2} r^d / Gamma(d/2 + 1), and L a Lipschitz constant of both densities.

* Claim E.1: p(B_r(x)) <= q(B_{r+eps}(x)) + eps   (optimal coupling + Markov on E|X - Y| <= W2)
  -> :func:`claim_e1_rhs`.
* Claim 5.1: |p(x) - p_lambda(x)| <= lambda L   -> :func:`claim51_bound`.
* Theorem 2 / Claim E.2 (eq. 9 = eq. 59), lambda > eps:
  p_lambda(x) <= V q_lambda(x) + (V - 1) 2 lambda L + eps / vol_d(lambda - eps),
  V = vol_d(lambda)/vol_d(lambda - eps) = (lambda/(lambda - eps))^d   -> :func:`theorem2_rhs`,
  :func:`theorem2_terms` (the factor V and the additive term on their own).
* Pointwise form (dpjax corollary of Claim 5.1 applied on both sides, not printed):
  p(x) <= V q(x) + (V + 1) lambda L + (V - 1) 2 lambda L + eps / vol_d(lambda - eps)
  -> :func:`pointwise_rhs`.

The bound reads like (log V, A)-DP for densities: p <= e^{log V} q + A, with A an additive
*density*. It is vacuous wherever its right side exceeds the largest value p_lambda can take,
and since the right side is at least A everywhere, it says nothing at all once
A >= sup p_lambda. :func:`vacuity_ratio` computes min over lambda of A(lambda)/sup p_lambda for
an isotropic Gaussian p, the quantity the experiment plots against d: the paper's remark that
V = (1 + eps/(lambda - eps))^d makes the bound useless in high dimension.

Gaussian closed forms (isotropic N(m, s^2 I_d)): W2 between two of them is
sqrt(|m1 - m2|^2 + d (s1 - s2)^2); the density's gradient norm r/s^2 phi(r) peaks at r = s, so
its Lipschitz constant is (2 pi)^{-d/2} s^{-(d+1)} e^{-1/2}; a ball's probability is a
non-central chi-square CDF, P(|X - x| <= r) = F_{chi'^2_d(|x - m|^2/s^2)}(r^2/s^2).
"""
from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special, stats

from ... import _validate as V

__all__ = [
    "log_ball_volume",
    "log_volume_ratio",
    "claim51_bound",
    "claim_e1_rhs",
    "theorem2_terms",
    "theorem2_rhs",
    "pointwise_rhs",
    "gaussian_w2",
    "gaussian_lipschitz",
    "gaussian_ball_probability",
    "gaussian_smoothed_density",
    "gaussian_density",
    "vacuity_ratio",
    "largest_nonvacuous_w2",
]


def _dim(d) -> int:
    return V.positive_int("dim", d)


def log_ball_volume(dim: int, radius) -> np.ndarray:
    """log vol_d(r) = (d/2) log pi + d log r - log Gamma(d/2 + 1)."""
    d = _dim(dim)
    r = np.asarray(radius, dtype=np.float64)
    if np.any(~(r > 0)):
        raise ValueError(f"radius={radius!r} violates radius > 0")
    out = 0.5 * d * math.log(math.pi) + d * np.log(r) - special.gammaln(0.5 * d + 1.0)
    return out if out.ndim else float(out)


def _lambda_eps(smoothing, eps):
    lam = np.asarray(smoothing, dtype=np.float64)
    e = np.asarray(eps, dtype=np.float64)
    if np.any(~(e > 0)) or np.any(~np.isfinite(e)):
        raise ValueError(f"eps={eps!r} violates eps > 0 (finite); eps = sqrt(W2)")
    if np.any(~(lam > e)) or np.any(~np.isfinite(lam)):
        raise ValueError(f"smoothing={smoothing!r} violates smoothing > eps = {eps!r} (Theorem 2 needs lambda > eps)")
    return lam, e


def log_volume_ratio(dim: int, smoothing, eps) -> np.ndarray:
    """log V = log vol_d(lambda) - log vol_d(lambda - eps) = -d log(1 - eps/lambda)."""
    d = _dim(dim)
    lam, e = _lambda_eps(smoothing, eps)
    out = -d * np.log1p(-e / lam)
    return out if out.ndim else float(out)


def claim51_bound(smoothing, lipschitz) -> np.ndarray:
    """Claim 5.1: |p(x) - p_lambda(x)| <= lambda L."""
    lam = np.asarray(smoothing, dtype=np.float64)
    if np.any(~(lam > 0)):
        raise ValueError(f"smoothing={smoothing!r} violates smoothing > 0")
    return lam * V.nonnegative("lipschitz", lipschitz)


def claim_e1_rhs(q_enlarged_ball_probability, eps) -> np.ndarray:
    """Claim E.1: p(B_r(x)) <= q(B_{r+eps}(x)) + eps, given q(B_{r+eps}(x)); W2(p, q) <= eps^2."""
    e = V.positive("eps", eps)
    return np.asarray(q_enlarged_ball_probability, dtype=np.float64) + e


def theorem2_terms(dim: int, smoothing, eps, lipschitz):
    """(V, A) with p_lambda <= V q_lambda + A (Theorem 2): V = (lambda/(lambda - eps))^d,
    A = (V - 1) 2 lambda L + eps / vol_d(lambda - eps). Broadcasts over smoothing and eps."""
    d = _dim(dim)
    lam, e = _lambda_eps(smoothing, eps)
    L = V.nonnegative("lipschitz", lipschitz)
    log_v = -d * np.log1p(-e / lam)
    with np.errstate(over="ignore"):  # a huge V or a tiny ball: +inf is the honest value
        ratio = np.exp(log_v)
        additive = np.expm1(log_v) * 2.0 * lam * L + e * np.exp(-log_ball_volume(d, lam - e))
    return ratio, additive


def theorem2_rhs(q_smoothed, dim: int, smoothing, eps, lipschitz) -> np.ndarray:
    """Right side of Theorem 2 (eq. 9): V q_lambda(x) + (V - 1) 2 lambda L + eps/vol_d(lambda - eps)."""
    ratio, additive = theorem2_terms(dim, smoothing, eps, lipschitz)
    return ratio * np.asarray(q_smoothed, dtype=np.float64) + additive


def pointwise_rhs(q_value, dim: int, smoothing, eps, lipschitz) -> np.ndarray:
    """p(x) <= V q(x) + (V + 1) lambda L + A (Theorem 2 with Claim 5.1 on both sides; dpjax's corollary)."""
    ratio, additive = theorem2_terms(dim, smoothing, eps, lipschitz)
    lam = np.asarray(smoothing, dtype=np.float64)
    return ratio * np.asarray(q_value, dtype=np.float64) + (ratio + 1.0) * lam * float(lipschitz) + additive


# ------------------------------------------------------------------------------------------
# isotropic Gaussians
def _mean(mean, d):
    m = np.atleast_1d(np.asarray(mean, dtype=np.float64))
    if m.shape != (d,):
        raise ValueError(f"mean has shape {m.shape}; it must have shape ({d},)")
    return m


def gaussian_w2(mean1, sd1, mean2, sd2) -> float:
    """W2(N(m1, s1^2 I), N(m2, s2^2 I)) = sqrt(|m1 - m2|^2 + d (s1 - s2)^2)."""
    m1 = np.atleast_1d(np.asarray(mean1, dtype=np.float64))
    m2 = _mean(mean2, m1.size)
    s1, s2 = V.positive("sd1", sd1), V.positive("sd2", sd2)
    return float(math.sqrt(float(np.sum((m1 - m2) ** 2)) + m1.size * (s1 - s2) ** 2))


def gaussian_lipschitz(sd: float, dim: int) -> float:
    """sup |grad phi| of N(m, s^2 I_d): (2 pi)^{-d/2} s^{-(d+1)} e^{-1/2} (at |x - m| = s)."""
    s, d = V.positive("sd", sd), _dim(dim)
    return float(math.exp(-0.5 * d * math.log(2 * math.pi) - (d + 1) * math.log(s) - 0.5))


def gaussian_density(x, mean, sd) -> np.ndarray:
    """Density of N(mean, sd^2 I_d) at points x of shape (..., d)."""
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    m, s = _mean(mean, d), V.positive("sd", sd)
    r2 = np.sum((x - m) ** 2, axis=-1) / (s * s)
    return np.exp(-0.5 * r2 - 0.5 * d * math.log(2 * math.pi) - d * math.log(s))


def gaussian_ball_probability(x, radius, mean, sd) -> np.ndarray:
    """P(|X - x| <= r) for X ~ N(mean, sd^2 I_d): a non-central chi-square CDF (x: (..., d))."""
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    m, s = _mean(mean, d), V.positive("sd", sd)
    r = np.asarray(radius, dtype=np.float64)
    if np.any(~(r > 0)):
        raise ValueError(f"radius={radius!r} violates radius > 0")
    nc = np.sum((x - m) ** 2, axis=-1) / (s * s)
    u = (r / s) ** 2
    # scipy's ncx2 needs nc > 0; at nc = 0 it is the central chi-square
    return np.where(nc > 0, stats.ncx2.cdf(u, d, np.maximum(nc, 1e-300)), stats.chi2.cdf(u, d))


def gaussian_smoothed_density(x, smoothing, mean, sd) -> np.ndarray:
    """p_lambda(x) = P(B_lambda(x)) / vol_d(lambda) for N(mean, sd^2 I_d)."""
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    return gaussian_ball_probability(x, smoothing, mean, sd) * np.exp(-log_ball_volume(d, smoothing))


def _log_sup_smoothed(dim: int, smoothing, sd: float):
    """log sup_x p_lambda(x) = log P(|Z| <= lambda/s) - log vol_d(lambda) (the ball at the mode; Anderson)."""
    return stats.chi2.logcdf((np.asarray(smoothing) / sd) ** 2, dim) - log_ball_volume(dim, smoothing)


def vacuity_ratio(dim: int, w2: float, sd: float = 1.0, lipschitz: float | None = None, smoothing_grid=None):
    """min over lambda > eps of A(lambda) / sup_x p_lambda(x) for p an isotropic N(., s^2 I_d).

    Theorem 2's right side is >= A everywhere, so a ratio >= 1 means the bound says nothing at
    any point (p_lambda never exceeds its supremum). Returns (ratio, lambda*, log V at lambda*).
    ``lipschitz`` defaults to the Gaussian's own constant; eps = sqrt(w2).
    """
    d = _dim(dim)
    w = V.positive("w2", w2)
    s = V.positive("sd", sd)
    L = gaussian_lipschitz(s, d) if lipschitz is None else V.nonnegative("lipschitz", lipschitz)
    eps = math.sqrt(w)
    if smoothing_grid is None:  # lambda - eps from 1e-4 eps to far beyond the density's scale
        smoothing_grid = eps + np.geomspace(1e-4 * eps, 100.0 * s + 1e3 * eps, 4000)
    lam = np.asarray(smoothing_grid, dtype=np.float64)
    ratio_v, additive = theorem2_terms(d, lam, eps, L)
    with np.errstate(divide="ignore", over="ignore"):
        log_ratio = np.log(additive) - _log_sup_smoothed(d, lam, s)
    i = int(np.argmin(log_ratio))
    return float(np.exp(log_ratio[i])), float(lam[i]), float(np.log(ratio_v[i]))


def largest_nonvacuous_w2(dim: int, sd: float = 1.0) -> float:
    """The largest W2 (to 1e-6 relative) at which Theorem 2 is non-vacuous somewhere
    (vacuity_ratio < 1) for an isotropic Gaussian of this sd and its own Lipschitz constant."""
    d, s = _dim(dim), V.positive("sd", sd)
    f = lambda logw: math.log(vacuity_ratio(d, math.exp(logw), s)[0])
    lo, hi = math.log(1e-300), math.log(10.0 * s * s)
    if f(hi) < 0:
        return math.exp(hi)
    if f(lo) >= 0:
        return 0.0
    return float(math.exp(optimize.brentq(f, lo, hi, xtol=1e-6)))

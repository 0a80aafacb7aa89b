"""Exact total variation between Gaussians with diagonal covariances, for the cases that arise
when Langevin Monte Carlo runs on a Gaussian target (paper 002 App. D.2).

TV(P, Q) = P(L > 0) - Q(L > 0) with L = log p - log q. Cases computed exactly:

- equal covariances (any dimension): TV = 2 Phi(Delta/2) - 1, Delta the Mahalanobis distance of
  the means;
- one dimension: the hockey-stick divergence at eps = 0
  (:func:`dpjax.accountants.mechanisms.gaussian_divergence.gaussian_hockey_stick`);
- equal means, with the coordinates (where the variances differ) falling into at most two
  groups of equal (var_P, var_Q) (e.g. an isotropic pair, or a target with two distinct
  curvatures, m and M, and its Langevin approximation): L depends on the squared distances to
  the mean within each group only, so TV is a difference of chi-square CDFs (one group) or a
  1-D integral of chi-square densities against chi-square CDFs (two groups), by quadrature.

Anything else raises ValueError naming what is supported (never a plausible wrong number).
"""
from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import integrate, special

__all__ = ["gaussian_tv"]


def _diag(name, mean, var):
    m = np.atleast_1d(np.asarray(mean, dtype=np.float64))
    v = np.atleast_1d(np.asarray(var, dtype=np.float64))
    if v.shape != m.shape or m.ndim != 1:
        raise ValueError(f"{name}: mean {m.shape} and variances {v.shape} must be 1-D of one length (diagonal covariance)")
    if not (np.all(np.isfinite(m)) and np.all(np.isfinite(v)) and np.all(v > 0)):
        raise ValueError(f"{name}: means must be finite and variances finite and > 0")
    return m, v


def _chi2_cdf(x: float, k: int) -> float:
    return float(special.gammainc(0.5 * k, 0.5 * x)) if x > 0 else 0.0


def _chi2_sf(x: float, k: int) -> float:
    return float(special.gammaincc(0.5 * k, 0.5 * x)) if x > 0 else 1.0


def _below(alpha: float, threshold: float, scale: float, k: int) -> float:
    """P(alpha s < threshold) for s = scale * chi2(k), alpha != 0."""
    x = threshold / (alpha * scale)
    return _chi2_cdf(x, k) if alpha > 0 else _chi2_sf(x, k)


def _tv_equal_means(v_p: np.ndarray, v_q: np.ndarray) -> float:
    """TV(N(m, diag v_p), N(m, diag v_q)) for at most two groups of coordinates with equal (v_p, v_q).

    With s_g the squared distance to m over group g (s_g ~ v_g chi2(k_g) under either law),
    log p - log q = C - sum_g alpha_g s_g, alpha_g = (1/v_p,g - 1/v_q,g)/2, C = sum_j log(v_q,j/v_p,j)/2,
    so TV = P(A) - Q(A) with A = {sum_g alpha_g s_g < C}. One group: two chi-square CDFs. Two
    groups: one integral over s_1 of f_P(s_1) P_P(A | s_1) - f_Q(s_1) P_Q(A | s_1); the difference is
    formed under the integral, so a TV of 1e-12 is not lost in the cancellation of two O(1) numbers.
    """
    keep = v_p != v_q
    if not np.any(keep):
        return 0.0
    const = 0.5 * float(np.sum(np.log(v_q[keep]) - np.log(v_p[keep])))
    pairs, counts = np.unique(np.stack([v_p[keep], v_q[keep]], axis=1), axis=0, return_counts=True)
    if len(pairs) > 2:
        raise ValueError(f"gaussian_tv: {len(pairs)} distinct (variance, variance) groups; equal means are supported with at most two")
    alphas = 0.5 * (1.0 / pairs[:, 0] - 1.0 / pairs[:, 1])
    if len(pairs) == 1:
        k = int(counts[0])
        return _below(alphas[0], const, pairs[0, 0], k) - _below(alphas[0], const, pairs[0, 1], k)
    first, second = (0, 1) if counts[0] >= counts[1] else (1, 0)
    k1, k2 = int(counts[first]), int(counts[second])
    a1, a2 = alphas[first], alphas[second]
    (vp1, vq1), (vp2, vq2) = pairs[first], pairs[second]
    log_norm = float(special.gammaln(0.5 * k1) + 0.5 * k1 * math.log(2.0))

    def density(s, v):  # of s = v chi2(k1)
        t = s / v
        return math.exp((0.5 * k1 - 1.0) * math.log(t) - 0.5 * t - log_norm) / v if t > 0 else 0.0

    def integrand(s):
        rest = const - a1 * s
        return density(s, vp1) * _below(a2, rest, vp2, k2) - density(s, vq1) * _below(a2, rest, vq2, k2)

    hi = float(max(vp1, vq1) * special.chdtri(k1, 1e-18))  # the chi2(k1) quantile above 1 - 1e-18
    pts = sorted({p for p in (const / a1, vp1 * max(k1 - 2.0, 0.0), vq1 * max(k1 - 2.0, 0.0), vp1 * k1, vq1 * k1) if 0.0 < p < hi})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        val, err = integrate.quad(integrand, 0.0, hi, points=pts or None, limit=500, epsabs=1e-16, epsrel=1e-10)
    if not err <= max(1e-13, 1e-6 * abs(val)):
        raise ValueError(f"gaussian_tv: quadrature error estimate {err:.3g} too large for TV = {val:.3g}")
    return float(val)


def gaussian_tv(mean1, var1, mean2, var2) -> float:
    """TV(N(mean1, diag var1), N(mean2, diag var2)) exactly, for the cases in the module docstring."""
    m1, v1 = _diag("first", mean1, var1)
    m2, v2 = _diag("second", mean2, var2)
    if m1.shape != m2.shape:
        raise ValueError(f"dimensions differ: {m1.shape} vs {m2.shape}")
    if m1.size == 1:
        from .gaussian_divergence import gaussian_hockey_stick

        return float(gaussian_hockey_stick(m1[0], math.sqrt(v1[0]), m2[0], math.sqrt(v2[0]), 0.0))
    if np.array_equal(v1, v2):
        delta = float(np.sqrt(np.sum((m1 - m2) ** 2 / v1)))
        return float(-special.erf(-delta / (2.0 * math.sqrt(2.0))))  # 2 Phi(Delta/2) - 1
    if not np.array_equal(m1, m2):
        raise ValueError("gaussian_tv: unequal covariances are supported with equal means (or in one dimension)")
    return float(min(1.0, max(0.0, _tv_equal_means(v1, v2))))

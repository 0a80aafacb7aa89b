"""Approximate Gibbs-posterior sampling by Langevin Monte Carlo (paper 002, App. D.2).

Proposition 12: if every output law rho'_D is within TV gamma of an (eps, delta)-DP mechanism
rho_D, then rho' is (eps, delta + (1 + e^eps) gamma)-DP (eq. D.8).

Theorem 21 (Dalalyan 2014, Corollary 1): U m-strongly convex and M-smooth on R^d, d >= 2,
gamma in (0, 1/2). With

    S = (4 log(1/gamma) + d log(M/m)) / (2m),   h = gamma^2 (2 alpha - 1) / (M^2 S d alpha),

alpha = (1 + M d S / gamma^2)/2, the T = ceil(S/h)-step LMC

    theta_{k+1} = theta_k - h grad U(theta_k) + sqrt(2h) xi_k,   theta_0 ~ N(theta*, I/M)

(theta* the minimiser of U) is within TV gamma of exp(-U). Proposition 13 uses alpha = 1:
h = gamma^2/(M^2 S d). (Theorem 21's printed alpha gives h = 1/(M alpha), about twice the
alpha = 1 step; both are offered.)

Gaussian targets (U quadratic with Hessian H): LMC is an AR(1) chain per eigen-direction of H,
so its law after k steps is Gaussian in closed form (:func:`gaussian_lmc_law`), and the TV to
the target is exact (:func:`dpjax.accountants.mechanisms.gaussian_tv.gaussian_tv`).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ... import _validate as V
from ..conversions import tv_corrected_delta

__all__ = ["DalalyanSchedule", "dalalyan_schedule", "lmc_privacy_delta", "GaussianLaw", "gaussian_lmc_law"]

ALPHA_CHOICES = ("proposition13", "theorem21")


class DalalyanSchedule(NamedTuple):
    horizon: float  # S
    step_size: float  # h
    num_steps: int  # T = ceil(S / h)
    alpha: float
    tv_level: float  # gamma
    strong_convexity: float  # m
    smoothness: float  # M
    dim: int


def dalalyan_schedule(strong_convexity: float, smoothness: float, dim: int, tv_level: float, alpha="proposition13") -> DalalyanSchedule:
    """The (S, h, T) of Theorem 21 (``alpha="theorem21"``: its printed alpha) or Proposition 13
    (``alpha="proposition13"``: alpha = 1, the default); a number sets alpha >= 1/2 directly."""
    m = V.positive("strong_convexity", strong_convexity)
    big_m = V.positive("smoothness", smoothness)
    if big_m < m:
        raise ValueError(f"smoothness={big_m:.6g} violates smoothness M >= strong_convexity m = {m:.6g}")
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 2:
        raise ValueError(f"dim={dim!r} violates dim an integer >= 2 (paper 002 Theorem 21 needs d >= 2)")
    d = int(dim)
    gamma = V.in_range("tv_level", tv_level, 0.0, 0.5, low_open=True, high_open=True)
    horizon = (4.0 * math.log(1.0 / gamma) + d * math.log(big_m / m)) / (2.0 * m)
    if isinstance(alpha, str):
        V.one_of("alpha", alpha, ALPHA_CHOICES)
        a = 1.0 if alpha == "proposition13" else 0.5 * (1.0 + big_m * d * horizon / gamma**2)
    else:
        a = float(alpha)
        if not (math.isfinite(a) and a > 0.5):
            raise ValueError(f"alpha={alpha!r} violates alpha > 1/2 (h > 0)")
    step = gamma**2 * (2.0 * a - 1.0) / (big_m**2 * horizon * d * a)
    return DalalyanSchedule(horizon, step, int(math.ceil(horizon / step)), a, gamma, m, big_m, d)


def lmc_privacy_delta(epsilon: float, delta: float, tv_level: float) -> float:
    """delta + (1 + e^eps) gamma: the delta of LMC's output when the Gibbs posterior is
    (eps, delta)-DP and LMC is within TV gamma of it (Proposition 12 / 13); capped at 1."""
    return float(tv_corrected_delta(epsilon, delta, tv_level))


class GaussianLaw(NamedTuple):
    mean: np.ndarray  # (d,) in the original coordinates
    variances: np.ndarray  # (d,) along the eigenvectors
    eigenvectors: np.ndarray  # (d, d), columns


def gaussian_lmc_law(hessian, target_mean, init_mean, init_variance: float, step_size: float, num_steps: int) -> GaussianLaw:
    """Exact law of LMC on U(theta) = (theta - mu)^T H (theta - mu)/2 after ``num_steps`` steps
    from N(init_mean, init_variance I).

    Along an eigenvector with eigenvalue lam, a = 1 - h lam: the mean gap shrinks by a^k and the
    variance is a^(2k) v0 + 2h (1 - a^(2k))/(1 - a^2) -> 1/(lam (1 - h lam/2)) (the stationary
    law of the discretisation). Powers in log space (h lam can be ~1e-8 with k ~ 1e8).
    Requires 0 < h lam < 2 (a stable chain)."""
    h_mat = np.atleast_2d(np.asarray(hessian, dtype=np.float64))
    mu = np.atleast_1d(np.asarray(target_mean, dtype=np.float64))
    m0 = np.atleast_1d(np.asarray(init_mean, dtype=np.float64))
    d = mu.size
    if h_mat.shape != (d, d) or m0.shape != (d,):
        raise ValueError(f"hessian {h_mat.shape}, target_mean {mu.shape}, init_mean {m0.shape} must be (d, d), (d,), (d,)")
    v0 = V.nonnegative("init_variance", init_variance)
    h = V.positive("step_size", step_size)
    k = int(num_steps)
    if k < 0:
        raise ValueError(f"num_steps={num_steps!r} violates num_steps >= 0")
    if not np.allclose(h_mat, h_mat.T):
        raise ValueError("hessian must be symmetric")
    lam, vecs = np.linalg.eigh(h_mat)
    if lam.min() <= 0 or h * lam.max() >= 2:
        raise ValueError(f"step_size={h:.6g} and Hessian eigenvalues [{lam.min():.6g}, {lam.max():.6g}] violate 0 < h lam < 2")
    gap = vecs.T @ (m0 - mu)
    if k == 0:
        return GaussianLaw(m0.copy(), np.full(d, v0), vecs)
    # a = 1 - h lam is negative when 1 < h lam < 2 (and 0 at h lam = 1): powers through |a| and its sign
    sign = np.sign(1.0 - h * lam)
    with np.errstate(divide="ignore"):
        log_abs_a = np.where(h * lam < 1.0, np.log1p(-np.minimum(h * lam, 1.0)), np.log(np.abs(1.0 - h * lam)))
    a_k = sign**k * np.exp(k * log_abs_a)
    one_minus_a2k = -np.expm1(2.0 * k * log_abs_a)
    variances = np.exp(2.0 * k * log_abs_a) * v0 + 2.0 * one_minus_a2k / (lam * (2.0 - h * lam))
    mean = mu + vecs @ (a_k * gap)
    return GaussianLaw(mean, variances, vecs)

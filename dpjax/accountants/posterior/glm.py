"""Private posterior sampling for GLMs (paper 004, Geumlek et al. 2017, §A.7 and the GLM
experiments of §A.8): the three calibrations compared in Figures 3–4, and Lemma 3's exact
divergence for logistic regression.

Lemma 1 (§A.7.1). A loss L-Lipschitz and convex in w, a -log prior m-strongly convex: one sample
of the tempered posterior p(w | D) ∝ exp(-rho sum_i loss(w, z_i)) p(w) is
(order, 2 rho^2 L^2 order / m)-RDP for every order >= 1. For logistic regression with records
|x| <= c the gradient of the loss is (sigmoid(w.x) - y) x, so L = c.

The three mechanisms at a target (order, eps)-RDP:

- **Diffuse** (Algorithm 2's GLM version): keep the prior N(0, I/m), temper the likelihood by
  rho = sqrt(eps m / (2 L^2 order)) (capped at 1: the untempered posterior is then already
  private enough);
- **Concentrated** (Algorithm 3's GLM version): keep rho = 1, sharpen the prior to precision
  m = 2 L^2 order / eps (never below the base precision);
- **OPS** (One Posterior Sample, Wang, Fienberg & Smola 2015): the tempered posterior on the
  ball |w| <= R is an exponential mechanism. For logistic regression the loss lies in
  [log(1 + e^{-cR}), log(1 + e^{cR})] on the ball, so a replaced record moves it by at most
  log(1 + e^{cR}) - log(1 + e^{-cR}) = cR, and the privacy loss log p_D/p_D' has range at most
  2 rho c R over w: eps_DP = 2 rho c R, pure DP and eps_DP-bounded-range. Its RDP is one of
  (``conversion``): "pure" D_order <= eps_DP (pure DP implies RDP at every order: the paper's
  reading); "zcdp" min(eps_DP, order eps_DP^2 / 2) (Bun & Steinke 2016, Prop. 3.3);
  "bounded-range" min(eps_DP, order eps_DP^2 / 8) (Cesar & Rogers 2021: eps-BR implies
  eps^2/8-zCDP), the tightest of the three.

Lemma 3 (§A.7.2), logistic tightness. Prior N(0, s^2 I) (s^2 = 1/(n beta) in the paper),
D = {(x, +1)}, D' = {(x, -1)}, |x| = 1. For integer order l >= 2 the proof computes
I_l = int p(w|D)^l p(w|D')^(1-l) dw. Its last step folds the middle term (-1)^(l-1)/2 into a
sum that counts it as (-1)^(l-1); NOTES 004's erratum:

    I_l = (-1)^(l-1) + 2 sum_{i=1}^{l-1} (-1)^(l-1-i) exp(i^2 s^2 / 2)   (corrected)
    I_l = 2 sum_{i=0}^{l-1} (-1)^(l-1-i) exp(i^2 s^2 / 2)                 (as printed)

and D_l = log(I_l)/(l - 1). The printed form is off by (-1)^(l-1): at l = 2 it gives
2(e^{s^2/2} - 1) < 1 for small s, i.e. a negative divergence. Only w.x matters, so the pair
is one-dimensional and :func:`logistic_pair_renyi_quadrature` checks both at any order.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ... import _validate as V
from .expfam import glm_tempered_posterior_rdp

__all__ = [
    "logistic_lipschitz",
    "logistic_loss_range",
    "lemma1_rdp",
    "diffuse_temperature",
    "concentrated_prior_precision",
    "OPS_CONVERSIONS",
    "ops_rdp",
    "ops_pure_epsilon",
    "ops_temperature",
    "GlmCalibration",
    "calibrate_glm",
    "logistic_tightness_integral",
    "logistic_tightness_renyi",
    "logistic_pair_renyi_quadrature",
]

OPS_CONVERSIONS = ("pure", "zcdp", "bounded-range")


def _order(order) -> float:
    """Lemma 1 and the OPS conversions hold at every order >= 1 (order 1: the KL divergence)."""
    lam = float(order)
    if not (math.isfinite(lam) and lam >= 1):
        raise ValueError(f"order={order!r} violates order >= 1 (finite)")
    return lam


def logistic_lipschitz(feature_norm: float) -> float:
    """L for the logistic loss with records |x| <= c: |grad_w loss| = |sigmoid(w.x) - y| |x| <= c."""
    return V.positive("feature_norm", feature_norm)


def logistic_loss_range(feature_norm: float, radius: float) -> float:
    """sup_w |loss(w, z) - loss(w, z')| over |w| <= R, |x|, |x'| <= c: c R.

    On the ball w.x ranges over [-cR, cR], so log(1 + e^{-y w.x}) lies in
    [log(1 + e^{-cR}), log(1 + e^{cR})]; both ends are reached by one record and its label flip,
    and their difference is cR exactly.
    """
    return V.positive("feature_norm", feature_norm) * V.positive("radius", radius)


def lemma1_rdp(orders, temperature: float, lipschitz: float, prior_precision: float) -> np.ndarray:
    """2 rho^2 L^2 order / m (paper 004 Lemma 1)."""
    return glm_tempered_posterior_rdp(orders, temperature, lipschitz, prior_precision)


def diffuse_temperature(epsilon: float, order: float, lipschitz: float, prior_precision: float) -> float:
    """Largest rho <= 1 with Lemma 1's RDP at ``order`` <= eps: sqrt(eps m / (2 L^2 order))."""
    e = V.positive("epsilon", epsilon)
    lam = _order(order)
    lip = V.positive("lipschitz", lipschitz)
    m = V.positive("prior_precision", prior_precision)
    return min(1.0, math.sqrt(e * m / (2.0 * lip * lip * lam)))


def concentrated_prior_precision(epsilon: float, order: float, lipschitz: float, base_precision: float) -> float:
    """Smallest prior precision m >= base with Lemma 1's RDP at ``order`` (rho = 1) <= eps:
    max(base, 2 L^2 order / eps)."""
    e = V.positive("epsilon", epsilon)
    lam = _order(order)
    lip = V.positive("lipschitz", lipschitz)
    m0 = V.positive("base_precision", base_precision)
    return max(m0, 2.0 * lip * lip * lam / e)


def _conversion(conversion: str) -> str:
    if conversion not in OPS_CONVERSIONS:
        raise ValueError(f"conversion={conversion!r} is not one of {list(OPS_CONVERSIONS)}")
    return conversion


def ops_rdp(orders, pure_epsilon: float, conversion: str = "bounded-range") -> np.ndarray:
    """RDP at ``orders`` of a pure eps_DP-DP, eps_DP-bounded-range mechanism (OPS)."""
    e = V.nonnegative("pure_epsilon", pure_epsilon)
    orders = np.asarray(orders, dtype=np.float64)
    if np.any(~(orders >= 1)) or np.any(~np.isfinite(orders)):
        raise ValueError(f"orders={orders.tolist()} violate order >= 1 (finite)")
    conversion = _conversion(conversion)
    pure = np.full_like(orders, e)
    if conversion == "pure":
        return pure
    factor = 0.5 if conversion == "zcdp" else 0.125
    return np.minimum(pure, factor * orders * e * e)


def ops_pure_epsilon(epsilon: float, order: float, conversion: str = "bounded-range") -> float:
    """Largest eps_DP whose :func:`ops_rdp` at ``order`` is <= eps:
    eps ("pure"), max(eps, sqrt(2 eps/order)) ("zcdp"), max(eps, sqrt(8 eps/order)) ("bounded-range")."""
    e = V.positive("epsilon", epsilon)
    lam = _order(order)
    conversion = _conversion(conversion)
    if conversion == "pure":
        return e
    factor = 0.5 if conversion == "zcdp" else 0.125
    return max(e, math.sqrt(e / (factor * lam)))


def ops_temperature(epsilon: float, order: float, feature_norm: float, radius: float, conversion: str = "bounded-range") -> float:
    """rho = eps_DP / (2 c R), capped at 1, for OPS on the ball |w| <= R (logistic loss)."""
    eps_dp = ops_pure_epsilon(epsilon, order, conversion)
    return min(1.0, eps_dp / (2.0 * logistic_loss_range(feature_norm, radius)))


class GlmCalibration(NamedTuple):
    """Temperatures and prior precisions of the three mechanisms at one (order, eps)."""

    epsilon: float
    order: float
    diffuse_temperature: float
    diffuse_prior_precision: float
    concentrated_temperature: float
    concentrated_prior_precision: float
    ops_temperature: float
    ops_prior_precision: float
    ops_radius: float
    ops_pure_epsilon: float
    # the RDP each mechanism actually has at ``order`` (<= epsilon by construction)
    diffuse_rdp: float
    concentrated_rdp: float
    ops_rdp: float


def calibrate_glm(epsilon: float, order: float, *, feature_norm: float = 1.0, prior_precision: float = 1.0,
                  ops_radius: float = 5.0, ops_conversion: str = "bounded-range") -> GlmCalibration:
    """The three mechanisms of paper 004's GLM experiments at (order, eps)-RDP, for logistic
    regression with records |x| <= ``feature_norm`` and a N(0, I/prior_precision) base prior."""
    lip = logistic_lipschitz(feature_norm)
    rho_d = diffuse_temperature(epsilon, order, lip, prior_precision)
    m_c = concentrated_prior_precision(epsilon, order, lip, prior_precision)
    rho_o = ops_temperature(epsilon, order, feature_norm, ops_radius, ops_conversion)
    lam = float(order)
    return GlmCalibration(
        epsilon=float(epsilon), order=lam,
        diffuse_temperature=rho_d, diffuse_prior_precision=float(prior_precision),
        concentrated_temperature=1.0, concentrated_prior_precision=m_c,
        ops_temperature=rho_o, ops_prior_precision=float(prior_precision), ops_radius=float(ops_radius),
        ops_pure_epsilon=2.0 * rho_o * logistic_loss_range(feature_norm, ops_radius),
        diffuse_rdp=float(lemma1_rdp([lam], rho_d, lip, prior_precision)[0]),
        concentrated_rdp=float(lemma1_rdp([lam], 1.0, lip, m_c)[0]),
        ops_rdp=float(ops_rdp([lam], 2.0 * rho_o * logistic_loss_range(feature_norm, ops_radius), ops_conversion)[0]),
    )


# --- Lemma 3: logistic tightness ----------------------------------------------------------
def _integer_order(order) -> int:
    if isinstance(order, bool) or not float(order).is_integer() or float(order) < 2:
        raise ValueError(f"order={order!r} violates order an integer >= 2 (paper 004 Lemma 3's closed form)")
    return int(order)


def _tightness_integral_mp(order, prior_variance, mode):
    """I_l in mpmath (module docstring), with enough digits for the alternating sum's cancellation
    (terms up to exp(l^2 s^2 / 2), result possibly only ~ l^2 s^2 / 2 above 1)."""
    import mpmath

    lam = _integer_order(order)
    s2 = V.positive("prior_variance", prior_variance)
    V.one_of("mode", mode, ("corrected", "paper"))
    digits = 30 + int(lam * lam * s2 / 2.0 / math.log(10.0)) + int(max(0.0, -math.log10(s2)))
    with mpmath.workdps(digits):
        half = mpmath.mpf(s2) / 2
        total = mpmath.fsum((-1) ** (lam - 1 - i) * mpmath.exp(i * i * half) for i in range(1, lam))
        sign = (-1) ** (lam - 1)
        value = sign + 2 * total if mode == "corrected" else 2 * (total + sign)
        log_value = mpmath.log(value) / (lam - 1) if value > 0 else None
        return float(value), (float("nan") if log_value is None else float(log_value))


def logistic_tightness_integral(order: int, prior_variance: float, mode: str = "corrected") -> float:
    """I_l = int p(w|D)^l p(w|D')^(1-l) dw for Lemma 3's pair (module docstring), integer l >= 2,
    summed in extended precision. ``mode="paper"`` gives the printed formula."""
    return _tightness_integral_mp(order, prior_variance, mode)[0]


def logistic_tightness_renyi(order: int, prior_variance: float, mode: str = "corrected") -> float:
    """D_l = log(I_l) / (l - 1) for Lemma 3's pair; ``mode="paper"`` returns the printed formula's
    value, which is NaN where its I_l <= 0 and negative where I_l < 1 (the erratum)."""
    return _tightness_integral_mp(order, prior_variance, mode)[1]


def logistic_pair_renyi_quadrature(order: float, prior_variance: float) -> float:
    """D_order(p(w|D) || p(w|D')) for Lemma 3's pair at any order > 1, by 1-D quadrature.

    With t = w.x ~ N(0, s^2) under the prior, p(w|D) = 2 sigmoid(t) prior(w) and
    p(w|D') = 2 sigmoid(-t) prior(w) (each evidence is 1/2 by symmetry), so
    I = E_t[2 sigmoid(t)^l sigmoid(-t)^(1-l)] = 2 E_t[exp(l log_sigmoid(t) + (1-l) log_sigmoid(-t))].
    Independent of the closed form: the integrand is evaluated directly in log space.
    """
    from scipy import integrate
    from scipy.special import log_expit

    lam = float(order)
    if not (math.isfinite(lam) and lam > 1):
        raise ValueError(f"order={order!r} violates order > 1 (finite)")
    s2 = V.positive("prior_variance", prior_variance)
    s = math.sqrt(s2)

    def log_f(t):
        return math.log(2.0) + lam * log_expit(t) + (1.0 - lam) * log_expit(-t) - 0.5 * t * t / s2 - 0.5 * math.log(2 * math.pi * s2)

    # the integrand peaks near t = (l - 1) s^2 (the tilt of the Gaussian by e^{(l-1) t}); shift by its log-max
    centre = (lam - 1.0) * s2
    grid = np.linspace(centre - 12 * s - 5, centre + 12 * s + 5, 4001)
    peak = max(log_f(t) for t in grid)
    lo, hi = grid[0] - 20 * s, grid[-1] + 20 * s
    pieces = [lo, centre - 8 * s, centre, centre + 8 * s, hi]
    total = 0.0
    for a, b in zip(pieces[:-1], pieces[1:]):
        total += integrate.quad(lambda t: math.exp(log_f(t) - peak), a, b, limit=400, epsabs=0.0, epsrel=1e-12)[0]
    log_integral = peak + math.log(total)
    return log_integral / (lam - 1.0)

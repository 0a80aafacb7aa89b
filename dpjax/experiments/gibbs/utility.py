"""Utility results for Gibbs posteriors (paper 002, Minami et al. 2016, App. C): Theorem 16
(misspecified Bernstein–von Mises), Theorem 18 (PAC-Bayesian risk bounds, Alquier, Ridgway &
Chopin 2015) and Example 19 (hinge loss), as functions.

- Theorem 16 (C.3): G_beta(. | D_n) is asymptotically N(theta_0, (n beta)^-1 I_0^-1): tempering by
  beta inflates the posterior covariance by 1/beta. For Example 17 (Bernoulli, logit
  parameter) I_0 = sigma(theta_0)(1 - sigma(theta_0)) and at beta = 0.012 the inflation is
  1/0.012 = 83.3 ("at least 83 times bigger than the Bayesian case").
- Theorem 18: under the Hoeffding assumption (C.5) with exp(f(beta, n)), with probability
  >= 1 - alpha, E_G R <= E_G R_n + (f + KL(G || pi) + log(1/alpha))/beta (C.6), and with
  probability >= 1 - 2 alpha the oracle inequality
  E_G R <= inf_rho {E_rho R + 2 (f + KL(rho || pi) + log(1/alpha))/beta} (C.7).
- Example 19: hinge loss max(0, 1 - y theta.z), |z| <= r, prior N(0, (n lambda)^-1 I):
  f(beta, n) = beta^2/(4n) - (1/2) log(1 - r^2 beta^2 / (4 lambda n^2)), finite for
  beta < 2 n sqrt(lambda)/r. The text prints beta* = 2 sqrt(lambda n)/r, which is smaller by
  sqrt(n) than the domain of its own f and than the cap 2 sqrt(n) (sqrt(lambda n)/r) in its final
  condition; :func:`hinge_temperature_domain` returns both. The final condition is Corollary 8
  (L = r, m = n lambda) and the domain of f:
  beta <= (sqrt(lambda n)/r) min{eps / (2 sqrt(1 + 2 log(1/delta))), 2 sqrt(n)}.

Two temperatures. In (C.4)–(C.7) and in f, beta multiplies the *average* empirical risk R_n
(the Gibbs posterior of (C.4) is ∝ exp(-beta R_n) pi; f's beta^2/(4n) is Hoeffding's bound for
an average of n losses), as in Alquier et al. The privacy results (Corollary 8) temper the
*sum*: G_beta ∝ exp(-beta sum_i loss) = exp(-(n beta) R_n). Example 19's final condition combines
the privacy bound for the sum with f's domain for the average. The functions here take the
PAC-Bayes temperature ``temperature`` = multiplier of R_n (n beta for paper 002's G_beta), and
:func:`hinge_private_temperature` offers the printed combination and a consistent one
(``reading="consistent"``: both for G_beta ∝ exp(-beta sum loss), so n beta < 2 n sqrt(lambda)/r).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ... import _validate as V
from ...accountants.posterior import gibbs as gb

__all__ = [
    "gibbs_bvm_covariance",
    "bernoulli_logit_gibbs_asymptotic_variance",
    "gibbs_variance_inflation",
    "pac_bayes_risk_bound",
    "pac_bayes_oracle_bound",
    "hinge_hoeffding_f",
    "HingeTemperatureDomain",
    "hinge_temperature_domain",
    "hinge_private_temperature",
]


def gibbs_bvm_covariance(fisher_information, temperature: float, n: int) -> np.ndarray:
    """(n beta I_0)^-1, the covariance of the Gaussian limit of G_beta(. | D_n) (Theorem 16, C.3)."""
    b = V.positive("temperature", temperature)
    n = V.positive_int("n", n)
    fisher = np.atleast_2d(np.asarray(fisher_information, dtype=np.float64))
    if fisher.shape[0] != fisher.shape[1]:
        raise ValueError(f"fisher_information has shape {fisher.shape}; it must be square (d, d)")
    V.finite_array("fisher_information", fisher)
    eig = np.linalg.eigvalsh(0.5 * (fisher + fisher.T))
    if not (np.allclose(fisher, fisher.T) and eig.min() > 0):
        raise ValueError("fisher_information violates symmetric positive definite (Theorem 16 (iii): I_0 invertible)")
    return np.linalg.inv(n * b * fisher)


def bernoulli_logit_gibbs_asymptotic_variance(theta0: float, temperature: float) -> float:
    """Variance of sqrt(n)(theta - theta_0) in the limit for Example 17: 1/(beta sigma(theta_0)(1 - sigma(theta_0)))."""
    b = V.positive("temperature", temperature)
    t = float(theta0)
    if not math.isfinite(t):
        raise ValueError(f"theta0={theta0!r} must be finite")
    # sigma(t)(1 - sigma(t)) = exp(-|t|)/(1 + exp(-|t|))^2, without underflow to 0 for large |t|
    e = math.exp(-abs(t))
    return (1.0 + e) ** 2 / (e * b)


def gibbs_variance_inflation(temperature: float) -> float:
    """Ratio of the Gibbs (beta) to the Bayesian (beta = 1) asymptotic covariance: 1/beta."""
    return 1.0 / V.positive("temperature", temperature)


def _alpha(alpha) -> float:
    return V.in_range("alpha", alpha, 0.0, 1.0, low_open=True, high_open=True)


def pac_bayes_risk_bound(gibbs_empirical_risk: float, kl_to_prior: float, temperature: float, hoeffding_f: float, alpha: float) -> float:
    """(C.6): E_G R_n + (f(beta, n) + KL(G || pi) + log(1/alpha))/beta, a bound on E_G R that holds
    with probability >= 1 - alpha over the data (Theorem 18)."""
    b = V.positive("temperature", temperature)
    kl = V.nonnegative("kl_to_prior", kl_to_prior)
    f = float(hoeffding_f)
    if not math.isfinite(f):
        raise ValueError(f"hoeffding_f={hoeffding_f!r} must be finite (beta outside (0, beta*))")
    return float(gibbs_empirical_risk) + (f + kl + math.log(1.0 / _alpha(alpha))) / b


def pac_bayes_oracle_bound(comparator_risk: float, comparator_kl: float, temperature: float, hoeffding_f: float, alpha: float) -> float:
    """(C.7) for one comparator rho: E_rho R + 2 (f + KL(rho || pi) + log(1/alpha))/beta; the
    Gibbs posterior's risk is below the infimum over rho with probability >= 1 - 2 alpha."""
    b = V.positive("temperature", temperature)
    kl = V.nonnegative("comparator_kl", comparator_kl)
    f = float(hoeffding_f)
    if not math.isfinite(f):
        raise ValueError(f"hoeffding_f={hoeffding_f!r} must be finite (beta outside (0, beta*))")
    return float(comparator_risk) + 2.0 * (f + kl + math.log(1.0 / _alpha(alpha))) / b


def hinge_hoeffding_f(temperature: float, n: int, radius: float, prior_precision: float) -> float:
    """Example 19: f(beta, n) = beta^2/(4n) - log(1 - r^2 beta^2/(4 lambda n^2))/2 for the hinge
    loss with |z| <= r and prior N(0, (n lambda)^-1 I), ``temperature`` = beta multiplying the
    average empirical risk (module docstring); ValueError where f is infinite."""
    b = V.positive("temperature", temperature)
    n = V.positive_int("n", n)
    r = V.positive("radius", radius)
    lam = V.positive("prior_precision", prior_precision)
    u = r * r * b * b / (4.0 * lam * n * n)
    if not u < 1:
        raise ValueError(
            f"temperature={b:.6g} violates beta < 2 n sqrt(lambda)/r = {2 * n * math.sqrt(lam) / r:.6g}, "
            "where Example 19's f(beta, n) is finite"
        )
    return b * b / (4.0 * n) - 0.5 * math.log1p(-u)


class HingeTemperatureDomain(NamedTuple):
    printed: float  # 2 sqrt(lambda n)/r, as printed for beta*
    f_domain: float  # 2 n sqrt(lambda)/r, where f(beta, n) is finite (and the final condition's cap)


def hinge_temperature_domain(n: int, radius: float, prior_precision: float) -> HingeTemperatureDomain:
    n = V.positive_int("n", n)
    r = V.positive("radius", radius)
    lam = V.positive("prior_precision", prior_precision)
    return HingeTemperatureDomain(2.0 * math.sqrt(lam * n) / r, 2.0 * n * math.sqrt(lam) / r)


def hinge_private_temperature(epsilon: float, delta: float, n: int, radius: float, prior_precision: float,
                              route: str = "corollary8", reading: str = "printed") -> float:
    """Largest beta (G_beta ∝ exp(-beta sum_i hinge) pi) that is (eps, delta)-DP by Corollary 8
    (L = r, m = n lambda) and has a finite f (Example 19).

    ``reading="printed"``: (sqrt(lambda n)/r) min{eps/(2 sqrt(1 + 2 log(1/delta))), 2 sqrt(n)} as
    printed (f's domain applied to beta itself). ``reading="consistent"``: f evaluated at the
    PAC-Bayes temperature n beta of the same G_beta (module docstring), so the cap is
    2 sqrt(lambda)/r. ``route="lsi"`` uses the exact inversion of eq. D.7 instead of Corollary 8
    (valid for every eps; Corollary 8 only up to
    :func:`dpjax.accountants.posterior.gibbs.corollary8_max_epsilon`, about 1, above which it raises).
    The f-domain cap is an open bound: beta must stay strictly below it.
    """
    V.one_of("route", route, ("corollary8", "lsi"))
    V.one_of("reading", reading, ("printed", "consistent"))
    n = V.positive_int("n", n)
    r = V.positive("radius", radius)
    lam = V.positive("prior_precision", prior_precision)
    if route == "corollary8":
        private = gb.corollary8_temperature(epsilon, delta, r, n * lam)
    else:
        private = gb.lsi_temperature(epsilon, delta, r, n * lam)
    cap = hinge_temperature_domain(n, r, lam).f_domain
    return min(private, cap if reading == "printed" else cap / n)

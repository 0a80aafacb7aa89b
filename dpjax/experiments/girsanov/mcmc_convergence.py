"""From convergence to privacy and back: paper 001 §3.1 (Propositions 3.2, 3.4, A.2, A.3, Corollary 3.3).

Notation: pi_D is the posterior, nu_D P_D^n the law of the n-th state of an MCMC chain on D.

* Prop A.2 / 3.2(i): TV(mu_D, nu_D) <= b on every D and mu (eps, delta)-DP give nu
  (eps, delta + b (e^eps + 1))-DP  -> :func:`chain_delta_from_posterior`.
* Prop 3.2(ii): a chain that is (eps, delta)-DP at every n, with TV(nu P^n, pi) <= zeta R(n),
  R decreasing to r, makes pi (eps, delta + (1 + e^eps) zeta r)-DP
  -> :func:`posterior_delta_from_chain`. Corollary 3.3 is its contrapositive: if pi is not
  (eps, delta + (1 + e^eps) zeta r)-DP, some n makes the chain not (eps, delta)-DP; for an
  asymptotically exact chain (r = 0) that is any delta below the posterior's own.
* Prop 3.4 / A.3: if the chain after n steps is (eps, delta_n)-DP and pi is not (eps, delta)-DP
  (delta > delta_n), then TV(nu_D P^n_D, pi_D) > e^-eps/(1 + e^-eps) (delta - delta_n) for D or
  its neighbour -> :func:`tv_lower_bound`. With the tight profiles delta_pi(eps) (the
  posterior's hockey-stick) and delta_n(eps) (the chain's), every eps gives a valid bound, and
  :func:`best_tv_lower_bound` takes the largest. It bounds max(TV_D, TV_D').

Closed-form test case (:func:`ar1_law`): any Gaussian AR(1) chain
x_{k+1} = m + rho (x_k - m) + tau z_{k+1}, x_0 ~ N(m0, v0) has Gaussian laws
mean_k = m + rho^k (m0 - m), var_k = rho^(2k) v0 + tau^2 (1 - rho^(2k))/(1 - rho^2).
ULA with step gamma on N(m, 1/h) is rho = 1 - gamma h, tau^2 = 2 gamma (stationary variance
1/(h (1 - gamma h/2)) != 1/h: biased); the exact AR(1) kernel has tau^2 = (1 - rho^2)/h
(stationary law N(m, 1/h): asymptotically exact).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ... import _validate as V
from ...accountants.conversions import tv_corrected_delta

__all__ = [
    "chain_delta_from_posterior",
    "posterior_delta_from_chain",
    "tv_lower_bound",
    "best_tv_lower_bound",
    "TVLowerBound",
    "AR1Law",
    "ar1_law",
    "ula_ar1_parameters",
    "exact_ar1_parameters",
]


def _eps_array(epsilon) -> np.ndarray:
    eps = np.asarray(epsilon, dtype=np.float64)
    if np.any(np.isnan(eps)) or np.any(eps < 0):
        raise ValueError(f"epsilon={epsilon!r} violates epsilon >= 0")
    return eps


def _prob_array(name: str, value) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if np.any(np.isnan(arr)) or np.any(arr < 0) or np.any(arr > 1):
        raise ValueError(f"{name}={value!r} violates 0 <= {name} <= 1")
    return arr


def chain_delta_from_posterior(epsilon, posterior_delta, total_variation) -> np.ndarray:
    """Prop 3.2(i) / A.2: delta + zeta R(n) (e^eps + 1), with ``total_variation`` = zeta R(n)."""
    return tv_corrected_delta(epsilon, posterior_delta, total_variation)


def posterior_delta_from_chain(epsilon, chain_delta, total_variation_limit) -> np.ndarray:
    """Prop 3.2(ii): the posterior is (eps, delta + (1 + e^eps) zeta r)-DP when the chain is
    (eps, delta)-DP at every n, with ``total_variation_limit`` = zeta r (r = lim R(n))."""
    return tv_corrected_delta(epsilon, chain_delta, total_variation_limit)


def tv_lower_bound(epsilon, posterior_delta, chain_delta) -> np.ndarray:
    """Prop 3.4: e^-eps / (1 + e^-eps) (delta - delta_n), where pi is not (eps, delta)-DP and
    the chain is (eps, delta_n)-DP; 0 where delta <= delta_n (the proposition says nothing).

    The bound is strict (">") for every delta below the posterior's tight delta(eps); at the
    tight value itself it holds with ">=". Broadcasts over its arguments.
    """
    eps = _eps_array(epsilon)
    dp = _prob_array("posterior_delta", posterior_delta)
    dn = _prob_array("chain_delta", chain_delta)
    factor = 1.0 / (1.0 + np.exp(eps))  # e^-eps / (1 + e^-eps)
    out = factor * np.maximum(dp - dn, 0.0)
    return out if out.ndim else float(out)


class TVLowerBound(NamedTuple):
    bound: float  # the largest Prop 3.4 bound over the eps grid
    epsilon: float  # the eps attaining it


def best_tv_lower_bound(epsilons, posterior_deltas, chain_deltas) -> TVLowerBound:
    """max over eps of :func:`tv_lower_bound` for tight profiles on a common eps grid."""
    eps = _eps_array(epsilons)
    values = np.atleast_1d(tv_lower_bound(eps, posterior_deltas, chain_deltas))
    i = int(np.argmax(values))
    return TVLowerBound(float(values[i]), float(np.atleast_1d(eps)[i]))


class AR1Law(NamedTuple):
    """Means and variances of the Gaussian AR(1) chain after each recorded step count."""

    steps: np.ndarray
    mean: np.ndarray
    variance: np.ndarray


def ar1_law(rho: float, noise_sd: float, centre: float, steps, mean0: float = 0.0, var0: float = 0.0) -> AR1Law:
    """Law of x_k for x_{k+1} = centre + rho (x_k - centre) + noise_sd z, x_0 ~ N(mean0, var0).

    Powers are formed as exp(k log|rho|) and 1 - rho^(2k) as -expm1(2k log|rho|), so rho close
    to 1 loses no digits.
    """
    r = float(rho)
    if not (-1.0 < r < 1.0):
        raise ValueError(f"rho={rho!r} violates -1 < rho < 1")
    tau = V.nonnegative("noise_sd", noise_sd)
    v0 = V.nonnegative("var0", var0)
    k = np.atleast_1d(np.asarray(steps))
    if k.dtype.kind not in "iu" or np.any(k < 0):
        raise ValueError(f"steps={steps!r} violates integers >= 0")
    kf = k.astype(np.float64)
    if r == 0.0:
        rho_k = np.where(k == 0, 1.0, 0.0)
        one_minus_rho_2k = np.where(k == 0, 0.0, 1.0)
    else:
        log_abs = math.log(abs(r))
        sign = np.where((k % 2 == 1) & (r < 0), -1.0, 1.0)
        rho_k = sign * np.exp(kf * log_abs)
        one_minus_rho_2k = -np.expm1(2.0 * kf * log_abs)
    one_minus_rho2 = (1.0 - r) * (1.0 + r)
    mean = float(centre) + rho_k * (float(mean0) - float(centre))
    var = rho_k**2 * v0 + tau * tau * one_minus_rho_2k / one_minus_rho2
    return AR1Law(k, mean, var)


def ula_ar1_parameters(step_size: float, precision: float, temperature: float = 1.0) -> tuple[float, float]:
    """(rho, noise_sd) of ULA x' = x - gamma h (x - m) + sqrt(2 gamma T) z on N(m, T/h)."""
    gamma = V.positive("step_size", step_size)
    h = V.positive("precision", precision)
    temp = V.positive("temperature", temperature)
    rho = 1.0 - gamma * h
    if not (-1.0 < rho < 1.0):
        raise ValueError(f"step_size={gamma:.6g} violates 0 < step_size * precision < 2 (ULA must be stable)")
    return rho, math.sqrt(2.0 * gamma * temp)


def exact_ar1_parameters(rho: float, precision: float) -> tuple[float, float]:
    """(rho, noise_sd) of the pi-invariant AR(1) kernel on N(m, 1/h): noise_sd = sqrt((1 - rho^2)/h)."""
    r = float(rho)
    if not (-1.0 < r < 1.0):
        raise ValueError(f"rho={rho!r} violates -1 < rho < 1")
    h = V.positive("precision", precision)
    return r, math.sqrt((1.0 - r) * (1.0 + r) / h)

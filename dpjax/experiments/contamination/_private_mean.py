"""Frequentist private means for paper 003's Figure 1: CoinPress and a private-quantile clipped mean.

Both are compositions of Gaussian mechanisms under zero-concentrated DP (Bun & Steinke 2016):
a statistic of replace-one sensitivity Delta plus N(0, s^2) noise is Delta^2 / (2 s^2)-zCDP
(their Prop 1.6), and zCDP adds up over adaptive composition (their Lemma 2.3). Every function
here therefore returns, beside its estimate, the ledger of its mechanisms (``sensitivity`` and
``noise_sd`` per release) so that the spent budget sum Delta_i^2 / (2 s_i^2) can be recomputed
from what was actually used (tests/test_contamination_mean_estimation.py does).

* :func:`coinpress_mean`: Biswas, Dong, Kamath, Ullman (2020), "CoinPress: practical private
  mean and covariance estimation", Algorithms 1-2 for a mean with known covariance, in one
  dimension: start from an interval c +- r known to hold the mean; per step clip every record to
  c +- (r + gamma), release the clipped mean with Gaussian noise (sensitivity 2 (r + gamma) / n),
  and shrink to the new centre with radius gamma sqrt(1/n + s^2) (units of the known sd). gamma
  is the Gaussian tail radius at beta = 0.01 for both the clip and the new radius, and the budget
  split is rho / (4 (t - 1)) for each of the first t - 1 steps and 3 rho / 4 for the last, as in
  the authors' experiments (github.com/twistedcubic/coin-press, mean_estimation.py).
* :func:`private_quantile`: a noisy binary search over a public interval; each probe releases
  the count #{x_i <= mid} (sensitivity 1) with Gaussian noise.
* :func:`clipped_mean`: the mean of the records clipped to a fixed [low, high] plus Gaussian
  noise of sensitivity (high - low) / n.
* :func:`quantile_clipped_mean`: paper 003's third baseline, "Private Quantile Estimation +
  Clipped Mean Estimator (Huang, Liang and Yi, 2021)", in dpjax's reading: two private
  quantiles set the clipping range, then :func:`clipped_mean`. Huang, Liang and Yi's own range
  finder differs (the paper gives no details); the levels and the budget split are choices,
  stated by the caller.

All functions are pure, take a JAX key, and vmap over keys and datasets. ``num_valid`` (may be
traced): only the first ``num_valid`` entries of x are records, the rest padding, so that one
compiled function serves several dataset sizes.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp


def gaussian_tail_radius(beta: float, dim: int = 1) -> float:
    """sqrt(d + 2 sqrt(d log(1/beta)) + 2 log(1/beta)): a chi_d variable exceeds it with
    probability <= beta (Laurent & Massart 2000, Lemma 1), CoinPress's gamma."""
    log_inv = math.log(1.0 / beta)
    return math.sqrt(dim + 2.0 * math.sqrt(dim * log_inv) + 2.0 * log_inv)


def coinpress_budget(rho, steps: int):
    """CoinPress's split of a total rho over ``steps`` iterations: rho / (4 (t - 1)) for each of
    the first t - 1 (localisation) and 3 rho / 4 for the last (the estimate); all of it for t = 1.
    ``rho`` may be traced; returns a length-``steps`` array."""
    if steps < 1:
        raise ValueError(f"steps={steps} violates steps >= 1")
    if steps == 1:
        return jnp.reshape(jnp.asarray(rho), (1,))
    shares = jnp.asarray([1.0 / (4.0 * (steps - 1))] * (steps - 1) + [0.75])
    return shares * rho


def _valid(x, num_valid):
    """(mask, n): the first ``num_valid`` entries of x are records (None: all of them); the
    rest is padding, so that one compiled function serves several dataset sizes."""
    if num_valid is None:
        return jnp.ones(x.shape, bool), x.shape[0]
    return jnp.arange(x.shape[0]) < num_valid, jnp.asarray(num_valid, x.dtype)


def coinpress_mean(key, x, *, centre, radius, scale: float, rho_steps, beta: float = 0.01, num_valid=None):
    """CoinPress (Biswas et al. 2020, Algorithms 1-2) for a 1-D mean with known sd ``scale``.

    ``x`` (n,) records; the mean is assumed to lie in centre +- radius; ``rho_steps`` the zCDP
    budget of each iteration (:func:`coinpress_budget`). Works in units of ``scale`` (CoinPress
    assumes unit covariance). Returns (estimate, ledger) where the ledger holds per step the
    centre and radius it started from, the clip half-width ``clip``, the ``sensitivity`` 2 clip / n
    and the ``noise_sd`` (both in data units), and the pre-noise clipped mean ``clipped_mean``.
    """
    mask, n = _valid(x, num_valid)
    gamma = gaussian_tail_radius(beta)
    z = x / scale
    c = jnp.asarray(centre / scale, dtype=x.dtype)
    r = jnp.asarray(radius / scale, dtype=x.dtype)
    rho_steps = jnp.asarray(rho_steps, dtype=x.dtype)

    def step(carry, inputs):
        c, r = carry
        k, rho_i = inputs
        clip = r + gamma
        clipped = jnp.sum(jnp.where(mask, jnp.clip(z, c - clip, c + clip), 0.0)) / n
        sensitivity = 2.0 * clip / n
        sd = sensitivity / jnp.sqrt(2.0 * rho_i)
        row = dict(centre=c * scale, radius=r * scale, clip=clip * scale, sensitivity=sensitivity * scale,
                   noise_sd=sd * scale, clipped_mean=clipped * scale)
        c = clipped + sd * jax.random.normal(k, dtype=x.dtype)
        r = gamma * jnp.sqrt(1.0 / n + sd * sd)
        return (c, r), row

    (c, _), ledger = jax.lax.scan(step, (c, r), (jax.random.split(key, rho_steps.shape[0]), rho_steps))
    return c * scale, ledger


def clipped_mean(key, x, low, high, rho, *, num_valid=None):
    """mean(clip(x, low, high)) + N(0, s^2) with s = ((high - low) / n) / sqrt(2 rho): rho-zCDP
    for a data-independent [low, high] (replace-one sensitivity (high - low) / n).
    Returns (estimate, ledger)."""
    mask, n = _valid(x, num_valid)
    sensitivity = (high - low) / n
    sd = sensitivity / jnp.sqrt(2.0 * rho)
    value = jnp.sum(jnp.where(mask, jnp.clip(x, low, high), 0.0)) / n
    return value + sd * jax.random.normal(key, dtype=x.dtype), dict(sensitivity=sensitivity, noise_sd=sd, clipped_mean=value)


def private_quantile(key, x, level: float, *, low: float, high: float, rho: float, steps: int, num_valid=None):
    """The ``level`` quantile of x by a noisy binary search over [low, high]: ``steps`` probes,
    each releasing #{x_i <= mid} + N(0, s^2) (sensitivity 1 under replacing one record) with
    s = 1 / sqrt(2 rho / steps), so the search is rho-zCDP. The answer is the final bracket's
    midpoint (resolution (high - low) / 2^steps). Returns (estimate, ledger)."""
    mask, n = _valid(x, num_valid)
    sd = 1.0 / jnp.sqrt(2.0 * rho / steps)
    target = level * n

    def probe(bracket, k):
        lo, hi = bracket
        mid = 0.5 * (lo + hi)
        count = jnp.sum((x <= mid) & mask) + sd * jax.random.normal(k, dtype=x.dtype)
        left = count >= target
        return (jnp.where(left, lo, mid), jnp.where(left, mid, hi)), None

    start = (jnp.asarray(low, x.dtype), jnp.asarray(high, x.dtype))
    (lo, hi), _ = jax.lax.scan(probe, start, jax.random.split(key, steps))
    ledger = dict(sensitivity=jnp.ones(steps, x.dtype), noise_sd=jnp.full(steps, sd, x.dtype))
    return 0.5 * (lo + hi), ledger


def quantile_clipped_mean(key, x, rho: float, *, low: float, high: float, levels=(0.05, 0.95),
                          quantile_fraction: float = 0.25, search_steps: int = 10, num_valid=None):
    """Two private quantiles (``levels``, each a :func:`private_quantile` over the public
    [low, high] with rho quantile_fraction / 2) set the range of a :func:`clipped_mean` with the
    remaining (1 - quantile_fraction) rho. Returns (estimate, ledger) with the ledger's
    ``sensitivity`` and ``noise_sd`` over all 2 search_steps + 1 releases and the range found."""
    k_lo, k_hi, k_mean = jax.random.split(key, 3)
    rho_q = quantile_fraction * rho / 2.0
    a, led_a = private_quantile(k_lo, x, levels[0], low=low, high=high, rho=rho_q, steps=search_steps, num_valid=num_valid)
    b, led_b = private_quantile(k_hi, x, levels[1], low=low, high=high, rho=rho_q, steps=search_steps, num_valid=num_valid)
    a, b = jnp.minimum(a, b), jnp.maximum(a, b)  # post-processing: the two answers may cross
    value, led_m = clipped_mean(k_mean, x, a, b, (1.0 - quantile_fraction) * rho, num_valid=num_valid)
    ledger = dict(
        sensitivity=jnp.concatenate([led_a["sensitivity"], led_b["sensitivity"], jnp.reshape(led_m["sensitivity"], (1,))]),
        noise_sd=jnp.concatenate([led_a["noise_sd"], led_b["noise_sd"], jnp.reshape(led_m["noise_sd"], (1,))]),
        range_low=a, range_high=b,
    )
    return value, ledger


def spent_rho(ledger) -> jax.Array:
    """sum_i sensitivity_i^2 / (2 noise_sd_i^2): the zCDP budget a ledger's releases spend
    (a release with sensitivity 0 spends nothing, whatever its noise)."""
    sens = jnp.asarray(ledger["sensitivity"])
    sd = jnp.asarray(ledger["noise_sd"])
    return jnp.sum(jnp.where(sens == 0, 0.0, sens * sens / (2.0 * sd * sd)), axis=-1)


def gaussian_composition_rho(epsilon: float, delta: float) -> float:
    """The largest rho for which every composition of Gaussian mechanisms spending rho (sum of
    Delta_i^2 / (2 s_i^2) = rho) is (epsilon, delta)-DP, tightly: such a composition is exactly
    mu-GDP with mu = sqrt(2 rho) (Dong, Roth & Su 2022, Cor. 3.3), whose tight delta(eps) is
    Balle & Wang's (2018, Thm 8) ``dpjax.accountants.mechanisms.gaussian_divergence.analytic_gaussian_delta``;
    solve delta(mu, epsilon) = delta for mu (increasing in mu) by Brent's method. Larger than
    both zCDP readings' rho: the zCDP -> (eps, delta) conversion is loose for a Gaussian."""
    from scipy import optimize

    from ...accountants.mechanisms.gaussian_divergence import _log_analytic_delta  # log space: delta underflows at small mu

    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon={epsilon!r} violates epsilon > 0 and finite")
    if not 0 < delta < 1:
        raise ValueError(f"delta={delta!r} violates 0 < delta < 1")
    f = lambda log_mu: _log_analytic_delta(math.exp(log_mu), epsilon) - math.log(delta)
    log_mu = optimize.brentq(f, math.log(1e-3), math.log(1e3), xtol=1e-14, rtol=1e-14)
    return 0.5 * math.exp(2.0 * log_mu)

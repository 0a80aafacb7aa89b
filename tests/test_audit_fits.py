"""Fits beside certified bounds (issue 23 item 3): the GDP fit, the trade-off band, RDP lower
limits at several orders; planning (item 4); chunked counting of device arrays (item 6); and
confidence below 1/2 refused by every estimator (issue 24 item 3).

Truths are closed forms: for N(0, 1) vs N(mu, 1) the trade-off is G_mu(alpha) =
Phi(Phi^{-1}(1 - alpha) - mu), the RDP is a mu^2 / 2, and eps(delta) is the analytic Gaussian
mechanism's (Balle & Wang 2018), written here with scipy.
"""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize, stats

from dpjax.estimators import (
    epsilon_estimate,
    epsilon_lower_bound,
    gdp_lower_bound,
    pairs_needed,
    privacy_loss_profile,
    rdp_lower_bound,
    renyi_estimate,
    renyi_lower_bounds,
    tradeoff_upper_bound,
)
from dpjax.estimators import samples as samples_module
from dpjax.estimators.contamination import quantile_order_statistic_interval
from dpjax.estimators.contamination_rate import decay_rate_fit


def _gaussian_eps(mu, delta):
    """Tight eps(delta) of N(0,1) vs N(mu,1), by root finding on Balle & Wang's delta(eps)."""
    def gap(eps):
        return stats.norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * stats.norm.cdf(-mu / 2 - eps / mu) - delta

    return optimize.brentq(gap, 0.0, 100.0, xtol=1e-12)


def _pair(rng, n, mu, rho=0.0):
    """n coupled draws: P ~ N(0,1), Q ~ N(mu,1), correlation rho within a pair."""
    z = rng.standard_normal(n)
    return z, rho * z + math.sqrt(1 - rho**2) * rng.standard_normal(n) + mu


@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0, 3.0])
def test_gdp_fit_reaches_97_percent_of_mu_at_1e5(mu):
    # goal of issue 23: >= 0.97 mu at 1e5 samples per side (independent sides, the harder case)
    rng = np.random.default_rng(int(10 * mu))
    p, q = _pair(rng, 100_000, mu)
    fit = gdp_lower_bound(p, q, seed=1)
    assert 0.97 * mu <= fit.mu <= mu * 1.01, fit
    assert fit.mu <= fit.mu_estimate
    # the fit is labelled: its eps is the Gaussian mechanism's, and the assumption is stated
    assert fit.epsilon(1e-3) == pytest.approx(_gaussian_eps(fit.mu, 1e-3), rel=1e-6)
    assert "ASSUMES" in fit.assumption and "fit" in repr(fit)


@pytest.mark.slow
@pytest.mark.parametrize("mu", [0.5, 3.0])
def test_gdp_fit_reaches_99_percent_of_mu_at_1e6(mu):
    rng = np.random.default_rng(7)
    p, q = _pair(rng, 1_000_000, mu)
    fit = gdp_lower_bound(p, q, seed=2)
    assert 0.99 * mu <= fit.mu <= mu * 1.005, fit


@pytest.mark.slow
def test_certified_bound_fit_and_band_are_valid_at_their_nominal_rate():
    """600 repetitions on N(0,1) vs N(1,1), 4,000 coupled pairs each (correlation 0.5, as coupled
    chains are): the certified eps lower bound, the GDP lower limit (its truth is mu = 1 exactly:
    the pair's trade-off is G_1) and the band (the true curve G_1 on 12 alphas, simultaneously)
    are each wrong in at most 5% of repetitions plus the Monte Carlo allowance: with 600
    repetitions the sd of an estimated 5% rate is sqrt(.05 * .95 / 600) = 0.0089, so a rate above
    0.05 + 3 sd = 0.077 fails (a false alarm has probability 0.0013)."""
    mu, delta, reps = 1.0, 1e-2, 600
    alphas = np.array([1e-3, 0.01, 0.03, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 0.95])
    truth_curve = stats.norm.cdf(stats.norm.isf(alphas) - mu)
    true_eps = _gaussian_eps(mu, delta)
    rng = np.random.default_rng(2024)
    wrong = np.zeros(3)
    for r in range(reps):
        p, q = _pair(rng, 4000, mu, rho=0.5)
        wrong[0] += epsilon_lower_bound(p, q, delta, seed=r).epsilon > true_eps
        wrong[1] += gdp_lower_bound(p, q, seed=r).mu > mu
        wrong[2] += np.any(tradeoff_upper_bound(p, q, alphas, seed=r).beta_upper < truth_curve)
    rates = wrong / reps
    assert np.all(rates <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps)), rates


def test_band_is_informative_and_certifies_eps():
    rng = np.random.default_rng(3)
    mu = 2.0
    p, q = _pair(rng, 50_000, mu, rho=0.3)
    alphas = np.linspace(0.01, 0.99, 50)
    band = tradeoff_upper_bound(p, q, alphas)
    truth = stats.norm.cdf(stats.norm.isf(alphas) - mu)
    assert np.all(band.beta_upper >= truth)
    # close to the curve at 4e4 held-out samples a side: within 0.035 where T is not steep, and
    # at alpha = 0.01 (slope about -7) within 0.07; 0.01 on average
    gap = band.beta_upper - truth
    assert gap[0] <= 0.07 and np.all(gap[1:] <= 0.035) and gap.mean() <= 0.01, gap
    assert np.all(np.diff(band.beta_upper) <= 1e-12)  # a trade-off: non-increasing
    # the eps it certifies is a valid lower bound, not far from what a threshold test gets
    eps = band.epsilon_lower_bound(1e-2)
    assert 0.6 * _gaussian_eps(mu, 1e-2) < eps <= _gaussian_eps(mu, 1e-2)
    # swapping the sides flips the orientation, not the validity
    swapped = tradeoff_upper_bound(q, p, alphas)
    assert swapped.orientation == "large t: samples_p" and np.all(swapped.beta_upper >= truth)


def test_rdp_lower_limits_hold_together_and_say_where_they_stop():
    rng = np.random.default_rng(4)
    mu = 1.0
    p, q = _pair(rng, 40_000, mu)
    orders = np.array([1.5, 2.0, 4.0, 8.0, 64.0])
    res = rdp_lower_bound(p, q, orders)
    exact = orders * mu**2 / 2
    assert np.all(res.rdp <= exact)
    assert res.certified[:3].all() and res.rdp[1] > 0.5 * exact[1]
    # simultaneous limits are never above the per-order ones of the same split
    assert np.all(res.rdp <= renyi_lower_bounds(p, q, orders) + 1e-12)
    # far too little data: nothing certified, and said so
    tiny = rdp_lower_bound(p[:20], q[:20] - mu + 0.01, [2.0])
    assert not tiny.certified[0] and tiny.rdp[0] == 0.0 and "not certified" in repr(tiny)


def test_device_arrays_are_counted_in_chunks_with_the_same_numbers(monkeypatch):
    rng = np.random.default_rng(5)
    p, q = _pair(rng, 30_000, 1.0, rho=0.4)
    ref = (epsilon_lower_bound(p, q, 1e-3, seed=3), gdp_lower_bound(p, q, seed=3), tradeoff_upper_bound(p, q, [0.05, 0.5], seed=3))
    copies = []
    original = samples_module.Samples.rows

    def recording(self, start, stop):
        copies.append(stop - start)
        return original(self, start, stop)

    monkeypatch.setattr(samples_module, "CHUNK_ROWS", 4096)
    monkeypatch.setattr(samples_module.Samples, "rows", recording)
    with jax.enable_x64(True):  # float64 device arrays, as a float64 run_coupled leaves them
        jp, jq = jnp.asarray(p), jnp.asarray(q)
    got = (epsilon_lower_bound(jp, jq, 1e-3, seed=3), gdp_lower_bound(jp, jq, seed=3), tradeoff_upper_bound(jp, jq, [0.05, 0.5], seed=3))
    assert got[0].epsilon == ref[0].epsilon and got[0].threshold == ref[0].threshold
    assert got[1].mu == ref[1].mu
    np.testing.assert_array_equal(got[2].beta_upper, ref[2].beta_upper)
    assert copies and max(copies) <= 4096  # never more than one chunk of rows on the host


def test_subset_split_above_the_permutation_size_keeps_pairs_together(monkeypatch):
    monkeypatch.setattr(samples_module, "PERMUTATION_ROWS", 1000)
    monkeypatch.setattr(samples_module, "MAX_SELECTION", 500)
    rng = np.random.default_rng(6)
    p, q = _pair(rng, 20_000, 1.0, rho=0.9)
    split = samples_module.split_pair(p, q, seed=1)
    assert split.m_p == 500 and split.h_p == 19_500 and split.paired
    np.testing.assert_array_equal(split.selected_p, split.selected_q)
    assert 0.8 < gdp_lower_bound(p, q, seed=1).mu <= 1.0


def test_plug_in_estimates_count_large_samples_in_chunks(monkeypatch):
    """Above PERMUTATION_ROWS pooled rows the plug-in estimators keep only bin counts (chunked):
    with the edges from the same rows, the point estimate is the in-memory one's, and the
    bootstrap resamples each side's counts (pairing is not kept, so paired=True is refused)."""
    rng = np.random.default_rng(9)
    p, q = _pair(rng, 30_000, 1.0)
    ref = epsilon_estimate(p, q, 1e-2, seed=1, num_bootstrap=50)
    ref_renyi = renyi_estimate(p, q, [2.0], seed=1, num_bootstrap=20)
    monkeypatch.setattr(samples_module, "PERMUTATION_ROWS", 10_000)
    monkeypatch.setattr(samples_module, "CHUNK_ROWS", 4096)
    got = epsilon_estimate(p, q, 1e-2, seed=1, num_bootstrap=50)
    assert got.epsilon == ref.epsilon and got.num_bins == ref.num_bins and not got.paired
    assert got.interval[0] <= got.epsilon <= got.interval[1]
    assert renyi_estimate(p, q, [2.0], seed=1, num_bootstrap=20).rdp[0] == pytest.approx(ref_renyi.rdp[0], rel=1e-12)
    with pytest.raises(ValueError, match="paired=True needs every row's bin"):
        epsilon_estimate(p, q, 1e-2, paired=True)


def test_pairs_needed_matches_the_expected_bound_and_a_pilot():
    plan = pairs_needed(3.0, 1e-3, fraction=0.9)
    assert math.isfinite(plan.pairs) and plan.expected_bound == pytest.approx(2.7, rel=2e-3)
    assert plan.mu == pytest.approx(optimize.brentq(lambda m: _gaussian_eps(m, 1e-3) - 3.0, 0.1, 5), rel=1e-6)
    # a tenth of the planned pairs falls short, the planned number gets there (on real samples)
    rng = np.random.default_rng(8)
    n = int(plan.pairs)
    p, q = _pair(rng, n, plan.mu)
    assert epsilon_lower_bound(p, q, 1e-3, seed=1).epsilon >= 0.85 * 3.0
    assert epsilon_lower_bound(p[: n // 10], q[: n // 10], 1e-3, seed=1).epsilon < 0.85 * 3.0
    # from a pilot run: the target is the pilot's GDP estimate
    pilot = pairs_needed(delta=1e-3, pilot=_pair(rng, 5000, 1.0))
    assert pilot.source.startswith("pilot") and 0.8 < pilot.mu < 1.2 and math.isfinite(pilot.pairs)
    assert "pairs per side" in str(pilot)


@pytest.mark.parametrize(
    "call",
    [
        lambda p, q: epsilon_lower_bound(p, q, 1e-3, confidence=1e-12),
        lambda p, q: epsilon_lower_bound(p, q, 1e-3, confidence=0.49),
        lambda p, q: gdp_lower_bound(p, q, confidence=0.3),
        lambda p, q: tradeoff_upper_bound(p, q, [0.5], confidence=0.1),
        lambda p, q: rdp_lower_bound(p, q, [2.0], confidence=0.2),
        lambda p, q: renyi_lower_bounds(p, q, [2.0], confidence=0.2),
        lambda p, q: epsilon_estimate(p, q, 1e-2, confidence=0.2),
        lambda p, q: renyi_estimate(p, q, [2.0], confidence=0.2),
        lambda p, q: privacy_loss_profile(p, [0.0, 1.0], confidence=0.2),
        lambda p, q: quantile_order_statistic_interval(p, 0.5, confidence=0.2),
        lambda p, q: pairs_needed(1.0, 1e-3, confidence=0.4),
        lambda p, q: decay_rate_fit([10, 100], [p[:50], p[50:100]], confidence=0.4),
    ],
)
def test_every_estimator_refuses_confidence_below_one_half(call):
    rng = np.random.default_rng(0)
    p, q = _pair(rng, 2000, 1.0)
    with pytest.raises(ValueError, match=r"confidence=.* violates confidence in \[0.5, 1\)"):
        call(p, q)


def test_fits_refuse_what_they_cannot_do():
    rng = np.random.default_rng(0)
    p, q = _pair(rng, 500, 1.0)
    with pytest.raises(ValueError, match="needs at least 1000"):
        gdp_lower_bound(p, q)
    for bad in ([0.0], [1.0], [0.5, 1.2], [-0.1], [np.nan]):
        with pytest.raises(ValueError, match="alpha=.* violate 0 < alpha < 1"):
            tradeoff_upper_bound(p, q, bad)
    with pytest.raises(ValueError, match="violate 1 < order"):
        rdp_lower_bound(p, q, [1.0, 2.0])
    with pytest.raises(ValueError, match="exactly one of epsilon"):
        pairs_needed(None, 1e-3)
    with pytest.raises(ValueError, match="samples_q has a non-finite value .*nan.* at index \\[7, 0\\]"):
        gdp_lower_bound(np.zeros(2000), np.where(np.arange(2000) == 7, np.nan, 1.0))
    with pytest.raises(ValueError, match="paired=True needs as many samples"):
        gdp_lower_bound(np.zeros(2000), np.ones(3000), paired=True)

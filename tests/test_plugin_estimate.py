"""epsilon_estimate: the hockey-stick inversion on hand-solvable histograms, convergence to the
analytic Gaussian mechanism (Balle & Wang 2018, written out below with scipy), bootstrap
behaviour, and input checks."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, stats

from dpjax.estimators import epsilon_estimate
from dpjax.estimators.plugin import bin_pair, hockey_stick_epsilon


def gaussian_eps(mu: float, delta: float) -> float:
    def excess(eps):
        return stats.norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2) - delta

    return 0.0 if excess(0.0) <= 0 else optimize.brentq(excess, 0.0, 50.0, xtol=1e-12)


@pytest.mark.parametrize(
    "big,small,delta,expected",
    [
        # 0.9 - 0.1 x = delta (the other bin is inactive for x >= 1/9): x = (0.9 - delta)/0.1
        ((0.9, 0.1), (0.1, 0.9), 0.5, np.log(4.0)),
        ((0.9, 0.1), (0.1, 0.9), 0.05, np.log(8.5)),
        # total variation 0.4 <= delta: eps = 0
        ((0.7, 0.3), (0.3, 0.7), 0.45, 0.0),
        # mass 0.5 where small is empty: no eps reaches delta = 0.1 ...
        ((0.5, 0.5), (1.0, 0.0), 0.1, np.inf),
        # ... but delta = 0.6 is reached at once (0.5 - x*1 <= 0.1 for x >= 1)
        ((0.5, 0.5), (1.0, 0.0), 0.6, 0.0),
    ],
)
def test_hockey_stick_inversion_on_two_bins(big, small, delta, expected):
    got = hockey_stick_epsilon(np.array([big]), np.array([small]), delta)[0]
    if np.isinf(expected):
        assert np.isinf(got)
    else:
        assert got == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("mu", [0.5, 1.0])
def test_estimate_close_to_truth_at_large_n(mu):
    # At n = 2e5 per side the bootstrap spread of the estimate is about 0.02-0.06 (see the
    # convergence table in the docs); 10% of the truth is several times that.
    rng = np.random.default_rng(11)
    n, delta = 200_000, 1e-2
    p, q = rng.standard_normal(n), rng.standard_normal(n) + mu
    result = epsilon_estimate(p, q, delta, num_bootstrap=50)
    assert result.epsilon == pytest.approx(gaussian_eps(mu, delta), rel=0.1)
    assert result.epsilon == max(result.epsilon_p_vs_q, result.epsilon_q_vs_p)
    assert result.interval[0] <= result.interval[1]


def test_error_shrinks_as_samples_grow():
    mu, delta = 1.0, 1e-2
    true = gaussian_eps(mu, delta)
    errors = {}
    for n in (1000, 100_000):
        errs = []
        for seed in range(5):
            rng = np.random.default_rng(seed)
            est = epsilon_estimate(rng.standard_normal(n), rng.standard_normal(n) + mu, delta, num_bootstrap=0)
            errs.append(abs(est.epsilon - true))
        errors[n] = np.mean(errs)
    assert errors[100_000] < 0.5 * errors[1000]


def test_bootstrap_interval_narrows_with_n():
    widths = []
    for n in (2000, 200_000):
        rng = np.random.default_rng(5)
        est = epsilon_estimate(rng.standard_normal(n), rng.standard_normal(n) + 0.5, 1e-2, num_bootstrap=100)
        widths.append(est.interval[1] - est.interval[0])
    assert widths[1] < 0.3 * widths[0]


def test_two_dimensional_pair_through_lda_projection():
    cov = np.array([[1.0, 0.6], [0.6, 2.0]])
    shift = np.array([0.8, -0.5])
    mu = float(np.sqrt(shift @ np.linalg.solve(cov, shift)))
    chol = np.linalg.cholesky(cov)
    rng = np.random.default_rng(8)
    n = 200_000
    p = rng.standard_normal((n, 2)) @ chol.T
    q = rng.standard_normal((n, 2)) @ chol.T + shift
    est = epsilon_estimate(p, q, 1e-2, num_bootstrap=0)
    assert est.statistic == "lda"
    assert est.epsilon == pytest.approx(gaussian_eps(mu, 1e-2), rel=0.1)


def test_unpaired_bootstrap_for_unequal_sizes():
    rng = np.random.default_rng(1)
    est = epsilon_estimate(rng.standard_normal(3000), rng.standard_normal(5000) + 1.0, 1e-2, num_bootstrap=50)
    assert not est.paired and est.num_bootstrap == 50
    assert est.interval[0] <= est.interval[1]


def test_bins_are_merged_until_both_sides_are_populated():
    rng = np.random.default_rng(2)
    binned = bin_pair(rng.standard_normal(20_000), rng.standard_normal(20_000) + 3.0, min_count=10)
    counts_p = np.bincount(binned.bins_p, minlength=binned.num_bins)
    counts_q = np.bincount(binned.bins_q, minlength=binned.num_bins)
    assert counts_p.min() >= 10 and counts_q.min() >= 10
    assert binned.edges.size == binned.num_bins + 1


def test_input_errors():
    x = np.linspace(-1, 1, 100)
    with pytest.raises(ValueError, match="num_bootstrap=-1 violates"):
        epsilon_estimate(x, x, 1e-2, num_bootstrap=-1)
    with pytest.raises(ValueError, match="bins=0 violates bins a positive integer"):
        epsilon_estimate(x, x, 1e-2, bins=0)
    with pytest.raises(ValueError, match="min_count=0 violates"):
        epsilon_estimate(x, x, 1e-2, min_count=0)
    with pytest.raises(ValueError, match="paired=True needs as many samples on each side"):
        epsilon_estimate(x, x[:50], 1e-2, paired=True)
    with pytest.raises(ValueError, match="delta=1.5 violates"):
        epsilon_estimate(x, x, 1.5)
    bad = x.copy()
    bad[3] = np.inf
    with pytest.raises(ValueError, match=r"samples_p has a non-finite value .*inf.* at index \[3, 0\]"):
        epsilon_estimate(bad, x, 1e-2)

"""The plug-in estimate's interval covers the truth (issue 38, item 2): on Gaussian pairs
N(0, 1) vs N(mu, 1) with 20,000 samples a side, the 95% interval of ``epsilon_estimate`` holds
the exact eps(delta) (the analytic Gaussian mechanism, written out here with scipy, not
dpjax's) in >= 90% of runs. The old median-centred interval held it in 62-70% of runs where the
estimate is biased upward (mu = 0.5 and 1 at delta = 1e-2).

Monte Carlo error: a coverage c measured from R independent runs has standard error
sqrt(c (1 - c) / R); at c = 0.95 that is 0.022 at R = 100 (the default cells) and 0.015 at
R = 200 (the ``full`` grid). The threshold 0.90 is 2.3 standard errors below 0.95 at R = 100
(the default suite runs fixed seeds, so a pass is reproducible, not a lucky draw)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from dpjax.bench.audit import plugin_coverage


def gaussian_eps(mu: float, delta: float) -> float:
    """The exact eps(delta) of N(0, 1) vs N(mu, 1) (Balle & Wang 2018, Theorem 8)."""
    def excess(eps):
        return stats.norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2) - delta

    return 0.0 if excess(0.0) <= 0 else optimize.brentq(excess, 0.0, 60.0, xtol=1e-12)


def _check(mu: float, delta: float, runs: int) -> dict:
    row = plugin_coverage(mu, delta, samples=20_000, runs=runs, seed=7)
    assert row["truth"] == pytest.approx(gaussian_eps(mu, delta), rel=1e-9)  # the truth is the truth
    assert row["mc_error"] == pytest.approx(math.sqrt(max(row["coverage"] * (1 - row["coverage"]), 0.95 * 0.05) / runs))
    assert row["coverage"] >= 0.90, row
    return row


@pytest.mark.parametrize("mu,delta", [(1.0, 1e-2), (0.5, 1e-2)])
def test_the_plugin_interval_covers_where_the_estimate_is_biased_upward(mu, delta):
    # the issue's case (mu = 1, delta = 1e-2: 14 of 20 before) and mu = 0.5's (62% before),
    # where the point estimate is above the truth in most runs
    row = _check(mu, delta, runs=100)
    assert row["above"] >= 70  # the bias this interval must allow for is there


@pytest.mark.full
@pytest.mark.parametrize("mu", [0.25, 0.5, 1.0, 1.5, 2.0])
@pytest.mark.parametrize("delta", [1e-2, 1e-3, 1e-4])
def test_the_plugin_interval_covers_over_the_mu_delta_grid(mu, delta):
    # unresolved estimates (a floor with an interval open above) count: they hold the truth
    # when the floor is below it, which they must
    _check(mu, delta, runs=200)

"""Paper 000 §5: the Wasserstein + Lipschitz bound and its Gaussian closed forms, checked against
quantile integrals, matrix-square-root formulas, numerical gradients and sampling."""
from __future__ import annotations

import argparse
import math

import numpy as np
import pytest
from scipy import integrate, linalg, stats

from dpjax.experiments.sgld_interim import wasserstein as ws


def test_w2_against_the_quantile_integral_and_gelbrichs_formula():
    # d = 1: W2^2 = int_0^1 (F^-1(u) - G^-1(u))^2 du
    val, _ = integrate.quad(lambda u: (stats.norm.ppf(u, 0.3, 1.2) - stats.norm.ppf(u, -0.1, 0.7)) ** 2, 0, 1, limit=200)
    assert ws.gaussian_w2([0.3], 1.2, [-0.1], 0.7) == pytest.approx(math.sqrt(val), rel=1e-7)
    # d = 3: |m1 - m2|^2 + tr(S1 + S2 - 2 (S2^1/2 S1 S2^1/2)^1/2)
    m1, m2 = np.array([0.1, -0.2, 0.3]), np.array([0.0, 0.5, 0.3])
    S1, S2 = 1.3**2 * np.eye(3), 0.6**2 * np.eye(3)
    r = linalg.sqrtm(S2)
    gelbrich = np.sum((m1 - m2) ** 2) + np.trace(S1 + S2 - 2 * linalg.sqrtm(r @ S1 @ r)).real
    assert ws.gaussian_w2(m1, 1.3, m2, 0.6) == pytest.approx(math.sqrt(gelbrich), rel=1e-12)


def test_gaussian_lipschitz_constant_is_the_largest_gradient():
    for d, s in ((1, 1.0), (2, 0.5), (3, 2.0)):
        r = np.linspace(0, 5 * s, 200001)
        grad = r / s**2 * np.exp(-0.5 * (r / s) ** 2) / ((2 * math.pi) ** (d / 2) * s**d)
        assert ws.gaussian_lipschitz(s, d) == pytest.approx(grad.max(), rel=1e-9)


def test_ball_probabilities_and_smoothed_densities():
    # d = 1: an interval
    p = ws.gaussian_ball_probability(np.array([[0.7]]), 0.4, [0.1], 0.8)[0]
    assert p == pytest.approx(stats.norm.cdf(1.1, 0.1, 0.8) - stats.norm.cdf(0.3, 0.1, 0.8), rel=1e-10)
    # d = 2, 3: against sampling (5 sigma)
    rng = np.random.default_rng(0)
    for d in (2, 3):
        x, m = np.full(d, 0.4), np.zeros(d)
        draws = 0.9 * rng.standard_normal((200000, d))
        freq = np.mean(np.sum((draws - x) ** 2, axis=1) <= 0.8**2)
        exact = ws.gaussian_ball_probability(x[None, :], 0.8, m, 0.9)[0]
        assert abs(freq - exact) < 5 * math.sqrt(exact * (1 - exact) / draws.shape[0])
        # a small ball: the smoothed density tends to the density
        assert ws.gaussian_smoothed_density(x[None, :], 1e-3, m, 0.9)[0] == pytest.approx(ws.gaussian_density(x[None, :], m, 0.9)[0], rel=1e-5)
    assert math.exp(ws.log_ball_volume(3, 2.0)) == pytest.approx(4 / 3 * math.pi * 8)
    assert ws.log_volume_ratio(4, 2.0, 0.5) == pytest.approx(4 * math.log(2.0 / 1.5))


def test_theorem2_terms_and_argument_checks():
    V, A = ws.theorem2_terms(2, 1.0, 0.1, 0.3)
    assert V == pytest.approx((1 / 0.9) ** 2)
    assert A == pytest.approx((V - 1) * 2 * 0.3 + 0.1 / (math.pi * 0.81))
    assert ws.theorem2_rhs(0.5, 2, 1.0, 0.1, 0.3) == pytest.approx(V * 0.5 + A)
    assert ws.pointwise_rhs(0.5, 2, 1.0, 0.1, 0.3) == pytest.approx(V * 0.5 + (V + 1) * 0.3 + A)
    with pytest.raises(ValueError, match="smoothing"):
        ws.theorem2_terms(2, 0.1, 0.1, 0.3)  # lambda must exceed eps
    with pytest.raises(ValueError, match="eps"):
        ws.theorem2_terms(2, 1.0, 0.0, 0.3)
    with pytest.raises(ValueError, match="dim"):
        ws.log_ball_volume(0, 1.0)
    with pytest.raises(ValueError, match="mean"):
        ws.gaussian_w2([0.0, 0.0], 1.0, [0.0], 1.0)
    # vacuity: once the additive term exceeds sup p_lambda the bound is vacuous; it worsens with d
    r1, r3, r10 = (ws.vacuity_ratio(d, 1e-2)[0] for d in (1, 3, 10))
    assert r1 < 1 < r3 < r10
    w = ws.largest_nonvacuous_w2(2)
    assert ws.vacuity_ratio(2, 0.99 * w)[0] < 1 < ws.vacuity_ratio(2, 1.01 * w)[0]


def test_wasserstein_bound_quick_run():
    from dpjax.experiments.sgld_interim import wasserstein_bound as ex

    parser = argparse.ArgumentParser()
    ex.add_arguments(parser)
    args = parser.parse_args(["--points", "20", "--max-dim", "20"])
    args.quick, args.seed = True, 0
    results = ex.compute(args)
    assert results["all_checks_hold"]
    assert all(c["min_rhs_over_lhs_theorem2"] >= 1.0 for c in results["pointwise"])
    largest = results["vacuity"]["largest_nonvacuous_w2"]
    assert all(a > b for a, b in zip(largest, largest[1:]))  # the bound needs ever closer pairs as d grows
    assert ex.headline(results)[0]["dpjax"] is True

"""Paper 001 §3.2: the noisy Monte Carlo estimator's closed forms, checked against brute force,
mpmath quadrature and Monte Carlo; the ``noisy-monte-carlo`` experiment at a small size."""
from __future__ import annotations

import argparse
import math

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

from dpjax.experiments.girsanov import noisy_monte_carlo_bounds as nmc


def _mp_pdf(x, a, s, b):
    t, k = mp.mpf(x) - a, mp.mpf(s) / b
    z = t / s
    return mp.e ** (k * k / 2) / (2 * b) * (mp.e ** (-t / b) * mp.ncdf(z - k) + mp.e ** (t / b) * mp.ncdf(-z - k))


def test_gaussian_laplace_density_and_cdf_against_mpmath_and_sampling():
    mp.mp.dps = 30
    a, s, b = 0.2, 0.3, 0.5
    xs = np.array([-30.0, -3.0, -0.4, 0.2, 1.0, 6.0, 40.0])
    ref = np.array([float(mp.log(_mp_pdf(x, a, s, b))) for x in xs])
    np.testing.assert_allclose(nmc.gaussian_laplace_logpdf(xs, a, s, b), ref, rtol=1e-12, atol=1e-12)
    cdf_ref = [float(mp.quad(lambda t: _mp_pdf(t, a, s, b), [-mp.inf, a, x])) for x in (-1.0, 0.2, 1.5)]
    np.testing.assert_allclose(nmc.gaussian_laplace_cdf(np.array([-1.0, 0.2, 1.5]), a, s, b), cdf_ref, rtol=1e-10)
    rng = np.random.default_rng(0)
    draws = a + s * rng.standard_normal(20000) + rng.laplace(0, b, 20000)
    assert stats.kstest(draws, lambda x: nmc.gaussian_laplace_cdf(x, a, s, b)).pvalue > 1e-4


def test_hockey_stick_against_mpmath_quadrature_over_the_exact_loss_set():
    mp.mp.dps = 25
    a1, a2, s, b = 0.0, 0.36, 0.027, 0.54
    for eps in (0.0, 0.5):
        loss = lambda x: mp.log(_mp_pdf(x, a1, s, b)) - mp.log(_mp_pdf(x, a2, s, b)) - eps
        x_star = mp.findroot(loss, 0.1)
        ref = mp.quad(lambda x: _mp_pdf(x, a1, s, b) - mp.e**eps * _mp_pdf(x, a2, s, b), [-80, -20, -5, -1, x_star])
        assert nmc.gaussian_laplace_hockey_stick(a1, a2, s, b, eps) == pytest.approx(float(ref), rel=1e-10)
        # symmetric pair: both directions agree
        assert nmc.gaussian_laplace_hockey_stick(a2, a1, s, b, eps) == pytest.approx(float(ref), rel=1e-10)
    # the loss is bounded by |gap|/b: delta = 0 from there on, and eps(delta) stays below it
    assert nmc.gaussian_laplace_hockey_stick(a1, a2, s, b, 0.36 / 0.54) == 0.0
    assert 0 < nmc.gaussian_laplace_epsilon(a1, a2, s, b, 1e-9) < 0.36 / 0.54
    # a tiny Gaussian part: the pure Laplace mechanism, delta(eps) = 1 - e^{(eps - eps0)/2}
    eps0 = 0.36 / 0.54
    assert nmc.gaussian_laplace_hockey_stick(a1, a2, 1e-7, b, 0.3) == pytest.approx(-math.expm1((0.3 - eps0) / 2), rel=1e-6)


def test_ar1_average_law_against_the_covariance_matrix_and_simulation():
    rho, tau, centre, N, m0, v0 = 0.9, 0.4, 1.0, 25, -2.0, 0.5
    law = nmc.ar1_average_law(rho, tau, centre, N, m0, v0)
    # brute force: Cov(X_i, X_j) = rho^{|i-j|} Var(X_min) for the AR(1) chain
    k = np.arange(1, N + 1)
    var_k = rho ** (2 * k) * v0 + tau**2 * (1 - rho ** (2 * k)) / (1 - rho**2)
    cov = rho ** np.abs(k[:, None] - k[None, :]) * var_k[np.minimum.outer(k, k) - 1]
    assert law.variance == pytest.approx(cov.sum() / N**2, rel=1e-12)
    assert law.mean == pytest.approx(np.mean(centre + rho**k * (m0 - centre)), rel=1e-12)
    rng = np.random.default_rng(1)
    x = m0 + math.sqrt(v0) * rng.standard_normal(40000)
    total = np.zeros_like(x)
    for _ in range(N):
        x = centre + rho * (x - centre) + tau * rng.standard_normal(x.size)
        total += x
    assert stats.kstest(total / N, stats.norm(law.mean, math.sqrt(law.variance)).cdf).pvalue > 1e-4
    # rho near 1 keeps its digits (term-by-term sums, expm1 powers)
    near = nmc.ar1_average_law(1 - 1e-9, 1.0, 0.0, 10)
    assert near.variance == pytest.approx(sum(j * j for j in range(1, 11)) / 100.0, rel=1e-6)


def test_concentration_radius_and_the_guarantee_formulas():
    C = nmc.concentration_radius(0.0, 2.0, 0.05)
    assert C == pytest.approx(2.0 * stats.norm.isf(0.025), rel=1e-12)
    C = nmc.concentration_radius(0.3, 1.0, 1e-6)
    assert stats.norm.sf(C - 0.3) + stats.norm.sf(C + 0.3) == pytest.approx(1e-6, rel=1e-9)
    assert nmc.prop310_delta(0.1) == pytest.approx(0.19)
    assert nmc.prop37_delta(0.1, 0.01) == pytest.approx(0.11)
    assert nmc.prop310_noise_scale(0.5, 0.2, 2.0) == pytest.approx(0.6)
    assert nmc.release_variance(1.0, 2.0, 0.5) == pytest.approx(1.0 + 2 * 16)
    assert nmc.printed_release_variance(1.0, 2.0, 0.5) == pytest.approx(5.0)  # the printed (wrong) formula
    rng = np.random.default_rng(2)
    assert np.var(rng.laplace(0, 1.5, 400000)) == pytest.approx(nmc.laplace_variance(1.5), rel=0.02)
    with pytest.raises(ValueError, match="delta_tilde"):
        nmc.prop310_delta(1.0)
    with pytest.raises(ValueError, match="epsilon"):
        nmc.prop310_noise_scale(0.5, 0.2, 0.0)
    with pytest.raises(ValueError, match="rho"):
        nmc.ar1_average_law(1.0, 1.0, 0.0, 5)
    with pytest.raises(ValueError, match="epsilon"):
        nmc.gaussian_laplace_hockey_stick(0, 1, 1, 1, -0.1)
    with pytest.raises(ValueError, match="sd"):
        nmc.gaussian_laplace_logpdf(0.0, 0.0, 0.0, 1.0)


def test_noisy_monte_carlo_small_run():
    from dpjax.experiments.girsanov import noisy_monte_carlo as ex

    parser = argparse.ArgumentParser()
    ex.add_arguments(parser)
    args = parser.parse_args(["--num-samples", "100", "--releases", "6000", "--delta-tilde", "0.01", "--confidence", "0.999999"])
    args.quick, args.seed = True, 0
    results = ex.compute(args)
    assert all(results["checks"].values()), results["checks"]
    m = results["prop310"]
    assert m["exact_epsilon_at_guarantee_delta"] < results["parameters"]["epsilon"]
    assert m["exact_epsilon_at_delta_0"] == pytest.approx(m["average_gap"] / m["scale"])
    rows = ex.headline(results)
    assert any("Var" in r["quantity"] for r in rows)
    with pytest.raises(ValueError, match="rho"):
        ex.compute(parser.parse_args(["--rho", "1.5", "--releases", "0"]))

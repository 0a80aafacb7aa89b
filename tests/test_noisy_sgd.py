"""Noisy SGD / DP-SGD composition against dp_accounting's RdpAccountant and closed forms.

dp_accounting 0.6's fractional-order series overestimates the RDP (it adds |C(a, i)| where the
generalised binomial coefficient is negative; see tests/test_gaussian_rdp.py, where dpjax's
values are verified against mpmath). So:
* at integer orders both compute the same exact sum: eps must agree to 1e-6 relative;
* at dp_accounting's default orders dpjax's eps must be <= dp_accounting's (never less
  private), and equal to dp_accounting's *conversion* applied to dpjax's RDP values.
"""
from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dpa

from dpjax.accountants import (
    DEFAULT_ORDERS,
    gaussian_rdp,
    langevin_noise_multiplier,
    noisy_sgd_curve,
    rdp_to_epsilon,
    subsampled_gaussian_rdp,
)
from _shared import dp_accounting_rdp_epsilon

INTEGER_ORDERS = DEFAULT_ORDERS[DEFAULT_ORDERS == np.round(DEFAULT_ORDERS)]


CONFIGS = [  # (q, sigma, steps): the ranges, corners included
    (1e-4, 0.5, 1_000_000),
    (1e-4, 20.0, 1),
    (0.5, 0.5, 10),
    (0.5, 20.0, 1_000_000),
    (0.01, 1.1, 10_000),
    (0.004, 0.8, 250_000),
    (0.2, 3.0, 1000),
    (3e-3, 12.0, 100_000),
]


@pytest.mark.parametrize("q,sigma,steps", CONFIGS)
def test_epsilon_matches_rdp_accountant(q, sigma, steps):
    delta = 1e-5
    ours_int = noisy_sgd_curve(sigma, q, steps, orders=INTEGER_ORDERS).epsilon(delta)
    assert ours_int == pytest.approx(dp_accounting_rdp_epsilon(q, sigma, steps, delta, INTEGER_ORDERS), rel=1e-6)

    curve = noisy_sgd_curve(sigma, q, steps)
    ref = dp_accounting_rdp_epsilon(q, sigma, steps, delta, DEFAULT_ORDERS)
    ours = curve.epsilon(delta)
    assert ours <= ref * (1 + 1e-9)
    assert ours == pytest.approx(dpa.compute_epsilon(DEFAULT_ORDERS, curve.rdp, delta)[0], rel=1e-12)
    assert np.all(np.isfinite(curve.rdp))  # no order dropped


def test_vectorised_rdp_to_epsilon_matches_accountant_loop():
    rng = np.random.default_rng(0)
    q = 10 ** rng.uniform(-4, np.log10(0.5), 5)
    sigma = rng.uniform(0.5, 20, 5)
    steps = np.round(10 ** rng.uniform(0, 6, 5)).astype(int)
    rdp = subsampled_gaussian_rdp(q[:, None], sigma[:, None], INTEGER_ORDERS) * steps[:, None]
    eps = rdp_to_epsilon(INTEGER_ORDERS, rdp, 1e-5)
    for i in range(5):
        ref = dp_accounting_rdp_epsilon(q[i], sigma[i], int(steps[i]), 1e-5, INTEGER_ORDERS)
        assert eps[i] == pytest.approx(ref, rel=1e-6)


def test_full_batch_is_composed_gaussian_mechanism():
    curve = noisy_sgd_curve(4.0, 1.0, 500)  # q = 1
    np.testing.assert_allclose(curve.rdp, 500 * gaussian_rdp(4.0, DEFAULT_ORDERS), rtol=1e-15)
    acc = dp_accounting.rdp.RdpAccountant(list(DEFAULT_ORDERS))
    acc.compose(dp_accounting.GaussianDpEvent(4.0), 500)
    assert curve.epsilon(1e-6) == pytest.approx(acc.get_epsilon(1e-6), rel=1e-12)
    replace = noisy_sgd_curve(4.0, 1.0, 500, adjacency="replace-one")
    np.testing.assert_array_equal(replace.rdp, curve.rdp)
    assert "replace-one adjacency" in replace.provenance.assumptions  # one printed form (issue 24)


def test_batch_axes_and_provenance():
    curve = noisy_sgd_curve(np.array([[1.0], [2.0]]), np.array([0.01, 0.1, 0.2]), 100, orders=[2.0, 4.5])
    assert curve.rdp.shape == (2, 3, 2)
    assert curve.epsilon(1e-5).shape == (2, 3)
    np.testing.assert_allclose(curve.rdp[1, 2], 100 * subsampled_gaussian_rdp(0.2, 2.0, [2.0, 4.5]), rtol=1e-14)
    prov = curve.provenance
    assert "Poisson-subsampled Gaussian" in prov.result and "100-fold" in prov.result
    assert prov.mode == "bound" and prov.released.startswith("path")
    assert any("Poisson" in a for a in prov.assumptions) and any("clipped" in a for a in prov.assumptions)


def test_langevin_noise_multiplier_is_the_step_as_a_gaussian_mechanism():
    """One Langevin step given x: N(x - drift, (2 gamma/beta) I). Two drifts at distance
    gamma * scale * C (add/remove) have Rényi divergence a |d|^2 / (2 s^2), s^2 = 2 gamma/beta
    (closed form for equal-covariance Gaussians); it must equal gaussian_rdp(noise_multiplier)."""
    gamma, beta, clip, scale = 0.01, 50.0, 1.5, 1 / 64
    s2 = 2 * gamma / beta
    for adjacency, m in (("add-remove", 1), ("replace-one", 2)):
        shift = gamma * scale * clip * m
        sigma = langevin_noise_multiplier(gamma, beta, clip, scale, adjacency)
        for a in (1.5, 2.0, 32.0):
            assert gaussian_rdp(sigma, a) == pytest.approx(a * shift**2 / (2 * s2), rel=1e-14)
    # Welling-Teh SGLD (step eta/2, noise variance eta, beta = 1, scale n/b)
    eta, n, b = 1e-4, 10_000, 100
    assert langevin_noise_multiplier(eta / 2, 1.0, 1.0, n / b) == pytest.approx(
        math.sqrt(eta) / (eta / 2 * n / b), rel=1e-15
    )


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(num_steps=0, noise_multiplier=1.0), "num_steps=0 violates num_steps a positive integer"),
        (dict(num_steps=10, noise_multiplier=0.0), "noise_multiplier=0.0 violates noise_multiplier > 0"),
        (dict(num_steps=10, noise_multiplier=1.0, sampling_rate=1.2), "sampling_rate=1.2 violates"),
        (dict(num_steps=10, noise_multiplier=1.0, sampling_rate=0.1, adjacency="replace_one"), "adjacency='replace_one' with sampling_rate < 1"),
        (dict(num_steps=10, noise_multiplier=1.0, adjacency="swap"), "adjacency='swap' is not one of"),
    ],
)
def test_noisy_sgd_errors(kwargs, match):
    # the previous release's num_steps= (and "replace_one") still work, with a DeprecationWarning,
    # and the errors name what was passed
    with pytest.raises(ValueError, match=match), pytest.warns(DeprecationWarning, match="num_steps"):
        noisy_sgd_curve(**kwargs)


def test_langevin_errors():
    with pytest.raises(ValueError, match="step_size=0 violates"):
        langevin_noise_multiplier(0, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="clip_norm=-1 violates"):
        langevin_noise_multiplier(0.1, 1.0, -1, 1.0)


def test_accountant_benchmark_runs_and_agrees():
    import argparse

    from dpjax.bench import accountant as bench

    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    result = bench.run(parser.parse_args(["--configs", "4", "--repeats", "1", "--seed", "3", "--pld-configs", "4", "--pld-baseline-configs", "2",
                                          "--pld-interval", "1e-3"]))
    assert result["configs"] == 4 and result["speedup"] > 0
    assert result["max_rel_diff_integer_orders"] < 1e-6
    assert result["share_dp_accounting_below_dpjax"] == 0.0
    # the PLD row: dp_accounting's pessimistic eps inside dpjax's bracket (same grid interval)
    assert result["pld_configs"] == 4 and result["pld_speedup"] > 0
    assert result["pld_dp_accounting_inside_bracket"] == 1.0

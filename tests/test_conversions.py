"""RDP -> (eps, delta), zCDP and TV-correction conversions.

Checked against dp_accounting's compute_epsilon / compute_delta (same formula, independent
code), against the exact privacy profile of the Gaussian mechanism (Balle & Wang 2018,
Thm 8: the conversions must never certify less than the truth), against a dense-grid
minimisation (zCDP), and against brute-force hockey-stick divergences of discrete
distributions (TV correction).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from dp_accounting.rdp import rdp_privacy_accountant as dpa
from dpjax.accountants import (
    rdp_to_delta,
    rdp_to_epsilon,
    rdp_to_epsilon_per_order,
    tv_corrected_delta,
    zcdp_rdp,
    zcdp_to_epsilon,
)


def random_curve(rng, n_orders=20):
    orders = np.sort(np.concatenate([[1.001, 1.005], 1 + 10 ** rng.uniform(-1.5, 3, n_orders - 2)]))
    rdp = 10 ** rng.uniform(-6, 2, n_orders) * orders  # RDP grows with the order
    rdp[rng.random(n_orders) < 0.15] = np.inf  # some orders give no guarantee
    return orders, rdp


def gaussian_exact_delta(sigma, eps):
    """Tight delta(eps) of the Gaussian mechanism, sensitivity 1 (Balle & Wang 2018, Thm 8)."""
    mu = 1.0 / sigma
    return norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * norm.cdf(-eps / mu - mu / 2)


# --- agreement with dp_accounting -------------------------------------------------------------
def test_balle_conversion_matches_dp_accounting_on_random_curves():
    rng = np.random.default_rng(0)
    for _ in range(40):
        orders, rdp = random_curve(rng)
        delta = 10 ** rng.uniform(-12, -0.05)
        eps = 10 ** rng.uniform(-3, 1.5)
        ref_eps, _ = dpa.compute_epsilon(orders, rdp, delta)
        ref_delta, _ = dpa.compute_delta(orders, rdp, eps)
        assert rdp_to_epsilon(orders, rdp, delta) == pytest.approx(ref_eps, rel=1e-12, abs=0)
        assert rdp_to_delta(orders, rdp, eps) == pytest.approx(ref_delta, rel=1e-12, abs=1e-300)


def test_kl_route_and_all_infinite():
    orders = np.array([1.005, 2.0])
    # rdp tiny at order 1.005: delta^2 >= 1 - e^-rdp gives eps = 0 (as dp_accounting)
    rdp = np.array([1e-12, 1.0])
    assert rdp_to_epsilon(orders, rdp, 1e-5) == 0.0 == dpa.compute_epsilon(orders, rdp, 1e-5)[0]
    assert rdp_to_epsilon(orders, [np.inf, np.inf], 1e-5) == np.inf
    assert rdp_to_delta(orders, [np.inf, np.inf], 1.0) == 1.0


def test_batch_axes_match_a_loop():
    rng = np.random.default_rng(1)
    orders, _ = random_curve(rng)
    rdp = np.stack([random_curve(rng)[1] for _ in range(6)]).reshape(2, 3, -1)
    deltas = np.array([1e-3, 1e-6, 1e-9])
    out = rdp_to_epsilon(orders, rdp, deltas)
    assert out.shape == (2, 3)
    for i in range(2):
        for j in range(3):
            assert out[i, j] == rdp_to_epsilon(orders, rdp[i, j], deltas[j])
    assert rdp_to_epsilon_per_order(orders, rdp, deltas).shape == (2, 3, orders.size)


def test_mironov_closed_form():
    assert rdp_to_epsilon([3.0], [0.5], 1e-5, "mironov") == pytest.approx(0.5 + np.log(1e5) / 2, rel=1e-15)
    assert rdp_to_delta([3.0], [0.5], 2.0, "mironov") == pytest.approx(np.exp(2 * (0.5 - 2.0)), rel=1e-15)


# --- soundness against an exact profile -------------------------------------------------------
@pytest.mark.parametrize("conversion", ["balle", "mironov"])
@pytest.mark.parametrize("sigma", [0.7, 2.0, 10.0])
def test_conversions_never_beat_the_exact_gaussian_profile(conversion, sigma):
    orders = np.concatenate([np.linspace(1.02, 11, 200), np.arange(12, 400)])
    rdp = orders / (2 * sigma**2)
    for eps in [0.05, 0.5, 1.0, 3.0]:
        exact = gaussian_exact_delta(sigma, eps)
        bound = rdp_to_delta(orders, rdp, eps, conversion)
        assert bound >= exact
        if conversion == "balle" and exact > 1e-12:
            assert bound < 30 * exact  # and it is not vacuous
    for delta in [1e-3, 1e-6, 1e-10]:
        eps_bound = rdp_to_epsilon(orders, rdp, delta, conversion)
        assert gaussian_exact_delta(sigma, eps_bound) <= delta * (1 + 1e-9)


def test_balle_is_never_worse_than_mironov():
    rng = np.random.default_rng(2)
    for _ in range(30):
        orders, rdp = random_curve(rng)
        orders = orders[orders > 1.01]
        rdp = rdp[-orders.size :]
        delta = 10 ** rng.uniform(-12, -1)
        assert rdp_to_epsilon(orders, rdp, delta) <= rdp_to_epsilon(orders, rdp, delta, "mironov")


# --- zCDP -------------------------------------------------------------------------------------
@pytest.mark.parametrize("rho,delta", [(1e-3, 1e-5), (0.1, 1e-8), (2.0, 0.1)])
def test_zcdp_formula_is_mironov_minimised_over_orders(rho, delta):
    orders = 1 + np.geomspace(1e-4, 1e5, 400_001)
    eps_grid = rdp_to_epsilon(orders, zcdp_rdp(rho, orders), delta, "mironov")
    eps = zcdp_to_epsilon(rho, delta)
    assert eps <= eps_grid <= eps * (1 + 1e-6)


def test_zcdp_errors():
    with pytest.raises(ValueError, match="rho=-1.0 violates rho >= 0"):
        zcdp_to_epsilon(-1.0, 1e-5)
    with pytest.raises(ValueError, match="delta=1.5 violates 0 < delta < 1"):
        zcdp_to_epsilon(1.0, 1.5)


# --- TV correction ----------------------------------------------------------------------------
def hockey_stick(p, p2, eps):
    return np.maximum(p - np.exp(eps) * p2, 0.0).sum()


def perturb_within_tv(rng, p, tv):
    """A distribution at total variation exactly tv from p (mass moved from some atoms to others)."""
    k = p.size
    take = rng.dirichlet(np.ones(k)) * tv
    take = np.minimum(take, p)
    moved = take.sum()
    give = rng.dirichlet(np.ones(k)) * moved
    out = p - take + give
    return out / out.sum(), 0.5 * np.abs(out / out.sum() - p).sum()


def test_tv_correction_is_sound_on_discrete_distributions():
    rng = np.random.default_rng(3)
    for _ in range(300):
        k = rng.integers(2, 8)
        mu, mu2 = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
        eps = rng.uniform(0, 3)
        delta = hockey_stick(mu, mu2, eps)  # mu is (eps, delta)-close to mu2 (one direction)
        nu, tv1 = perturb_within_tv(rng, mu, rng.uniform(0, 0.2))
        nu2, tv2 = perturb_within_tv(rng, mu2, rng.uniform(0, 0.2))
        tv = max(tv1, tv2)
        assert hockey_stick(nu, nu2, eps) <= tv_corrected_delta(eps, delta, tv) + 1e-12


def test_tv_correction_closed_form_and_edges():
    assert tv_corrected_delta(1.0, 1e-6, 1e-4) == pytest.approx(1e-6 + (1 + np.e) * 1e-4, rel=1e-15)
    assert tv_corrected_delta(np.inf, 1e-6, 0.0) == 1e-6  # no NaN from inf * 0
    assert tv_corrected_delta(5.0, 0.5, 0.5) == 1.0
    with pytest.raises(ValueError, match="total_variation=1.5 violates 0 <= total_variation <= 1"):
        tv_corrected_delta(1.0, 1e-5, 1.5)
    with pytest.raises(ValueError, match="epsilon=-1.0 violates epsilon >= 0"):
        tv_corrected_delta(-1.0, 1e-5, 0.1)
    with pytest.raises(ValueError, match="delta=2.0 violates 0 <= delta <= 1"):
        tv_corrected_delta(1.0, 2.0, 0.1)


# --- properties and errors --------------------------------------------------------------------
curves = st.builds(
    lambda seed: random_curve(np.random.default_rng(seed)), st.integers(0, 2**31 - 1)
)


@settings(max_examples=40, deadline=None)
@given(curve=curves, log_delta=st.floats(-30, -0.01), factor=st.floats(1.0, 10.0), log_eps=st.floats(-4, 3))
def test_monotone_never_nan_and_round_trip(curve, log_delta, factor, log_eps):
    orders, rdp = curve
    delta, eps = 10**log_delta, 10**log_eps
    for conv in ("balle", "mironov"):
        e = rdp_to_epsilon(orders, rdp, delta, conv)
        d = rdp_to_delta(orders, rdp, eps, conv)
        assert not np.isnan(e) and not np.isnan(d) and e >= 0 and 0 <= d <= 1
        assert rdp_to_epsilon(orders, rdp, delta / factor, conv) >= e  # smaller delta, larger eps
        assert rdp_to_epsilon(orders, rdp * factor, delta, conv) >= e  # more leakage, larger eps
        assert rdp_to_delta(orders, rdp, eps * factor, conv) <= d
        assert rdp_to_delta(orders, rdp * factor, eps, conv) >= d
        if np.isfinite(e):  # the delta certified at eps(delta) is no larger than delta
            assert rdp_to_delta(orders, rdp, e, conv) <= delta * (1 + 1e-9)


@pytest.mark.parametrize(
    "args,match",
    [
        (([2.0], [1.0], 0.0), "delta=0.0 violates 0 < delta < 1"),
        (([2.0], [1.0], 1.0), "delta=1.0 violates 0 < delta < 1"),
        (([1.0, 2.0], [1.0, 1.0], 1e-5), r"orders=\[1.0\] violate order > 1"),
        (([2.0], [-1.0], 1e-5), "rdp values must be >= 0"),
        (([2.0, 3.0], [1.0], 1e-5), "last axis must match orders' length 2"),
    ],
)
def test_invalid_input_raises(args, match):
    with pytest.raises(ValueError, match=match):
        rdp_to_epsilon(*args)


def test_invalid_conversion_and_epsilon():
    with pytest.raises(ValueError, match="conversion='foo' is not one of"):
        rdp_to_epsilon([2.0], [1.0], 1e-5, "foo")
    with pytest.raises(ValueError, match="epsilon=-0.5 violates epsilon >= 0"):
        rdp_to_delta([2.0], [1.0], -0.5)

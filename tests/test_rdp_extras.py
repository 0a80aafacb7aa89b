"""RDP extras (issue 13, deliverable 4): the optimal order, group privacy, order = inf, Laplace.

Ground truths: dp_accounting's ``compute_epsilon`` (which reports its optimal order), the
closed-form optimum of the Gaussian's Mironov conversion, the Gaussian and Laplace mechanisms
at sensitivity k (the exact RDP of a group of k), Mironov's Cor. 4, mpmath integrals of the
Laplace mechanism's Rényi and hockey-stick divergences, and randomized response's profile.
"""
from __future__ import annotations

import math
import pathlib
import sys

import mpmath as mp
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dpa

from dpjax.accountants import PrivacyCurve, Provenance, gaussian_rdp, noisy_sgd_curve, rdp_to_delta, rdp_to_epsilon
from dpjax.accountants import subsampled_gaussian_rdp
from dpjax.accountants.mechanisms.gaussian_divergence import analytic_gaussian_delta
from dpjax.accountants.group import group_profile, group_rdp
from dpjax.accountants.mechanisms.laplace import laplace_curve, laplace_delta, laplace_rdp

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from test_bad_inputs import Entry, problems, run_entry  # noqa: E402

PROV = Provenance("test")
INT_ORDERS = np.arange(2, 2049, dtype=float)


# --- the optimal order ------------------------------------------------------------------------
@pytest.mark.parametrize("sigma, q, steps, delta", [(1.0, 0.01, 1000, 1e-5), (3.0, 0.1, 100, 1e-8), (0.8, 1.0, 1, 1e-3), (5.0, 0.001, 10**5, 1e-6)])
def test_optimal_order_is_dp_accountings(sigma, q, steps, delta):
    curve = noisy_sgd_curve(sigma, q, steps)
    eps_ref, order_ref = dpa.compute_epsilon(list(curve.orders), list(curve.rdp), delta)
    assert curve.optimal_order(delta) == order_ref
    # its per-order eps is the curve's eps (same conversion; 1e-12: float64 of one formula)
    assert float(curve.epsilon(delta)) == pytest.approx(eps_ref, rel=1e-12)


def test_optimal_order_matches_the_closed_form_optimum():
    """Mironov's conversion of a / (2 sigma^2): eps(a) = a/(2 sigma^2) + log(1/delta)/(a - 1) is
    smallest at a* = 1 + sigma sqrt(2 log(1/delta)); on integer orders, one of its neighbours."""
    for sigma, delta in [(2.0, 1e-5), (10.0, 1e-9), (0.7, 1e-3)]:
        curve = PrivacyCurve.from_rdp(INT_ORDERS, gaussian_rdp(sigma, INT_ORDERS), PROV)
        a_star = 1 + sigma * math.sqrt(2 * math.log(1 / delta))
        best = float(curve.optimal_order(delta, conversion="mironov"))
        assert best in (math.floor(a_star), math.ceil(a_star))
    batched = noisy_sgd_curve(np.array([1.0, 4.0]), 1.0, 10).optimal_order([1e-5, 1e-5])
    assert batched.shape == (2,) and batched[1] > batched[0]  # more noise: a larger optimal order


# --- group privacy ----------------------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 2, 3, 4, 7, 8])
def test_group_rdp_is_above_the_exact_gaussian_group_and_below_mironovs_corollary(k):
    sigma = 3.0
    curve = PrivacyCurve.from_rdp(INT_ORDERS, gaussian_rdp(sigma, INT_ORDERS), PROV)
    grouped = curve.group(k)
    exact = k**2 * INT_ORDERS / (2 * sigma**2)  # a group of k moves the sum by k: sensitivity k
    ok = np.isfinite(grouped.rdp)
    assert np.all(grouped.rdp[ok] >= exact[ok] * (1 - 1e-12))
    assert ok[: 2048 // (2 * k)].all()  # finite wherever the needed orders (< 2k a) are held
    if k == 1:
        np.testing.assert_array_equal(grouped.rdp, curve.rdp)
    c = int(round(math.log2(k)))
    if 2**c == k:  # Mironov 2017 Cor. 4: (a, eps)-RDP => (a / 2^c, 3^c eps) for groups of 2^c, a >= 2^{c+1}
        for a in range(2, 2048 // k):
            assert grouped.rdp[a - 2] <= 3**c * curve.rdp[k * a - 2] * (1 + 1e-12)


def test_group_of_two_is_the_weak_triangle_inequality_itself():
    """For k = 2: (a - 1/2)/(a - 1) rdp(2a) + rdp(2a - 1) (Mironov 2017, Prop. 11 with p = q = 2)."""
    sigma = 1.7
    curve = PrivacyCurve.from_rdp(INT_ORDERS, gaussian_rdp(sigma, INT_ORDERS), PROV)
    a = INT_ORDERS[:100]
    expected = (a - 0.5) / (a - 1) * (2 * a) / (2 * sigma**2) + (2 * a - 1) / (2 * sigma**2)
    np.testing.assert_allclose(curve.group(2).rdp[:100], expected, rtol=1e-14)


def test_group_rdp_reads_missing_orders_from_larger_ones_and_is_inf_beyond():
    orders = np.array([2.0, 4.0, 8.0, 16.0])
    rdp = np.array([0.1, 0.25, 0.6, 1.5])
    g = group_rdp(orders, rdp, 2)
    # order 2 needs orders 4 and 3 (read at 4); order 4 needs 8 and 7 (read at 8); 16 needs 32: none
    assert g[0] == pytest.approx(1.5 / 1 * 0.25 + 0.25)
    assert g[1] == pytest.approx(3.5 / 3 * 0.6 + 0.6)
    assert math.isinf(g[3])


def test_group_of_laplace_is_above_laplace_at_sensitivity_k_and_exact_at_order_inf():
    b = 2.0
    orders = np.append(INT_ORDERS, np.inf)
    curve = PrivacyCurve.from_rdp(orders, laplace_rdp(b, orders), PROV)
    for k in (2, 3, 5):
        grouped = curve.group(k)
        exact = laplace_rdp(b / k, orders)  # a group of k shifts the output by k: scale b / k at sensitivity 1
        ok = np.isfinite(grouped.rdp)
        assert np.all(grouped.rdp[ok] >= exact[ok] * (1 - 1e-12))
        assert grouped.rdp[-1] == pytest.approx(k / b, rel=1e-15)  # pure DP: k eps_inf exactly
        assert float(grouped.epsilon(1e-9)) <= k / b  # order inf alone gives (k/b, 0)


def test_group_profile_is_above_the_exact_gaussian_group():
    sigma = 2.0
    eps = np.linspace(0, 6, 121)
    curve = PrivacyCurve.from_profile(eps, analytic_gaussian_delta(1 / sigma, eps), PROV)
    for k in (1, 2, 4):
        grouped = curve.group(k)
        np.testing.assert_allclose(grouped.epsilons, k * eps)
        exact = analytic_gaussian_delta(k / sigma, k * eps)  # sensitivity k
        assert np.all(grouped.deltas >= exact * (1 - 1e-12))
        np.testing.assert_allclose(grouped.deltas, np.minimum(1, k * np.exp((k - 1) * eps) * curve.deltas), rtol=1e-13)
    e, d = group_profile([0.0, 300.0], [0.5, 1e-200], 3)
    assert d[1] == 1.0 and d[0] == 1.0  # capped, no overflow


# --- order = inf ------------------------------------------------------------------------------
def test_laplace_rdp_matches_mpmath_and_is_one_over_b_at_inf():
    mp.mp.dps = 40
    for b in (0.5, 1.0, 3.0):
        for a in (1.5, 2.0, 7.0, 40.0):
            p = lambda x: mp.exp(-abs(x) / b) / (2 * b)  # noqa: E731
            q = lambda x: mp.exp(-abs(x - 1) / b) / (2 * b)  # noqa: E731
            integral = mp.quad(lambda x: p(x) ** a * q(x) ** (1 - a), [-mp.inf, 0, 1, mp.inf])
            ref = float(mp.log(integral) / (a - 1))
            assert float(laplace_rdp(b, a)) == pytest.approx(ref, rel=1e-12)
        assert float(laplace_rdp(b, np.inf)) == 1 / b
        # D_a increases to D_inf
        assert float(laplace_rdp(b, 1e6)) == pytest.approx(1 / b, rel=1e-5)


def test_laplace_profile_matches_mpmath_hockey_stick():
    mp.mp.dps = 30
    b = 0.7
    for eps in (0.0, 0.3, 1.0, 1 / b - 1e-3, 1 / b, 2.0):
        # H_{e^eps}(P || Q) = int max(0, p - e^eps q)
        p = lambda x: mp.exp(-abs(x) / b) / (2 * b)  # noqa: E731
        q = lambda x: mp.exp(-abs(x - 1) / b) / (2 * b)  # noqa: E731
        ref = mp.quad(lambda x: max(mp.mpf(0), p(x) - mp.e**eps * q(x)), [-mp.inf, 0, (1 - b * eps) / 2 if eps < 1 / b else 0.5, 1, mp.inf])
        assert float(laplace_delta(b, eps)) == pytest.approx(float(ref), rel=1e-12, abs=1e-15)


def test_order_inf_gives_pure_dp_in_both_conversions():
    orders = np.array([2.0, 8.0, np.inf])
    rdp = np.array([0.05, 0.5, 0.9])
    for conversion in ("balle", "mironov"):
        # at tiny delta the finite orders cost log(1/delta)/(a - 1); order inf costs nothing
        assert float(rdp_to_epsilon(orders, rdp, 1e-300, conversion)) == pytest.approx(0.9)
        assert float(rdp_to_delta(orders, rdp, 0.9, conversion)) == 0.0
        assert float(rdp_to_delta(orders, rdp, 2.0, conversion)) == 0.0
    # below eps_inf: randomized response's delta (e^c - e^eps)/(1 + e^c), the worst c-DP pair
    # (Kairouz et al. 2015); here only order inf is given
    c = 0.9
    for eps in (0.0, 0.3, 0.8):
        p = np.array([math.exp(c), 1.0]) / (1 + math.exp(c))
        rr = float(np.sum(np.maximum(p - math.exp(eps) * p[::-1], 0)))
        assert float(rdp_to_delta([np.inf], [c], eps, "mironov")) == pytest.approx(rr, rel=1e-13)
    curve = PrivacyCurve.from_rdp(orders, rdp, PROV)
    assert curve.optimal_order(1e-300) == np.inf
    assert float(curve.epsilon(1e-300)) == pytest.approx(0.9)


def test_gaussian_order_inf_is_infinite_and_changes_nothing():
    orders = np.array([2.0, 5.0, 32.0, np.inf])
    assert math.isinf(float(gaussian_rdp(1.0, np.inf)))
    assert math.isinf(float(subsampled_gaussian_rdp(0.1, 1.0, np.inf)))
    assert float(subsampled_gaussian_rdp(0.0, 1.0, np.inf)) == 0.0
    with_inf = noisy_sgd_curve(1.1, 0.05, 100, orders=orders)
    without = noisy_sgd_curve(1.1, 0.05, 100, orders=orders[:-1])
    assert float(with_inf.epsilon(1e-5)) == float(without.epsilon(1e-5))
    assert float(with_inf.delta(2.0)) == float(without.delta(2.0))


def test_laplace_curve_epsilon_never_exceeds_the_pure_guarantee():
    curve = laplace_curve(1.25)
    for delta in (1e-2, 1e-6, 1e-12, 1e-100):
        assert float(curve.epsilon(delta)) <= 0.8 + 1e-12
    assert float(curve.delta(0.8)) == 0.0


# --- bad input --------------------------------------------------------------------------------
CURVE = noisy_sgd_curve(1.0, 1.0, 1)
ENTRIES = [
    Entry("PrivacyCurve.optimal_order", CURVE.optimal_order, dict(delta=1e-5, conversion="balle")),
    Entry("PrivacyCurve.group", CURVE.group, dict(size=2)),
    Entry("laplace_rdp", laplace_rdp, dict(scale=1.0, orders=[2.0, 3.0])),
    Entry("laplace_delta", laplace_delta, dict(scale=1.0, epsilon=0.5)),
]


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
def test_bad_inputs_get_clear_errors(entry):
    bad = problems(run_entry(entry, extremes=False))
    assert not bad, "\n".join(f"{o.argument}={o.label}: {o.verdict}: {o.detail}" for o in bad)


@pytest.mark.parametrize("call, word", [
    (lambda: CURVE.group(0), "size"),
    (lambda: CURVE.optimal_order(0.0), "delta"),
    (lambda: PrivacyCurve.from_profile([0.0, 1.0], [0.5, 0.1], PROV).optimal_order(1e-5), "RDP"),
    (lambda: laplace_rdp(0.0, [2.0]), "scale"),
    (lambda: laplace_rdp(1.0, [1.0]), "orders"),
    (lambda: PrivacyCurve.from_rdp([1.0, np.inf], [0.1, 0.2], PROV), "order"),
])
def test_out_of_range_values_are_refused(call, word):
    with pytest.raises(ValueError, match=word):
        call()

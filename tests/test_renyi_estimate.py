"""renyi_estimate: the histogram Rényi formula against a direct evaluation, Gaussian pairs
against the closed form D_a(N(0,1) || N(mu,1)) = a mu^2 / 2, the documented bias direction,
and input checks."""
from __future__ import annotations

import numpy as np
import pytest

from dpjax.accountants.curve import PrivacyCurve
from dpjax.estimators import renyi_estimate
from dpjax.estimators.renyi import histogram_renyi


def test_histogram_renyi_matches_direct_sum():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(7))
    q = rng.dirichlet(np.ones(7))
    orders = np.array([1.5, 2.0, 5.0, 20.0])
    got = histogram_renyi(p[None], q[None], orders)[0]
    direct = [np.log(np.sum(p**a * q ** (1 - a))) / (a - 1) for a in orders]
    np.testing.assert_allclose(got, direct, rtol=1e-12)


def test_histogram_renyi_is_infinite_where_support_differs():
    got = histogram_renyi(np.array([[0.5, 0.5]]), np.array([[1.0, 0.0]]), np.array([2.0]))
    assert np.isinf(got[0, 0])
    # the other direction is finite: D_2 = log(1^2 * 0.5^-1)... = log(2)
    other = histogram_renyi(np.array([[1.0, 0.0]]), np.array([[0.5, 0.5]]), np.array([2.0]))
    assert other[0, 0] == pytest.approx(np.log(2.0), abs=1e-14)


def test_gaussian_pair_small_orders():
    # mu = 0.5: the dominant region for a <= 3 lies well inside a 2e5 sample; the bootstrap
    # spread is a few percent, 10% is an honest margin for the binning bias plus noise.
    rng = np.random.default_rng(4)
    n, mu = 200_000, 0.5
    est = renyi_estimate(rng.standard_normal(n), rng.standard_normal(n) + mu, [1.5, 2.0, 3.0], num_bootstrap=50)
    np.testing.assert_allclose(est.rdp, est.orders * mu**2 / 2, rtol=0.1)
    assert np.all(est.rdp_lower <= est.rdp_upper)
    np.testing.assert_array_equal(est.rdp, np.maximum(est.divergence_p_q, est.divergence_q_p))


def test_large_orders_are_biased_low_as_documented():
    rng = np.random.default_rng(6)
    n, mu = 10_000, 2.0
    est = renyi_estimate(rng.standard_normal(n), rng.standard_normal(n) + mu, [8.0], num_bootstrap=0)
    assert est.rdp[0] < 0.5 * 8.0 * mu**2 / 2


def test_curve_is_an_estimate():
    rng = np.random.default_rng(1)
    est = renyi_estimate(rng.standard_normal(5000), rng.standard_normal(5000) + 1.0, [2.0, 4.0], num_bootstrap=20)
    curve = est.curve()
    assert isinstance(curve, PrivacyCurve) and curve.provenance.mode == "estimate"
    np.testing.assert_array_equal(curve.rdp, est.rdp)


def test_input_errors():
    x = np.linspace(-1, 1, 100)
    with pytest.raises(ValueError, match=r"orders=\[1.0\] violate 1 < order < inf"):
        renyi_estimate(x, x, [1.0, 2.0])
    with pytest.raises(ValueError, match=r"orders=\[inf\] violate"):
        renyi_estimate(x, x, [np.inf])
    with pytest.raises(ValueError, match="confidence=0 violates"):
        renyi_estimate(x, x, [2.0], confidence=0)
    bad = x.copy()
    bad[9] = np.nan
    with pytest.raises(ValueError, match=r"samples_q has a non-finite value .*nan.* at index \[9, 0\]"):
        renyi_estimate(x, bad, [2.0])

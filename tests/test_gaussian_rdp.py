"""Gaussian and Poisson-subsampled Gaussian RDP against closed forms, dp_accounting and mpmath.

References, each independent of dpjax's code path:
* integer orders: dp_accounting's `_compute_log_a_int` (the plain binomial sum, float64);
* fractional orders: mpmath quadrature (30 digits) of the defining integral
  A_a = E_{N(0, s^2)}[(1 - q + q e^{(2z-1)/(2 s^2)})^a];
* dpjax's two routes against each other: its quadrature (fractional path) run at integer
  orders against its binomial sum (integer path).
"""
from __future__ import annotations

import logging

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dp_accounting.rdp import rdp_privacy_accountant as dpa
from dpjax.accountants import gaussian_rdp, subsampled_gaussian_rdp
from dpjax.accountants.mechanisms import gaussian as gmod

from jax import enable_x64


def mpmath_rdp(q: float, sigma: float, order: float, dps: int = 24) -> float:
    """log(A_a)/(a-1) by mpmath quadrature of A_a - 1 = E[(1+x)^a - 1 - a x] (x = q(r-1), E x = 0)."""
    with mp.workdps(dps):
        q, s, a = mp.mpf(q), mp.mpf(sigma), mp.mpf(order)

        def integrand(z):
            x = q * mp.expm1((2 * z - 1) / (2 * s**2))
            return mp.npdf(z, 0, s) * ((1 + x) ** a - 1 - a * x)

        z0 = s**2 * mp.log(1 / q - 1) + mp.mpf(1) / 2  # where q r = 1 - q
        cuts = {mp.mpf(0), mp.mpf(1) / 2, a}
        cuts |= {s * k for k in range(-12, 13, 3)} | {a + s * k for k in range(-12, 13, 3)}
        cuts |= {z0 + s * k for k in (-2, 0, 2)}
        points = [-mp.inf] + sorted(cuts) + [mp.inf]
        a_minus_1 = mp.quad(integrand, points, maxdegree=7)
        return float(mp.log1p(a_minus_1) / (a - 1))


# --- closed forms -----------------------------------------------------------------------------
def test_gaussian_rdp_closed_form_and_broadcasting():
    sigma = np.array([[0.5], [2.0], [20.0]])
    orders = np.array([1.5, 2.0, 32.0, 1024.0])
    np.testing.assert_array_equal(gaussian_rdp(sigma, orders), orders / (2 * sigma**2))
    assert gaussian_rdp(sigma, orders).dtype == np.float64


def test_q_one_is_gaussian_and_q_zero_is_zero():
    orders = np.array([1.1, 2.0, 7.5, 64.0])
    np.testing.assert_array_equal(subsampled_gaussian_rdp(1.0, 1.3, orders), gaussian_rdp(1.3, orders))
    np.testing.assert_array_equal(subsampled_gaussian_rdp(0.0, 1.3, orders), np.zeros(4))


def test_small_q_limit_matches_first_order_expansion():
    # For q -> 0: A_a - 1 = C(a,2) q^2 (e^{1/s^2} - 1) + O(q^3) (the k = 2 binomial term).
    q, s, a = 1e-7, 3.0, 4.5
    expected = a * (a - 1) / 2 * q**2 * np.expm1(1 / s**2) / (a - 1)
    assert subsampled_gaussian_rdp(q, s, a) == pytest.approx(expected, rel=1e-5)


# --- integer orders vs dp_accounting ----------------------------------------------------------
def test_integer_orders_agree_with_dp_accounting():
    rng = np.random.default_rng(0)
    orders = np.array([2, 3, 5, 8, 13, 32, 63, 128, 256, 1024], dtype=float)
    qs = 10 ** rng.uniform(-4, np.log10(0.5), 6)
    sigmas = rng.uniform(0.5, 20.0, 6)
    ours = subsampled_gaussian_rdp(qs[:, None], sigmas[:, None], orders)
    for i in range(qs.size):
        ref = dpa._compute_rdp_poisson_subsampled_gaussian(qs[i], sigmas[i], orders)
        # dp_accounting's float64 sum is itself accurate to ~1e-8 relative for the tiniest
        # values (q = 1e-4, sigma = 20 gives rdp ~ 1e-13), so 1e-6 is the tolerance.
        np.testing.assert_allclose(ours[i], ref, rtol=1e-6, atol=0)


def test_quadrature_route_matches_binomial_route_at_integer_orders():
    """dpjax's fractional-order quadrature, forced onto integer orders, equals its binomial sum."""
    rng = np.random.default_rng(1)
    n = 40
    q = 10 ** rng.uniform(-4, np.log10(0.95), n)
    sigma = 10 ** rng.uniform(np.log10(0.3), np.log10(30.0), n)
    order = rng.choice([2.0, 3.0, 4.0, 7.0, 12.0, 30.0], n)
    with enable_x64(True):
        quad = gmod._fractional_orders(q, sigma, order)
        exact = gmod._integer_orders(q, sigma, order)
    np.testing.assert_allclose(quad, exact, rtol=1e-11, atol=1e-11)


# --- fractional orders vs mpmath --------------------------------------------------------------
CASES_WHERE_DP_ACCOUNTING_GIVES_UP = [(0.5, 20.0, 1.5), (0.1, 0.5, 1.5), (0.3, 2.0, 1.5), (0.5, 0.5, 1.5)]
CASES_FRACTIONAL = [
    (1e-4, 20.0, 1.01),  # rdp ~ 1e-15: relative precision of a tiny value
    (4.66e-2, 10.74, 1.5),  # dp_accounting overestimates ~3x here
    (2.3e-2, 5.76, 3.7),
    (1e-3, 0.5, 10.9),
    (0.2, 0.3, 20.5),  # small sigma: sharp peak near z = a
    (0.999, 1.0, 2.5),  # q near 1
]


def test_dp_accounting_gives_up_where_dpjax_does_not(caplog):
    for q, s, a in CASES_WHERE_DP_ACCOUNTING_GIVES_UP:
        with caplog.at_level(logging.ERROR):
            assert np.isinf(dpa._compute_rdp_poisson_subsampled_gaussian(q, s, [a])[0])


@pytest.mark.parametrize("q,sigma,order", CASES_FRACTIONAL + CASES_WHERE_DP_ACCOUNTING_GIVES_UP)
def test_fractional_orders_match_mpmath(q, sigma, order):
    ours = float(subsampled_gaussian_rdp(q, sigma, order))
    assert np.isfinite(ours)
    assert ours == pytest.approx(mpmath_rdp(q, sigma, order), rel=1e-10)


def test_dp_accounting_fractional_series_is_an_overestimate():
    """dp_accounting 0.6's fractional series adds |C(a, i)| for i > a, where the generalised
    binomial coefficient is negative: its value is an upper bound, not the RDP. Where it
    converges it must be >= the (mpmath-verified) dpjax value, and it is strictly above here."""
    rng = np.random.default_rng(2)
    q = 10 ** rng.uniform(-4, np.log10(0.5), 20)
    s = rng.uniform(0.5, 20.0, 20)
    a = rng.choice(np.arange(1.1, 11.0, 0.1).round(1), 20)
    a = np.where(a == np.round(a), a + 0.05, a)
    ours = subsampled_gaussian_rdp(q, s, a)
    for i in range(q.size):
        ref = dpa._compute_rdp_poisson_subsampled_gaussian(q[i], s[i], [a[i]])[0]
        assert ref >= ours[i] * (1 - 1e-9)
    # the documented case: (q, sigma, a) = (0.0466, 10.74, 1.5)
    ref = dpa._compute_rdp_poisson_subsampled_gaussian(4.66e-2, 10.74, [1.5])[0]
    assert ref > 2.5 * subsampled_gaussian_rdp(4.66e-2, 10.74, 1.5)


# --- shapes, properties, errors ---------------------------------------------------------------
def test_broadcasting_matches_elementwise_calls():
    q = np.array([[1e-3], [0.2]])
    sigma = np.array([0.8, 4.0, 9.0])[:, None, None]
    orders = np.array([1.5, 2.0, 16.0])
    out = subsampled_gaussian_rdp(q, sigma, orders)
    assert out.shape == (3, 2, 3)
    for i in range(3):
        for j in range(2):
            for k in range(3):
                assert out[i, j, k] == pytest.approx(
                    float(subsampled_gaussian_rdp(q[j, 0], sigma[i, 0, 0], orders[k])), rel=1e-13
                )


@settings(max_examples=25, deadline=None)
@given(
    q=st.floats(1e-6, 1.0),
    sigma=st.floats(0.3, 100.0),
    order=st.floats(1.001, 200.0),
    bump=st.floats(1.01, 2.0),
)
def test_rdp_finite_nonnegative_and_monotone(q, sigma, order, bump):
    base = float(subsampled_gaussian_rdp(q, sigma, order))
    assert np.isfinite(base) and base >= 0
    slack = 1e-10 * base + 1e-300
    # RDP is non-decreasing in the order, in q, and non-increasing in the noise.
    assert float(subsampled_gaussian_rdp(q, sigma, order * bump)) >= base - slack
    assert float(subsampled_gaussian_rdp(min(1.0, q * bump), sigma, order)) >= base - slack
    assert float(subsampled_gaussian_rdp(q, sigma * bump, order)) <= base + slack


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(q=1.5, noise_multiplier=1.0, orders=2.0), "q=1.5 violates 0 <= q <= 1"),
        (dict(q=-0.1, noise_multiplier=1.0, orders=2.0), "q=-0.1 violates"),
        (dict(q=0.1, noise_multiplier=0.0, orders=2.0), "noise_multiplier=0.0 violates noise_multiplier > 0"),
        (dict(q=0.1, noise_multiplier=-1.0, orders=2.0), "noise_multiplier=-1.0 violates"),
        (dict(q=0.1, noise_multiplier=1.0, orders=[2.0, 1.0]), r"orders=\[2.0, 1.0\] violate 1 < order"),
        # order inf is accepted and gives inf (issue 13: the Gaussian's max divergence is infinite)
        (dict(q=0.1, noise_multiplier=1.0, orders=np.nan), "orders=nan violates"),
        (dict(q=np.nan, noise_multiplier=1.0, orders=2.0), "q=nan violates"),
    ],
)
def test_invalid_input_raises_naming_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        subsampled_gaussian_rdp(**kwargs)
    if "q" in kwargs and kwargs["q"] == 0.1:
        with pytest.raises(ValueError, match=match):
            gaussian_rdp(kwargs["noise_multiplier"], kwargs["orders"])


def test_integer_order_above_binomial_cap_uses_quadrature_and_agrees():
    order = float(gmod._MAX_INTEGER_ORDER + 904)  # 5000: quadrature route
    ours = float(subsampled_gaussian_rdp(0.01, 2.0, order))
    ref = dpa._compute_rdp_poisson_subsampled_gaussian(0.01, 2.0, [order])[0]
    assert ours == pytest.approx(ref, rel=1e-9)


def _mpmath_rdp_integer(q: float, sigma: float, order: int, dps: int = 40) -> float:
    """log(A_a)/(a-1) from the exact binomial sum A_a = E[exp(K(K-1)/(2 sigma^2))], K ~ Bin(a, q)."""
    with mp.workdps(dps):
        q, s = mp.mpf(q), mp.mpf(sigma)
        total = mp.fsum(mp.binomial(order, k) * q**k * (1 - q) ** (order - k) * mp.exp(k * (k - 1) / (2 * s**2)) for k in range(order + 1))
        return float(mp.log(total) / (order - 1))


@pytest.mark.parametrize("q", [1e-290, 1e-250, 1e-200])
def test_astronomically_small_rates_stay_correct_and_monotone_in_the_order(q):
    """Below q ~ e^-600 the tilted integrand's x = q e^u is no longer large where e^u overflows:
    log1p(x) must not be replaced by log(x) there (it once returned 0 above order 4096)."""
    orders = np.array([1.5, 2.0, 10.0, 4095.5, 4096.0, 4097.0, 5000.0, 10_000.0])
    ours = subsampled_gaussian_rdp(q, 1.0, orders)
    assert np.all(np.isfinite(ours)) and np.all(np.diff(ours) >= 0)
    # small orders: the true RDP (~ q^2 a / 2) is below the smallest float64, so 0 is its rounding
    assert np.all(ours[:3] == 0.0)
    # the binomial route (<= 4096) and quadrature (above) against the exact sum
    for order in ((4096, 5000) if q == 1e-290 else (5000,)):
        assert float(subsampled_gaussian_rdp(q, 1.0, float(order))) == pytest.approx(_mpmath_rdp_integer(q, 1.0, order), rel=1e-12)
    if q == 1e-290:  # a fractional order: the defining integral in mpmath, its mass at z ~ a (the a-fold tilt)
        assert float(ours[3]) == pytest.approx(mpmath_rdp(q, 1.0, 4095.5, dps=40), rel=1e-10)

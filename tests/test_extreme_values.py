"""Extreme valid inputs give the right number, +inf, or a clear error (issue 12, items 5 and 12).

tests/test_bad_inputs.py checks that no extreme input (0, negative, +-inf, 1e300) ends in a
NaN, an OverflowError or an unclear message; this file checks that the numbers returned there
are the right ones: limits (delta at eps = +-inf), closed forms evaluated in mpmath (whose
exponent range has no overflow), and +inf where a bound overflows float64.
"""
from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dpjax.accountants.samplers import exact, girsanov
from dpjax.accountants.posterior import expfam, gibbs
from dpjax.accountants.mechanisms import mixture
from dpjax.accountants.posterior import gaussian as posterior
from dpjax.accountants.mechanisms import gaussian_divergence as gd


# ---------------------------------------------------------------------------------------------
# hockey-stick divergence of two Gaussians, against mpmath
def _mp_hockey(m1, s1, m2, s2, eps, dps=420):
    """delta(eps) = P(S) - e^eps Q(S), S = {loss > eps}, in mpmath: the loss
    log p(x) - log q(x) - eps = A x^2 + B x + C is solved exactly at 420 digits (enough to
    resolve an O(1)-wide set at x ~ 1e300, and mpmath's exponent range has no overflow)."""
    with mp.workdps(dps):
        m1, s1, m2, s2, eps = (mp.mpf(v) for v in (m1, s1, m2, s2, eps))
        A = 1 / (2 * s2**2) - 1 / (2 * s1**2)
        B = m1 / s1**2 - m2 / s2**2
        C = -(m1**2) / (2 * s1**2) + m2**2 / (2 * s2**2) + mp.log(s2 / s1) - eps

        def cdf(z):  # mpmath's ncdf overflows for |z| ~ 1e300; Phi(+-1e6) is 1 or 0 to 420 digits
            return mp.mpf(0) if z < -1e6 else mp.mpf(1) if z > 1e6 else mp.ncdf(z)

        def mass(lo, hi, m, s):  # P(lo < X < hi) for X ~ N(m, s^2)
            return cdf((hi - m) / s) - cdf((lo - m) / s)

        if A == 0:
            t = -C / B
            pieces = [(t, mp.inf)] if B > 0 else [(-mp.inf, t)]
        else:
            disc = B * B - 4 * A * C
            if disc <= 0:
                pieces = [(-mp.inf, mp.inf)] if A > 0 else []
            else:
                r1, r2 = sorted([(-B - mp.sqrt(disc)) / (2 * A), (-B + mp.sqrt(disc)) / (2 * A)])
                pieces = [(-mp.inf, r1), (r2, mp.inf)] if A > 0 else [(r1, r2)]
        p = sum((mass(lo, hi, m1, s1) for lo, hi in pieces), mp.mpf(0))
        q = sum((mass(lo, hi, m2, s2) for lo, hi in pieces), mp.mpf(0))
        return float(max(p - mp.exp(eps) * q, 0))


HOCKEY_CASES = [
    (0.0, 1.0, 1.0, 1.5, 0.1),  # an ordinary case, for reference
    (0.0, 1.0, 1.0, 1.5, -1.0),  # negative eps
    (1e300, 1.0, 1.0, 1.5, 1.0),  # means 1e300 sds apart: delta = 1 (was NaN)
    (0.0, 1e300, 1.0, 1.5, 1.0),  # P 1e300 times wider (was NaN)
    (0.0, 1.0, 1.0, 1e300, 1.0),  # Q 1e300 times wider (was NaN)
    (0.0, 1.0, 1.0, 1e300, 690.0),  # ... near its largest loss ln(1e300) = 690.8
    (0.0, 1e10, 0.0, 1.0, 1e19),  # eps where eps + log Q(S) cancels to rounding noise
    (0.0, 1e12, 0.0, 1.0, 1e24),
]


@pytest.mark.parametrize("m1, s1, m2, s2, eps", HOCKEY_CASES)
def test_hockey_stick_at_extreme_parameters_matches_mpmath(m1, s1, m2, s2, eps):
    # 1e-9 relative (plus 1e-15 absolute for deltas of 1): float64 roots of the loss
    # quadratic carry ~1e-16 relative error, which the normal tail probabilities amplify by at
    # most a few hundred here; the failures this guards against were NaN, 0 or 1 for 0.33.
    want = _mp_hockey(m1, s1, m2, s2, eps)
    got = gd.gaussian_hockey_stick(m1, s1, m2, s2, eps)
    assert got == pytest.approx(want, rel=1e-9, abs=1e-15)


def test_hockey_stick_limits_in_epsilon():
    # delta(+inf) = 0 (P << Q) and delta(-inf) = sup_S P(S) = 1, for any pair
    for args in [(0.0, 1.0, 1.0, 1.5), (0.0, 2.0, 0.0, 1.0), (3.0, 1.0, 0.0, 1.0)]:
        assert gd.gaussian_hockey_stick(*args, math.inf) == 0.0
        assert gd.gaussian_hockey_stick(*args, -math.inf) == 1.0
        assert gd.gaussian_hockey_stick(*args, -1000.0) == 1.0  # e^-1000 = 0 in float64


def test_analytic_gaussian_delta_limits_and_the_equal_laws_case():
    assert gd.analytic_gaussian_delta(1.0, math.inf) == 0.0  # was NaN
    assert gd.analytic_gaussian_delta(1.0, -math.inf) == 1.0
    # mu = 0: P = Q, so delta(eps) = (1 - e^eps)_+ (it returned 0 for eps < 0)
    for eps in (-3.0, -1.0, -1e-3):
        assert gd.analytic_gaussian_delta(0.0, eps) == pytest.approx(-math.expm1(eps), rel=1e-15)
    assert gd.analytic_gaussian_delta(0.0, 0.5) == 0.0
    # and the vectorised equal-variance case agrees with the unequal-variance code
    eps = np.array([-2.0, 0.0, 0.7, 3.0])
    np.testing.assert_allclose(gd.analytic_gaussian_delta(1.3, eps), gd.gaussian_hockey_stick(1.3, 1.0, 0.0, 1.0, eps), rtol=1e-12)


def test_gaussian_epsilon_at_extreme_parameters():
    # means 1e300 sds apart or one sd 1e300 times the other: delta(eps) stays 1 for every eps a
    # float can hold (it falls below 0.01 only near eps ~ 1e599), so eps = +inf
    for args in [(1e300, 1.0, 1.0, 1.5), (0.0, 1e300, 1.0, 1.5), (0.0, 1.0, 1e300, 1.5)]:
        assert gd.gaussian_epsilon(*args, 0.01) == math.inf
    # Q 1e300 times wider: the loss is bounded (by ~690.8) and eps is finite; check delta(eps)
    # = 0.01 there against mpmath (1e-9: as above)
    eps = gd.gaussian_epsilon(0.0, 1.0, 1.0, 1e300, 0.01)
    assert 600 < eps < 691
    assert _mp_hockey(0.0, 1.0, 1.0, 1e300, eps) == pytest.approx(0.01, rel=1e-9)


def test_kl_and_renyi_with_a_variance_ratio_of_1e300():
    # KL(N(0, 1) || N(1, 1e300)) = 1/2 [1/1e300 + 1/1e300 - 1 + ln 1e300]; D_a from the
    # univariate closed form (NOTES 000). Both were +inf (1 + mu rounded to 0).
    with mp.workdps(50):
        s2sq = mp.mpf(1e300)
        kl = (1 / s2sq + 1 / s2sq - 1 + mp.log(s2sq)) / 2
        for a in (0.5, 2.0, 10.0):
            a_ = mp.mpf(a)
            star = a_ * s2sq + (1 - a_)
            want = mp.log(mp.sqrt(s2sq)) + mp.log(s2sq / star) / (2 * (a_ - 1)) + a_ / (2 * star)
            # 1e-13: the float64 log-determinant of a 1e300 ratio is a sum of O(700) terms
            assert gd.gaussian_renyi([0.0], [[1.0]], [1.0], [[1e300]], a) == pytest.approx(float(want), rel=1e-13)
        assert gd.gaussian_kl([0.0], [[1.0]], [1.0], [[1e300]]) == pytest.approx(float(kl), rel=1e-13)


def test_gaussian_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"mean2=inf violates mean2 finite"):
        gd.gaussian_hockey_stick(0.0, 1.0, math.inf, 1.0, 1.0)
    with pytest.raises(ValueError, match=r"cov1=.* violates cov1 positive definite"):
        gd.gaussian_kl([0.0], [[-1.0]], [1.0], [[1.0]])
    with pytest.raises(ValueError, match=r"cov2 has a non-finite value .*inf"):
        gd.gaussian_renyi([0.0], [[1.0]], [1.0], [[math.inf]], 2.0)
    with pytest.raises(ValueError, match=r"cov2=.* violates cov2 positive definite"):
        posterior.gaussian_posterior_epsilon([0.0], [[1.0]], [1.0], [[0.0]], 0.01)
    with pytest.raises(ValueError, match=r"orders=.* violates every order finite and > 0"):
        exact.exact_last_iterate_curve(np.eye(1), np.ones(1), np.eye(1), 2 * np.ones(1), 0.1, [1, 5], [math.inf, 2.0])


# ---------------------------------------------------------------------------------------------
# Girsanov bounds: a constant that overflows is +inf (a valid, vacuous bound)
def test_girsanov_constants_overflow_to_inf_and_stay_exact_below():
    assert girsanov.thm54_constant(1e300, 0.1, 10) == math.inf
    assert girsanov.thm52_constant(1e300, 1.0, 1.0, 0.1) == math.inf
    assert girsanov.last_value_constant(1e300, 1.0, 1.0) == math.inf
    # an intermediate c^2 = 1e400 times gamma = 1e-200 is representable: compare with the
    # closed form n gamma c^2 (beta c^2 / s^2) in mpmath (1e-15: a handful of float roundings)
    with mp.workdps(30):
        assert girsanov.thm54_constant(1e200, 1e-200, 10) == pytest.approx(float(10 * mp.mpf(1e-200) * mp.mpf(1e200) ** 2), rel=1e-15)
        want = 2 * mp.mpf(1e200) ** 2 / 9 * 7 * mp.mpf(1e-250)
        assert girsanov.thm58_constant(1e200, 1e-250, 7, 3, inverse_temperature=2.0) == pytest.approx(float(want), rel=1e-15)
    # and 0 * inf is 0, as in the closed form c^2 beta T at T = 0
    assert girsanov.path_constant(1e300, 0.0) == 0.0


def test_girsanov_curves_with_an_overflowing_constant_are_vacuous():
    for curve in (
        girsanov.thm54_ula_path(1e300, 0.1, 10),
        girsanov.thm52_ula_last_iterate(1e300, 1.0, 1.0, 0.1),
        girsanov.prop46_last_value(1e300, 1.0, 1.0),
    ):
        assert np.all(curve.rdp == np.inf)
        assert curve.epsilon(0.01) == math.inf
    assert girsanov.girsanov_epsilon(math.inf, 0.01) == math.inf
    np.testing.assert_array_equal(girsanov.girsanov_rdp(math.inf, [2.0, 3.0]), [math.inf, math.inf])
    np.testing.assert_array_equal(girsanov.girsanov_rdp(0.0, [2.0, math.inf]), [0.0, 0.0])  # not NaN


def test_girsanov_step_size_rule_names_smoothness_when_L_squared_overflows():
    with pytest.raises(ValueError, match=r"step_size=0.1 violates step_size < 2 mu / L\^2 = 0 .*smoothness = 1e\+300"):
        girsanov.synchronous_distance(1.0, 1.0, 1e300, 0.1)


# ---------------------------------------------------------------------------------------------
# exact laws, posteriors, exponential families, Gibbs, mixtures
def test_a_diverging_ula_law_raises_naming_hessian_and_step_size():
    with pytest.raises(ValueError, match=r"hessian=.* with step_size=0.1: the law of ULA after 5 steps is not representable"):
        exact.ula_law(np.eye(1) * 1e300, np.ones(1), 0.1, [1, 5])
    # one step from a point start is N(gamma g, 2 gamma T) whatever the hessian
    means, covs = exact.ula_law(np.eye(1) * 1e300, np.ones(1), 0.1, [1])
    assert (means[0, 0], covs[0, 0, 0]) == (pytest.approx(0.1, rel=1e-15), pytest.approx(0.2, rel=1e-15))
    with pytest.raises(ValueError, match=r"hessian1=.* step_size=1e\+300"):
        exact.exact_last_iterate_epsilon(np.eye(1), np.ones(1), np.eye(1) * 2, np.ones(1), 1e300, [1, 5], 0.01)
    # a diverging chain whose moments still fit in float64 keeps its exact law: |1 - 0.5 * 6| = 2
    means, covs = exact.ula_law(np.eye(1) * 6.0, np.ones(1), 0.5, [3])
    a, b = 1 - 0.5 * 6.0, 0.5
    assert means[0, 0] == pytest.approx(b * (1 + a + a * a), rel=1e-14)
    assert covs[0, 0, 0] == pytest.approx(2 * 0.5 * (1 + a**2 + a**4), rel=1e-14)


def test_paper_posterior_with_overflowing_precision_raises_naming_x_high():
    with pytest.raises(ValueError, match=r"x_high=1e\+300.*overflow float64"):
        posterior.sgld_paper_posterior_exact(100, 2.0, 0.01, 1.0, 1.0, 1e300, 0.5, 2.0)
    with pytest.raises(ValueError, match=r"c=inf violates"):
        posterior.sgld_paper_posterior_pair(100, 1.0, 1.0, 1.0, 0.5, math.inf)


def test_expfam_extremes():
    with pytest.raises(ValueError, match=r"a_p=inf violates a_p > 0 \(finite\)"):
        expfam.beta_renyi(math.inf, 3.0, 3.0, 2.0, 2.0)
    with pytest.raises(ValueError, match=r"alpha_q=.* violates every alpha_q > 0 \(finite\)"):
        expfam.dirichlet_renyi([1.0, 2.0], [math.inf, 1.0], 2.0)
    # order 1e300: the neighbours' offset r < 2e-300 vanishes next to the prior's 2 (it used to
    # return r = 2e-300, where the true divergence is +inf, or fail on diffuse_r = 0)
    with pytest.raises(ValueError, match=r"order=1e\+300.*not resolvable"):
        expfam.calibrate_diffuse(2.0, 2.0, 10, 1e300, 1.0)
    # 2 rho^2 L^2 a / m: +inf beyond float64, exact (1e-15) where an intermediate overflows
    assert np.all(expfam.glm_tempered_posterior_rdp([2.0], 1e300, 1.0, 1.0) == np.inf)
    assert expfam.glm_tempered_posterior_rdp([2.0], 1e200, 1.0, 1e300)[0] == pytest.approx(4e100, rel=1e-15)


def test_gibbs_temperature_at_huge_epsilon_solves_its_equation():
    # eps = 1e300: the largest mu is ~1.4e150 and the temperature ~ n mu^2 / (4 r^2) ~ 2.5e300,
    # finite (it overflowed in (rho n)^2). It must solve 2 r^2 beta^2 / (n beta + lambda) =
    # mu^2 / 2 (1e-12: a square root and a bisection at relative precision 1e-13).
    n, r, lam = 10, 1.0, 0.5
    beta = gibbs.gaussian_mean_temperature_exact(1e300, 0.01, n, r, lam)
    mu = gibbs.analytic_gaussian_max_mu(1e300, 0.01)
    assert math.isfinite(beta)
    with mp.workdps(40):
        lhs = 2 * mp.mpf(r) ** 2 * mp.mpf(beta) ** 2 / (n * mp.mpf(beta) + lam)
        assert float(lhs / (mp.mpf(mu) ** 2 / 2)) == pytest.approx(1.0, rel=1e-12)
    with pytest.raises(ValueError, match=r"radius=1e\+300.*below float64's range"):
        gibbs.gaussian_mean_temperature_exact(1.0, 0.01, n, 1e300)


def test_mixture_sds_of_the_wrong_shape_is_named():
    with pytest.raises(ValueError, match=r"sds has shape \(2, 2, 2\)"):
        mixture.equal_weight_mixture([0.0, 1.0], np.zeros((2, 2, 2)))

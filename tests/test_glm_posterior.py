"""Paper 004's GLM closed forms: Lemma 3 (corrected) against quadrature, Lemma 1 against the
exact divergence of Lemma 3's pair, the three calibrations, the OPS conversions against exact
two-point divergences, the logistic loss range by brute force; the Hessian lemma and the clipped
Gaussian (§A.6.2) of the exponential-family accountant."""
import math

import numpy as np
import pytest
from scipy.special import log_expit

from dpjax.accountants.posterior import expfam as ef
from dpjax.accountants.posterior import glm as gp
from dpjax.accountants.mechanisms.gaussian_divergence import analytic_gaussian_epsilon, gaussian_renyi


# --- Lemma 3 --------------------------------------------------------------------------------
@pytest.mark.parametrize("order", [2, 3, 4, 7, 20])
@pytest.mark.parametrize("prior_variance", [1e-4, 0.05, 1.0, 3.0])
def test_lemma3_corrected_matches_quadrature(order, prior_variance):
    closed = gp.logistic_tightness_renyi(order, prior_variance)
    quad = gp.logistic_pair_renyi_quadrature(order, prior_variance)
    assert closed == pytest.approx(quad, rel=1e-9)


def test_lemma3_printed_formula_is_off_by_minus_one_to_the_l_minus_1():
    for order in (2, 3, 6):
        for s2 in (0.01, 0.5):
            corrected = gp.logistic_tightness_integral(order, s2)
            printed = gp.logistic_tightness_integral(order, s2, mode="paper")
            assert printed - corrected == pytest.approx((-1) ** (order - 1), abs=1e-9)
    # at order 2 the printed integral 2 (e^{s^2/2} - 1) is < 1: a negative "divergence"
    assert gp.logistic_tightness_renyi(2, 0.01, mode="paper") < 0 < gp.logistic_pair_renyi_quadrature(2, 0.01)


def test_lemma3_growth_and_lemma1_is_within_a_factor_four_of_it():
    """D_l ~ (l - 1) s^2 / 2 for large l (the proof's O(exp((l-1)^2 s^2/2)) integral); Lemma 1
    (rho = 1, L = |x| = 1, m = 1/s^2) bounds it by 2 l s^2: valid, and ~4x above at small s^2."""
    s2 = 0.5
    assert gp.logistic_tightness_renyi(60, s2) == pytest.approx(59 * s2 / 2, rel=0.05)
    for order in (2, 5, 30):
        for s2 in (1e-3, 0.3, 2.0):
            exact = gp.logistic_tightness_renyi(order, s2)
            bound = float(gp.lemma1_rdp([order], 1.0, 1.0, 1.0 / s2)[0])
            assert exact <= bound
            if s2 == 1e-3:
                assert bound / exact == pytest.approx(4.0, rel=1e-2)


def test_lemma3_quadrature_at_fractional_order_is_between_neighbours():
    s2 = 0.7
    mid = gp.logistic_pair_renyi_quadrature(2.5, s2)
    assert gp.logistic_tightness_renyi(2, s2) < mid < gp.logistic_tightness_renyi(3, s2)


# bad input: (function, positional arguments, keywords, what the ValueError must name)
_BAD_INPUT = {
    "lemma3": [
        (gp.logistic_tightness_renyi, (2.5, 1.0), {}, "order"),
        (gp.logistic_tightness_renyi, (1, 1.0), {}, "order"),
        (gp.logistic_tightness_renyi, (3, 0.0), {}, "prior_variance"),
        (gp.logistic_tightness_renyi, (3, 1.0), {"mode": "printed"}, "mode"),
        (gp.logistic_pair_renyi_quadrature, (1.0, 1.0), {}, "order"),
    ],
    "calibration": [
        (gp.calibrate_glm, (0.0, 10.0), {}, "epsilon"),
        (gp.calibrate_glm, (1.0, 0.5), {}, "order"),
        (gp.calibrate_glm, (1.0, 10.0), {"ops_conversion": "tight"}, "conversion"),
        (gp.calibrate_glm, (1.0, 10.0), {"ops_radius": -1.0}, "radius"),
        (gp.calibrate_glm, (1.0, 10.0), {"prior_precision": 0.0}, "prior_precision"),
    ],
}


@pytest.mark.parametrize("fn, args, kwargs, names", [case for cases in _BAD_INPUT.values() for case in cases],
                         ids=[f"{group}-{i}" for group, cases in _BAD_INPUT.items() for i in range(len(cases))])
def test_bad_input_is_refused_naming_the_argument(fn, args, kwargs, names):
    with pytest.raises(ValueError, match=names):
        fn(*args, **kwargs)


# --- calibrations -----------------------------------------------------------------------------
@pytest.mark.parametrize("order", [1.0, 10.0, 100.0])
@pytest.mark.parametrize("eps", [0.01, 0.3, 5.0])
def test_calibrations_spend_exactly_the_target(order, eps):
    cal = gp.calibrate_glm(eps, order, prior_precision=2.0, ops_radius=4.0)
    # Lemma 1 with the chosen parameters, recomputed from its formula
    rdp_diffuse = 2 * cal.diffuse_temperature**2 * order / 2.0
    rdp_conc = 2 * order / cal.concentrated_prior_precision
    assert rdp_diffuse <= eps * (1 + 1e-12) and rdp_conc <= eps * (1 + 1e-12)
    if cal.diffuse_temperature < 1:
        assert rdp_diffuse == pytest.approx(eps, rel=1e-12)
    if cal.concentrated_prior_precision > 2.0:
        assert rdp_conc == pytest.approx(eps, rel=1e-12)
    # OPS: eps_DP = 2 rho c R, bounded-range RDP min(eps_DP, order eps_DP^2/8)
    eps_dp = 2 * cal.ops_temperature * 4.0
    assert cal.ops_rdp == pytest.approx(min(eps_dp, order * eps_dp**2 / 8), rel=1e-12)
    assert cal.ops_rdp <= eps * (1 + 1e-12)
    if cal.ops_temperature < 1:
        assert cal.ops_rdp == pytest.approx(eps, rel=1e-12)


def test_ops_conversions_order_and_values():
    for conv, factor in (("zcdp", 0.5), ("bounded-range", 0.125)):
        e = gp.ops_pure_epsilon(0.1, 10.0, conv)
        assert min(e, factor * 10.0 * e * e) == pytest.approx(0.1, rel=1e-12)
    assert gp.ops_pure_epsilon(0.1, 10.0, "pure") == 0.1
    # the tighter the conversion, the larger the admissible eps_DP
    assert gp.ops_pure_epsilon(0.1, 10.0, "pure") < gp.ops_pure_epsilon(0.1, 10.0, "zcdp") < gp.ops_pure_epsilon(0.1, 10.0, "bounded-range")


def _two_point_renyi(p, q, order):
    return math.log(p**order * q ** (1 - order) + (1 - p) ** order * (1 - q) ** (1 - order)) / (order - 1)


@pytest.mark.parametrize("eps_dp", [0.05, 0.5, 2.0])
@pytest.mark.parametrize("order", [1.5, 4.0, 30.0])
def test_bounded_range_conversion_against_exact_two_point_divergences(eps_dp, order):
    """An eps-BR pair on two points has log-ratios a and a - eps (P = (p, 1 - p), Q = (q, 1 - q) with
    logit p - logit q = eps). Its exact Rényi divergence over all q stays below min(eps, order eps^2/8),
    and near-attains order eps^2/8 for small eps (so the constant cannot be improved)."""
    qs = np.linspace(1e-4, 1 - 1e-4, 20001)
    logit_p = np.log(qs) - np.log1p(-qs) + eps_dp
    ps = 1 / (1 + np.exp(-logit_p))
    exact = np.array([_two_point_renyi(p, q, order) for p, q in zip(ps, qs)])
    bound = float(gp.ops_rdp([order], eps_dp, "bounded-range")[0])
    assert exact.max() <= bound * (1 + 1e-9)
    if eps_dp == 0.05 and order == 1.5:
        assert exact.max() >= 0.98 * order * eps_dp**2 / 8


def test_logistic_loss_range_by_brute_force():
    rng = np.random.default_rng(0)
    c, radius, d = 0.8, 3.0, 4
    x = rng.normal(size=(4000, d))
    x *= c / np.linalg.norm(x, axis=1, keepdims=True) * rng.uniform(0, 1, (4000, 1)) ** 0.1
    w = rng.normal(size=(4000, d))
    w *= radius / np.linalg.norm(w, axis=1, keepdims=True)
    xp = np.roll(x, 1, axis=0)
    gap = np.abs(-log_expit(np.sum(w * x, 1)) + log_expit(-np.sum(w * xp, 1)))  # y = 1 vs y' = 0
    assert gap.max() <= gp.logistic_loss_range(c, radius) + 1e-12
    # attained: w aligned with |x| = c, the label flipped (w.x = cR: losses log(1 + e^{-cR}), log(1 + e^{cR}))
    attained = -log_expit(-radius * c) + log_expit(radius * c)
    assert attained == pytest.approx(gp.logistic_loss_range(c, radius), rel=1e-12)


# --- the Hessian lemma (§A.4) ---------------------------------------------------------------
def test_hessian_bound_dominates_exact_beta_divergences_and_is_sharp_for_small_offsets():
    rng = np.random.default_rng(1)
    for _ in range(60):
        a, b = rng.uniform(2, 40, 2)
        delta = rng.uniform(-1.0, 1.0)
        order = float(rng.choice([1.3, 2.0, 4.0, 9.0]))
        exact = ef.beta_renyi(a, b, a + delta, b - delta, order)
        hb = ef.beta_hessian_renyi_bound(a, b, a + delta, b - delta, order)
        assert hb.bound >= exact * (1 - 1e-12) or (math.isinf(exact) and math.isinf(hb.bound))
    # a tiny offset: D ~ (order/2) v^T Hess v, so the corrected constant is sharp; the printed one is 2x
    exact = ef.beta_renyi(5.0, 7.0, 5.0 + 1e-4, 7.0 - 1e-4, 3.0)
    assert ef.beta_hessian_renyi_bound(5.0, 7.0, 5.0 + 1e-4, 7.0 - 1e-4, 3.0).bound == pytest.approx(exact, rel=1e-3)
    assert ef.beta_hessian_renyi_bound(5.0, 7.0, 5.0 + 1e-4, 7.0 - 1e-4, 3.0, mode="paper").bound == pytest.approx(2 * exact, rel=1e-3)


def test_hessian_bound_is_attained_in_the_gaussian_family():
    """C quadratic in eta1 at fixed eta2: the corrected bound equals the exact divergence."""
    s2 = 2.0

    def hessian(eta):
        e1, e2 = eta
        return np.array([[s2 / e2, -e1 * s2 / e2**2], [-e1 * s2 / e2**2, e1 * e1 * s2 / e2**3 + 0.5 / e2**2]])

    eta_p, eta_q = np.array([1.0, 3.0]), np.array([1.7, 3.0])
    c = lambda eta: ef.gaussian_known_variance_log_normaliser(eta, s2)
    for order in (1.5, 3.0, 12.0):
        exact = ef.expfam_renyi(c, eta_p, eta_q, order, ef.gaussian_known_variance_in_domain)
        hb = ef.expfam_hessian_renyi_bound(hessian, eta_p, eta_q, order, curvature_convex=True)
        assert hb.bound == pytest.approx(exact, rel=1e-12)
        assert ef.expfam_hessian_renyi_bound(hessian, eta_p, eta_q, order, mode="paper").bound == pytest.approx(2 * exact, rel=1e-12)


def test_dirichlet_hessian_matches_finite_differences_and_bounds_the_divergence():
    eta = ef.dirichlet_natural([2.0, 3.5, 4.0, 1.5])
    h = ef.dirichlet_log_normaliser_hessian(eta)
    step = 1e-4
    num = np.empty_like(h)
    for i in range(4):
        for j in range(4):
            ei, ej = np.eye(4)[i] * step, np.eye(4)[j] * step
            num[i, j] = (ef.dirichlet_log_normaliser(eta + ei + ej) - ef.dirichlet_log_normaliser(eta + ei - ej)
                         - ef.dirichlet_log_normaliser(eta - ei + ej) + ef.dirichlet_log_normaliser(eta - ei - ej)) / (4 * step * step)
    assert np.allclose(h, num, rtol=1e-5, atol=1e-6)
    alpha_p = np.array([2.0, 3.5, 4.0, 1.5])
    alpha_q = alpha_p + 0.6 * (np.eye(4)[0] - np.eye(4)[2])
    for order in (2.0, 3.0):
        exact = ef.dirichlet_renyi(alpha_p, alpha_q, order)
        hb = ef.expfam_hessian_renyi_bound(ef.dirichlet_log_normaliser_hessian, ef.dirichlet_natural(alpha_p), ef.dirichlet_natural(alpha_q),
                                           order, curvature_convex=True)
        assert exact <= hb.bound


def test_hessian_bound_bad_input():
    with pytest.raises(ValueError, match="order"):
        ef.expfam_hessian_renyi_bound(ef.beta_log_normaliser_hessian, [2.0, 5.0], [3.0, 5.0], 1.0)
    with pytest.raises(ValueError, match="mode"):
        ef.expfam_hessian_renyi_bound(ef.beta_log_normaliser_hessian, [2.0, 5.0], [3.0, 5.0], 2.0, mode="x")
    with pytest.raises(ValueError, match="shape"):
        ef.expfam_hessian_renyi_bound(ef.beta_log_normaliser_hessian, [2.0, 5.0], [3.0, 5.0, 1.0], 2.0)
    # a segment leaving the parameter space: +inf, never a finite number
    assert math.isinf(ef.beta_hessian_renyi_bound(1.0, 5.0, 2.0, 4.0, 3.0).bound)


# --- §A.6.2: clipped Gaussian -----------------------------------------------------------------
def test_clipped_gaussian_worst_case_against_eq14_and_brute_force():
    mech = ef.ClippedGaussianMechanism(noise_sd=1.5, prior_mean=0.3, prior_sd=2.0, n=8, clip=1.0, diffuse_r=0.7, concentrate_m=0.5)
    orders = np.array([1.5, 2.0, 10.0])
    rdp = ef.clipped_gaussian_rdp(mech, orders)
    rng = np.random.default_rng(2)
    s2 = mech.noise_sd**2
    c = lambda eta: ef.gaussian_known_variance_log_normaliser(eta, s2)
    worst = np.zeros(orders.size)
    for _ in range(80):
        data = rng.normal(0, 2.0, mech.n)
        neighbour = data.copy()
        neighbour[0] = rng.normal(0, 3.0)
        m1, v1 = ef.clipped_gaussian_posterior(mech, data)
        m2, v2 = ef.clipped_gaussian_posterior(mech, neighbour)
        d = [gaussian_renyi(m1, v1, m2, v2, o) for o in orders]
        worst = np.maximum(worst, d)
    assert np.all(worst <= rdp * (1 + 1e-12))
    # the worst pair (one value far below -clip, its neighbour far above +clip) attains it, by eq. 14
    data = np.zeros(mech.n)
    data[0] = -50.0
    neighbour = data.copy()
    neighbour[0] = 50.0
    (m1, v1), (m2, v2) = ef.clipped_gaussian_posterior(mech, data), ef.clipped_gaussian_posterior(mech, neighbour)
    eta = lambda m, v: np.array([m / v, s2 / v])  # N(eta1 s^2/eta2, s^2/eta2)
    for o, r in zip(orders, rdp):
        assert ef.expfam_renyi(c, eta(m1, v1), eta(m2, v2), o, ef.gaussian_known_variance_in_domain) == pytest.approx(r, rel=1e-10)
        assert gaussian_renyi(m1, v1, m2, v2, o) == pytest.approx(r, rel=1e-10)
    # the printed sensitivity Delta (not 2 Delta) understates the worst case by a factor 4
    assert np.allclose(ef.clipped_gaussian_rdp(mech, orders, mode="paper") * 4, rdp)
    assert gaussian_renyi(m1, v1, m2, v2, 2.0) > ef.clipped_gaussian_rdp(mech, [2.0], mode="paper")[0]
    mu = abs(m1 - m2) / math.sqrt(v1)
    assert ef.clipped_gaussian_epsilon(mech, 1e-5) == pytest.approx(analytic_gaussian_epsilon(mu, 1e-5), rel=1e-10)


def test_clipped_gaussian_bad_input():
    mech = ef.ClippedGaussianMechanism(1.0, 0.0, 1.0, 3, 1.0)
    with pytest.raises(ValueError, match="observations"):
        ef.clipped_gaussian_posterior(mech, [1.0, 2.0])
    with pytest.raises(ValueError, match="clip"):
        ef.clipped_gaussian_rdp(mech._replace(clip=0.0), [2.0])
    with pytest.raises(ValueError, match="non-finite"):
        ef.clipped_gaussian_posterior(mech, [1.0, np.nan, 0.0])
    with pytest.raises(ValueError, match="mode"):
        ef.clipped_gaussian_rdp(mech, [2.0], mode="x")

"""The Rényi last-iterate bound of Chourasia, Ye & Shokri (2021) (issue 22), against independent references.

References: the exact laws of full-batch noisy GD on a quadratic (dpjax.accountants.exact.ula_law,
a closed form; and the exact accountant of a dpjax ULA run); the theorem's formula in the paper's
own variables, evaluated in extended precision (mpmath); the shifted-interpolation closed form
of Bok, Su & Altschuler (which the implemented value must dominate, the argument that makes it
valid whatever the paper's constants).
"""
import math

import mpmath
import numpy as np
import pytest

import dpjax.models as M
import dpjax.samplers as S
from dpjax.accountants import DEFAULT_ORDERS, ConstantsUnavailable, last_iterate_curve, last_iterate_gdp_mu
from dpjax.accountants import sampler_last_iterate_curve
from dpjax.accountants.samplers import chourasia_ye_shokri as cys
from dpjax.accountants.samplers import exact
from dpjax.data import replace_one

CYS = "chourasia-ye-shokri"


def _cys_rdp(eta, sigma, T, n, delta_g, big, small, **kw):
    return last_iterate_curve(eta, sigma, T, dataset_size=n, gradient_sensitivity=delta_g, smoothness=big,
                              strong_convexity=small, method=CYS, **kw).rdp


def _exact_mu(eta, sigma, T, n, delta_g, h):
    """mu of the exact last-iterate laws (dpjax.accountants.exact.ula_law): full-batch noisy GD
    on F = h theta^2 / 2 - a theta is ULA with gamma = eta and temperature eta sigma^2 / 2."""
    temp = eta * sigma**2 / 2.0
    m1, c1 = exact.ula_law(h, 0.0, eta, [T], temperature=temp)
    m2, _ = exact.ula_law(h, delta_g / n, eta, [T], temperature=temp)
    return abs(float(m1[0, 0] - m2[0, 0])) / math.sqrt(float(c1[0, 0, 0]))


# --- validity against the exact law of a quadratic ---------------------------------------------
@pytest.mark.parametrize("eta,h,T,n,sigma", [
    (0.1, 1.0, 1, 1, 2.0), (0.1, 1.0, 50, 100, 2.0), (0.01, 0.5, 1000, 10, 0.7), (0.3, 3.0, 7, 1000, 1.0),  # eta h = 0.9
    (1e-4, 1e-3, 10**6, 100, 1.0), (0.5, 1e-9, 1000, 50, 0.1), (0.5, 1e-9, 10**6, 1, 0.1),  # m -> 0, large T, small n
    (0.99, 1.0, 3, 2, 1.0), (0.99, 1.0, 10**6, 2, 1.0),  # eta M just below 1
])
def test_bound_never_below_the_exact_law_of_a_quadratic(eta, h, T, n, sigma):
    exact_rdp = DEFAULT_ORDERS * _exact_mu(eta, sigma, T, n, 2.0, h) ** 2 / 2.0
    bound = _cys_rdp(eta, sigma, T, n, 2.0, h, h)
    assert np.all(bound >= exact_rdp * (1 - 1e-12))


@pytest.mark.parametrize("eta,h,low,high,T", [(0.05, 2.0, 0.5, 4.0, 300), (0.01, 1e-3, 1e-4, 10.0, 10**5), (0.2, 1.0, 1.0, 4.9, 2)])
def test_bound_never_below_the_exact_law_with_loose_constants(eta, h, low, high, T):
    """The constants only bound the curvature h (low <= h <= high): the bound must still hold."""
    exact_rdp = DEFAULT_ORDERS * _exact_mu(eta, 1.3, T, 20, 1.0, h) ** 2 / 2.0
    assert np.all(_cys_rdp(eta, 1.3, T, 20, 1.0, high, low) >= exact_rdp * (1 - 1e-12))


def test_a_dpjax_ula_run_is_never_more_private_than_the_bound_says():
    """ULA on the Gaussian-mean Gibbs posterior (m = M = 16.5, eta = 0.01): the theorem's value
    against dpjax's exact accountant for the run, at each order."""
    model = M.gaussian_mean(dim=2, prior_precision=0.5, inverse_temperature=2.0)
    x = np.array([[0.1, 0.2], [-0.3, 0.5], [1.0, -1.0], [0.4, 0.4], [0.0, 0.7], [-0.6, -0.1]])
    pair = replace_one(M.gaussian_mean_dataset(x), 3, {"x": np.array([0.7, 0.0])})
    sampler = S.ula(0.01, temperature=1.5, parameterisation="euler")
    orders = np.array([1.5, 2.0, 8.0, 32.0])
    for steps in (1, 30, 2000):
        bound = sampler_last_iterate_curve(model, pair, sampler, steps, method=CYS)
        truth = exact.ula_exact_curve_for_pair(model, pair, 0.01, [steps], orders, temperature=1.5).rdp[0]
        assert np.all(bound.rdp_at(orders) >= truth * (1 - 1e-12))
        assert bound.provenance.released == "last iterate"
        assert "Chourasia" in bound.provenance.result


# --- the implemented value dominates shifted interpolation (why it is valid) -----------------
def test_never_below_the_shifted_interpolation_bound_on_a_grid():
    rng = np.random.default_rng(7)
    k = 4000
    eta = 10 ** rng.uniform(-5, 0, k)
    big = rng.uniform(0.0, 0.999, k) / eta  # eta M < 1
    small = big * 10 ** rng.uniform(-8, 0, k)
    T = np.round(10 ** rng.uniform(0, 7, k)).astype(np.int64)
    n = np.round(10 ** rng.uniform(0, 6, k)).astype(np.int64)
    sigma = 10 ** rng.uniform(-2, 2, k)
    common = dict(dataset_size=n, gradient_sensitivity=2.0, smoothness=big, strong_convexity=small)
    mu = last_iterate_gdp_mu(eta, sigma, T, **common).shifted_interpolation
    bound = last_iterate_curve(eta, sigma, T, method=CYS, **common).rdp
    si_rdp = DEFAULT_ORDERS * (mu**2)[:, None] / 2.0
    assert np.all(bound >= si_rdp * (1 - 1e-10))
    # a projection (diameter D) only lowers shifted interpolation; the theorem's value ignores D
    mu_d = last_iterate_gdp_mu(eta[:500], sigma[:500], T[:500], dataset_size=n[:500], gradient_sensitivity=2.0,
                               smoothness=big[:500], strong_convexity=small[:500],
                               diameter=10 ** rng.uniform(-3, 3, 500)).shifted_interpolation
    assert np.all(mu_d <= mu[:500] * (1 + 1e-12))
    # the proof's tight corner: T = 1 with eta m -> 1 (ratio 4 (1 - e^{-1/2}) = 1.574)
    one = last_iterate_curve(0.999, 1.0, 1, dataset_size=1, gradient_sensitivity=1.0, smoothness=1.0, strong_convexity=1.0,
                             method=CYS).rdp
    assert one[0] / DEFAULT_ORDERS[0] / 0.5 == pytest.approx(4 * -math.expm1(-0.999 / 2) / 0.999, rel=1e-12)


def test_auto_is_unchanged_by_the_dominated_bound_and_never_above_it():
    steps = np.array([1, 10, 100, 1000, 10**5])
    common = dict(dataset_size=1000, gradient_sensitivity=2.0, smoothness=1.0, strong_convexity=0.05)
    auto = last_iterate_curve(0.1, 1.0, steps, **common)
    theorem = last_iterate_curve(0.1, 1.0, steps, method=CYS, **common)
    mu = last_iterate_gdp_mu(0.1, 1.0, steps, **common).shifted_interpolation
    assert np.all(auto.rdp <= theorem.rdp)
    assert np.allclose(auto.rdp, DEFAULT_ORDERS * (mu**2)[:, None] / 2.0, rtol=1e-12)
    assert np.all(auto.epsilon(1e-5) <= theorem.epsilon(1e-5))
    assert "Chourasia" in auto.provenance.result
    # where the theorem's assumptions fail (m = 0, eta M >= 1, other batchings) auto leaves it out
    for kw in (dict(strong_convexity=0.0), dict(smoothness=15.0), dict(batching="cyclic", batch_size=10)):
        curve = last_iterate_curve(0.1, 1.0, 100, **{**common, **kw})
        assert "Chourasia" not in curve.provenance.result


# --- closed forms: T = 1, the stationary limit, the paper's own variables ----------------------
def test_one_step_and_stationary_closed_forms():
    eta, sigma, n, dg, m = 0.2, 1.5, 40, 3.0, 0.5
    x = eta * m
    rho2 = (dg / (n * sigma)) ** 2  # one step's Gaussian mechanism: RDP = a rho^2 / 2
    one = _cys_rdp(eta, sigma, 1, n, dg, 1.0, m)
    # T = 1: a rho^2 (1 - e^{-x/2}) / (x / 2): between 1.57 and 2 times the one-step mechanism
    assert one == pytest.approx(DEFAULT_ORDERS * rho2 * -math.expm1(-x / 2) / (x / 2), rel=1e-13)
    assert np.all((one >= 1.57 * DEFAULT_ORDERS * rho2 / 2) & (one <= 2 * DEFAULT_ORDERS * rho2 / 2))
    # T -> inf: 2 a Delta^2 / (m eta sigma^2 n^2), twice the exact stationary value (2 - x) / (2 x)
    far = _cys_rdp(eta, sigma, 10**9, n, dg, 1.0, m)
    assert far == pytest.approx(DEFAULT_ORDERS * 2 * dg**2 / (m * eta * sigma**2 * n**2), rel=1e-13)
    exact_stationary = DEFAULT_ORDERS * rho2 * (2 - x) / (2 * x)
    assert far / exact_stationary == pytest.approx(2.0 / (1 - x / 2), rel=1e-12)


@pytest.mark.parametrize("eta,sigma,T,n,dg,m", [(0.1, 1.0, 1, 1000, 2.0, 0.05), (1e-3, 30.0, 12345, 7, 0.3, 2.0),
                                                 (0.5, 0.2, 10**7, 10**6, 2.0, 1e-9)])
def test_the_papers_formula_in_its_own_variables(eta, sigma, T, n, dg, m):
    """eps(a) = a S_g^2 / (lambda sigma_L^2 n^2) (1 - exp(-lambda eta K / 2)) for noise
    sqrt(2 eta sigma_L^2) N(0, I): dpjax's eta Z, Z ~ N(0, sigma^2 I), is that noise with
    sigma_L^2 = eta sigma^2 / 2 (mpmath, 50 digits)."""
    mpmath.mp.dps = 50
    sigma_l2 = mpmath.mpf(eta) * mpmath.mpf(sigma) ** 2 / 2
    assert float(mpmath.sqrt(2 * mpmath.mpf(eta) * sigma_l2)) == pytest.approx(eta * sigma, rel=1e-15)
    lam = mpmath.mpf(m)
    ref = [float(mpmath.mpf(a) * mpmath.mpf(dg) ** 2 / (lam * sigma_l2 * n**2) * -mpmath.expm1(-lam * eta * T / 2))
           for a in DEFAULT_ORDERS]
    got = _cys_rdp(eta, sigma, T, n, dg, 1.0 / eta * 0.5, m)
    assert got == pytest.approx(np.array(ref), rel=1e-12)


def test_the_bound_grows_in_T_and_stops():
    steps = np.array([1, 10, 100, 10**3, 10**4, 10**6, 10**8])
    rdp = _cys_rdp(0.1, 1.0, steps, 1000, 2.0, 1.0, 0.05)[:, 0]
    assert np.all(np.diff(rdp) >= 0)
    assert rdp[-1] == pytest.approx(rdp[-2], rel=1e-12)


def test_arrays_of_configurations_give_one_curve_per_configuration():
    eta = np.array([0.01, 0.1, 0.5])[:, None]
    steps = np.array([1, 100, 10**4])[None, :]
    curve = last_iterate_curve(eta, 1.0, steps, dataset_size=100, gradient_sensitivity=2.0, smoothness=1.0,
                               strong_convexity=0.2, method=CYS)
    eps = curve.epsilon(1e-5)
    assert eps.shape == (3, 3)
    for i in range(3):
        for j in range(3):
            one = last_iterate_curve(float(eta[i, 0]), 1.0, int(steps[0, j]), dataset_size=100, gradient_sensitivity=2.0,
                                     smoothness=1.0, strong_convexity=0.2, method=CYS)
            assert float(one.epsilon(1e-5)) == pytest.approx(float(eps[i, j]), rel=1e-12)


# --- what the theorem does not cover is refused by name, before any compute ---------------------
@pytest.mark.parametrize("kwargs,match", [
    (dict(batching="cyclic", batch_size=10), "batching='cyclic' is not covered by the Chourasia-Ye-Shokri bound"),
    (dict(batching="shuffled", batch_size=10), "batching='shuffled' is not covered"),
    (dict(batching="poisson", batch_size=10), "batching='poisson' is not covered"),
    (dict(strong_convexity=0.0), "strong_convexity=0.0 violates strong_convexity > 0"),
    (dict(strong_convexity=np.array([0.1, 0.0])), "violates strong_convexity > 0"),
    (dict(step_size=1.0), r"step_size=1 violates step_size < 1 / smoothness = 1"),
    (dict(step_size=np.array([0.1, 1.5])), r"step_size=1.5 violates step_size < 1 / smoothness"),
])
def test_what_the_theorem_does_not_cover_is_refused(kwargs, match):
    args = dict(step_size=0.1, noise_std=1.0, steps=10, dataset_size=100, gradient_sensitivity=2.0, smoothness=1.0,
                strong_convexity=0.1)
    args.update(kwargs)
    with pytest.raises(ConstantsUnavailable, match=match):
        last_iterate_curve(**args, method=CYS)


def test_bad_input_is_refused_before_the_theorem_is_consulted():
    with pytest.raises(ValueError, match="noise_std=-1.0"):
        last_iterate_curve(0.1, -1.0, 10, dataset_size=10, gradient_sensitivity=1.0, smoothness=1.0, strong_convexity=0.1,
                           method=CYS)
    with pytest.raises(ValueError, match="method"):
        last_iterate_curve(0.1, 1.0, 10, dataset_size=10, gradient_sensitivity=1.0, smoothness=1.0, method="ye-shokri")
    with pytest.raises(ValueError, match="method"):
        last_iterate_curve(0.1, 1.0, 10, dataset_size=10, gradient_sensitivity=1.0, smoothness=1.0, method="altschuler-talwar")


def test_sampler_runs_the_theorem_does_not_cover_are_refused_by_name():
    model = M.gaussian_mean(dim=2, prior_precision=0.5, inverse_temperature=2.0)
    x = np.array([[0.1, 0.2], [-0.3, 0.5], [1.0, -1.0], [0.4, 0.4], [0.0, 0.7], [-0.6, -0.1]])
    pair = replace_one(M.gaussian_mean_dataset(x), 3, {"x": np.array([0.7, 0.0])})
    with pytest.raises(ConstantsUnavailable, match="batching='shuffled' is not covered"):
        sampler_last_iterate_curve(model, pair, S.sgld(0.02, batching="reshuffle", batch_size=3), 10, method=CYS)
    with pytest.raises(ConstantsUnavailable, match="batching='cyclic-random' is not covered"):
        sampler_last_iterate_curve(model, pair, S.cyclic_sgld(0.02), 10, method=CYS)
    with pytest.raises(ConstantsUnavailable, match="violates step_size < 1 / smoothness"):
        sampler_last_iterate_curve(model, pair, S.ula(0.1, parameterisation="euler"), 10, method=CYS)  # eta M = 1.65


def test_module_level_rdp_is_inf_without_strong_convexity():
    """The raw formula never returns a plausible number where the theorem gives none."""
    out = cys.rdp(0.1, 1.0, 10, dataset_size=10, gradient_sensitivity=1.0, strong_convexity=np.array([0.0, 0.1]),
                  orders=DEFAULT_ORDERS)
    assert np.all(np.isinf(out[0])) and np.all(np.isfinite(out[1]))

"""f-DP trade-offs and GDP summaries (issue 13, deliverable 2).

Ground truths: the Gaussian mechanism's trade-off G_mu(alpha) = Phi(Phi^{-1}(1 - alpha) - mu)
and profile delta_mu (Dong, Roth & Su 2022; Balle & Wang 2018) in closed form and in mpmath;
the Laplace mechanism's trade-off F(F^{-1}(1 - alpha) - 1/b) with F the Laplace(0, 1) cdf
(DRS Sec. 2.3); brute-force sups over grids written out in the tests.
"""
from __future__ import annotations

import math
import sys
import pathlib

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize
from scipy.stats import norm

from dpjax.accountants import PrivacyCurve, Provenance, noisy_sgd_curve
from dpjax.accountants import fdp
from dpjax.accountants.mechanisms.gaussian_divergence import analytic_gaussian_delta
from dpjax.accountants.mechanisms.laplace import laplace_curve

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from test_bad_inputs import Entry, assert_bad_inputs_get_clear_errors  # noqa: E402

PROV = Provenance("test")


def gaussian_profile(mu, epsilons):
    eps = np.asarray(epsilons, dtype=float)
    return PrivacyCurve.from_profile(eps, analytic_gaussian_delta(mu, eps), PROV)


def laplace_tradeoff(scale, alpha):
    """F(F^{-1}(1 - alpha) - 1/b) for the Laplace(0, 1) cdf F (DRS Sec. 2.3, shift 1/b)."""
    def cdf(x):
        return np.where(x < 0, 0.5 * np.exp(np.minimum(x, 0)), 1 - 0.5 * np.exp(-np.maximum(x, 0)))

    def icdf(p):
        return np.where(p < 0.5, np.log(2 * np.maximum(p, 1e-300)), -np.log(2 * np.maximum(1 - p, 1e-300)))

    return cdf(icdf(1 - np.asarray(alpha, dtype=float)) - 1.0 / scale)


def mp_gdp_delta(mu, eps):
    mp.mp.dps = 60
    phi = lambda x: mp.erfc(-x / mp.sqrt(2)) / 2  # noqa: E731
    mu, eps = mp.mpf(mu), mp.mpf(eps)
    return phi(-eps / mu + mu / 2) - mp.e**eps * phi(-eps / mu - mu / 2)


# --- the GDP profile and trade-off -------------------------------------------------------------
@pytest.mark.parametrize("mu", [0.05, 0.3, 1.0, 3.0, 10.0])
def test_gdp_delta_matches_mpmath_down_to_tiny_deltas(mu):
    eps = np.array([0.0, 1e-3, 0.1, 1.0, 5.0, 20.0, 60.0]) * max(mu, 1.0)
    ours = fdp.gdp_log_delta(mu, eps)
    for e, lo in zip(eps, ours):
        ref = mp_gdp_delta(mu, e)
        if ref < mp.mpf("1e-300"):
            assert lo < -690 or math.isinf(lo)  # below float64's range: ours reports log delta < log(1e-300)
            continue
        # erfcx difference: relative error ~ 1e-16 |x1| / mu with |x1| = eps/mu + mu/2 <= 1.2e3 / 0.05 here
        # (2e4 ulps at most); 1e-10 leaves margin and is far below any use of these numbers
        assert lo == pytest.approx(float(mp.log(ref)), rel=1e-10, abs=1e-10), (mu, e)


def test_gdp_delta_agrees_with_the_analytic_gaussian_mechanism():
    mu = np.array([0.2, 1.0, 2.5])[:, None]
    eps = np.linspace(0, 8, 17)[None, :]
    ref = np.vectorize(lambda m, e: analytic_gaussian_delta(m, e))(mu, eps)
    np.testing.assert_allclose(fdp.gdp_delta(mu, eps), ref, rtol=1e-9, atol=1e-300)


def test_gdp_tradeoff_closed_form_and_symmetry():
    alpha = np.concatenate([[0.0, 1e-12, 1e-6], np.linspace(0.01, 0.99, 50), [1 - 1e-9, 1.0]])
    mp.mp.dps = 50

    def reference(mu, a):  # Phi(Phi^{-1}(1 - a) - mu) in 50 digits (scipy's 1 - a loses small a)
        if a in (0.0, 1.0):
            return 1.0 - a
        z = mp.sqrt(2) * mp.erfinv(1 - 2 * mp.mpf(a))
        return float(mp.erfc(-(z - mu) / mp.sqrt(2)) / 2)

    for mu in (0.1, 1.0, 4.0):
        g = fdp.gdp_tradeoff(mu, alpha)
        # 1e-12 relative: ndtri and ndtr are accurate to a few ulps (scipy's Cephes routines)
        np.testing.assert_allclose(g, [reference(mu, a) for a in alpha], rtol=1e-12, atol=1e-300)
        # G_mu is its own inverse (DRS Prop. 2.4 for symmetric trade-offs); 1e-9: ndtri/ndtr round trip
        inner = alpha[(alpha > 0) & (alpha < 1)]
        np.testing.assert_allclose(fdp.gdp_tradeoff(mu, fdp.gdp_tradeoff(mu, inner)), inner, rtol=1e-9, atol=1e-13)


# --- trade-off of a curve ---------------------------------------------------------------------
def _optimal_eps(mu, alpha):
    """The eps whose (eps, delta_mu(eps)) line touches G_mu at alpha: slope -e^eps = G'(alpha)."""
    z = -norm.ppf(alpha)
    return mu * z - mu**2 / 2


def test_gaussian_tradeoff_is_exact_when_the_touching_eps_are_on_the_grid():
    """beta(alpha) = Phi(Phi^{-1}(1 - alpha) - mu) exactly: sup_eps f_{eps, delta_mu(eps)} is
    attained at eps*(alpha) = mu z - mu^2/2 (z = Phi^{-1}(1 - alpha)) for alpha below the fixed
    point, and by symmetry at eps*(G(alpha)) above it."""
    mu = 1.3
    alpha = np.array([1e-8, 1e-4, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 0.99])
    g = norm.cdf(norm.ppf(1 - alpha) - mu)
    touching = np.where(_optimal_eps(mu, alpha) >= 0, _optimal_eps(mu, alpha), _optimal_eps(mu, g))
    curve = gaussian_profile(mu, np.unique(np.concatenate([[0.0], touching])))
    # 1e-12: cancellation in 1 - delta - e^eps alpha at a few ulps of 1, nothing else
    np.testing.assert_allclose(curve.tradeoff(alpha), g, rtol=0, atol=1e-12)


def test_profile_tradeoff_is_the_sup_over_its_grid_and_never_above_the_truth():
    mu = 0.8
    grid = np.linspace(0, 6, 301)
    curve = gaussian_profile(mu, grid)
    alpha = np.linspace(0, 1, 201)
    ours = curve.tradeoff(alpha)
    d = analytic_gaussian_delta(mu, grid)
    brute = np.array([max(max(0.0, 1 - dk - math.exp(ek) * a, math.exp(-ek) * (1 - dk - a)) for ek, dk in zip(grid, d)) for a in alpha])
    np.testing.assert_allclose(ours, brute, rtol=0, atol=1e-15)  # the same finite sup, summed in another order
    truth = norm.cdf(norm.ppf(1 - alpha) - mu)
    assert np.all(ours <= truth + 1e-13)  # a valid f: never above the true trade-off (13 digits of 1)
    # and close: the grid step 0.02 costs O(h^2 (|delta''| + e^eps alpha)) ~ 1e-3 at most here
    assert np.max(truth - ours) < 1e-3


def test_rdp_curve_tradeoff_is_valid_and_at_least_as_tight_as_a_dense_grid():
    sigma = 1.5
    curve = noisy_sgd_curve(sigma, 1.0, 1)  # Gaussian mechanism, RDP through Balle et al.'s conversion
    alpha = np.array([1e-6, 1e-3, 0.02, 0.1, 0.3, 0.6, 0.9])
    ours = curve.tradeoff(alpha)
    truth = fdp.gdp_tradeoff(1 / sigma, alpha)
    assert np.all(ours <= truth + 1e-13)  # RDP-derived f can only be below the exact G_{1/sigma}
    dense = np.linspace(0, float(curve.epsilon(1e-15)), 20001)
    d = curve.delta(dense)
    brute = np.max(fdp._tradeoff_terms(dense[:, None], d[:, None], alpha[None, :]), axis=0)
    # the golden refinement must find at least what a 20001-point grid finds (to 1e-9: the
    # refinement's bracket 0.618^48 of a coarse step, times the slope |d f / d eps| <= e^eps alpha + |delta'|)
    assert np.all(ours >= brute - 1e-9)


def test_laplace_tradeoff_matches_its_closed_form():
    b = 0.8
    curve = laplace_curve(b, epsilons=np.linspace(0, 1 / b, 2001))
    alpha = np.linspace(0, 1, 101)
    ours = curve.tradeoff(alpha)
    truth = laplace_tradeoff(b, alpha)
    assert np.all(ours <= truth + 1e-13)
    # the profile is exact; the grid (step 6e-4) and the RDP route cost < 1e-6 here
    np.testing.assert_allclose(ours, truth, rtol=0, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(
    steps=st.lists(st.floats(0.01, 2.0), min_size=1, max_size=30),
    drops=st.lists(st.floats(0.0, 1.0), min_size=31, max_size=31),
    start=st.floats(0.05, 1.0),
)
def test_tradeoff_of_any_profile_is_convex_decreasing_and_symmetric(steps, drops, start):
    eps = np.concatenate([[0.0], np.cumsum(steps)])
    deltas = start * np.cumprod(np.array(drops[: eps.size]))
    curve = PrivacyCurve.from_profile(eps, deltas, PROV)
    alpha = np.linspace(0, 1, 401)
    f = curve.tradeoff(alpha)
    assert np.all((f >= 0) & (f <= 1))
    assert np.all(np.diff(f) <= 1e-15)  # non-increasing (sup of non-increasing functions)
    # convex: a sup of convex piecewise-linear functions; 1e-13 absorbs rounding of 1 - delta - e^eps alpha
    assert np.all(f[:-2] + f[2:] - 2 * f[1:-1] >= -1e-13)
    # symmetric (f = f^{-1}): f(f(a)) = a wherever f is strictly decreasing around f(a)
    a = alpha[(alpha > 0) & (f > 1e-9) & (f < f[0] - 1e-9)]
    if a.size:
        np.testing.assert_allclose(curve.tradeoff(curve.tradeoff(a)), a, rtol=0, atol=1e-9)


class ExactGaussianCurve:
    """A curve known only through delta(eps) and eps(delta) at every point, like a PLD-backed
    curve: the Gaussian mechanism's exact profile (Balle & Wang 2018, Thm 8)."""

    has_profile = has_rdp = False

    def __init__(self, mu):
        self.mu = mu

    def delta(self, epsilon, conversion="balle"):
        return np.asarray(analytic_gaussian_delta(self.mu, epsilon), dtype=float)

    def epsilon(self, delta, conversion="balle"):
        from dpjax.accountants.mechanisms.gaussian_divergence import analytic_gaussian_epsilon

        return np.float64(analytic_gaussian_epsilon(self.mu, float(delta)))


@pytest.mark.parametrize("mu", [0.3, 1.0, 3.0])
def test_exact_gaussian_from_delta_alone_gives_g_mu_and_mu(mu):
    """Only delta(eps) is used, so a curve with an exact continuous profile (a PLD) gets the
    exact answers: beta = G_mu to rounding, mu-GDP to the certification's rtol."""
    curve = ExactGaussianCurve(mu)
    alpha = np.array([0.0, 1e-9, 1e-6, 1e-3, 0.05, 0.2, 0.5, 0.8, 0.99, 1.0])
    # 1e-14: the golden refinement's final bracket (0.618^48 of a grid step) costs O(1e-20);
    # what is left is rounding in 1 - delta - e^eps alpha
    np.testing.assert_allclose(fdp.curve_tradeoff(curve, alpha), fdp.gdp_tradeoff(mu, alpha), rtol=0, atol=1e-14)
    summary = fdp.curve_gdp(curve)
    assert summary.mu_lower == pytest.approx(mu, rel=1e-13)  # every point requires exactly mu
    assert mu <= summary.mu <= mu * (1 + 1e-4)  # certified between grid points to rtol = 1e-4


# --- GDP summaries ----------------------------------------------------------------------------
def _step_profile_mu(grid, deltas, eps_max):
    """The smallest mu dominating a profile's step function on [0, eps_max], brute force:
    step j holds delta_j on [e_j, e_{j+1}), so the requirement is delta_mu(e_{j+1}) >= delta_j."""
    req = []
    for j in range(grid.size - 1):
        if grid[j] >= eps_max:
            break
        target = deltas[j]
        e = min(grid[j + 1], eps_max)
        req.append(optimize.brentq(lambda m: float(fdp.gdp_log_delta(m, e)) - math.log(target), 1e-6, 100, xtol=1e-14, rtol=1e-14))
    return max(req)


def test_gdp_of_the_gaussian_mechanism_is_one_over_sigma():
    sigma = 0.7
    grid = np.linspace(0, 10, 2001)
    # at every eps the exact profile requires exactly mu = 1/sigma (64 log-mu bisections: ~1e-16)
    np.testing.assert_allclose(fdp._mu_requirement(grid, analytic_gaussian_delta(1 / sigma, grid)), 1 / sigma, rtol=1e-12)
    summary = gaussian_profile(1 / sigma, grid).gdp()
    # a profile certifies a step function (between grid points its delta is the left point's),
    # which needs a little more than 1/sigma: compare with the brute-force requirement of that
    # step function, within the solver's rtol 1e-4
    brute = _step_profile_mu(grid, analytic_gaussian_delta(1 / sigma, grid), float(summary.epsilon_max))
    assert brute <= summary.mu <= brute * (1 + 1.01e-4)
    assert summary.mu >= 1 / sigma
    assert not summary.dominates and summary.tail_delta <= 1e-10


def test_gdp_of_a_gaussian_composition_is_sqrt_t_over_sigma():
    sigma, t = 4.0, 16  # T Gaussian mechanisms compose to the Gaussian with mu = sqrt(T) / sigma (DRS Cor. 3.3)
    mu_t = math.sqrt(t) / sigma
    grid = np.linspace(0, 8, 1001)
    np.testing.assert_allclose(fdp._mu_requirement(grid, analytic_gaussian_delta(mu_t, grid)), mu_t, rtol=1e-12)
    summary = gaussian_profile(mu_t, grid).gdp()
    assert mu_t <= summary.mu <= _step_profile_mu(grid, analytic_gaussian_delta(mu_t, grid), float(summary.epsilon_max)) * (1 + 1.01e-4)
    # and the RDP accountant of the same composition: a looser curve, so a larger mu
    rdp = noisy_sgd_curve(sigma, 1.0, t).gdp()
    assert rdp.mu >= mu_t
    # check the certificate independently on a fine grid: the curve's delta never exceeds delta_mu
    eps = np.linspace(0, float(rdp.epsilon_max), 100001)
    assert np.all(noisy_sgd_curve(sigma, 1.0, t).delta(eps) <= fdp.gdp_delta(rdp.mu, eps) * (1 + 1e-12))


def test_gdp_of_laplace_dominates_everywhere_and_is_tight():
    b = 1.0
    summary = laplace_curve(b, epsilons=np.linspace(0, 1 / b, 4001)).gdp()
    assert summary.dominates and summary.tail_delta == 0.0
    # independent check through the trade-off (the duality): G_mu <= the Laplace trade-off ...
    alpha = np.linspace(0, 1, 20001)
    assert np.all(fdp.gdp_tradeoff(summary.mu, alpha) <= laplace_tradeoff(b, alpha) + 1e-12)
    # ... and a mu 0.1% smaller does not dominate (the profile grid's slack is ~1e-4 relative)
    assert np.any(fdp.gdp_tradeoff(summary.mu * (1 - 1e-3), alpha) > laplace_tradeoff(b, alpha) + 1e-12)
    # the summary's own trade-off bound is met by the curve's
    np.testing.assert_array_less(summary.tradeoff(alpha) - 1e-12, laplace_tradeoff(b, alpha))


def test_subsampled_rdp_curve_gdp_is_certified_on_its_range():
    curve = noisy_sgd_curve(1.2, 0.05, 200)
    summary = curve.gdp(min_delta=1e-8)
    assert np.isfinite(summary.mu) and summary.mu_lower <= summary.mu <= summary.mu_lower * (1 + 1.01e-4)
    eps = np.linspace(0, float(summary.epsilon_max), 50001)
    assert np.all(curve.delta(eps) <= fdp.gdp_delta(summary.mu, eps) * (1 + 1e-12))
    assert summary.tail_delta <= 1e-8
    # the advertised trade-off is met: max(0, G_mu - tail_delta) <= the curve's own trade-off
    alpha = np.linspace(0, 1, 51)
    assert np.all(summary.tradeoff(alpha) <= curve.tradeoff(alpha) + 1e-9)


def test_batched_curves_give_batched_tradeoffs_and_summaries():
    curve = noisy_sgd_curve(np.array([1.0, 2.0]), 1.0, 1)
    alpha = np.array([0.01, 0.1, 0.5])
    batched = curve.tradeoff(alpha)
    assert batched.shape == (2, 3)
    for i, s in enumerate([1.0, 2.0]):
        np.testing.assert_allclose(batched[i], noisy_sgd_curve(s, 1.0, 1).tradeoff(alpha), rtol=0, atol=1e-12)
    summary = curve.gdp()
    assert summary.mu.shape == (2,) and summary.mu[1] < summary.mu[0]


def test_profile_starting_above_zero_has_no_finite_gdp():
    curve = PrivacyCurve.from_profile([0.5, 1.0], [0.1, 0.01], PROV)  # delta(eps < 0.5) = 1: no guarantee
    assert math.isinf(curve.gdp().mu)


# --- bad input --------------------------------------------------------------------------------
CURVE = noisy_sgd_curve(1.0, 1.0, 1)
ENTRIES = [
    Entry("PrivacyCurve.tradeoff", CURVE.tradeoff, dict(alpha=0.1)),
    Entry("PrivacyCurve.gdp", CURVE.gdp, dict(min_delta=1e-8, rtol=1e-3)),
    Entry("gdp_delta", fdp.gdp_delta, dict(mu=1.0, epsilon=1.0)),
    Entry("gdp_tradeoff", fdp.gdp_tradeoff, dict(mu=1.0, alpha=0.1)),
]


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
def test_bad_inputs_get_clear_errors(entry):
    assert_bad_inputs_get_clear_errors(entry)


@pytest.mark.parametrize("call, word", [
    (lambda: CURVE.tradeoff(1.5), "alpha"),
    (lambda: CURVE.tradeoff(-0.1), "alpha"),
    (lambda: CURVE.tradeoff(0.1, epsilons=[-1.0, 2.0]), "epsilons"),
    (lambda: CURVE.gdp(min_delta=0.0), "min_delta"),
    (lambda: CURVE.gdp(min_delta=1.0), "min_delta"),
    (lambda: fdp.gdp_delta(-1.0, 1.0), "mu"),
    (lambda: fdp.gdp_delta(1.0, -1.0), "epsilon"),
])
def test_out_of_range_values_are_refused(call, word):
    with pytest.raises(ValueError, match=word):
        call()

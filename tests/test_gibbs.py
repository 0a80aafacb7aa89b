"""Paper 002 Gibbs-posterior accountant: closed forms vs quadrature / the exact Gaussian
mechanism, inversions round-trip, bounds >= exact."""
import math

import mpmath
import numpy as np
import pytest
from scipy import integrate, stats

from dpjax.accountants.posterior import gibbs as gb
from dpjax.accountants.conversions import zcdp_to_epsilon


def analytic_gaussian_delta(mu, eps):
    """Balle & Wang (2018) Thm 8 evaluated directly with scipy (independent of dpjax)."""
    return stats.norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * stats.norm.cdf(-mu / 2 - eps / mu)


def test_exponential_mechanism_dominates_exact_finite_gibbs():
    # Finite Theta: G(theta | D) ∝ exp(-beta sum loss) pi; the exact max log-ratio over outputs,
    # over random neighbouring datasets, must stay <= 2 beta Delta_L.
    rng = np.random.default_rng(0)
    thetas = np.linspace(-1, 1, 41)
    prior = rng.dirichlet(np.ones(thetas.size))
    beta = 0.7

    def loss(theta, x):
        return 0.5 * (theta - x) ** 2

    worst = 0.0
    delta_l = 0.0
    for _ in range(200):
        data = rng.uniform(-1, 1, size=6)
        other = data.copy()
        other[0] = rng.uniform(-1, 1)
        l1 = np.array([loss(t, data).sum() for t in thetas])
        l2 = np.array([loss(t, other).sum() for t in thetas])
        delta_l = max(delta_l, np.max(np.abs(l1 - l2)))
        lp1 = -beta * l1 + np.log(prior)
        lp2 = -beta * l2 + np.log(prior)
        lp1 -= np.logaddexp.reduce(lp1)
        lp2 -= np.logaddexp.reduce(lp2)
        worst = max(worst, np.max(np.abs(lp1 - lp2)))
    # sup over theta in [-1, 1] and |x| <= 1 of |(theta - x)^2 - (theta - x')^2|/2 is 2
    assert worst <= gb.exponential_mechanism_epsilon(beta, delta_l) + 1e-12
    assert gb.exponential_mechanism_epsilon(beta, 2.0) == pytest.approx(4 * beta)
    curve = gb.exponential_mechanism_curve(beta, 2.0)
    assert curve.epsilon(1e-6) <= 4 * beta + 1e-12
    assert curve.delta(4 * beta) == 0.0
    assert curve.delta(0.0) == pytest.approx(math.tanh(2 * beta))


@pytest.mark.parametrize("beta,lip,m", [(0.3, 1.0, 1.0), (0.01, 2.0, 0.5), (2.0, 0.7, 3.0)])
def test_lsi_inversion_round_trips(beta, lip, m):
    for delta in (1e-2, 1e-5, 1e-10, 1e-100):
        eps = gb.lsi_epsilon(delta, beta, lip, m)
        assert gb.lsi_delta(eps, beta, lip, m) == pytest.approx(delta, rel=1e-9)
        # the printed closed form 2L^2b^2/m + 2 L b sqrt(2 log(1/delta)/m)
        assert eps == pytest.approx(2 * lip**2 * beta**2 / m + 2 * lip * beta * math.sqrt(2 * math.log(1 / delta) / m), rel=1e-13)
        # = the zCDP conversion with rho = 2 L^2 b^2/m (independent implementation)
        assert eps == pytest.approx(float(zcdp_to_epsilon(2 * lip**2 * beta**2 / m, delta)), rel=1e-12)
    # D.7's printed form m/(8 L^2 b^2) (eps - 2 L^2 b^2/m)^2
    eps = 3.0 * gb.lsi_rho(beta, lip, m)
    printed = math.exp(-(m / (8 * lip**2 * beta**2)) * (eps - 2 * lip**2 * beta**2 / m) ** 2)
    assert gb.lsi_delta(eps, beta, lip, m) == pytest.approx(printed, rel=1e-12)
    assert gb.lsi_delta(0.5 * gb.lsi_rho(beta, lip, m), beta, lip, m) == 1.0


def test_lsi_curves_are_consistent():
    beta, lip, m = 0.2, 1.0, 1.0
    prof = gb.lsi_profile_curve(beta, lip, m)
    for delta in (1e-3, 1e-8):
        exact = gb.lsi_epsilon(delta, beta, lip, m)
        got = float(prof.epsilon(delta))
        assert exact <= got <= exact * 1.05  # grid rounding goes up, never down
    z = gb.lsi_zcdp_curve(beta, lip, m, np.linspace(1.05, 200, 2000))
    # the best-order RDP conversion is never worse than the zCDP closed form
    assert float(z.epsilon(1e-5, conversion="mironov")) <= gb.lsi_epsilon(1e-5, beta, lip, m) * (1 + 1e-4)


def test_corollary8_validity_limit():
    delta = 1e-3
    e_max = gb.corollary8_max_epsilon(delta)
    s = 1 + 2 * math.log(1 / delta)
    assert e_max == pytest.approx(2 * (s - math.sqrt(s * (s - 1))), rel=1e-12)
    assert 1.0 < e_max < 1.02
    for eps in (0.01, 0.1, 0.5, 1.0, e_max * (1 - 1e-9)):
        beta = gb.corollary8_temperature(eps, delta, 1.0, 1.0)
        assert gb.lsi_delta(eps, beta, 1.0, 1.0) <= delta * (1 + 1e-9)
        assert beta <= gb.lsi_temperature(eps, delta, 1.0, 1.0)
    # beyond the limit the corollary's beta really fails D.7 (computed from the printed formula)
    eps = 1.5
    beta = eps / 2 * math.sqrt(1 / s)
    assert gb.lsi_delta(eps, beta, 1.0, 1.0) > delta
    with pytest.raises(ValueError, match="Corollary 8"):
        gb.corollary8_temperature(eps, delta, 1.0, 1.0)


def test_example17_printed_beta():
    # v = 1 (m = 1/v), 1-Lipschitz logistic loss: beta <= eps/(2 sqrt(v (1 + 2 log(1/delta))))
    beta = gb.corollary8_temperature(0.1, 1e-3, 1.0, 1.0)
    assert beta == pytest.approx(0.1 / (2 * math.sqrt(1 + 2 * math.log(1e3))), rel=1e-14)
    assert math.floor(beta * 1000) / 1000 == 0.012  # printed 0.012 = 0.01299 truncated


def test_eta_b9_stable_form_matches_mpmath():
    mpmath.mp.dps = 50
    for eps, delta in ((0.1, 1e-3), (1e-6, 1e-9), (2.0, 0.1)):
        t = mpmath.log(1 / mpmath.mpf(delta))
        e = mpmath.mpf(eps)
        printed = e + 2 * t - 2 * mpmath.sqrt(t * (e + t))
        assert gb.eta_b9(eps, delta) == pytest.approx(float(printed), rel=1e-13)


def test_gaussian_mean_posterior_matches_quadrature():
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, size=7)
    beta, lam = 0.4, 0.3
    mean, var = gb.gaussian_mean_posterior(x, beta, lam)
    log_f = lambda t: -beta * 0.5 * np.sum((t - x) ** 2) - 0.5 * lam * t * t
    z, _ = integrate.quad(lambda t: math.exp(log_f(t)), -20, 20)
    m1, _ = integrate.quad(lambda t: t * math.exp(log_f(t)), -20, 20)
    m2, _ = integrate.quad(lambda t: t * t * math.exp(log_f(t)), -20, 20)
    assert mean[0] == pytest.approx(m1 / z, rel=1e-9)
    assert var == pytest.approx(m2 / z - (m1 / z) ** 2, rel=1e-8)


def test_gaussian_mean_exact_rdp_matches_quadrature():
    n, beta, lam, r = 5, 0.6, 0.5, 1.0
    data = np.array([r, 0.2, -0.4, 0.9, 0.1])
    other = data.copy()
    other[0] = -r
    m1, v = gb.gaussian_mean_posterior(data, beta, lam)
    m2, _ = gb.gaussian_mean_posterior(other, beta, lam)
    for order in (1.5, 4.0):
        f = lambda t: math.exp(order * stats.norm.logpdf(t, m1[0], math.sqrt(v)) + (1 - order) * stats.norm.logpdf(t, m2[0], math.sqrt(v)))
        val, _ = integrate.quad(f, -15, 15, epsabs=0, epsrel=1e-12)
        want = math.log(val) / (order - 1)
        assert gb.gaussian_mean_exact_rdp([order], beta, n, r, lam)[0] == pytest.approx(want, rel=1e-8)


@pytest.mark.parametrize("n,beta,lam", [(100, 0.01, 0.0), (1000, 1.0, 0.0), (50, 0.2, 2.0)])
def test_theorem15_dominates_exact(n, beta, lam):
    r = 1.0
    prec = n * beta + lam
    mu = 2 * r * beta / math.sqrt(prec)  # worst mean gap over sd
    for eps in np.linspace(0.0, 3.0, 31):
        bound = gb.gaussian_mean_theorem15_delta(eps, beta, n, r, lam)
        # the privacy loss under P is N(mu^2/2, mu^2): its tail (what B.4 bounds) and the hockey stick
        tail = stats.norm.sf((eps - mu * mu / 2) / mu)
        hockey = stats.norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * stats.norm.cdf(-mu / 2 - eps / mu)
        assert tail <= bound + 1e-15
        assert hockey <= bound + 1e-15


def test_temperature_thresholds_printed_values_and_soundness():
    eps, delta, r = 0.1, 1e-3, 1.0
    b89 = gb.gaussian_mean_temperature_b89(eps, delta, 1, r)
    assert f"{b89:.3g}" == "0.00018" and 1.79e-4 <= b89 < 1.80e-4  # printed "beta < 1.79e-4 n"
    b7 = gb.gaussian_mean_temperature_b7(eps, delta, 1, r)
    assert b7 == pytest.approx(0.01 / (8 * math.log(2e3)), rel=1e-14)
    # the printed 1.26e-4 is the delta = 1e-4 value (NOTES 002)
    assert f"{gb.gaussian_mean_temperature_b7(eps, 1e-4, 1, r):.3g}" == "0.000126"
    n = 10_000
    exact = gb.gaussian_mean_temperature_exact(eps, delta, n, r)
    # exact: delta(eps) at the threshold equals delta; just beyond it exceeds
    mu_at = lambda b: 2 * r * b / math.sqrt(n * b)
    assert analytic_gaussian_delta(mu_at(exact), eps) == pytest.approx(delta, rel=1e-8)
    assert analytic_gaussian_delta(mu_at(exact * (1 + 1e-6)), eps) > delta
    # every sufficient rule is below the exact threshold, and its beta is exactly private
    for rule in (b89 * n, b7 * n):
        assert rule <= exact
        assert gb.gaussian_mean_exact_epsilon(delta, rule, n, r) <= eps
    # Theorem 15 at the B.8 beta hits delta exactly
    assert gb.gaussian_mean_theorem15_delta(eps, b89 * n, n, r) == pytest.approx(delta, rel=1e-9)


def test_exact_temperature_with_prior_precision():
    eps, delta, n, r, lam = 0.5, 1e-5, 200, 1.0, 3.0
    b = gb.gaussian_mean_temperature_exact(eps, delta, n, r, lam)
    assert gb.gaussian_mean_exact_epsilon(delta, b, n, r, lam) == pytest.approx(eps, rel=1e-6)
    b89 = gb.gaussian_mean_temperature_b89(eps, delta, n, r, lam)
    assert gb.gaussian_mean_theorem15_delta(eps, b89, n, r, lam) == pytest.approx(delta, rel=1e-9)
    assert b89 <= b


def test_errors():
    with pytest.raises(ValueError, match="delta"):
        gb.lsi_epsilon(0.0, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="temperature"):
        gb.lsi_rho(-1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        gb.lsi_delta(-0.1, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="n=0"):
        gb.gaussian_mean_temperature_b89(0.1, 1e-3, 0, 1.0)
    with pytest.raises(ValueError, match="radius"):
        gb.gaussian_mean_theorem15_delta(0.1, 1.0, 10, 0.0)
    with pytest.raises(ValueError, match="loss_sensitivity"):
        gb.exponential_mechanism_epsilon(1.0, -1.0)


def grid_hockey_logit_gibbs(eps, beta, n, v):
    """Independent check: delta by trapezoid integration of (p - e^eps q)_+ on a fine grid,
    with the densities normalised on the grid, max over k and both directions."""
    t = np.linspace(-12, 12, 400_001)
    logs = [beta * k * t - beta * n * np.logaddexp(0, t) - 0.5 * t * t / v for k in range(n + 1)]
    dens = []
    for lg in logs:
        w = np.exp(lg - lg.max())
        dens.append(w / np.trapezoid(w, t))
    worst = 0.0
    for k in range(n):
        for p, q in ((dens[k], dens[k + 1]), (dens[k + 1], dens[k])):
            worst = max(worst, np.trapezoid(np.maximum(p - math.exp(eps) * q, 0), t))
    return worst


@pytest.mark.parametrize("beta,n,eps", [(0.3, 4, 0.1), (1.0, 3, 0.5), (0.06, 6, 0.05)])
def test_example17_exact_delta_matches_grid_and_is_below_theorem7(beta, n, eps):
    got = gb.bernoulli_logit_gibbs_delta(eps, beta, n, 1.0)
    assert got == pytest.approx(grid_hockey_logit_gibbs(eps, beta, n, 1.0), rel=1e-6)
    # Theorem 7 with L = 1 (logistic loss), m = 1/v bounds it
    assert got <= gb.lsi_delta(eps, beta, 1.0, 1.0)


def test_example17_exact_temperature():
    b = gb.bernoulli_logit_gibbs_max_temperature(0.1, 1e-3, 3, 1.0)
    assert gb.bernoulli_logit_gibbs_delta(0.1, b, 3, 1.0) <= 1e-3
    assert gb.bernoulli_logit_gibbs_delta(0.1, b * (1 + 1e-4), 3, 1.0) > 1e-3
    assert b > gb.corollary8_temperature(0.1, 1e-3, 1.0, 1.0)

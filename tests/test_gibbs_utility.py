"""Paper 002 App. C as functions: Theorem 16 against the exact Gibbs posterior variance of
Example 17 by quadrature; Theorem 18 / Example 19 against simulation (the Hoeffding assumption
by Monte Carlo, the coverage of the PAC-Bayes bound and of the oracle inequality over many
datasets, with exact risks on a grid); Example 19's temperature against Corollary 8."""
import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from dpjax.accountants.posterior import gibbs as gb
from dpjax.experiments.gibbs import utility as gu


def _logit_gibbs_variance(n, successes, beta, prior_var):
    """Variance of the Example 17 Gibbs posterior by adaptive quadrature around its mode."""
    log_f = lambda t: beta * successes * t - beta * n * np.logaddexp(0.0, t) - 0.5 * t * t / prior_var
    mode = optimize.minimize_scalar(lambda t: -log_f(t), bracket=(-1.0, 1.0)).x
    curv = beta * n * 0.25 + 1 / prior_var
    w = 40.0 / math.sqrt(curv)
    g = lambda t, p: (t - mode) ** p * math.exp(log_f(t) - log_f(mode))
    m = [integrate.quad(g, mode - w, mode + w, args=(p,), points=[mode], epsabs=1e-14, epsrel=1e-12, limit=400)[0] for p in (0, 1, 2)]
    return m[2] / m[0] - (m[1] / m[0]) ** 2


def test_theorem16_limit_matches_the_exact_gibbs_variance_of_example17():
    theta0, beta, v = 0.5, 0.012, 1.0
    limit = gu.bernoulli_logit_gibbs_asymptotic_variance(theta0, beta)
    p0 = 1 / (1 + math.exp(-theta0))
    assert limit == pytest.approx(1 / (beta * p0 * (1 - p0)), rel=1e-14)
    rel = []
    for n in (10**3, 10**4, 10**5):
        var = _logit_gibbs_variance(n, round(n * p0), beta, v)
        rel.append(abs(n * var / limit - 1))
    # converges, at the rate of the prior's and the curvature's O(1/(n beta I0)) corrections
    assert rel[0] > rel[1] > rel[2] and rel[2] < 0.01
    cov = gu.gibbs_bvm_covariance([[p0 * (1 - p0)]], beta, 10**5)
    assert cov[0, 0] * 10**5 == pytest.approx(limit, rel=1e-12)
    # "at least 83 times bigger than the Bayesian case" at beta = 0.012
    assert 83 < gu.gibbs_variance_inflation(0.012) < 84


def test_bvm_covariance_is_the_inverse_scaled_fisher_information():
    fisher = np.array([[2.0, 0.3], [0.3, 1.0]])
    cov = gu.gibbs_bvm_covariance(fisher, 0.5, 40)
    assert np.allclose(cov @ (40 * 0.5 * fisher), np.eye(2))
    with pytest.raises(ValueError, match="positive definite"):
        gu.gibbs_bvm_covariance([[1.0, 2.0], [2.0, 1.0]], 0.5, 10)
    with pytest.raises(ValueError, match="square"):
        gu.gibbs_bvm_covariance(np.ones((2, 3)), 0.5, 10)
    with pytest.raises(ValueError, match="temperature"):
        gu.gibbs_bvm_covariance([[1.0]], 0.0, 10)


# --- a 1-D hinge-loss problem with exact risks ------------------------------------------------
NOISE = 0.2  # z ~ U[-1, 1] (r = 1), y = sign(z), flipped with probability NOISE


def _risk(theta):
    """R(theta) = E max(0, 1 - y theta z) exactly: with u = |z| ~ U[0, 1],
    E max(0, 1 - a u) = 1 - a/2 (a <= 1), 1/(2a) (a > 1); E (1 + a u) = 1 + a/2."""
    a = np.abs(theta)
    hinge_down = np.where(a <= 1, 1 - a / 2, 1 / (2 * np.maximum(a, 1e-300)))
    hinge_up = 1 + a / 2
    right = (1 - NOISE) * hinge_down + NOISE * hinge_up  # the sign of theta agrees with the clean label
    return np.where(theta >= 0, right, (1 - NOISE) * hinge_up + NOISE * hinge_down)


def _data(rng, n):
    z = rng.uniform(-1, 1, n)
    y = np.sign(z) * np.where(rng.uniform(size=n) < NOISE, -1, 1)
    return z, y


def test_exact_risk_against_monte_carlo():
    rng = np.random.default_rng(0)
    z, y = _data(rng, 400_000)
    for theta in (-2.0, -0.4, 0.0, 0.7, 3.0):
        mc = np.maximum(0, 1 - y * theta * z)
        assert _risk(np.array(theta)) == pytest.approx(mc.mean(), abs=5 * mc.std() / math.sqrt(mc.size))


def test_hoeffding_assumption_by_monte_carlo():
    """(C.5) with Example 19's f: E_pi E_P^n exp(+-beta (R - R_n)) <= exp(f(beta, n)), the average
    over prior draws and datasets estimated with its standard error."""
    rng = np.random.default_rng(1)
    n, lam = 20, 1.0
    for beta in (5.0, 20.0, 35.0):
        f = gu.hinge_hoeffding_f(beta, n, 1.0, lam)
        theta = rng.normal(0, 1 / math.sqrt(n * lam), 40_000)
        z = rng.uniform(-1, 1, (theta.size, n))
        y = np.sign(z) * np.where(rng.uniform(size=z.shape) < NOISE, -1, 1)
        gap = _risk(theta) - np.maximum(0, 1 - y * theta[:, None] * z).mean(axis=1)
        for sign in (1, -1):
            moment = np.exp(sign * beta * gap)
            upper = moment.mean() + 5 * moment.std() / math.sqrt(moment.size)
            assert upper <= math.exp(f), (beta, sign, upper, math.exp(f))


def test_pac_bayes_bounds_cover_the_true_risk():
    """Theorem 18 over 300 datasets: (C.6) may fail with probability <= alpha and (C.7) with
    <= 2 alpha; the number of failures is compared with the binomial tail at 1e-4."""
    rng = np.random.default_rng(2)
    n, lam, beta, alpha = 50, 0.02, 10.0, 0.05  # beta multiplies the average risk (Alquier's reading)
    f = gu.hinge_hoeffding_f(beta, n, 1.0, lam)
    grid = np.linspace(-8, 8, 4001)
    log_prior = stats.norm.logpdf(grid, 0, 1 / math.sqrt(n * lam))
    prior = np.exp(log_prior - log_prior.max())
    prior /= prior.sum()
    risk = _risk(grid)
    # comparator for (C.7): a narrow Gaussian at the risk minimiser
    comp = stats.norm.pdf(grid, grid[np.argmin(risk)], 0.2)
    comp /= comp.sum()
    keep = comp > 0
    comp_kl = float(np.sum(comp[keep] * np.log(comp[keep] / prior[keep])))
    trials, fail6, fail7 = 300, 0, 0
    for _ in range(trials):
        z, y = _data(rng, n)
        emp = np.maximum(0, 1 - y[None, :] * grid[:, None] * z[None, :]).mean(axis=1)
        logg = -beta * emp + np.log(prior)
        g = np.exp(logg - logg.max())
        g /= g.sum()
        keep = g > 0
        kl = float(np.sum(g[keep] * (np.log(g[keep]) - np.log(prior[keep]))))
        true_risk = float(g @ risk)
        fail6 += true_risk > gu.pac_bayes_risk_bound(float(g @ emp), kl, beta, f, alpha)
        fail7 += true_risk > gu.pac_bayes_oracle_bound(float(comp @ risk), comp_kl, beta, f, alpha)
    assert fail6 <= stats.binom.ppf(1 - 1e-4, trials, alpha)
    assert fail7 <= stats.binom.ppf(1 - 1e-4, trials, 2 * alpha)


def test_example19_temperature():
    n, r, lam = 200, 2.0, 0.5
    dom = gu.hinge_temperature_domain(n, r, lam)
    assert dom.f_domain == pytest.approx(2 * n * math.sqrt(lam) / r) and dom.printed == pytest.approx(2 * math.sqrt(lam * n) / r)
    assert dom.f_domain / dom.printed == pytest.approx(math.sqrt(n))
    # f is finite below its domain, infinite (an error) at it
    assert math.isfinite(gu.hinge_hoeffding_f(0.999 * dom.f_domain, n, r, lam))
    with pytest.raises(ValueError, match="finite"):
        gu.hinge_hoeffding_f(dom.f_domain, n, r, lam)
    # printed condition: Corollary 8 with L = r, m = n lambda (when below the cap)
    beta = gu.hinge_private_temperature(0.1, 1e-3, n, r, lam)
    assert beta == pytest.approx(gb.corollary8_temperature(0.1, 1e-3, r, n * lam), rel=1e-14)
    assert beta == pytest.approx(math.sqrt(lam * n) / r * 0.1 / (2 * math.sqrt(1 + 2 * math.log(1e3))), rel=1e-14)
    # the LSI route allows more; the consistent reading caps at 2 sqrt(lambda)/r
    assert gu.hinge_private_temperature(0.1, 1e-3, n, r, lam, route="lsi") > beta
    assert gu.hinge_private_temperature(0.9, 1e-3, 10**6, r, 10.0, reading="consistent") == pytest.approx(2 * math.sqrt(10.0) / r)
    with pytest.raises(ValueError, match="epsilon"):
        gu.hinge_private_temperature(5.0, 1e-3, n, r, lam)  # beyond Corollary 8's range
    with pytest.raises(ValueError, match="reading"):
        gu.hinge_private_temperature(0.1, 1e-3, n, r, lam, reading="x")


def test_pac_bayes_bad_input():
    with pytest.raises(ValueError, match="alpha"):
        gu.pac_bayes_risk_bound(0.1, 0.2, 1.0, 0.1, 1.0)
    with pytest.raises(ValueError, match="kl_to_prior"):
        gu.pac_bayes_risk_bound(0.1, -0.2, 1.0, 0.1, 0.1)
    with pytest.raises(ValueError, match="hoeffding_f"):
        gu.pac_bayes_oracle_bound(0.1, 0.2, 1.0, float("inf"), 0.1)
    with pytest.raises(ValueError, match="theta0"):
        gu.bernoulli_logit_gibbs_asymptotic_variance(float("nan"), 0.1)

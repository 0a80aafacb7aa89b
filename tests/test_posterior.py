"""Gaussian-posterior accountant and paper 000's Lemma 4.2/4.3, against quadrature, Monte
Carlo with a stated error, extended precision, and the bound >= exact."""
import math

import mpmath
import numpy as np
import pytest
from scipy import integrate, stats

from dpjax.accountants.posterior import gaussian as po

FIG1 = dict(alpha=0.1, beta=1.0, x_high=1.8, x_low=0.9, c=1165165.0)
FIG1_N = 1149019


def test_blr_posterior_matches_direct_inverse_and_quadrature():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 3))
    y = x @ np.array([0.5, -1.0, 2.0]) + rng.normal(size=30)
    mean, cov = po.bayesian_linear_regression_posterior(x, y, 0.7, 2.0)
    s = np.linalg.inv(0.7 * np.eye(3) + 2.0 * x.T @ x)
    np.testing.assert_allclose(cov, s, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(mean, 2.0 * s @ x.T @ y, rtol=1e-12)
    # d = 1 vs quadrature of prior x likelihood
    x1, y1 = x[:, 0], y
    m1, c1 = po.bayesian_linear_regression_posterior(x1, y1, 0.7, 2.0)
    log_f = lambda w: -0.5 * 0.7 * w * w - 0.5 * 2.0 * np.sum((y1 - w * x1) ** 2)
    w_hat = float(m1[0])
    shift = log_f(w_hat)
    z, _ = integrate.quad(lambda w: math.exp(log_f(w) - shift), w_hat - 5, w_hat + 5, epsrel=1e-12)
    mu, _ = integrate.quad(lambda w: w * math.exp(log_f(w) - shift), w_hat - 5, w_hat + 5, epsrel=1e-12)
    m2, _ = integrate.quad(lambda w: (w - w_hat) ** 2 * math.exp(log_f(w) - shift), w_hat - 5, w_hat + 5, epsrel=1e-12)
    assert m1[0] == pytest.approx(mu / z, rel=1e-9)
    assert c1[0, 0] == pytest.approx(m2 / z - (mu / z - w_hat) ** 2, rel=1e-8)


def hockey_by_quadrature(m1, s1, m2, s2, eps):
    f = lambda t: max(stats.norm.pdf(t, m1, s1) - math.exp(eps) * stats.norm.pdf(t, m2, s2), 0.0)
    lo, hi = min(m1 - 12 * s1, m2 - 12 * s2), max(m1 + 12 * s1, m2 + 12 * s2)
    val, _ = integrate.quad(f, lo, hi, limit=400, epsabs=1e-14, points=sorted([m1, m2]))
    return val


@pytest.mark.parametrize("m1,s1,m2,s2", [(0.0, 1.0, 0.5, 1.0), (0.0, 1.0, 0.3, 1.2), (1.0, 0.5, 0.0, 0.45)])
def test_scalar_epsilon_is_tight_by_quadrature(m1, s1, m2, s2):
    delta = 1e-3
    res = po.gaussian_posterior_epsilon(m1, s1**2, m2, s2**2, delta)
    assert res.exact
    both = max(hockey_by_quadrature(m1, s1, m2, s2, res.epsilon), hockey_by_quadrature(m2, s2, m1, s1, res.epsilon))
    assert both == pytest.approx(delta, rel=1e-5)
    slightly_less = res.epsilon * (1 - 1e-3)
    assert max(hockey_by_quadrature(m1, s1, m2, s2, slightly_less), hockey_by_quadrature(m2, s2, m1, s1, slightly_less)) > delta


def privacy_loss_mc_delta(m1, c1, m2, c2, eps, draws, seed):
    """delta(eps) = E_P[(1 - e^(eps - L))_+], L = log p - log q, by Monte Carlo; returns (mean, se)."""
    rng = np.random.default_rng(seed)
    x = rng.multivariate_normal(m1, c1, size=draws)
    loss = stats.multivariate_normal.logpdf(x, m1, c1) - stats.multivariate_normal.logpdf(x, m2, c2)
    v = np.maximum(1 - np.exp(eps - loss), 0)
    return v.mean(), v.std(ddof=1) / math.sqrt(draws)


def test_equal_covariance_d_dim_reduces_to_mahalanobis_gap():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 3))
    cov = a @ a.T + 0.5 * np.eye(3)
    m1, m2 = np.zeros(3), np.array([0.4, -0.3, 0.2])
    res = po.gaussian_posterior_epsilon(m1, cov, m2, cov, 1e-2)
    assert res.exact
    est, se = privacy_loss_mc_delta(m1, cov, m2, cov, res.epsilon, 400_000, 2)
    assert abs(est - 1e-2) < 5 * se  # 5 sigma
    # RDP: a mu^2/2 with mu the Mahalanobis gap
    mu2 = float((m2 - m1) @ np.linalg.solve(cov, m2 - m1))
    curve = po.gaussian_posterior_curve(m1, cov, m2, cov, [2.0, 10.0])
    np.testing.assert_allclose(curve.rdp, [mu2, 5 * mu2], rtol=1e-12)


def test_unequal_covariance_d_dim_is_an_upper_bound():
    cov1 = np.diag([1.0, 0.5])
    cov2 = np.diag([1.2, 0.45])
    m1, m2 = np.zeros(2), np.array([0.3, 0.1])
    res = po.gaussian_posterior_epsilon(m1, cov1, m2, cov2, 1e-3)
    assert not res.exact
    for (a, ca, b, cb) in ((m1, cov1, m2, cov2), (m2, cov2, m1, cov1)):
        est, se = privacy_loss_mc_delta(a, ca, b, cb, res.epsilon, 400_000, 3)
        assert est <= 1e-3 + 5 * se


def test_rdp_curve_is_max_of_directions_and_infinite_beyond_range():
    # D_a(N(0, 4) || N(0, 1)) is +inf for a s2^2 + (1 - a) s1^2 <= 0, i.e. a >= 4/3
    rdp = po.gaussian_posterior_rdp(0.0, 4.0, 0.0, 1.0, [1.2, 1.5])
    assert np.isfinite(rdp[0]) and rdp[1] == math.inf
    # direct 1-D closed form (NOTES 000's corrected formula), both directions
    def renyi(m1, v1, m2, v2, a):
        vs = a * v2 + (1 - a) * v1
        return 0.5 * math.log(v2 / v1) + math.log(v2 / vs) / (2 * (a - 1)) + a * (m1 - m2) ** 2 / (2 * vs)

    got = po.gaussian_posterior_rdp(0.0, 1.0, 0.5, 1.1, [3.0])[0]
    assert got == pytest.approx(max(renyi(0, 1, 0.5, 1.1, 3.0), renyi(0.5, 1.1, 0, 1, 3.0)), rel=1e-12)


def test_lemma42_threshold_error_cites_the_rule():
    nu = 5.0
    thr = po.sgld_paper_posterior_threshold(nu, 1.0, 1.8, 0.9)
    assert thr == pytest.approx(1 + 10 * 4 * nu)
    with pytest.raises(ValueError, match=r"Lemma 4\.2"):
        po.sgld_paper_posterior_rdp_bound(int(thr), nu, 0.1, 1.0, 1.8, 0.9, 0.1, 1000.0)
    assert po.sgld_paper_posterior_rdp_bound(int(thr) + 1, nu, 0.1, 1.0, 1.8, 0.9, 0.1, 1000.0) > 0
    with pytest.raises(ValueError, match="x_h\\^2 beta"):
        po.sgld_paper_posterior_rdp_bound(10_000, nu, 0.1, 0.5, 1.8, 0.9, 0.1, 1000.0)
    with pytest.raises(ValueError, match="gamma1"):
        po.sgld_paper_posterior_rdp_bound(10_000, nu, 0.1, 1.0, 1.8, 0.9, 0.6, 1000.0)
    with pytest.raises(ValueError, match="delta"):
        po.sgld_paper_posterior_epsilon_bound(10_000, nu, 0.0, 0.1, 1.0, 1.8, 0.9, 0.1, 1000.0)


def test_lemma42_terms_by_hand():
    n, nu, a, b, xh, xl, g, c = 1000, 2.0, 0.5, 1.0, 2.0, 1.0, 0.25, 50.0
    ng = n**g
    k = xh**2 * a + xh**4 * b
    want = (
        xh**2 / (2 * (n - 1) * xl**2)
        + 0.5 * (nu - 1) * nu * xh**2 / ((n - 1) * xl**2 - nu * xh**2)
        + 2 * nu * b * xh**4 / (0.9 * n ** (1 - 2 * g) * xl**2)
        + 2 * nu * b * (xh**2 * b) * k / (0.9 * (xl**2 * b) ** 2) * (c + ng) / n ** (2 - g)
        + nu / 2 * k**2 / (0.9 * xl**6 * b) * (c + ng) ** 2 / n**3
    )
    assert po.sgld_paper_posterior_rdp_bound(n, nu, a, b, xh, xl, g, c) == pytest.approx(want, rel=1e-14)


def exact_pair_mpmath(n, order, alpha, beta, x_high, x_low, c):
    """Lemma 4.1 posteriors of the eq. 7 pair and the corrected Rényi formula, at 60 digits."""
    mpmath.mp.dps = 60
    n, order, alpha, beta, xh, xl, c = (mpmath.mpf(v) for v in (n, order, alpha, beta, x_high, x_low, c))
    p1 = alpha + n * xh**2 * beta
    p2 = alpha + ((n - 1) * xh**2 + xl**2) * beta
    mu1 = beta * n * xh * (c * xh) / p1
    mu2 = beta * ((n - 1) * xh * (c * xh) + xl * (c * xl)) / p2
    v1, v2 = 1 / p1, 1 / p2

    def renyi(ma, va, mb, vb):
        vs = order * vb + (1 - order) * va
        return mpmath.log(mpmath.sqrt(vb / va)) + mpmath.log(vb / vs) / (2 * (order - 1)) + order * (ma - mb) ** 2 / (2 * vs)

    return float(max(renyi(mu1, v1, mu2, v2), renyi(mu2, v2, mu1, v1))), float(mu1 - mu2)


def test_figure1_posterior_bound_and_exact():
    delta = 0.01
    nu = 1 + 2 * math.log(1 / delta) / 1.6  # ln(1/delta)/(nu - 1) = 0.8
    eps1 = po.sgld_paper_posterior_rdp_bound(FIG1_N, nu, gamma1=0.1, **FIG1)
    bound = po.sgld_paper_posterior_epsilon_bound(FIG1_N, nu, delta, gamma1=0.1, **FIG1)
    assert bound == pytest.approx(eps1 + 0.8, rel=1e-14)
    assert bound <= 1.6  # the paper's (1.6, 0.01) claim holds by its own lemmas
    exact = po.sgld_paper_posterior_exact(FIG1_N, nu, delta, **FIG1)
    want_renyi, want_gap = exact_pair_mpmath(FIG1_N, nu, **FIG1)
    (_, _), (_, _), gap = po.sgld_paper_posterior_pair(FIG1_N, **FIG1)
    assert gap == pytest.approx(want_gap, rel=1e-12)
    assert exact.renyi == pytest.approx(want_renyi, rel=1e-9)
    assert exact.renyi <= eps1
    assert exact.epsilon <= bound
    # TV of the pair (~ gap/sd ~ 4e-5) is far below delta = 0.01, so the tight eps is 0
    assert exact.epsilon == 0.0


def test_lemma42_dominates_exact_on_random_domain_pairs():
    rng = np.random.default_rng(4)
    alpha, beta, xh, xl, g = 0.3, 1.0, 2.0, 1.0, 0.3
    for _ in range(60):
        n = int(rng.integers(200, 3000))
        c = float(rng.uniform(1, 1e4))
        nu = float(rng.uniform(1.1, 0.9 * min((n - 1) / (10 * 4 / beta), (n - 1) / 4)))
        if not n > po.sgld_paper_posterior_threshold(nu, beta, xh, xl):
            continue
        x = rng.uniform(xl, xh, size=n)
        y = x * (c + rng.uniform(-1, 1, size=n) * n**g)
        x2, y2 = x.copy(), y.copy()
        x2[-1] = rng.choice([xl, xh])
        y2[-1] = x2[-1] * (c + rng.choice([-1, 1]) * n**g)
        m1, c1 = po.bayesian_linear_regression_posterior(x, y, alpha, beta)
        m2, c2 = po.bayesian_linear_regression_posterior(x2, y2, alpha, beta)
        exact = po.gaussian_posterior_rdp(m1, c1, m2, c2, [nu])[0]
        assert exact <= po.sgld_paper_posterior_rdp_bound(n, nu, alpha, beta, xh, xl, g, c)


def test_lemma42_curve_and_mironov_conversion_is_lemma43():
    orders = [2.0, 4.0, 6.756462732485114]
    curve = po.sgld_paper_posterior_curve(FIG1_N, orders, gamma1=0.1, **FIG1)
    for a, v in zip(orders, curve.rdp):
        assert v == po.sgld_paper_posterior_rdp_bound(FIG1_N, a, gamma1=0.1, **FIG1)
    lemma43 = min(po.sgld_paper_posterior_epsilon_bound(FIG1_N, a, 0.01, gamma1=0.1, **FIG1) for a in orders)
    assert float(curve.epsilon(0.01, conversion="mironov")) == pytest.approx(lemma43, rel=1e-12)
    with pytest.raises(ValueError, match=r"Lemma 4\.2"):
        po.sgld_paper_posterior_curve(300, [2.0, 8.0], gamma1=0.1, **FIG1)

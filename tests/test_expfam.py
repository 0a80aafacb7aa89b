"""Paper 004 exponential-family accountant: closed form vs numerical integration, +inf
handling, worst case vs brute force, calibration re-checked, Dirichlet, GLM bound."""
import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import betaln, gammaln

from dpjax.accountants.posterior import expfam as ef
from dpjax.accountants.mechanisms.gaussian_divergence import gaussian_renyi


def renyi_by_quadrature_beta(a_p, b_p, a_q, b_q, order):
    """D_l by quad of exp(l log p + (1 - l) log q) on (0, 1), in log space: the log integrand is
    shifted by its maximum (found on a fine grid) before exponentiating."""

    def log_f(x):
        lp = stats.beta.logpdf(x, a_p, b_p)
        lq = stats.beta.logpdf(x, a_q, b_q)
        return order * lp + (1 - order) * lq

    grid = np.linspace(1e-9, 1 - 1e-9, 200001)
    vals = log_f(grid)
    i = int(np.argmax(vals))
    shift = vals[i]
    mode = grid[i]
    val, err = integrate.quad(lambda x: math.exp(log_f(x) - shift), 0, 1, points=[mode], limit=500, epsabs=0, epsrel=1e-12)
    return (shift + math.log(val)) / (order - 1)


@pytest.mark.parametrize(
    "a_p,b_p,a_q,b_q",
    [(3.0, 3.0, 2.5, 3.5), (6.0, 112.0, 7.0, 111.0), (7.0, 111.0, 6.0, 112.0), (2.0, 101.0, 1.5, 101.5), (30.0, 50.0, 31.0, 49.0)],
)
@pytest.mark.parametrize("order", [0.5, 1.5, 2.0, 5.0])
def test_beta_renyi_matches_quadrature(a_p, b_p, a_q, b_q, order):
    closed = ef.beta_renyi(a_p, b_p, a_q, b_q, order)
    assert np.isfinite(closed)
    quad = renyi_by_quadrature_beta(a_p, b_p, a_q, b_q, order)
    # quad at epsrel 1e-12 on a smooth unimodal integrand; the C-value cancellation costs
    # ~1e-13 absolute in the closed form.
    assert closed == pytest.approx(quad, rel=1e-7, abs=1e-11)


def test_beta_renyi_order_15_posterior_pair_matches_quadrature():
    # Concentrated-style pair at the experiments' order 15 (finite: 1 + a = 1 + 20 > 15).
    closed = ef.beta_renyi(20.0, 160.0, 21.0, 159.0, 15.0)
    assert closed == pytest.approx(renyi_by_quadrature_beta(20.0, 160.0, 21.0, 159.0, 15.0), rel=1e-7)


def test_generic_formula_equals_beta_specialisation_and_normal_family():
    eta_p, eta_q = ef.beta_natural(3.0, 4.0), ef.beta_natural(4.0, 3.0)
    g = ef.expfam_renyi(ef.beta_log_normaliser, eta_p, eta_q, 2.5, ef.beta_in_domain)
    assert g == pytest.approx(ef.beta_renyi(3.0, 4.0, 4.0, 3.0, 2.5), rel=1e-13)

    # Independent family: N(m, s^2) with T(theta) = (theta, theta^2), eta = (m/s^2, -1/(2 s^2)),
    # C(eta) = -eta1^2/(4 eta2) + log(pi/(-eta2))/2. Compare with the Gaussian closed form.
    def c_normal(eta):
        return -eta[0] ** 2 / (4 * eta[1]) + 0.5 * math.log(math.pi / (-eta[1]))

    def nat(m, s):
        return np.array([m / s**2, -0.5 / s**2])

    for (m1, s1, m2, s2, order) in [(0.0, 1.0, 0.7, 1.3, 3.0), (1.0, 2.0, -1.0, 1.5, 1.7), (0.2, 1.0, 0.0, 1.0, 8.0)]:
        got = ef.expfam_renyi(c_normal, nat(m1, s1), nat(m2, s2), order, lambda e: e[1] < 0)
        want = gaussian_renyi(m1, s1**2, m2, s2**2, order)
        assert got == pytest.approx(want, rel=1e-10)
    # a s2^2 + (1 - a) s1^2 <= 0 -> the mixed natural parameter leaves the space: +inf.
    assert ef.expfam_renyi(c_normal, nat(0.0, 2.0), nat(0.0, 1.0), 2.0, lambda e: e[1] < 0) == math.inf
    assert gaussian_renyi(0.0, 4.0, 0.0, 1.0, 2.0) == math.inf


def test_infinite_orders_and_largest_finite_order():
    # Q one count above P in a: finite iff order < 1 + a_p.
    a_p, b_p = 6.0, 112.0
    sup = ef.beta_pair_max_finite_order(a_p, b_p, a_p + 1, b_p - 1)
    assert sup == 1 + a_p
    assert np.isfinite(ef.beta_renyi(a_p, b_p, a_p + 1, b_p - 1, sup - 1e-6))
    assert ef.beta_renyi(a_p, b_p, a_p + 1, b_p - 1, sup) == math.inf
    assert ef.beta_renyi(a_p, b_p, a_p + 1, b_p - 1, sup + 1.0) == math.inf
    # The other direction stays finite at every order.
    assert ef.beta_pair_max_finite_order(a_p + 1, b_p - 1, a_p, b_p) == pytest.approx(1 + (b_p - 1))
    # Where the closed form says +inf the integral really diverges: the integrand near 0
    # behaves like x^(l (a_p - 1) + (1 - l) a_q - 1) ~ x^(a_mixed - 1), not integrable at a_mixed = 0.
    a_mixed = sup * a_p + (1 - sup) * (a_p + 1)
    assert a_mixed == pytest.approx(0.0, abs=1e-12)
    # Just below the limit the quadrature value is finite, large, and agrees.
    order = sup - 0.5
    assert ef.beta_renyi(a_p, b_p, a_p + 1, b_p - 1, order) == pytest.approx(
        renyi_by_quadrature_beta(a_p, b_p, a_p + 1, b_p - 1, order), rel=1e-6
    )


def brute_force_worst(prior_a, prior_b, n, order, r=1.0, m=1.0):
    best = -1.0
    for k in range(n + 1):
        a_p, b_p = prior_a / m + r * k, prior_b / m + r * (n - k)
        for kq in (k - 1, k + 1):
            if 0 <= kq <= n:
                a_q, b_q = prior_a / m + r * kq, prior_b / m + r * (n - kq)
                best = max(best, ef.beta_renyi(a_p, b_p, a_q, b_q, order))
    return best


@pytest.mark.parametrize("prior", [(6.0, 12.0), (1.0, 1.0), (2.0, 9.0)])
@pytest.mark.parametrize("order,r,m", [(15.0, 0.05, 1.0), (15.0, 1.0, 0.03), (3.0, 1.0, 1.0), (1.5, 0.5, 0.7), (15.0, 1.0, 1.0)])
def test_worst_case_at_vertices_matches_brute_force(prior, order, r, m):
    mech = ef.BetaBernoulliMechanism(prior[0], prior[1], 40, diffuse_r=r, concentrate_m=m)
    got = ef.beta_bernoulli_worst_case(mech, order)
    want = brute_force_worst(prior[0], prior[1], 40, order, r, m)
    if math.isinf(want):
        assert math.isinf(got.divergence)
    else:
        assert got.divergence == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("prior", [(6.0, 12.0), (1.0, 1.0)])
def test_max_order_is_one_plus_min(prior):
    mech = ef.BetaBernoulliMechanism(prior[0], prior[1], 100)
    sup = ef.beta_bernoulli_max_order(mech)
    assert sup == 1 + min(prior)
    assert np.isfinite(brute_force_worst(prior[0], prior[1], 100, sup - 1e-3))
    assert math.isinf(brute_force_worst(prior[0], prior[1], 100, sup + 1e-3))
    # the paper's lambda* = 2 for the uniform prior (1, 2) in natural parameters
    if prior == (1.0, 1.0):
        assert sup == 2.0


@pytest.mark.parametrize("prior", [(6.0, 12.0), (1.0, 1.0)])
@pytest.mark.parametrize("target", [0.01, 0.1, 1.0])
def test_calibration_by_bisection_rechecked_by_brute_force(prior, target):
    n, order = 100, 15.0
    r = ef.calibrate_diffuse(prior[0], prior[1], n, order, target)
    assert 0 < r < 1
    assert brute_force_worst(prior[0], prior[1], n, order, r=r) <= target
    assert brute_force_worst(prior[0], prior[1], n, order, r=r * (1 + 1e-8)) > target
    m = ef.calibrate_concentrated(prior[0], prior[1], n, order, target)
    assert 0 < m < 1
    assert brute_force_worst(prior[0], prior[1], n, order, m=m) <= target
    assert brute_force_worst(prior[0], prior[1], n, order, m=m * (1 + 1e-8)) > target


def test_calibration_returns_one_when_direct_already_meets_target():
    # a strong prior Beta(500, 500) with n = 10 at order 2: Direct is well within eps = 1.
    mech = ef.BetaBernoulliMechanism(500.0, 500.0, 10)
    assert ef.beta_bernoulli_worst_case(mech, 2.0).divergence < 1.0
    assert ef.calibrate_diffuse(500.0, 500.0, 10, 2.0, 1.0) == 1.0
    assert ef.calibrate_concentrated(500.0, 500.0, 10, 2.0, 1.0) == 1.0


def test_dirichlet_two_categories_equals_beta():
    for order in (1.5, 4.0):
        got = ef.dirichlet_renyi([3.0, 5.0], [4.0, 4.0], order)
        assert got == pytest.approx(ef.beta_renyi(3.0, 5.0, 4.0, 4.0, order), rel=1e-12)
    c = ef.dirichlet_log_normaliser(ef.dirichlet_natural([2.0, 3.0, 4.0]))
    assert c == pytest.approx(gammaln(2) + gammaln(3) + gammaln(4) - gammaln(9), rel=1e-14)


def test_dirichlet_three_categories_matches_2d_integration():
    ap, aq, order = np.array([2.0, 3.0, 4.0]), np.array([2.5, 3.0, 3.5]), 3.0

    def log_f(y, x):
        z = 1 - x - y
        if z <= 0:
            return -np.inf
        pt = np.array([x, y, z])
        return order * stats.dirichlet.logpdf(pt, ap) + (1 - order) * stats.dirichlet.logpdf(pt, aq)

    val, _ = integrate.dblquad(lambda y, x: math.exp(log_f(y, x)), 0, 1, 0, lambda x: 1 - x, epsabs=0, epsrel=1e-9)
    want = math.log(val) / (order - 1)
    assert ef.dirichlet_renyi(ap, aq, order) == pytest.approx(want, rel=1e-6)
    # outside: mixed alpha_3 = 3 * 4 - 2 * 6 = 0 -> +inf
    assert ef.dirichlet_renyi([2.0, 3.0, 4.0], [2.0, 1.0, 6.0], 3.0) == math.inf


def test_dirichlet_worst_case_vertices_match_brute_force():
    alpha0, n, order = np.array([1.5, 2.0, 3.0]), 5, 2.0
    best = -1.0
    for counts in itertools.product(range(n + 1), repeat=3):
        if sum(counts) != n:
            continue
        c = np.array(counts, float)
        for j, i in itertools.permutations(range(3), 2):
            if c[j] < 1:
                continue
            q = c.copy()
            q[j] -= 1
            q[i] += 1
            best = max(best, ef.dirichlet_renyi(alpha0 + c, alpha0 + q, order))
    got = ef.dirichlet_worst_case(alpha0, n, order)
    assert got.divergence == pytest.approx(best, rel=1e-12)


def test_glm_bound_dominates_exact_logistic_divergence():
    # 1-D logistic regression, |x| = 1 so the loss is 1-Lipschitz; prior N(0, 1/m); one label flipped.
    m, rho, n, order = 1.0, 1.0, 5, 3.0

    def log_post_unnorm(w, labels):
        z = w  # x = 1
        # log-likelihood of y in {-1, 1}: -log(1 + exp(-y z))
        return -rho * sum(np.logaddexp(0, -y * z) for y in labels) - 0.5 * m * w * w

    d1 = [1] * n
    d2 = [1] * (n - 1) + [-1]
    grid_lim = 30

    def logz(labels):
        val, _ = integrate.quad(lambda w: math.exp(log_post_unnorm(w, labels)), -grid_lim, grid_lim, limit=200)
        return math.log(val)

    z1, z2 = logz(d1), logz(d2)
    integrand = lambda w: math.exp(order * (log_post_unnorm(w, d1) - z1) + (1 - order) * (log_post_unnorm(w, d2) - z2))
    val, _ = integrate.quad(integrand, -grid_lim, grid_lim, limit=200)
    exact = math.log(val) / (order - 1)
    bound = float(ef.glm_tempered_posterior_rdp([order], rho, 1.0, m)[0])
    assert 0 < exact <= bound
    curve = ef.glm_tempered_posterior_curve([order], rho, 1.0, m)
    assert curve.rdp[0] == pytest.approx(2 * rho**2 * order / m)


def test_errors_name_the_rule():
    with pytest.raises(ValueError, match="order"):
        ef.beta_renyi(1.0, 1.0, 2.0, 2.0, 1.0)
    with pytest.raises(ValueError, match=r"a_p=-1 violates a_p > 0"):
        ef.beta_renyi(-1.0, 1.0, 2.0, 2.0, 2.0)
    with pytest.raises(ValueError, match="eta_p"):
        ef.expfam_renyi(ef.beta_log_normaliser, [2.0, 1.0], [1.0, 2.0], 2.0, ef.beta_in_domain)
    with pytest.raises(ValueError, match="n=0"):
        ef.beta_bernoulli_worst_case(ef.BetaBernoulliMechanism(1.0, 1.0, 0), 2.0)
    with pytest.raises(ValueError, match="target_epsilon"):
        ef.calibrate_diffuse(1.0, 1.0, 10, 15.0, 0.0)
    with pytest.raises(ValueError, match="successes"):
        ef.beta_bernoulli_posterior(ef.BetaBernoulliMechanism(1.0, 1.0, 10), 11)
    with pytest.raises(ValueError, match="order >= 1"):
        ef.glm_tempered_posterior_rdp([0.5], 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="temperature"):
        ef.glm_tempered_posterior_rdp([2.0], -1.0, 1.0, 1.0)

"""Sampling checks of ``sgld-interim`` (paper 000): coupled chains and Algorithm 1 (Propose Test Sample).

Independent references: the closed-form laws of cyclic SGLD (moments, 5 sigma), a literal
step-by-step cyclic-SGLD simulation (two-sample KS), a set-based transcription of Algorithm 1's
lines with fixed Laplace draws, scipy quadrature of the Gaussian hockey-stick divergence, and
Clopper–Pearson/binomial error for null rates.
"""
import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpjax.accountants.samplers import cyclic_sgld as cs
from dpjax.experiments.sgld_interim import monte_carlo as mc

FIVE_SIGMA = 5.0


# ---------------------------------------------------------------------------------------------
# coupled chains on the eq. 7 pair
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_mc():
    # n = 20, c = 200: the exact eps(0.01) is 1.6, 7.4, 24 at epochs 1, 3, 12 (interim peak ~ epoch 9)
    return mc.monte_carlo(20, alpha=0.1, beta=1.0, x_high=1.8, c=200.0, epochs=[3, 1, 12], delta=0.01, num_pairs=3000, seed=0, keep_samples=True)


def test_monte_carlo_structure(tiny_mc):
    r = tiny_mc
    for key in ("n", "epochs", "exact_tight_epsilon", "lower_bound", "lower_bound_ceiling", "estimate",
                "estimate_interval", "num_pairs", "num_nonfinite", "all_lower_bounds_below_exact"):
        assert key in r
    np.testing.assert_array_equal(r["epochs"], [1, 3, 12])
    assert r["n"] == 20 and r["num_pairs"] == 3000 and r["num_nonfinite"] == 0
    assert r["lower_bound"].shape == r["exact_tight_epsilon"].shape == r["estimate"].shape == (3,)
    assert r["estimate_interval"].shape == (3, 2)
    assert np.all(r["lower_bound"] <= r["lower_bound_ceiling"])
    # exact values recomputed directly from the closed-form laws
    prob = cs.CyclicSGLDProblem(n=20, alpha=0.1, beta=1.0, x_high=1.8, x_low=0.9, c=200.0)
    np.testing.assert_allclose(r["exact_tight_epsilon"], [cs.epoch_end_epsilon(prob, e, 0.01) for e in (1, 3, 12)], rtol=1e-6)


def test_monte_carlo_lower_bounds_below_exact(tiny_mc):
    # each bound is below the truth with probability >= 95%; fixed seed, so deterministic
    assert tiny_mc["all_lower_bounds_below_exact"]
    assert np.all(tiny_mc["lower_bound"] <= tiny_mc["exact_tight_epsilon"])
    # power: at epoch 3 the exact eps is 7.4; 3000 pairs must certify something
    assert tiny_mc["lower_bound"][1] > 0.5


def test_figure1_c_ratio():
    assert mc.figure1_c(1149019) == pytest.approx(1165165.0, rel=1e-15)


def test_coupled_chains_match_closed_form_moments(tiny_mc):
    """Chain positions vs the closed-form laws (D: Gaussian; D': n-component mixture), 5 sigma."""
    problem = cs.CyclicSGLDProblem(n=20, alpha=0.1, beta=1.0, x_high=1.8, x_low=0.9, c=200.0)
    pos_p, pos_q = tiny_mc["samples"]
    K = pos_p.shape[1]
    for i, e in enumerate(tiny_mc["epochs"]):
        law = cs.epoch_law(problem, int(e))
        p, q = pos_p[i], pos_q[i]
        off, var = law.positions()
        for samples, mean, variance in ((p, law.mean, law.variance), (q, law.mean + off.mean(), var.mean() + off.var())):
            assert abs(samples.mean() - mean) < FIVE_SIGMA * math.sqrt(variance / K)
        # Gaussian sample variance: sd(s^2) = sigma^2 sqrt(2/(K-1))
        assert abs(p.var(ddof=1) - law.variance) < FIVE_SIGMA * law.variance * math.sqrt(2 / (K - 1))


def test_monte_carlo_epochs_end_at_the_exact_peak():
    ep = mc.monte_carlo_epochs(20, alpha=0.1, beta=1.0, x_high=1.8, c=200.0, delta=0.01, count=3, max_epochs=16)
    problem = cs.CyclicSGLDProblem(n=20, alpha=0.1, beta=1.0, x_high=1.8, x_low=0.9, c=200.0)
    curve = [cs.epoch_end_epsilon(problem, e, 0.01) for e in range(1, 17)]
    assert ep[-1] == int(np.argmax(curve)) + 1 and len(ep) == 3 and ep == sorted(ep)


def test_monte_carlo_rejects_bad_epochs():
    with pytest.raises(ValueError, match="epochs"):
        mc.monte_carlo(10, alpha=0.1, beta=1.0, x_high=1.8, epochs=[0, 2], delta=0.01, num_pairs=10, seed=0)
    with pytest.raises(ValueError, match="epochs"):
        mc.monte_carlo(10, alpha=0.1, beta=1.0, x_high=1.8, epochs=[2, 2], delta=0.01, num_pairs=10, seed=0)


# ---------------------------------------------------------------------------------------------
# Algorithm 1, line by line
# ---------------------------------------------------------------------------------------------
def _algorithm1_by_hand(x, y, p: mc.PTSParameters, l1, l2, l3, l4):
    """Algorithm 1 transcribed with Python sets, one run (the reference for the vectorised code)."""
    xs = [min(max(xi, p.xl), p.x_high) for xi in x]
    ys = [max(yi, 0.0) for yi in y]
    D = list(zip(xs, ys))
    L = math.log(1 / (2 * p.delta)) / p.epsilon
    n1c = len(D) - L + l1 / p.epsilon
    Vset = [(a, b) for a, b in D if n1c > 0 and b / a <= n1c**p.rho1]
    n2 = len(Vset) - L + l2 / p.epsilon
    out = dict(n1_check=n1c, v_size=len(Vset), n2=n2)
    if n2 <= 1:
        return out | dict(passed=False)
    m = sum(a * b for a, b in Vset) / sum(a * a for a, _ in Vset) if Vset else 0.0
    scale = (1 / p.epsilon) * n1c**p.rho1 * (2 * (n2 - 1) * p.x_high**2 * p.xl**2 + p.x_high**4) / (n2 * (n2 - 1) * p.xl**4)
    m_check = m + scale * l3
    W = [(a, b) for a, b in Vset if abs(b / a - m_check) <= n2**p.rho2]
    n_w = len(W) - L + l4 / p.epsilon
    nu = 2 * math.log(1 / p.delta) / p.epsilon + 1
    r2 = (p.x_high / p.xl) ** 2
    n_min = max(1 + r2 * 8 / p.epsilon, 1 + nu * r2 * (1 + 8 * (nu - 1) / p.epsilon), 1 + r2 * 10 * nu / p.beta, 1 + nu * r2, n2 ** (p.rho2 / p.gamma1))
    out |= dict(m=m, m_check=m_check, w_size=len(W), n_w=n_w, n_min=n_min, passed=bool(W) and n_w >= n_min)
    if out["passed"]:
        sxx, sxy = sum(a * a for a, _ in W), sum(a * b for a, b in W)
        out |= dict(mu=p.beta * sxy / (p.alpha + p.beta * sxx), sd=1 / math.sqrt(p.alpha + p.beta * sxx))
    return out


@pytest.fixture(scope="module")
def messy_dataset():
    rng = np.random.default_rng(7)
    n = 120
    x = rng.uniform(0.2, 1.4, n)  # some below x_l = 0.5, some above x_h = 1: clipped
    y = x * (30.0 + rng.normal(0, 2, n))
    y[:3] = -5.0  # clipped to 0 (ratio 0): in V, outside W
    y[3:6] = x[3:6] * 1e4  # ratios far above n1_check^rho1 ~ 400: outside V
    y[6:10] = x[6:10] * 60.0  # in V, outside W
    return x, y


# (l1, l2, l3, l4), Laplace(1) draws scaled by the algorithm, chosen to visit each branch:
# pass; m-check pushed far off (W empty); n_W below n_min; n2 <= 1
FIXED_NOISE = np.array([[0.3, -0.2, 0.15, 0.4], [0.0, 0.1, 80.0, 0.0], [-0.5, 0.2, 0.0, -2000.0], [0.0, -4800.0, 0.0, 0.0]])


def test_algorithm1_matches_hand_computation(messy_dataset):
    x, y = messy_dataset
    p = mc.PTSParameters(epsilon=40.0, delta=0.05)
    noise = {k: FIXED_NOISE[:, i] for i, k in enumerate(("l1", "l2", "l3", "l4"))}
    f = mc.propose_test_filter(x, y, p, noise)
    mu, sd = mc.posterior_moments(p, f.w_sum_xx, f.w_sum_xy)
    passed = []
    for i, (l1, l2, l3, l4) in enumerate(FIXED_NOISE):
        ref = _algorithm1_by_hand(x, y, p, l1, l2, l3, l4)
        passed.append(ref["passed"])
        assert f.passed[i] == ref["passed"]
        for key in ("n1_check", "v_size", "n2", "m", "m_check", "w_size", "n_w", "n_min"):
            if key in ref:
                assert getattr(f, key)[i] == pytest.approx(ref[key], rel=1e-12, abs=1e-12), (i, key)
        if ref["passed"]:
            assert mu[i] == pytest.approx(ref["mu"], rel=1e-12) and sd[i] == pytest.approx(ref["sd"], rel=1e-12)
    assert passed == [True, False, False, False]  # every branch visited
    assert 0 < f.w_size[0] < f.v_size[0] < len(x)  # the filter really removed records


def test_eq8_pair_filter_identical_on_d3_d4():
    """All ratios equal n1^rho3 on D3 and D4, so the same noise gives the same filter outcome."""
    p = mc.PTSParameters(epsilon=1.0, delta=0.01)
    (x3, y3), (x4, y4) = mc.eq8_pair(12000, p)
    noise = mc.standard_laplace_noise(np.random.default_rng(0), 5000)
    f3, f4 = mc.propose_test_filter(x3, y3, p, noise), mc.propose_test_filter(x4, y4, p, noise)
    np.testing.assert_array_equal(f3.passed, f4.passed)
    np.testing.assert_array_equal(f3.w_size, f4.w_size)
    assert set(np.unique(f3.w_size[f3.passed])) == {12000}
    assert 0.2 < f3.passed.mean() < 0.9  # both outcomes occur at this size


def test_eq26_as_printed_is_out_of_reach():
    p = mc.PTSParameters(epsilon=1.0, delta=0.01, n_min_rule="eq26")
    nu = 2 * math.log(100) + 1
    # third term of n_b1: (16 nu beta x_h^4/(0.9 eps x_l^2))^(1/(1 - 2 gamma1)), exponent 50
    log10_term = 50 * math.log10(16 * nu * 3 / (0.9 * 0.25))
    assert log10_term > 100
    terms = mc.n_min_terms(p, 47000.0, 11000.0)
    assert math.log10(terms["b1_3"]) == pytest.approx(log10_term, rel=1e-12)
    (x3, y3), _ = mc.eq8_pair(12000, p)
    f = mc.propose_test_filter(x3, y3, p, mc.standard_laplace_noise(np.random.default_rng(1), 2000))
    assert not f.passed.any()


def test_pts_parameter_errors():
    with pytest.raises(ValueError, match="rho1"):
        mc.PTSParameters(epsilon=1.0, delta=0.01, rho1=1.6)
    with pytest.raises(ValueError, match=r"beta=1.*3/x_h\^2"):
        mc.PTSParameters(epsilon=1.0, delta=0.01, beta=1.0)
    with pytest.raises(ValueError, match="gamma1"):
        mc.PTSParameters(epsilon=1.0, delta=0.01, gamma1=0.4)
    with pytest.raises(ValueError, match="n_min_rule"):
        mc.PTSParameters(epsilon=1.0, delta=0.01, n_min_rule="none")
    with pytest.raises(ValueError, match="delta"):
        mc.PTSParameters(epsilon=1.0, delta=0.6)
    with pytest.raises(ValueError, match="n1=1"):
        mc.eq8_pair(1, mc.PTSParameters(epsilon=1.0, delta=0.01))
    with pytest.raises(ValueError, match="x_low=0.3"):
        mc.sgld_problem(100, mc.PTSParameters(epsilon=1.0, delta=0.01, x_low=0.3))
    with pytest.raises(ValueError, match="params has epsilon"):
        mc.propose_test_sample(n1=100, epsilon=2.0, delta=0.01, seed=0, num_runs=10, sgld=False, params=mc.PTSParameters(epsilon=1.0, delta=0.01))


# ---------------------------------------------------------------------------------------------
# line 19 replaced by cyclic SGLD: exact-law draws vs a literal simulation
# ---------------------------------------------------------------------------------------------
def _simulate_cyclic_sgld(n1, p: mc.PTSParameters, epochs, runs, odd, rng):
    """Welling–Teh cyclic SGLD step by step, b = 1, each run its own random order, theta_0 from the prior."""
    c = n1**p.rho3
    eta = 1.0 / (p.alpha + n1 * p.x_high**2 * p.beta) ** 2
    x = np.full((runs, n1), p.x_high)
    if odd:
        x[np.arange(runs), rng.integers(0, n1, runs)] = p.xl  # the odd record's place in each order
    theta = rng.standard_normal(runs) / math.sqrt(p.alpha)
    for _ in range(epochs):
        for i in range(n1):
            xi = x[:, i]
            grad = -p.alpha * theta + n1 * p.beta * xi * (c * xi - theta * xi)
            theta = theta + 0.5 * eta * grad + math.sqrt(eta) * rng.standard_normal(runs)
    return theta


@pytest.mark.parametrize("odd", [False, True])
def test_sgld_exact_law_draws_match_simulation(odd):
    p = mc.PTSParameters(epsilon=1.0, delta=0.01)
    n1, epochs, runs = 12, 4, 20000
    law = cs.epoch_law(mc.sgld_problem(n1, p), epochs)
    drawn = mc.sample_sgld_iterate(law, odd=odd, rng=np.random.default_rng(11), size=runs)
    simulated = _simulate_cyclic_sgld(n1, p, epochs, runs, odd, np.random.default_rng(12))
    # two-sample KS at level 1e-3 (fixed seeds: deterministic)
    assert stats.ks_2samp(drawn, simulated).pvalue > 1e-3
    # power: the same test tells D3's law from D4's (exact eps(0.01) = 1.6 here)
    other = _simulate_cyclic_sgld(n1, p, epochs, runs, not odd, np.random.default_rng(13))
    assert stats.ks_2samp(drawn, other).pvalue < 1e-6


# ---------------------------------------------------------------------------------------------
# the two variants' privacy
# ---------------------------------------------------------------------------------------------
def _gauss_hockey(m1, s1, m2, s2, eps):
    """int max(0, N(m1,s1^2) - e^eps N(m2,s2^2)) by quadrature."""
    f = lambda t: max(0.0, stats.norm.pdf(t, m1, s1) - math.exp(eps) * stats.norm.pdf(t, m2, s2))
    lo, hi = min(m1, m2) - 12 * max(s1, s2), max(m1, m2) + 12 * max(s1, s2)
    return integrate.quad(f, lo, hi, points=[m1, m2], limit=400, epsabs=1e-13)[0]


def test_null_adjusted_epsilon_matches_quadrature():
    """eps_M(delta) = eps_L(delta/(1 - p_null)): check delta_M(eps_M) = delta by quadrature."""
    p_null, delta = 0.4, 0.01
    m, s1, s2 = 1.3, 1.0, 1.1
    eps = mc._null_adjusted(lambda d: mc._gaussian_pair_epsilon(m, s1, s2, d), delta, p_null)
    assert eps > 0
    d_both = max(_gauss_hockey(0.0, s1, m, s2, eps), _gauss_hockey(m, s2, 0.0, s1, eps))
    assert (1 - p_null) * d_both == pytest.approx(delta, rel=1e-5)
    assert mc._null_adjusted(lambda d: 1.0, 0.7, 0.5) == 0.0  # delta/(1 - p_null) >= 1: nothing to pay


@pytest.fixture(scope="module")
def pts_results():
    # eq. 27 parameters at n1 = 11586 > eq. 27's lower limit 11585.2; epsilon = 1, delta = 0.01
    kw = dict(n1=11586, epsilon=1.0, delta=0.01, seed=0, num_runs=20000, num_filter_runs=200_000)
    return mc.propose_test_sample(sgld=False, **kw), mc.propose_test_sample(sgld=True, **kw)


def test_pts_structure_and_null_rates(pts_results):
    for r in pts_results:
        assert r["claimed_guarantee"] == (5.0, 0.02)
        assert r["n1"] > r["n1_lower_limit_eq27"]
        assert r["lower_bound"] <= r["lower_bound_ceiling"]
        lo, hi = r["p_null"]["interval"]
        assert lo <= r["p_null"]["estimate"] <= hi
        # the null rate has the same law on D3 and D4 (module docstring): 5 sigma binomial
        for name in ("D3", "D4"):
            pn = r["p_null"]["estimate"]
            assert abs(r["null_rate"][name] - pn) < FIVE_SIGMA * math.sqrt(pn * (1 - pn) / r["num_runs"]) + (hi - lo)
        assert r["exact_epsilon_interval"][0] <= r["exact_epsilon"] <= r["exact_epsilon_interval"][1]
    assert pts_results[1]["sgld_steps"] == pts_results[1]["sgld_epoch"] * 11586


def test_pts_measured_bounds_below_exact(pts_results):
    for r in pts_results:  # 95% bounds, fixed seed
        assert r["lower_bound"] <= r["exact_epsilon_interval"][1]


def test_pts_posterior_private_sgld_not(pts_results):
    post, sgld = pts_results
    # the posterior variant: exact eps within the claimed (5 eps, 2 delta) -- with delta, even
    assert post["exact_epsilon"] <= post["claimed_guarantee"][0]
    # Claim 4.2: the interim SGLD variant is certified (95%) above the claimed 5 eps
    assert sgld["lower_bound"] > sgld["claimed_guarantee"][0]
    assert sgld["exact_epsilon"] > sgld["lower_bound"]


def test_posterior_variant_exact_matches_quadrature():
    """The posterior variant's line-19 eps against direct quadrature at a small n1 (large gap)."""
    p = mc.PTSParameters(epsilon=1.0, delta=0.01)
    n1, delta = 40, 0.01
    (x3, y3), (x4, y4) = mc.eq8_pair(n1, p)
    mu3, s3 = mc.posterior_moments(p, np.sum(x3**2), np.sum(x3 * y3))
    mu4, s4 = mc.posterior_moments(p, np.sum(x4**2), np.sum(x4 * y4))
    gap = float(mu4 - mu3)
    eps = mc._gaussian_pair_epsilon(gap, float(s3), float(s4), delta)
    assert eps > 0.1
    d = max(_gauss_hockey(0.0, float(s3), gap, float(s4), eps), _gauss_hockey(gap, float(s4), 0.0, float(s3), eps))
    assert d == pytest.approx(delta, rel=1e-5)

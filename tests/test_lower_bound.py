"""epsilon_lower_bound: validity (coverage over repetitions), tightness at 1e6 samples,
the resolution ceiling, the exact Clopper–Pearson limits, and input checks.

References are computed here, independently of dpjax:
- Gaussian pair N(0,1) vs N(mu,1): analytic Gaussian mechanism (Balle & Wang 2018, Thm 8),
  delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), inverted with brentq;
- mixture pair: delta(eps) by numerical integration (scipy.integrate.quad) of (p - e^eps q)_+.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, optimize, stats

from dpjax.estimators import epsilon_lower_bound, oracle_lower_bound, resolution_ceiling
from dpjax.estimators.lower_bound import clopper_pearson_lower, clopper_pearson_upper

REPS = 200
# Exceedances allowed out of REPS at 95% confidence: the 99.9% quantile of Bin(REPS, 0.05),
# so a valid procedure fails this test with probability < 0.1%.
MAX_EXCEED = int(stats.binom.ppf(0.999, REPS, 0.05))


def gaussian_eps(mu: float, delta: float) -> float:
    def excess(eps):
        return stats.norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2) - delta

    return 0.0 if excess(0.0) <= 0 else optimize.brentq(excess, 0.0, 50.0, xtol=1e-12)


def mixture_density(x):
    return 0.5 * stats.norm.pdf(x) + 0.5 * stats.norm.pdf(x, 2.0)


def hockey_stick_quad(dens_big, dens_small, eps):
    """int (big - e^eps small)_+ dx, with the crossing points located first for quad."""
    gap = lambda x: dens_big(x) - np.exp(eps) * dens_small(x)
    grid = np.linspace(-12, 14, 5201)
    signs = np.sign(gap(grid))
    changes = np.flatnonzero(signs[:-1] != signs[1:])
    roots = np.unique([optimize.brentq(gap, grid[i], grid[i + 1]) for i in changes])
    pieces = np.concatenate([[-np.inf], roots, [np.inf]])
    total = 0.0
    for lo, hi in zip(pieces[:-1], pieces[1:]):
        mid = 0.5 * (max(lo, -30) + min(hi, 30))
        if gap(mid) > 0:
            total += integrate.quad(gap, lo, hi, epsabs=1e-13, epsrel=1e-11, limit=200)[0]
    return total


def mixture_eps(delta: float) -> float:
    """N(0,1) vs 0.5 N(0,1) + 0.5 N(2,1): the larger eps(delta) of the two directions."""
    best = 0.0
    for big, small in ((stats.norm.pdf, mixture_density), (mixture_density, stats.norm.pdf)):
        f = lambda e: hockey_stick_quad(big, small, e) - delta
        if f(0.0) > 0:
            best = max(best, optimize.brentq(f, 0.0, 20.0, xtol=1e-10))
    return best


def test_mixture_reference_matches_closed_form():
    # q/p = 0.5 + 0.5 e^(2x - 2) is increasing, so {p > e^eps q} = {x < x*}: a closed form to
    # check the quadrature reference against, for the P vs Q direction.
    eps = 0.3
    x_star = 1 + 0.5 * np.log(2 * np.exp(-eps) - 1)
    closed = stats.norm.cdf(x_star) - np.exp(eps) * (0.5 * stats.norm.cdf(x_star) + 0.5 * stats.norm.cdf(x_star - 2))
    assert hockey_stick_quad(stats.norm.pdf, mixture_density, eps) == pytest.approx(closed, rel=1e-8)


def _exceedances(draw, true_eps, delta, **kwargs):
    count = 0
    for rep in range(REPS):
        p, q = draw(np.random.default_rng(10_000 + rep))
        result = epsilon_lower_bound(p, q, delta, 0.95, seed=rep, **kwargs)
        count += result.epsilon > true_eps
    return count


def test_validity_gaussian_pair():
    mu, delta, n = 1.0, 1e-2, 5000
    true = gaussian_eps(mu, delta)
    count = _exceedances(lambda r: (r.standard_normal(n), r.standard_normal(n) + mu), true, delta)
    assert count <= MAX_EXCEED


@pytest.mark.parametrize("confidence", [0.95, 0.5])
def test_validity_identical_pair(confidence):
    # P = Q: the true eps is 0 at every delta > 0, so any positive bound is an exceedance. A
    # plug-in log((p_hat - delta)/q_hat) maximised over sets would be positive nearly always;
    # at confidence 0.5 the limits are narrow, which makes this a sharp check of the level.
    n, delta = 3000, 1e-6
    count = 0
    for rep in range(REPS):
        r = np.random.default_rng(20_000 + rep)
        result = epsilon_lower_bound(r.standard_normal(n), r.standard_normal(n), delta, confidence, seed=rep)
        count += result.epsilon > 0
    assert count <= stats.binom.ppf(0.999, REPS, 1 - confidence)


def test_validity_mixture_pair():
    delta, n = 1e-2, 5000
    true = mixture_eps(delta)
    assert true > 0.3  # the pair is genuinely distinguishable at this delta

    def draw(r):
        q = r.standard_normal(n) + 2.0 * (r.random(n) < 0.5)
        return r.standard_normal(n), q

    assert _exceedances(draw, true, delta) <= MAX_EXCEED


def test_validity_two_dimensional_gaussian_pair():
    # N(0, S) vs N(m, S): the Mahalanobis norm of m plays mu's role in the analytic formula.
    cov = np.array([[1.0, 0.6], [0.6, 2.0]])
    shift = np.array([0.8, -0.5])
    mu = float(np.sqrt(shift @ np.linalg.solve(cov, shift)))
    delta, n = 1e-2, 5000
    true = gaussian_eps(mu, delta)
    chol = np.linalg.cholesky(cov)

    def draw(r):
        return r.standard_normal((n, 2)) @ chol.T, r.standard_normal((n, 2)) @ chol.T + shift

    assert _exceedances(draw, true, delta, statistic="lda") <= MAX_EXCEED


@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0])
def test_tightness_at_one_million_samples(mu):
    n = 10**6
    rng = np.random.default_rng(2024)
    p, q = rng.standard_normal(n), rng.standard_normal(n) + mu
    for delta, fraction in ((1e-2, 0.85), (1e-3, 0.75)):
        true = gaussian_eps(mu, delta)
        result = epsilon_lower_bound(p, q, delta, reference=(stats.norm(0, 1), stats.norm(mu, 1)))
        assert result.epsilon >= fraction * true, (mu, delta, result)
        # The oracle feeds exact probabilities through Clopper–Pearson limits, which are
        # strictly outside them: it can never reach the true eps, and cannot exceed the ceiling.
        assert result.oracle_epsilon < true
        assert result.epsilon <= result.resolution_ceiling
        assert result.holdout_p + result.selection_p == n


def test_perfectly_separated_pair_reaches_the_resolution_ceiling():
    n, delta, conf = 1000, 1e-3, 0.9
    rng = np.random.default_rng(0)
    result = epsilon_lower_bound(rng.standard_normal(n), rng.standard_normal(n) + 100.0, delta, conf)
    h = result.holdout_p
    a = (1 - conf) / 2
    expected = np.log(a ** (1 / h) - delta) - np.log(1 - a ** (1 / h))
    assert result.epsilon == pytest.approx(expected, rel=1e-10)
    assert result.resolution_ceiling == pytest.approx(expected, rel=1e-10)
    assert {result.count_p, result.count_q} == {0, h}


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (10, 10), (17, 400), (1, 10**6)])
def test_clopper_pearson_limits_solve_the_binomial_tail_equations(k, n):
    alpha = 0.025
    lo, hi = float(clopper_pearson_lower(k, n, alpha)), float(clopper_pearson_upper(k, n, alpha))
    if k == 0:
        assert lo == 0.0
    else:  # Pr[Bin(n, lo) >= k] = alpha
        assert stats.binom.sf(k - 1, n, lo) == pytest.approx(alpha, rel=1e-8)
    if k == n:
        assert hi == 1.0
    else:  # Pr[Bin(n, hi) <= k] = alpha
        assert stats.binom.cdf(k, n, hi) == pytest.approx(alpha, rel=1e-8)


def test_oracle_is_below_truth_and_grows_with_sample_size():
    mu, delta = 1.0, 1e-3
    law_p, law_q = stats.norm(0, 1), stats.norm(mu, 1)
    values = [oracle_lower_bound(law_p, law_q, h, h, delta) for h in (10**3, 10**5, 10**7)]
    assert values[0] < values[1] < values[2] < gaussian_eps(mu, delta)


def test_resolution_ceiling_grows_like_log_n():
    c3 = resolution_ceiling(10**3, 10**3, 1e-6, 0.95)
    c6 = resolution_ceiling(10**6, 10**6, 1e-6, 0.95)
    # 1 - a^(1/h) ~ log(1/a)/h, so the ceiling grows by about log(1000) per factor 1000.
    assert c6 - c3 == pytest.approx(np.log(1000.0), abs=0.01)


def test_accepts_jax_arrays_with_the_same_result():
    rng = np.random.default_rng(3)
    p, q = rng.standard_normal(4000), rng.standard_normal(4000) + 1.0
    a = epsilon_lower_bound(p, q, 1e-2)
    b = epsilon_lower_bound(jnp.asarray(p), jnp.asarray(q), 1e-2)
    assert a.epsilon > 0 and a.epsilon == pytest.approx(b.epsilon, rel=1e-6)


def test_input_errors_name_the_argument():
    good = np.linspace(-1, 1, 50)
    bad = good.copy()
    bad[7] = np.nan
    with pytest.raises(ValueError, match=r"samples_q has a non-finite value .*nan.* at index \[7, 0\]"):
        epsilon_lower_bound(good, bad, 1e-2)
    with pytest.raises(ValueError, match=r"delta=0 violates delta in \(0.0, 1.0\)"):
        epsilon_lower_bound(good, good, 0)
    # issue 24 item 3: confidence below 1/2 is refused too, so the rule reads [0.5, 1)
    with pytest.raises(ValueError, match=r"confidence=1 violates confidence in \[0.5, 1\)"):
        epsilon_lower_bound(good, good, 1e-2, confidence=1)
    with pytest.raises(ValueError, match="samples_p has dimension 2 and samples_q has dimension 1"):
        epsilon_lower_bound(np.zeros((50, 2)), good, 1e-2)
    with pytest.raises(ValueError, match=r"expected \(n,\) or \(n, d\)"):
        epsilon_lower_bound(np.zeros((5, 2, 2)), good, 1e-2)
    with pytest.raises(ValueError, match="needs at least 4"):
        epsilon_lower_bound(good[:3], good, 1e-2)
    with pytest.raises(ValueError, match="selection_fraction=1 violates"):
        epsilon_lower_bound(good, good, 1e-2, selection_fraction=1)
    with pytest.raises(ValueError, match="statistic='identity' needs scalar samples"):
        epsilon_lower_bound(np.zeros((50, 2)), np.ones((50, 2)), 1e-2, statistic="identity")
    with pytest.raises(ValueError, match="reference laws"):
        epsilon_lower_bound(np.zeros((50, 2)), np.ones((50, 2)), 1e-2, reference=(stats.norm(), stats.norm()))
    with pytest.raises(TypeError, match="samples_p has dtype"):
        epsilon_lower_bound(np.array(["a"] * 50), good, 1e-2)


def test_unequal_sample_sizes_and_a_fixed_callable_statistic():
    rng = np.random.default_rng(12)
    p = rng.standard_normal((3000, 3))
    q = rng.standard_normal((5000, 3)) + np.array([1.0, 0.0, 0.0])
    first_coordinate = lambda x: x[:, 0]  # fixed in advance, so the guarantee holds
    result = epsilon_lower_bound(p, q, 1e-2, statistic=first_coordinate)
    assert result.holdout_p + result.selection_p == 3000 and result.holdout_q + result.selection_q == 5000
    # first coordinate: N(0,1) vs N(1,1); a valid bound sits below the truth (here with room).
    assert 0 < result.epsilon < gaussian_eps(1.0, 1e-2)
    with pytest.raises(ValueError, match="statistic returned 1 values for"):
        epsilon_lower_bound(p, q, 1e-2, statistic=lambda x: np.zeros(1))

"""Paper 003's contaminated likelihood and Algorithm 1 against independent computations:
scipy densities, mpmath tail masses, a brute-force numpy/scipy implementation of the same
algorithm on one small dataset, and sorting/dense-grid searches for its pieces."""
import functools
import math

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
from scipy import optimize, special, stats

from dpjax.estimators.contamination import (
    contamination_epsilon,
    epsilon_for_dataset,
    log_eta,
    log_mixture_extremes,
    quantile_order_statistic_interval,
    smallest_box_radius,
)
from dpjax.models.contamination import ContaminationModel, log_normal_mass, truncated_normal_mean_contamination

LOW, HIGH, SIGMA, NU, LOC, SCALE = -270.0, 330.0, 8.0, 5.0, 30.0, 8.0
THETA_STAR = 30.0


pytestmark = pytest.mark.usefixtures("x64")  # every test here computes in float64 (tests/conftest.py)


@functools.lru_cache(maxsize=1)
def table1_model():
    return truncated_normal_mean_contamination()


# --- an independent numpy/scipy version of the Table 1 densities ---------------------------
def np_log_f(x, theta):
    # normal density over its mass on [LOW, HIGH]; every theta used here lies well inside, so
    # the mass is one minus two lower-tail probabilities (scipy's ndtr, no cancellation)
    a, b = (LOW - theta) / SIGMA, (HIGH - theta) / SIGMA
    log_mass = np.log1p(-(special.ndtr(a) + special.ndtr(-b)))
    return stats.norm.logpdf(x, theta, SIGMA) - log_mass


T_LOG_MASS = math.log(stats.t.cdf((HIGH - LOC) / SCALE, NU) - stats.t.cdf((LOW - LOC) / SCALE, NU))


def np_log_g(x):
    return stats.t.logpdf((x - LOC) / SCALE, NU) - math.log(SCALE) - T_LOG_MASS


def np_log_k(x, theta, p, log_g=None):
    log_g = np_log_g(x) if log_g is None else log_g
    return np.logaddexp(math.log1p(-p) + np_log_f(x, theta), math.log(p) + log_g)


# --- the model ---------------------------------------------------------------------------------
def test_log_k_matches_scipy_mixture():
    model = table1_model()
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(LOW, HIGH, 50), [LOW, HIGH, 30.0, 200.0]])
    log_k = jax.jit(jax.vmap(model.log_k, (0, None, None)))
    for theta, p in [(30.0, 0.3), (25.5, 0.01), (-100.0, 0.9)]:
        got = np.asarray(log_k(jnp.asarray(x), jnp.array([theta]), p))
        expected = np.logaddexp(math.log1p(-p) + stats.truncnorm.logpdf(x, (LOW - theta) / SIGMA, (HIGH - theta) / SIGMA, loc=theta, scale=SIGMA),
                                math.log(p) + np_log_g(x))
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    # outside the truncation interval both densities vanish
    assert float(model.log_k(LOW - 1.0, jnp.array([30.0]), 0.2)) == -np.inf


def test_log_normal_mass_against_mpmath_in_both_tails():
    mpmath.mp.dps = 50
    cases = [(40.0, 41.0), (-50.0, -49.0), (-1.0, 2.0), (-37.5, 37.5), (3.0, 300.0), (-300.0, -8.0), (0.1, 0.2)]
    for a, b in cases:
        # mpmath at 50 digits, reflected into the lower tail where 1 - tiny would round
        if a > 0:
            exact = float(mpmath.log(mpmath.ncdf(-a) - mpmath.ncdf(-b)))
        elif b < 0:
            exact = float(mpmath.log(mpmath.ncdf(b) - mpmath.ncdf(a)))
        else:
            exact = float(mpmath.log1p(-(mpmath.ncdf(a) + mpmath.ncdf(-b))))
        np.testing.assert_allclose(float(log_normal_mass(jnp.asarray(a), jnp.asarray(b))), exact, rtol=1e-12)
        # gradient: d/da = -phi(a)/mass, d/db = phi(b)/mass, finite even where a branch not
        # taken would overflow (the Table 1 truncation at theta = 30 is (-37.5, 37.5))
        ga, gb = jax.grad(log_normal_mass, argnums=(0, 1))(jnp.asarray(a), jnp.asarray(b))
        mass = mpmath.exp(exact)
        np.testing.assert_allclose([float(ga), float(gb)], [float(-mpmath.npdf(a) / mass), float(mpmath.npdf(b) / mass)], rtol=1e-10, atol=1e-300)


def test_log_ndtr_compact_against_mpmath():
    from dpjax.models.contamination import log_ndtr_compact

    mpmath.mp.dps = 50
    xs = np.concatenate([-np.logspace(-3, 3, 200), np.logspace(-3, 1.5, 60), [0.0, -20.0, -19.999, -20.001]])
    got = np.asarray(log_ndtr_compact(jnp.asarray(xs)))
    exact = np.array([float(mpmath.log(mpmath.ncdf(x)) if x <= 0 else mpmath.log1p(-mpmath.ncdf(-x))) for x in xs])
    np.testing.assert_allclose(got, exact, rtol=5e-13)


def test_contamination_densities_are_normalised():
    from scipy import integrate

    model = table1_model()
    g_mass = integrate.quad(lambda x: math.exp(float(model.log_g(x))), LOW, HIGH, points=[LOC], limit=200)[0]
    f_mass = integrate.quad(lambda x: math.exp(float(model.log_density_f(x, jnp.array([320.0])))), LOW, HIGH, points=[320.0], limit=200)[0]
    assert abs(g_mass - 1) < 1e-8 and abs(f_mass - 1) < 1e-8


def test_one_model_object_per_configuration_and_the_t_normaliser():
    """The factory returns the same object for the same configuration (so compiled programs
    keyed on it are reused), and the Student-t constant is scipy's log density at the mode."""
    from dpjax.models.contamination import student_t_log_normaliser

    assert truncated_normal_mean_contamination() is truncated_normal_mean_contamination()
    assert truncated_normal_mean_contamination(sigma=4.0) is not truncated_normal_mean_contamination()
    for df, scale in ((5.0, 1.0), (1.0, 10.0), (3.5, 0.2)):
        assert abs(student_t_log_normaliser(df, scale) - stats.t.logpdf(0.0, df, scale=scale)) < 1e-13


def test_to_model_potential_and_contaminate_rate():
    model = table1_model()
    x = np.linspace(0.0, 60.0, 7)
    m = model.to_model(0.25)
    from dpjax.data import make_dataset

    ds = make_dataset(x=x)
    theta = jnp.array([31.0])
    expected = -stats.norm.logpdf(31.0, 40.0, 40.0) - np.sum(np_log_k(x, 31.0, 0.25))
    np.testing.assert_allclose(float(m.potential(theta, ds)), expected, rtol=1e-12)
    # contamination replaces each record independently with probability p: 5-sigma binomial band
    marker = ContaminationModel(
        log_f=lambda x, t: -0.5 * (x - t[0]) ** 2, log_g=lambda x: 0.0 * x, log_prior=lambda t: 0.0 * t[0], dim=1,
        sample_f=lambda k, t, n: jnp.zeros(n), sample_g=lambda k, r: jnp.ones_like(r),
    )
    n, p = 20000, 0.3
    frac = float(jnp.mean(marker.simulate(jax.random.PRNGKey(0), jnp.array([0.0]), n, p)))
    assert abs(frac - p) < 5 * math.sqrt(p * (1 - p) / n)
    with pytest.raises(ValueError, match=r"contamination_rate=0 violates contamination_rate in \(0.0, 1.0\)"):
        model.to_model(0.0)


def test_model_validation():
    with pytest.raises(ValueError, match="dim=0 violates"):
        ContaminationModel(log_f=None, log_g=None, log_prior=None, dim=0)
    with pytest.raises(ValueError, match="must be given together"):
        ContaminationModel(log_f=None, log_g=None, log_prior=None, dim=1, record_low=0.0)
    with pytest.raises(ValueError, match="sigma=-1 violates sigma > 0"):
        truncated_normal_mean_contamination(sigma=-1.0)
    no_sampler = ContaminationModel(log_f=None, log_g=None, log_prior=None, dim=1)
    with pytest.raises(ValueError, match="has no sample_f"):
        no_sampler.simulate(jax.random.PRNGKey(0), jnp.zeros(1), 3, 0.5)


# --- pieces of Algorithm 1 ----------------------------------------------------------------------
def brute_force_phi(distances, weights, delta):
    for phi in np.sort(distances):
        if weights[distances > phi].sum() < delta:
            return phi
    raise AssertionError("unreachable: the largest distance leaves zero weight outside")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_smallest_box_radius_matches_sorting_brute_force(seed):
    rng = np.random.default_rng(seed)
    m = 500
    dist = np.abs(rng.standard_t(3, m))
    logw = rng.normal(size=m) * 2
    logw -= special.logsumexp(logw)
    w = np.exp(logw)
    for delta in [0.5, 0.1, 1e-2, 1e-3, 1e-9]:
        phi, outside = smallest_box_radius(jnp.asarray(dist), jnp.asarray(logw), math.log(delta))
        expected = brute_force_phi(dist, w, delta)
        assert float(phi) == expected
        assert int(outside) == int(np.sum(dist > expected))


def test_smallest_box_radius_gaussian_quantile():
    # equal weights on N(0,1) draws: phi is the (1 - delta) quantile of |Z| up to sampling error
    z = np.random.default_rng(3).normal(size=200_000)
    logw = np.full(z.size, -math.log(z.size))
    phi, _ = smallest_box_radius(jnp.asarray(np.abs(z)), jnp.asarray(logw), math.log(0.01))
    exact = stats.norm.isf(0.005)
    # order statistic sd: sqrt(q(1-q)/N) / density at the quantile
    sd = math.sqrt(0.01 * 0.99 / z.size) / (2 * stats.norm.pdf(exact))
    assert abs(float(phi) - exact) < 5 * sd


def np_log_d(x, theta, p, log_g=None, log_k_star=None):
    log_g = np_log_g(x) if log_g is None else log_g
    log_k_star = np_log_k(x, THETA_STAR, p, log_g) if log_k_star is None else log_k_star
    return np_log_k(x, theta, p, log_g) - log_k_star


# dense brute-force record grid: spacing 0.005 where f and g overlap, 0.05 elsewhere
DENSE_X = np.unique(np.concatenate([np.linspace(LOW, HIGH, 12001), np.linspace(-60.0, 120.0, 36001)]))
# |d^2/dx^2 log d| and |d^2/dtheta^2 log d| are below ~2 (sigma = 8: Gaussian curvature 1/64 plus the
# mixing term w(1-w)(x-theta)^2/sigma^4 <= 1/4 (10 sigma/sigma^2)^2 ~ 0.4); a grid with spacing h
# misses a smooth optimum by at most 2 (h/2)^2 / 2 = h^2/4
CURVATURE = 2.0


def grid_error(*spacings):
    return sum(CURVATURE * (h / 2) ** 2 / 2 for h in spacings)


@functools.lru_cache(maxsize=1)
def jitted_log_eta():
    return jax.jit(lambda c, phi, p: log_eta(table1_model(), c, phi, jnp.array([THETA_STAR]), p, jnp.linspace(LOW, HIGH, 1201)))


@pytest.mark.parametrize("centre,phi,p", [(30.4, 0.8, 0.5), (29.0, 3.0, 0.1), (30.0, 0.05, 0.02)])
def test_log_eta_against_dense_grid_search(centre, phi, p):
    got, got_sup, got_inf = jitted_log_eta()(jnp.array([centre]), jnp.asarray(phi), p)
    thetas = np.linspace(centre - phi, centre + phi, 101)
    lg = np_log_g(DENSE_X)
    lks = np_log_k(DENSE_X, THETA_STAR, p, lg)
    table = np.stack([np_log_d(DENSE_X, t, p, lg, lks) for t in thetas])
    sup, inf = table.max(), table.min()
    tol = grid_error(0.005, thetas[1] - thetas[0])  # the brute force's own discretisation error
    # dpjax refines past its grid, so it may exceed the dense grid's sup by up to tol, never fall
    # below it by more than rounding
    assert sup - 1e-12 <= float(got_sup) <= sup + tol
    assert inf - tol <= float(got_inf) <= inf + 1e-12
    # the sup over the box is at theta = clip(x, box) for this location family: a second,
    # theta-exact brute force
    clipped = np_log_d(DENSE_X, np.clip(DENSE_X, centre - phi, centre + phi), p, lg, lks)
    assert abs(clipped.max() - float(got_sup)) <= grid_error(0.005)
    np.testing.assert_allclose(float(got), float(got_sup) - float(got_inf), rtol=1e-14)


def test_log_mixture_extremes_against_dense_grid():
    model = table1_model()
    rng = np.random.default_rng(4)
    thetas = 30.0 + 0.7 * rng.normal(size=60)
    logw = rng.normal(size=60)
    logw -= special.logsumexp(logw)
    p = 0.3
    run = jax.jit(lambda t, w: log_mixture_extremes(model, t, w, jnp.array([THETA_STAR]), p, jnp.linspace(LOW, HIGH, 1201), 40, 4))
    log_a, log_b = run(jnp.asarray(thetas)[:, None], jnp.asarray(logw))
    lg = np_log_g(DENSE_X)
    lks = np_log_k(DENSE_X, THETA_STAR, p, lg)
    h = special.logsumexp(logw[:, None] + np.stack([np_log_d(DENSE_X, t, p, lg, lks) for t in thetas]), axis=0)
    tol = grid_error(0.005)
    assert h.max() - 1e-12 <= float(log_a) <= h.max() + tol
    assert h.min() - tol <= float(log_b) <= h.min() + 1e-12


# --- the whole per-dataset procedure against a brute-force numpy implementation -------------------
def numpy_algorithm_1(x, z, p, delta, proposal_scale=2.0):
    """Algorithm 1 lines 5-13 for one dataset, written independently with scipy: bounded
    scalar minimisation for the MAP, a finite-difference Hessian, plain sums of weights, and
    dense grids for the sup/inf."""
    def potential(t):
        return -stats.norm.logpdf(t, 40.0, 40.0) - np.sum(np_log_k(x, t, p))

    res = optimize.minimize_scalar(potential, bounds=(THETA_STAR - 30, THETA_STAR + 30), method="bounded", options={"xatol": 1e-11})
    mode = res.x
    h = 1e-3
    hess = (potential(mode + h) - 2 * potential(mode) + potential(mode - h)) / h**2
    sd = proposal_scale / math.sqrt(hess)
    thetas = mode + sd * z
    logw = np.array([-potential(t) for t in thetas]) - stats.norm.logpdf(thetas, mode, sd)
    logw -= special.logsumexp(logw)
    dist = np.abs(thetas - mode)
    phi = brute_force_phi(dist, np.exp(logw), delta)
    lg = np_log_g(DENSE_X)
    lks = np_log_k(DENSE_X, THETA_STAR, p, lg)
    box = np.linspace(mode - phi, mode + phi, 101)
    table = np.stack([np_log_d(DENSE_X, t, p, lg, lks) for t in box])
    log_eta_value = table.max() - table.min()
    logw_prev = logw - np.array([np_log_k(x[-1], t, p) for t in thetas])
    logw_prev -= special.logsumexp(logw_prev)
    hmix = special.logsumexp(logw_prev[:, None] + np.stack([np_log_d(DENSE_X, t, p, lg, lks) for t in thetas]), axis=0)
    return dict(theta_map=mode, hessian=hess, phi=phi, log_eta=log_eta_value, log_a=hmix.max(), log_b=hmix.min(),
                epsilon=log_eta_value + hmix.max() - hmix.min())


@functools.lru_cache(maxsize=None)
def jitted_dataset_estimate(interpolation_nodes=None):
    model = table1_model()
    grid = jnp.linspace(LOW, HIGH, 1201)

    def run(records, normals, p, log_delta):
        return epsilon_for_dataset(model, records, normals, theta_star=jnp.array([THETA_STAR]), contamination_rate=p,
                                   log_delta=log_delta, record_grid=grid, record_chunk=64, interpolation_nodes=interpolation_nodes)

    return jax.jit(run)


def small_dataset(n=40, m=300, p=0.3, seed=5):
    model = table1_model()
    key = jax.random.PRNGKey(seed)
    records = np.asarray(model.simulate(key, jnp.array([THETA_STAR]), n, p))
    normals = np.asarray(jax.random.normal(jax.random.fold_in(key, 1), (m, 1)))
    return records, normals


def test_epsilon_for_dataset_matches_numpy_brute_force():
    p, delta = 0.3, 1e-3
    x, z = small_dataset(p=p)
    got = jitted_dataset_estimate()(jnp.asarray(x), jnp.asarray(z), p, math.log(delta))
    ref = numpy_algorithm_1(x, z[:, 0], p, delta)
    # MAP: both optimisers converge to ~1e-10; the finite-difference Hessian is good to ~1e-7
    # relative, which moves particles (and phi) by ~1e-7 relative; sup/inf from dense grids
    # are good to ~1e-6 (see test_log_eta_against_dense_grid_search)
    np.testing.assert_allclose(float(got["theta_map"][0]), ref["theta_map"], atol=1e-8)
    np.testing.assert_allclose(float(got["hessian"][0, 0]), ref["hessian"], rtol=1e-6)
    np.testing.assert_allclose(float(got["phi"]), ref["phi"], rtol=1e-6)
    for key in ("log_eta", "log_a", "log_b", "epsilon"):
        np.testing.assert_allclose(float(got[key]), ref[key], atol=1e-5, err_msg=key)
    assert bool(got["ok"]) and int(got["num_outside"]) >= 1


def test_chebyshev_interpolated_potential_matches_exact():
    from dpjax.estimators.contamination import _interpolated_neg_potential

    x, z = small_dataset(n=200)
    p = 0.3
    model = table1_model()

    def potential_many(ts):
        return jax.vmap(lambda t: -model.log_prior(t) - jnp.sum(jax.vmap(model.log_k, (0, None, None))(jnp.asarray(x), t, p)))(ts)

    thetas = 29.0 + 2.0 * jnp.asarray(z)  # a span of several posterior widths, as in Algorithm 1
    approx, err = jax.jit(lambda t: _interpolated_neg_potential(potential_many, t, 32))(thetas)
    exact = -np.asarray(jax.jit(potential_many)(thetas))
    # the potential is O(n) = O(1e3); interpolation of an analytic function on a short span
    # is exact to rounding of that size
    np.testing.assert_allclose(np.asarray(approx), exact, rtol=0, atol=1e-9)
    assert float(err) <= np.max(np.abs(np.asarray(approx) - exact)) + 1e-15


def test_less_contamination_means_less_privacy():
    # the same clean records and particles; as p -> 0 the heavy-tailed g stops masking a
    # record and eps_hat grows (paper 003, Theorem 4: eps_n ~ (1 - p)/p)
    model = table1_model()
    key = jax.random.PRNGKey(7)
    x = model.sample_f(key, jnp.array([THETA_STAR]), 40)
    z = jax.random.normal(jax.random.fold_in(key, 1), (300, 1))
    run = jitted_dataset_estimate()
    eps = [float(run(x, z, p, math.log(1e-3))["epsilon"]) for p in (0.5, 0.2, 0.05, 0.01, 1e-3, 1e-6)]
    assert all(np.isfinite(eps))
    assert all(b > a for a, b in zip(eps, eps[1:])), eps


def test_quantile_interval_is_valid():
    # the binomial coverage claim, checked by simulation: uniform data, true 0.99-quantile 0.99
    rng = np.random.default_rng(8)
    k, q, reps = 400, 0.99, 2000
    lo, hi, cov = quantile_order_statistic_interval(rng.uniform(size=k), q)
    assert cov >= 0.95
    covered = 0
    for _ in range(reps):
        lo, hi, _ = quantile_order_statistic_interval(rng.uniform(size=k), q)
        covered += lo <= q <= hi
    assert covered / reps > cov - 5 * math.sqrt(cov * (1 - cov) / reps)
    # too few values to bound the 99% quantile from above
    lo, hi, _ = quantile_order_statistic_interval(np.arange(50.0), 0.99)
    assert hi == np.inf and np.isfinite(lo)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(contamination_rate=1.0), r"contamination_rate=1 violates contamination_rate in \[0.0, 1.0\)"),
        (dict(contamination_rate=-0.1), r"contamination_rate=-0.1 violates"),
        (dict(delta=0.0), r"delta=0 violates delta in \(0.0, 1.0\)"),
        (dict(delta=1.5), r"delta=1.5 violates"),
        (dict(num_datasets=0), r"num_datasets=0 violates num_datasets a positive integer"),
        (dict(num_datasets=2.5), r"num_datasets=2.5 violates"),
        (dict(num_records=1), r"num_records=1 violates num_records >= 2"),
        (dict(quantile=1.0), r"quantile=1 violates quantile in \(0.0, 1.0\)"),
        (dict(num_particles=1), r"num_particles=1 violates num_particles >= 2"),
        (dict(proposal_scale=0.0), r"proposal_scale=0 violates"),
        (dict(box_centre="mean"), r"box_centre='mean' is not one of"),
        (dict(theta_star=[30.0, 1.0]), r"theta_star has shape \(2,\); it must have shape \(1,\)"),
        (dict(theta_star=float("nan")), r"theta_star has a non-finite value"),
        (dict(record_grid=[0.0, 2.0, 1.0]), r"record_grid must have >= 3 strictly increasing"),
        (dict(pad_records_to=5), r"pad_records_to=5 violates pad_records_to >= num_records=10"),
        (dict(interpolation_nodes=3), r"interpolation_nodes=3 violates interpolation_nodes an integer >= 8"),
        (dict(theta_grid_size=1), r"theta_grid_size=1 violates"),
    ],
)
def test_contamination_epsilon_bad_input(kwargs, match):
    args = dict(theta_star=30.0, num_records=10, contamination_rate=0.5, delta=0.01, num_datasets=4)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        contamination_epsilon(table1_model(), **args)


def test_model_without_support_or_samplers_rejected():
    bare = ContaminationModel(log_f=lambda x, t: -0.5 * (x - t[0]) ** 2, log_g=lambda x: 0.0 * x, log_prior=lambda t: 0.0 * t[0], dim=1)
    with pytest.raises(ValueError, match="needs sample_f and sample_g"):
        contamination_epsilon(bare, theta_star=0.0, num_records=10, contamination_rate=0.5, delta=0.01, num_datasets=2)
    with_samplers = ContaminationModel(
        log_f=bare.log_f, log_g=bare.log_g, log_prior=bare.log_prior, dim=2,
        sample_f=lambda k, t, n: jnp.zeros(n), sample_g=lambda k, r: jnp.ones_like(r),
    )
    with pytest.raises(ValueError, match="no record support"):
        contamination_epsilon(with_samplers, theta_star=[0.0, 0.0], num_records=10, contamination_rate=0.5, delta=0.01, num_datasets=2)
    with pytest.raises(ValueError, match=r"interpolation_nodes=16 needs a 1-dimensional theta"):
        contamination_epsilon(with_samplers, theta_star=[0.0, 0.0], num_records=10, contamination_rate=0.5, delta=0.01,
                              num_datasets=2, record_grid=np.linspace(0, 1, 5), interpolation_nodes=16)

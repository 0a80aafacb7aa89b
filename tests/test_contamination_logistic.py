"""Paper 003 §4.3's contaminated logistic regression and Algorithm 1 on vector records,
against independent computations: numpy/scipy densities, a semi-analytic sup over the
parameter box (for a fixed covariate vector w the extremes of theta.w over an L_inf box are
centre.w +- phi ||w||_1), dense covariate grids polished by scipy's bounded optimiser, and a
numpy/scipy implementation of the whole per-dataset procedure."""
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize, special

from _shared import assert_algorithm1_matches_reference
from dpjax.estimators.contamination import contamination_epsilon, epsilon_for_dataset, log_eta, log_mixture_extremes
from dpjax.models.contamination import ContaminationModel, logistic_regression_contamination

THETA_STAR = np.array([0.5, -1.0, 1.0, -0.5, 0.25])
D = THETA_STAR.size


pytestmark = pytest.mark.usefixtures("x64")  # every test here computes in float64 (tests/conftest.py)


def model():
    return logistic_regression_contamination(dim=D)


# --- independent numpy versions ------------------------------------------------------------------
def np_log_k(y, u, p):
    """log((1 - p) f(y; u) + p/2), f the Bernoulli(sigmoid(u)) mass, u = theta.w."""
    log_f = np.where(y > 0.5, -np.logaddexp(0.0, -u), -np.logaddexp(0.0, u))
    if p == 0:
        return log_f
    return np.logaddexp(math.log1p(-p) + log_f, math.log(p) - math.log(2.0))


def covariate_grid(points):
    axes = [np.linspace(-1.0, 1.0, points)] * (D - 1)
    free = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, D - 1)
    return np.concatenate([np.ones((free.shape[0], 1)), free], axis=1)


def polished_max(objective, starts):
    """max of objective(w_free) over [-1, 1]^(D-1) from several starts (scipy L-BFGS-B and
    Powell, bounded); never below the starts' values."""
    best = max(objective(s) for s in starts)
    for s in starts:
        for method in ("L-BFGS-B", "Powell"):
            res = optimize.minimize(lambda v: -objective(v), s, method=method, bounds=[(-1.0, 1.0)] * (D - 1))
            best = max(best, -res.fun)
    return best


def brute_force_log_eta(centre, phi, p, points=21, starts=6):
    """sup/inf over y in {0, 1}, w and theta in the box of log d: theta enters only through
    theta.w, whose range over the box is centre.w +- phi ||w||_1, and log k is monotone in it."""
    def extreme(sign):
        def value(w_free, y):
            w = np.concatenate([[1.0], w_free])
            u_hi = centre @ w + phi * np.abs(w).sum()
            u_lo = centre @ w - phi * np.abs(w).sum()
            k_star = np_log_k(y, THETA_STAR @ w, p)
            both = np.array([np_log_k(y, u_hi, p), np_log_k(y, u_lo, p)]) - k_star
            return sign * both.max() if sign > 0 else sign * both.min()

        best = -np.inf
        w = covariate_grid(points)
        for y in (0.0, 1.0):
            u_hi = w @ centre + phi * np.abs(w).sum(1)
            u_lo = w @ centre - phi * np.abs(w).sum(1)
            ks = np_log_k(y, w @ THETA_STAR, p)
            vals = np.stack([np_log_k(y, u_hi, p), np_log_k(y, u_lo, p)]) - ks
            vals = sign * (vals.max(0) if sign > 0 else vals.min(0))
            top = w[np.argsort(vals)[-starts:], 1:]
            best = max(best, polished_max(lambda v: value(v, y), top))
        return sign * best

    return extreme(1.0), extreme(-1.0)


def brute_force_mixture(thetas, log_w, p, points=21, starts=6):
    def h(w, y):
        return special.logsumexp(log_w[:, None] + np_log_k(y, thetas @ w.T, p), axis=0) - np_log_k(y, w @ THETA_STAR, p)

    out = []
    for sign in (1.0, -1.0):
        best = -np.inf
        w = covariate_grid(points)
        for y in (0.0, 1.0):
            vals = sign * h(w, y)
            top = w[np.argsort(vals)[-starts:], 1:]
            best = max(best, polished_max(lambda v: sign * h(np.concatenate([[1.0], v])[None, :], y)[0], top))
        out.append(sign * best)
    return tuple(out)


# --- the model --------------------------------------------------------------------------------
def test_log_k_matches_numpy_and_masses_sum_to_one():
    m = model()
    rng = np.random.default_rng(0)
    w = np.concatenate([np.ones((30, 1)), rng.uniform(-1, 1, (30, D - 1))], axis=1)
    theta = rng.normal(size=D)
    for p in (0.0, 0.3, 0.9):
        for y in (0.0, 1.0):
            rec = np.concatenate([np.full((30, 1), y), w], axis=1)
            got = np.asarray(jax.vmap(m.log_k, (0, None, None))(jnp.asarray(rec), jnp.asarray(theta), p))
            np.testing.assert_allclose(got, np_log_k(y, w @ theta, p), rtol=1e-13, atol=1e-13)
        # k_p(0) + k_p(1) = 1: a probability mass over the response for every w
        total = sum(np.exp(np_log_k(y, w @ theta, p)) for y in (0.0, 1.0))
        np.testing.assert_allclose(total, 1.0, rtol=1e-14)


def test_simulation_keeps_covariates_and_replaces_responses_at_rate_p():
    m = model()
    n, p = 40000, 0.3
    key = jax.random.PRNGKey(1)
    clean = np.asarray(m.sample_f(key, jnp.asarray(THETA_STAR), n))
    assert clean.shape == (n, D + 1)
    assert np.all(clean[:, 1] == 1.0) and np.all(np.abs(clean[:, 2:]) <= 1.0)
    # responses follow sigmoid(theta*.w): the mean residual is 0 within 5 standard errors
    prob = special.expit(clean[:, 1:] @ THETA_STAR)
    assert abs(np.mean(clean[:, 0] - prob)) < 5 * math.sqrt(np.mean(prob * (1 - prob)) / n)
    dirty = np.asarray(m.contaminate(jax.random.PRNGKey(2), jnp.asarray(clean), THETA_STAR, p))
    np.testing.assert_array_equal(dirty[:, 1:], clean[:, 1:])
    # a response changes iff it is replaced (prob p) and the fair coin disagrees with it (1/2)
    changed = np.mean(dirty[:, 0] != clean[:, 0])
    assert abs(changed - p / 2) < 5 * math.sqrt(p / 2 * (1 - p / 2) / n)


def test_record_space_grid_and_validation():
    grid, low, high, step = model().record_space(3)
    assert grid.shape == (2 * 3 ** (D - 1), D + 1)
    assert set(np.unique(grid[:, 0])) == {0.0, 1.0} and np.all(grid[:, 1] == 1.0)
    np.testing.assert_array_equal(step, [0.0, 0.0] + [1.0] * (D - 1))
    np.testing.assert_array_equal(low, [0.0, 1.0] + [-1.0] * (D - 1))
    with pytest.raises(ValueError, match="record_levels has 2 entries; it needs one per record component"):
        ContaminationModel(log_f=None, log_g=None, log_prior=None, dim=1, record_low=(0.0, 0.0, 0.0),
                           record_high=(1.0, 1.0, 1.0), record_levels=((0.0,), None))
    with pytest.raises(ValueError, match=r"record_levels\[0\]=\(2.0,\) must be a non-empty tuple of values in \[0.0, 1.0\]"):
        ContaminationModel(log_f=None, log_g=None, log_prior=None, dim=1, record_low=(0.0,), record_high=(1.0,),
                           record_levels=((2.0,),))
    with pytest.raises(ValueError, match="points_per_axis=1 violates"):
        model().record_space(1)
    with pytest.raises(ValueError, match="dim=1 violates dim >= 2"):
        logistic_regression_contamination(dim=1)
    from dpjax.models.contamination import truncated_normal_mean_contamination

    with pytest.raises(ValueError, match="has no per-component record support"):
        truncated_normal_mean_contamination().record_space(5)


def test_experiment_argument_errors():
    import argparse

    from dpjax.experiments.contamination import logistic as cl

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    cl.add_arguments(parser)
    with pytest.raises(ValueError, match=r"--theta-star=\[1.0\] must be >= 2 finite numbers"):
        cl.run(parser.parse_args(["--theta-star", "1"]))
    with pytest.raises(ValueError, match=r"--delta-factor=0(\.0)? violates delta_factor > 0"):
        cl.run(parser.parse_args(["--delta-factor", "0"]))
    with pytest.raises(SystemExit):
        parser.parse_args(["--theta-star", "1,x"])


# --- Algorithm 1's pieces on vector records -------------------------------------------------------
@functools.lru_cache(maxsize=None)
def space(points=5):
    grid, low, high, step = model().record_space(points)
    return jnp.asarray(grid), tuple(tuple(float(v) for v in a) for a in (low, high, step))


# One compiled program per piece, shared by the parametrisations: p is traced, as in
# contamination_epsilon (a p closed over as a constant compiled the same search once per p).
@functools.lru_cache(maxsize=None)
def jitted_log_eta():
    grid, bounds = space()
    return jax.jit(lambda c, ph, p: log_eta(model(), c, ph, jnp.asarray(THETA_STAR), p, grid, 2, 40, bounds))


@functools.lru_cache(maxsize=None)
def jitted_log_mixture_extremes():
    grid, bounds = space()
    return jax.jit(lambda t, w, p: log_mixture_extremes(model(), t, w, jnp.asarray(THETA_STAR), p, grid, 40, 1, bounds))


@pytest.mark.parametrize("centre_shift,phi,p", [(0.1, 0.3, 0.4), (-0.2, 1.2, 0.2), (0.0, 0.05, 0.0)])
def test_log_eta_against_semi_analytic_brute_force(centre_shift, phi, p):
    centre = THETA_STAR + centre_shift * np.array([1.0, -1.0, 0.5, 1.0, -0.5])
    got_eta, got_sup, got_inf = jitted_log_eta()(jnp.asarray(centre), jnp.asarray(phi), jnp.asarray(p))
    sup, inf = brute_force_log_eta(centre, phi, p)
    # both are maximisations that can only under-shoot the true extreme: agreement to 1e-8
    # from independent searches (a 5^4 grid + coordinate golden section vs a 21^4 grid +
    # scipy polishing with the analytic theta part) pins the extreme
    np.testing.assert_allclose(float(got_sup), sup, atol=1e-8)
    np.testing.assert_allclose(float(got_inf), inf, atol=1e-8)
    np.testing.assert_allclose(float(got_eta), sup - inf, atol=2e-8)


@pytest.mark.parametrize("p", [0.35, 0.0])
def test_log_mixture_extremes_against_brute_force(p):
    rng = np.random.default_rng(3)
    thetas = THETA_STAR + 0.3 * rng.normal(size=(40, D))
    log_w = rng.normal(size=40)
    log_w -= special.logsumexp(log_w)
    log_a, log_b = jitted_log_mixture_extremes()(jnp.asarray(thetas), jnp.asarray(log_w), jnp.asarray(p))
    a, b = brute_force_mixture(thetas, log_w, p)
    np.testing.assert_allclose(float(log_a), a, atol=1e-8)
    np.testing.assert_allclose(float(log_b), b, atol=1e-8)


# --- the whole per-dataset procedure against numpy/scipy ------------------------------------------
def numpy_algorithm_1(records, z, p, delta, proposal_scale=2.0):
    y, w = records[:, 0], records[:, 1:]

    def potential(t):
        return 0.5 * np.sum((t / 10.0) ** 2) + D * (0.5 * math.log(2 * math.pi) + math.log(10.0)) - np.sum(np_log_k(y, w @ t, p))

    # Hessian of -log k_p by second differences of the analytic gradient
    def grad(t):
        u = w @ t
        s = special.expit(u)
        f1 = s
        k1 = (1 - p) * f1 + p / 2
        k0 = (1 - p) * (1 - f1) + p / 2
        dlogk = np.where(y > 0.5, (1 - p) * s * (1 - s) / k1, -(1 - p) * s * (1 - s) / k0)
        return t / 100.0 - w.T @ dlogk

    # BFGS from finite differences of the potential stalls with |grad| ~ 1e-6 ("precision
    # loss"); the analytic gradient and a Newton polish reach ~1e-13, as dpjax's Newton does
    res = optimize.minimize(potential, THETA_STAR, jac=grad, method="BFGS", options={"gtol": 1e-12})
    mode = res.x
    h = 1e-5
    for _ in range(3):  # Newton polish on the finite-difference Hessian
        hess = np.stack([(grad(mode + h * e) - grad(mode - h * e)) / (2 * h) for e in np.eye(D)])
        hess = 0.5 * (hess + hess.T)
        mode = mode - np.linalg.solve(hess, grad(mode))
    assert np.max(np.abs(grad(mode))) < 1e-11
    chol = np.linalg.cholesky(hess)
    offsets = proposal_scale * np.linalg.solve(chol.T, z.T).T
    thetas = mode + offsets
    log_q = -0.5 * np.sum(z**2, 1) - D * math.log(proposal_scale) + np.sum(np.log(np.diag(chol)))
    log_w = np.array([-potential(t) for t in thetas]) - log_q
    log_w -= special.logsumexp(log_w)
    dist = np.max(np.abs(thetas - mode), axis=1)
    phi = next(r for r in np.sort(dist) if np.exp(log_w[dist > r]).sum() < delta)
    sup, inf = brute_force_log_eta(mode, phi, p)
    log_w_prev = log_w - np_log_k(y[-1], thetas @ w[-1], p)
    log_w_prev -= special.logsumexp(log_w_prev)
    log_a, log_b = brute_force_mixture(thetas, log_w_prev, p)
    return dict(theta_map=mode, phi=phi, log_eta=sup - inf, log_a=log_a, log_b=log_b, epsilon=sup - inf + log_a - log_b)


@functools.lru_cache(maxsize=None)
def jitted_dataset_estimate():
    """One compilation for both rates (p traced)."""
    grid, bounds = space()
    return jax.jit(lambda r, zz, p: epsilon_for_dataset(
        model(), r, zz, theta_star=jnp.asarray(THETA_STAR), contamination_rate=p, log_delta=math.log(1e-3), record_grid=grid,
        record_chunk=64, theta_grid_size=2, record_bounds=bounds))


@pytest.mark.parametrize("p", [0.4, 0.0])
def test_epsilon_for_dataset_matches_numpy_brute_force(p):
    m = model()
    n, num = 300, 150
    key = jax.random.PRNGKey(11)
    records = np.asarray(m.simulate(key, jnp.asarray(THETA_STAR), n, p))
    z = np.asarray(jax.random.normal(jax.random.fold_in(key, 1), (num, D)))
    got = jitted_dataset_estimate()(jnp.asarray(records), jnp.asarray(z), jnp.asarray(p))
    ref = numpy_algorithm_1(records, z, p, 1e-3)
    # MAP to ~1e-9 (both optimisers); the finite-difference Hessian moves particles by ~1e-8
    # relative, and phi with them; extremes agree to ~1e-8 (tests above)
    assert_algorithm1_matches_reference(got, ref, extremes_atol=1e-6)


def test_contamination_epsilon_accepts_zero_rate_and_rejects_negative():
    # dataset_batch=20: the compiled batch of test_contamination_mean.py's logistic comparison
    # (same model, n, m and grid), so whichever runs second loads it from the run's cache
    est = contamination_epsilon(model(), theta_star=THETA_STAR, num_records=200, contamination_rate=0.0, delta=1e-3,
                                num_datasets=4, num_particles=100, theta_grid_size=2, record_grid_per_axis=3, dataset_batch=20,
                                tail_retries=0)
    assert est.num_failed == 0 and np.all(np.isfinite(est.epsilons)) and est.contamination_rate == 0.0
    assert est.num_unresolved_tail == int(np.sum(est.details["num_outside"] == 0))
    # a delta below most particles' weights leaves them all inside the box: those datasets'
    # tails are unresolved, counted per dataset, and a smaller delta never resolves more
    tiny = contamination_epsilon(model(), theta_star=THETA_STAR, num_records=200, contamination_rate=0.0, delta=1e-12,
                                 num_datasets=4, num_particles=100, theta_grid_size=2, record_grid_per_axis=3, dataset_batch=20,
                                 tail_retries=0)
    assert tiny.num_unresolved_tail == int(np.sum(tiny.details["num_outside"] == 0)) >= 1
    assert np.all(tiny.details["num_outside"] <= est.details["num_outside"])
    with pytest.raises(ValueError, match=r"contamination_rate=-0.1 violates contamination_rate in \[0.0, 1.0\)"):
        contamination_epsilon(model(), theta_star=THETA_STAR, num_records=200, contamination_rate=-0.1, delta=1e-3, num_datasets=4)
    # the box grid's size is checked where the box is gridded: a user-supplied record grid (the
    # model's own record space searches the box along one line, see test_contamination_regression)
    with pytest.raises(ValueError, match=r"theta_grid_size\*\*dim = 17\*\*5 box points is too many"):
        contamination_epsilon(model(), theta_star=THETA_STAR, num_records=200, contamination_rate=0.1, delta=1e-3, num_datasets=4,
                              record_grid=np.asarray(space(3)[0]))


def test_unresolved_tails_are_retried_with_a_wider_proposal_on_the_same_data():
    """A dataset with no particle outside its box is rerun on the same records and normal draws
    with the proposal widened 1.5x per retry: the others are untouched, a retried dataset equals
    a direct run at the scale it ended with, and what stays unresolved is still counted."""
    small = logistic_regression_contamination(dim=3)
    ts = THETA_STAR[:3]
    # the compiled batch of test_contamination_cauchy_logistic_experiments.py's d = 3 logistic run
    # (n <= 512 records, m = 100, 5 points per covariate axis, its auto grid at d = 3, 4 datasets
    # a batch), so whichever runs second loads it from the run's compilation cache
    kw = dict(theta_star=ts, num_records=200, contamination_rate=0.3, delta=1e-3, num_datasets=8, num_particles=100, theta_grid_size=2,
              record_grid_per_axis=5, dataset_batch=4)
    plain = contamination_epsilon(small, tail_retries=0, **kw)
    retried = contamination_epsilon(small, **kw)
    before = plain.details["num_outside"] == 0
    assert before.sum() >= 2 and retried.num_unresolved_tail < plain.num_unresolved_tail
    assert retried.num_unresolved_tail == int(np.sum(retried.details["num_outside"] == 0))
    scales = retried.details["proposal_scale"]
    np.testing.assert_array_equal(scales[~before], 2.0)
    assert np.all(np.isin(scales[before], [3.0, 4.5]))
    np.testing.assert_array_equal(retried.epsilons[~before], plain.epsilons[~before])
    np.testing.assert_array_equal(retried.details["theta_map"], plain.details["theta_map"])  # same records
    direct = contamination_epsilon(small, tail_retries=0, **{**kw, "proposal_scale": 3.0})
    at3 = scales == 3.0
    assert at3.any()
    np.testing.assert_array_equal(retried.epsilons[at3], direct.epsilons[at3])
    with pytest.raises(ValueError, match="tail_retries=-1"):
        contamination_epsilon(small, tail_retries=-1, **kw)


def test_results_do_not_depend_on_batching_and_the_defaults_follow_the_backend(monkeypatch):
    """Dataset k and record i are the same draws whatever the batch and chunk sizes (the
    accelerator defaults are 8x the CPU's), so eps_hat differs only by the order of float sums."""
    from dpjax.estimators import contamination as C

    small = logistic_regression_contamination(dim=3)
    kw = dict(theta_star=THETA_STAR[:3], num_records=200, contamination_rate=0.3, delta=1e-3, num_datasets=8, num_particles=100,
              theta_grid_size=2, record_grid_per_axis=5, tail_retries=0)
    wide = contamination_epsilon(small, dataset_batch=4, **kw)  # the shapes of the test above: compiled once
    narrow = contamination_epsilon(small, dataset_batch=3, record_chunk=64, **kw)
    np.testing.assert_allclose(narrow.epsilons, wide.epsilons, rtol=1e-9)
    assert np.all(np.isfinite(wide.epsilons)) and wide.num_failed == 0
    assert C.default_batching() == C.CPU_BATCHING == (8, 512)
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert C.default_batching() == C.ACCELERATOR_BATCHING == (64, 4096)

"""The closed-form mixture densities k_p(x; theta) of paper 003 §4.3's three regressions (the
fast path of Algorithm 1's particle loops) against the log-space mixture of independently
written numpy densities, on simulated records and on the compactified search's extremes;
Algorithm 1's pieces with and without the closed form; and the guard that turns a closed form
out of its range into NaN (a failed dataset), never a wrong finite number."""
import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import special

from dpjax.estimators.contamination import _records_log_lik, log_mixture_extremes
from dpjax.models.contamination import logistic_regression_contamination
from dpjax.models.contamination_regression import cauchy_regression_contamination, linear_regression_contamination

THETA_STAR = np.array([0.5, -1.0, 1.0])
D = THETA_STAR.size
LAM, T_SCALE = 10.0, 1.0


pytestmark = pytest.mark.usefixtures("x64")  # every test here computes in float64 (tests/conftest.py)


MODELS = {
    "linear": lambda: linear_regression_contamination(theta_star=THETA_STAR),
    "cauchy": lambda: cauchy_regression_contamination(theta_star=THETA_STAR),
    "logistic": lambda: logistic_regression_contamination(dim=D),
}


def numpy_log_k(kind, records, theta, p):
    """log((1 - p) f + p g) by np.logaddexp of the textbook log densities."""
    y, w = records[:, 0], records[:, 1:]
    u, u_star = w @ theta, w @ THETA_STAR
    if kind == "linear":
        log_f = -0.5 * (y - u) ** 2 - 0.5 * math.log(2 * math.pi)
        log_g = (special.gammaln(3.0) - special.gammaln(2.5) - 0.5 * math.log(5 * math.pi) - math.log(T_SCALE)
                 - 3.0 * np.log1p(((y - u_star) / T_SCALE) ** 2 / 5.0))
    elif kind == "cauchy":
        log_f = -math.log(math.pi) - np.log1p((y - u) ** 2)
        log_g = -math.log(math.pi * LAM) - np.log1p((y / LAM) ** 2)
    else:
        log_f = np.where(y > 0.5, -np.logaddexp(0.0, -u), -np.logaddexp(0.0, u))
        log_g = np.full_like(y, -math.log(2.0))
    if p == 0:
        return log_f
    return np.logaddexp(math.log1p(-p) + log_f, math.log(p) + log_g)


def records_for(kind, m):
    """Simulated contaminated records plus the search grid's records (for the regressions,
    the compactified response's ends v = +-1, |y| ~ 6e16)."""
    sim = np.asarray(m.simulate(jax.random.PRNGKey(5), jnp.asarray(THETA_STAR), 400, 0.4))
    grid = np.asarray(m.record_space(3)[0])
    return np.concatenate([sim, np.asarray(jax.vmap(m.to_record)(jnp.asarray(grid)))])


@pytest.mark.parametrize("kind", ["linear", "cauchy", "logistic"])
def test_mixture_density_matches_log_space_mixture(kind):
    m = MODELS[kind]()
    records = records_for(kind, m)
    if kind != "logistic":
        assert np.max(np.abs(records[:, 0])) > 1e16  # the search's ends are in the set
    rng = np.random.default_rng(1)
    thetas = THETA_STAR + np.concatenate([0.5 * rng.normal(size=(6, D)), 5.0 * rng.normal(size=(2, D))])
    # p = 0 only where the closed form is meant for it (linear: unbounded, never estimated)
    rates = (1e-6, 0.05, 0.4, 1.0 - 1e-9) + ((0.0,) if kind != "linear" else ())
    hook = jax.jit(jax.vmap(m.mixture_density, (0, None, None)))
    for p in rates:
        for theta in thetas:
            got = np.log(np.asarray(hook(jnp.asarray(records), jnp.asarray(theta), p)))
            want = numpy_log_k(kind, records, theta, p)
            # k is a sum of positive terms each within a few ulp: log k within ~1e-15 absolute
            err = np.abs(got - want) / np.maximum(1.0, np.abs(want))
            assert np.max(err) <= 5e-14, (kind, p, float(np.max(err)))


@functools.lru_cache(maxsize=None)
def jitted_pieces(kind: str, closed_form: bool):
    """Algorithm 1's pieces for one model, with or without its closed-form mixture density:
    the likelihood sum at 30 thetas, its gradient, and the mixture extremes. Records, thetas,
    weights and p are traced, so both rates of a model share one compiled program."""
    m = MODELS[kind]()
    model = m if closed_form else dataclasses.replace(m, mixture_density=None)
    grid, low, high, step = model.record_space(3)
    bounds = tuple(tuple(float(v) for v in a) for a in (low, high, step))
    valid = jnp.arange(400) < 397  # a padded tail, as the chunked loop has

    def pieces(records, thetas, log_w, p):
        lik = jax.vmap(lambda t: _records_log_lik(model, records, valid, t, p))(thetas)
        grad = jax.grad(lambda t: _records_log_lik(model, records, valid, t, p))(thetas[0])
        extremes = log_mixture_extremes(model, thetas, log_w, jnp.asarray(THETA_STAR), p, jnp.asarray(grid), 40, 1, bounds)
        return lik, grad, jnp.stack(extremes)

    return jax.jit(pieces)


@pytest.mark.parametrize("kind,p", [("cauchy", 0.3), ("cauchy", 0.0), ("logistic", 0.3), ("logistic", 0.0), ("linear", 0.4)])
def test_algorithm1_pieces_agree_with_and_without_the_closed_form(kind, p):
    m = MODELS[kind]()
    records = jnp.asarray(records_for(kind, m)[:400])
    rng = np.random.default_rng(2)
    thetas = jnp.asarray(THETA_STAR + 0.2 * rng.normal(size=(30, D)))
    log_w = rng.normal(size=30)
    log_w = jnp.asarray(log_w - special.logsumexp(log_w))
    args = (records, thetas, log_w, jnp.asarray(p))
    fast, slow = jitted_pieces(kind, True)(*args), jitted_pieces(kind, False)(*args)
    np.testing.assert_allclose(np.asarray(fast[0]), np.asarray(slow[0]), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(fast[1]), np.asarray(slow[1]), rtol=1e-10, atol=1e-10)
    # the sup/inf searches take the same path unless two candidates tie to rounding
    np.testing.assert_allclose(np.asarray(fast[2]), np.asarray(slow[2]), atol=1e-10)
    assert np.all(np.isfinite(np.asarray(fast[2])))


def test_a_closed_form_out_of_range_gives_nan_not_a_number():
    """A closed form that underflows (here: made to return 0 beyond y = 5) must make the
    likelihood sum and the mixture extremes NaN, so Algorithm 1 counts the dataset as failed."""
    base = MODELS["cauchy"]()
    broken = dataclasses.replace(base, mixture_density=lambda x, t, p: jnp.where(x[0] > 5.0, 0.0, base.mixture_density(x, t, p)))
    records = jnp.asarray(records_for("cauchy", base)[:400])
    assert float(jnp.max(records[:400, 0])) > 5.0
    theta = jnp.asarray(THETA_STAR)
    assert math.isnan(float(_records_log_lik(broken, records, jnp.ones(400, bool), theta, 0.3)))
    # the offending record outside the valid part is ignored
    low = records[:, 0] <= 5.0
    assert math.isfinite(float(_records_log_lik(broken, records, low, theta, 0.3)))
    grid, lo, hi, step = base.record_space(3)
    bounds = tuple(tuple(float(v) for v in a) for a in (lo, hi, step))
    thetas = theta + 0.1 * jnp.asarray(np.random.default_rng(0).normal(size=(8, D)))
    log_a, log_b = jax.jit(lambda: log_mixture_extremes(broken, thetas, jnp.full(8, -math.log(8)), theta, 0.3, jnp.asarray(grid), 10, 1, bounds))()
    assert math.isnan(float(log_a)) and math.isnan(float(log_b))


"""The numpyro adapter against the built-in models (float64, random thetas)."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from scipy import stats

from dpjax.data import add_remove, make_dataset
from dpjax.models import (
    bayesian_linear_regression,
    from_numpyro,
    logistic_regression,
    logistic_regression_dataset,
    regression_dataset,
)


pytestmark = pytest.mark.usefixtures("x64")  # every test here computes in float64 (tests/conftest.py)


ALPHA, BETA, D = 0.3, 2.0, 3


def linreg(x, y=None):
    theta = numpyro.sample("theta", dist.Normal(0.0, 1 / math.sqrt(ALPHA)).expand([D]).to_event(1))
    numpyro.sample("y", dist.Normal(x @ theta, 1 / math.sqrt(BETA)), obs=y)


def logreg(x, y=None):
    theta = numpyro.sample("theta", dist.Normal(0.0, 1 / math.sqrt(ALPHA)).expand([D]).to_event(1))
    with numpyro.plate("data", x.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=x @ theta), obs=y)


def compare(adapted, builtin, data, seed):
    fns = {
        name: (jax.jit(getattr(adapted, name)), jax.jit(getattr(builtin, name)))
        for name in ("potential", "record_grads", "potential_grad", "record_log_likelihoods")
    }
    rng = np.random.default_rng(seed)
    for ds in (data, add_remove(data, 2).neighbour):
        for _ in range(4):
            theta = jnp.asarray(rng.normal(size=D) * 2)
            for name, (fa, fb) in fns.items():
                np.testing.assert_allclose(np.asarray(fa(theta, ds)), np.asarray(fb(theta, ds)), rtol=1e-10, atol=1e-10, err_msg=name)


def test_adapter_equals_builtin_linear_regression():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(12, D))
    data = regression_dataset(x, x @ rng.normal(size=D) + rng.normal(size=12))
    adapted = from_numpyro(linreg, observed_site="y", example_record=data)
    assert adapted.dim == D and adapted.latent_sites == ("theta",)
    compare(adapted, bayesian_linear_regression(BETA, ALPHA, dim=D), data, seed=1)


def test_adapter_equals_builtin_logistic_regression_and_tempering():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(15, D))
    data = logistic_regression_dataset(x, (rng.uniform(size=15) < 0.4).astype(float))
    adapted = from_numpyro(logreg, observed_site="y", example_record=data.record(0), likelihood_weight=0.5)
    compare(adapted, logistic_regression(ALPHA, D).tempered(0.5), data, seed=3)


def test_pytree_latents_flatten_in_sorted_site_order():
    # two latent sites: intercept (scalar) and slope (vector); theta = [intercept, slope...]
    def m(x, y=None):
        b = numpyro.sample("intercept", dist.Normal(0.0, 2.0))
        w = numpyro.sample("slope", dist.Normal(0.0, 1.0).expand([2]).to_event(1))
        numpyro.sample("y", dist.Normal(b + x @ w, 1.0), obs=y)

    rng = np.random.default_rng(4)
    data = regression_dataset(rng.normal(size=(5, 2)), rng.normal(size=5))
    model = from_numpyro(m, observed_site="y", example_record=data)
    assert model.dim == 3
    theta = jnp.array([0.5, -1.0, 2.0])
    vals = model.constrain(theta)
    assert float(vals["intercept"]) == 0.5
    np.testing.assert_array_equal(np.asarray(vals["slope"]), [-1.0, 2.0])
    x, y = np.asarray(data["x"]), np.asarray(data["y"])
    expected = -(stats.norm.logpdf(0.5, 0, 2) + stats.norm.logpdf([-1.0, 2.0]).sum() + stats.norm.logpdf(y, 0.5 + x @ [-1.0, 2.0]).sum())
    np.testing.assert_allclose(float(model.potential(theta, data)), expected, rtol=1e-12)


def test_constrained_latent_uses_unconstrained_space_with_jacobian():
    # sigma ~ LogNormal(0, 1) with a Normal likelihood: theta = log sigma; the prior density of
    # u = log sigma is N(u; 0, 1) (lognormal density times the Jacobian e^u)
    def m(x, y=None):
        sigma = numpyro.sample("sigma", dist.LogNormal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(0.0, sigma), obs=y)

    data = make_dataset(x=np.zeros(4), y=np.array([0.3, -1.2, 2.0, 0.1]))
    model = from_numpyro(m, observed_site="y", example_record=data)
    u = 0.4
    np.testing.assert_allclose(float(model.log_prior(jnp.array([u]))), stats.norm.logpdf(u), rtol=1e-12)
    ll = np.asarray(model.record_log_likelihoods(jnp.array([u]), data))
    np.testing.assert_allclose(ll, stats.norm.logpdf(np.asarray(data["y"]), 0, math.exp(u)), rtol=1e-12)
    assert float(model.constrain(jnp.array([u]))["sigma"]) == pytest.approx(math.exp(u), rel=1e-14)


def test_adapter_errors():
    data = regression_dataset(np.zeros((3, D)), np.zeros(3))
    with pytest.raises(ValueError, match=r"observed_site='z' is not a sample site"):
        from_numpyro(linreg, observed_site="z", example_record=data)
    with pytest.raises(ValueError, match=r"observed_site='theta' is latent \(not observed\).*observed sites are \['y'\]"):
        from_numpyro(linreg, observed_site="theta", example_record=data)

    def two_obs(x, y=None):
        t = numpyro.sample("t", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(t, 1.0), obs=y)
        numpyro.factor("penalty", -t**2)

    with pytest.raises(ValueError, match=r"observed sites \['y', 'penalty'\]"):
        from_numpyro(two_obs, observed_site="y", example_record=data)

    def discrete(x, y=None):
        k = numpyro.sample("k", dist.Bernoulli(0.5))
        numpyro.sample("y", dist.Normal(k * 1.0, 1.0), obs=y)

    with pytest.raises(ValueError, match=r"latent site 'k' is discrete"):
        from_numpyro(discrete, observed_site="y", example_record=data)

    def no_record_axis(x, y=None):
        t = numpyro.sample("t", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(t, 1.0), obs=jnp.sum(y))

    with pytest.raises(ValueError, match="first axis must be the record axis"):
        from_numpyro(no_record_axis, observed_site="y", example_record=data)

    with pytest.raises(ValueError, match=r"share names \['x'\]"):
        from_numpyro(linreg, observed_site="y", example_record=data, model_kwargs={"x": 1})


def test_latent_discovery_draws_nothing_and_the_density_is_numpyros(monkeypatch):
    """The trace that finds the latents puts a point of each support in place of a random draw
    (numpyro's feasible_like): interval, simplex, positive and plated latents, with no random
    number drawn while adapting. The adapted potential then equals numpyro's own potential
    energy (its log joint in unconstrained space, Jacobians included) at random thetas."""
    def m(x, y=None):
        a = numpyro.sample("a", dist.Uniform(-1.0, 3.0))
        p = numpyro.sample("p", dist.Dirichlet(jnp.ones(3)))
        s = numpyro.sample("s", dist.HalfNormal(1.0).expand([2]).to_event(1))
        with numpyro.plate("groups", 4):
            u = numpyro.sample("u", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(a + x[..., 0] * s[0] + p[0] + jnp.sum(u), s[1]), obs=y)

    rng = np.random.default_rng(3)
    data = make_dataset(x=rng.normal(size=(6, 2)), y=rng.normal(size=6))

    def no_draws(*args, **kwargs):
        raise AssertionError("adapting the model drew random numbers")

    with monkeypatch.context() as patched:
        for name in ("split", "normal", "uniform", "gamma"):
            patched.setattr(jax.random, name, no_draws)
        model = from_numpyro(m, observed_site="y", example_record=data)
    assert model.dim == 1 + 2 + 2 + 4  # a, p (a 3-simplex: 2 free), s, u, in sorted site order
    from numpyro.infer.util import potential_energy

    for _ in range(3):
        theta = rng.normal(size=model.dim)
        params = {"a": jnp.asarray(theta[0]), "p": jnp.asarray(theta[1:3]), "s": jnp.asarray(theta[3:5]), "u": jnp.asarray(theta[5:])}
        ours = float(model.potential(jnp.asarray(theta), data))
        numpyros = float(potential_energy(m, (), {"x": jnp.asarray(data["x"]), "y": jnp.asarray(data["y"])}, params))
        assert ours == pytest.approx(numpyros, rel=1e-12)

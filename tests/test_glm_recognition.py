"""GLMs written as general models are recognised by a proof on their programs (issue 21,
dpjax.engine.detect.glm_form_of): theta reaches the record log-likelihood only through one
affine scalar. A recognised model runs on the GLM path and gives the reference path's numbers
(1e-10 in float64, 2e-4 in float32, as in test_engine_paths); a model that is not a GLM, or
whose theta the proof cannot follow, is left to the batched path."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import dpjax
from dpjax import samplers
from dpjax.engine import runner
from dpjax.engine.detect import glm_form_of
from dpjax.models import from_numpyro, mlp_classifier

N, DIM = 23, 3


def _pair(adjacency="replace-one", seed=0):
    rs = np.random.default_rng(seed)
    with jax.enable_x64(True):
        x = rs.normal(size=(N, DIM - 1)) * 1.5
        y = (rs.uniform(size=N) < 0.5).astype(np.float64)
        data = dpjax.make_dataset(x=x, y=y)
        if adjacency == "add-remove":
            return dpjax.add_remove(data, 4)
        return dpjax.replace_one(data, 4, {"x": -2.0 * x[4] + 1.0, "y": np.array(1.0 - y[4])})


def _logistic_with_intercept(t, r):
    z = jnp.dot(t[:-1], r["x"]) + 0.5 * t[-1]
    return r["y"] * z - jax.nn.softplus(z)


def _prior(t):
    return -0.5 * jnp.sum(t**2)


def _numpyro_logistic(x, y=None):
    w = numpyro.sample("w", dist.Normal(jnp.zeros(DIM - 1), 1.0).to_event(1))
    b = numpyro.sample("b", dist.Normal(0.0, 1.0))
    numpyro.sample("y", dist.Bernoulli(logits=x @ w + b), obs=y)


def _numpyro_model(pair):
    return from_numpyro(_numpyro_logistic, observed_site="y", example_record=pair.dataset)


def _agree(got, ref, dtype):
    tol = 1e-10 if dtype == jnp.float64 else 2e-4
    for field in ("positions", "neighbour_positions", "path_loss"):
        np.testing.assert_allclose(getattr(got, field), getattr(ref, field), rtol=tol, atol=tol)
    assert np.array_equal(got.finite, ref.finite)


KW = dict(num_pairs=19, num_steps=16, record_steps=[4, 16], progress=False)


@pytest.mark.parametrize("which,sampler,dtype,adjacency", [
    ("plain", samplers.sgld(0.01, batching="uniform", batch_size=5, clip_norm=0.5), jnp.float64, "replace-one"),
    ("plain", samplers.sgld(0.01, batching="poisson", sampling_rate=0.3), jnp.float32, "add-remove"),
    ("numpyro", samplers.ula(0.01, clip_norm=0.7), jnp.float64, "add-remove"),
    ("numpyro", samplers.cyclic_sgld(0.01, batch_size=4), jnp.float32, "replace-one"),
])
def test_a_recognised_glm_runs_the_glm_path_with_the_reference_numbers(which, sampler, dtype, adjacency):
    pair = _pair(adjacency)
    model = dpjax.Model(_logistic_with_intercept, _prior, dim=DIM, name="logistic-intercept") if which == "plain" else _numpyro_model(pair)
    init = lambda k: 0.3 * jax.random.normal(k, (DIM,))  # noqa: E731
    ref = dpjax.run_coupled(5, model, pair, sampler, engine="reference", dtype=dtype, init=init, **KW)
    got = dpjax.run_coupled(5, model, pair, sampler, engine="auto", dtype=dtype, init=init, **KW)
    assert got.config["engine"] == "glm"
    _agree(got, ref, dtype)
    assert np.abs(ref.path_loss[-1]).max() > 0


def test_the_recognised_glm_has_the_models_design_and_loss():
    """Design a(r) = (x, 0.5) and offset 0 for the plain model (x . w + 0.5 b), the loss
    softplus(eta) - y eta, read back through the GLM's host and device functions, in float64."""
    pair = _pair()
    model = dpjax.Model(_logistic_with_intercept, _prior, dim=DIM)
    glm = glm_form_of(model, pair.dataset).glm
    x = np.asarray(pair.dataset.fields["x"])
    np.testing.assert_array_equal(glm.design_matrix(pair.dataset.fields), np.concatenate([x, np.full((N, 1), 0.5)], axis=1))
    response = glm.responses(pair.dataset.fields)
    np.testing.assert_array_equal(response["offset"], np.zeros(N))
    with jax.enable_x64(True):
        y0 = jax.tree.map(lambda v: jnp.asarray(v[0]), response)
        for eta in (-3.0, 0.2, 4.0):
            expected = np.logaddexp(0.0, eta) - float(y0["fields"]["y"]) * eta
            assert float(glm.loss(y0, jnp.float64(eta))) == pytest.approx(expected, rel=1e-14)
            assert float(glm.derivative(y0, jnp.float64(eta))) == pytest.approx(1 / (1 + np.exp(-eta)) - float(y0["fields"]["y"]), rel=1e-13)
    assert glm_form_of(model, pair.dataset) is glm_form_of(model, pair.dataset)  # one object: compiled programs key on it


def test_models_that_are_not_glms_are_left_alone():
    pair = _pair()
    not_glm = {
        "two predictors": lambda t, r: -jnp.cosh(jnp.dot(t[:-1], r["x"])) - (t[-1] * r["y"]) ** 2,
        "quadratic in theta": lambda t, r: -jnp.sum(t**2) * r["y"],
        "theta into a jitted helper": lambda t, r: jax.jit(lambda a: -jnp.cosh(jnp.dot(a[:-1], r["x"])))(t),
        "a branch on theta": lambda t, r: jnp.where(t[0] > 0, 1.0, 2.0) * jnp.dot(t[:-1], r["x"]),
    }
    for name, ll in not_glm.items():
        model = dpjax.Model(ll, _prior, dim=DIM, name=name)
        assert glm_form_of(model, pair.dataset) is None, name
        assert runner.recognised_model("glm", model, pair) is model, name  # ("auto" finds the quadratic one quadratic)
    mlp = mlp_classifier(1.0, DIM - 1, 4)
    assert glm_form_of(mlp, pair.dataset) is None  # declares its own fused pass: not touched
    # a declared GLM is never re-derived; engine='batched' never recognises
    numpyro_model = _numpyro_model(pair)
    assert runner.recognised_model("batched", numpyro_model, pair) is numpyro_model
    recognised = runner.recognised_model("auto", numpyro_model, pair)
    assert recognised.glm is not None and runner.recognised_model("auto", recognised, pair) is recognised

"""The GLM path's one gather (issue 21): every response leaf that is one float per record joins
the packed rows [x_i, ||x_i||, mask_i, leaves...], so a recognised GLM (whose response is the
fields its loss reads plus an offset) reads its batch in one gather like a declared one; the
Pallas GLM kernel, whose loss takes a bare y, refuses a pytree response with a clear error."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpjax
from dpjax import samplers
from dpjax.engine import gradients
from dpjax.engine.detect import glm_form_of

N, DIM = 11, 3


def _pair():
    rs = np.random.default_rng(1)
    with jax.enable_x64(True):
        x = rs.normal(size=(N, DIM))
        y = (rs.uniform(size=N) < 0.5).astype(np.float64)
        return dpjax.replace_one(dpjax.make_dataset(x=x, y=y), 2, {"x": -x[2], "y": np.array(1.0 - y[2])})


def _loglik(t, r):
    z = jnp.dot(r["x"], t)
    return r["y"] * z - jax.nn.softplus(z)


def test_a_recognised_glms_response_leaves_join_the_packed_rows():
    pair = _pair()
    model = glm_form_of(dpjax.Model(_loglik, lambda t: -0.5 * jnp.sum(t**2), dim=DIM, name="plain-logistic"), pair.dataset)
    assert model is not None
    data = gradients.glm_data(model.glm, pair, np.float64)
    leaves = jax.tree.leaves(data["response"])
    assert len(leaves) == 2  # the field y and the offset
    assert data["packed"].shape == (N, DIM + 2 + len(leaves))
    # the packed columns are the response's leaves, in the pytree's order
    for j, leaf in enumerate(leaves):
        np.testing.assert_array_equal(data["packed"][:, DIM + 2 + j], leaf)
    declared = gradients.glm_data(dpjax.models.logistic_regression(1.0, DIM).glm, pair, np.float64)
    assert declared["packed"].shape == (N, DIM + 3)


def test_the_pallas_glm_kernel_refuses_a_pytree_response_by_name():
    pair = _pair()
    model = dpjax.Model(_loglik, lambda t: -0.5 * jnp.sum(t**2), dim=DIM, name="plain-logistic")
    sampler = samplers.sgld(0.01, batching="uniform", batch_size=4)
    with pytest.raises(ValueError, match="engine='glm'"):
        dpjax.run_coupled(0, model, pair, sampler, num_pairs=2, num_steps=1, progress=False, engine="pallas-glm")


def test_auto_on_a_gpu_would_not_send_a_recognised_glm_to_the_pallas_kernel():
    """choose_engine('auto') asks pallas_glm.unsupported_reason on a GPU; for a recognised GLM
    (a pytree response) it must give a reason, not raise (it raised TypeError from probing the
    loss with a bare y, which would have stopped every recognised GLM's run on a GPU)."""
    from dpjax.engine import pallas_glm

    pair = _pair()
    model = glm_form_of(dpjax.Model(_loglik, lambda t: -0.5 * jnp.sum(t**2), dim=DIM, name="plain-logistic"), pair.dataset)
    reason = pallas_glm.unsupported_reason(model, samplers.sgld(0.01, batching="uniform", batch_size=4))
    assert reason is not None and "engine='glm'" in reason
    assert pallas_glm.unsupported_reason(dpjax.models.logistic_regression(1.0, DIM), samplers.sgld(0.01, batching="uniform", batch_size=4)) is None

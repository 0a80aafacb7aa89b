"""The MLP classifier (dpjax.models.mlp): its likelihood against a hand-written numpy
reference, its ghost-norm record gradient norms and its fused clipped batch gradient
(``weighted_grad_sum``) against vmap(grad) per-record gradients, and its runs on the coupled
engine: the batched path (the fused pass, or ghost norms and a reverse pass) against the
reference path with and without clipping in float32 and float64, and the size of one coupled
step's program against the hidden width."""
from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend import core as jex_core

import dpjax
from dpjax import samplers
from dpjax.engine import reference, runner
from dpjax.engine.gradients import BatchedGradients, GenericGradients, provider_for
from dpjax.models import mlp_classifier, mlp_classifier_dataset, mlp_dim, mlp_unflatten
from dpjax.samplers.kernel import clip_record_grads


def _data(n, p, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    x = scale * rng.normal(size=(n, p))
    y = (rng.random(n) < 0.5).astype(np.float64)
    return x, y


def _numpy_log_likelihood(theta, x, y, p, m, act):
    """log p(y | x, theta) written out with loops over units, in float64 numpy."""
    theta = np.asarray(theta, np.float64)
    w1 = theta[: p * m].reshape(p, m)
    b1 = theta[p * m: p * m + m]
    w2 = theta[p * m + m: p * m + 2 * m]
    b2 = theta[-1]
    z = b2
    for k in range(m):
        u = b1[k] + sum(x[j] * w1[j, k] for j in range(p))
        z += w2[k] * act(u)
    # log sigmoid(z) = -log(1 + e^-z), stably
    return -(y * np.logaddexp(0.0, -z) + (1 - y) * np.logaddexp(0.0, z))


ACTS = {"tanh": np.tanh, "softplus": lambda u: np.logaddexp(0.0, u), "sigmoid": lambda u: 1.0 / (1.0 + np.exp(-u))}


@pytest.mark.parametrize("activation", sorted(ACTS))
def test_log_likelihood_and_prior_match_a_hand_written_reference(activation):
    p, m = 3, 5
    model = mlp_classifier(0.7, p, m, activation)
    assert model.dim == mlp_dim(p, m) == p * m + 2 * m + 1
    x, y = _data(6, p, seed=1, scale=2.0)
    rng = np.random.default_rng(2)
    with jax.enable_x64(True):
        for theta in (rng.normal(size=model.dim), 4.0 * rng.normal(size=model.dim)):  # the second gives large margins
            mine = np.asarray(jax.vmap(model.log_likelihood, in_axes=(None, 0))(jnp.asarray(theta), {"x": jnp.asarray(x), "y": jnp.asarray(y)}))
            ref = np.array([_numpy_log_likelihood(theta, x[i], y[i], p, m, ACTS[activation]) for i in range(len(y))])
            np.testing.assert_allclose(mine, ref, rtol=1e-12, atol=1e-300)
            # the prior is N(0, I / 0.7): its log-density in closed form
            want = 0.5 * model.dim * math.log(0.7 / (2 * math.pi)) - 0.35 * float(np.sum(theta**2))
            assert float(model.log_prior(jnp.asarray(theta))) == pytest.approx(want, rel=1e-13)
            # the gradient against central differences of the numpy reference (independent of autodiff)
            g = np.asarray(model.record_grad(jnp.asarray(theta), {"x": jnp.asarray(x[0]), "y": jnp.asarray(y[0])}))
            h = 1e-6
            fd = np.array([
                -(_numpy_log_likelihood(theta + h * e, x[0], y[0], p, m, ACTS[activation]) - _numpy_log_likelihood(theta - h * e, x[0], y[0], p, m, ACTS[activation])) / (2 * h)
                for e in np.eye(model.dim)
            ])
            np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8 * max(1.0, np.abs(fd).max()))


def test_unflatten_order_is_w1_b1_w2_b2():
    theta = jnp.arange(mlp_dim(2, 3), dtype=jnp.float32)
    w1, b1, w2, b2 = mlp_unflatten(theta, 2, 3)
    assert w1.shape == (2, 3) and w1[1, 0] == 3 and b1[0] == 6 and w2[0] == 9 and b2 == 12


@pytest.mark.parametrize("activation", sorted(ACTS))
@pytest.mark.parametrize("scale", [0.3, 1.0, 5.0])
def test_ghost_norms_equal_per_record_gradient_norms(activation, scale):
    p, m = 4, 6
    model = mlp_classifier(1.0, p, m, activation)
    x, y = _data(32, p, seed=3, scale=scale)
    rng = np.random.default_rng(4)
    with jax.enable_x64(True):
        records = {"x": jnp.asarray(x), "y": jnp.asarray(y)}
        for theta in (rng.normal(size=model.dim), scale * rng.normal(size=model.dim), np.zeros(model.dim)):
            theta = jnp.asarray(theta)
            grads = np.asarray(jax.vmap(jax.grad(model.log_likelihood), in_axes=(None, 0))(theta, records))
            # scaled by the largest entry: squares of tiny saturated gradients would underflow
            big = np.max(np.abs(grads), axis=1, keepdims=True)
            want = big[:, 0] * np.linalg.norm(grads / np.where(big > 0, big, 1.0), axis=1)
            ghost = np.asarray(model.record_grad_norms(theta, records))
            assert ghost.shape == (32,)
            np.testing.assert_allclose(ghost, want, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("route", ["fused", "ghost norms"])
def test_ghost_norm_clipped_sums_equal_vmap_clipped_sums_with_absent_records(route):
    """The batched provider's clipped batch sum (the fused pass, or ghost norms and one reverse
    pass) equals the sum of vmap(grad) gradients clipped one by one; absent records (weight or
    mask 0), even with inf or NaN features, contribute nothing."""
    p, m, b = 3, 8, 16
    model = mlp_classifier(1.0, p, m)
    if route == "ghost norms":
        model = dataclasses.replace(model, weighted_grad_sum=None)
    x, y = _data(b, p, seed=5, scale=2.0)
    active = np.ones(b, bool)
    active[[0, 5, 11]] = False
    x_bad = x.copy()
    x_bad[5] = np.inf
    x_bad[11] = np.nan
    sampler = samplers.sgld(1e-3, batching="uniform", batch_size=b, clip_norm=0.4)
    provider = BatchedGradients(model)
    rng = np.random.default_rng(6)
    with jax.enable_x64(True):
        for theta in (rng.normal(size=model.dim), 3 * rng.normal(size=model.dim)):
            theta = jnp.asarray(theta)
            clean = {"x": jnp.asarray(x), "y": jnp.asarray(y)}
            grads = jax.vmap(model.record_grad, in_axes=(None, 0))(theta, clean)
            want = np.asarray(clip_record_grads(grads, jnp.asarray(active, jnp.float64), 0.4))
            norms = np.linalg.norm(np.asarray(grads), axis=1)
            assert np.any(norms[active] > 0.4) and np.any(norms[active] < 0.4)  # both sides of the clip are exercised
            got = np.asarray(provider._sum(sampler, theta, {"x": jnp.asarray(x_bad), "y": jnp.asarray(y)}, jnp.asarray(active)))
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14 * np.abs(want).max())
            none = np.asarray(provider._sum(sampler, theta, {"x": jnp.asarray(x_bad), "y": jnp.asarray(y)}, jnp.zeros(b, bool)))
            assert np.all(none == 0)


@pytest.mark.parametrize("activation", sorted(ACTS))
def test_fused_weighted_sum_equals_vmap_grad_sums(activation):
    """weighted_grad_sum (one forward pass, the norms, two matrix products) against vmap(grad)
    record gradients: the norms it hands ``weigh`` equal theirs, and the weighted sum equals
    sum_j weigh(norms)_j grad_j, for coefficients that depend on the norms (clip factors,
    signs, zeros), in float64 to 1e-12 and in float32 against the float64 values."""
    p, m, b = 4, 6, 24
    model = mlp_classifier(1.0, p, m, activation)
    x, y = _data(b, p, seed=8, scale=2.0)
    rng = np.random.default_rng(9)
    signs = np.where(rng.random(b) < 0.3, -1.0, 1.0) * (rng.random(b) < 0.8)  # +-1 and zeros

    with jax.enable_x64(True):
        records = {"x": jnp.asarray(x), "y": jnp.asarray(y)}
        for theta in (rng.normal(size=model.dim), 3.0 * rng.normal(size=model.dim)):
            grads = np.asarray(jax.vmap(jax.grad(model.log_likelihood), in_axes=(None, 0))(jnp.asarray(theta), records))
            big = np.max(np.abs(grads), axis=1, keepdims=True)
            want_norms = big[:, 0] * np.linalg.norm(grads / np.where(big > 0, big, 1.0), axis=1)
            clip = float(np.median(want_norms))  # half the records clipped

            def clip_weigh(norms):
                return jnp.asarray(signs, norms.dtype) * jnp.minimum(1.0, clip / jnp.where(norms > 0, norms, 1.0))

            got = np.asarray(jax.jit(lambda t: model.weighted_grad_sum(t, records, clip_weigh))(jnp.asarray(theta)))
            handed = np.asarray(jax.jit(lambda t: model.weighted_grad_sum(t, records, lambda n: n * 0 + n))(jnp.asarray(theta)))
            assert got.shape == (model.dim,)
            factors = np.asarray(clip_weigh(jnp.asarray(want_norms)))
            assert np.any((factors != 0) & (np.abs(factors) < 1)) and np.any(np.abs(factors) == 1)  # both sides of the clip
            want = factors @ grads

            def close(got, coefficients, rtol=1e-12, floor=1e-13):
                # relative to each entry's sum of magnitudes, plus `floor` of the largest: act'(u) is
                # computed from h = act(u) as autodiff does, so a saturated unit's slope carries an
                # absolute rounding error of order eps (compiled and eager programs round it differently)
                scale = np.abs(coefficients) @ np.abs(grads)
                np.testing.assert_array_less(np.abs(got - coefficients @ grads), rtol * scale + floor * scale.max())

            close(got, factors)
            # the norms the hook hands weigh: weighted by themselves, sum_j n_j grad_j
            close(handed, want_norms)
            # unclipped: weigh ignores the norms, the sum is sum_j c_j grad_j
            close(np.asarray(model.weighted_grad_sum(jnp.asarray(theta), records, lambda n: jnp.asarray(signs))), signs)
            # float32: the same sums to float32 rounding
            got32 = np.asarray(model.weighted_grad_sum(jnp.asarray(theta, jnp.float32), {"x": jnp.asarray(x, jnp.float32), "y": jnp.asarray(y, jnp.float32)},
                                                       clip_weigh))
            assert got32.dtype == np.float32
            # (float32 inputs and weights are rounded too: pre-activations of size ~10 move by ~1e-6,
            # and every saturated unit's slope by that much absolutely)
            close(got32, factors, rtol=1e-5, floor=1e-5)


def test_declared_hooks_that_do_not_match_the_model_are_refused():
    """check_grad_hooks (run before every batched run) refuses norms or fused sums that are not
    the model's own record gradients', and accepts the shipped ones."""
    from dpjax.models.structure import check_grad_hooks

    p, m = 3, 5
    model = mlp_classifier(1.0, p, m)
    pair = _pair(24, p)
    check_grad_hooks(model, pair.dataset)  # the shipped hooks pass
    off_sum = dataclasses.replace(model, weighted_grad_sum=lambda t, r, weigh: 1.001 * model.weighted_grad_sum(t, r, weigh))
    off_norms = dataclasses.replace(model, record_grad_norms=lambda t, r: 1.001 * model.record_grad_norms(t, r))
    # a fused sum that hands weigh wrong norms is caught through the norm-dependent coefficients
    wrong_norms_inside = dataclasses.replace(model, weighted_grad_sum=lambda t, r, weigh: model.weighted_grad_sum(t, r, lambda n: weigh(2.0 * n)))
    sampler = samplers.sgld(1e-3, batching="uniform", batch_size=6, clip_norm=0.3)
    for bad, what in ((off_sum, "weighted_grad_sum"), (off_norms, "record_grad_norms"), (wrong_norms_inside, "weighted_grad_sum")):
        with pytest.raises(ValueError, match=f"its {what} do(es)? not match its log_likelihood"):
            provider_for(bad, pair, "batched", jnp.float64, sampler)


def test_with_structure_refuses_declarations_of_the_wrong_kind():
    """A hook that is not callable, or a GLM that is not a GLM, is a TypeError naming the
    argument and what it must be, before any run."""
    model = mlp_classifier(1.0, 3, 5)
    for kwargs, rule in (({"weighted_grad_sum": 1.0}, r"weighted_grad_sum=1.0 must be a callable \(theta, records, weigh\)"),
                         ({"record_grad_norms": "norms"}, r"record_grad_norms='norms' must be a callable \(theta, records\)"),
                         ({"glm": "logistic"}, r"glm='logistic' must be a dpjax.models.GLM")):
        with pytest.raises(TypeError, match=rule):
            model.with_structure(**kwargs)


@pytest.mark.parametrize("clip", [0.3, None])
def test_fused_gap_and_sums_equal_the_reference_provider(clip):
    """The batched provider's batch sums and drift gap (fused passes; D''s record selected into
    the neighbour's rows; the gap as one signed two-record sum) equal the reference provider's
    (vmap(grad), clipped one by one), for replace-one and add-remove pairs and batches that hold
    the differing slot once, twice or not at all."""
    from dpjax.samplers.batching import Batch

    p, m, n = 3, 5, 12
    model = mlp_classifier(1.0, p, m)
    sampler = samplers.sgld(1e-3, batching="uniform", batch_size=5, clip_norm=clip)
    x, y = _data(n, p, seed=10, scale=1.5)
    rng = np.random.default_rng(11)
    with jax.enable_x64(True):
        data = mlp_classifier_dataset(x, y)
        pairs = [dpjax.replace_one(data, 2, {"x": np.full(p, 3.0), "y": np.array(1.0 - y[2])}), dpjax.add_remove(data, 2)]
        batches = [Batch(jnp.asarray(v, jnp.int32), jnp.ones(5), jnp.asarray(n / 5.0)) for v in ([2, 0, 7, 2, 11], [1, 2, 3, 4, 5], [0, 1, 3, 4, 5])]
        for pair in pairs:
            fast, host = provider_for(model, pair, "batched", jnp.float64, sampler)
            ref = GenericGradients(model)
            data_dev = jax.tree.map(jnp.asarray, host)
            for _ in range(2):
                x0, xp0 = jnp.asarray(rng.normal(size=model.dim)), jnp.asarray(rng.normal(size=model.dim))
                for batch in batches:
                    got = fast.estimates(sampler, x0, xp0, data_dev, jnp.int32(2), batch, False)
                    want = ref.estimates(sampler, x0, xp0, data_dev, jnp.int32(2), batch, False)
                    for g, w_ in zip(got, want):
                        np.testing.assert_allclose(np.asarray(g), np.asarray(w_), rtol=1e-12, atol=1e-12 * np.abs(np.asarray(w_)).max())
                gap, want_gap = fast.gap(sampler, x0, data_dev, jnp.int32(2)), ref.gap(sampler, x0, data_dev, jnp.int32(2))
                assert np.abs(np.asarray(want_gap)).max() > 0
                np.testing.assert_allclose(np.asarray(gap), np.asarray(want_gap), rtol=1e-12, atol=1e-13 * np.abs(np.asarray(want_gap)).max())


def _pair(n, p, seed=7):
    x, y = _data(n, p, seed=seed, scale=1.5)
    with jax.enable_x64(True):
        dataset = mlp_classifier_dataset(x, y)
        return dpjax.replace_one(dataset, 2, {"x": np.full(p, 3.0), "y": np.array(1.0 - y[2])})


ENGINE_CASES = [
    # batching, clip norm, dtype (the slower float32 and full-batch cases marked slow)
    ("uniform", 0.3, jnp.float64),
    ("uniform", None, jnp.float64),
    ("uniform", 0.3, jnp.float32),
    ("full", 0.3, jnp.float64),
    pytest.param("uniform", None, jnp.float32, marks=pytest.mark.slow),
    pytest.param("poisson", 0.3, jnp.float64, marks=pytest.mark.slow),
]


@pytest.mark.parametrize("batching,clip,dtype", ENGINE_CASES)
def test_batched_engine_equals_reference_engine(batching, clip, dtype):
    """The batched path on the fused route (the model's weighted_grad_sum) and on the ghost-norm
    route (the hook removed: norms, then a reverse pass) against the reference path (vmap(grad)
    record gradients clipped one by one): the same positions and path losses to rounding
    (1e-10 in float64; 2e-4 in float32, sums in another order over 30 steps)."""
    p, m, n = 3, 4, 24
    model = mlp_classifier(1.0, p, m)
    ghost_only = dataclasses.replace(model, weighted_grad_sum=None)
    pair = _pair(n, p)
    if batching == "full":
        sampler = samplers.ula(2e-3, clip_norm=clip)
    elif batching == "poisson":
        sampler = samplers.sgld(2e-3, batching="poisson", sampling_rate=0.25, clip_norm=clip)
    else:
        sampler = samplers.sgld(2e-3, batching="uniform", batch_size=6, clip_norm=clip)
    init = lambda key: 0.5 * jax.random.normal(key, (model.dim,))
    kw = dict(num_pairs=6, num_steps=30, record_steps=[10, 30], init=init, progress=False, dtype=dtype)
    ref = dpjax.run_coupled(3, model, pair, sampler, engine="reference", **kw)
    fused = dpjax.run_coupled(3, model, pair, sampler, engine="batched", **kw)
    ghost = dpjax.run_coupled(3, ghost_only, pair, sampler, engine="batched", **kw)
    assert ref.config["engine"] == "reference" and fused.config["engine"] == "batched" == ghost.config["engine"]
    assert runner.choose_engine("auto", model, sampler) == "batched"
    assert np.all(ref.finite)
    assert np.max(np.abs(ref.path_loss)) > 0  # the differing record moves the chains apart
    tol = 1e-10 if dtype == jnp.float64 else 2e-4
    for got in (fused, ghost):
        assert np.array_equal(got.finite, ref.finite)
        np.testing.assert_allclose(got.positions, ref.positions, rtol=tol, atol=tol)
        np.testing.assert_allclose(got.neighbour_positions, ref.neighbour_positions, rtol=tol, atol=tol)
        np.testing.assert_allclose(got.path_loss, ref.path_loss, rtol=tol, atol=tol)


def _count_equations(jaxpr) -> int:
    """Equations of a jaxpr, counting those of every sub-jaxpr (loops, conditionals, calls)."""
    total = 0
    for eqn in jaxpr.eqns:
        total += 1
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                if isinstance(sub, jex_core.ClosedJaxpr):
                    total += _count_equations(sub.jaxpr)
                elif isinstance(sub, jex_core.Jaxpr):
                    total += _count_equations(sub)
    return total


def coupled_step_equations(model, pair, sampler, dtype=jnp.float64) -> int:
    """Jaxpr equations of one coupled step of one pair on the batched path."""
    n = pair.dataset.num_slots
    with jax.enable_x64(True):
        provider, host = provider_for(model, pair, "batched", dtype, sampler)
        data = jax.device_put(host)
        sampler_arg = runner._sampler_leaves(sampler, dtype)
        _, keys = reference.chain_setup(sampler_arg, jax.random.key(0), jnp.arange(1, dtype=jnp.uint32), num_slots=n)
        words, chain_state = keys.words[0], jax.tree.map(lambda v: v[0], keys.batching)
        x0 = jnp.zeros(model.dim, dtype)
        state = reference.PairState(x0, x0, jnp.zeros((), dtype), jnp.ones((), bool))
        cursor = sampler_arg.batching.start(words, chain_state, jnp.int32(0), n)

        def step(state, z):
            return reference.coupled_step(sampler_arg, provider, data, jnp.int32(pair.index), n, words, chain_state, cursor, state, jnp.int32(0), z)

        return _count_equations(jax.make_jaxpr(step)(state, jnp.zeros(model.dim, dtype)).jaxpr)


def test_program_size_does_not_grow_with_hidden_width():
    p = 20
    pair = _pair(64, p)
    sampler = samplers.sgld(1e-3, batching="uniform", batch_size=16, clip_norm=0.5)
    narrow = coupled_step_equations(mlp_classifier(1.0, p, 8), pair, sampler)
    wide = coupled_step_equations(mlp_classifier(1.0, p, 64), pair, sampler)
    assert narrow == wide, (narrow, wide)
    assert wide < 2000  # of the order of blackjax's step (~200), not the 1.19 million of issue 21


@pytest.mark.slow
def test_compile_time_of_the_20_64_1_network():
    """Goal of issue 21: one coupled step of the 20-64-1 MLP (d = 1,409) with clipping compiles
    in <= 30 s on this CPU. Measured in CPU seconds of this process (the first call: tracing,
    compiling, two steps): on a shared 2-core machine the wall clock also counts other
    processes (36 s wall at load 18, 15 s at load 15; see BENCHMARKS.md)."""
    import time

    p = 20
    model = mlp_classifier(1.0, p, 64)
    assert model.dim == 1409
    pair = _pair(256, p)
    sampler = samplers.sgld(1e-4, batching="uniform", batch_size=128, clip_norm=1.0)
    cpu = time.process_time()
    result = dpjax.run_coupled(0, model, pair, sampler, num_pairs=2, num_steps=2, progress=False)
    cpu = time.process_time() - cpu
    assert result.config["engine"] == "batched"
    assert np.all(result.finite)
    assert cpu <= 30.0, (cpu, result.config["compile_seconds"])

"""The Pallas GLM kernel (dpjax.engine.pallas_glm) against the XLA GLM path (issue 21, item 2).

On CPU the kernel runs in Pallas's interpret mode: it must give the XLA path's numbers
(:func:`dpjax.engine.reference.advance` with :class:`GLMGradients`, itself tested against the
autodiff reference path in test_engine.py) to rounding, for every batching, with and without
clipping, for both adjacencies, in float32 and float64. The GPU program is checked by lowering
for CUDA (Pallas -> Triton) without running.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpjax
from dpjax import samplers
from dpjax.engine import pallas_glm, pallas_kernel, randomness as rng, reference
from dpjax.engine.gradients import provider_for
from dpjax.models.logistic import logistic_regression
from dpjax.models.linear_regression import bayesian_linear_regression

N = 23
NUM_PAIRS = 130  # two blocks of 128, the second padded


def _logistic_pair(dim: int, adjacency: str):
    rs = np.random.default_rng(dim)
    x = rs.normal(size=(N, dim))
    y = (rs.uniform(size=N) < 0.5).astype(np.float64)
    with jax.enable_x64(True):
        data = dpjax.make_dataset(x=x, y=y)
        if adjacency == "add-remove":
            return dpjax.add_remove(data, 4)
        # a far-out record with the other label: the differing record's term is large
        return dpjax.replace_one(data, 4, {"x": x[4] + 2.0, "y": np.array(1.0 - y[4])})


def _both_paths(model, pair, sampler, dtype, start, count):
    """(XLA GLM path, Pallas kernel in interpret mode) states after steps start..start+count-1,
    from a random shared start with a nonzero path loss already accumulated."""
    dim = model.dim
    with jax.enable_x64(dtype == jnp.float64), jax.default_matmul_precision("highest"):
        provider, host = provider_for(model, pair, "glm", dtype, sampler)
        data = jax.device_put(host)
        sampler_arg = jax.tree.map(lambda v: np.asarray(v, dtype) if isinstance(v, float) else v, sampler)
        _, keys = reference.chain_setup(sampler_arg, jax.random.key(5), jnp.arange(NUM_PAIRS, dtype=jnp.uint32), num_slots=N)
        x0 = jax.random.normal(jax.random.key(1), (NUM_PAIRS, dim), dtype)
        state = reference.PairState(x0, x0 + 0.01, jnp.full(NUM_PAIRS, 0.25, dtype), jnp.ones(NUM_PAIRS, bool))
        index = jnp.asarray(pair.index, jnp.int32)
        xla = reference.advance(sampler_arg, data, index, keys.words, keys.batching, state, jnp.int32(start), jnp.int32(count),
                                provider=provider, num_slots=N, unroll=1)
        kernel = pallas_glm.advance(sampler_arg, data, index, keys, state, jnp.int32(start), jnp.int32(count),
                                    provider=provider, num_slots=N, mesh=None, interpret=True)
        return jax.device_get(xla), jax.device_get(kernel)


slow = pytest.mark.slow
CASES = [
    # dim, sampler, adjacency, dtype; the unmarked four cover uniform and full batches, clipped
    # and not, both adjacencies and both dtypes (each case compiles its own interpreted kernel)
    (4, samplers.sgld(0.01, batching="uniform", batch_size=4), "replace-one", jnp.float32),
    (4, samplers.sgld(0.01, batching="uniform", batch_size=4, clip_norm=0.5), "add-remove", jnp.float32),
    (2, samplers.ula(0.005), "add-remove", jnp.float64),
    (4, samplers.ula(0.005, clip_norm=0.4), "replace-one", jnp.float32),
    # Poisson batches (the breast-cancer audit's sampler), dense in the kernel, gathered in chunks on XLA
    (4, samplers.sgld(0.01, batching="poisson", sampling_rate=0.3, clip_norm=0.5), "add-remove", jnp.float32),
    pytest.param(2, samplers.sgld(0.01, batching="poisson", sampling_rate=0.2), "replace-one", jnp.float64, marks=slow),
    # groups of steps sharing Philox blocks of normals (d = 2 in float32: 2 steps a group, the
    # chunk starting mid-group; every larger group is the same code with more copies)
    pytest.param(2, samplers.sgld(0.01, batching="uniform", batch_size=3, clip_norm=0.3), "add-remove", jnp.float32, marks=slow),
    # cyclic orders: affine and fixed
    pytest.param(2, samplers.cyclic_sgld(0.01, batch_size=5), "replace-one", jnp.float64, marks=slow),
    pytest.param(4, samplers.cyclic_sgld(0.01, batch_size=5, clip_norm=0.5, order=np.random.default_rng(0).permutation(N)), "add-remove", jnp.float32, marks=slow),
]


@pytest.mark.parametrize("dim,sampler,adjacency,dtype", CASES)
def test_kernel_equals_the_xla_glm_path(dim, sampler, adjacency, dtype):
    """Logistic regression: positions, path loss and flags equal the XLA GLM path's to rounding
    (float64 1e-12; float32 2e-5 relative, full precision); start 3 and 13 steps exercise the
    unaligned groups of normal draws and the padded block of pairs."""
    model = logistic_regression(1.0, dim)
    pair = _logistic_pair(dim, adjacency)
    assert pallas_glm.unsupported_reason(model, sampler) is None
    xla, kernel = _both_paths(model, pair, sampler, dtype, start=3, count=13)
    tol = 1e-12 if dtype == jnp.float64 else 2e-5
    for got, want in zip(kernel[:3], xla[:3]):
        assert got.dtype == want.dtype == jnp.dtype(dtype)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert np.array_equal(kernel.finite, xla.finite) and xla.finite.all()
    # the differing record was used and moved the path loss off its start
    assert np.abs(xla.path_loss - 0.25).max() > 1e-3


@pytest.mark.slow
def test_diverging_pairs_are_flagged_as_on_the_xla_path():
    """A step size that overflows float32 within the chunk: the kernel flags the same pairs
    non-finite as the XLA path (a privacy number is never silently wrong)."""
    model = logistic_regression(1.0, 4)
    pair = _logistic_pair(4, "replace-one")
    xla, kernel = _both_paths(model, pair, samplers.sgld(1e6, batching="uniform", batch_size=4), jnp.float32, start=0, count=13)
    assert not xla.finite.any()
    assert np.array_equal(kernel.finite, xla.finite)


# d of the checks below whose point is not the grouped draws: in float64 d = 3 groups 2 steps
# on shared Philox blocks, and the kernel then holds 4 copies of the step (single steps up to
# the first whole group, the group, single steps after), compiled 2x longer than d = 4's one
# copy (one step a group); the grouped kernel is compared with the XLA path in CASES (d = 2,
# float32) and with itself across chunks (test_chunks_compose_and_a_zero_count_changes_nothing).
UNGROUPED_DIM = 4
# d = 6 (float64): one step a group as well, and padded to 8 rows in the kernel, as d = 3 was
PADDED_DIM = 6


@pytest.mark.slow
def test_kernel_equals_the_xla_glm_path_for_linear_regression():
    """Another loss (Gaussian, derivative beta (eta - y)) and a non-unit prior precision."""
    model = bayesian_linear_regression(2.0, 0.5, dim=UNGROUPED_DIM)
    pair = _logistic_pair(UNGROUPED_DIM, "replace-one")
    assert pallas_glm.unsupported_reason(model, samplers.ula(0.002)) is None
    xla, kernel = _both_paths(model, pair, samplers.sgld(0.002, batching="uniform", batch_size=6, clip_norm=1.0), jnp.float64, start=0, count=9)
    for got, want in zip(kernel[:3], xla[:3]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.slow
def test_chunks_compose_and_a_zero_count_changes_nothing():
    """Steps 0..4 then 5..11 equal 0..11 in one call (a pair's draws depend on (seed, pair, step))."""
    model = logistic_regression(1.0, 3)
    pair = _logistic_pair(3, "replace-one")
    sampler = samplers.sgld(0.01, batching="uniform", batch_size=4)
    with jax.enable_x64(True):
        provider, host = provider_for(model, pair, "glm", jnp.float64, sampler)
        _, keys = reference.chain_setup(sampler, jax.random.key(0), jnp.arange(8, dtype=jnp.uint32), num_slots=N)
        state = reference.PairState(jnp.zeros((8, 3)), jnp.zeros((8, 3)), jnp.zeros(8), jnp.ones(8, bool))
        run = lambda st, a, c: pallas_glm.advance(sampler, host, jnp.int32(pair.index), keys, st, jnp.int32(a), jnp.int32(c), provider=provider,
                                                  num_slots=N, mesh=None, interpret=True)
        whole = run(state, 0, 12)
        parts = run(run(state, 0, 5), 5, 7)
        same = run(state, 0, 0)
    for a, b in zip(whole, parts):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    for a, b in zip(same, state):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


LOWERED = [
    samplers.sgld(0.01, batching="poisson", sampling_rate=0.3, clip_norm=0.5),
    pytest.param(samplers.sgld(0.01, batching="uniform", batch_size=4), marks=slow),
    pytest.param(samplers.cyclic_sgld(0.01, batch_size=5, clip_norm=0.5), marks=slow),
    pytest.param(samplers.ula(0.005), marks=slow),
]


def _triton_calls_lowered_for_cuda(model, pair, sampler, num_pairs: int) -> int:
    """How many Triton calls the kernel's float32 program holds when JAX lowers it for CUDA
    (Pallas -> Triton IR) on this CPU: what a GPU run would compile, without a GPU."""
    from jax import export

    dim, dtype = model.dim, jnp.float32
    provider, data = provider_for(model, pair, "glm", dtype, sampler)
    _, keys = reference.chain_setup(sampler, jax.random.key(0), jnp.arange(num_pairs, dtype=jnp.uint32), num_slots=N)
    zeros = jnp.zeros((num_pairs, dim), dtype)
    state = reference.PairState(zeros, zeros, jnp.zeros(num_pairs, dtype), jnp.ones(num_pairs, bool))
    fn = jax.jit(lambda *a: pallas_glm.advance(*a, provider=provider, num_slots=N, mesh=None, interpret=False))
    exported = export.export(fn, platforms=["cuda"], disabled_checks=[export.DisabledSafetyCheck.custom_call("__gpu$xla.gpu.triton")])(
        sampler, data, jnp.int32(pair.index), keys, state, jnp.int32(0), jnp.int32(10)
    )
    return exported.mlir_module().count("__gpu$xla.gpu.triton")


@pytest.mark.parametrize("sampler", LOWERED)
def test_kernel_lowers_to_triton_for_cuda(sampler):
    """What a GPU run compiles, checked without a GPU: JAX lowers the kernel for CUDA (Pallas ->
    Triton IR) on the CPU; an unsupported primitive (e.g. the loss derivative's) fails here."""
    dim = 5
    model = logistic_regression(1.0, dim)
    assert _triton_calls_lowered_for_cuda(model, _logistic_pair(dim, "replace-one"), sampler, num_pairs=256) == 1


def _poisson_regression(dim):
    """Poisson regression, log p = y eta - exp(eta) - log y!, with its derivative exp(eta) - y."""
    from jax.scipy.special import gammaln

    glm = dpjax.models.GLM(loss=lambda y, eta: jnp.exp(eta) - y * eta + gammaln(y + 1), loss_derivative=lambda y, eta: jnp.exp(eta) - y)
    return dpjax.Model(lambda t, r: r["y"] * (r["x"] @ t) - jnp.exp(r["x"] @ t) - gammaln(r["y"] + 1), lambda t: -0.5 * jnp.sum(t**2), dim=dim,
                       name="poisson-regression", glm=glm)


def _probit_regression(dim):
    """Probit regression, its derivative by autodiff of the loss (GLM.loss_derivative left None)."""
    from jax.scipy.stats import norm

    loglik = lambda y, eta: y * norm.logcdf(eta) + (1 - y) * norm.logcdf(-eta)
    glm = dpjax.models.GLM(loss=lambda y, eta: -loglik(y, eta))
    return dpjax.Model(lambda t, r: loglik(r["y"], r["x"] @ t), lambda t: -0.5 * jnp.sum(t**2), dim=dim, name="probit-regression", glm=glm)


@pytest.mark.slow
@pytest.mark.parametrize("make_model", [_poisson_regression, _probit_regression])
def test_other_glms_equal_the_xla_path_and_lower_for_cuda(make_model):
    """Poisson regression (exp) and probit regression (normal log-cdf, derivative by autodiff):
    the kernel's numbers equal the XLA GLM path's in interpret mode; Poisson's derivative lowers
    to Triton, probit's (erf) does not in this JAX and unsupported_reason says so."""
    dim = PADDED_DIM
    assert rng.group_steps(dim, jnp.float64) == 1 and pallas_kernel._pow2(dim) > dim
    model = make_model(dim)
    pair = _logistic_pair(dim, "replace-one")  # 0/1 responses: valid counts and valid labels
    sampler = samplers.sgld(0.01, batching="uniform", batch_size=4, clip_norm=0.5)
    xla, kernel = _both_paths(model, pair, sampler, jnp.float64, start=0, count=6)
    for got, want in zip(kernel[:3], xla[:3]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    reason = pallas_glm.unsupported_reason(model, sampler)
    if make_model is _probit_regression:
        # the normal cdf needs erf, which this JAX's Triton lowering lacks: refused up front
        # (interpret mode, above, runs it; a GPU could not)
        assert reason is not None and "erf" in reason, reason
        return
    assert reason is None
    assert _triton_calls_lowered_for_cuda(model, pair, sampler, num_pairs=128) == 1


def test_unsupported_configurations_say_why():
    model = logistic_regression(1.0, 3)
    sgld = samplers.sgld(0.01, batching="uniform", batch_size=4)
    assert "GLM structure" in pallas_glm.unsupported_reason(dataclass_without_glm(model), sgld)
    assert "MAX_DIM=32" in pallas_glm.unsupported_reason(logistic_regression(1.0, 33), sgld)
    assert "step-size schedule" in pallas_glm.unsupported_reason(model, samplers.ula(lambda t: 0.01 / (1 + t)))
    assert "batching 'without-replacement'" in pallas_glm.unsupported_reason(model, samplers.sgld(0.01, batching="without-replacement", batch_size=4))
    assert "uses erf, erfc, which Pallas's Triton lowering" in pallas_glm.unsupported_reason(_probit_regression(3), sgld)
    quartic = dataclass_with_prior(model, lambda t: -0.25 * jnp.sum(t**4))
    assert "a theta + c" in pallas_glm.unsupported_reason(quartic, sgld)
    shifted = dataclass_with_prior(model, lambda t: -0.5 * jnp.sum((jnp.arange(3.0) + 1) * (t - 0.5) ** 2))
    assert pallas_glm.unsupported_reason(shifted, sgld) is None  # a diagonal Gaussian with a mean is supported
    a, c = pallas_glm.diagonal_prior(shifted)
    np.testing.assert_allclose(a, [1.0, 2.0, 3.0], rtol=1e-14)
    np.testing.assert_allclose(c, [-0.5, -1.0, -1.5], rtol=1e-14)


def dataclass_without_glm(model):
    import dataclasses

    return dataclasses.replace(model, glm=None, log_likelihood=lambda t, r: -jnp.sum((t - r["x"]) ** 4))


def dataclass_with_prior(model, log_prior):
    import dataclasses

    return dataclasses.replace(model, log_prior=log_prior)


def test_run_coupled_on_the_pallas_glm_path_equals_the_glm_path():
    """engine='pallas-glm' through run_coupled (the runner's dispatch, chunks, recordings) gives
    the XLA GLM path's numbers on CPU (interpret mode); 'auto' takes the kernel only on a GPU."""
    model = logistic_regression(1.0, UNGROUPED_DIM)
    pair = _logistic_pair(UNGROUPED_DIM, "replace-one")
    sampler = samplers.sgld(0.01, batching="uniform", batch_size=4, clip_norm=0.5)
    kw = dict(num_pairs=5, num_steps=6, record_steps=[2, 6], dtype=jnp.float64, progress=False)
    with jax.default_matmul_precision("highest"):
        glm = dpjax.run_coupled(3, model, pair, sampler, engine="glm", **kw)
        kernel = dpjax.run_coupled(3, model, pair, sampler, engine="pallas-glm", **kw)
    assert kernel.config["engine"] == "pallas-glm" and glm.config["engine"] == "glm"
    for a, b in ((kernel.positions, glm.positions), (kernel.neighbour_positions, glm.neighbour_positions), (kernel.path_loss, glm.path_loss)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    from dpjax.engine import runner

    assert runner.choose_engine("auto", model, sampler) == ("pallas-glm" if jax.default_backend() == "gpu" else "glm")
    with pytest.raises(ValueError, match="engine='pallas-glm' cannot run"):
        runner.choose_engine("pallas-glm", model, samplers.sgld(0.01, batching="without-replacement", batch_size=4))

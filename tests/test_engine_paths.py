"""The engine's GLM and batched-gradient paths against the per-record reference path (issue 21).

Every path computes the same coupled step (:mod:`dpjax.engine.gradients`), so on the same
seed the recorded positions and path losses agree to rounding: 1e-10 (relative and absolute)
in float64, 2e-4 in float32 (sums in another order over up to 40 steps).
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpjax
from dpjax import samplers
from dpjax.engine import reference, runner
from dpjax.engine.compiles import count_compilations
from dpjax.engine.gradients import BatchedGradients, GLMGradients, poisson_capacity, provider_for
from dpjax.models import GLM, bayesian_linear_regression, logistic_regression, mlp_classifier

# d = 4 fills whole Philox blocks of normals in both dtypes (2 float64 or 4 float32 normals a
# block), so the XLA loop holds one copy of the step (reference.steps_per_group == 1 on CPU); at
# d = 3 it held 2 (float64) or 4 (float32) unrolled copies, and a case's time is all XLA
# compiling them (a float32 case's three programs 3x the size, compiled 2.5x longer). Steps
# grouped on shared blocks are the same loop for every gradient provider: GROUPED_DIM keeps one
# equality case on them (test_engine.py compares the grouped loop's paths at d = 1, 2, 3).
N, DIM, GROUPED_DIM = 29, 4, 3


def _logistic_pair(adjacency: str, seed: int = 0, dim: int = DIM):
    rs = np.random.default_rng(seed)
    with jax.enable_x64(True):
        x = rs.normal(size=(N, dim)) * 1.5
        y = (rs.uniform(size=N) < 0.5).astype(np.float64)
        data = dpjax.make_dataset(x=x, y=y)
        if adjacency == "add-remove":
            return dpjax.add_remove(data, 4)
        return dpjax.replace_one(data, 4, {"x": -2.0 * x[4] + 1.0, "y": np.array(1.0 - y[4])})


def _sampler(batching: str, clip, rate: float = 0.2):
    if batching == "full":
        return samplers.ula(0.01, clip_norm=clip)
    if batching == "cyclic":
        return samplers.cyclic_sgld(0.01, batch_size=5, clip_norm=clip)
    if batching == "poisson":
        return samplers.sgld(0.01, batching="poisson", sampling_rate=rate, clip_norm=clip)
    return samplers.sgld(0.01, batching=batching, batch_size=6, clip_norm=clip)


BATCHINGS = ["full", "uniform", "without-replacement", "poisson", "reshuffle", "cyclic"]
KW = dict(num_pairs=37, num_steps=24, record_steps=[5, 24], progress=False)


def _agree(got, ref, dtype):
    tol = 1e-10 if dtype == jnp.float64 else 2e-4
    np.testing.assert_allclose(got.positions, ref.positions, rtol=tol, atol=tol)
    np.testing.assert_allclose(got.neighbour_positions, ref.neighbour_positions, rtol=tol, atol=tol)
    np.testing.assert_allclose(got.path_loss, ref.path_loss, rtol=tol, atol=tol)
    assert np.array_equal(got.finite, ref.finite)


def _init(k):
    return jax.random.normal(k, (DIM,))


CASES = [
    # batching, clip norm, dtype, adjacency, d: every batching, with and without clipping, both
    # dtypes and both adjacencies (the float32 cases are marked slow: same code, other dtype);
    # the cyclic float64 case runs steps grouped on shared Philox blocks (d = 3: 2 a group)
    ("full", None, jnp.float64, "replace-one", DIM),
    ("uniform", 0.5, jnp.float64, "add-remove", DIM),
    ("without-replacement", 0.5, jnp.float64, "replace-one", DIM),
    ("poisson", None, jnp.float64, "replace-one", DIM),  # also in many chunks (CHUNKED_POISSON)
    ("poisson", 0.5, jnp.float64, "add-remove", DIM),
    ("reshuffle", None, jnp.float64, "add-remove", DIM),
    ("cyclic", 0.5, jnp.float64, "replace-one", GROUPED_DIM),
    ("uniform", None, jnp.float32, "replace-one", DIM),
    pytest.param("full", 0.5, jnp.float32, "add-remove", DIM, marks=pytest.mark.slow),
    pytest.param("poisson", 0.5, jnp.float32, "replace-one", DIM, marks=pytest.mark.slow),
    pytest.param("cyclic", None, jnp.float32, "add-remove", DIM, marks=pytest.mark.slow),
]


# The case whose Poisson batches are also summed in many chunks: a capacity far below the
# batch size (2 slots a chunk, batches of ~17 at rate 0.6) gives the dense sums. At n = 29 the
# default capacity is n at any rate (one chunk), so the rate changes no compiled program, and
# the chunked runs are compared with the case's own reference run (it was a test of its own that
# ran the same reference program again).
CHUNKED_POISSON = ("poisson", None, jnp.float64, "replace-one")


@pytest.mark.parametrize("batching,clip,dtype,adjacency,dim", CASES)
def test_glm_and_batched_paths_equal_the_reference(batching, clip, dtype, adjacency, dim, monkeypatch):
    model = logistic_regression(1.0, dim)
    pair = _logistic_pair(adjacency, dim=dim)
    chunked = (batching, clip, dtype, adjacency) == CHUNKED_POISSON
    sampler = _sampler(batching, clip, rate=0.6 if chunked else 0.2)
    if jax.default_backend() == "cpu":  # one copy of the step in the loop, two on the grouped case
        assert reference.steps_per_group(dim, jnp.dtype(dtype), runner.default_unroll()) == (2 if dim == GROUPED_DIM else 1)
    init = lambda k: jax.random.normal(k, (dim,))
    runs = {e: dpjax.run_coupled(11, model, pair, sampler, engine=e, dtype=dtype, init=init, **KW) for e in ("reference", "glm", "batched")}
    ref = runs["reference"]
    assert ref.num_nonfinite == 0
    assert np.abs(ref.path_loss[-1]).max() > 0  # the differing record was used
    for e in ("glm", "batched"):
        assert runs[e].config["engine"] == e
        _agree(runs[e], ref, dtype)
    if chunked:
        # first chunks of 2 gap words and further chunks of 3: almost every batch overflows, in
        # several rounds, and the members must still be the reference's (dense) ones
        monkeypatch.setattr("dpjax.engine.gradients.poisson_capacity", lambda n, q: 2)
        monkeypatch.setattr("dpjax.engine.gradients.poisson_overflow_capacity", lambda n, q: 3)
        for e in ("glm", "batched"):
            _agree(dpjax.run_coupled(11, model, pair, sampler, engine=e, dtype=dtype, init=init, **KW), ref, dtype)


def test_auto_picks_the_cheapest_exact_path():
    blr = bayesian_linear_regression(1.0, 0.5, dim=2)
    logistic = logistic_regression(1.0, 2)
    general = dpjax.Model(log_likelihood=lambda t, r: -jnp.cosh(jnp.dot(t, r["x"]) - r["y"]), log_prior=lambda t: -0.5 * jnp.sum(t**2), dim=2)
    sgld = samplers.sgld(0.01, batch_size=4)
    assert runner.choose_engine("auto", blr, sgld) == "quadratic"
    assert runner.choose_engine("auto", logistic, sgld) == "glm"
    assert runner.choose_engine("auto", general, sgld) == "batched"
    declared = general.with_structure(glm=GLM(loss=lambda y, eta: jnp.cosh(eta - y)))
    assert runner.choose_engine("auto", declared, sgld) == "glm"


def _general_logistic(with_norms, fused: bool = False):
    """Logistic regression written as a general model (no GLM), with or without exact norms,
    and with or without a fused weighted gradient sum (X^T (c r), c from the norms |r| ||x||)."""

    def log_likelihood(theta, r):
        z = jnp.dot(theta, r["x"])
        return r["y"] * z - jax.nn.softplus(z)

    def norms(theta, records):
        z = records["x"] @ theta
        return jnp.abs(records["y"] - jax.nn.sigmoid(z)) * jnp.linalg.norm(records["x"], axis=1)

    def weighted_grad_sum(theta, records, weigh):
        r = records["y"] - jax.nn.sigmoid(records["x"] @ theta)
        return (weigh(norms(theta, records)) * r) @ records["x"]

    model = dpjax.Model(log_likelihood=log_likelihood, log_prior=lambda t: -0.5 * jnp.sum(t**2), dim=DIM, name="general_logistic")
    model = model.with_structure(record_grad_norms=norms) if with_norms else model
    return model.with_structure(weighted_grad_sum=weighted_grad_sum) if fused else model


@functools.lru_cache(maxsize=None)
def _hook_reference(batching: str):
    """The reference path's run for test_batched_path_with_and_without_a_norm_hook, once per
    batching (per process): it differentiates log_likelihood record by record (Model.record_grad)
    and never reads a norm or fused-sum hook, so the three models' reference runs are one run."""
    return dpjax.run_coupled(2, _general_logistic(False), _logistic_pair("replace-one", seed=3), _sampler(batching, 0.3), engine="reference",
                             init=_init, **KW)


@pytest.mark.parametrize("with_norms,batching", [(True, "uniform"), (False, "uniform"), (True, "poisson"), ("fused", "uniform"), ("fused", "poisson"),
                                                  pytest.param(False, "poisson", marks=pytest.mark.slow),
                                                  pytest.param(True, "full", marks=pytest.mark.slow),
                                                  pytest.param("fused", "full", marks=pytest.mark.slow)])
def test_batched_path_with_and_without_a_norm_hook(with_norms, batching):
    """Clipping from the model's fused weighted_grad_sum, from its record_grad_norms hook, or
    per-record gradients when it has neither."""
    model = _general_logistic(with_norms, fused=with_norms == "fused")
    pair = _logistic_pair("replace-one", seed=3)
    sampler = _sampler(batching, 0.3)
    ref = _hook_reference(batching)
    # without hooks the model is a GLM that "auto" would recognise (test_glm_recognition.py): this test is the batched path's
    got = dpjax.run_coupled(2, model, pair, sampler, engine="auto" if with_norms else "batched", init=_init, **KW)
    assert got.config["engine"] == "batched"
    _agree(got, ref, jnp.float64)


def _poison(provider, data, slots, model, pair, sampler):
    """The provider's data with NaN and inf features in ``slots`` (records D masks out)."""
    if provider.name == "glm":  # the GLM data are built from the poisoned dataset (masked rows zeroed there)
        x = np.array(pair.dataset.fields["x"])
        x[slots[0]], x[slots[1]] = np.nan, np.inf
        poisoned = dpjax.NeighbouringPair(dpjax.Dataset(fields={**pair.dataset.fields, "x": x}, mask=pair.dataset.mask), pair.neighbour, pair.index,
                                          pair.adjacency)
        return provider_for(model, poisoned, "glm", jnp.float64, sampler)[1]
    x = np.array(data["dataset"].fields["x"])
    x[slots[0]], x[slots[1]] = np.nan, np.inf
    dataset = dpjax.Dataset(fields={**data["dataset"].fields, "x": x}, mask=data["dataset"].mask)
    return {"dataset": dataset, "neighbour": data["neighbour"]}


@pytest.mark.parametrize("clip", [None, 0.5])
def test_a_masked_records_nan_never_reaches_a_gradient(clip):
    """run_coupled refuses non-finite data, but a record's gradient can still be NaN or inf
    (a likelihood that overflows at a masked padding record): the providers' sums over batches
    holding masked slots whose features are NaN and inf equal the sums with finite features
    there, bit for bit, gathered (repeated slots, the differing slot) and dense."""
    from dpjax.samplers.batching import Batch

    masked = [9, 17]
    rs = np.random.default_rng(7)
    x, y = rs.normal(size=(N, DIM)), (rs.uniform(size=N) < 0.5).astype(np.float64)
    mask = np.ones(N)
    mask[masked] = 0.0
    with jax.enable_x64(True):
        pair = dpjax.replace_one(dpjax.make_dataset(x=x, y=y, mask=mask), 4, {"x": x[4] + 1.0, "y": np.array(1.0 - y[4])})
        sampler = samplers.sgld(0.01, batch_size=6, clip_norm=clip)
        points = np.random.default_rng(8)
        gathered = Batch(jnp.asarray([9, 3, 17, 4, 9, 0], jnp.int32), jnp.ones(6), jnp.asarray(N / 6.0))
        only_masked = Batch(jnp.asarray([9, 17, 9, 17, 17, 9], jnp.int32), jnp.ones(6), jnp.asarray(N / 6.0))
        dense = Batch(jnp.arange(N, dtype=jnp.int32), jnp.ones(N), jnp.asarray(1.0))
        cases = [(logistic_regression(1.0, DIM), "glm"), (logistic_regression(1.0, DIM), "batched"),
                 (_general_logistic(True), "batched"), (_general_logistic(False), "batched"),
                 (_general_logistic(True, fused=True), "batched"), (mlp_classifier(1.0, DIM, 4), "batched")]
        for model, kind in cases:
            theta, theta_n = jnp.asarray(points.normal(size=model.dim)), jnp.asarray(points.normal(size=model.dim))
            provider, data = provider_for(model, pair, kind, jnp.float64, sampler)
            poisoned = _poison(provider, data, masked, model, pair, sampler)
            for batch, is_dense in ((gathered, False), (only_masked, False), (dense, True)):
                clean = provider.batch_sums(sampler, theta, theta_n, jax.tree.map(jnp.asarray, data), jnp.int32(4), batch, is_dense)
                dirty = provider.batch_sums(sampler, theta, theta_n, jax.tree.map(jnp.asarray, poisoned), jnp.int32(4), batch, is_dense)
                for c, d in zip(clean, dirty):
                    assert np.all(np.isfinite(np.asarray(d))), (model.name, kind, is_dense)
                    assert np.array_equal(np.asarray(c), np.asarray(d)), (model.name, kind, is_dense)
            assert np.abs(np.asarray(clean[0])).max() > 0


def test_a_pairs_numbers_do_not_depend_on_chunk_size_or_number_of_pairs(monkeypatch):
    monkeypatch.setattr(runner, "CPU_BLOCKING_BYTES", 0)  # 70 pairs in two blocks on a CPU (small runs are not blocked)
    model = logistic_regression(1.0, DIM)
    pair = _logistic_pair("replace-one")
    for sampler in (_sampler("poisson", 0.5),):  # gathered chunks of a Poisson batch, clipped
        kw = dict(record_steps=[7, 16], num_steps=16, progress=False, init=_init)
        many = dpjax.run_coupled(4, model, pair, sampler, engine="glm", num_pairs=70, chunk_size=16, **kw)  # two pair blocks on CPU
        few = dpjax.run_coupled(4, model, pair, sampler, engine="glm", num_pairs=3, chunk_size=5, **kw)
        for a, b in ((few.positions, many.positions[:, :3]), (few.path_loss, many.path_loss[:, :3])):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)


def test_poisson_capacity():
    assert poisson_capacity(10_000, 0.0128) == 144  # 128 + 11.2 + 1 = 140.2 -> 144
    assert poisson_capacity(20, 0.9) == 20
    assert poisson_capacity(1, 1e-9) == 1


@pytest.mark.parametrize("engine", ["glm", "batched"])
def test_new_values_of_the_same_shapes_compile_nothing(engine):
    model = logistic_regression(1.0, DIM)
    sampler_for = lambda h: samplers.sgld(h, batch_size=6, clip_norm=0.5)

    def run(seed, step_size):
        pair = _logistic_pair("replace-one", seed=seed)
        return dpjax.run_coupled(seed, model, pair, sampler_for(step_size), engine=engine, num_pairs=20, num_steps=12,
                                 record_steps=[4, 12], progress=False, init=np.full(DIM, 0.1 * seed))

    run(1, 0.01)
    with count_compilations() as compiled:
        run(2, 0.02)
        run(3, 0.005)
    assert compiled.count == 0


def test_glm_declarations_that_do_not_match_the_model_are_refused():
    model = logistic_regression(1.0, DIM).with_structure(glm=GLM(loss=lambda y, eta: jax.nn.softplus(eta) + y * eta))
    pair = _logistic_pair("replace-one")
    with pytest.raises(ValueError, match="does not match its log_likelihood"):
        provider_for(model, pair, "glm", jnp.float64, _sampler("uniform", None))


def test_quadratic_models_written_as_general_models_take_the_quadratic_path():
    """Bayesian linear regression as a plain Model is recognised (its Hessian's program does not
    read theta) and runs on the quadratic tables with the reference path's numbers; a model
    whose Hessian reads theta, or whose prior is not isotropic with mean 0, is not recognised."""
    from dpjax.engine.detect import quadratic_form_of

    def ll(t, r):
        return -0.5 * (r["y"] - jnp.dot(r["x"], t)) ** 2

    prior = lambda t: -0.25 * jnp.sum(t**2)
    general = dpjax.Model(log_likelihood=ll, log_prior=prior, dim=DIM, likelihood_weight=0.7, name="blr_by_hand")
    rs = np.random.default_rng(1)
    with jax.enable_x64(True):
        x, y = rs.normal(size=(N, DIM)), rs.normal(size=N)
        pair = dpjax.replace_one(dpjax.make_dataset(x=x, y=y), 3, {"x": x[3] + 1.0, "y": np.array(y[3] + 2.0)})
    found = quadratic_form_of(general, pair.dataset)
    assert found is not None and found.prior_precision == 0.5 and found is quadratic_form_of(general, pair.dataset)
    a, b = found.record_quadratic({"x": x[:2], "y": y[:2]})
    np.testing.assert_allclose(a[1], np.outer(x[1], x[1]), rtol=1e-15)
    np.testing.assert_allclose(b[1], y[1] * x[1], rtol=1e-15)
    sampler = samplers.sgld(0.01, batch_size=5, clip_norm=0.8)
    ref = dpjax.run_coupled(6, general, pair, sampler, engine="reference", init=_init, **KW)
    got = dpjax.run_coupled(6, general, pair, sampler, engine="auto", init=_init, **KW)
    assert got.config["engine"] == "quadratic"
    _agree(got, ref, jnp.float64)

    bent = dpjax.Model(log_likelihood=lambda t, r: ll(t, r) - jnp.where(t[0] > 0, t[0] ** 2, 0.0), log_prior=prior, dim=DIM)
    shifted = dpjax.Model(log_likelihood=ll, log_prior=lambda t: -0.5 * jnp.sum((t - 1.0) ** 2), dim=DIM)
    logistic = _general_logistic(False)
    for model in (bent, shifted, logistic):
        assert quadratic_form_of(model, pair.dataset) is None


def test_a_constant_power_of_theta_does_not_read_theta():
    """x^0 is 1: JAX 0.8 leaves integer_pow[y=0] of a theta term in the Hessian of a square, so
    the proof that a Hessian does not read theta follows data flow past it, also inside a
    jitted helper; x^1, or anything else of theta, still reads it (checked on any JAX: the
    programs below hold integer_pow[y=0] as written)."""
    from dpjax.engine.detect import _reads_theta

    theta = jnp.ones(2)
    assert not _reads_theta(lambda t: jax.lax.integer_pow(t, 0) * 3.0, theta)
    assert not _reads_theta(lambda t: jax.jit(lambda u: jax.lax.integer_pow(u, 0))(t) + 1.0, theta)
    assert _reads_theta(lambda t: jax.lax.integer_pow(t, 1) * 3.0, theta)
    assert _reads_theta(lambda t: jax.lax.integer_pow(t, 0) * t, theta)
    assert _reads_theta(lambda t: jax.lax.cond(t[0] > 0, lambda: 1.0, lambda: 2.0), theta)


@pytest.mark.slow
def test_bench_coupled_logistic_rows_at_tiny_sizes(capsys):
    """`dpjax bench coupled --workload logistic --json` end to end: every row on the GLM path,
    each with a positive ratio against blackjax measured in the same run."""
    import json

    from dpjax.cli import main

    assert main(["bench", "coupled", "--workload", "logistic", "--json", "--records", "300", "--chains", "8", "--steps", "10",
                 "--repeats", "1", "--compile-dims", "4"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = out["rows"]
    assert [(r["row"], r.get("dtype")) for r in rows] == [("b128", "float32"), ("clipped", "float32"), ("full", "float32"),
                                                          ("b128", "float64"), ("clipped", "float64"), ("full", "float64"),
                                                          ("b128 (general model)", "float32"), ("compile", None),
                                                          ("compile (general model)", None)]
    for r in rows:
        assert r["engine"] == "glm"  # the general model's rows included: recognised as a GLM
        assert (r.get("pair_over_blackjax") or r.get("compile_over_blackjax")) > 0
        assert r.get("nonfinite_pairs", 0) == 0

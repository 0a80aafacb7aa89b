"""The coupled engine (dpjax.engine): counter-based randomness, paths that agree, no recompiles,
and a Pallas kernel that runs on CPU (interpret mode) and lowers to Triton for CUDA.

Randomness is checked against independent references: the Random123 known-answer vectors of
Philox4x32-10, Python's exact integers, numpy's sine and cosine, and KS tests at p > 1e-4 (a
significance level, fixed seeds). The three engine paths draw the same random numbers and
compute the same step in a different arithmetic order, so they must agree to rounding.
"""
import copy
import fractions
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import dpjax
from dpjax import samplers
from dpjax.engine import pallas_kernel, randomness as rng, reference, runner
from dpjax.engine.compiles import count_compilations
from dpjax.engine.gradients import provider_for
from dpjax.models import bayesian_linear_regression

P_THRESHOLD = 1e-4
# Random123 tests/kat_vectors, "philox4x32 10" lines: counter, key, expected output
PHILOX_KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0), (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("x64", [True, False])
def test_philox_matches_the_random123_known_answers(x64):
    with jax.enable_x64(x64):
        for counter, key, expected in PHILOX_KAT:
            out = rng.philox4x32(tuple(jnp.uint32(k) for k in key), tuple(jnp.uint32(c) for c in counter))
            assert tuple(int(o) for o in out) == expected


def test_philox_as_two_64_bit_words_gives_the_same_words():
    """philox4x32_wide (the CPU form: the four words as two uint64) against philox4x32 and the
    Random123 answers, for random keys and counters, with and without 64-bit mode."""
    rs = np.random.default_rng(3)
    key = tuple(jnp.asarray(rs.integers(0, 2**32, 300, dtype=np.uint64).astype(np.uint32)) for _ in range(2))
    counter = tuple(jnp.asarray(rs.integers(0, 2**32, 300, dtype=np.uint64).astype(np.uint32)) for _ in range(4))
    for x64 in (True, False):
        with jax.enable_x64(x64):
            for c, k, expected in PHILOX_KAT:
                a, b = rng.philox4x32_wide(tuple(jnp.uint32(v) for v in k), tuple(jnp.uint32(v) for v in c))
                assert (int(a) >> 32, int(a) & 0xFFFFFFFF, int(b) >> 32, int(b) & 0xFFFFFFFF) == expected
            words = [np.asarray(w).astype(np.uint64) for w in rng.philox4x32(key, counter)]
            a, b = (np.asarray(v) for v in jax.jit(rng.philox4x32_wide)(key, counter))
            assert a.dtype == b.dtype == np.uint64
            assert np.array_equal(a, words[0] << np.uint64(32) | words[1])
            assert np.array_equal(b, words[2] << np.uint64(32) | words[3])


def test_cpu_element_by_element_words_are_the_stacked_words(monkeypatch):
    """On a CPU the batch words and the normals are built element by element (each element its
    own Philox evaluation, written out once per step); elsewhere as stacks of a block's words.
    Both forms give the same words bit for bit (compiled, any count, steps past 2^31), and the
    normals the same draws to rounding (compiled float arithmetic may fuse differently; eagerly,
    test_array_normals_are_the_per_coordinate_draws checks them bit for bit)."""
    words = jax.vmap(rng.chain_words)(jax.random.split(jax.random.key(8), 40))
    forms = {}
    for element_wise in (True, False):
        monkeypatch.setattr(rng, "_one_word_per_element", lambda e=element_wise: e)
        out = []
        for count in (1, 2, 7, 128, 1001):
            for step in (0, 5, 2**31 + 3):
                out.extend(np.asarray(w) for w in jax.jit(rng.index_words, static_argnums=(2, 3))(words, jnp.uint32(step), rng.BATCH, count))
        for dtype, x64 in ((jnp.float32, False), (jnp.float64, True)):
            with jax.enable_x64(x64):
                for dim in (3, 20, 21):
                    out.append(np.asarray(jax.jit(rng.normals, static_argnums=(2, 3))(words, jnp.uint32(2**31 + 9), dim, dtype)))
                    out.append(np.asarray(jax.jit(rng.group_normals_array, static_argnums=(3, 4, 5))(words[:, 0], words[:, 1], 8, 4, dim, dtype)))
        forms[element_wise] = out
    integers = [a for a in forms[True] if a.dtype == np.uint32]
    assert len(integers) == 30
    for a, b in zip(forms[True], forms[False]):
        if a.dtype == np.uint32:
            assert np.array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=8 * np.finfo(a.dtype).eps, atol=8 * np.finfo(a.dtype).eps)


def test_a_cpu_step_computes_its_random_words_once():
    """rng.computed_once keeps its value and, on a CPU, holds a conditional in the compiled
    program (the operands of a conditional are computed once, before it; XLA could not remove
    it); elsewhere it is the identity."""
    x = jnp.arange(6, dtype=jnp.uint32)
    fn = jax.jit(lambda v, t: rng.computed_once(v * jnp.uint32(2654435761), t))
    for t in (0, 1, 2**32 - 1):
        assert np.array_equal(np.asarray(fn(x, jnp.uint32(t))), np.asarray(x * jnp.uint32(2654435761)))
    compiled = fn.lower(x, jnp.uint32(0)).compile().as_text()
    assert ("conditional(" in compiled) == (jax.default_backend() == "cpu")


def test_64_bit_word_arithmetic_is_exact_with_and_without_x64():
    rs = np.random.default_rng(0)
    high, low = (rs.integers(0, 2**32, 500, dtype=np.uint64).astype(np.uint32) for _ in range(2))
    rates = np.concatenate([rs.uniform(0, 1, 200), [1e-12, 0.5, 1 - 2**-40, 1.0]])
    results = {}
    for x64 in (True, False):
        with jax.enable_x64(x64):
            hi, lo = rng.mul_wide(jnp.asarray(high), jnp.asarray(low))
            idx = rng.uniform_index(jnp.asarray(high), jnp.asarray(low), 1_149_019)
            results[x64] = (np.asarray(hi), np.asarray(lo), np.asarray(idx))
            if x64:  # float64 rates: the threshold is floor(q 2^64) exactly
                for q in rates:
                    t_hi, t_lo = rng.inclusion_threshold(jnp.float64(q))
                    if q < 1:
                        assert (int(t_hi) << 32 | int(t_lo)) == math.floor(fractions.Fraction(float(q)) * 2**64)
                words = rng.bernoulli(jnp.asarray(high[:4]), jnp.asarray(low[:4]), jnp.float64(1.0))
                assert np.all(np.asarray(words))
    for a, b in zip(results[True], results[False]):
        assert np.array_equal(a, b)
    hi, lo, idx = results[True]
    for h, l, i, H, L in zip(high, low, idx, hi, lo):
        assert int(h) * int(l) == (int(H) << 32 | int(L))
        assert ((int(h) << 32 | int(l)) * 1_149_019) >> 64 == int(i)


def test_exact_quadrant_sine_and_cosine():
    with jax.enable_x64(True):
        w = jnp.asarray(np.random.default_rng(1).integers(0, 2**32, 20_000, dtype=np.uint64).astype(np.uint32))
        cos, sin = rng._sincos_turn(w, 32, jnp.float64)
    angle = 2 * np.pi * (np.asarray(w, np.float64) + 0.5) / 2**32
    np.testing.assert_allclose(np.asarray(cos), np.cos(angle), rtol=0, atol=2e-15)
    np.testing.assert_allclose(np.asarray(sin), np.sin(angle), rtol=0, atol=2e-15)


@pytest.mark.parametrize("dim", [1, 3])
def test_normal_draws_are_standard_normal_and_grouping_changes_nothing(dim):
    with jax.enable_x64(True):
        words = jax.vmap(rng.chain_words)(jax.random.split(jax.random.key(2), 50_000))
        for dtype in (jnp.float64, jnp.float32):
            z = np.asarray(rng.normals(words, 11, dim, dtype), np.float64)
            assert z.shape == (50_000, dim)
            for c in range(dim):
                assert stats.kstest(z[:, c], "norm").pvalue > P_THRESHOLD
            # consecutive steps of one chain: independent standard normals too
            steps = np.asarray(jax.vmap(lambda t: rng.normals(words[:2000], t, dim, dtype))(jnp.arange(25)), np.float64)
            assert stats.kstest(steps.ravel(), "norm").pvalue > P_THRESHOLD
            assert abs(np.corrcoef(steps[:-1].ravel(), steps[1:].ravel())[0, 1]) < 5 / np.sqrt(steps[1:].size)
            if dtype == jnp.float32:
                wide = np.asarray(rng.normals(words[:100], 11, dim, dtype))
            group = rng.group_steps(dim, dtype)
            k0, k1 = words[:64, 0], words[:64, 1]
            for first in (0, 4 * group):
                rows = rng.group_normals(k0, k1, first, 2 * group, dim, dtype)
                for t, row in enumerate(rows):
                    single = rng.step_normals(k0, k1, first + t, dim, dtype)
                    assert all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(row, single))
    with jax.enable_x64(False):  # float32 runs need no 64-bit mode and draw the same numbers
        narrow = np.asarray(rng.normals(jax.vmap(rng.chain_words)(jax.random.split(jax.random.key(2), 100)), 11, dim, jnp.float32))
    assert np.array_equal(narrow, wide)


@pytest.mark.parametrize("dim", [1, 3, 8, 9, 20])
def test_array_normals_are_the_per_coordinate_draws(dim):
    """The XLA loop draws normals per coordinate up to reference.GROUPED_MAX_DIM and as one
    array beyond (randomness.step_normals_array, group_normals_array): the same numbers bit for
    bit, at steps that start mid-block too (d not a multiple of the block), and through the
    loop's own helpers."""
    with jax.enable_x64(True):
        words = jax.vmap(rng.chain_words)(jax.random.split(jax.random.key(5), 64))
        k0, k1 = words[:, 0], words[:, 1]
        for dtype in (jnp.float64, jnp.float32):
            for t in (0, 1, 3, 7, 2**20 + 1):
                single = np.stack([np.asarray(a) for a in rng.step_normals(k0, k1, t, dim, dtype)], axis=-1)
                assert np.array_equal(np.asarray(rng.step_normals_array(k0, k1, t, dim, dtype)), single)
                assert np.array_equal(np.asarray(reference._step_normals(k0, k1, t, dim, dtype)), single)
            group = rng.group_steps(dim, dtype) * 2
            rows = rng.group_normals(k0, k1, 4 * group, group, dim, dtype)
            array = np.asarray(rng.group_normals_array(k0, k1, 4 * group, group, dim, dtype))
            loop = reference._group_normals(k0, k1, 4 * group, group, dim, dtype)
            for u, row in enumerate(rows):
                expected = np.stack([np.asarray(a) for a in row], axis=-1)
                assert np.array_equal(array[:, u], expected)
                assert np.array_equal(np.asarray(loop[u]), expected)


def _pairs(dim, homogeneous):
    rs = np.random.default_rng(dim)
    n = 23
    with jax.enable_x64(True):
        if homogeneous:  # paper 000's eq. 7 shape: every record of D the same
            data = dpjax.make_dataset(x=np.full((n, dim), 1.8), y=np.full(n, 4.0))
            return dpjax.replace_one(data, 0, {"x": np.full(dim, 0.9), "y": np.array(2.0)})
        x, y = rs.normal(size=(n, dim)), rs.normal(size=n)
        return dpjax.replace_one(dpjax.make_dataset(x=x, y=y), 4, {"x": x[4] + 2.0, "y": np.array(y[4] - 3.0)})


ENGINE_CASES = [
    # dim, homogeneous data, sampler, dtype
    (1, True, samplers.cyclic_sgld(0.002), jnp.float64),
    (2, False, samplers.sgld(0.002, batching="uniform", batch_size=3, clip_norm=0.5), jnp.float32),
    (3, False, samplers.ula(0.001), jnp.float64),
    (1, False, samplers.cyclic_sgld(0.002, batch_size=5, order=np.random.default_rng(0).permutation(23)), jnp.float64),
    # issue 36: Poisson batches on every path (chunked gathers on the quadratic path, a walk over
    # the geometric gaps in the kernel, dense weights on the reference path: the same members)
    (2, False, samplers.sgld(0.002, batching="poisson", sampling_rate=0.3, clip_norm=0.5), jnp.float32),
    (1, True, samplers.sgld(0.002, batching="poisson", sampling_rate=0.15), jnp.float64),
]


@pytest.mark.parametrize("dim,homogeneous,sampler,dtype", ENGINE_CASES)
def test_engine_paths_give_the_same_numbers(dim, homogeneous, sampler, dtype):
    """reference (autodiff), quadratic (closed-form tables) and pallas (interpret mode here)
    agree to rounding; 130 pairs exercise the kernel's padding, record steps 7 and 40 its
    unaligned chunk starts."""
    model = bayesian_linear_regression(1.0, 0.5, dim=dim)
    pair = _pairs(dim, homogeneous)
    kw = dict(num_pairs=130, num_steps=40, record_steps=[7, 40], progress=False, init=lambda k: jax.random.normal(k, (dim,)), dtype=dtype)
    runs = {e: dpjax.run_coupled(3, model, pair, sampler, engine=e, **kw) for e in ("reference", "quadratic", "pallas")}
    ref = runs["reference"]
    tol = 1e-12 if dtype == jnp.float64 else 1e-5
    assert ref.num_nonfinite == 0 and ref.config["engine"] == "reference"
    for e in ("quadratic", "pallas"):
        got = runs[e]
        assert got.config["engine"] == e
        np.testing.assert_allclose(got.positions, ref.positions, rtol=tol, atol=tol)
        np.testing.assert_allclose(got.neighbour_positions, ref.neighbour_positions, rtol=tol, atol=tol)
        np.testing.assert_allclose(got.path_loss, ref.path_loss, rtol=tol, atol=tol)
        assert np.array_equal(got.finite, ref.finite)
    assert np.abs(ref.path_loss[-1]).max() > 0  # the differing record was used: the loss is exercised


@pytest.mark.parametrize("case", [0, 1, 4])
def test_pallas_kernel_lowers_to_triton_for_cuda(case):
    """What a GPU run compiles, checked here without a GPU: JAX lowers the kernel for CUDA
    (Pallas -> Triton IR) on the CPU; an unsupported primitive or a mistyped op fails here."""
    from jax import export

    dim, homogeneous, sampler, dtype = ENGINE_CASES[case]
    model = bayesian_linear_regression(1.0, 0.5, dim=dim)
    pair = _pairs(dim, homogeneous)
    with jax.enable_x64(dtype == jnp.float64):
        provider, data = provider_for(model, pair, "quadratic", dtype)
        _, keys = reference.chain_setup(sampler, jax.random.key(0), jnp.arange(256, dtype=jnp.uint32), num_slots=23)
        state = reference.PairState(jnp.zeros((256, dim), dtype), jnp.zeros((256, dim), dtype), jnp.zeros(256, dtype), jnp.ones(256, bool))
        fn = jax.jit(lambda *a: pallas_kernel.advance(*a, provider=provider, num_slots=23, mesh=None, interpret=False))
        exported = export.export(fn, platforms=["cuda"], disabled_checks=[export.DisabledSafetyCheck.custom_call("__gpu$xla.gpu.triton")])(
            sampler, data, jnp.int32(0), keys, state, jnp.int32(0), jnp.int32(10)
        )
    assert exported.mlir_module().count("__gpu$xla.gpu.triton") == 1


def _count_compiles(fn):
    with count_compilations() as compiled:
        fn()
    return compiled.count


@pytest.mark.parametrize("engine", ["reference", "quadratic"])
def test_a_repeated_run_compiles_nothing_when_only_values_change(engine):
    """New seed, step size, data values, start point and init callable: zero compilations."""
    model = bayesian_linear_regression(1.0, 0.5, dim=2)
    rs = np.random.default_rng(5)

    def run(seed, step_size, shift, start):
        with jax.enable_x64(True):
            x, y = rs.normal(size=(9, 2)) + shift, rs.normal(size=9)
            pair = dpjax.replace_one(dpjax.make_dataset(x=x, y=y), 2, {"x": x[2] + 1.0, "y": np.array(y[2])})
        init = (lambda k: start + jax.random.normal(k, (2,))) if callable(start) or seed % 2 else np.full(2, start)
        return dpjax.run_coupled(seed, model, pair, samplers.cyclic_sgld(step_size, batch_size=2), num_pairs=50, num_steps=30,
                                 record_steps=[10, 30], progress=False, engine=engine, init=init)

    run(0, 0.01, 0.0, 0.5)  # compiles
    run(1, 0.01, 0.0, 0.5)  # callable init: its first eager call compiles its primitives
    assert _count_compiles(lambda: run(2, 0.02, 1.0, -0.3)) == 0
    assert _count_compiles(lambda: run(3, 0.005, -2.0, 1.5)) == 0


def test_sweep_points_of_the_same_shapes_share_compiled_programs():
    from _shared import sweep_point
    from dpjax.sweep import config as C
    from dpjax.sweep.chains import run_pairs
    from dpjax.sweep.runner import build_checked

    raw = sweep_point("regression", 13, 20, [20], [{"name": "epsilon_lower_bound", "delta": 0.01}], seed=5)

    def run(seed, data_seed, step_size):
        point = copy.deepcopy(raw)
        point.update(seed=seed)
        point["data"]["seed"] = data_seed
        point["sampler"]["step_size"] = step_size
        point = C.resolve_point(point)
        problem = build_checked(point, "point")
        return run_pairs(point["seed"], problem, num_pairs=13, num_steps=20, record_steps=[20], dtype=point["dtype"])

    run(5, 2, 0.02)
    assert _count_compiles(lambda: run(6, 3, 0.03)) == 0


def test_engine_choice_errors_name_the_reason():
    model = dpjax.Model(lambda th, r: -0.5 * (r["y"] - r["x"] @ th) ** 2, lambda th: -0.5 * jnp.sum(th**2), dim=1)
    quadratic = bayesian_linear_regression(1.0, 1.0)
    ula = samplers.ula(0.01)
    with pytest.raises(ValueError, match=r"engine='bogus' is not one of"):
        runner.choose_engine("bogus", quadratic, ula)
    with pytest.raises(ValueError, match=r"engine='pallas' needs a quadratic model"):
        runner.choose_engine("pallas", model, ula)
    with pytest.raises(ValueError, match=r"engine='pallas' cannot run this sampler: a step-size schedule"):
        runner.choose_engine("pallas", quadratic, samplers.ula(lambda t: 0.01 / (1 + t)))
    with pytest.raises(ValueError, match=r"cannot run this sampler: batching 'without-replacement'"):
        runner.choose_engine("pallas", quadratic, samplers.sgld(0.01, batching="without-replacement", batch_size=2))
    # issue 21: a general model's default is the batched path, and this one (quadratic written
    # as a plain Model) is recognised as quadratic once its data are known
    assert runner.choose_engine("auto", model, ula) == "batched"
    pair = dpjax.replace_one(dpjax.make_dataset(x=np.ones((3, 1)), y=np.zeros(3)), 0, {"x": np.array([2.0]), "y": np.array(1.0)})
    assert runner.choose_engine("auto", runner.recognised_model("auto", model, pair), ula) == "quadratic"
    assert runner.choose_engine("auto", quadratic, ula) == ("pallas" if jax.default_backend() == "gpu" else "quadratic")


def test_run_coupled_checks_the_records_against_the_model():
    with jax.enable_x64(True):
        data = dpjax.make_dataset(x=np.ones((5, 1)), y=np.ones(5))
        pair = dpjax.replace_one(data, 0, {"x": np.array([2.0]), "y": np.array(0.0)})
    with pytest.raises(ValueError, match=r"field 'x' has shape \(5, 1\); it must have shape \(n, 2\)"):
        dpjax.run_coupled(0, bayesian_linear_regression(1.0, 1.0, dim=2), pair, samplers.ula(0.01), num_pairs=2, num_steps=1, progress=False)


def test_auto_falls_back_to_the_xla_path_when_the_kernel_cannot_compile(monkeypatch):
    """On a GPU whose JAX cannot lower the kernel, engine='auto' says so and runs the quadratic
    XLA path (the same numbers); an explicit engine='pallas' raises instead."""
    def broken(*args, **kwargs):
        raise NotImplementedError("Unimplemented primitive in Pallas GPU lowering: is_finite")

    model = bayesian_linear_regression(1.0, 0.5)
    pair = _pairs(1, True)
    sampler = samplers.cyclic_sgld(0.002)
    kw = dict(num_pairs=8, num_steps=12, progress=False)
    expected = dpjax.run_coupled(1, model, pair, sampler, engine="quadratic", **kw)
    monkeypatch.setattr(pallas_kernel, "advance", broken)
    monkeypatch.setattr(runner, "choose_engine", lambda engine, m, s: "pallas")
    with pytest.warns(RuntimeWarning, match=r"Pallas kernel did not compile here \(NotImplementedError.*engine='quadratic'"):
        got = dpjax.run_coupled(1, model, pair, sampler, engine="auto", **kw)
    assert got.config["engine"] == "quadratic"
    np.testing.assert_array_equal(got.positions, expected.positions)
    with pytest.raises(NotImplementedError):
        dpjax.run_coupled(1, model, pair, sampler, engine="pallas", **kw)


def test_the_kernel_launch_shape_changes_no_number(monkeypatch):
    """Pairs per program and warps are a launch detail: 130 pairs (two blocks at 128, five at
    32, the last padded in both) give bit-identical results (interpret mode here); a shape
    Triton cannot take is refused by name before any compute."""
    model = bayesian_linear_regression(1.0, 0.5)
    pair = _pairs(1, False)
    kw = dict(num_pairs=130, num_steps=30, progress=False, engine="pallas")
    sampler = samplers.cyclic_sgld(0.002)
    runs = []
    for block, warps in (("128", "4"), ("32", "1")):
        monkeypatch.setenv("DPJAX_PALLAS_BLOCK", block)
        monkeypatch.setenv("DPJAX_PALLAS_WARPS", warps)
        # the shape is read when the kernel is traced: only the kernel's own programs are
        # dropped (jax.clear_caches() dropped every program of the process, recompiled by the
        # tests after), and the run must compile a new one (else both runs used one kernel)
        pallas_kernel.advance.clear_cache()
        with count_compilations() as compiled:
            runs.append(dpjax.run_coupled(5, model, pair, sampler, **kw))
        assert compiled.count > 0
    for field in ("positions", "neighbour_positions", "path_loss"):
        np.testing.assert_array_equal(getattr(runs[0], field), getattr(runs[1], field))
    for value in ("48", "0", "-64", "sixty-four"):
        monkeypatch.setenv("DPJAX_PALLAS_BLOCK", value)
        with pytest.raises(ValueError, match=rf"DPJAX_PALLAS_BLOCK='{value}' must be a power of two"):
            pallas_kernel.launch_shape()
    monkeypatch.setenv("DPJAX_PALLAS_BLOCK", "64")
    monkeypatch.setenv("DPJAX_PALLAS_WARPS", "3")
    with pytest.raises(ValueError, match=r"DPJAX_PALLAS_WARPS='3' must be a power of two"):
        pallas_kernel.launch_shape()
    monkeypatch.setenv("DPJAX_PALLAS_WARPS", "2")
    assert pallas_kernel.launch_shape() == (64, 2)
    pallas_kernel.advance.clear_cache()  # later tests trace the kernel at the default shape


def test_cpu_pair_blocks_change_no_number(monkeypatch):
    """The CPU loop runs pairs in blocks only when a step's rows overflow the cache (a small
    working set unblocked: blocks would only multiply the loop's iterations); either way the
    same numbers, bit for bit, a padded last block included (130 pairs in blocks of 16)."""
    on_cpu = jax.default_backend() == "cpu"
    assert runner.pair_block(1, 4096, 1, 1, jnp.float64) is None  # cyclic SGLD, b = 1, d = 1: 128 KiB
    # logistic, b = 128: 42 MiB of rows in float64; a float32 block holds as many bytes (twice the pairs)
    assert runner.pair_block(1, 2048, 128, 20, jnp.float64) == (runner.CPU_PAIR_BLOCK if on_cpu else None)
    assert runner.pair_block(1, 2048, 128, 20, jnp.float32) == (2 * runner.CPU_PAIR_BLOCK if on_cpu else None)
    assert runner.pair_block(2, 2048, 128, 20, jnp.float32) is None  # a mesh of devices: never
    # a GLM's gathered rows: blocks of about CPU_GATHER_BLOCK_BYTES (the measured best blocks)
    for dim, dtype, block in ((20, jnp.float32, 512), (20, jnp.float64, 256), (80, jnp.float32, 128), (320, jnp.float64, 16)):
        assert runner.pair_block(1, 4096, 128, dim, dtype, True) == (block if on_cpu else None)
    assert runner.pair_block(1, 512, 128, 20, jnp.float32, True) is None  # one block: unblocked
    quadratic = provider_for(bayesian_linear_regression(1.0, 0.5), _pairs(1, True), "quadratic", jnp.float64, samplers.ula(0.01))[0]
    assert runner._rows_per_step(quadratic, samplers.ula(0.01), 23) == 1  # full batches read the tables' sums only
    assert runner._rows_per_step(quadratic, samplers.ula(0.01, clip_norm=1.0), 23) == 23
    # d = 4: one step a group of normal draws in float64 (at d = 3 the loop held two unrolled
    # copies of the step, compiled twice: once plain, once blocked); the blocks do not read d
    dim = 4
    assert reference.steps_per_group(dim, jnp.float64, runner.default_unroll()) == 1 or not on_cpu
    model = bayesian_linear_regression(1.0, 0.5, dim=dim)
    pair = _pairs(dim, False)
    kw = dict(num_pairs=130, num_steps=20, record_steps=[5, 20], progress=False, init=lambda k: jax.random.normal(k, (dim,)), engine="reference")
    sampler = samplers.sgld(0.002, batching="uniform", batch_size=3)
    plain = dpjax.run_coupled(4, model, pair, sampler, **kw)
    assert plain.config["pair_block"] is None
    monkeypatch.setattr(runner, "CPU_BLOCKING_BYTES", 0)
    monkeypatch.setattr(runner, "CPU_PAIR_BLOCK", 16)
    blocked = dpjax.run_coupled(4, model, pair, sampler, **kw)
    assert blocked.config["pair_block"] == (16 if on_cpu else None)
    for field in ("positions", "neighbour_positions", "path_loss", "finite"):
        np.testing.assert_array_equal(getattr(blocked, field), getattr(plain, field))


def test_glm_pair_blocks_change_no_number_beyond_rounding(monkeypatch):
    """The GLM path's blocks (sized by their gathered rows' bytes): a clipped logistic
    regression with uniform batches, 70 pairs in blocks of 8 (the last padded) against all pairs
    at once. float64: bit for bit. float32: the path losses bit for bit, the positions to the
    last bit (XLA vectorises a block's float32 row sums by its shape, so their order of
    summation moves; it did so before the blocks were sized by bytes too)."""
    from dpjax.bench.logistic import _data, _pair
    x, y = _data(300, 6)
    model = dpjax.models.logistic_regression(1.0, 6)
    sampler = samplers.sgld(0.01, batching="uniform", batch_size=16, clip_norm=0.5)
    for dtype in (jnp.float64, jnp.float32):
        with jax.enable_x64(dtype == jnp.float64):
            kw = dict(num_pairs=70, num_steps=12, record_steps=[4, 12], progress=False, dtype=dtype, engine="glm")
            monkeypatch.setattr(runner, "CPU_BLOCKING_BYTES", 4 << 20)
            plain = dpjax.run_coupled(2, model, _pair(x, y), sampler, **kw)
            assert plain.config["pair_block"] is None
            monkeypatch.setattr(runner, "CPU_BLOCKING_BYTES", 0)
            monkeypatch.setattr(runner, "CPU_GATHER_BLOCK_BYTES", 1)
            blocked = dpjax.run_coupled(2, model, _pair(x, y), sampler, **kw)
            monkeypatch.undo()
        assert blocked.config["pair_block"] == (8 if jax.default_backend() == "cpu" else None)
        np.testing.assert_array_equal(blocked.path_loss, plain.path_loss)
        np.testing.assert_array_equal(blocked.finite, plain.finite)
        for field in ("positions", "neighbour_positions"):
            if dtype == jnp.float64:
                np.testing.assert_array_equal(getattr(blocked, field), getattr(plain, field))
            else:
                np.testing.assert_allclose(getattr(blocked, field), getattr(plain, field), rtol=0, atol=2 * np.finfo(np.float32).eps)


def test_float32_chains_keep_full_float32_dot_products(monkeypatch):
    """On GPUs XLA runs float32 dots on TF32 units (10-bit mantissas) unless asked otherwise;
    that moved float32 path losses by up to 6e-4 (4% relative) against the Pallas kernel on an
    H100. Every dot the engine's XLA program holds must ask for full precision (checked in the
    lowered program, so it holds on any device)."""
    from dpjax.engine import reference

    texts = []
    original = reference.advance

    def recording(*args, **kwargs):
        texts.append(original.lower(*args, **kwargs).as_text())
        return original(*args, **kwargs)

    monkeypatch.setattr(reference, "advance", recording)
    model = dpjax.Model(lambda th, r: -0.5 * (r["y"] - r["x"] @ th) ** 2, lambda th: -0.5 * jnp.sum(th**2), dim=2)
    dpjax.run_coupled(0, model, _pairs(2, False), samplers.sgld(0.002, batching="uniform", batch_size=3), num_pairs=4, num_steps=3,
                      progress=False, dtype=jnp.float32, engine="reference")
    dots = [line for text in texts for line in text.splitlines() if "dot_general" in line]
    assert dots, "the model's x @ theta should appear as a dot in the program"
    assert all("HIGHEST" in line for line in dots), [line for line in dots if "HIGHEST" not in line][:2]


def test_the_engine_plans_a_run_once():
    """issue 36: one recognition step (quadratic / GLM / general) chooses the path, the provider
    and the fallback; the same plan whatever asks."""
    from dpjax.models import logistic_regression

    pair = dpjax.replace_one(dpjax.make_dataset(x=np.ones((3, 1)), y=np.zeros(3)), 0, {"x": np.array([2.0]), "y": np.array(1.0)})
    as_plain = dpjax.Model(lambda th, r: -0.5 * (r["y"] - r["x"] @ th) ** 2, lambda th: -0.5 * jnp.sum(th**2), dim=1)
    ula = samplers.ula(0.01)
    plan = runner.plan_engine("auto", as_plain, pair, ula)
    assert (plan.structure, plan.path, plan.provider_kind) == ("quadratic", "quadratic" if jax.default_backend() != "gpu" else "pallas",
                                                               "quadratic")
    assert plan.model is runner.plan_engine("auto", as_plain, pair, ula).model  # recognised once, the same object after
    plan = runner.plan_engine("reference", as_plain, pair, ula)
    assert (plan.structure, plan.path, plan.provider_kind, plan.fallback) == ("general", "reference", "generic", None)
    logistic = runner.plan_engine("auto", logistic_regression(1.0, 1), pair, samplers.sgld(0.01, batching="poisson", sampling_rate=0.5))
    assert logistic.structure == "glm" and logistic.provider_kind == "glm"
    assert logistic.fallback == ("glm" if logistic.path == "pallas-glm" else None)
    explicit = runner.plan_engine("pallas-glm", logistic_regression(1.0, 1), pair, samplers.sgld(0.01, batching="poisson", sampling_rate=0.5))
    assert (explicit.path, explicit.fallback) == ("pallas-glm", None)  # an explicit kernel never falls back silently

"""The one loop that runs coupled chain pairs: paths, chunks, recordings, checkpoints, hosts.

:func:`run_pairs` is what :func:`dpjax.run_coupled`, :func:`dpjax.audit` and every sweep point
call. It

* chooses an engine path (:data:`ENGINES`; the gradient providers are described in
  :mod:`.gradients`): ``"reference"`` (any model: per-record autodiff gradients, XLA loop; the
  oracle), ``"batched"`` (any model: one reverse-mode pass per chain over the batch sum),
  ``"glm"`` (a GLM: matrix-vector products on one shared gather), ``"quadratic"``
  (closed-form tables of a quadratic model, XLA loop), ``"pallas"`` (the quadratic step in a
  Pallas kernel, every step of a chunk with the pairs' state in registers; GPU, or interpret
  mode on CPU) or ``"pallas-glm"`` (the GLM step in a Pallas kernel, :mod:`.pallas_glm`). A general model that is provably quadratic (:mod:`.detect`: its Hessian's
  program does not read theta) counts as a quadratic model. ``"auto"``: Pallas on a GPU where the run is supported; else quadratic for a
  quadratic model of d <= :data:`QUADRATIC_MAX_DIM`, without a GLM form, or with unclipped
  full batches (the tables' sums: O(d^2) a step whatever n); else, for a model with a GLM
  structure (declared), the Pallas GLM kernel on a GPU where it supports the
  run and glm otherwise; else batched. A Pallas kernel that does not compile on ``"auto"``
  falls back to its XLA path with a warning. Every path draws the same random
  numbers (:mod:`.randomness`) and the same batches, and computes the same step, so they agree
  to rounding (tested);
* lays the pairs out over a mesh with a "chains" axis (all devices of all processes by
  default; datasets replicated), padding K to a multiple of the device count (padding pairs
  have the next ids, so they never change a real pair's numbers) and dropping the padding;
* runs the steps in chunks that end at every recorded step, every checkpoint and every
  ``chunk_size`` steps; compiled programs are module-level and keyed by shapes and structure,
  so a second run with new values reuses them;
* saves and resumes checkpoints (the leader reads and writes, every process gets the values),
  bit-identical to an uninterrupted run because step t of pair k depends on (seed, k, t) and
  the state only.
"""
from __future__ import annotations

import math
import time
import warnings
from typing import Callable, NamedTuple, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ..data import NeighbouringPair
from ..models.base import Model
from ..models.structure import glm_of
from ..samplers.batching import FullBatch
from ..samplers.kernel import LangevinSampler
from . import hosts, randomness, reference
from .detect import glm_form_of, quadratic_form_of
from .gradients import GLMGradients, QuadraticGradients, provider_for

ENGINES = ("auto", "reference", "quadratic", "glm", "batched", "pallas", "pallas-glm")
# up to this dimension a quadratic model's tables (O(b d^2) a step) beat its GLM form (O(b d))
QUADRATIC_MAX_DIM = 2
CPU_PAIR_BLOCK = 64  # pairs per block in float64; float32 blocks hold twice as many (the same bytes)
CPU_BLOCKING_BYTES = 4 << 20  # pairs' rows of a step beyond which the CPU loop runs pairs in blocks
CPU_GATHER_BLOCK_BYTES = 10 << 20  # a block's gathered GLM rows of one step (both chains' share), on CPU
CHECKPOINT_KEYS = ("step", "position", "neighbour_position", "path_loss", "finite", "num_recorded", "rec_position", "rec_neighbour_position", "rec_path_loss")


class Recording(NamedTuple):
    """What a run recorded (host numpy, on every process).

    steps (R,); positions, neighbour_positions (R, K, d); path_loss (R, K); finite (K,);
    timings: compile_seconds, run_seconds, resumed_from_step, num_devices, num_processes, engine, unroll.
    """

    steps: np.ndarray
    positions: np.ndarray
    neighbour_positions: np.ndarray
    path_loss: np.ndarray
    finite: np.ndarray
    timings: dict


def default_mesh() -> Mesh:
    """All devices of all processes on one "chains" axis."""
    return Mesh(np.array(jax.devices()), ("chains",))


def check_mesh(mesh: Optional[Mesh]) -> Mesh:
    if mesh is None:
        return default_mesh()
    if not isinstance(mesh, Mesh) or "chains" not in mesh.axis_names:
        raise ValueError(f"mesh={mesh!r} must be a jax.sharding.Mesh with an axis named 'chains'")
    return mesh


def pallas_supports(model: Model, sampler: LangevinSampler) -> Optional[str]:
    """None if the Pallas kernel can run this model and sampler, else the reason it cannot."""
    from . import pallas_kernel

    return pallas_kernel.unsupported_reason(model, sampler)


def pallas_glm_supports(model: Model, sampler: LangevinSampler) -> Optional[str]:
    """None if the Pallas GLM kernel runs this model and sampler, else why not."""
    from . import pallas_glm

    return pallas_glm.unsupported_reason(model, sampler)


def choose_engine(engine: str, model: Model, sampler: LangevinSampler) -> str:
    """The engine path ``engine`` resolves to (see the module docstring); raises ``ValueError``
    naming the reason when an explicit choice cannot run this model and sampler."""
    if engine not in ENGINES:
        raise ValueError(f"engine={engine!r} is not one of {list(ENGINES)}")
    quadratic = QuadraticGradients.supports(model)
    if engine == "auto":
        if quadratic and jax.default_backend() == "gpu" and pallas_supports(model, sampler) is None:
            return "pallas"
        glm = glm_of(model)
        if quadratic and (glm is None or model.dim <= QUADRATIC_MAX_DIM or _unclipped_full_batch(sampler)):
            return "quadratic"
        if glm is not None and jax.default_backend() == "gpu" and pallas_glm_supports(model, sampler) is None:
            return "pallas-glm"
        return "glm" if glm is not None else "batched"
    if engine in ("quadratic", "pallas") and not quadratic:
        raise ValueError(f"engine={engine!r} needs a quadratic model (dpjax.models.QuadraticModel, e.g. bayesian_linear_regression); {getattr(model, 'name', model)!r} is not one")
    if engine in ("glm", "pallas-glm") and glm_of(model) is None:
        raise ValueError(f"engine={engine!r} needs a model whose log-likelihood is -loss(y, x . theta) (declare dpjax.models.GLM with Model.with_structure); "
                         f"{getattr(model, 'name', model)!r} declares none, and its program is not one (dpjax.engine.detect.glm_form_of)")
    if engine == "pallas":
        reason = pallas_supports(model, sampler)
        if reason is not None:
            raise ValueError(f"engine='pallas' cannot run this sampler: {reason}")
    if engine == "pallas-glm":
        reason = pallas_glm_supports(model, sampler)
        if reason is not None:
            raise ValueError(f"engine='pallas-glm' cannot run this model and sampler: {reason}")
    return engine


class EnginePlan(NamedTuple):
    """How the engine will run a model on a pair, decided once (:func:`plan_engine`).

    ``model``: the model as the paths take it (its quadratic or GLM form where the engine
    recognised one); ``structure``: "quadratic", "glm" or "general" (what was recognised);
    ``path``: the engine path (:data:`ENGINES`); ``provider_kind``: the gradient provider the
    path builds (:func:`.gradients.provider_for`); ``fallback``: the XLA path a Pallas kernel
    falls back to when it does not compile (``engine="auto"`` only), else None."""

    model: Model
    structure: str
    path: str
    provider_kind: str
    fallback: Optional[str]


# the provider each path builds, and the XLA path behind each Pallas kernel
PROVIDER_KINDS = {"reference": "generic", "quadratic": "quadratic", "glm": "glm", "batched": "batched", "pallas": "quadratic", "pallas-glm": "glm"}
XLA_PATHS = {"pallas": "quadratic", "pallas-glm": "glm"}


def plan_engine(engine: str, model: Model, pair: NeighbouringPair, sampler: LangevinSampler) -> EnginePlan:
    """Recognise the model once (its quadratic or GLM form, :mod:`.detect`), choose the path
    (:func:`choose_engine`) and name the provider and the fallback: everything the run needs to
    go straight down one path. Raises ``ValueError`` naming the reason when an explicit
    ``engine`` cannot run this model and sampler (before any compute)."""
    model = recognised_model(engine, model, pair)
    path = choose_engine(engine, model, sampler)
    structure = "quadratic" if QuadraticGradients.supports(model) else ("glm" if glm_of(model) is not None else "general")
    fallback = XLA_PATHS.get(path) if engine == "auto" else None
    return EnginePlan(model, structure, path, PROVIDER_KINDS[path], fallback)


def recognised_model(engine: str, model: Model, pair: NeighbouringPair) -> Model:
    """``model``, or for the paths that can use it the same model as a
    :class:`~dpjax.models.QuadraticModel` when it is provably quadratic (auto, quadratic,
    pallas), or with a :class:`~dpjax.models.GLM` structure when it is provably a GLM (auto,
    glm, pallas-glm; :mod:`.detect`)."""
    if engine in ("auto", "quadratic", "pallas") and not QuadraticGradients.supports(model):
        found = quadratic_form_of(model, pair.dataset)
        if found is not None:
            return found
    if engine in ("auto", "glm", "pallas-glm"):
        found = glm_form_of(model, pair.dataset)  # None for a model that declares its structure
        if found is not None:
            return found
    return model


def _unclipped_full_batch(sampler: LangevinSampler) -> bool:
    return isinstance(sampler.batching, FullBatch) and sampler.clip_norm is None


def _rows_per_step(provider, sampler: LangevinSampler, num_slots: int) -> int:
    """Records a pair's step reads: the batch (a Poisson batch's gathered capacity), or none
    beyond the tables' sums for a quadratic model's unclipped full batches."""
    if isinstance(provider, QuadraticGradients) and _unclipped_full_batch(sampler):
        return 1
    return int(getattr(provider, "capacity", None) or sampler.batching.batch_size(num_slots))


def default_unroll() -> int:
    """Steps per loop iteration of the XLA paths: 8 on accelerators (XLA fuses the unrolled
    steps into one kernel), 1 on CPU (where unrolling only lengthens compilation)."""
    return 1 if jax.default_backend() == "cpu" else 8


def xla_loop_options(provider, sampler: LangevinSampler, num_devices: int, num_pairs: int, num_slots: int, dim: int, dtype) -> dict:
    """:func:`.reference.advance`'s ``pair_block`` and ``normals_once`` for a run: blocks of pairs
    by :func:`pair_block` (sized by the gathered rows' bytes on a GLM's gathered batches), and
    the normal draws written out once for steps that read fewer than all n records (where they
    are much of a step's work; a step that reads every record keeps them fused)."""
    gathered_rows = isinstance(provider, GLMGradients) and (not sampler.batching.dense or provider.capacity is not None)
    rows_per_step = _rows_per_step(provider, sampler, num_slots)
    return dict(pair_block=pair_block(num_devices, num_pairs, rows_per_step, dim, dtype, gathered_rows),
                normals_once=rows_per_step < num_slots)


def pair_block(num_devices: int, num_pairs: int, rows_per_step: int, dim: int, dtype, gathered_rows: bool = False) -> Optional[int]:
    """Pairs per block of the XLA loop (:func:`.reference.advance`), or None (all pairs at once).

    :data:`CPU_PAIR_BLOCK` pairs (float64; as many bytes of rows in float32: twice the pairs) on
    a single CPU device when the pairs' rows of one step (``rows_per_step`` records of d numbers,
    both chains) overflow :data:`CPU_BLOCKING_BYTES`: a block's rows then stay in cache through a
    step (2x the pair-steps/s of all pairs at once for logistic regression, d = 20, b = 128,
    2,048 pairs, on a 2-core x86 CPU; in float32, blocks of 128 pairs ran 1.12x blocks of 64,
    256 0.96x: median of 9 alternating rounds). A smaller working set fits the cache unblocked,
    and blocks would only multiply the loop's iterations (1.7x slower for cyclic SGLD, d = 1,
    b = 1, 4,096 pairs). None on accelerators and meshes. Pairs are independent: in float64 the
    blocks change no number; in float32 a block's shape may change the order XLA sums a GLM's
    rows in, by the last bit of a position (tested).

    ``gathered_rows`` (the GLM path's gathered batches, whose rows are d wide): the block holds
    about :data:`CPU_GATHER_BLOCK_BYTES` of a step's rows (the power of two of pairs nearest to
    it, 8 at least). Measured on a 2-core x86 CPU (AVX-512; logistic regression, b = 128,
    2,048 pairs, alternating rounds) the best block was 512 pairs at d = 20 in float32, 256 in
    float64, 128 at d = 80 in float32 and 16 at d = 320 in float64: about 10 MiB each time,
    and 1.1-1.8x the pair-steps/s of the fixed blocks of 64 or 128 pairs."""
    itemsize = jnp.dtype(dtype).itemsize
    working_set = num_pairs * 2 * rows_per_step * (dim + 1) * itemsize
    if gathered_rows:
        per_pair = working_set / num_pairs
        block = max(8, 2 ** round(math.log2(max(1.0, CPU_GATHER_BLOCK_BYTES / per_pair))))
    else:
        block = CPU_PAIR_BLOCK * max(1, 8 // itemsize)
    if jax.default_backend() != "cpu" or num_devices != 1 or num_pairs <= block:
        return None
    return block if working_set > CPU_BLOCKING_BYTES else None


def _global(array: np.ndarray, sharding) -> jax.Array:
    return jax.make_array_from_callback(array.shape, sharding, lambda idx: array[idx])


def run_pairs(
    seed: int,
    model: Model,
    pair: NeighbouringPair,
    sampler: LangevinSampler,
    *,
    num_pairs: int,
    num_steps: int,
    record_steps: Sequence[int],
    init=None,
    dtype=jnp.float64,
    mesh: Optional[Mesh] = None,
    chunk_size: int = 1000,
    checkpoint_every: Optional[int] = None,
    load_checkpoint: Callable[[], Optional[dict]] = lambda: None,
    save_checkpoint: Callable[[dict], None] = lambda arrays: None,
    progress: Optional[Callable[[int], None]] = None,
    engine: "str | EnginePlan" = "auto",
    unroll: Optional[int] = None,
) -> Recording:
    """Run ``num_pairs`` coupled pairs for ``num_steps`` steps, recording at ``record_steps``
    (sorted, distinct, in [0, num_steps]); arguments are validated by the caller.

    init: None (zeros), a (d,) or (K, d) array, or a callable key -> (d,) given each pair's
    fold_in(pair key, 2). load_checkpoint: returns a checkpoint dict (keys
    :data:`CHECKPOINT_KEYS`) or None, called on the leader only. save_checkpoint: called on the
    leader with such a dict every ``checkpoint_every`` steps. progress: called with each step count done.
    engine: a name of :data:`ENGINES`, or the :class:`EnginePlan` that :func:`plan_engine` made for
    this model, pair and sampler (a caller that checked the choice early passes it, so the model
    is not asked the same questions twice).
    """
    dtype = jnp.dtype(dtype)
    plan = engine if isinstance(engine, EnginePlan) else plan_engine(engine, model, pair, sampler)
    # float32 chains on a GPU: at XLA's default precision float32 dot products (a model's
    # x @ theta, the loss's <Delta, z>) may run on TF32 units with 10-bit mantissas: the likely
    # cause of float32 path losses 4% (relative) off the Pallas kernel's on an H100. A chain's
    # precision is the dtype the user chose, so every product is asked for in full
    with jax.enable_x64(dtype == jnp.dtype(jnp.float64)), jax.default_matmul_precision("highest"):
        return _run(seed, plan, pair, sampler, num_pairs, num_steps, np.asarray(record_steps, np.int64), init, dtype, check_mesh(mesh),
                    chunk_size, checkpoint_every, load_checkpoint, save_checkpoint, progress, unroll or default_unroll())


def _run(seed, plan: EnginePlan, pair, sampler, num_pairs, num_steps, steps, init, dtype, mesh, chunk_size, checkpoint_every, load_checkpoint, save_checkpoint,
         progress, unroll):
    model, path = plan.model, plan.path
    n, dim, index = pair.dataset.num_slots, model.dim, pair.index
    num_devices = int(mesh.shape["chains"])
    padded = num_devices * math.ceil(num_pairs / num_devices)
    chains = NamedSharding(mesh, PartitionSpec("chains"))
    replicated = NamedSharding(mesh, PartitionSpec())

    provider, host_data = provider_for(model, pair, plan.provider_kind, dtype, sampler)
    data = jax.device_put(host_data, replicated)
    index_arg = jnp.asarray(index, jnp.int32)
    sampler_arg = _sampler_leaves(sampler, dtype)

    compile_start = time.perf_counter()
    root = jax.random.key(int(seed))
    chain_ids = _global(np.arange(padded, dtype=np.uint32), chains)
    chain_keys, keys = reference.chain_setup(sampler_arg, root, chain_ids, num_slots=n)
    x0 = _start(init, chain_keys, num_pairs, padded, dim, dtype, chains)
    state = reference.PairState(x0, x0, _global(np.zeros(padded, dtype), chains), _global(np.ones(padded, bool), chains))

    loop = xla_loop_options(provider, sampler, num_devices, padded, n, dim, dtype)
    xla_advance = lambda st, start, count: reference.advance(sampler_arg, data, index_arg, keys.words, keys.batching, st, start, count, provider=provider,
                                                             num_slots=n, unroll=unroll, mesh=mesh, **loop)
    advance = xla_advance
    zero = jnp.asarray(0, jnp.int32)
    if path in ("pallas", "pallas-glm"):
        if path == "pallas":
            from . import pallas_kernel as kernel
        else:
            from . import pallas_glm as kernel
        xla_path = XLA_PATHS[path]

        advance = lambda st, start, count: kernel.advance(sampler_arg, data, index_arg, keys, st, start, count, provider=provider, num_slots=n, mesh=mesh)
        try:
            jax.block_until_ready(advance(state, zero, zero))
        except Exception as err:  # a JAX or Triton version whose Pallas lowering lacks something the kernel uses
            if plan.fallback is None:
                raise
            warnings.warn(f"the Pallas kernel did not compile here ({type(err).__name__}: {str(err)[:200]}); running the same "
                          f"steps on engine={xla_path!r} (the XLA path: same numbers, slower on a GPU)", RuntimeWarning, stacklevel=3)
            path, advance = xla_path, xla_advance
    jax.block_until_ready(advance(state, zero, zero))  # compiles on a first run, reuses after
    compile_seconds = time.perf_counter() - compile_start

    num_rec = len(steps)
    rec_x = np.zeros((num_rec, num_pairs, dim), dtype)
    rec_xp = np.zeros_like(rec_x)
    rec_loss = np.zeros((num_rec, num_pairs), dtype)
    recorded = current = 0

    # --- resume: the leader reads, every process gets its values ----------------------------
    ckpt = load_checkpoint() if hosts.is_leader() else None
    has = int(hosts.from_leader(np.array([ckpt is not None and int(ckpt["step"]) <= num_steps], np.int32))[0])
    if has:
        if not hosts.is_leader():
            ckpt = _empty_checkpoint(num_pairs, dim, dtype, rec_x, rec_xp, rec_loss)
        ckpt = {k: hosts.from_leader(np.asarray(ckpt[k])) for k in CHECKPOINT_KEYS}
        current, recorded = int(ckpt["step"]), int(ckpt["num_recorded"])
        rec_x, rec_xp, rec_loss = ckpt["rec_position"].astype(dtype), ckpt["rec_neighbour_position"].astype(dtype), ckpt["rec_path_loss"].astype(dtype)
        fresh = [hosts.to_host(leaf) for leaf in state]

        def padded_from(saved, fresh_full):
            full = np.array(fresh_full)  # padding pairs restart from the fresh state: they are dropped anyway
            full[:num_pairs] = saved
            return _global(full, chains)

        state = reference.PairState(*(padded_from(ckpt[k].astype(f.dtype), f) for k, f in zip(("position", "neighbour_position", "path_loss", "finite"), fresh)))
    resumed_from = current
    if progress is not None and current:
        progress(current)

    def record_here():
        nonlocal recorded
        while recorded < num_rec and steps[recorded] == current:
            rec_x[recorded] = hosts.to_host(state.position)[:num_pairs]
            rec_xp[recorded] = hosts.to_host(state.neighbour_position)[:num_pairs]
            rec_loss[recorded] = hosts.to_host(state.path_loss)[:num_pairs]
            recorded += 1

    def save():
        host = [hosts.to_host(leaf)[:num_pairs] for leaf in state]
        if hosts.is_leader():
            save_checkpoint(dict(
                step=np.asarray(current, np.int64), num_recorded=np.asarray(recorded, np.int64),
                position=host[0], neighbour_position=host[1], path_loss=host[2], finite=host[3],
                rec_position=rec_x, rec_neighbour_position=rec_xp, rec_path_loss=rec_loss,
            ))

    run_start = time.perf_counter()
    last_saved = current
    while True:
        record_here()
        if current >= num_steps:
            break
        target = min(num_steps, current + chunk_size)
        if recorded < num_rec:
            target = min(target, int(steps[recorded]))
        if checkpoint_every is not None:
            target = min(target, (current // checkpoint_every + 1) * checkpoint_every)
        count = target - current
        state = advance(state, jnp.asarray(current, jnp.int32), jnp.asarray(count, jnp.int32))
        current = target
        if progress is not None:
            progress(count)
        if checkpoint_every is not None and current < num_steps and current - last_saved >= checkpoint_every:
            record_here()  # so that the checkpoint holds a recording made at this step
            save()
            last_saved = current
    finite = hosts.to_host(state.finite)[:num_pairs].copy()
    run_seconds = time.perf_counter() - run_start
    timings = dict(
        compile_seconds=compile_seconds,
        run_seconds=run_seconds,
        resumed_from_step=resumed_from,
        num_devices=num_devices,
        num_processes=hosts.process_count(),
        engine=path,
        unroll=unroll if path not in ("pallas", "pallas-glm") else None,
        pair_block=loop["pair_block"] if path not in ("pallas", "pallas-glm") else None,
    )
    return Recording(steps.copy(), rec_x, rec_xp, rec_loss, finite, timings)


def _sampler_leaves(sampler: LangevinSampler, dtype) -> LangevinSampler:
    """The sampler with its float leaves as arrays of ``dtype``: Python floats would be weakly
    typed, and a float32 run must not be promoted by a float64 step size."""
    return jax.tree.map(lambda v: np.asarray(v, dtype) if isinstance(v, float) else v, sampler)


def _start(init, chain_keys, num_pairs: int, padded: int, dim: int, dtype, chains) -> jax.Array:
    """The pairs' shared start (padded, d): zeros, a given point or points, or init(key) per pair."""
    if callable(init):
        # evaluated eagerly (op by op): a new callable never compiles a new program
        x0 = jax.vmap(lambda k: jnp.asarray(init(jax.random.fold_in(k, randomness.INIT_TAG))).astype(dtype))(chain_keys)
        return jax.device_put(x0, chains)
    if init is None:
        return _global(np.zeros((padded, dim), dtype), chains)
    x0 = np.asarray(init, dtype)
    if x0.ndim == 1:
        x0 = np.broadcast_to(x0, (padded, dim))
    else:
        x0 = np.concatenate([x0, np.zeros((padded - num_pairs, dim), dtype)])  # padding pairs start at 0
    return _global(np.ascontiguousarray(x0), chains)


def _empty_checkpoint(num_pairs, dim, dtype, rec_x, rec_xp, rec_loss) -> dict:
    return {
        "step": np.zeros((), np.int64), "num_recorded": np.zeros((), np.int64),
        "position": np.zeros((num_pairs, dim), dtype), "neighbour_position": np.zeros((num_pairs, dim), dtype),
        "path_loss": np.zeros((num_pairs,), dtype), "finite": np.zeros((num_pairs,), bool),
        "rec_position": rec_x, "rec_neighbour_position": rec_xp, "rec_path_loss": rec_loss,
    }

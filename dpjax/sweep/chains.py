"""Coupled chain pairs for a sweep point: sharded over a mesh spanning all hosts, checkpointed.

This is the sweep's one adapter to :mod:`dpjax.coupled`. It runs exactly the coupled step of
:func:`dpjax.run_coupled` (``coupled._coupled_step``: same batch, same normal draw for the
two chains, the exact discrete-path privacy loss) with the same counter-based randomness
(pair k's keys from (seed, k), step t's draw from (key, t)), and adds what a sweep needs and
``run_coupled`` does not do:

* a mesh over *all processes'* devices (``jax.devices()`` under jax.distributed): the
  datasets are replicated, the pairs sharded on the "chains" axis, and results gathered to
  every host with a collective;
* a resumable state: every ``checkpoint_every`` steps the state of the first ``num_pairs``
  pairs (positions, path losses, finite flags) and the recordings so far are saved, and a
  run given that checkpoint continues from its step. Since step t of pair k depends only on
  (seed, k, t) and the state, the resumed run is bit-identical to an uninterrupted one
  (tested). A checkpoint holds the real pairs only (no padding), so it can be resumed under
  another device layout (by construction; the test suite checks layouts on whole runs only).

Pairs are padded to a multiple of the device count; padding pairs are dropped (their ids
follow the real ones, so they never change a real pair's randomness).
"""
from __future__ import annotations

import functools
import math
import time
from typing import Callable, NamedTuple, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .. import coupled
from ..data import Dataset
from . import distributed
from .build import Problem

CHECKPOINT_KEYS = ("step", "position", "neighbour_position", "path_loss", "finite", "num_recorded", "rec_position", "rec_neighbour_position", "rec_path_loss")


class ChainRecord(NamedTuple):
    """Recordings of one point (host numpy, on every process).

    steps (R,); positions, neighbour_positions (R, K, d); path_loss (R, K); finite (K,);
    timings: compile_seconds, run_seconds, resumed_from_step, num_devices, num_processes.
    """

    steps: np.ndarray
    positions: np.ndarray
    neighbour_positions: np.ndarray
    path_loss: np.ndarray
    finite: np.ndarray
    timings: dict


def _coupled(sampler, model, dataset: Dataset, neighbour: Dataset, index: int, batch, z, state, step):
    """:mod:`dpjax.coupled`'s synchronously coupled update of one pair, given step ``step``'s
    batch and normal draw. The single point of contact with the coupled runner's internals."""
    return coupled._coupled_step(sampler, model, dataset, neighbour, index, batch, z, state, step)


BLOCK_STEPS = coupled.NOISE_BLOCK  # steps whose randomness is drawn together
BLOCK_ELEMENTS = 1 << 22  # cap on pairs-per-device x block x batch size (memory of a block's batches)


def default_mesh() -> Mesh:
    """All devices of all processes on one "chains" axis."""
    return Mesh(np.array(jax.devices()), ("chains",))


def _numpy_dataset(dataset: Dataset, dtype) -> Dataset:
    # numpy leaves, so device_put can place them on a mesh spanning several processes
    fields = {k: (np.asarray(v, dtype) if np.issubdtype(np.asarray(v).dtype, np.floating) else np.asarray(v)) for k, v in dataset.fields.items()}
    return Dataset(fields=fields, mask=np.asarray(dataset.mask, dtype))


# Module-level jitted pieces with the problem as static arguments: calls with the same sampler
# and model objects (a resumed run, repeated runs of one problem) reuse the compiled code.


@functools.partial(jax.jit, static_argnames=("seed", "padded", "n", "sampler", "sharding"))
def _setup(*, seed, padded, n, sampler, sharding):
    root = jax.random.key(seed)
    chain_ids = jnp.arange(padded, dtype=jnp.uint32)
    chain_keys = jax.vmap(lambda c: jax.random.fold_in(root, c))(chain_ids)
    keys = jax.vmap(lambda k: sampler.chain_keys(k, n))(chain_keys)
    return jax.lax.with_sharding_constraint(keys, sharding)


@functools.partial(jax.jit, static_argnames=("x0", "padded", "dtype", "sharding"))
def _fresh_state(*, x0, padded, dtype, sharding):
    start = jnp.broadcast_to(jnp.asarray(x0, dtype), (padded, len(x0)))
    state = coupled._PairState(start, start, jnp.zeros((padded,), dtype), jnp.ones((padded,), bool))
    return jax.lax.with_sharding_constraint(state, sharding)


@functools.partial(jax.jit, static_argnames=("sampler", "model", "index", "block"))
def _advance(keys, state, dataset, neighbour, start, count, *, sampler, model, index, block):
    # Randomness of `block` consecutive steps is drawn in one vectorised call per pair, then
    # those steps run: the batch orders and the RNG are much cheaper over K x block lanes at
    # once. Step t's draw depends on (keys, t) only, so the grouping never changes a number.
    n, dim = dataset.num_slots, state.position.shape[1]
    step_pairs = jax.vmap(lambda k, s, t, b, z: _coupled(sampler, model, dataset, neighbour, index, b, z, s, t), in_axes=(0, 0, None, 0, 0))

    def draw(first):
        return coupled.pairs_block_randomness(sampler, keys, first, block, n, dim)

    return coupled.run_aligned_blocks(block, start, count, state, draw, lambda b, z, s, t: step_pairs(keys, s, t, b, z))


def run_pairs(
    seed: int,
    problem: Problem,
    *,
    num_pairs: int,
    num_steps: int,
    record_steps: Sequence[int],
    dtype: str = "float64",
    mesh: Optional[Mesh] = None,
    chunk_size: int = 1000,
    checkpoint_every: Optional[int] = None,
    load_checkpoint: Callable[[], Optional[dict]] = lambda: None,
    save_checkpoint: Callable[[dict], None] = lambda arrays: None,
    progress: Optional[Callable[[int], None]] = None,
) -> ChainRecord:
    """Run ``num_pairs`` coupled pairs of ``problem`` for ``num_steps`` steps (see module docstring).

    load_checkpoint: returns a checkpoint dict (keys :data:`CHECKPOINT_KEYS`) or None; called
        on the leader only, its content broadcast. save_checkpoint: called on the leader with
        such a dict every ``checkpoint_every`` steps. progress: called with each step count done.
    """
    float_dtype = jnp.dtype(dtype)
    with jax.enable_x64(float_dtype == jnp.dtype(jnp.float64)):
        return _run(seed, problem, num_pairs, num_steps, np.asarray(record_steps), float_dtype, mesh or default_mesh(), chunk_size, checkpoint_every, load_checkpoint, save_checkpoint, progress)


def _run(seed, problem, num_pairs, num_steps, steps, dtype, mesh, chunk_size, checkpoint_every, load_checkpoint, save_checkpoint, progress):
    model, pair, sampler = problem.model, problem.pair, problem.sampler
    n, dim, index = pair.dataset.num_slots, model.dim, pair.index
    num_devices = int(mesh.shape["chains"])
    padded = num_devices * math.ceil(num_pairs / num_devices)
    chains = NamedSharding(mesh, PartitionSpec("chains"))
    replicated = NamedSharding(mesh, PartitionSpec())
    dataset = jax.device_put(_numpy_dataset(pair.dataset, dtype), replicated)
    neighbour = jax.device_put(_numpy_dataset(pair.neighbour, dtype), replicated)
    x0 = np.zeros(dim) if problem.init is None else np.asarray(problem.init, np.float64)

    setup = functools.partial(_setup, seed=int(seed), padded=padded, n=n, sampler=sampler, sharding=chains)
    fresh_state = functools.partial(_fresh_state, x0=tuple(float(v) for v in x0), padded=padded, dtype=str(dtype), sharding=chains)
    block = coupled.aligned_block(BLOCK_STEPS, BLOCK_ELEMENTS // max(1, (padded // num_devices) * sampler.batching.batch_size(n)))
    advance = functools.partial(_advance, sampler=sampler, model=model, index=index, block=block)

    compile_start = time.perf_counter()
    keys = setup()
    state = fresh_state()
    zero = jnp.asarray(0, jnp.int32)
    jax.block_until_ready(advance(keys, state, dataset, neighbour, zero, zero))
    compile_seconds = time.perf_counter() - compile_start

    num_rec = len(steps)
    rec_x = np.zeros((num_rec, num_pairs, dim), dtype)
    rec_xp = np.zeros_like(rec_x)
    rec_loss = np.zeros((num_rec, num_pairs), dtype)
    recorded = 0
    current = 0

    # --- resume: the leader reads, everyone gets its values ----------------------------
    ckpt = load_checkpoint() if distributed.is_leader() else None
    has = int(distributed.from_leader(np.array([ckpt is not None and int(ckpt["step"]) <= num_steps], np.int32))[0])
    if has:
        if not distributed.is_leader():
            ckpt = {
                "step": np.zeros((), np.int64),
                "num_recorded": np.zeros((), np.int64),
                "position": np.zeros((num_pairs, dim), dtype),
                "neighbour_position": np.zeros((num_pairs, dim), dtype),
                "path_loss": np.zeros((num_pairs,), dtype),
                "finite": np.zeros((num_pairs,), bool),
                "rec_position": rec_x,
                "rec_neighbour_position": rec_xp,
                "rec_path_loss": rec_loss,
            }
        ckpt = {k: distributed.from_leader(np.asarray(ckpt[k])) for k in CHECKPOINT_KEYS}
        current, recorded = int(ckpt["step"]), int(ckpt["num_recorded"])
        rec_x, rec_xp, rec_loss = ckpt["rec_position"].astype(dtype), ckpt["rec_neighbour_position"].astype(dtype), ckpt["rec_path_loss"].astype(dtype)
        fresh = jax.tree_util.tree_map(distributed.to_host, state)

        def padded_from(saved, fresh_full):
            full = np.array(fresh_full)  # padding pairs restart from the fresh state: they are dropped anyway
            full[:num_pairs] = saved
            return jax.make_array_from_callback(full.shape, chains, lambda idx: full[idx])

        state = coupled._PairState(
            padded_from(ckpt["position"].astype(dtype), fresh.position),
            padded_from(ckpt["neighbour_position"].astype(dtype), fresh.neighbour_position),
            padded_from(ckpt["path_loss"].astype(dtype), fresh.path_loss),
            padded_from(ckpt["finite"].astype(bool), fresh.finite),
        )
    resumed_from = current
    if progress is not None and current:
        progress(current)

    def save():
        host = [distributed.to_host(leaf)[:num_pairs] for leaf in state]
        if distributed.is_leader():
            save_checkpoint(
                dict(
                    step=np.asarray(current, np.int64),
                    num_recorded=np.asarray(recorded, np.int64),
                    position=host[0],
                    neighbour_position=host[1],
                    path_loss=host[2],
                    finite=host[3],
                    rec_position=rec_x,
                    rec_neighbour_position=rec_xp,
                    rec_path_loss=rec_loss,
                )
            )

    run_start = time.perf_counter()
    last_saved = current
    while True:
        while recorded < num_rec and steps[recorded] == current:
            rec_x[recorded] = distributed.to_host(state.position)[:num_pairs]
            rec_xp[recorded] = distributed.to_host(state.neighbour_position)[:num_pairs]
            rec_loss[recorded] = distributed.to_host(state.path_loss)[:num_pairs]
            recorded += 1
        if current >= num_steps:
            break
        target = min(num_steps, current + chunk_size)
        if recorded < num_rec:
            target = min(target, int(steps[recorded]))
        if checkpoint_every is not None:
            target = min(target, (current // checkpoint_every + 1) * checkpoint_every)
        count = target - current
        state = advance(keys, state, dataset, neighbour, jnp.asarray(current, jnp.int32), jnp.asarray(count, jnp.int32))
        current = target
        if progress is not None:
            progress(count)
        if checkpoint_every is not None and current < num_steps and current - last_saved >= checkpoint_every:
            # record first if this step is a recorded one, so the checkpoint holds it
            while recorded < num_rec and steps[recorded] == current:
                rec_x[recorded] = distributed.to_host(state.position)[:num_pairs]
                rec_xp[recorded] = distributed.to_host(state.neighbour_position)[:num_pairs]
                rec_loss[recorded] = distributed.to_host(state.path_loss)[:num_pairs]
                recorded += 1
            save()
            last_saved = current
    finite = distributed.to_host(state.finite)[:num_pairs].copy()
    run_seconds = time.perf_counter() - run_start
    timings = dict(
        compile_seconds=compile_seconds,
        run_seconds=run_seconds,
        resumed_from_step=resumed_from,
        num_devices=num_devices,
        num_processes=distributed.process_count(),
    )
    return ChainRecord(steps.copy(), rec_x, rec_xp, rec_loss, finite, timings)

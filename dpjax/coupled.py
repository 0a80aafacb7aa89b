"""The coupled runner: K chain pairs on neighbouring datasets (D, D'), synchronously coupled.

Pair k runs one chain on D and one on D'. Both start at the same point, and at every step use
the same batch indices and the same Gaussian draw (synchronous coupling, paper 001 §4).
All randomness of pair k derives from (seed, k, step) (see :mod:`dpjax.samplers.kernel`), so
the numbers do not depend on how pairs are laid out over devices or vmapped together.

Path privacy loss (NOTES 001, "exact discrete-path privacy loss"). With Delta_t the
difference of the two datasets' drift displacements at D's current point x_t with the same
batch, Delta_t = drift_coef_t * (f_D(x_t) - f_D'(x_t)), sigma_t the step's noise std and z_t
its normal draw, the log-likelihood ratio of D's path under the two transition laws is

    L_t = sum_{s < t} |Delta_s|^2 / (2 sigma_s^2) + <Delta_s, z_s> / sigma_s

(Euler form: beta gamma |h|^2/4 + sqrt(beta gamma/2) <h, z>, h = f_D - f_D'). The batches are
shared, i.e. the loss is conditional on the batch sequence (the batch indices are treated as
released with the path, as in paper 001, where the differing record is assumed in the batch).
"""
from __future__ import annotations

import math
import time
from typing import Any, Callable, NamedTuple, Optional, Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from . import _validate
from .data import Dataset, NeighbouringPair, make_pair
from .models.base import Model
from .samplers.batching import Cyclic
from .samplers.kernel import INIT_STREAM, NOISE_BLOCK, LangevinSampler, clip_one


_BLOCK_STEPS = NOISE_BLOCK  # steps whose randomness is drawn together
_BLOCK_ELEMENTS = 1 << 22  # cap on pairs-per-device x block x batch size (memory of a block's batches)
# Cyclic orders are written out as tables when pairs x records is at most this (64 MB of int32):
# the same numbers, one gather per step instead of a keyed bijection with cycle-walking.
_ORDER_TABLE_ELEMENTS = 1 << 24


def aligned_block(largest: int, cap: int) -> int:
    """Steps per randomness block: the largest power of two <= min(largest, cap), at least 1
    (so that it divides NOISE_BLOCK)."""
    b = max(1, min(largest, cap, NOISE_BLOCK))
    return 1 << (b.bit_length() - 1)


def pairs_block_randomness(sampler: LangevinSampler, keys, first, block: int, num_slots: int, dim: int):
    """Every pair's batches and normal draws for steps first .. first + block - 1, as leaves
    of shape (block, K, ...) so that one step's slice is contiguous."""
    draws = jax.vmap(lambda k: sampler.block_randomness(k, first, block, num_slots, dim))(keys)
    return jax.tree.map(lambda leaf: jnp.moveaxis(leaf, 1, 0), draws)


def run_aligned_blocks(block: int, start, count, state, draw, step_fn):
    """Run steps start, ..., start + count - 1 in blocks on the absolute grid of ``block``.

    ``draw(first)`` gives the randomness of steps first .. first + block - 1 (leaves with a
    leading axis of ``block``); ``step_fn(batch, z, state, t)`` advances the state by step t.
    Steps of a block outside [start, start + count) are drawn but not run.
    """
    first0 = start - start % block
    stop = start + count

    def run_block(i, state):
        first = first0 + i * block
        # the barrier keeps XLA from fusing the block's randomness into each step's slice
        batches, noises = jax.lax.optimization_barrier(draw(first))

        def one(j, state):
            take = lambda leaf: jax.lax.dynamic_index_in_dim(leaf, j, axis=0, keepdims=False)
            return step_fn(jax.tree.map(take, batches), take(noises), state, first + j)

        lo = jnp.maximum(start - first, 0)
        hi = jnp.minimum(block, stop - first)
        return jax.lax.fori_loop(lo, hi, one, state)

    num_blocks = jnp.where(count > 0, (stop - first0 + block - 1) // block, 0)
    return jax.lax.fori_loop(0, num_blocks, run_block, state)


class CoupledResult(NamedTuple):
    """What :func:`run_coupled` records (host numpy arrays, float64 unless ``dtype`` says otherwise).

    steps: (R,) step counts t at which the chains were recorded (0 = the shared start).
    positions: (R, K, d) D's chains after t steps.
    neighbour_positions: (R, K, d) D''s chains after t steps.
    path_loss: (R, K) log dP_D / dP_D'(x_{0:t}) of D's chain (the exact discrete-path
        privacy loss; see the module docstring).
    finite: (K,) True where both chains and the loss stayed finite at every step of the run.
    num_nonfinite: number of pairs with ``finite`` False.
    config: a dict describing the run (seed, model, sampler, pair, sizes) and its timing
        (``compile_seconds``; ``run_seconds`` = stepping and recording only).

    Downstream code must use only the finite pairs, e.g. ``positions[:, result.finite]``, and
    report ``num_nonfinite`` beside any estimate: a diverged pair is never averaged in and
    never silently dropped. :meth:`finite_only` returns that selection.
    """

    steps: np.ndarray
    positions: np.ndarray
    neighbour_positions: np.ndarray
    path_loss: np.ndarray
    finite: np.ndarray
    num_nonfinite: int
    config: dict

    def finite_only(self) -> "CoupledResult":
        """The same result restricted to the pairs that stayed finite."""
        f = self.finite
        return self._replace(
            positions=self.positions[:, f],
            neighbour_positions=self.neighbour_positions[:, f],
            path_loss=self.path_loss[:, f],
            finite=self.finite[f],
        )

    # --- presentation (dpjax._display) ----------------------------------------------------
    def summary(self) -> str:
        """What ran and how far apart the two chains' laws are at each recorded step (100 columns)."""
        from . import _display

        return _display.coupled_summary(self)

    def __repr__(self) -> str:
        return self.summary()

    def figure(self):
        """Histograms of D's and D''s chains at up to four recorded steps."""
        from . import _display

        return _display.coupled_figure(self)

    def save(self, path):
        """Write :meth:`figure` to ``path`` (the suffix picks the format); returns the path."""
        from . import _display

        return _display.save_figure(self.figure(), path)


class _PairState(NamedTuple):
    position: jax.Array  # (d,)
    neighbour_position: jax.Array  # (d,)
    path_loss: jax.Array  # ()
    finite: jax.Array  # () bool


def _coupled_step(sampler: LangevinSampler, model: Model, dataset: Dataset, neighbour: Dataset, index: int, batch, z, state: _PairState, step):
    """One synchronously coupled step of one pair; its batch and normal draw serve both chains."""
    x, xp = state.position, state.neighbour_position
    drift_coef, noise_std = sampler.coefficients(step)
    # gather the batch once from D; D' differs from D only in slot `index`, so its batch is a select
    records_d = {k: v[batch.indices] for k, v in dataset.fields.items()}
    mask_d = dataset.mask[batch.indices]
    is_diff = batch.indices == index
    records_n = {
        k: jnp.where(is_diff.reshape(is_diff.shape + (1,) * (v.ndim - 1)), neighbour.fields[k][index], v) for k, v in records_d.items()
    }
    mask_n = jnp.where(is_diff, neighbour.mask[index], mask_d)
    grad_d = sampler.grad_from_records(model, x, records_d, mask_d, batch)
    grad_n = sampler.grad_from_records(model, xp, records_n, mask_n, batch)
    # f_D(x) - f_D'(x) at D's point: D and D' differ only in slot `index`, so only its
    # occurrences in the batch contribute (two record gradients instead of a batch of them).
    hits = jnp.sum(batch.weights * is_diff)
    g_d = clip_one(model.record_grad(x, dataset.record(index)), sampler.clip_norm) * dataset.mask[index]
    g_n = clip_one(model.record_grad(x, neighbour.record(index)), sampler.clip_norm) * neighbour.mask[index]
    delta = -drift_coef * batch.scale * hits * (g_d - g_n)  # drift displacement gap
    loss_step = jnp.sum(delta**2) / (2 * noise_std**2) + jnp.dot(delta, z) / noise_std
    new_x = x - drift_coef * grad_d + noise_std * z
    new_xp = xp - drift_coef * grad_n + noise_std * z
    new_loss = state.path_loss + loss_step
    ok = state.finite & jnp.all(jnp.isfinite(new_x)) & jnp.all(jnp.isfinite(new_xp)) & jnp.isfinite(new_loss)
    return _PairState(new_x, new_xp, new_loss, ok)


def _cast_dataset(dataset: Dataset, dtype) -> Dataset:
    fields = {k: (jnp.asarray(v, dtype) if jnp.issubdtype(jnp.asarray(v).dtype, jnp.floating) else jnp.asarray(v)) for k, v in dataset.fields.items()}
    return Dataset(fields=fields, mask=jnp.asarray(dataset.mask, dtype))


def _validate_pair(pair: Any, model: Model) -> None:
    if not isinstance(pair, NeighbouringPair):
        raise TypeError(f"pair={type(pair).__name__} must be a dpjax.NeighbouringPair (see replace_one / add_remove / make_pair)")
    if not isinstance(model, Model):
        raise TypeError(f"model={type(model).__name__} must be a dpjax.Model")
    for which, ds in (("pair.dataset", pair.dataset), ("pair.neighbour", pair.neighbour)):
        for name, value in ds.fields.items():
            _validate.finite_array(f"{which} field {name!r}", value)
    # The runner's path loss only looks at slot pair.index: make sure that is the only difference.
    checked = make_pair(pair.dataset, pair.neighbour, pair.adjacency)
    if checked.index != pair.index:
        raise ValueError(f"pair.index={pair.index} but the datasets differ in record {checked.index}")


def _record_steps(record_steps, num_steps: int) -> np.ndarray:
    if record_steps is None:
        return np.array([num_steps])
    steps = np.atleast_1d(np.asarray(record_steps))
    if steps.dtype.kind not in "iu" or steps.ndim != 1 or steps.size == 0:
        raise ValueError(f"record_steps={record_steps!r} must be a non-empty 1-D sequence of integers")
    if steps.min() < 0 or steps.max() > num_steps:
        raise ValueError(f"record_steps must satisfy 0 <= t <= num_steps = {num_steps}; got min {steps.min()} max {steps.max()}")
    return np.unique(steps)


def _check_init(init, num_pairs: int, dim: int):
    """Validate a non-callable init; returns a float64 numpy array (d,) or (K, d), or None."""
    if init is None or callable(init):
        return None
    x0 = np.asarray(init, dtype=np.float64)
    _validate.finite_array("init", x0)
    if x0.shape not in ((dim,), (num_pairs, dim)):
        raise ValueError(f"init has shape {x0.shape}; it must be ({dim},), ({num_pairs}, {dim}), a callable key -> ({dim},), or None")
    return x0


def _resolve_mesh(mesh: Optional[Mesh]) -> Optional[Mesh]:
    if mesh is not None:
        if "chains" not in mesh.axis_names:
            raise ValueError(f"mesh has axes {mesh.axis_names}; it needs an axis named 'chains'")
        return mesh
    devices = jax.devices()
    if len(devices) == 1:
        return None
    return Mesh(np.array(devices), ("chains",))


def run_coupled(
    seed: int,
    model: Model,
    pair: NeighbouringPair,
    sampler: LangevinSampler,
    *,
    num_pairs: int,
    num_steps: int,
    record_steps: Optional[Sequence[int]] = None,
    init: Union[None, np.ndarray, Callable[[jax.Array], jax.Array]] = None,
    chunk_size: int = 1000,
    progress: bool = True,
    dtype=jnp.float64,
    mesh: Optional[Mesh] = None,
) -> CoupledResult:
    """Run ``num_pairs`` synchronously coupled chain pairs on (D, D') for ``num_steps`` steps.

    seed: integer seed; pair k's randomness is a function of (seed, k, step) only.
    model: a :class:`dpjax.Model`. pair: a :class:`dpjax.NeighbouringPair` (checked to differ
        in exactly the record ``pair.index``). sampler: from :mod:`dpjax.samplers`.
    record_steps: step counts t in [0, num_steps] at which to record (default: [num_steps]);
        t = 0 records the shared start.
    init: the shared start of each pair: None (zeros), a position (d,), positions (K, d), or a
        callable ``key -> (d,)`` called with a per-pair key (e.g. a prior draw).
    chunk_size: at most this many steps per compiled call (the progress bar's granularity);
        memory is O(K d) whatever num_steps is.
    dtype: float64 (default; JAX's x64 mode is switched on for the call only) or float32.
    mesh: a ``jax.sharding.Mesh`` with a "chains" axis; default: all of ``jax.devices()``.
        Pairs are padded to a multiple of the number of devices and the padding dropped.

    Returns a :class:`CoupledResult`.
    """
    dtype = jnp.dtype(dtype)
    if dtype not in (jnp.dtype(jnp.float64), jnp.dtype(jnp.float32)):
        raise ValueError(f"dtype={dtype} must be float64 or float32")
    num_pairs = _validate.positive_int("num_pairs", num_pairs)
    if isinstance(num_steps, bool) or not isinstance(num_steps, (int, np.integer)) or num_steps < 0:
        raise ValueError(f"num_steps={num_steps!r} violates num_steps a non-negative integer")
    num_steps = int(num_steps)
    chunk_size = _validate.positive_int("chunk_size", chunk_size)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed={seed!r} must be an integer")
    if not isinstance(sampler, LangevinSampler):
        raise TypeError(f"sampler={type(sampler).__name__} must be a dpjax.samplers.LangevinSampler (ula / sgld / cyclic_sgld)")
    _validate_pair(pair, model)
    steps = _record_steps(record_steps, num_steps)
    n = pair.dataset.num_slots
    sampler.validate(n, num_steps)

    with jax.enable_x64(dtype == jnp.dtype(jnp.float64)):
        return _run(seed, model, pair, sampler, num_pairs, num_steps, steps, init, chunk_size, progress, dtype, mesh)


def _run(seed, model, pair, sampler, num_pairs, num_steps, steps, init, chunk_size, progress, dtype, mesh):
    n, dim, index = pair.dataset.num_slots, model.dim, pair.index
    dataset, neighbour = _cast_dataset(pair.dataset, dtype), _cast_dataset(pair.neighbour, dtype)
    mesh = _resolve_mesh(mesh)
    num_devices = 1 if mesh is None else int(mesh.shape["chains"])
    padded = num_devices * math.ceil(num_pairs / num_devices)

    def place(tree):
        if mesh is None:
            return tree
        return jax.device_put(tree, NamedSharding(mesh, PartitionSpec("chains")))

    chain_ids = place(jnp.arange(padded, dtype=jnp.uint32))
    root = jax.random.key(int(seed))

    given = _check_init(init, num_pairs, dim)
    if given is not None and given.ndim == 2:
        given = np.concatenate([given, np.zeros((padded - num_pairs, dim))])  # padding pairs start at 0
    if callable(init):
        shape = jax.eval_shape(init, jax.random.key(0)).shape
        if shape != (dim,):
            raise ValueError(f"init(key) returned shape {shape}; it must return a position of shape ({dim},)")

    @jax.jit
    def setup(chain_ids, given):
        chain_keys = jax.vmap(lambda c: jax.random.fold_in(root, c))(chain_ids)
        keys = jax.vmap(lambda k: sampler.chain_keys(k, n))(chain_keys)
        if callable(init):
            x0 = jax.vmap(lambda k: jnp.asarray(init(jax.random.fold_in(k, INIT_STREAM)), dtype))(chain_keys)
        elif given is None:
            x0 = jnp.zeros((chain_ids.shape[0], dim), dtype)
        else:
            x0 = jnp.broadcast_to(jnp.asarray(given, dtype), (chain_ids.shape[0], dim))
        return keys, _PairState(x0, x0, jnp.zeros(chain_ids.shape, dtype), jnp.ones(chain_ids.shape, bool))

    if given is not None:
        given = place(jnp.asarray(given, dtype)) if given.ndim == 2 else jnp.asarray(given, dtype)
    keys, state = setup(chain_ids, given)
    if isinstance(sampler.batching, Cyclic) and padded * n <= _ORDER_TABLE_ELEMENTS:
        keys = keys._replace(batching=jax.jit(jax.vmap(lambda s: sampler.batching.tabulate(s, n)))(keys.batching))

    # Randomness for a block of steps is drawn in one vectorised call (per pair: P batches
    # and P normal draws), then the block's steps run; cycle-walking orders and the RNG are
    # far cheaper over K * P lanes at once than P times over K lanes. Blocks sit on the
    # absolute step grid (P divides NOISE_BLOCK), so a block's normal draws come from one key.
    block = aligned_block(_BLOCK_STEPS, _BLOCK_ELEMENTS // max(1, padded // num_devices * sampler.batching.batch_size(n)))

    step_pairs = jax.vmap(
        lambda b, z, s, t: _coupled_step(sampler, model, dataset, neighbour, index, b, z, s, t), in_axes=(0, 0, 0, None)
    )

    @jax.jit
    def advance(keys, state, start, count):
        # traced start and count: one compilation serves every chunk length
        return run_aligned_blocks(block, start, count, state, lambda first: pairs_block_randomness(sampler, keys, first, block, n, dim), step_pairs)

    # compile once (a zero-length chunk) so the run time below is pure stepping
    compile_start = time.perf_counter()
    jax.block_until_ready(advance(keys, state, jnp.asarray(0, jnp.int32), jnp.asarray(0, jnp.int32)))
    compile_seconds = time.perf_counter() - compile_start
    run_start = time.perf_counter()

    positions = np.empty((len(steps), num_pairs, dim), dtype)
    neighbour_positions = np.empty_like(positions)
    path_loss = np.empty((len(steps), num_pairs), dtype)

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=num_steps, desc=f"{sampler.name} x {num_pairs} pairs", unit="step")
    current = 0
    for r, target in enumerate(steps):
        while current < target:
            count = min(chunk_size, int(target) - current)
            state = advance(keys, state, jnp.asarray(current, jnp.int32), jnp.asarray(count, jnp.int32))
            current += count
            if bar is not None:
                bar.update(count)
        positions[r] = np.asarray(state.position)[:num_pairs]
        neighbour_positions[r] = np.asarray(state.neighbour_position)[:num_pairs]
        path_loss[r] = np.asarray(state.path_loss)[:num_pairs]
    while current < num_steps:  # run to num_steps so `finite` covers the whole run
        count = min(chunk_size, num_steps - current)
        state = advance(keys, state, jnp.asarray(current, jnp.int32), jnp.asarray(count, jnp.int32))
        current += count
        if bar is not None:
            bar.update(count)
    finite = np.asarray(state.finite)[:num_pairs].copy()
    run_seconds = time.perf_counter() - run_start
    if bar is not None:
        bar.close()
    config = {
        "seed": int(seed),
        "model": getattr(model, "name", "model"),
        "dim": dim,
        "sampler": sampler.describe(),
        "num_records": n,
        "differing_index": index,
        "adjacency": pair.adjacency,
        "num_pairs": num_pairs,
        "num_steps": num_steps,
        "dtype": str(dtype),
        "num_devices": num_devices,
        "compile_seconds": compile_seconds,
        "run_seconds": run_seconds,
    }
    return CoupledResult(steps, positions, neighbour_positions, path_loss, finite, int(num_pairs - finite.sum()), config)

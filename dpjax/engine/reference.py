"""The XLA path: every pair vmapped, the steps in a loop, randomness generated inside the loop.

One coupled step of one pair (paper 001 §4's synchronous coupling; the path privacy loss of
NOTES 001): both chains use the same batch and the same normal draw z,

    x'  = x  - c grad_D(x)   + s z,        c, s = the step's drift coefficient and noise std
    x'' = xp - c grad_D'(xp) + s z,
    L  += |Delta|^2 / (2 s^2) + <Delta, z> / s,   Delta = -c scale hits gap(x),

where ``hits`` counts the differing slot in the batch and ``gap`` is the drift gap of that
record at D's point (:mod:`.gradients`). A pair stays ``finite`` while both chains and L do.

The loop body generates the step's Philox words in place (no precomputed noise or batch
tables, nothing of size K x n), walks cyclic orders by additions (a cursor recomputed at each
chunk's first step), and runs ``unroll`` steps per iteration so that XLA can fuse consecutive
steps into one kernel on an accelerator. Start and count are traced: one compiled program
serves every chunk, and a new seed, step size, data set or start point never recompiles.
"""
from __future__ import annotations

import functools
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp

from ..samplers.batching import Batch
from . import randomness as rng

INNER_UNROLL = None


class PairState(NamedTuple):
    """The coupled state of K pairs: positions (K, d) of both chains, path loss (K,), finite (K,)."""

    position: jax.Array
    neighbour_position: jax.Array
    path_loss: jax.Array
    finite: jax.Array


def coupled_step(sampler, provider, data, index, num_slots: int, words, chain_state, cursor, state: PairState, step, z):
    """One synchronously coupled step of one pair (unbatched leaves) with its normal draw z (d,);
    returns (state, cursor)."""
    x, xp = state.position, state.neighbour_position
    dtype = x.dtype
    scheme = sampler.batching
    drift, noise_std = sampler.coefficients(step, dtype)
    batch, cursor = scheme.advance(words, chain_state, cursor, step, num_slots)
    if scheme.dense and getattr(provider, "gathers_poisson", False) and provider.capacity is not None:
        sum_d, sum_n = poisson_sums(provider, sampler, x, xp, data, index, batch)
        grad_d = provider.prior_grad(x) + batch.scale * sum_d
        grad_n = provider.prior_grad(xp) + batch.scale * sum_n
    else:
        grad_d, grad_n = provider.estimates(sampler, x, xp, data, index, batch, scheme.dense)
    hits = batch.weights[index] if scheme.dense else jnp.sum(batch.weights * (batch.indices == index))
    delta = (-drift * batch.scale * hits) * provider.gap(sampler, x, data, index)
    loss = state.path_loss + (jnp.sum(delta**2) / (2 * noise_std**2) + jnp.dot(delta, z) / noise_std)
    new_x = (x - drift * grad_d + noise_std * z).astype(dtype)
    new_xp = (xp - drift * grad_n + noise_std * z).astype(dtype)
    loss = loss.astype(dtype)
    ok = state.finite & jnp.all(jnp.isfinite(new_x)) & jnp.all(jnp.isfinite(new_xp)) & jnp.isfinite(loss)
    return PairState(new_x, new_xp, loss, ok), cursor


def poisson_sums(provider, sampler, x, xp, data, index, batch: Batch) -> tuple[jax.Array, jax.Array]:
    """The data sums of a Poisson batch (dense 0/1 weights over the n slots) taken on its
    included slots only, gathered in chunks of ``provider.capacity``: the first chunk holds the
    included slots of ranks 0..m-1, the next m..2m-1, and so on while any remain (a loop whose
    trip count is the batch's; vmapped over pairs it runs while any pair has slots left). Exact
    for any batch size: never truncated; the capacity only sets the speed.
    """
    m = provider.capacity
    ranks = jnp.cumsum((batch.weights > 0).astype(jnp.int32))  # included slots in 0..i
    count = ranks[-1]
    zeros = jnp.zeros_like(x)

    def chunk(carry):
        k, sum_d, sum_n = carry
        targets = k * m + jnp.arange(1, m + 1, dtype=jnp.int32)  # ranks (1-based) of this chunk
        valid = targets <= count
        slots = jnp.where(valid, jnp.searchsorted(ranks, targets, side="left"), 0).astype(jnp.int32)
        part = Batch(slots, valid.astype(batch.weights.dtype), batch.scale)
        add_d, add_n = provider.batch_sums(sampler, x, xp, data, index, part, False)
        return k + 1, sum_d + add_d, sum_n + add_n

    _, sum_d, sum_n = jax.lax.while_loop(lambda c: c[0] * m < count, chunk, (jnp.int32(0), zeros, zeros))
    return sum_d, sum_n


@functools.partial(jax.jit, static_argnames=("provider", "num_slots", "unroll", "pair_block", "normals_once"))
def advance(sampler, data, index, words, chain_state, state: PairState, start, count, *, provider, num_slots: int, unroll: int,
            pair_block: Optional[int] = None, normals_once: bool = True) -> PairState:
    """Steps start, ..., start + count - 1 of every pair (``words``, ``chain_state``: (K, ...)).

    One loop over groups of consecutive steps on the absolute grid of multiples of the group
    size (``unroll`` rounded up to whole Philox blocks of normal draws,
    :func:`.randomness.group_steps`); a group's normals are drawn as one array
    (:func:`.randomness.group_normals_array`), and its steps run in an inner loop that holds the
    step once (unrolled ``unroll`` times). Steps of the first and last group outside
    [start, start + count) leave the state as it was. The grouping never changes a number: step
    t's draws depend on t only, and the program's size does not depend on d.

    ``pair_block``: run the pairs in blocks of this many, one block after another through all
    the steps (the last block padded with copies of the first pair, dropped after), so that a
    step's working set (a block's gathered rows) stays in a CPU's cache; None: all pairs at once
    (accelerators). Pairs are independent: in float64 the blocking changes no number; in float32
    a block's shape may move a GLM's positions by the last bit (:func:`.runner.pair_block`).

    ``normals_once``: on a CPU, write each step's (or group's) normal draws out once before the
    step reads them (:func:`.randomness.computed_once`), for steps that read few records (a
    batch, a quadratic model's tables), where the draws are much of the work: XLA's CPU backend
    would otherwise recompute them from the Philox rounds in each fusion that reads them
    (cyclic SGLD, d = 1: 1.7x the pair-steps/s). False for steps that read every record, where
    the draws are a sliver of the work and the write costs more than it saves (0.7x for ULA on
    the general path). Changes no word; the draws' float arithmetic may round differently.
    """
    with rng.wide_products():
        return _advance(sampler, data, index, words, chain_state, state, start, count, provider=provider, num_slots=num_slots, unroll=unroll,
                        pair_block=pair_block, normals_once=normals_once)


def _advance(sampler, data, index, words, chain_state, state, start, count, *, provider, num_slots, unroll, pair_block, normals_once):
    num_pairs = words.shape[0]
    run = functools.partial(_advance_pairs, sampler, data, index, start=start, count=count, provider=provider, num_slots=num_slots, unroll=unroll,
                            normals_once=normals_once)
    if pair_block is None or num_pairs <= pair_block:
        return run(words, chain_state, state)
    blocks = -(-num_pairs // pair_block)
    padded = blocks * pair_block

    def split(leaf):
        leaf = jnp.concatenate([leaf, jnp.broadcast_to(leaf[:1], (padded - num_pairs,) + leaf.shape[1:])]) if padded > num_pairs else leaf
        return leaf.reshape((blocks, pair_block) + leaf.shape[1:])

    out = jax.lax.map(lambda args: run(*args), jax.tree.map(split, (words, chain_state, state)))
    return jax.tree.map(lambda leaf: leaf.reshape((padded,) + leaf.shape[2:])[:num_pairs], out)


def _advance_pairs(sampler, data, index, words, chain_state, state: PairState, *, start, count, provider, num_slots: int, unroll: int,
                   normals_once: bool = True) -> PairState:
    """:func:`advance` on one block of pairs."""
    dim, dtype = state.position.shape[1], state.position.dtype
    group = steps_per_group(dim, dtype, unroll)
    k0, k1 = words[:, 0], words[:, 1]
    step_pairs = jax.vmap(
        lambda w, cs, cur, st, t, z: coupled_step(sampler, provider, data, index, num_slots, w, cs, cur, st, t, z),
        in_axes=(0, 0, 0, 0, None, 0),
    )
    cursor = jax.vmap(lambda w, cs: sampler.batching.start(w, cs, start, num_slots))(words, chain_state)
    stop = start + count

    if group == 1:
        # one copy of the step; each step draws its own normals (the blocks it touches)
        def one_step(t, carry):
            state, cursor = carry
            return step_pairs(words, chain_state, cursor, state, t, _step_normals(k0, k1, t, dim, dtype, normals_once))

        return jax.lax.fori_loop(start, stop, one_step, (state, cursor))[0]

    # small d: ``group`` steps share whole Philox blocks of normals, drawn once per group on the
    # absolute grid of multiples of ``group``; steps outside [start, stop) keep the state
    first_group = (start // group) * group
    num_groups = jnp.where(count > 0, (stop - first_group + group - 1) // group, 0)

    def one_group(i, carry):
        first = first_group + i * group
        z = _group_normals(k0, k1, first, group, dim, dtype, normals_once)
        for u in range(group):
            t = first + u
            new = step_pairs(words, chain_state, carry[1], carry[0], t, z[u])
            inside = (t >= start) & (t < stop)
            carry = jax.tree.map(lambda a, b: jnp.where(inside, a, b), new, carry)
        return carry

    return jax.lax.fori_loop(0, num_groups, one_group, (state, cursor))[0]


# up to this d (and P = 2 or 4 normals per Philox block), consecutive steps share blocks, and a
# step's normals are drawn coordinate by coordinate
GROUPED_MAX_DIM = 8


# The normals of the XLA loop. Up to GROUPED_MAX_DIM coordinates: one array per coordinate,
# stacked per step (a handful of small copies; XLA fuses them with the step). Beyond: one vector
# operation over the blocks and a reshape (randomness.step_normals_array), whose program does
# not grow with d. At d = 1 the array form ran the whole coupled step 3x slower on a 2-core x86
# CPU (its interleaving reshape is not fused), so small d keeps the per-coordinate form. Both
# give the same draws (test_engine.test_array_normals_are_the_per_coordinate_draws).
def _step_normals(k0, k1, step, dim: int, dtype, once: bool = True) -> jax.Array:
    """(K, d) normals of ``step`` (``once``: written out once, :func:`advance`)."""
    if dim <= GROUPED_MAX_DIM:
        z = jnp.stack(rng.step_normals(k0, k1, step, dim, dtype), axis=-1)
    else:
        z = rng.step_normals_array(k0, k1, step, dim, dtype)
    return rng.computed_once(z, step) if once else z


def _group_normals(k0, k1, first, steps: int, dim: int, dtype, once: bool = True) -> list:
    """The (K, d) normals of ``steps`` consecutive steps from ``first`` (a group's first step;
    ``once``: written out once, :func:`advance`)."""
    if dim <= GROUPED_MAX_DIM:
        z = [jnp.stack(z, axis=-1) for z in rng.group_normals(k0, k1, first, steps, dim, dtype)]
    else:
        array = rng.group_normals_array(k0, k1, first, steps, dim, dtype)  # (K, steps, d)
        z = [array[:, u] for u in range(steps)]
    return rng.computed_once(z, first) if once else z


def steps_per_group(dim: int, dtype, unroll: int) -> int:
    """Steps whose normals are drawn together in :func:`advance`: 1 (one copy of the step in the
    program, each step drawing the blocks it touches) unless d <= :data:`GROUPED_MAX_DIM`, where
    a step's d draws fill a fraction of a block and drawing whole blocks for
    :func:`.randomness.group_steps` steps at once halves the Philox work of a 1-D chain; then
    ``unroll`` rounded up to a multiple of that (the steps of a group are unrolled: at most
    ``max(unroll, 4)`` small copies)."""
    base = rng.group_steps(dim, dtype)
    if dim > GROUPED_MAX_DIM and unroll == 1:
        return 1
    return base * -(-unroll // base)


@functools.partial(jax.jit, static_argnames=("num_slots",))
def _chain_setup(sampler, root, chain_ids, tables, *, num_slots: int) -> tuple[Any, Any]:
    chain_keys = jax.vmap(lambda c: jax.random.fold_in(root, c))(chain_ids)
    keys = jax.vmap(lambda k: sampler.chain_keys(k, num_slots, tables))(chain_keys)
    return chain_keys, keys


def chain_setup(sampler, root, chain_ids, *, num_slots: int) -> tuple[Any, Any]:
    """Every pair's JAX key fold_in(root, pair) and its Philox words and batching state (the
    scheme's tables, e.g. the units of Z_n, go in as arguments: one program for every n's data)."""
    return _chain_setup(sampler, root, chain_ids, sampler.batching.tables(num_slots), num_slots=num_slots)

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
from jax import lax

from ..samplers.batching import Poisson
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
    returns (state, cursor). (Poisson batches on a provider with a ``capacity`` take
    :func:`poisson_sums` and :func:`coupled_update` instead, over a block of pairs.)"""
    x, xp = state.position, state.neighbour_position
    scheme = sampler.batching
    batch, cursor = scheme.advance(words, chain_state, cursor, step, num_slots)
    grad_d, grad_n = provider.estimates(sampler, x, xp, data, index, batch, scheme.dense)
    hits = batch.weights[index] if scheme.dense else jnp.sum(batch.weights * (batch.indices == index))
    return coupled_update(sampler, provider, data, index, state, step, z, grad_d, grad_n, hits * batch.scale), cursor


def coupled_update(sampler, provider, data, index, state: PairState, step, z, grad_d, grad_n, weight) -> PairState:
    """The step of one pair given its two gradient estimates and ``weight`` = scale x hits of
    the differing slot (the path loss's drift gap is weight x gap(x))."""
    x, xp = state.position, state.neighbour_position
    dtype = x.dtype
    drift, noise_std = sampler.coefficients(step, dtype)
    delta = (-drift * weight) * provider.gap(sampler, x, data, index)
    loss = state.path_loss + (jnp.sum(delta**2) / (2 * noise_std**2) + jnp.dot(delta, z) / noise_std)
    new_x = (x - drift * grad_d + noise_std * z).astype(dtype)
    new_xp = (xp - drift * grad_n + noise_std * z).astype(dtype)
    loss = loss.astype(dtype)
    ok = state.finite & jnp.all(jnp.isfinite(new_x)) & jnp.all(jnp.isfinite(new_xp)) & jnp.isfinite(loss)
    return PairState(new_x, new_xp, loss, ok)


def poisson_chunked(sampler, provider) -> bool:
    """Whether a step takes its Poisson batch in gathered chunks (:func:`poisson_sums`)."""
    return isinstance(sampler.batching, Poisson) and provider.capacity is not None


def _chunk_sums(sampler, provider, data, index, num_slots: int, words, step, x, xp, first, last, *, size: int):
    """One pair's sums over the members drawn from gap words ``first`` .. ``first + size - 1``."""
    part, last = sampler.batching.chunk(words, step, num_slots, first, size, last)
    part = rng.computed_once(part, step)  # the gather, the slot tests and both chains read it
    add_d, add_n = provider.batch_sums(sampler, x, xp, data, index, part, False)
    return add_d, add_n, jnp.sum(part.weights * (part.indices == index)), last


def overflow_pairs(num_pairs: int) -> int:
    """Pairs whose batch overflowed the first chunk that one round of :func:`poisson_sums` serves:
    8 + K / 8 (a first chunk of mean + 1 sd overflows for about 16% of pairs, so a step takes
    one or two rounds; more run when needed)."""
    return min(num_pairs, 8 + num_pairs // 8)


def poisson_sums(sampler, provider, data, index, num_slots: int, words, step, x, xp):
    """The data sums of step ``step``'s Poisson batch for K pairs (leading axis of ``words``,
    ``x``, ``xp``) on D at x and on D' at xp, and each pair's hits of the differing slot.

    Every pair takes the members of its first ``provider.capacity`` gap words (mean + 1 sd,
    :func:`.gradients.poisson_capacity`) in one vmapped gather. A pair whose batch has members
    beyond them (its last partial sum below n - 1) is rare, so rather than run a second chunk for
    every pair (what a loop under vmap does), the overflowing pairs are gathered, up to
    :func:`overflow_pairs` at a time, and each takes its next ``provider.overflow_capacity`` gap
    words; the rounds repeat while any pair has members left. A batch is never truncated or
    redrawn: the capacities set the speed only, and the members are those of the dense
    :meth:`~dpjax.samplers.batching.Poisson.batch` (tested). Expected work O(q n) per pair."""
    num_pairs = words.shape[0]
    first, more = provider.capacity, provider.overflow_capacity
    chunk = jax.vmap(functools.partial(_chunk_sums, sampler, provider, data, index, num_slots, size=first),
                     in_axes=(0, None, 0, 0, None, None))
    sum_d, sum_n, hits, last = chunk(words, step, x, xp, jnp.int32(0), jnp.int32(-1))
    rounds = overflow_pairs(num_pairs)
    extra = jax.vmap(functools.partial(_chunk_sums, sampler, provider, data, index, num_slots, size=more), in_axes=(0, None, 0, 0, 0, 0))

    def pending(carry):
        return jnp.any(carry[1] < num_slots - 1)

    def one_round(carry):
        next_word, last, sum_d, sum_n, hits = carry
        chosen = _first_true(last < num_slots - 1, rounds)
        at = jnp.minimum(chosen, num_pairs - 1)
        add_d, add_n, add_hits, new_last = extra(words[at], step, x[at], xp[at], next_word[at], last[at])
        return (next_word.at[chosen].add(more, mode="drop"), last.at[chosen].set(new_last, mode="drop"),
                sum_d.at[chosen].add(add_d, mode="drop"), sum_n.at[chosen].add(add_n, mode="drop"),
                hits.at[chosen].add(add_hits, mode="drop"))

    start = (jnp.full((num_pairs,), first, jnp.int32), last, sum_d, sum_n, hits)
    _, _, sum_d, sum_n, hits = jax.lax.while_loop(pending, one_round, start)
    return sum_d, sum_n, hits


def _first_true(flags: jax.Array, count: int) -> jax.Array:
    """The indices of the first ``count`` True entries of ``flags`` (K,), padded with K.

    jnp.nonzero(size=) ranks the entries with a cumsum, whose reduce-window is O(K^2) on a CPU
    (a quarter of a Poisson step's time at 512 pairs a block); the ranks here come from a
    log2(K)-round scan and one scatter."""
    num = flags.shape[0]
    ranks = lax.associative_scan(jnp.add, flags.astype(jnp.int32)) - 1
    slot = jnp.where(flags & (ranks < count), ranks, count)
    return jnp.full((count,), num, jnp.int32).at[slot].set(jnp.arange(num, dtype=jnp.int32), mode="drop")


def _poisson_step_pairs(sampler, provider, data, index, num_slots: int):
    """The XLA loop's step for a block of pairs on Poisson batches taken in chunks."""
    update = jax.vmap(functools.partial(coupled_update, sampler, provider, data, index), in_axes=(0, None, 0, 0, 0, 0))

    def step_pairs(words, chain_state, cursor, state, t, z):
        x, xp = state.position, state.neighbour_position
        sum_d, sum_n, hits = poisson_sums(sampler, provider, data, index, num_slots, words, t, x, xp)
        scale = sampler.batching.scale(x.dtype)
        grad_d = jax.vmap(provider.prior_grad)(x) + scale * sum_d
        grad_n = jax.vmap(provider.prior_grad)(xp) + scale * sum_n
        return update(state, t, z, grad_d, grad_n, scale * hits), cursor

    return step_pairs


@functools.partial(jax.jit, static_argnames=("provider", "num_slots", "unroll", "pair_block", "normals_once", "mesh"))
def advance(sampler, data, index, words, chain_state, state: PairState, start, count, *, provider, num_slots: int, unroll: int,
            pair_block: Optional[int] = None, normals_once: bool = True, mesh=None) -> PairState:
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

    ``mesh`` with several devices on its "chains" axis (the pairs' leading axis sharded over it):
    each device advances its own pairs (``jax.shard_map``), so a step holds no collective. Left
    to the partitioner, a Poisson step's overflow rounds (:func:`poisson_sums`), which pick the
    overflowing pairs of the whole block, would gather pairs across devices at every step; per
    device they pick among its own pairs. The members, hence the numbers, are the same (tested).
    """
    run = functools.partial(_advance, provider=provider, num_slots=num_slots, unroll=unroll, pair_block=pair_block, normals_once=normals_once)
    if mesh is not None and mesh.size > 1:
        from jax.sharding import PartitionSpec as P

        pairs = P("chains")
        run = jax.shard_map(run, mesh=mesh, in_specs=(P(), P(), P(), pairs, pairs, pairs, P(), P()), out_specs=pairs, check_vma=False)
    with rng.wide_products():
        return run(sampler, data, index, words, chain_state, state, start, count)


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
    if poisson_chunked(sampler, provider):
        step_pairs = _poisson_step_pairs(sampler, provider, data, index, num_slots)
    else:
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

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
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from . import randomness as rng


from .reference import PairState
class _Unused(NamedTuple):
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
    grad_d, grad_n = provider.estimates(sampler, x, xp, data, index, batch, scheme.dense)
    hits = batch.weights[index] if scheme.dense else jnp.sum(batch.weights * (batch.indices == index))
    delta = (-drift * batch.scale * hits) * provider.gap(sampler, x, data, index)
    loss = state.path_loss + (jnp.sum(delta**2) / (2 * noise_std**2) + jnp.dot(delta, z) / noise_std)
    new_x = (x - drift * grad_d + noise_std * z).astype(dtype)
    new_xp = (xp - drift * grad_n + noise_std * z).astype(dtype)
    loss = loss.astype(dtype)
    ok = state.finite & jnp.all(jnp.isfinite(new_x)) & jnp.all(jnp.isfinite(new_xp)) & jnp.isfinite(loss)
    return PairState(new_x, new_xp, loss, ok), cursor


def _stack(draws: list) -> jax.Array:
    return jnp.stack(draws, axis=-1)


@functools.partial(jax.jit, static_argnames=("provider", "num_slots", "unroll"))
def advance(sampler, data, index, words, chain_state, state: PairState, start, count, *, provider, num_slots: int, unroll: int) -> PairState:
    """Steps start, ..., start + count - 1 of every pair (``words``, ``chain_state``: (K, ...)).

    The steps run in groups of ``unroll`` (rounded up to whole Philox blocks of normal draws,
    :func:`.randomness.group_steps`) on the absolute grid of multiples of the group size, whose
    normals are drawn together; the steps before the first and after the last whole group run
    one at a time. The grouping never changes a number: step t's draws depend on t only.
    """
    dim, dtype = state.position.shape[1], state.position.dtype
    base = rng.group_steps(dim, dtype)
    group = base * -(-unroll // base)
    k0, k1 = words[:, 0], words[:, 1]
    step_pairs = jax.vmap(
        lambda w, cs, cur, st, t, z: coupled_step(sampler, provider, data, index, num_slots, w, cs, cur, st, t, z),
        in_axes=(0, 0, 0, 0, None, 0),
    )
    cursor = jax.vmap(lambda w, cs: sampler.batching.start(w, cs, start, num_slots))(words, chain_state)

    def single(t, carry):
        state, cursor = carry
        return step_pairs(words, chain_state, cursor, state, t, _stack(rng.step_normals(k0, k1, t, dim, dtype)))

    def grouped(i, carry):
        first = first_group + i * group
        for u, z in enumerate(rng.group_normals(k0, k1, first, group, dim, dtype)):
            carry = step_pairs(words, chain_state, carry[1], carry[0], first + u, _stack(z))
        return carry

    stop = start + count
    first_group = jnp.minimum(-(-start // group) * group, stop)
    num_groups = (stop - first_group) // group
    carry = jax.lax.fori_loop(start, first_group, single, (state, cursor))
    carry = jax.lax.fori_loop(0, num_groups, grouped, carry)
    carry = jax.lax.fori_loop(first_group + num_groups * group, stop, single, carry)
    return carry[0]


@functools.partial(jax.jit, static_argnames=("num_slots",))
def _chain_setup(sampler, root, chain_ids, tables, *, num_slots: int) -> tuple[Any, Any]:
    chain_keys = jax.vmap(lambda c: jax.random.fold_in(root, c))(chain_ids)
    keys = jax.vmap(lambda k: sampler.chain_keys(k, num_slots, tables))(chain_keys)
    return chain_keys, keys


def chain_setup(sampler, root, chain_ids, *, num_slots: int) -> tuple[Any, Any]:
    """Every pair's JAX key fold_in(root, pair) and its Philox words and batching state (the
    scheme's tables, e.g. the units of Z_n, go in as arguments: one program for every n's data)."""
    return _chain_setup(sampler, root, chain_ids, sampler.batching.tables(num_slots), num_slots=num_slots)

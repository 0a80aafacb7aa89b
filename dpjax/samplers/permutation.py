"""Keyed orders of n records, computed in registers: no K x n tables, no data-dependent loops.

Cyclic SGLD (paper 000) and reshuffled SGLD give every chain its own order of the n records;
sampling without replacement takes the first b positions of a fresh order each step. Storing K
orders costs K n integers (4,096 chains x 1,149,019 records = 19 GB in int32), and keyed
bijections of {0..2^m - 1} restricted to n by cycle-walking run a data-dependent loop whose
slowest lane stalls every other lane of a vector unit or GPU warp. Two loop-free families here:

**Affine orders** (:class:`AffineOrder`, the default of cyclic SGLD): position p holds record
(a p + b) mod n, with a drawn uniformly from the units of Z_n and b uniformly from Z_n. Since b
is uniform, the record at any fixed position and the position of any fixed record are *exactly*
uniform over chains, which is what paper 000's mixture law over the differing record's position
needs. The joint law of several positions is that of a random affine map (for prime n, any two
records' offset is uniform over the non-zero residues), not of a uniform permutation. Walking
an order costs one addition per position (position p + 1 holds the record at p plus a, mod n).

**Swap-or-not orders** (:func:`swap_or_not`; Hoang, Morris and Rogaway, "An enciphering scheme
based on a card shuffle", CRYPTO 2012): R rounds, each x -> K_r - x (mod n) when a keyed bit of
max(x, K_r - x) is set, else x. Every round is an involution of Z_n, so the composition is a
bijection of exactly {0..n-1} with no cycle-walking, at a fixed cost of R rounds per evaluation.
With uniform round keys a point is moved to a uniform position in each round with probability
1/2, so after R rounds its image is uniform up to 2^-R; :func:`swap_or_not_rounds` uses
2 ceil(log2 n) + 12 rounds. The chi-square tests in the suite check single positions and pairs.

All randomness comes from the chain's Philox words (:mod:`dpjax.engine.randomness`), stream
``ORDER``, counter step = the epoch (reshuffle), the step (without replacement) or 0 (cyclic).
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..engine import randomness as rng

MAX_RECORDS = 2**31 - 1  # indices are int32
_MAX_UNITS = 1 << 22  # multipliers drawn from at most this many units of Z_n
_GOLDEN, _MIX1, _MIX2 = 0x9E3779B9, 0x85EBCA6B, 0xC2B2AE35


def check_records(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= MAX_RECORDS:
        raise ValueError(f"n={n!r} violates 1 <= n <= 2**31 - 1 (record indices are int32)")
    return int(n)


# --- affine orders ----------------------------------------------------------------------
@functools.lru_cache(maxsize=16)
def units(n: int) -> np.ndarray:
    """The multipliers affine orders of n records draw from: the units of Z_n (all of them up
    to 2^22 of them; above that an evenly spaced subset of 2^22), int32, computed once per n."""
    n = check_records(n)
    if n == 1:
        return np.zeros(1, np.int32)
    found = np.flatnonzero(np.gcd(np.arange(n, dtype=np.int64), n) == 1)
    if found.size > _MAX_UNITS:
        found = found[np.linspace(0, found.size - 1, _MAX_UNITS).astype(np.int64)]
    return found.astype(np.int32)


class AffineOrder(NamedTuple):
    """Position p of a chain's order holds record (multiplier p + offset) mod n."""

    multiplier: jax.Array  # int32, a unit of Z_n
    offset: jax.Array  # int32 in [0, n)


def affine_order(words: jax.Array, n: int, unit_table=None) -> AffineOrder:
    """A chain's affine order from its Philox words (shape (2,)): a uniform unit (from
    ``unit_table``, default :func:`units` of n), a uniform offset."""
    table = units(check_records(n)) if unit_table is None else unit_table
    w0, w1, w2, w3 = rng.draw_block(words[0], words[1], 0, rng.ORDER, 0)
    multiplier = jnp.asarray(table)[rng.uniform_index(w0, w1, table.shape[0])]
    return AffineOrder(multiplier, rng.uniform_index(w2, w3, n))


def affine_record(order: AffineOrder, position: jax.Array, n: int) -> jax.Array:
    """Record at ``position`` (int array with values in [0, n)) of an affine order (int32)."""
    return mulmod(order.multiplier, position, n, addend=order.offset)


def mulmod(a: jax.Array, x: jax.Array, n: int, addend=0) -> jax.Array:
    """(a x + addend) mod n for int arrays 0 <= a, x, addend < n < 2^31, exactly (int32).

    Double-and-add over the bits of x: 31 fixed steps of additions mod n, no 64-bit product,
    so the same code is exact with or without JAX's 64-bit mode.
    """
    n32 = jnp.uint32(n)
    a = jnp.asarray(a).astype(jnp.uint32)
    x = jnp.asarray(x).astype(jnp.uint32)

    def add_mod(u, v):  # u, v < n < 2^31: u + v < 2^32
        s = u + v
        return jnp.where(s >= n32, s - n32, s)

    acc = jnp.broadcast_to(jnp.asarray(addend).astype(jnp.uint32), jnp.broadcast_shapes(a.shape, x.shape))
    power = a
    for bit in range(max(1, int(n - 1).bit_length())):
        acc = jnp.where((x >> bit) & 1, add_mod(acc, power), acc)
        power = add_mod(power, power)
    return acc.astype(jnp.int32)


# --- swap-or-not orders ------------------------------------------------------------------
def swap_or_not_rounds(n: int) -> int:
    """Rounds R of the swap-or-not orders of n records: 2 ceil(log2 n) + 12."""
    return 2 * max(1, math.ceil(math.log2(max(check_records(n), 2)))) + 12


class SwapOrNotKeys(NamedTuple):
    """Round keys (R,) uniform on Z_n and round seeds (R,) uint32 of one keyed order."""

    keys: jax.Array
    seeds: jax.Array


def swap_or_not_keys(words: jax.Array, counter_step, n: int) -> SwapOrNotKeys:
    """The round keys of the order keyed by a chain's Philox words and ``counter_step``."""
    rounds = swap_or_not_rounds(n)
    w0, w1, w2, _ = rng.draw_block(words[..., 0:1], words[..., 1:2], jnp.asarray(counter_step)[..., None] if jnp.ndim(counter_step) else counter_step, rng.ORDER, jnp.arange(rounds, dtype=jnp.uint32))
    return SwapOrNotKeys(rng.uniform_index(w0, w1, n), w2)


def _round_bit(x: jax.Array, seed: jax.Array) -> jax.Array:
    h = x.astype(jnp.uint32) * jnp.uint32(_GOLDEN) + seed
    h = h ^ (h >> 16)
    h = h * jnp.uint32(_MIX1)
    h = h ^ (h >> 13)
    h = h * jnp.uint32(_MIX2)
    h = h ^ (h >> 16)
    return (h >> 31) == 1


def _swap_round(x, key, seed, n):
    partner = jnp.where(key >= x, key - x, key - x + n)  # K - x mod n without leaving int32
    return jnp.where(_round_bit(jnp.maximum(x, partner), seed), partner, x)


def swap_or_not(position: jax.Array, order: SwapOrNotKeys, n: int) -> jax.Array:
    """Record at ``position`` (int array, values in [0, n)) of a swap-or-not order (int32)."""
    x = jnp.asarray(position).astype(jnp.int32)
    for r in range(order.keys.shape[-1]):
        x = _swap_round(x, order.keys[..., r], order.seeds[..., r], n)
    return x


def swap_or_not_inverse(record: jax.Array, order: SwapOrNotKeys, n: int) -> jax.Array:
    """Position of ``record`` in a swap-or-not order (the rounds, each an involution, reversed)."""
    x = jnp.asarray(record).astype(jnp.int32)
    for r in reversed(range(order.keys.shape[-1])):
        x = _swap_round(x, order.keys[..., r], order.seeds[..., r], n)
    return x

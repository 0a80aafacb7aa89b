"""Keyed bijections of {0, ..., n-1}: per-chain record orders without materialising them.

Cyclic SGLD (paper 000) and reshuffle-every-epoch SGLD give every chain its own random
order of the n records. Storing K orders costs K * n integers (4,096 chains x 1,149,019
records = 19 GB in int32), so instead an order is a *function*: position -> record, computed
on demand from a few 32-bit round keys per chain.

The function is a Feistel network on the bit strings of length m = max(2, ceil(log2 n)),
i.e. a bijection of {0, ..., 2^m - 1}, restricted to {0, ..., n-1} by cycle-walking
(apply the network again until the value lands below n; the walk stays inside the cycle of
the starting point, so the restriction is again a bijection, and since 2^m < 2n the
expected number of walks is below 2). Each round maps (L, R) -> (R, L xor F_k(R)) with the
halves of a and b bits swapping sizes every round, so odd m needs no padding. F_k is the
murmur3 32-bit finaliser of (R * golden-ratio constant + k), a bijection of uint32, so for a
uniformly random round key the value of F_k at any single input is exactly uniform; two
rounds already make the image of one fixed point uniform on {0..2^m-1} for independent
uniform round functions; cycle-walking and tiny halves need more (:func:`num_rounds`).
The orders are not uniform over all n! permutations (a Feistel network only makes even
permutations of {0..2^m-1}); what the samplers need, and the tests check, is that the
position of any fixed record, and the record at any fixed position, is uniform over chains.

Memory: one chain's order is at most 24 uint32 round keys (96 bytes), independent of n.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax

_GOLDEN = 0x9E3779B9
_MIX1 = 0x85EBCA6B
_MIX2 = 0xC2B2AE35


def num_bits(n: int) -> int:
    """Bits m of the Feistel domain {0..2^m-1} used for orders of n records (m >= 2)."""
    if n < 1:
        raise ValueError(f"n={n} violates n >= 1 (a permutation needs at least one record)")
    if n > 2**32:
        raise ValueError(f"n={n} violates n <= 2**32 (indices are 32-bit)")
    return max(2, math.ceil(math.log2(n)))


def num_rounds(n: int) -> int:
    """Feistel rounds used for orders of n records.

    Tiny domains need more rounds: with 1-3 bit halves a round function has only a handful
    of values, and at 6 rounds the position of a fixed record was measurably non-uniform for
    n = 5 (chi-square p ~ 1e-30 over 4e4 keys); 24 rounds for m <= 6 bits, 12 for m <= 12
    and 8 above pass the same test (tests/test_permutation.py).
    """
    m = num_bits(n)
    return 24 if m <= 6 else (12 if m <= 12 else 8)


def round_keys(key: jax.Array, n: int) -> jax.Array:
    """The uint32 round keys of one keyed order of n records, shape ``(num_rounds(n),)``."""
    return jax.random.bits(key, (num_rounds(n),), dtype=jnp.uint32)


def _round_function(right: jax.Array, key: jax.Array) -> jax.Array:
    h = right * jnp.uint32(_GOLDEN) + key
    h = h ^ (h >> 16)
    h = h * jnp.uint32(_MIX1)
    h = h ^ (h >> 13)
    h = h * jnp.uint32(_MIX2)
    return h ^ (h >> 16)


def _split(m: int) -> tuple[int, int]:
    # bits of (L, R) before even rounds; odd rounds have them swapped
    return m - m // 2, m // 2


def _forward_round(x, key, a: int, b: int):
    left, right = x >> b, x & jnp.uint32((1 << b) - 1)
    new_right = (left ^ _round_function(right, key)) & jnp.uint32((1 << a) - 1)
    return (right << a) | new_right  # new L = old R (b bits), new R (a bits)


def _inverse_round(y, key, a: int, b: int):
    right, new_right = y >> a, y & jnp.uint32((1 << a) - 1)
    left = (new_right ^ _round_function(right, key)) & jnp.uint32((1 << a) - 1)
    return (left << b) | right


def _feistel_forward(x: jax.Array, keys: jax.Array, m: int) -> jax.Array:
    a, b = _split(m)

    def two_rounds(i, v):  # a rolled loop keeps the compiled program small whatever the round count
        v = _forward_round(v, keys[2 * i], a, b)
        return _forward_round(v, keys[2 * i + 1], b, a)

    return lax.fori_loop(0, keys.shape[-1] // 2, two_rounds, x)


def _feistel_inverse(y: jax.Array, keys: jax.Array, m: int) -> jax.Array:
    a, b = _split(m)
    half = keys.shape[-1] // 2

    def two_rounds(i, v):
        j = half - 1 - i
        v = _inverse_round(v, keys[2 * j + 1], b, a)
        return _inverse_round(v, keys[2 * j], a, b)

    return lax.fori_loop(0, half, two_rounds, y)


def _cycle_walk(step, x: jax.Array, n: int) -> jax.Array:
    x = step(x)
    return lax.while_loop(lambda v: jnp.any(v >= jnp.uint32(n)), lambda v: jnp.where(v >= jnp.uint32(n), step(v), v), x)


def permute(positions: jax.Array, keys: jax.Array, n: int) -> jax.Array:
    """Record at each position of the order keyed by ``keys``: a bijection of {0..n-1}.

    ``positions`` is an integer array (any shape) of values in [0, n); ``keys`` are the
    round keys of :func:`round_keys` (shape ``(num_rounds(n),)``; vmap for a different
    order per element). Returns int32.
    """
    if n == 1:
        return jnp.zeros(jnp.shape(positions), jnp.int32)
    m = num_bits(n)
    x = jnp.asarray(positions).astype(jnp.uint32)
    out = _cycle_walk(lambda v: _feistel_forward(v, keys, m), x, n)
    return out.astype(jnp.int32)


def permute_inverse(records: jax.Array, keys: jax.Array, n: int) -> jax.Array:
    """Position of each record in the order keyed by ``keys`` (the inverse of :func:`permute`)."""
    if n == 1:
        return jnp.zeros(jnp.shape(records), jnp.int32)
    m = num_bits(n)
    y = jnp.asarray(records).astype(jnp.uint32)
    out = _cycle_walk(lambda v: _feistel_inverse(v, keys, m), y, n)
    return out.astype(jnp.int32)

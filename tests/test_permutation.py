"""Keyed orders (dpjax.samplers.permutation): exact bijection checks and chi-square uniformity.

Uniformity tests use fixed seeds, so they are deterministic; the threshold p > 1e-4 is a
significance level (a correct implementation fails it with probability 1e-4 per test on a
fresh seed), not a value tuned to these seeds.
"""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from dpjax.engine import randomness
from dpjax.samplers import permutation

P_THRESHOLD = 1e-4


def _words(seed, count):
    return jax.vmap(randomness.chain_words)(jax.random.split(jax.random.key(seed), count))


def _affine(seed, count, n):
    return jax.jit(jax.vmap(lambda w: permutation.affine_order(w, n)))(_words(seed, count))


def _swap_keys(seed, count, n, counter_step=0):
    return jax.jit(jax.vmap(lambda w: permutation.swap_or_not_keys(w, counter_step, n)))(_words(seed, count))


def _chi_square_uniform(values, n, bins):
    """p-value of the chi-square test that `values` (in 0..n-1) are uniform, with honest bin expectations."""
    bins = min(bins, n)
    expected = np.bincount(np.arange(n) * bins // n, minlength=bins) / n * len(values)
    observed = np.bincount(np.asarray(values) * bins // n, minlength=bins)
    return stats.chisquare(observed, expected).pvalue


@pytest.mark.parametrize("n", [1, 2, 5, 8, 12, 65, 4097])
def test_orders_are_bijections_and_swap_or_not_inverts(n):
    positions = jnp.arange(n)
    affine = _affine(0, 3, n)
    swap = _swap_keys(0, 3, n)
    for c in range(3):
        a = jax.tree.map(lambda v: v[c], affine)
        assert math.gcd(int(a.multiplier), n) == 1 or n == 1
        got = np.asarray(permutation.affine_record(a, positions, n))
        assert np.array_equal(np.sort(got), np.arange(n))
        np.testing.assert_array_equal(got, (int(a.multiplier) * np.arange(n) + int(a.offset)) % n)  # exact integer rule
        k = jax.tree.map(lambda v: v[c], swap)
        order = np.asarray(permutation.swap_or_not(positions, k, n))
        assert np.array_equal(np.sort(order), np.arange(n))
        assert np.array_equal(np.asarray(permutation.swap_or_not_inverse(jnp.asarray(order), k, n)), np.arange(n))


def test_bijections_at_paper_000_size():
    n = 1_149_019  # paper 000's Figure 1
    a = jax.tree.map(lambda v: v[0], _affine(7, 1, n))
    for order in (permutation.affine_record(a, jnp.arange(n), n), permutation.swap_or_not(jnp.arange(n), jax.tree.map(lambda v: v[0], _swap_keys(7, 1, n)), n)):
        counts = np.bincount(np.asarray(order), minlength=n)
        assert counts.shape == (n,) and np.all(counts == 1)  # every record exactly once per epoch
        assert not np.array_equal(np.asarray(order), np.arange(n))


def test_mulmod_is_exact_against_python_integers():
    rng = np.random.default_rng(0)
    for n in (1, 7, 1_149_019, 2**31 - 1):
        a, x, c = (rng.integers(0, n, 200) for _ in range(3))
        got = np.asarray(permutation.mulmod(jnp.asarray(a, jnp.int32), jnp.asarray(x, jnp.int32), n, addend=jnp.asarray(c, jnp.int32)))
        want = [(int(ai) * int(xi) + int(ci)) % n for ai, xi, ci in zip(a, x, c)]
        assert np.array_equal(got, want)


@pytest.mark.parametrize("n", [2, 5, 13, 1000])
def test_position_of_a_fixed_record_is_uniform_across_chains(n):
    chains = 20_000
    records = jnp.array([0, n // 2, n - 1])
    swap = _swap_keys(n, chains, n)
    affine = _affine(n, chains, n)
    at_swap = np.asarray(jax.jit(jax.vmap(lambda k: permutation.swap_or_not(records, k, n)))(swap))
    pos_swap = np.asarray(jax.jit(jax.vmap(lambda k: permutation.swap_or_not_inverse(records, k, n)))(swap))
    at_affine = np.asarray(jax.jit(jax.vmap(lambda o: permutation.affine_record(o, records, n)))(affine))
    for values in (at_swap, pos_swap, at_affine):
        for column in range(3):
            assert _chi_square_uniform(values[:, column], n, 50) > P_THRESHOLD


@pytest.mark.parametrize("n", [6, 31])
def test_swap_or_not_pairs_of_positions_are_uniform(n):
    """The joint law of the records at positions 0 and 1 is uniform over the n (n - 1) ordered
    pairs of distinct records (a uniform permutation's law), at the chi-square level."""
    chains = 40_000
    k = _swap_keys(3, chains, n)
    at = np.asarray(jax.jit(jax.vmap(lambda kk: permutation.swap_or_not(jnp.array([0, 1]), kk, n)))(k))
    assert np.all(at[:, 0] != at[:, 1])
    cells = at[:, 0] * n + at[:, 1]
    observed = np.bincount(cells, minlength=n * n)[(np.arange(n * n) // n) != (np.arange(n * n) % n)]
    assert stats.chisquare(observed).pvalue > P_THRESHOLD


def test_affine_position_uniform_at_scale_without_materialising_orders():
    n, chains = 1_149_019, 4096
    affine = _affine(11, chains, n)
    assert sum(v.nbytes for v in affine) <= chains * 8  # O(K) state: two int32 per chain
    at = np.asarray(jax.jit(jax.vmap(lambda o: permutation.affine_record(o, jnp.array(123_456), n)))(affine))
    assert _chi_square_uniform(at, n, 32) > P_THRESHOLD


def test_record_count_limits():
    with pytest.raises(ValueError, match=r"n=0 violates 1 <= n <= 2\*\*31 - 1"):
        permutation.check_records(0)
    with pytest.raises(ValueError, match=r"n=2147483648 violates"):
        permutation.units(2**31)

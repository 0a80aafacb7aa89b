"""Keyed bijections (dpjax.samplers.permutation): exact bijection checks and chi-square uniformity.

Uniformity tests use fixed seeds, so they are deterministic; the threshold p > 1e-4 is a
significance level (a correct implementation fails it with probability 1e-4 per test on a
fresh seed), not a value tuned to these seeds.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from dpjax.samplers import permutation

P_THRESHOLD = 1e-4

permute = jax.jit(permutation.permute, static_argnums=2)
permute_inverse = jax.jit(permutation.permute_inverse, static_argnums=2)


def _keys(seed, count, n):
    return jax.vmap(lambda k: permutation.round_keys(k, n))(jax.random.split(jax.random.key(seed), count))


@pytest.mark.parametrize("n", [1, 2, 5, 8, 65, 4097])
def test_permute_is_a_bijection_with_inverse(n):
    for seed in range(3):
        keys = permutation.round_keys(jax.random.key(seed), n)
        order = np.asarray(permute(jnp.arange(n), keys, n))
        assert np.array_equal(np.sort(order), np.arange(n))
        back = np.asarray(permute_inverse(jnp.asarray(order), keys, n))
        assert np.array_equal(back, np.arange(n))


def test_bijection_at_paper_000_size():
    n = 1_149_019  # paper 000's Figure 1
    keys = permutation.round_keys(jax.random.key(7), n)
    order = np.asarray(permute(jnp.arange(n), keys, n))
    counts = np.bincount(order, minlength=n)
    assert counts.shape == (n,) and np.all(counts == 1)  # every record exactly once per epoch
    assert not np.array_equal(order, np.arange(n))


def _chi_square_uniform(values, n, bins):
    """p-value of the chi-square test that `values` (in 0..n-1) are uniform, with honest bin expectations."""
    bins = min(bins, n)
    expected = np.bincount(np.arange(n) * bins // n, minlength=bins) / n * len(values)
    observed = np.bincount(np.asarray(values) * bins // n, minlength=bins)
    return stats.chisquare(observed, expected).pvalue


@pytest.mark.parametrize("n", [2, 5, 13, 1000])
def test_position_of_a_fixed_record_is_uniform_across_chains(n):
    chains = 20_000
    keys = _keys(n, chains, n)
    records = jnp.array([0, n // 2, n - 1])
    positions = np.asarray(jax.jit(jax.vmap(lambda k: permutation.permute_inverse(records, k, n)))(keys))
    at_positions = np.asarray(jax.jit(jax.vmap(lambda k: permutation.permute(records, k, n)))(keys))
    for column in range(3):
        assert _chi_square_uniform(positions[:, column], n, 50) > P_THRESHOLD
        assert _chi_square_uniform(at_positions[:, column], n, 50) > P_THRESHOLD


def test_position_uniform_at_scale_without_materialising_orders():
    n, chains = 1_149_019, 4096
    keys = _keys(11, chains, n)
    assert keys.nbytes <= 4096 * 24 * 4  # O(K) state: at most 24 uint32 round keys per chain
    positions = np.asarray(jax.jit(jax.vmap(lambda k: permutation.permute_inverse(jnp.array(123_456), k, n)))(keys))
    assert _chi_square_uniform(positions, n, 32) > P_THRESHOLD


def test_num_bits_rejects_empty_and_huge_domains():
    with pytest.raises(ValueError, match="n=0 violates n >= 1"):
        permutation.num_bits(0)
    with pytest.raises(ValueError, match=r"n <= 2\*\*32"):
        permutation.num_bits(2**32 + 1)

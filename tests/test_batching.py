"""Batching schemes: inclusion probabilities, epoch coverage, scales, masks, counter-based keys.

Frequencies are compared with their exact binomial/multinomial laws at 5 sigma or by a
chi-square test at p > 1e-4 (significance levels, not tuned values; seeds are fixed).
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import dpjax
from dpjax import samplers
from dpjax.engine import randomness
from dpjax.samplers import batching

P_THRESHOLD = 1e-4


def _batches(scheme, n, steps, chains=(0,), seed=0):
    """indices, weights, scales of steps 0..steps-1 of the given chains (keyed as in the runner).

    Leading axis: chains (dropped when a single chain is asked for).
    """

    @jax.jit
    def run(chain_ids):
        def one_chain(c):
            words = randomness.chain_words(jax.random.fold_in(jax.random.key(seed), c))
            state = scheme.chain_state(words, n)
            return jax.vmap(lambda t: scheme.batch(words, state, t, n))(jnp.arange(steps))

        return jax.vmap(one_chain)(chain_ids)

    b = run(jnp.asarray(chains, jnp.uint32))
    out = tuple(np.asarray(v) for v in (b.indices, b.weights, b.scale))
    return tuple(v[0] for v in out) if len(chains) == 1 else out


def test_full_batch_uses_every_record_with_scale_one():
    idx, w, scale = _batches(batching.FullBatch(), 7, 3)
    assert np.all(idx == np.arange(7)) and np.all(w == 1) and np.all(scale == 1)


def test_uniform_with_replacement_inclusion_is_uniform_and_scale_n_over_b():
    n, b, steps = 20, 4, 5000
    idx, w, scale = _batches(batching.make_batching("uniform", batch_size=b), n, steps)
    assert np.all(scale == n / b) and np.all(w == 1)
    assert stats.chisquare(np.bincount(idx.ravel(), minlength=n)).pvalue > P_THRESHOLD
    # with replacement: a batch repeats a record with probability 1 - prod_{j<b}(1 - j/n)
    repeats = np.mean([len(set(row)) < b for row in idx])
    p_repeat = 1 - np.prod(1 - np.arange(b) / n)
    assert abs(repeats - p_repeat) < 5 * np.sqrt(p_repeat * (1 - p_repeat) / steps)


def test_without_replacement_has_distinct_records_with_inclusion_b_over_n():
    n, b, steps = 20, 5, 4000
    idx, w, scale = _batches(batching.make_batching("without-replacement", batch_size=b), n, steps)
    assert all(len(set(row)) == b for row in idx)
    assert np.all(scale == n / b)
    counts = np.bincount(idx.ravel(), minlength=n)  # each record's inclusion count ~ Binomial(steps, b/n)
    q = b / n
    assert np.all(np.abs(counts - steps * q) < 5 * np.sqrt(steps * q * (1 - q)))
    assert stats.chisquare(counts).pvalue > P_THRESHOLD


def test_poisson_inclusion_rate_and_batch_size_law():
    n, q, steps = 30, 0.2, 4000
    idx, w, scale = _batches(batching.make_batching("poisson", rate=q), n, steps)
    assert np.all(idx == np.arange(n)) and np.all(scale == 1 / q)
    incl = w.sum(axis=0)  # per record ~ Binomial(steps, q)
    assert np.all(np.abs(incl - steps * q) < 5 * np.sqrt(steps * q * (1 - q)))
    sizes = w.sum(axis=1)  # ~ Binomial(n, q): mean nq, variance nq(1-q)
    var = n * q * (1 - q)
    assert abs(sizes.mean() - n * q) < 5 * np.sqrt(var / steps)
    mu4 = var * (1 + 3 * (n - 2) * q * (1 - q))  # binomial 4th central moment
    sd_of_sample_var = np.sqrt((mu4 - var**2 * (steps - 3) / (steps - 1)) / steps)
    assert abs(sizes.var(ddof=1) - var) < 5 * sd_of_sample_var


@pytest.mark.parametrize("name", ["reshuffle", "cyclic"])
@pytest.mark.parametrize("n,b", [(12, 1), (12, 5)])
def test_every_record_once_per_epoch(name, n, b):
    scheme = batching.make_batching(name, batch_size=b)
    per_epoch = scheme.steps_per_epoch(n)
    assert per_epoch == -(-n // b)
    idx, w, scale = _batches(scheme, n, 3 * per_epoch)
    epochs = []
    for e in range(3):
        sl = slice(e * per_epoch, (e + 1) * per_epoch)
        used = idx[sl][w[sl] == 1]
        assert np.array_equal(np.sort(used), np.arange(n))
        epochs.append(used)
        sizes = w[sl].sum(axis=1)
        assert np.allclose(scale[sl], n / sizes)  # short last block gets scale n / its size
    same = [np.array_equal(epochs[0], epochs[e]) for e in (1, 2)]
    if name == "cyclic":
        assert all(same)
    else:  # a fresh order each epoch (12! orders: equal only with negligible probability)
        assert not any(same)


def test_cyclic_orders_differ_across_chains_and_a_given_order_is_followed():
    n = 9
    scheme = batching.make_batching("cyclic", batch_size=1)
    orders = {tuple(row.ravel()) for row in _batches(scheme, n, n, chains=range(6))[0]}
    assert len(orders) == 6
    fixed = np.array([3, 1, 4, 0, 5, 8, 2, 7, 6])
    idx, _, _ = _batches(samplers.cyclic_sgld(0.1, order=fixed).batching, n, 2 * n)
    assert np.array_equal(idx.ravel(), np.tile(fixed, 2))


@pytest.mark.parametrize("n,b", [(12, 1), (12, 5), (7, 7), (1, 1)])
@pytest.mark.parametrize("family", ["affine", "swap-or-not"])
def test_walking_a_cyclic_order_gives_the_batches_of_the_stateless_rule(n, b, family):
    """Engines walk cyclic orders with a cursor from any start step; every batch must equal
    scheme.batch(step) across epoch ends and short last blocks."""
    scheme = batching.make_batching("cyclic", batch_size=b, order_family=family)
    steps = 3 * scheme.steps_per_epoch(n) + 2

    @jax.jit
    def walk(c, first):
        words = randomness.chain_words(jax.random.fold_in(jax.random.key(4), c))
        state = scheme.chain_state(words, n)

        def body(cursor, t):
            got, cursor = scheme.advance(words, state, cursor, t, n)
            return cursor, (got.indices, got.weights, scheme.batch(words, state, t, n))

        _, (idx, w, ref) = jax.lax.scan(body, scheme.start(words, state, first, n), first + jnp.arange(steps))
        return idx, w, ref

    for c in range(3):
        for first in (0, 1, scheme.steps_per_epoch(n) - 1, 2 * scheme.steps_per_epoch(n) + 1):
            idx, w, ref = walk(c, first)
            assert np.array_equal(np.asarray(w), np.asarray(ref.weights))
            assert np.array_equal(np.asarray(idx) * np.asarray(w), np.asarray(ref.indices) * np.asarray(ref.weights))


def test_batches_depend_only_on_chain_and_step_not_on_layout():
    n = 50
    for scheme in (batching.make_batching("reshuffle", batch_size=7),):  # keyed per epoch; end-to-end in test_layout
        alone = _batches(scheme, n, 20, chains=(5,))[0]
        together = _batches(scheme, n, 20, chains=range(8))[0]
        assert np.array_equal(together[5], alone)


def test_removed_record_contributes_zero_to_the_gradient():
    """Full-batch estimate on D' (add/remove) equals autodiff of U_D', which drops the record."""
    model = dpjax.Model(lambda th, r: -0.5 * (r["y"] - r["x"] @ th) ** 2, lambda th: -0.5 * jnp.sum(th**2), dim=2)
    rng = np.random.default_rng(0)
    with jax.enable_x64(True):
        ds = dpjax.make_dataset(x=rng.normal(size=(6, 2)), y=rng.normal(size=6))
        pair = dpjax.add_remove(ds, 2)
        sampler = samplers.ula(0.1)
        theta = jnp.array([0.3, -0.7])
        full = batching.FullBatch().batch(None, None, 0, 6)
        for d in (pair.dataset, pair.neighbour):
            est = sampler.potential_grad_estimate(model, d, theta, full)
            np.testing.assert_allclose(est, model.potential_grad(theta, d), rtol=1e-12)
        x, y = np.asarray(ds["x"]), np.asarray(ds["y"])
        keep = np.arange(6) != 2
        by_hand = theta - x[keep].T @ (y[keep] - x[keep] @ np.asarray(theta))
        np.testing.assert_allclose(sampler.potential_grad_estimate(model, pair.neighbour, theta, full), by_hand, rtol=1e-12)


def test_batching_validation_errors():
    with pytest.raises(ValueError, match=r"batching='shuffle' is not one of"):
        batching.make_batching("shuffle", batch_size=2)
    with pytest.raises(ValueError, match=r"batch_size=0 violates batch_size a positive integer"):
        batching.make_batching("uniform", batch_size=0)
    with pytest.raises(ValueError, match=r"batch_size=11 violates batch_size <= n = 10"):
        batching.make_batching("reshuffle", batch_size=11).validate(10)
    with pytest.raises(ValueError, match=r"rate=0 violates rate in \(0.0, 1.0\]"):
        batching.make_batching("poisson", rate=0.0)
    with pytest.raises(ValueError, match=r"rate=1.5 violates rate in \(0.0, 1.0\]"):
        batching.make_batching("poisson", rate=1.5)
    with pytest.raises(ValueError, match="needs rate"):
        batching.make_batching("poisson")
    with pytest.raises(ValueError, match="needs batch_size"):
        batching.make_batching("without-replacement")
    with pytest.raises(ValueError, match="must be a permutation of 0..3"):
        batching.make_batching("cyclic", order=[0, 1, 1, 3]).validate(4)

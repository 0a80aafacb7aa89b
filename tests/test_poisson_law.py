"""The law of a Poisson batch drawn from geometric gaps (issue 36): tests of the law, not of the code.

A Poisson batch of rate q on n slots marks every slot independently with probability q. dpjax
draws it as the partial sums of i.i.d. Geometric(q) gaps, in chunks of a static capacity, so its
members cost expected O(q n). These tests check the law itself from many draws, at stated
significance levels (chi-square p > 1e-4, or 5 sigma of the exact binomial law; seeds fixed):

* each slot's inclusion frequency against Binomial(steps, q);
* the batch size against Binomial(n, q), by a chi-square test over its support;
* pairwise independence: the joint inclusion frequency of slot pairs against q^2;
* batches that overflow a chunk (q close to 1, and capacities far below n q) give the same
  members as the dense form, whatever the capacity: the capacity changes the speed, never the law;
* the gaps' arithmetic at its edges (q = 1, tiny q, large n) against exact values.

That every engine path runs the same batches (same numbers for one seed) is tested in
tests/test_engine_paths.py, against the reference path that takes the dense form.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from dpjax.engine import randomness
from dpjax.engine.gradients import poisson_capacity, poisson_overflow_capacity
from dpjax.samplers import batching

P_THRESHOLD = 1e-4


def _dense(q, n, steps, chains=1, seed=0):
    """(chains, steps, n) 0/1 inclusion of the dense form (Poisson.batch)."""
    scheme = batching.Poisson(rate=q)

    @jax.jit
    def run(ids):
        def one(c):
            words = randomness.chain_words(jax.random.fold_in(jax.random.key(seed), c))
            return jax.vmap(lambda t: scheme.batch(words, (), t, n).weights)(jnp.arange(steps))

        return jax.vmap(one)(ids)

    return np.asarray(run(jnp.arange(chains, dtype=jnp.uint32)))


def _chunked(q, n, steps, capacity, seed=0, chain=0):
    """(steps, n) 0/1 inclusion from walking the chunks of ``capacity`` (what the engine does)."""
    scheme = batching.Poisson(rate=q)
    words = randomness.chain_words(jax.random.fold_in(jax.random.key(seed), chain))

    @jax.jit
    def one_step(t):
        def more(c):
            return c[1] < n - 1

        def take(c):
            k, last, w = c
            part, last = scheme.chunk(words, t, n, k * capacity, capacity, last)
            return k + 1, last, w.at[jnp.where(part.weights > 0, part.indices, n)].add(1.0, mode="drop")

        part, last = scheme.chunk(words, t, n, 0, capacity, jnp.int32(-1))
        w = jnp.zeros(n).at[jnp.where(part.weights > 0, part.indices, n)].add(1.0, mode="drop")
        return jax.lax.while_loop(more, take, (jnp.int32(1), last, w))[2]

    return np.stack([np.asarray(one_step(t)) for t in range(steps)])


@pytest.mark.parametrize("q,n", [(0.05, 200), (0.3, 40), (0.9, 25)])
def test_inclusion_frequency_and_batch_size_law(q, n):
    steps = 4000
    w = _dense(q, n, steps)[0]
    assert set(np.unique(w)) <= {0.0, 1.0}
    incl = w.sum(axis=0)  # each slot ~ Binomial(steps, q)
    sd = np.sqrt(steps * q * (1 - q))
    assert np.all(np.abs(incl - steps * q) < 5 * sd), (incl.min(), incl.max(), steps * q)
    assert stats.chisquare(incl).pvalue > P_THRESHOLD  # no slot favoured
    # the batch size against Binomial(n, q): chi-square over its support, sparse tails pooled
    sizes = w.sum(axis=1).astype(int)
    pmf = stats.binom.pmf(np.arange(n + 1), n, q)
    observed = np.bincount(sizes, minlength=n + 1)
    keep = pmf * steps >= 5
    lo, hi = np.flatnonzero(keep)[[0, -1]]
    obs = np.concatenate([[observed[:lo].sum()], observed[lo:hi + 1], [observed[hi + 1:].sum()]])
    exp = np.concatenate([[pmf[:lo].sum()], pmf[lo:hi + 1], [pmf[hi + 1:].sum()]]) * steps
    nonzero = exp > 0
    assert stats.chisquare(obs[nonzero], exp[nonzero] * obs.sum() / exp[nonzero].sum()).pvalue > P_THRESHOLD


def test_inclusions_are_pairwise_independent():
    # slots i, j both included with probability q^2: every pair of slots, 5 sigma of Binomial(steps, q^2)
    q, n, steps = 0.2, 30, 6000
    w = _dense(q, n, steps)[0]
    joint = w.T @ w  # (n, n) counts of both included
    iu = np.triu_indices(n, 1)
    p2 = q * q
    assert np.all(np.abs(joint[iu] - steps * p2) < 5 * np.sqrt(steps * p2 * (1 - p2)))
    # and successive slots (where a gap-based draw could correlate) as a 2x2 contingency test
    a, b = w[:, :-1].ravel(), w[:, 1:].ravel()
    table = np.array([[np.sum((a == 1) & (b == 1)), np.sum((a == 1) & (b == 0))], [np.sum((a == 0) & (b == 1)), np.sum((a == 0) & (b == 0))]])
    assert stats.chi2_contingency(table).pvalue > P_THRESHOLD


def test_chains_and_steps_are_independent_draws():
    # the same slot in two chains at one step, and in one chain at consecutive steps: joint q^2
    q, n, steps = 0.3, 10, 3000
    w = _dense(q, n, steps, chains=2)
    for a, b in ((w[0], w[1]), (w[0][:-1], w[0][1:])):
        joint = np.sum(a * b)
        m = a.size
        assert abs(joint - m * q * q) < 5 * np.sqrt(m * q * q * (1 - q * q))


@pytest.mark.parametrize("q,n,capacity", [(0.97, 40, 3), (0.5, 64, 1), (0.2, 100, 7), (0.01, 1000, 4)])
def test_chunks_of_any_capacity_give_the_dense_members(q, n, capacity):
    # a capacity far below n q makes almost every batch overflow its first chunk: the chunks
    # that follow must give exactly the dense form's members (never truncated, never redrawn)
    steps = 30
    dense = _dense(q, n, steps)[0]
    chunked = _chunked(q, n, steps, capacity)
    assert np.array_equal(dense, chunked)
    assert dense.sum(axis=1).max() > capacity  # overflow really happened


def test_q_one_takes_every_slot_and_tiny_q_almost_none():
    assert np.all(_dense(1.0, 17, 5) == 1.0)
    w = _dense(1e-9, 1000, 50)
    assert w.sum() == 0  # P(any member in 50 x 1000 slots) = 5e-5


def test_geometric_gaps_are_exact_at_their_edges():
    # U = (bits + 1/2) 2^-53: the gap is 1 + floor(log U / log(1 - q)), capped at n; checked in
    # mpmath at 40 digits for words at both ends of the range and in between
    import mpmath

    mpmath.mp.dps = 40
    highs = np.array([0, 0, 1, 2**31, 2**32 - 1, 12345678], np.uint32)
    lows = np.array([0, 2**6, 0, 0, 2**32 - 1, 87654321], np.uint32)
    for q in (1e-9, 1e-3, 0.3, 0.999999):
        cap = 10**9
        got = np.asarray(randomness.geometric_gaps(jnp.asarray(highs), jnp.asarray(lows), q, cap))
        for h, lo_, g in zip(highs, lows, got):
            bits = (int(h) >> 5) * 2**26 + (int(lo_) >> 6)
            u = (mpmath.mpf(bits) + mpmath.mpf(0.5)) / mpmath.mpf(2) ** 53
            exact = 1 + int(mpmath.floor(mpmath.log(u) / mpmath.log1p(-mpmath.mpf(q))))
            assert g == min(exact, cap), (q, h, lo_, g, exact)


def test_log_of_a_uniform_is_within_3_ulps_of_the_exact_log():
    # the gaps' log (randomness.log_unit: bits, a series and basic arithmetic) against 40-digit
    # mpmath: random uniforms, tiny ones, both sides of the series' switch at sqrt(1/2) and the
    # powers of two near 0 and 1, where the exponent and the series meet
    import mpmath

    mpmath.mp.dps = 40
    rs = np.random.RandomState(1)
    edge = np.sqrt(0.5)
    u = np.concatenate([rs.rand(1500), np.exp(-36 * rs.rand(500)), 2.0 ** -np.arange(1, 54), 1 - 2.0 ** -np.arange(1, 54),
                        [np.nextafter(edge, 0), edge, np.nextafter(edge, 1), 2 ** -53 * 0.5 + 2 ** -54]])
    with jax.enable_x64(True):
        got = np.asarray(jax.jit(randomness.log_unit)(jnp.asarray(u, jnp.float64)))
    exact = np.array([float(mpmath.log(mpmath.mpf(float(v)))) for v in u])  # correctly rounded
    ulps = np.abs(got - exact) / np.spacing(np.abs(exact))
    assert ulps.max() <= 3, (u[ulps.argmax()], ulps.max())
    # outside JAX's 64-bit mode too: float64 bits and result whatever the caller's mode
    half = randomness.log_unit(jnp.asarray(0.5, jnp.float32))
    assert half.dtype == jnp.float64 and float(half) == float(np.log(0.5))


def test_positions_do_not_overflow_int32():
    # capacity x n beyond 2^31: the partial sums are taken in int64 and capped at n
    n = 2**30
    scheme = batching.Poisson(rate=1e-9)
    words = randomness.chain_words(jax.random.key(3))
    part, last = jax.jit(lambda: scheme.chunk(words, 0, n, 0, 8, jnp.int32(-1)))()
    valid = np.asarray(part.weights) > 0
    assert int(last) <= n and np.all(np.asarray(part.indices)[valid] < n)


def test_capacities_are_speed_settings_with_stated_overflow():
    # the first chunk (mean + 1 sd + 1, a multiple of 8) overflows with at most the normal tail at
    # 1 sd (binomial tails stated with 30% slack); one further chunk (2 sd, at least 8) almost
    # always ends the batch
    for n, q in ((10_000, 0.0128), (500, 0.064), (100_000, 0.00128), (455, 0.07)):
        m, extra = poisson_capacity(n, q), poisson_overflow_capacity(n, q)
        assert m % 8 == 0 and extra % 8 == 0
        assert stats.binom.sf(m, n, q) < 1.3 * stats.norm.sf(1.0)
        assert stats.binom.sf(m + extra, n, q) < 1e-3
    assert poisson_capacity(20, 0.9) == 20 and poisson_capacity(1, 1e-9) == 1


def test_overflow_rounds_pick_each_pending_pair_once():
    from dpjax.engine.reference import _first_true

    flags = jnp.asarray([False, True, True, False, True, True, True])
    assert np.asarray(_first_true(flags, 3)).tolist() == [1, 2, 4]
    assert np.asarray(_first_true(flags, 7)).tolist() == [1, 2, 4, 5, 6, 7, 7]
    assert np.asarray(_first_true(jnp.zeros(4, bool), 2)).tolist() == [4, 4]


def test_accelerator_layout_draws_the_same_members(monkeypatch):
    # on a GPU the words come from stacked Philox blocks (a dynamic slice where a chunk starts at
    # an odd word) and the running sums from a log-depth scan (randomness._one_word_per_element is
    # False there); forced here on the CPU, the members must be the CPU layout's
    n, q, steps = 300, 0.2, 4
    cpu = _chunked(q, n, steps, 7, seed=5)
    monkeypatch.setattr(randomness, "_one_word_per_element", lambda: False)
    jax.clear_caches()
    try:
        for capacity in (7, 64):
            assert np.array_equal(_chunked(q, n, steps, capacity, seed=5), cpu)
    finally:
        jax.clear_caches()

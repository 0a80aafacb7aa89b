"""The coupled runner: path privacy loss laws, paper 000's mixture, coupling, layout, errors.

Statistical checks use fixed seeds and 5-sigma bands (sd of a sample variance from the
sample's own fourth moment) or KS / chi-square tests at p > 1e-4 (a significance level).
"""
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import dpjax
from dpjax import samplers
from dpjax.data import Dataset, NeighbouringPair

from _shared import blr_model

P_THRESHOLD = 1e-4


def linear_model(mu, dim):
    """V_D(x) = -sum_i <a_i, x>, K(x) = mu |x|^2 / 2 (NOTES 001's closed-form test case)."""
    return dpjax.Model(lambda th, r: r["a"] @ th, lambda th: -mu / 2 * jnp.sum(th**2), dim=dim, name="linear")


def _check_normal_law(samples, mean, var, label):
    k = samples.size
    m_hat, v_hat = samples.mean(), samples.var(ddof=1)
    mu4 = np.mean((samples - m_hat) ** 4)
    sd_var = np.sqrt((mu4 - v_hat**2 * (k - 3) / (k - 1)) / k)
    assert abs(m_hat - mean) < 5 * np.sqrt(v_hat / k), f"{label}: mean {m_hat} vs {mean}"
    assert abs(v_hat - var) < 5 * sd_var, f"{label}: var {v_hat} vs {var}"
    assert stats.kstest(samples, stats.norm(mean, np.sqrt(var)).cdf).pvalue > P_THRESHOLD, label


@jax.enable_x64(True)
def _linear_pair(n, dim, gap, index, rng_seed=0):
    rng = np.random.default_rng(rng_seed)
    a = rng.normal(size=(n, dim))
    ds = dpjax.make_dataset(a=a)
    return dpjax.replace_one(ds, index, {"a": a[index] - gap})


@pytest.mark.parametrize("adjacency", ["replace-one", "add-remove"])
def test_ula_path_loss_with_constant_drift_gap_is_gaussian_mechanism(adjacency):
    """h = f_D - f_D' = a_D - a_D' is constant with |h| = c: loss after t steps ~ N(M_t, 2 M_t),
    M_t = beta t gamma c^2 / 4 (NOTES 001), beta = 1 / temperature. Add/remove: h = a_index."""
    gamma, temp, K = 0.05, 0.5, 20_000
    gap = np.array([0.6, -0.8])  # c = 1
    if adjacency == "replace-one":
        pair = _linear_pair(4, 2, gap, 1)
    else:
        with jax.enable_x64(True):
            a = np.random.default_rng(0).normal(size=(4, 2))
            a[1] = gap
            pair = dpjax.add_remove(dpjax.make_dataset(a=a), 1)
    res = dpjax.run_coupled(
        0, linear_model(1.3, 2), pair, samplers.ula(gamma, temperature=temp),
        num_pairs=K, num_steps=40, record_steps=[10, 40], progress=False,
    )
    beta, c2 = 1 / temp, 1.0
    for r, t in enumerate(res.steps):
        M = beta * t * gamma * c2 / 4
        _check_normal_law(res.path_loss[r], M, 2 * M, f"ULA path loss at t={t}")


def test_cyclic_path_loss_counts_only_steps_that_use_the_differing_record():
    """Welling–Teh cyclic SGLD, b = 1, fixed order: record 1 sits at position 2 of 4, so it is used
    at steps 2, 6, 10, ...; each use adds Delta = (eta/2) n c with sigma^2 = eta T, i.e.
    |Delta|^2 / (2 sigma^2) = eta n^2 c^2 / (8 T) to M, and the loss is N(M, 2M)."""
    eta, temp, n, K = 0.01, 2.0, 4, 20_000
    gap = np.array([0.0, 1.5])
    pair = _linear_pair(n, 2, gap, 1)
    sampler = samplers.cyclic_sgld(eta, order=np.array([3, 0, 1, 2]), temperature=temp)
    res = dpjax.run_coupled(0, linear_model(1.0, 2), pair, sampler, num_pairs=K, num_steps=11, record_steps=[2, 3, 11], progress=False)
    per_use = eta * n**2 * 1.5**2 / (8 * temp)
    assert np.all(res.path_loss[0] == 0)  # record 1 not used yet
    _check_normal_law(res.path_loss[1], per_use, 2 * per_use, "after one use")
    _check_normal_law(res.path_loss[2], 3 * per_use, 6 * per_use, "after three uses")


def _paper_000_law(x, y, order_with_odd_at, steps, alpha, beta, eta):
    """Brute-force recursion over records used in order: (mean, variance) after `steps`."""
    n = len(x)
    m, v = 0.0, 1 / alpha  # theta_0 ~ prior N(0, 1/alpha)
    for t in range(steps):
        i = order_with_odd_at[t % n]
        a = 1 - eta / 2 * (alpha + n * beta * x[i] ** 2)
        m, v = a * m + eta / 2 * n * beta * x[i] * y[i], a**2 * v + eta
    return m, v


def test_cyclic_sgld_on_paper_000_pair_gives_the_mixture_over_the_odd_records_position():
    """NOTES 000 eq. 7 at n = 5: D = n copies of (x_h, c x_h), D' replaces one by (x_h/2, c x_h/2).
    On D the epoch-end law is one Gaussian; on D' the equal-weight mixture over the odd record's
    position r of the n Gaussians from the recursion."""
    n, alpha, beta, x_h, c, eta, K = 5, 1.0, 1.0, 1.0, 40.0, 0.1, 40_000
    with jax.enable_x64(True):
        ds = dpjax.make_dataset(x=np.full((n, 1), x_h), y=np.full(n, c * x_h))
        pair = dpjax.replace_one(ds, 0, {"x": np.array([x_h / 2]), "y": np.array(c * x_h / 2)})
    res = dpjax.run_coupled(
        5, blr_model(alpha, beta), pair, samplers.cyclic_sgld(eta), num_pairs=K, num_steps=2 * n,
        record_steps=[n, 2 * n], init=lambda key: jax.random.normal(key, (1,)) / np.sqrt(alpha), progress=False,
    )
    xd, yd = np.full(n, x_h), np.full(n, c * x_h)
    xo, yo = xd.copy(), yd.copy()
    xo[0], yo[0] = x_h / 2, c * x_h / 2
    for r, T in enumerate(res.steps):
        m, v = _paper_000_law(xd, yd, np.arange(n), T, alpha, beta, eta)
        _check_normal_law(res.positions[r, :, 0], m, v, f"D at T={T}")
        comps = []
        for pos in range(n):  # order with the odd record (slot 0) at position `pos`
            order = np.array([1, 2, 3, 4])
            order = np.insert(order, pos, 0)
            comps.append(_paper_000_law(xo, yo, order, T, alpha, beta, eta))
        means, sds = np.array([m for m, _ in comps]), np.sqrt([v for _, v in comps])
        mixture_cdf = lambda s: np.mean(stats.norm.cdf((np.asarray(s)[:, None] - means) / sds), axis=1)
        samples = res.neighbour_positions[r, :, 0]
        assert stats.kstest(samples, mixture_cdf).pvalue > P_THRESHOLD
        # power: the moment-matched single Gaussian is rejected
        mix_mean = means.mean()
        mix_var = np.mean(sds**2 + means**2) - mix_mean**2
        assert stats.kstest(samples, stats.norm(mix_mean, np.sqrt(mix_var)).cdf).pvalue < 1e-6
        # the odd record's position is uniform across chains: the mixture weights are equal
        # (component membership read off from the step at which the chains split)
    assert res.num_nonfinite == 0


@jax.enable_x64(True)
def _blr_pair(n=6, index=3):
    rng = np.random.default_rng(2)
    ds = dpjax.make_dataset(x=rng.normal(size=(n, 1)), y=rng.normal(size=n))
    return dpjax.replace_one(ds, index, {"x": np.array([2.0]), "y": np.array(-1.0)})


def test_synchronous_coupling_chains_agree_until_the_differing_record_is_used():
    pair = _blr_pair(index=3)
    order = np.array([5, 0, 3, 1, 2, 4])  # record 3 used at step 2 (0-based)
    res = dpjax.run_coupled(
        0, blr_model(1.0, 1.0), pair, samplers.cyclic_sgld(0.05, order=order), num_pairs=50, num_steps=6,
        record_steps=[0, 1, 2, 3, 6], init=lambda k: jax.random.normal(k, (1,)), progress=False,
    )
    assert np.array_equal(res.positions[:3], res.neighbour_positions[:3])  # shared start, noise, batches
    assert np.all(res.path_loss[:3] == 0)
    assert np.all(res.positions[3] != res.neighbour_positions[3])
    assert len(np.unique(res.positions[0])) == 50  # starts drawn per pair


def test_results_do_not_depend_on_chunking_or_on_how_many_pairs_run():
    pair = _blr_pair()
    sampler = samplers.sgld(0.02, batching="uniform", batch_size=2)
    kwargs = dict(num_steps=70, record_steps=[0, 33, 70], init=np.array([0.5]), progress=False)
    a = dpjax.run_coupled(9, blr_model(1.0, 1.0), pair, sampler, num_pairs=12, chunk_size=1000, **kwargs)
    b = dpjax.run_coupled(9, blr_model(1.0, 1.0), pair, sampler, num_pairs=5, chunk_size=7, **kwargs)
    for field in ("positions", "neighbour_positions", "path_loss"):
        np.testing.assert_array_equal(getattr(a, field)[:, :5], getattr(b, field))


@jax.enable_x64(True)
def test_coupled_d_chain_equals_the_single_chain_kernel():
    pair = _blr_pair()
    model = blr_model(1.0, 1.0)
    sampler = samplers.sgld(0.02, batching="reshuffle", batch_size=4)
    res = dpjax.run_coupled(3, model, pair, sampler, num_pairs=4, num_steps=9, init=np.array([0.2]), progress=False)
    step = jax.jit(lambda k, s: sampler.step(k, s, model, pair.dataset)[0])
    for chain in range(4):
        key = jax.random.fold_in(jax.random.key(3), chain)
        state = sampler.init(jnp.array([0.2]))
        for _ in range(9):
            state = step(key, state)
        np.testing.assert_allclose(res.positions[-1, chain], state.position, rtol=1e-12)


def test_nonfinite_pairs_are_flagged_and_counted():
    pair = _blr_pair()
    # a = 1 - gamma * (alpha + sum x^2) < -1: unstable; from 1e306 the chain overflows in a few steps
    res = dpjax.run_coupled(
        0, blr_model(1.0, 1.0), pair, samplers.ula(3.0), num_pairs=3, num_steps=30,
        init=np.array([[0.0], [1e306], [0.0]]), progress=False,
    )
    assert res.finite.tolist() == [True, False, True] and res.num_nonfinite == 1
    kept = res.finite_only()
    assert kept.positions.shape == (1, 2, 1) and np.all(np.isfinite(kept.positions))
    assert not np.all(np.isfinite(res.positions[:, 1]))


def test_runner_validation_errors():
    model = blr_model(1.0, 1.0)
    pair = _blr_pair()
    ula = samplers.ula(0.1)
    run = lambda **kw: dpjax.run_coupled(0, kw.pop("model", model), kw.pop("pair", pair), kw.pop("sampler", ula), **{"num_pairs": 2, "num_steps": 3, "progress": False, **kw})
    with jax.enable_x64(True):
        two_differences = NeighbouringPair(
            dataset=pair.dataset,
            neighbour=Dataset(fields={"x": pair.neighbour["x"].at[0].set(9.0), "y": pair.neighbour["y"]}, mask=pair.neighbour.mask),
            index=3,
            adjacency="replace-one",
        )
        nan_x = pair.dataset["x"].at[1, 0].set(jnp.nan)
    with pytest.raises(ValueError, match="differ in 2 records"):
        run(pair=two_differences)
    nan_data = NeighbouringPair(
        dataset=Dataset(fields={"x": nan_x, "y": pair.dataset["y"]}, mask=pair.dataset.mask),
        neighbour=pair.neighbour, index=3, adjacency="replace-one",
    )
    with pytest.raises(ValueError, match=r"pair.dataset field 'x' has a non-finite value .*nan.* at index \[1, 0\]"):
        run(pair=nan_data)
    with pytest.raises(ValueError, match=r"batch_size=7 violates batch_size <= n = 6"):
        run(sampler=samplers.sgld(0.1, batching="without-replacement", batch_size=7))
    with pytest.raises(ValueError, match=r"num_pairs=0 violates num_pairs a positive integer"):
        run(num_pairs=0)
    with pytest.raises(ValueError, match=r"record_steps must satisfy 0 <= t <= num_steps = 3"):
        run(record_steps=[4])
    with pytest.raises(ValueError, match=r"init has shape \(2,\); it must be \(1,\)"):
        run(init=np.zeros(2))
    with pytest.raises(TypeError, match="sampler=str must be a dpjax.samplers.LangevinSampler"):
        run(sampler="sgld")
    with pytest.raises(TypeError, match="pair=tuple must be a dpjax.NeighbouringPair"):
        run(pair=(pair.dataset, pair.neighbour))
    with pytest.raises(ValueError, match="dtype=int32 must be float64 or float32"):
        run(dtype=jnp.int32)


@pytest.mark.slow  # a fresh interpreter with paper 000's n (~20 s on a loaded 2-core machine)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak from /proc/self/status")
def test_paper_000_scale_runs_without_pairs_by_records_tables():
    """n = 1,149,019 records and 4,096 pairs of cyclic SGLD: materialised orders would take
    4096 * 1149019 * 4 bytes = 18.8 GB (4.7 GB even at one byte per entry); the keyed orders
    need O(K + n). The process peaks at ~0.8 GB on this machine, so the check is below the
    smallest K x n table. The peak is the child's own VmHWM: its ru_maxrss would not do, since
    Linux carries the parent's high-water mark across fork and exec (CI once read the pytest
    worker's 4.3 GB there)."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import dpjax
        from dpjax import samplers
        from dpjax.bench.coupled import _problem
        model, pair, x, y, eta = _problem(1_149_019)
        r = dpjax.run_coupled(0, model, pair, samplers.cyclic_sgld(eta), num_pairs=4096, num_steps=64, progress=False)
        hwm = [line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")][0]
        print(hwm, r.num_nonfinite)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True, timeout=600)
    peak_kb, nonfinite = map(int, out.stdout.split()[-2:])
    assert nonfinite == 0
    assert peak_kb < 4 * 1024 * 1024, f"peak RSS {peak_kb / 1024:.0f} MB"

"""The PLD accountant (issue 13) against independent values.

* dp_accounting 0.6's PLD accountant (pessimistic connect-the-dots, optimistic privacy buckets)
  at seeded random configurations, same grid interval;
* the exact Gaussian formula for T plain Gaussian compositions (= one Gaussian with sigma/sqrt(T));
* mpmath quadrature of the hockey-stick divergence of one subsampled Gaussian step;
* dp_accounting's RDP accountant for sampling without replacement (a sound, looser bound);
* soundness over >= 1000 random configurations: optimistic <= pessimistic <= RDP (+ the gap);
* the FFT round-off bound against an exact (integer-arithmetic-free, float128-free) convolution.

Tolerances: the pessimistic PLD differs from the exact curve of the dominating pair by the
discretisation only, which the optimistic companion brackets; dp_accounting computes the
same construction at the same interval, so the two agree up to (a) dpjax's rigorous FFT
round-off term added to delta (<= 1e-9 here, dp_accounting adds none) and (b) tail
truncation (1e-15 in both): at delta = 1e-5, where |d delta / d eps| >= 1e-5 for these
configurations, (a) moves eps by <= 1e-4; we allow 2e-4 absolute.
"""
from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpjax.accountants import (
    PrivacyCurve,
    noisy_sgd_curve,
    pld_curve,
    pld_epsilons,
    pld_sequence_curve,
    rdp_to_epsilon,
    subsampled_gaussian_rdp,
)
from dpjax.accountants.composition import pld as pld_module
from dpjax.accountants.mechanisms.gaussian_divergence import analytic_gaussian_epsilon
from dpjax.accountants.composition.rdp import DEFAULT_ORDERS

dp_accounting = pytest.importorskip("dp_accounting")
from dp_accounting.pld import privacy_loss_distribution as dpa_pld  # noqa: E402

DELTA = 1e-5


def _dpa_epsilon(sigma, q, steps, pessimistic, h=1e-4, relation=None):
    kwargs = {} if relation is None else {"neighboring_relation": relation}
    pld = dpa_pld.from_gaussian_mechanism(
        sigma, sampling_prob=q, pessimistic_estimate=pessimistic, use_connect_dots=pessimistic,
        value_discretization_interval=h, **kwargs)
    return pld.self_compose(steps).get_epsilon_for_delta(DELTA)


# --- dp_accounting ---------------------------------------------------------------------------------
RNG = np.random.default_rng(2024)
RANDOM_CONFIGS = list(zip(RNG.uniform(1.0, 3.0, 3), 10 ** RNG.uniform(-3, -1.3, 3), RNG.integers(1, 60, 3)))


def test_matches_dp_accounting_at_random_configurations():
    sigma, q, steps = (np.array(v) for v in zip(*RANDOM_CONFIGS))
    res = pld_epsilons(sigma, q, steps, DELTA)
    pess, opt = res.epsilon, res.optimistic_epsilon
    for i, (s, r, t) in enumerate(RANDOM_CONFIGS):
        ref_pess = _dpa_epsilon(float(s), float(r), int(t), True)
        ref_opt = _dpa_epsilon(float(s), float(r), int(t), False)
        assert pess[i] == pytest.approx(ref_pess, abs=2e-4), (s, r, t)
        assert opt[i] == pytest.approx(ref_opt, abs=2e-4), (s, r, t)
        assert opt[i] <= pess[i]


def test_dp_accounting_basic_example_laplace_then_gaussian():
    """dp_accounting's privacy_loss_distribution_basic_example: 40 Laplace(b=3) steps, then one
    Gaussian (sigma=5), grid 1e-3: delta at eps = 10, before and after the Gaussian (curves of
    two mechanisms composed by FFT)."""
    h = 1e-3
    lap = pld_curve(3.0, 1.0, 40, mechanism="laplace", value_discretization_interval=h)
    both = lap.compose(pld_curve(5.0, 1.0, 1, value_discretization_interval=h))
    ref_lap = dpa_pld.from_laplace_mechanism(3.0, value_discretization_interval=h).self_compose(40)
    ref_both = ref_lap.compose(dpa_pld.from_gaussian_mechanism(5.0, value_discretization_interval=h))
    for ours, ref in ((lap, ref_lap), (both, ref_both)):
        d_ref = ref.get_delta_for_epsilon(10.0)
        lo, hi = ours.pld.delta_bracket(10.0)
        # same pessimistic rounding of the Laplace PLD (privacy buckets; its losses are atoms at
        # the ends, so connect-the-dots changes little); round-off and truncation differ by < 1e-9
        assert hi == pytest.approx(d_ref, rel=1e-3, abs=1e-9)
        assert lo <= d_ref * (1 + 1e-6) + 1e-12


def test_replace_one_poisson_matches_dp_accounting():
    # dpjax's noise multiplier is relative to the replace-one sensitivity 2C, dp_accounting's
    # standard deviation to C: sigma_dpjax = sigma_dpa / 2.
    pess = pld_curve(1.5 / 2, 0.02, 20, adjacency="replace-one").epsilon(DELTA)
    ref = _dpa_epsilon(1.5, 0.02, 20, True, relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    assert pess == pytest.approx(ref, abs=2e-4)


def test_sequence_matches_dp_accounting_heterogeneous_composition():
    sig, qs, ts = [1.2, 2.0], [0.01, 0.05], [20, 5]
    curve = pld_sequence_curve(sig, qs, ts)
    acc = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    for s, r, t in zip(sig, qs, ts):
        acc.compose(dp_accounting.PoissonSampledDpEvent(r, dp_accounting.GaussianDpEvent(s)), t)
    assert curve.epsilon(DELTA) == pytest.approx(acc.get_epsilon(DELTA), abs=2e-4)
    # composing the two stages' curves by FFT gives the same bracket
    composed = pld_curve(sig[0], qs[0], ts[0]).compose(pld_curve(sig[1], qs[1], ts[1]))
    lo, hi = composed.pld.epsilon_bracket(DELTA)
    lo2, hi2 = curve.pld.epsilon_bracket(DELTA)
    assert hi == pytest.approx(hi2, abs=2e-4) and lo == pytest.approx(lo2, abs=2e-4)


# --- closed forms and quadrature ---------------------------------------------------------------------
def _gaussian_delta(mu, eps):
    return stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)


@pytest.mark.parametrize("sigma,steps", [(2.0, 1), (1.0, 7), (5.0, 400)])
def test_plain_gaussian_composition_is_bracketed_by_the_exact_formula(sigma, steps):
    """T Gaussian steps of noise multiplier sigma = one Gaussian with sigma / sqrt(T) (exact);
    the analytic eps (Balle & Wang 2018) is exact to ~1e-12 (root finding)."""
    curve = pld_curve(sigma, 1.0, steps)
    mu = math.sqrt(steps) / sigma
    exact = analytic_gaussian_epsilon(mu, DELTA)
    lo, hi = curve.pld.epsilon_bracket(DELTA)
    assert lo - 1e-9 <= exact <= hi + 1e-9
    # the stated error (the gap): each side moves every loss by at most one grid step, so the
    # composed losses by at most T h each: the gap in eps is at most 2 T h
    assert hi - lo <= 2 * steps * 1e-4 + 1e-9
    for eps in (0.0, 0.5 * exact, exact):
        d_lo, d_hi = curve.pld.delta_bracket(eps)
        assert d_lo - 1e-12 <= _gaussian_delta(mu, eps) <= d_hi + 1e-12


def _mp_hockey_stick(sigma, q, eps, direction):
    """delta(eps) of one Poisson-subsampled Gaussian step by mpmath quadrature (30 digits):
    the integral of (p - e^eps q)_+ over the half-line where it is positive, which starts at the
    closed-form root x* = s^2 log((e^{+-eps} - (1-q)) / q) + 1/2 of p = e^eps q."""
    mpmath.mp.dps = 30
    s, q, e = mpmath.mpf(sigma), mpmath.mpf(q), mpmath.mpf(eps)

    def phi(x, m):
        return mpmath.exp(-((x - m) ** 2) / (2 * s**2)) / (s * mpmath.sqrt(2 * mpmath.pi))

    def mix(x):
        return (1 - q) * phi(x, 0) + q * phi(x, 1)

    if direction == "remove":  # p = mix, q = N(0): positive above the root
        root = s**2 * mpmath.log((mpmath.exp(e) - (1 - q)) / q) + mpmath.mpf(1) / 2
        return float(mpmath.quad(lambda x: mix(x) - mpmath.exp(e) * phi(x, 0), [root, root + 40 * s, mpmath.inf]))
    if mpmath.exp(-e) <= 1 - q:  # p = N(0), q = mix: p <= e^eps q everywhere
        return 0.0
    root = s**2 * mpmath.log((mpmath.exp(-e) - (1 - q)) / q) + mpmath.mpf(1) / 2
    return float(mpmath.quad(lambda x: phi(x, 0) - mpmath.exp(e) * mix(x), [-mpmath.inf, root - 40 * s, root]))


@pytest.mark.parametrize("sigma,q,eps", [(1.0, 0.1, 0.05), (0.8, 0.3, 0.5)])
def test_single_step_matches_mpmath_quadrature(sigma, q, eps):
    curve = pld_curve(sigma, q, 1)
    d_lo, d_hi = curve.pld.delta_bracket(eps)
    truth = max(_mp_hockey_stick(sigma, q, eps, "remove"), _mp_hockey_stick(sigma, q, eps, "add"))
    assert d_lo <= truth * (1 + 1e-9) and truth <= d_hi * (1 + 1e-9)
    # one step of connect-the-dots is off by O(h^2) relative to the slope: 1e-6 relative here
    assert d_hi == pytest.approx(truth, rel=1e-6, abs=1e-12)


def test_laplace_single_step_closed_form():
    """Lap(0, b) vs Lap(1, b): delta(eps) = 1 - exp((eps - 1/b) / 2) for 0 <= eps <= 1/b."""
    b = 2.0
    curve = pld_curve(b, 1.0, 1, mechanism="laplace")
    for eps in (0.0, 0.1, 0.3):
        lo, hi = curve.pld.delta_bracket(eps)
        exact = 1 - math.exp((eps - 1 / b) / 2)
        assert lo - 1e-12 <= exact <= hi + 1e-12
        assert hi - exact <= 1e-4  # one cell: h = 1e-4


# --- sampling without replacement -------------------------------------------------------------------
def test_without_replacement_is_bracketed_and_below_the_rdp_bound():
    sigma, q, steps = 1.2, 0.02, 50  # sigma relative to the replace-one sensitivity
    curve = pld_curve(sigma, q, steps, adjacency="replace-one", sampling="without-replacement")
    lo, hi = curve.pld.epsilon_bracket(DELTA)
    assert lo <= hi
    acc = dp_accounting.rdp.RdpAccountant(list(DEFAULT_ORDERS), dp_accounting.NeighboringRelation.REPLACE_ONE)
    # dp_accounting's RDP for sampling without replacement takes the noise relative to the
    # replace-one sensitivity as well (Wang, Balle & Kasiviswanathan 2019)
    acc.compose(dp_accounting.SampledWithoutReplacementDpEvent(1000, 20, dp_accounting.GaussianDpEvent(sigma)), steps)
    assert hi <= acc.get_epsilon(DELTA) + (hi - lo)
    # each direction alone is dominated by the symmetrised pair: the pessimistic value is >= both
    remove_add = pld_curve(sigma, q, steps, adjacency="add-remove")
    assert hi >= remove_add.optimistic().epsilon(DELTA) - 1e-9


# --- soundness over many configurations --------------------------------------------------------------
@settings(max_examples=2, deadline=None, derandomize=True)
@given(st.integers(0, 2**31 - 1))
def test_soundness_over_a_thousand_random_configurations(seed):
    """500 configurations per example (2 examples): optimistic <= pessimistic <= RDP + gap.
    A coarse grid (h = 1e-2) keeps it cheap: the claim holds at any grid, with its gap."""
    rng = np.random.default_rng(seed)
    m = 500
    sigma = rng.uniform(1.5, 6.0, m)
    q = 10 ** rng.uniform(-3, -0.7, m)
    steps = rng.integers(1, 25, m)
    res = pld_epsilons(sigma, q, steps, DELTA, value_discretization_interval=1e-2)
    pess, opt = res.epsilon, res.optimistic_epsilon
    rdp = rdp_to_epsilon(DEFAULT_ORDERS, subsampled_gaussian_rdp(q[:, None], sigma[:, None], DEFAULT_ORDERS) * steps[:, None], DELTA)
    assert np.all(np.isfinite(pess)) and np.all(opt <= pess + 1e-12)
    assert np.all(pess <= rdp + (pess - opt) + 1e-9)


# --- FFT round-off bound ------------------------------------------------------------------------------
@pytest.mark.parametrize("library", ["numpy", "jax"])
def test_roundoff_bound_covers_the_actual_fft_error(library):
    """Self-composition of a random PMF by FFT vs repeated direct convolution (exact to a few
    ulps per entry, far below the bound): the l1 error is below the stated bound R, for XLA's
    FFT (the jitted engine) and numpy's (small jobs, pld_numpy) alike."""
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    p = rng.random(40) ** 4
    p /= p.sum()
    steps = 6
    exact = np.array([1.0])
    for _ in range(steps):  # direct summation: each entry exact to a few ulps
        exact = np.convolve(exact, p)
    with jax.enable_x64(True):
        xp = np if library == "numpy" else jnp
        n = 256
        out, inf, tau_up, tau_lo, roundoff = pld_module._compose_one(
            n, 1e-2, xp.asarray(p[None, :]), xp.zeros(1), xp.zeros(1, np.int64), xp.full(1, float(steps)), xp.full(1, p.size - 1), 0,
            xp.ones(1), xp.ones(1), xp.ones(1))
        assert isinstance(out, np.ndarray) == (library == "numpy")
    err = np.sum(np.abs(np.asarray(out)[: exact.size] - exact)) + np.sum(np.abs(np.asarray(out)[exact.size:]))
    assert float(tau_up) == 0.0 and float(tau_lo) == 0.0  # the window holds the whole support
    assert err <= float(roundoff)
    assert float(roundoff) < 1e-11  # and it is small


# --- integration ----------------------------------------------------------------------------------------
def test_noisy_sgd_curve_takes_either_accountant():
    rdp = noisy_sgd_curve(1.1, 0.01, 200)
    pld = noisy_sgd_curve(1.1, 0.01, 200, accountant="pld")
    assert isinstance(pld, PrivacyCurve) and pld.has_pld
    assert pld.epsilon(DELTA) < rdp.epsilon(DELTA)
    assert pld.epsilon(DELTA) == pytest.approx(pld_curve(1.1, 0.01, 200, adjacency="add-remove").epsilon(DELTA), rel=1e-12)
    assert "PLD accountant" in pld.summary()
    with pytest.raises(ValueError, match="accountant"):
        noisy_sgd_curve(1.0, 0.1, 10, accountant="prv")


def test_audit_accepts_pld_bounds():
    """ULA on the Gaussian-mean model: each step is a Gaussian mechanism of noise multiplier
    sqrt(2 gamma) / (gamma |x_0 - x_0'|); the PLD bound of the path must sit above the exact
    last-iterate value and not be flagged."""
    import dpjax
    from dpjax import samplers
    from dpjax.audit import audit
    from dpjax.models.gaussian_mean import gaussian_mean, gaussian_mean_dataset

    n, gamma, gap = 20, 0.02, 2.0
    x = np.linspace(-1.0, 1.0, n)
    pair = dpjax.replace_one(gaussian_mean_dataset(x), 0, {"x": np.array([x[0] + gap])})
    model = gaussian_mean(dim=1, prior_precision=1.0, inverse_temperature=1.0)
    sigma = math.sqrt(2 * gamma) / (gamma * gap)
    report = audit(model, pair, samplers.ula(gamma), num_pairs=2000, num_steps=10, record_steps=[10], delta=1e-2,
                   bounds={"pld": lambda t: pld_curve(sigma, 1.0, t, adjacency="replace-one")}, seed=1)
    assert report.ok
    rows = report.table.set_index(["quantity", "kind"])["epsilon"]
    assert rows[("pld", "bound")] >= rows[("last iterate", "lower bound")]


# --- bad input ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs,match", [
    (dict(sampling_rate=0.0), "sampling_rate"),
    (dict(sampling_rate=1.5), "sampling_rate"),
    (dict(steps=0), "steps"),
    (dict(noise_multiplier=-1.0), "noise_multiplier"),
    (dict(adjacency="swap"), "adjacency"),
    (dict(sampling="shuffle"), "sampling"),
    (dict(sampling="without-replacement"), "no sound dominating pair"),
    (dict(mechanism="laplace", adjacency="replace-one"), "no dominating pair"),
    (dict(epsilon_tolerance=1e-5), "too coarse"),
    (dict(value_discretization_interval=0.0), "value_discretization_interval"),
])
def test_bad_input_is_rejected_with_a_clear_error(kwargs, match):
    args = dict(noise_multiplier=1.0, sampling_rate=0.01, steps=10)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        pld_curve(args.pop("noise_multiplier"), args.pop("sampling_rate"), args.pop("steps"), **args)


def test_bad_delta_and_unmet_tolerance():
    curve = pld_curve(1.0, 0.01, 10)
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="delta"):
            curve.epsilon(bad)
    with pytest.raises(ValueError, match="epsilon >= 0"):
        curve.delta(-0.1)
    # a grid of 0.05 cannot resolve 100 steps to within 0.01: the measured gap says so
    with pytest.raises(ValueError, match="too coarse for the requested accuracy"):
        pld_curve(1.0, 0.05, 100, value_discretization_interval=0.005, epsilon_tolerance=0.01)


def test_chunk_budget_changes_no_number(monkeypatch, jax_engine):
    """An accelerator takes the work in far larger calls than a CPU (fewer launches); how the
    configurations are cut into calls must not change any eps, either side of the bracket.
    Equal to the bit where only the cut differs; where the compiled code differs (a batch of one
    block per call is vectorised otherwise: one-step masses differ by an ulp; the accelerator's
    eps query sums by associative scans instead of sequential ones) equal up to rounding, which
    eps at delta = 1e-5 amplifies by about 1/delta'(eps) (1e-10 relative seen, far below the
    bracket's stated round-off)."""
    import dataclasses

    from dpjax.accountants.composition import pld_accountant

    rs = np.random.default_rng(3)
    sigma, q = rs.uniform(0.8, 3.0, 12), 10 ** rs.uniform(-3, -1, 12)
    steps = np.round(10 ** rs.uniform(0, 3, 12)).astype(int)
    tiny = pld_accountant.ChunkBudget(elements=2**12, compose_elements=2**12, blocks_per_call=1, max_configurations=2)
    runs = {}
    for name, budget in (("cpu", pld_accountant.CPU_BUDGET), ("tiny", tiny),
                         ("accelerator", pld_accountant.ACCELERATOR_BUDGET),
                         ("accelerator-sequential", dataclasses.replace(pld_accountant.ACCELERATOR_BUDGET, parallel_scans=False))):
        monkeypatch.setattr(pld_accountant, "chunk_budget", lambda b=budget: b)
        runs[name] = pld_accountant.pld_epsilons(sigma, q, steps, 1e-5, value_discretization_interval=1e-3)
    for side in ("epsilon", "optimistic_epsilon"):
        cpu = getattr(runs["cpu"], side)
        np.testing.assert_array_equal(cpu, getattr(runs["accelerator-sequential"], side))
        np.testing.assert_allclose(getattr(runs["tiny"], side), cpu, rtol=1e-9, atol=0)
        np.testing.assert_allclose(getattr(runs["accelerator"], side), cpu, rtol=1e-9, atol=0)


def test_both_sides_share_one_compiled_composition(jax_engine):
    """The pessimistic and optimistic sides of an eps query whose windows have the same FFT
    length (and chunk) run one compiled composition: the side is a traced flag, not a static
    argument (each program costs seconds of XLA compilation on a CPU)."""
    from dpjax.accountants.composition import pld_accountant

    before = pld_accountant._compose_batch._cache_size()
    res = pld_accountant._run("gaussian_remove", np.array([[1.37]]), np.array([[0.0123]]), np.array([[77]]), 1.3e-3, 1e-15,
                              deltas=np.array([1e-5]), keep=False)
    assert np.all(np.isfinite(res["eps_pess"])) and np.all(res["eps_opt"] <= res["eps_pess"])
    assert pld_accountant._compose_batch._cache_size() - before <= 1


def test_a_kept_curve_compiles_one_discretisation_and_one_composition(jax_engine):
    """A kept curve at add/remove adjacency with Poisson sampling brackets two pairs (remove and
    add), each by a pessimistic side (bounded through tilted compositions) and an optimistic one:
    four compositions and two discretisations of one FFT length here, compiled as one program
    each. The add pair is the remove pair mirrored (a traced flag, ``pld_pairs.mirrored_tails``),
    and the tilts sit in a conditional that only the pessimistic side takes. Each program costs
    0.3-0.8 s of XLA compilation on a 2-core CPU: the cold breast-cancer audit compiled six."""
    from dpjax.accountants.composition import pld_accountant

    for fn in (pld_accountant._blocks_batch, pld_accountant._compose_batch):
        fn.clear_cache()
    curve = pld_curve(1.0, 0.05, 25)
    assert pld_accountant._blocks_batch._cache_size() == 1
    assert pld_accountant._compose_batch._cache_size() == 1
    low, high = curve.pld.epsilon_bracket(1e-3)
    assert np.all(np.isfinite(high)) and np.all(low <= high) and np.all(high - low < 0.01)


def test_new_values_of_the_same_shape_compile_nothing_new(jax_engine):
    """The device arrays of the accountant have shapes that depend on the batch only through
    buckets: two batches whose grids differ by a few blocks (37 against 36 blocks of one
    direction here) reuse every compiled discretisation and assembly; so does a new grid
    interval (1% coarser) of the same batch, and its Chernoff sums and compositions too."""
    from dpjax.accountants.composition import pld_accountant

    q, steps = np.full(4, 0.01), np.full(4, 50)
    compiled = (pld_accountant._blocks_batch, pld_accountant._assemble_rows)
    pld_accountant.pld_epsilons(np.array([1.0, 1.1, 1.2, 1.3]), q, steps, 1e-5, value_discretization_interval=2e-4)
    before = [f._cache_size() for f in compiled]
    eps = pld_accountant.pld_epsilons(np.array([1.0, 1.1, 1.2, 1.3]) * 1.01, q, steps, 1e-5, value_discretization_interval=2e-4).epsilon
    assert [f._cache_size() for f in compiled] == before
    assert np.all(np.isfinite(eps))
    # the grid interval is a traced value, not a static one: a new interval whose grids fall in
    # the same buckets reuses every compiled program of the run (a calibration probes several)
    compiled = compiled + (pld_accountant._chernoff_batch_step, pld_accountant._compose_batch)
    before = [f._cache_size() for f in compiled]
    eps_h = pld_accountant.pld_epsilons(np.array([1.0, 1.1, 1.2, 1.3]), q, steps, 1e-5, value_discretization_interval=2e-4 * 1.01).epsilon
    assert [f._cache_size() for f in compiled] == before
    assert np.all(np.isfinite(eps_h))

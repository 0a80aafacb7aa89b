"""Last-iterate accountants (issue 22): every bound against an independent reference.

References: dpjax's exact ULA law (closed form, :func:`dpjax.accountants.exact.ula_law`); direct
O(T) sums of the Gaussian laws on a quadratic; the tight hockey-stick between a Gaussian and
the exact mixture over batch orders / Poisson subsets (:mod:`dpjax.accountants.mixture`); a
generic QP solver (scipy) for the optimal shift schedule; the closed forms in the shifted
interpolation authors' scripts (github.com/jinhobok/shifted_interpolation_dp).
"""
import itertools
import math

import numpy as np
import pytest
from scipy import optimize, special

from dpjax.accountants import ConstantsUnavailable, last_iterate_curve, last_iterate_gdp_mu
from dpjax.accountants import analytic_gaussian_epsilon, noisy_sgd_curve, pld_curve
from dpjax.accountants.mechanisms import mixture
from dpjax.accountants.samplers import exact
from dpjax.accountants.samplers import last_iterate as li
from dpjax.accountants.samplers import shifted_interpolation as si


def _si_mu(eta, sigma, T, n, delta_g, big, small=0.0, **kw):
    return float(last_iterate_gdp_mu(eta, sigma, T, dataset_size=n, gradient_sensitivity=delta_g, smoothness=big,
                                     strong_convexity=small, **kw).shifted_interpolation)


def _exact_ula_mu(eta, sigma, T, n, delta_g, h):
    """mu of the exact last-iterate laws by dpjax.accountants.exact.ula_law: full-batch noisy GD on
    F = h theta^2/2 - a theta is ULA (Euler) with gamma = eta and temperature eta sigma^2 / 2."""
    temp = eta * sigma**2 / 2.0
    m1, c1 = exact.ula_law(h, 0.0, eta, [T], temperature=temp)
    m2, _ = exact.ula_law(h, delta_g / n, eta, [T], temperature=temp)
    return abs(float(m1[0, 0] - m2[0, 0])) / math.sqrt(float(c1[0, 0, 0]))


# --- tightness: full batch, strongly convex quadratic ------------------------------------------
@pytest.mark.parametrize("eta,h,T,n,sigma", [
    (0.1, 1.0, 50, 100, 2.0), (0.01, 0.5, 1000, 10, 0.7), (0.3, 3.0, 7, 1000, 1.0),  # eta h = 0.9
    (1e-4, 1e-3, 10**6, 100, 1.0), (0.5, 1e-9, 1000, 50, 0.1), (1.0, 0.5, 30, 20, 1.0),  # m -> 0; eta h = 1/2
])
def test_shifted_interpolation_is_exact_for_full_batch_quadratics(eta, h, T, n, sigma):
    mu = _si_mu(eta, sigma, T, n, 2.0, h, h)
    ref = _exact_ula_mu(eta, sigma, T, n, 2.0, h)
    # and Bok, Su & Altschuler's closed form (unit one-step mu) from the authors' plot_table_ngd_fdp.py
    c = abs(1.0 - eta * h)
    closed = 2.0 / (n * sigma) * math.sqrt((1 - c**T) / (1 + c**T) * (1 + c) / (1 - c))
    assert mu == pytest.approx(ref, rel=1e-6)
    assert mu == pytest.approx(closed, rel=1e-6)


def test_one_step_is_the_gaussian_mechanism_for_every_method():
    for batching, b in (("full", None), ("cyclic", 5), ("shuffled", 5), ("poisson", 5)):
        mus = last_iterate_gdp_mu(0.1, 2.0, 1, dataset_size=20, gradient_sensitivity=3.0, smoothness=1.0,
                                  strong_convexity=0.5, diameter=4.0, batching=batching, batch_size=b)
        one_use = 3.0 / ((20 if b is None else b) * 2.0)
        assert float(mus.shifted_interpolation) == pytest.approx(one_use, rel=1e-12)
        if mus.composition is not None:
            assert float(mus.composition) == pytest.approx(one_use, rel=1e-12)
        curve = last_iterate_curve(0.1, 2.0, 1, dataset_size=20, gradient_sensitivity=3.0, smoothness=1.0,
                                   strong_convexity=0.5, batching=batching, batch_size=b)
        tight = analytic_gaussian_epsilon(one_use, 1e-5)
        if batching == "poisson":  # composition is the subsampled Gaussian mechanism: amplified below it
            assert float(curve.epsilon(1e-5)) < tight
            continue
        if batching == "shuffled":  # the first batch holds the record with probability b / n = 1/4:
            # delta(eps) <= delta_mu(eps) / 4 by joint convexity, so eps(1e-5) = the Gaussian's eps(4e-5)
            amplified = analytic_gaussian_epsilon(one_use, 4e-5)
            assert amplified <= float(curve.epsilon(1e-5)) <= amplified * 1.006 + 1e-4
            continue
        # the curve holds mu and converts by the closed form: the tight value (to the last bits of
        # the two bisections)
        assert float(curve.epsilon(1e-5)) == pytest.approx(tight, rel=1e-12)


def test_no_free_lunch_without_curvature_or_diameter():
    """m = 0, K = R^d, full batch: nothing beats composition, and the linear loss attains it."""
    for T in (1, 10, 1000, 10**6):
        mus = last_iterate_gdp_mu(0.2, 1.5, T, dataset_size=50, gradient_sensitivity=1.0, smoothness=0.0)
        assert float(mus.shifted_interpolation) == pytest.approx(float(mus.composition), rel=1e-9)
        linear = si.exact_quadratic_mu(0.2, 1.5, T, dataset_size=50, gradient_sensitivity=1.0, curvature=0.0) if T <= 10**5 else None
        if linear is not None:
            assert linear == pytest.approx(float(mus.composition), rel=1e-9)
        auto = last_iterate_curve(0.2, 1.5, T, dataset_size=50, gradient_sensitivity=1.0, smoothness=0.0)
        comp = last_iterate_curve(0.2, 1.5, T, dataset_size=50, gradient_sensitivity=1.0, smoothness=0.0, method="composition")
        assert float(auto.epsilon(1e-6)) == pytest.approx(float(comp.epsilon(1e-6)), rel=1e-12)


# --- validity against exact laws ---------------------------------------------------------------
GRID = [(eta, h, T) for eta in (0.05, 0.4) for h in (0.0, 1e-6, 0.3, 2.0, 4.5) for T in (1, 3, 40, 2000) if eta * h <= 2]


@pytest.mark.parametrize("eta,h,T", GRID)
def test_full_batch_bound_never_below_the_exact_law(eta, h, T):
    mu = _si_mu(eta, 1.3, T, 25, 2.0, h, h)
    assert mu >= si.exact_quadratic_mu(eta, 1.3, T, dataset_size=25, gradient_sensitivity=2.0, curvature=h) * (1 - 1e-12)


@pytest.mark.parametrize("eta,h,low,high,sigma,n,T", [
    (0.1, 1.0, 0.5, 2.0, 1.0, 10, 100), (0.01, 0.3, 0.0, 1.0, 3.0, 1000, 10**6), (1.0, 1.0, 0.9, 1.9, 0.5, 5, 1000),
    (0.05, 1e-7, 0.0, 1e-6, 1.0, 100, 10**6), (0.2, 2.0, 1.0, 9.9, 2.0, 50, 37),
])
def test_bounds_never_below_the_exact_law_with_loose_constants(eta, h, low, high, sigma, n, T):
    """Declared curvature bounds m <= h <= M (the theorem needs only these) still bound the exact law."""
    mu = _si_mu(eta, sigma, T, n, 2.0, high, low)
    assert mu >= si.exact_quadratic_mu(eta, sigma, T, dataset_size=n, gradient_sensitivity=2.0, curvature=h) * (1 - 1e-12)


@pytest.mark.parametrize("n,b,T,eta,h", [(6, 2, 1, 0.2, 1.0), (6, 2, 17, 0.2, 1.0), (7, 3, 40, 0.1, 0.5), (5, 1, 31, 0.3, 0.0),
                                          (12, 4, 300, 0.05, 2.0), (9, 2, 200, 0.5, 3.9), (10, 3, 10**5, 0.01, 1e-3)])
def test_cyclic_bound_never_below_the_exact_law_at_any_position(n, b, T, eta, h):
    mu = _si_mu(eta, 0.8, T, n, 1.0, max(h, 1e-300), h, batching="cyclic", batch_size=b)
    period = -(-n // b)
    # the record's block has b records, except a shorter last block (normalised by its own size)
    worst = max(si.exact_quadratic_mu(eta, 0.8, T, dataset_size=n, gradient_sensitivity=1.0, curvature=h, batching="cyclic",
                                      batch_size=b, position=p) * (b / (n - (period - 1) * b) if p == period - 1 else 1.0)
                for p in range(period))
    assert mu >= worst * (1 - 1e-12)
    # the worst position is the last one (post-processing argument): the bound is attained there
    # for the record used in one step per epoch only when T < one epoch; otherwise it is above


def _shuffled_exact_laws(n, E, c, extra=0):
    """b = 1, a fresh uniform order each epoch, E full epochs then ``extra`` steps: D gives
    N(0, v), D' the equal-weight mixture over the record's positions (n^(E+1) combinations) of
    N(sum over its uses of c^(steps after), v); in the partial epoch it is used if its position
    is < extra."""
    T = n * E + extra
    v = float(np.sum(c ** (2 * np.arange(T))))
    epochs = E + (1 if extra else 0)
    means = []
    for combo in itertools.product(range(n), repeat=epochs):
        uses = [e * n + p for e, p in enumerate(combo) if e * n + p < T]
        means.append(sum(c ** (T - 1 - t) for t in uses))
    return math.sqrt(v), mixture.equal_weight_mixture(np.array(means), math.sqrt(v))


def _shuffled_exact_epsilon(n, E, c, delta, extra=0):
    sd, mix = _shuffled_exact_laws(n, E, c, extra)
    return mixture.mixture_epsilon(sd, mix, delta)


@pytest.mark.parametrize("n,E,c", [(3, 2, 0.7), (4, 3, 0.9), (3, 4, 0.5), (6, 2, 0.3), (5, 2, 0.05)])
def test_shuffled_bound_never_below_the_exact_mixture(n, E, c):
    eta, sigma = 1.0, 1.0  # units: one use moves the mean by 1 against unit noise
    mus = last_iterate_gdp_mu(eta, sigma, n * E, dataset_size=n, gradient_sensitivity=1.0, smoothness=1 - c,
                              strong_convexity=1 - c, batching="shuffled", batch_size=1)
    curve = last_iterate_curve(eta, sigma, n * E, dataset_size=n, gradient_sensitivity=1.0, smoothness=1 - c, strong_convexity=1 - c,
                               batching="shuffled", batch_size=1, method="shifted-interpolation")
    for delta in (1e-2, 1e-5):
        exact_eps = _shuffled_exact_epsilon(n, E, c, delta)
        worst = float(li.gdp_epsilon(mus.shifted_interpolation, delta))
        averaged = float(curve.epsilon(delta))  # the position mixture of the last epoch
        assert worst >= exact_eps - 1e-9 and averaged >= exact_eps - 1e-9
        assert averaged <= worst + 1e-12


def test_poisson_bound_never_below_the_exact_mixture():
    """Poisson batches (q = 0.3), T = 8: D' is the mixture over the 2^T inclusion patterns."""
    T, q, c = 8, 0.3, 0.8
    v = float(np.sum(c ** (2 * np.arange(T))))
    means, logw = [], []
    for pattern in itertools.product((0, 1), repeat=T):
        k = sum(pattern)
        means.append(sum(c ** (T - 1 - t) for t in range(T) if pattern[t]))
        logw.append(k * math.log(q) + (T - k) * math.log1p(-q))
    mix = mixture.GaussianMixture1D(np.array(means), np.full(len(means), math.sqrt(v)), np.array(logw))
    curve = last_iterate_curve(1.0, 1.0, T, dataset_size=10, gradient_sensitivity=3.0, smoothness=1 - c, strong_convexity=1 - c,
                               batching="poisson", batch_size=3)
    for delta in (1e-2, 1e-5):
        assert float(curve.epsilon(delta)) >= mixture.mixture_epsilon(math.sqrt(v), mix, delta) - 1e-9


# --- the optimised schedule against a generic QP solver ----------------------------------------
def _qp_cost(c, shifts, debt):
    """min sum a^2 over a >= 0 with z_{t+1} = c z_t + s_t - a_t >= 0, z_0 = debt, z_T = 0 (scipy)."""
    T = len(shifts)
    A = np.zeros((T, T))
    rhs = np.zeros(T)
    for k in range(1, T + 1):
        A[k - 1, :k] = -(c ** (k - 1 - np.arange(k)))
        rhs[k - 1] = c**k * debt + np.sum(c ** (k - 1 - np.arange(k)) * shifts[:k])
    cons = [dict(type="eq", fun=lambda a: A[-1] @ a + rhs[-1], jac=lambda a: A[-1:])]
    if T > 1:
        cons.append(dict(type="ineq", fun=lambda a: A[:-1] @ a + rhs[:-1], jac=lambda a: A[:-1]))
    x0 = np.zeros(T)
    x0[-1] = rhs[-1]
    res = optimize.minimize(lambda a: a @ a, x0, jac=lambda a: 2 * a, bounds=[(0, None)] * T, constraints=cons, method="SLSQP",
                            options=dict(ftol=1e-14, maxiter=500))
    assert res.success, res.message
    return res.fun


@pytest.mark.parametrize("seed", range(6))
def test_schedule_matches_a_generic_qp_solver(seed):
    rng = np.random.default_rng(seed)
    n, b, T = int(rng.integers(3, 8)), int(rng.integers(1, 3)), int(rng.integers(2, 16))
    c = float(rng.uniform(0.6, 1.0))
    D = float(rng.uniform(0.5, 3.0))
    for batching in ("cyclic", "shuffled", "full"):
        sched = si.schedule(batching, T, n, b)
        U, period, gap = int(sched.uses), int(sched.period), int(sched.last_gap)
        ms = [0] + [gap + i * period for i in range(U - 1)]
        shifts = np.zeros(T)
        shifts[[T - 1 - m for m in ms]] = 1.0
        # restarts: step 0 without debt, or at a later use with debt D (noise units: eta = sigma = 1)
        ref = _qp_cost(c, shifts, 0.0)
        for m in ms:
            tau = T - 1 - m
            if tau >= 1:
                ref = min(ref, _qp_cost(c, shifts[tau:], D))
        b_eff = b if batching != "full" else n
        if batching != "full" and n % b:
            b_eff = n % b
        mu = _si_mu(1.0, 1.0, T, n, float(b_eff), 1 - c, 1 - c, diameter=D, batching=batching,
                    batch_size=None if batching == "full" else b)
        assert mu**2 == pytest.approx(ref, rel=1e-6, abs=1e-9)


# --- convex with a diameter: the bound stops growing, and beats the authors' closed forms -------
def test_diameter_bound_stops_growing_and_is_below_the_papers_closed_forms():
    eta, sigma, n, Delta, D = 0.1, 8.0, 1000, 500.0, 1.0  # the authors' constrained NoisyGD setting: L/n = 0.5
    per_step = Delta / n
    mus = [_si_mu(eta, sigma, T, n, Delta, 2.0 / eta, 0.0, diameter=D) for T in (10, 80, 320, 5000, 10**6)]
    assert np.all(np.diff(mus) >= -1e-12)
    assert mus[-1] == pytest.approx(mus[-2], rel=1e-9)  # stopped growing
    # plot_table_ngd_fdp.py: mu* = sqrt(3 (L/n) / eta + (L/n)^2 ceil(1 / ((L/n) eta))) / sigma (D = 1)
    paper = math.sqrt(3 * per_step / eta + per_step**2 * math.ceil(1 / (per_step * eta))) / sigma
    assert mus[-1] <= paper * (1 + 1e-12)
    # cyclic (plot_table_ncgd_fdp.py, l batches per epoch of b records; L/b = 0.5, eta = 0.02, sigma = 3)
    eta, sigma, l, b = 0.02, 3.0, 20, 50
    per_b = 0.5
    paper_c = math.sqrt(3 * per_b / (eta * l) + per_b**2 + per_b**2 / l * math.ceil(1 / (per_b * eta))) / sigma
    mu_c = _si_mu(eta, sigma, 500 * l, l * b, per_b * b, 2.0 / eta, 0.0, diameter=1.0, batching="cyclic", batch_size=b)
    assert mu_c <= paper_c * (1 + 1e-12)


def test_cyclic_strongly_convex_matches_the_papers_closed_form():
    """NoisyCGD, strongly convex (plot_table_ncgd_fdp.py): mu = sqrt(1 + c^(2l-2) (1-c^2)/(1-c^l)^2
    (1 - c^(l(E-1)))/(1 + c^(l(E-1)))) x one use's mu; our optimum is never above it and equals it
    when pooling the last use with the earlier ones is infeasible (the paper's case)."""
    for c, l, E in ((0.99, 20, 5), (0.98, 10, 50), (0.995, 40, 500)):
        eta = 1.0 - c  # m = M = 1: c = 1 - eta
        paper = math.sqrt(1 + c ** (2 * l - 2) * (1 - c**2) / (1 - c**l) ** 2 * (1 - c ** (l * (E - 1))) / (1 + c ** (l * (E - 1))))
        mu = _si_mu(eta, 1.0, E * l, l, 1.0, 1.0, 1.0, batching="cyclic", batch_size=1)
        assert mu == pytest.approx(paper, rel=1e-9)


# --- bad input: a clear error before any compute ------------------------------------------------
BASE = dict(dataset_size=10, gradient_sensitivity=1.0, smoothness=1.0)


@pytest.mark.parametrize("kwargs,match", [
    (dict(step_size=-0.1), "step_size"),
    (dict(noise_std=0.0), "noise_std"),
    (dict(steps=0), "steps"),
    (dict(steps=2.5), "steps"),
    (dict(gradient_sensitivity=-1.0), "gradient_sensitivity"),
    (dict(smoothness=-1.0), "smoothness"),
    (dict(strong_convexity=2.0), "strong_convexity"),
    (dict(diameter=0.0), "diameter"),
    (dict(batching="uniform"), "batching"),
    (dict(batching="cyclic"), "batch_size"),
    (dict(batching="cyclic", batch_size=11), "batch_size"),
    (dict(batch_size=3), "batch_size"),
    (dict(method="chourasia"), "method"),
    (dict(step_size=[0.1, 0.2], steps=[1, 2, 3]), "broadcast"),
])
def test_bad_input_names_the_argument(kwargs, match):
    args = dict(step_size=0.1, noise_std=1.0, steps=10, **BASE)
    args.update(kwargs)
    step, noise, steps = args.pop("step_size"), args.pop("noise_std"), args.pop("steps")
    with pytest.raises(ValueError, match=match):
        last_iterate_curve(step, noise, steps, **args)


def test_step_above_two_over_smoothness_is_refused_by_name():
    with pytest.raises(ConstantsUnavailable, match=r"step_size=2\.5 violates step_size <= 2 / smoothness = 2"):
        last_iterate_curve(2.5, 1.0, 10, dataset_size=10, gradient_sensitivity=1.0, smoothness=1.0, method="shifted-interpolation")
    # auto falls back to composition for such configurations, and says so
    curve = last_iterate_curve([0.5, 2.5], 1.0, 10, dataset_size=10, gradient_sensitivity=1.0, smoothness=1.0, strong_convexity=0.5)
    comp = last_iterate_curve(2.5, 1.0, 10, dataset_size=10, gradient_sensitivity=1.0, smoothness=1.0, method="composition")
    assert float(curve.epsilon(1e-5)[1]) == pytest.approx(float(comp.epsilon(1e-5)), rel=1e-12)
    assert "eta M > 2" in curve.provenance.result


# --- broadcasting and provenance ----------------------------------------------------------------
def test_arrays_of_configurations_give_one_curve_per_configuration():
    eta = np.array([0.01, 0.1, 0.5])[:, None]
    steps = np.array([1, 100, 10**4])[None, :]
    curve = last_iterate_curve(eta, 1.0, steps, dataset_size=100, gradient_sensitivity=2.0, smoothness=1.0, strong_convexity=0.1)
    eps = curve.epsilon(1e-5)
    assert eps.shape == (3, 3)
    for i in range(3):
        for j in range(3):
            one = last_iterate_curve(float(eta[i, 0]), 1.0, int(steps[0, j]), dataset_size=100, gradient_sensitivity=2.0,
                                     smoothness=1.0, strong_convexity=0.1)
            assert eps[i, j] == pytest.approx(float(one.epsilon(1e-5)), rel=1e-12)
    assert curve.provenance.released == "last iterate"
    one = last_iterate_curve(0.1, 1.0, 100, dataset_size=100, gradient_sensitivity=2.0, smoothness=1.0, strong_convexity=0.1,
                             method="shifted-interpolation")
    assert "Bok, Su & Altschuler" in one.provenance.result and "c=0.99" in one.provenance.result


def test_auto_is_never_worse_than_composition_poisson():
    kw = dict(dataset_size=1000, gradient_sensitivity=1.0, smoothness=5.0, strong_convexity=0.5, batching="poisson", batch_size=50)
    steps = np.array([1, 10, 100, 1000])
    auto = last_iterate_curve(0.1, 0.5, steps, **kw)
    comp = last_iterate_curve(0.1, 0.5, steps, method="composition", **kw)
    assert np.all(auto.epsilon(1e-5) <= comp.epsilon(1e-5) + 1e-12)
    # for many steps the strongly convex hidden-state bounds take over; with amplification by
    # subsampling (issue 37) below both the unamplified bound and composition
    si_only = last_iterate_curve(0.1, 0.5, steps, method="shifted-interpolation", **kw)
    sub = last_iterate_curve(0.1, 0.5, steps[-1], method="subsampled-interpolation", **kw)
    plain = min(float(si_only.epsilon(1e-5)[-1]), float(comp.epsilon(1e-5)[-1]))
    # (a batch of configurations holds the subsampled bound as a profile: eps rounded up to its 0.58% grid)
    assert float(auto.epsilon(1e-5)[-1]) == pytest.approx(min(plain, float(sub.epsilon(1e-5))), rel=6e-3)
    assert float(auto.epsilon(1e-5)[-1]) < plain


def test_poisson_composition_is_the_tighter_of_pld_and_rdp_checked_against_dp_accounting():
    """Issue 22: "auto" is never worse than PLD or RDP composition of the same run. For Poisson
    batches composition is the subsampled Gaussian (multiplier b sigma / Delta, q = b / n,
    add/remove) composed by both accountants; each eps is the smaller, and the PLD side agrees
    with dp_accounting's own pessimistic PLD (an independent implementation) to its grid."""
    dpa_pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    kw = dict(dataset_size=1000, gradient_sensitivity=1.0, smoothness=5.0, strong_convexity=0.5, batching="poisson", batch_size=50)
    steps = np.array([1, 10, 100])
    multiplier, q = 50 * 0.02 / 1.0, 0.05
    comp = last_iterate_curve(0.1, 0.02, steps, method="composition", **kw)
    auto = last_iterate_curve(0.1, 0.02, steps, **kw)
    rdp_only = last_iterate_curve(0.1, 0.02, steps, method="composition", poisson_composition="rdp", **kw)
    for delta in (1e-3, 1e-6):
        rdp = np.array([float(noisy_sgd_curve(multiplier, q, int(t)).epsilon(delta)) for t in steps])
        pld = np.array([float(pld_curve(multiplier, q, int(t)).epsilon(delta)) for t in steps])
        assert np.allclose(comp.epsilon(delta), np.minimum(rdp, pld), rtol=1e-12, atol=0)
        assert np.all(auto.epsilon(delta) <= np.minimum(rdp, pld) + 1e-12)
        assert np.allclose(rdp_only.epsilon(delta), rdp, rtol=1e-12, atol=0)
        assert np.all(pld < rdp)  # the PLD accountant is what tightens it here
        for t, ours in zip(steps, pld):
            theirs = dpa_pld.from_gaussian_mechanism(multiplier, sampling_prob=q, value_discretization_interval=1e-4,
                                                     pessimistic_estimate=True).self_compose(int(t)).get_epsilon_for_delta(delta)
            assert ours == pytest.approx(theirs, abs=2e-3)  # both on the 1e-4 grid, composed T times
    assert "PLD composition" in comp.provenance.result and "pld_curve" in auto.provenance.result
    assert "pld_curve" not in rdp_only.provenance.result


def test_poisson_composition_beyond_the_pld_grid_keeps_rdp_and_says_so():
    """Multiplier 0.02: one step's loss range exceeds the PLD grid. The RDP composition stands
    alone (a valid bound) and the provenance names why the PLD one is missing."""
    kw = dict(dataset_size=1000, gradient_sensitivity=1.0, smoothness=5.0, batching="poisson", batch_size=10)
    curve = last_iterate_curve(0.1, 0.002, 10, method="composition", **kw)
    rdp = float(noisy_sgd_curve(0.02, 0.01, 10).epsilon(1e-5))
    assert float(curve.epsilon(1e-5)) == pytest.approx(rdp, rel=1e-12)
    assert "PLD composition unavailable" in curve.provenance.result and "RDP composition alone" in curve.provenance.result
    # no gradient difference: both chains have one law, eps = 0 exactly, and the PLD part says why it is absent
    zero = last_iterate_curve(0.1, 0.002, 10, method="composition", **{**kw, "gradient_sensitivity": 0.0})
    assert float(zero.epsilon(1e-5)) == 0.0 and "PLD composition skipped" in zero.provenance.result
    with pytest.raises(ValueError, match="poisson_composition='exact'"):
        last_iterate_curve(0.1, 0.002, 10, poisson_composition="exact", **kw)


def test_gdp_epsilon_inverts_the_gdp_profile():
    from dpjax.accountants import fdp

    mu = np.array([0.0, 1e-3, 0.3, 1.0, 5.0, np.inf])
    eps = li.gdp_epsilon(mu, 1e-5)
    assert eps[0] == 0.0 and eps[-1] == np.inf
    got = fdp.gdp_delta(mu[1:-1], eps[1:-1])
    assert np.all(got <= 1e-5) and np.all(got >= 1e-5 * (1 - 1e-6))
    for m, e in zip(mu[1:-1], eps[1:-1]):
        assert e == pytest.approx(analytic_gaussian_epsilon(m, 1e-5), rel=1e-7, abs=1e-12)


def test_fast_gdp_profile_equals_the_fdp_module():
    from dpjax.accountants import fdp

    mu = np.array([1e-6, 1e-3, 0.05, 0.7, 3.0, 40.0])
    eps = li.PROFILE_EPSILONS
    fast = li.gdp_profile(mu, eps)
    ref = np.exp(fdp.gdp_log_delta(mu[:, None], eps))
    assert np.allclose(fast, ref, rtol=1e-9, atol=1e-300)
    assert np.all(li.gdp_profile(0.0, eps) == np.where(eps >= 0, 0.0, 1.0))


@pytest.mark.parametrize("n,E,extra,c", [(4, 2, 1, 0.5), (4, 2, 3, 0.8), (5, 1, 2, 0.2)])
def test_shuffled_partial_epoch_never_below_the_exact_mixture(n, E, extra, c):
    T = n * E + extra
    curve = last_iterate_curve(1.0, 1.0, T, dataset_size=n, gradient_sensitivity=1.0, smoothness=1 - c, strong_convexity=1 - c,
                               batching="shuffled", batch_size=1)
    sd, mix = _shuffled_exact_laws(n, E, c, extra)
    for delta in (1e-2, 1e-4):
        assert float(curve.epsilon(delta)) >= mixture.mixture_epsilon(sd, mix, delta) - 1e-9
    for order in (2.0, 4.0):  # the mixture's RDP (joint convexity of exp((a-1) D_a)) against the exact Renyi
        exact_rdp = max(mixture.mixture_renyi(sd, mix, order, d) for d in ("gaussian||mixture", "mixture||gaussian"))
        assert float(curve.rdp_at([order])[0]) >= exact_rdp - 1e-9


def test_shuffling_averages_the_last_epoch_and_helps_when_an_epoch_contracts():
    kw = dict(dataset_size=1000, gradient_sensitivity=2.0, smoothness=1.0, strong_convexity=0.5, batch_size=10)
    shuffled = float(last_iterate_curve(0.1, 1.0, 1000, batching="shuffled", method="shifted-interpolation", **kw).epsilon(1e-5))
    cyclic = float(last_iterate_curve(0.1, 1.0, 1000, batching="cyclic", method="shifted-interpolation", **kw).epsilon(1e-5))
    assert shuffled < 0.7 * cyclic  # c^l = 0.95^100: most positions are long forgotten by the end


@pytest.mark.parametrize("n,E,extra,c", [(4, 2, 0, 0.5), (4, 2, 3, 0.7), (5, 3, 1, 0.3), (3, 3, 0, 0.95)])
def test_random_fixed_order_never_below_the_exact_mixture(n, E, extra, c):
    """Cyclic SGLD with a secret uniformly random order used every epoch (dpjax's cyclic_sgld with
    order=None), b = 1: D' is the equal-weight mixture over the record's position p of
    N(sum over its uses p, p + n, ... of c^(steps after), v)."""
    T = n * E + extra
    v = float(np.sum(c ** (2 * np.arange(T))))
    means = [sum(c ** (T - 1 - t) for t in range(p, T, n)) for p in range(n)]
    mix = mixture.equal_weight_mixture(np.array(means), math.sqrt(v))
    cfg = li._validate_config(1.0, 1.0, T, n, 1.0, 1 - c, 1 - c, None, "cyclic-random", 1, "shifted-interpolation", internal=True)
    curve = li._build(cfg, "shifted-interpolation")
    fixed = last_iterate_curve(1.0, 1.0, T, dataset_size=n, gradient_sensitivity=1.0, smoothness=1 - c, strong_convexity=1 - c,
                               batching="cyclic", batch_size=1, method="shifted-interpolation")
    for delta in (1e-2, 1e-4):
        assert float(curve.epsilon(delta)) >= mixture.mixture_epsilon(math.sqrt(v), mix, delta) - 1e-9
        assert float(curve.epsilon(delta)) <= float(fixed.epsilon(delta)) + 1e-12

"""Issue 37: last-iterate bounds that see subsampling, tested against the exact oracle.

The oracle (tests/_last_iterate_oracle.py) is the exact last iterate of noisy SGD on linear
per-record losses with a deterministic weight decay (c = 1 - eta lam): N(.) mixtures over the
differing record's uses, delta(eps) by exact distribution functions. It shares no code with the
bounds. In its units (eta sigma) one use of the record moves the mean by rho = Delta / (b sigma).
"""
import math

import numpy as np
import pytest

import _last_iterate_oracle as oracle
from dpjax.accountants import fdp, last_iterate_curve, pld_curve
from dpjax.accountants.samplers import ye_shokri
from dpjax.models.constants import ConstantsUnavailable

DELTA = 1e-5


def _poisson_kw(lam, q, b, delta_g):
    return dict(dataset_size=int(round(b / q)), gradient_sensitivity=delta_g, smoothness=lam, strong_convexity=lam,
                batching="poisson", batch_size=b)


# ---- the oracle checks itself ----------------------------------------------------------------
def test_oracle_full_batch_is_the_gaussian_closed_form():
    inst = oracle.deterministic(0.9, np.arange(5), 5, 1.0)
    mu = inst.values[0] / math.sqrt(inst.variance)
    laws = oracle.laws_enumerated(inst)
    for eps in (0.0, 0.5, 2.0):
        assert oracle.delta_of_laws(laws, eps) == pytest.approx(oracle.gaussian_delta(mu, eps) if eps else
                                                               math.erf(mu / (2 * math.sqrt(2))), rel=1e-10)


@pytest.mark.parametrize("adjacency", ["add-remove", "replace-one"])
def test_oracle_enumeration_and_fourier_routes_agree(adjacency):
    # two independent computations of the same law: 2^10 outcomes, and the characteristic function by FFT
    e1 = oracle.eps_of_laws(oracle.laws_enumerated(oracle.poisson_enumerated(0.9, 0.1, 10, 2.0, adjacency)), DELTA)
    e2 = oracle.eps_of_laws(oracle.laws_poisson_fft(0.9, 0.1, 10, 2.0, adjacency), DELTA)
    assert e1 == pytest.approx(e2, rel=1e-6)


def test_issue_instance_exact_plateau():
    # the issue's instance: c = 0.99, q = 0.01, rho = Delta / (b sigma) = 4 / 4 = 1, add/remove (N(0, v) on D).
    # The issue quotes 0.566; both routes above agree on 0.5691 here (its table's value was rounded from a coarser grid).
    values = [oracle.poisson_exact_eps(0.99, 0.01, t, 1.0, DELTA) for t in (2000, 200000)]
    assert values[0] == pytest.approx(0.56911, abs=5e-5) and values[1] == pytest.approx(values[0], rel=1e-8)


# ---- subsampled shifted interpolation ------------------------------------------------------------
# (eta, lam, sigma, q, b, T): short runs by enumeration, c from 0.5 to 0.999
SHORT = [(0.5, 1.0, 1.0, 0.1, 2.0, 6), (0.1, 1.0, 0.5, 0.25, 1.0, 10), (0.01, 1.0, 1.0, 0.05, 1.0, 10),
         (0.2, 0.5, 2.0, 0.5, 4.0, 8), (0.001, 1.0, 0.3, 0.1, 1.0, 9)]


# the default suite runs two of the grid's cases (each ~10 s: a PLD per candidate); pytest --full runs all
_GRID = [pytest.param(*cfg, adj, marks=() if (k, adj) in ((0, "add-remove"), (1, "replace-one")) else pytest.mark.full)
         for k, cfg in enumerate(SHORT) for adj in ("add-remove", "replace-one")]


@pytest.mark.parametrize("eta,lam,sigma,q,b,steps,adjacency", _GRID)
def test_subsampled_bound_and_auto_never_below_exact(eta, lam, sigma, q, b, steps, adjacency):
    delta_g = 2.0
    kw = _poisson_kw(lam, q, b, delta_g)
    rho = delta_g / (b * sigma)
    exact = oracle.eps_of_laws(oracle.laws_enumerated(oracle.poisson_enumerated(1 - eta * lam, q, steps, rho, adjacency)),
                               DELTA)
    bound = float(last_iterate_curve(eta, sigma, steps, method="subsampled-interpolation", adjacency=adjacency,
                                     **kw).epsilon(DELTA))
    auto = float(last_iterate_curve(eta, sigma, steps, adjacency=adjacency, **kw).epsilon(DELTA))
    assert bound >= exact and auto >= exact
    # auto never above the PLD composition of the same run with the same adjacency
    comp = float(pld_curve(b * sigma / delta_g, q, steps, adjacency=adjacency).epsilon(DELTA))
    assert auto <= comp * (1 + 1e-12)


def test_subsampled_rdp_mode_never_below_exact_and_fast_for_a_sweep():
    eta, lam, sigma, q, b = 0.05, 1.0, 0.8, 0.1, 2.0
    steps = np.array([3, 6, 10])
    kw = _poisson_kw(lam, q, b, 1.0)
    curve = last_iterate_curve(eta, sigma, steps, method="subsampled-interpolation", poisson_composition="rdp", **kw)
    assert "RDP" in curve.provenance.result
    for t, eps in zip(steps, curve.epsilon(DELTA)):
        exact = oracle.eps_of_laws(oracle.laws_enumerated(oracle.poisson_enumerated(1 - eta * lam, q, int(t), 1.0 / (b * sigma))),
                                   DELTA)
        assert eps >= exact


def test_long_run_goal_plateau_and_below_two():
    # the issue's long run (add/remove, exact 0.5691): <= 2.0 at T = 20,000 and T = 200,000 within 1% of it
    kw = _poisson_kw(1.0, 0.01, 4.0, 4.0)
    e = [float(last_iterate_curve(0.01, 1.0, t, method="subsampled-interpolation", **kw).epsilon(DELTA)) for t in (20000, 200000)]
    assert e[0] <= 2.0 and abs(e[1] / e[0] - 1) <= 0.01
    assert min(e) >= 0.5691


def test_long_run_fourier_oracle_below_the_bound():
    # a long run checked against the FFT oracle, both adjacencies, c = 0.995
    for adjacency in ("add-remove", "replace-one"):
        kw = _poisson_kw(0.5, 0.02, 2.0, 2.0)
        bound = float(last_iterate_curve(0.01, 1.0, 3000, method="subsampled-interpolation", adjacency=adjacency,
                                         **kw).epsilon(DELTA))
        exact = oracle.poisson_exact_eps(0.995, 0.02, 3000, 1.0, DELTA, adjacency)
        assert exact <= bound <= 4 * exact


def test_auto_names_the_winner_and_its_assumptions():
    kw = _poisson_kw(1.0, 0.01, 4.0, 4.0)
    curve = last_iterate_curve(0.01, 1.0, 2000, poisson_composition="rdp", **kw)
    assert "tightest at delta = 1e-05: subsampled shifted interpolation" in curve.provenance.result
    assert any("contracts by c" in a for a in curve.provenance.assumptions)
    # where the step does not contract only composition is left, and its assumptions are the ones listed
    comp = last_iterate_curve(2.5, 1.0, 50, poisson_composition="rdp", **kw)
    assert "tightest at delta = 1e-05: composition" in comp.provenance.result
    assert not any("contracts by c" in a for a in comp.provenance.assumptions)


def test_bad_adjacency_inputs():
    kw = _poisson_kw(1.0, 0.01, 4.0, 4.0)
    with pytest.raises(ValueError, match="adjacency"):
        last_iterate_curve(0.01, 1.0, 10, adjacency="swap", **kw)
    with pytest.raises(ValueError, match="poisson_composition='rdp' with adjacency='replace-one'"):
        last_iterate_curve(0.01, 1.0, 10, adjacency="replace-one", poisson_composition="rdp", **kw)
    with pytest.raises(ValueError, match="adjacency applies to Poisson batches only"):
        last_iterate_curve(0.01, 1.0, 10, dataset_size=10, gradient_sensitivity=1.0, smoothness=1.0, adjacency="replace-one")
    with pytest.raises(ValueError, match="violates batching='poisson'"):
        last_iterate_curve(0.01, 1.0, 10, dataset_size=10, gradient_sensitivity=1.0, smoothness=1.0,
                           method="subsampled-interpolation")


# ---- Ye & Shokri 2022 -----------------------------------------------------------------------------
def _authors_shuffle_guarantee(epochs, order, batchsize, trainsize, l2_reg, lr, nm):
    """The authors' dp_utils.shuffle_guarantee written out term by term in plain floats (a direct
    transcription of its expression, independent of dpjax's vectorised log-space version)."""
    k = trainsize // batchsize
    c = 1 - lr * l2_reg

    def first(j):
        return 2 * order * nm**-2 * c ** (2 * (j - 1)) * (1 - c**2) / (1 - c ** (2 * j))

    term1 = first(k // 2) * (1 - c ** (2 * (epochs - 1) * (k - k // 2))) / (1 - c ** (2 * (k - k // 2)))
    acc = sum(math.exp((order - 1) * first(k - j0)) for j0 in range(k))
    return term1 + math.log(acc / k) / (order - 1)


def _ye_shokri_rdp(epochs, order, batchsize, trainsize, l2_reg, lr, nm, clip=1.0):
    # dpjax's conventions: noise std on the batch mean sigma_m C / b, Delta = 2 C, c = 1 - eta m
    return float(ye_shokri.rdp(lr, nm * clip / batchsize, epochs * (trainsize // batchsize), dataset_size=trainsize,
                               gradient_sensitivity=2 * clip, strong_convexity=l2_reg, batch_size=batchsize,
                               orders=np.array([float(order)]))[..., 0])


def test_ye_shokri_matches_the_authors_value():
    assert _ye_shokri_rdp(2, 3, 100, 1000, 0.1, 0.5, 1.5) == pytest.approx(2.0151659357699527, rel=1e-9)
    for args in [(5, 8, 10, 200, 0.05, 0.3, 2.0), (1, 2, 50, 100, 0.2, 0.9, 0.8), (30, 32, 8, 96, 0.01, 1.0, 4.0)]:
        assert _ye_shokri_rdp(*args) == pytest.approx(_authors_shuffle_guarantee(*args), rel=1e-9)
    # through the public entry point, same run (clip 1: sigma = 1.5 / 100, Delta = 2)
    curve = last_iterate_curve(0.5, 0.015, 20, dataset_size=1000, gradient_sensitivity=2.0, smoothness=0.1, strong_convexity=0.1,
                               batching="shuffled", batch_size=100, method="ye-shokri")
    assert float(curve.rdp_at([3.0])[..., 0]) == pytest.approx(2.0151659357699527, rel=1e-9)


@pytest.mark.parametrize("eta,lam,sigma,batches,epochs", [(0.5, 0.5, 1.0, 4, 3), (0.1, 1.0, 0.5, 4, 2), (0.05, 1.0, 2.0, 3, 4),
                                                        (0.9, 1.0, 1.0, 2, 5)])
def test_ye_shokri_and_auto_never_below_exact_shuffled(eta, lam, sigma, batches, epochs):
    b, delta_g = 2, 2.0
    n = batches * b
    kw = dict(dataset_size=n, gradient_sensitivity=delta_g, smoothness=lam, strong_convexity=lam, batching="shuffled",
              batch_size=b)
    rho = delta_g / (b * sigma)
    exact = max(oracle.eps_of_laws(oracle.laws_enumerated(oracle.shuffled_enumerated(1 - eta * lam, batches, epochs, rho, adj)),
                                   DELTA) for adj in ("add-remove", "replace-one"))
    steps = batches * epochs
    assert float(last_iterate_curve(eta, sigma, steps, method="ye-shokri", **kw).epsilon(DELTA)) >= exact
    assert float(last_iterate_curve(eta, sigma, steps, **kw).epsilon(DELTA)) >= exact


def test_ye_shokri_refusals_name_the_rule():
    kw = dict(gradient_sensitivity=2.0, smoothness=0.1, strong_convexity=0.1, batching="shuffled", method="ye-shokri")
    cases = [(dict(dataset_size=100, batch_size=100, steps=3), "floor\\(K/2\\) term divides by zero"),
             (dict(dataset_size=1000, batch_size=100, steps=15), "steps=15 violates steps a multiple of"),
             (dict(dataset_size=1000, batch_size=300, steps=9), "batch_size divides dataset_size"),
             ]
    for extra, rule in cases:
        steps = extra.pop("steps")
        with pytest.raises(ConstantsUnavailable, match=rule):
            last_iterate_curve(0.5, 0.015, steps, **extra, **kw)
    with pytest.raises(ConstantsUnavailable, match="strong_convexity > 0"):
        last_iterate_curve(0.5, 0.015, 20, dataset_size=1000, batch_size=100, **{**kw, "strong_convexity": 0.0})
    with pytest.raises(ConstantsUnavailable, match="batching='full' is not covered by the Ye-Shokri bound"):
        last_iterate_curve(0.5, 0.015, 20, dataset_size=1000, gradient_sensitivity=2.0, smoothness=0.1, method="ye-shokri")


# ---- a GDP curve's eps is exact ------------------------------------------------------------------------
def test_gdp_curve_converts_by_the_closed_form():
    curve = last_iterate_curve(0.1, 1.0, 50, dataset_size=100, gradient_sensitivity=1.0, smoothness=1.0, strong_convexity=1.0,
                               method="shifted-interpolation")
    mu = float(curve.gdp_mu)
    for delta in (1e-3, 1e-5, 1e-9):
        eps = float(curve.epsilon(delta))
        # the closed form at the returned eps gives delta back (to rounding), not a grid point above it
        assert float(fdp.gdp_delta(mu, eps)) == pytest.approx(delta, rel=1e-9)
        assert float(curve.delta(eps)) == pytest.approx(delta, rel=1e-9)
    # and the full-batch quadratic is exact: the oracle's Gaussian
    inst = oracle.deterministic(0.9, np.arange(50), 50, 1.0 / (100 * 1.0))
    assert mu == pytest.approx(inst.values[0] * inst.u_dp / math.sqrt(inst.variance), rel=1e-9)


# (eta, lam, sigma, q, b, T): long runs against the FFT oracle, T up to 1e6 and c -> 1
LONG = [(0.01, 1.0, 1.0, 0.01, 4.0, 20000), (0.001, 0.01, 1.0, 0.01, 4.0, 1_000_000), (0.05, 0.1, 0.7, 0.05, 2.0, 100_000),
        (0.1, 0.001, 2.0, 0.002, 1.0, 300_000)]


@pytest.mark.full
@pytest.mark.parametrize("adjacency", ["add-remove", "replace-one"])
@pytest.mark.parametrize("eta,lam,sigma,q,b,steps", LONG)
def test_long_runs_never_below_exact(eta, lam, sigma, q, b, steps, adjacency):
    delta_g = 2.0
    kw = _poisson_kw(lam, q, b, delta_g)
    exact = oracle.poisson_exact_eps(1 - eta * lam, q, steps, delta_g / (b * sigma), DELTA, adjacency)
    for comp in (("pld", "rdp") if adjacency == "add-remove" else ("pld",)):
        bound = float(last_iterate_curve(eta, sigma, steps, method="subsampled-interpolation", adjacency=adjacency,
                                         poisson_composition=comp, **kw).epsilon(DELTA))
        assert bound >= exact


def _random_poisson_configs(count, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        lam = float(rng.choice([0.5, 1.0, 2.0]))
        x = float(rng.choice([1e-4, 1e-2, 0.1, 0.5, 0.9]))  # eta lam = 1 - c: from almost no contraction to much
        out.append(dict(eta=x / lam, lam=lam, sigma=float(rng.uniform(0.3, 3.0)), q=float(rng.choice([0.01, 0.1, 0.3, 0.6])),
                        b=float(rng.choice([1.0, 2.0, 8.0])), steps=int(rng.integers(2, 11)),
                        delta_g=float(rng.uniform(0.5, 4.0))))
    return out


@pytest.mark.parametrize("count,seed", [pytest.param(6, 0), pytest.param(40, 1, marks=pytest.mark.full)])
def test_random_short_runs_rdp_form_never_below_exact(count, seed):
    # the RDP form (add/remove) on random short runs, all configurations of a draw in one vectorised call
    cfgs = _random_poisson_configs(count, seed)
    arrays = {k: np.array([c[k] for c in cfgs]) for k in cfgs[0]}
    n = np.round(arrays["b"] / arrays["q"]).astype(int)
    curve = last_iterate_curve(arrays["eta"], arrays["sigma"], arrays["steps"], dataset_size=n,
                               gradient_sensitivity=arrays["delta_g"], smoothness=arrays["lam"], strong_convexity=arrays["lam"],
                               batching="poisson", batch_size=n * arrays["q"], method="subsampled-interpolation",
                               poisson_composition="rdp")
    for c, eps, n_c in zip(cfgs, curve.epsilon(DELTA), n):
        b = n_c * c["q"]
        exact = oracle.eps_of_laws(oracle.laws_enumerated(oracle.poisson_enumerated(1 - c["eta"] * c["lam"], c["q"], c["steps"],
                                                                                    c["delta_g"] / (b * c["sigma"]))), DELTA)
        assert eps >= exact, c


@pytest.mark.full
@pytest.mark.parametrize("adjacency", ["add-remove", "replace-one"])
def test_random_short_runs_pld_form_never_below_exact(adjacency):
    for c in _random_poisson_configs(10, 2):
        n = round(c["b"] / c["q"])
        b = n * c["q"]
        bound = float(last_iterate_curve(c["eta"], c["sigma"], c["steps"], dataset_size=n, gradient_sensitivity=c["delta_g"],
                                         smoothness=c["lam"], strong_convexity=c["lam"], batching="poisson", batch_size=b,
                                         adjacency=adjacency).epsilon(DELTA))
        exact = oracle.eps_of_laws(oracle.laws_enumerated(oracle.poisson_enumerated(
            1 - c["eta"] * c["lam"], c["q"], c["steps"], c["delta_g"] / (b * c["sigma"]), adjacency)), DELTA)
        assert bound >= exact, c


def test_sampler_run_with_poisson_batches_uses_the_subsampled_bound():
    # a dpjax run (clipped SGLD, Poisson q = 0.25, replace-one pair): auto takes the subsampled bound
    # into its minimum (replace-one PLD pair with the clip's G, the shift with the certified Delta)
    # and is never above the PLD composition of the same run
    import dpjax.models as M
    import dpjax.samplers as S
    from dpjax.accountants import sampler_last_iterate_curve
    from dpjax.accountants.samplers.sampler_constants import describe_run
    from dpjax.data import replace_one

    x = np.array([[0.1, 0.2], [-0.3, 0.5], [1.0, -1.0], [0.4, 0.4], [0.0, 0.7], [-0.6, -0.1], [0.2, -0.5], [0.9, 0.3]])
    model = M.gaussian_mean(dim=2, prior_precision=0.5, inverse_temperature=2.0)
    pair = replace_one(M.gaussian_mean_dataset(x), 3, {"x": x[3] + np.array([0.3, -0.4])})
    sampler = S.sgld(0.02, batching="poisson", sampling_rate=0.25, clip_norm=0.5)
    run = describe_run(model, pair, sampler, 200)
    curve = sampler_last_iterate_curve(model, pair, sampler, 200)
    comp = pld_curve(run.noise_std * run.batch_size / (2 * run.gradient_bound), 0.25, 200, adjacency="replace-one")
    assert float(curve.epsilon(DELTA)) <= float(comp.epsilon(DELTA)) * (1 + 1e-12)
    assert "subsampled Gaussian steps by the PLD accountant" in curve.provenance.result
    assert "tightest at delta = 1e-05: composition" in curve.provenance.result  # c = 0.995 over 200 steps: too short
    assert any("replace-one: records' gradients bounded by G = 4" in a for a in curve.provenance.assumptions)

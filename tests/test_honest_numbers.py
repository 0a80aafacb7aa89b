"""No silent wrong privacy number: regression tests for issue 12 items 1-4 and property tests
(hypothesis) over the estimators and the audit report.

References: the analytic Gaussian mechanism (Balle & Wang 2018), inverted here with scipy,
for N(0, 1) vs N(mu, 1); Rényi divergence a mu^2 / 2 of the same pair.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

import dpjax
from dpjax import samplers
from dpjax.audit import _report, audit
from dpjax.coupled import CoupledResult
from dpjax.estimators import epsilon_estimate, epsilon_lower_bound, renyi_estimate
from dpjax.estimators.plugin import bias_corrected_interval
from dpjax.models.gaussian_mean import gaussian_mean, gaussian_mean_dataset


def gaussian_eps(mu: float, delta: float) -> float:
    def excess(eps):
        return stats.norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2) - delta

    return 0.0 if excess(0.0) <= 0 else optimize.brentq(excess, 0.0, 200.0, xtol=1e-12)


# --- item 1: far-apart laws ---------------------------------------------------------------


def test_far_apart_laws_give_a_flagged_floor_never_zero():
    rng = np.random.default_rng(0)
    p, q = rng.normal(0, 1, 2000), rng.normal(6, 1, 2000)
    truth = gaussian_eps(6.0, 1e-3)
    assert truth > 30
    lb = epsilon_lower_bound(p, q, 1e-3)
    est = epsilon_estimate(p, q, 1e-3, num_bootstrap=20)
    assert 5.0 < lb.epsilon <= truth
    assert est.epsilon >= lb.epsilon and est.certified_lower_bound == lb.epsilon
    assert not est.resolved and "one bin is left" in est.note and est.interval == (est.epsilon, math.inf)
    ren = renyi_estimate(p, q, [2.0, 8.0], num_bootstrap=20)
    assert np.all(ren.rdp >= ren.certified_lower_bound) and np.all(ren.certified_lower_bound > 4.0)
    assert np.all(ren.rdp <= np.array([2.0, 8.0]) * 36 / 2)  # below the truth: a floor
    assert not ren.resolved.any() and np.all(np.isinf(ren.rdp_upper))


def test_an_estimate_set_by_one_tail_bin_is_unresolved():
    # mu = 4, n = 2000: the merged histogram's most extreme bin holds most of the mass, so
    # eps(1e-3) ~ 19.6 is far beyond what it can show (the plug-in says ~5)
    rng = np.random.default_rng(1)
    est = epsilon_estimate(rng.normal(0, 1, 2000), rng.normal(4, 1, 2000), 1e-3, num_bootstrap=20)
    assert not est.resolved and "single most extreme bin" in est.note and est.interval[1] == math.inf
    assert est.epsilon < gaussian_eps(4.0, 1e-3)


def test_a_resolved_estimate_has_a_finite_interval_around_its_point():
    rng = np.random.default_rng(2)
    est = epsilon_estimate(rng.normal(0, 1, 20_000), rng.normal(1, 1, 20_000), 1e-2, num_bootstrap=50)
    assert est.resolved and est.note == ""
    assert est.interval[0] <= est.epsilon <= est.interval[1] < math.inf
    assert est.interval[0] <= gaussian_eps(1.0, 1e-2) <= est.interval[1]


def test_bias_corrected_interval_contains_the_point_even_when_every_replicate_is_above_it():
    # the README tour's case: point 0.691, replicates all above it
    replicates = np.linspace(0.70, 0.86, 200)
    lo, hi = bias_corrected_interval(0.691, replicates, 0.95)
    assert lo <= 0.691 <= hi
    assert hi - lo == pytest.approx(np.quantile(replicates, 0.975, method="higher") - np.quantile(replicates, 0.025, method="lower"))
    assert bias_corrected_interval(0.5, np.array([]), 0.95) != bias_corrected_interval(0.5, np.array([]), 0.95)  # NaN, NaN


# --- item 2: blown-up but finite rows in d >= 2 -----------------------------------------------


@pytest.mark.parametrize("statistic", ["lda", "gaussian_llr", "mean_difference"])
def test_blown_up_rows_do_not_turn_the_statistics_into_nan(statistic):
    rng = np.random.default_rng(3)
    p, q = rng.normal(0, 1, (2000, 2)), rng.normal(0, 1, (2000, 2)) + np.array([1.0, 0.0])
    clean = epsilon_lower_bound(p, q, 1e-2, statistic=statistic).epsilon
    p[:3] = [[1e200, -1e200], [1.7e308, 1e5], [-1e300, 1e300]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not even a NumPy overflow warning
        lb = epsilon_lower_bound(p, q, 1e-2, statistic=statistic)
        est = epsilon_estimate(p, q, 1e-2, statistic=statistic, num_bootstrap=10)
        ren = renyi_estimate(p, q, [2.0], statistic=statistic, num_bootstrap=10)
    truth = gaussian_eps(1.0, 1e-2)
    assert 0.5 * clean <= lb.epsilon <= truth + 1.0  # power kept; three extreme rows move the truth a little
    assert np.isfinite(est.epsilon) and est.epsilon >= lb.epsilon
    assert np.all(np.isfinite(ren.rdp))


def test_a_callable_statistic_returning_nan_is_refused_by_name():
    x = np.random.default_rng(4).normal(size=(50, 2))
    with pytest.raises(ValueError, match=r"statistic\(samples\) has a non-finite value"):
        epsilon_lower_bound(x, x + 1, 1e-2, statistic=lambda v: np.where(v[:, 0] > 0, v[:, 0], np.nan))


# --- items 3 and 4: audit -----------------------------------------------------------------------


def _pair(gap):
    x = np.linspace(-1.0, 1.0, 20)
    return dpjax.replace_one(gaussian_mean_dataset(x), 0, {"x": np.array([x[0] + gap])})


def test_audit_checks_the_model_against_both_datasets_before_running():
    with pytest.raises(ValueError, match=r"pair.dataset does not fit the model: .*must have shape \(n, 2\)"):
        audit(gaussian_mean(dim=2), _pair(2.0), samplers.ula(0.02), num_pairs=100, num_steps=5)


def test_audit_evaluates_bounds_and_exact_values_before_the_chains():
    def broken(step):
        raise ArithmeticError(f"no bound at step {step}")

    with pytest.raises(ArithmeticError, match="no bound at step 5"):
        audit(gaussian_mean(dim=1), _pair(2.0), samplers.ula(0.02), num_pairs=10**9, num_steps=5, bounds={"b": broken})
    with pytest.raises(TypeError, match=r"exact\['e'\]\(5\) returned 'x'"):
        audit(gaussian_mean(dim=1), _pair(2.0), samplers.ula(0.02), num_pairs=10**9, num_steps=5, exact={"e": lambda t: "x"})


def test_audit_ok_is_false_for_nan_exact_values_and_diverged_pairs_and_far_pairs_are_not_zero():
    model = gaussian_mean(dim=1, prior_precision=1.0)
    init = np.zeros((400, 1))
    init[:100] = 1e308  # the gradient 21 x overflows: a quarter of the pairs diverge at step 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = audit(model, _pair(200.0), samplers.ula(0.02), num_pairs=400, num_steps=10, record_steps=[10], delta=1e-3,
                       init=init, exact={"nan": lambda t: float("nan")})
    t = report.table.set_index(["quantity", "kind"])
    lcl, est = t.loc[("last iterate", "lower bound"), "epsilon"], t.loc[("last iterate", "estimate")]
    assert lcl > 3 and est["epsilon"] >= lcl and est["upper"] == math.inf and "UNRESOLVED" in est["source"]
    assert set(report.table["nonfinite_pairs"]) == {100} and report.coupled.num_nonfinite == 100
    assert not report.ok
    assert any("100 of 400 chain pairs were non-finite" in p for p in report.problems)
    assert any("nan (exact) eps=nan is not finite" in p for p in report.problems)


def test_an_audit_without_a_recorded_step_above_zero_is_not_ok():
    result = CoupledResult(np.array([0]), np.zeros((1, 8, 1)), np.zeros((1, 8, 1)), np.zeros((1, 8)), np.ones(8, bool), 0, {})
    report = _report(result, delta=1e-2, confidence=0.95, seed=0, bound_names=[], exact_names=[], claim=None, path_loss=True)
    assert report.table.empty and not report.ok and "the table is empty" in report.problems[0]


# --- property tests -------------------------------------------------------------------------------


@st.composite
def law_samples(draw, n, d):
    kind = draw(st.sampled_from(["normal", "heavy", "degenerate", "discrete", "uniform"]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    loc = draw(st.floats(-8, 8))
    scale = draw(st.floats(0.01, 10))
    if kind == "normal":
        x = rng.normal(loc, scale, (n, d))
    elif kind == "heavy":
        x = loc + scale * rng.standard_t(draw(st.floats(0.5, 3)), (n, d))
    elif kind == "degenerate":
        x = np.full((n, d), loc)
    elif kind == "discrete":
        x = rng.integers(0, draw(st.integers(1, 4)), (n, d)).astype(np.float64) + loc
    else:
        x = rng.uniform(loc, loc + scale, (n, d))
    blown = draw(st.integers(0, 3))
    if blown:
        rows = rng.choice(n, blown, replace=False)
        x[rows] *= 10.0 ** rng.uniform(50, 300, (blown, 1)) * rng.choice([-1, 1], (blown, d))
        x[rows] += 10.0 ** rng.uniform(50, 300, (blown, d))
    return x


@st.composite
def sample_pairs(draw):
    d = draw(st.integers(1, 3))
    n_p = draw(st.integers(24, 300))
    n_q = n_p if draw(st.booleans()) else draw(st.integers(24, 300))
    return draw(law_samples(n_p, d)), draw(law_samples(n_q, d))


PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@PROPERTY
@given(pair=sample_pairs(), delta=st.floats(1e-6, 0.5), seed=st.integers(0, 1000))
def test_estimates_are_never_nan_never_below_the_certified_bound_and_inside_their_interval(pair, delta, seed):
    p, q = pair
    statistic = "auto" if p.shape[1] == 1 else ("lda", "gaussian_llr", "mean_difference")[seed % 3]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow or invalid-value warning either
        lb = epsilon_lower_bound(p, q, delta, statistic=statistic, seed=seed)
        est = epsilon_estimate(p, q, delta, statistic=statistic, seed=seed, num_bootstrap=20)
        ren = renyi_estimate(p, q, [1.5, 4.0], statistic=statistic, seed=seed, num_bootstrap=20)
    assert 0.0 <= lb.epsilon <= lb.resolution_ceiling + 1e-12
    assert not np.isnan(est.epsilon) and est.epsilon >= est.certified_lower_bound == lb.epsilon
    assert est.interval[0] <= est.epsilon <= est.interval[1]
    assert est.resolved == (est.note == "") and (est.resolved or est.interval[1] == math.inf)
    assert not np.any(np.isnan(ren.rdp)) and np.all(ren.rdp >= ren.certified_lower_bound)
    assert np.all(ren.rdp_lower <= ren.rdp) and np.all(ren.rdp <= ren.rdp_upper)
    assert np.all(ren.resolved | np.isinf(ren.rdp_upper))


@st.composite
def coupled_results(draw):
    steps = np.array(sorted(draw(st.sets(st.integers(1, 50), min_size=1, max_size=2))))
    k, d = draw(st.integers(8, 60)), draw(st.integers(1, 2))
    p = np.stack([draw(law_samples(k, d)) for _ in steps])
    q = np.stack([draw(law_samples(k, d)) for _ in steps])
    loss = np.random.default_rng(draw(st.integers(0, 1000))).normal(draw(st.floats(0, 3)), 1.0, (len(steps), k))
    diverged = draw(st.lists(st.integers(0, k - 1), max_size=k, unique=True))
    for i in diverged:  # a pair goes non-finite at some recorded step and stays so
        r = draw(st.integers(0, len(steps) - 1))
        p[r:, i] = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    finite = np.ones(k, bool)
    finite[diverged] = False
    return CoupledResult(steps, p, q, loss, finite, int((~finite).sum()), {})


@PROPERTY
@given(result=coupled_results(), exact_values=st.lists(st.sampled_from([0.0, 1.0, 50.0, np.nan, np.inf]), min_size=2, max_size=2))
def test_audit_ok_means_every_row_finite_and_consistent(result, exact_values):
    def claim(step, kind, name):
        return None, exact_values[int(name)]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = _report(result, delta=1e-2, confidence=0.95, seed=0, bound_names=[], exact_names=["0", "1"], claim=claim, path_loss=True)
    t = report.table
    assert set(t["step"]) == set(result.steps.tolist())
    lcl = t[t["kind"] == "lower bound"].set_index("step")["epsilon"]
    est = t[(t["kind"] == "estimate") & (t["quantity"] == "last iterate")].set_index("step")
    for step, row in est.iterrows():
        if np.isfinite(row["epsilon"]):
            assert row["epsilon"] >= lcl[step] and row["lower"] <= row["epsilon"] <= row["upper"]
    exact = t[t["kind"] == "exact"]
    inconsistent = (
        t["nonfinite_pairs"].gt(0).any()
        or not np.all(np.isfinite(t["epsilon"]))
        or any(e.epsilon < lcl[e.step] for e in exact.itertuples())
    )
    assert report.ok == (not inconsistent), report.problems
    assert report.ok == (report.problems == [])
    if result.num_nonfinite:
        assert not report.ok

"""Sweep runner in-process: checkpoint resume is bit-identical, the chains match run_coupled,
and the quantities of a ULA point on a Gaussian mean match closed forms."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest

import dpjax
from _shared import sweep_point
from dpjax.accountants.mechanisms.gaussian_divergence import analytic_gaussian_delta, analytic_gaussian_epsilon
from dpjax.sweep import config as C
from dpjax.sweep.chains import run_pairs
from dpjax.sweep.quantities import compute_rows
from dpjax.sweep.runner import build_checked, run_points
from dpjax.sweep.store import load_results

X_REPLACED = 4.0
ULA_POINT = sweep_point("gaussian-mean", 4000, 60, [30, 60], [
    {"name": "epsilon_lower_bound", "delta": 0.01},
    {"name": "path_delta", "epsilons": [0.5, 1.0, 2.0]},
    {"name": "exact_epsilon", "delta": 0.01},
    {"name": "girsanov_path_epsilon", "delta": 0.01},
], data={"n": 10, "record": {"x": [X_REPLACED]}}, sampler={"step_size": 0.02}, seed=3)


def _resolved(raw):
    return C.resolve_point(copy.deepcopy(raw))


def _cyclic_point():
    return _resolved(sweep_point("regression", 13, 37, [0, 9, 20, 37], [{"name": "epsilon_lower_bound", "delta": 0.01}], seed=5))


def _run(point, problem=None, **kw):
    problem = problem or build_checked(point, "point")
    return run_pairs(point["seed"], problem, num_pairs=point["num_pairs"], num_steps=point["num_steps"], record_steps=point["record_steps"], dtype=point["dtype"], **kw)


class Crash(Exception):
    pass


@pytest.fixture(scope="module")
def cyclic():
    """One problem object shared by the tests below, so its compiled step is reused."""
    point = _cyclic_point()
    problem = build_checked(point, "point")
    return point, problem, _run(point, problem, chunk_size=5)


def test_checkpoint_resume_is_bit_identical_to_an_uninterrupted_run(cyclic):
    point, problem, whole = cyclic
    saved = {}

    def save_then_crash(arrays):
        saved.clear()
        saved.update({k: np.array(v) for k, v in arrays.items()})
        if int(arrays["step"]) >= 20:  # crash after the checkpoint at step 20 (a recorded step)
            raise Crash

    with pytest.raises(Crash):
        _run(point, problem, chunk_size=5, checkpoint_every=10, save_checkpoint=save_then_crash)
    assert int(saved["step"]) == 20 and int(saved["num_recorded"]) == 3
    resumed = _run(point, problem, chunk_size=7, checkpoint_every=10, load_checkpoint=lambda: saved)
    assert resumed.timings["resumed_from_step"] == 20
    np.testing.assert_array_equal(resumed.steps, whole.steps)
    for name in ("positions", "neighbour_positions", "path_loss", "finite"):
        np.testing.assert_array_equal(getattr(resumed, name), getattr(whole, name), err_msg=name)


def test_chains_match_run_coupled_to_rounding(cyclic):
    # Same step function and randomness as dpjax.run_coupled; run_coupled draws randomness in
    # blocks, so XLA may fuse the arithmetic differently: agreement to float64 rounding over
    # 37 steps (|x| ~ 1, so 1e-12 absolute is ~1e4 ulp of slack for 37 steps).
    point, problem, ours = cyclic
    ref = dpjax.run_coupled(point["seed"], problem.model, problem.pair, problem.sampler, num_pairs=point["num_pairs"], num_steps=point["num_steps"], record_steps=point["record_steps"], progress=False)
    np.testing.assert_allclose(ours.positions, ref.positions, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours.neighbour_positions, ref.neighbour_positions, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours.path_loss, ref.path_loss, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(ours.finite, ref.finite)


def test_ula_gaussian_mean_quantities_match_closed_forms():
    point = _resolved(ULA_POINT)
    problem = build_checked(point, "point")
    record = _run(point)
    rows = compute_rows(point, problem, record)
    by = {}
    for r in rows:
        by.setdefault((r["quantity"], r["step"], r["argument"]), r)
    gamma, num_pairs = point["sampler"]["step_size"], point["num_pairs"]
    x_orig = float(np.asarray(problem.pair.dataset.fields["x"])[0, 0])
    c = abs(x_orig - X_REPLACED)  # |grad U_D - grad U_D'| for the Gaussian-mean loss (beta = 1)
    h = 1.0 + point["data"]["n"]  # Hessian: prior precision 1 + n records of curvature 1
    delta = 0.01
    for t in (30, 60):
        # Path loss of ULA with a constant drift gap: L_t ~ N(mu, 2 mu), mu = t gamma c^2 / 4,
        # so delta(eps) is the analytic Gaussian mechanism's with sensitivity/sigma sqrt(2 mu).
        mu = t * gamma * c**2 / 4
        for eps in (0.5, 1.0, 2.0):
            row = by[("path_delta", t, eps)]
            exact = analytic_gaussian_delta(math.sqrt(2 * mu), eps)
            # mean of X = (1 - e^(eps - L))_+ in [0, 1]: Var X <= E X = exact; 5 sigma
            assert abs(row["value"] - exact) <= 5 * math.sqrt(exact / num_pairs), (t, eps, row, exact)
            assert row["lower"] <= row["value"] <= row["upper"]
        # Last iterate: theta_t ~ N(m_t, s_t^2) on both sides, means apart by
        # gamma c (1 - (1 - gamma h)^t) / (gamma h) = c (1 - a^t)/h, s_t^2 = 2 gamma (1 - a^2t)/(1 - a^2)
        a = 1 - gamma * h
        gap = c * (1 - a**t) / h
        sd = math.sqrt(2 * gamma * (1 - a ** (2 * t)) / (1 - a**2))
        exact_last = analytic_gaussian_epsilon(gap / sd, delta)
        assert by[("exact_epsilon", t, delta)]["value"] == pytest.approx(exact_last, rel=1e-9)
        # Theorem 5.4 bounds the path, which is at least as private-revealing as the last iterate
        path_tight = analytic_gaussian_epsilon(math.sqrt(2 * mu), delta)
        bound = by[("girsanov_path_epsilon", t, delta)]["value"]
        assert bound >= path_tight - 1e-12 and bound >= exact_last
        # a 95% lower confidence bound (seeded; one draw per step) sits below the exact value
        assert by[("epsilon_lower_bound", t, delta)]["value"] <= exact_last
    assert [r for r in rows if r["quantity"] == "num_nonfinite"][0]["value"] == 0.0


def test_run_points_skips_completed_points_and_rows_are_unique(tmp_path):
    small = copy.deepcopy(ULA_POINT)
    small.update(num_pairs=64, num_steps=10, record_steps=[5, 10])
    small["quantities"] = [{"name": "path_delta", "epsilons": [1.0]}, {"name": "exact_epsilon", "delta": 0.01}]
    points = [_resolved(small), _resolved({**small, "seed": 4})]
    first = run_points(points, tmp_path, progress=False)
    assert len(first["completed"]) == 2 and first["skipped"] == []
    again = run_points(points, tmp_path, progress=False)
    assert again["completed"] == [] and len(again["skipped"]) == 2
    df = load_results(tmp_path)
    assert not df.duplicated(["config_hash", "step", "quantity", "argument"]).any()
    assert set(df["config_hash"]) == {C.point_hash(p) for p in points}
    assert len(df) == 2 * (2 + 2 + 2)  # num_nonfinite x 2 steps + path_delta x 2 steps + exact x 2 steps
    assert df["error"].isna().all()

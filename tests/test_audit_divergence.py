"""Divergence is a verdict (issue 38, item 1): an audit whose chains grew beyond what the step
size and the model allow is not "ok", counts the diverged pairs, and says what to change.

The model is the README's: the posterior of a Gaussian mean with 20 records and a N(0, 1)
prior, U(theta) = sum_i (theta - x_i)^2 / 2 + theta^2 / 2, curvature lambda = 21. One ULA step
(Euler form) maps theta - m to (1 - gamma lambda)(theta - m) + noise: stable iff
gamma lambda < 2, i.e. gamma < 2/21 = 0.0952 (closed form, checked against the report's advice);
at gamma = 0.5 the factor is |1 - 10.5| = 9.5 a step (the issue's case: before, "verdict: ok").
SGLD's Welling-Teh step eta drifts by eta / 2, so sgld(1.0) expands by the same 9.5."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import dpjax
from dpjax import samplers
from dpjax.audit import audit
from dpjax.coupled import check_divergence, run_coupled
from dpjax.models import gaussian_mean, gaussian_mean_dataset

LAMBDA = 21.0


@pytest.fixture(scope="module")
def setup():
    data = gaussian_mean_dataset(np.linspace(-1, 1, 20))
    pair = dpjax.replace_one(data, 0, {"x": np.array([1.0])})
    return gaussian_mean(dim=1, prior_precision=1.0), pair


def _audit(setup, sampler):
    model, pair = setup
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a diverged run may also warn about non-finite pairs
        return audit(model, pair, sampler, num_pairs=500, num_steps=40, record_steps=[20, 40], delta=1e-2, fits=False,
                     path_loss=False)


@pytest.mark.parametrize("sampler", [samplers.ula(0.5), samplers.sgld(1.0, batch_size=5)], ids=["ula(0.5)", "sgld(1.0)"])
def test_a_diverged_audit_is_not_ok_and_says_what_to_change(setup, sampler):
    report = _audit(setup, sampler)
    assert not report.ok
    text = report.summary()
    assert "verdict: ok" not in text and "DIVERGED" in text
    check = report.divergence
    # the drift's expansion is the closed form |1 - drift_coef lambda| = 9.5 at every recorded step
    assert check.expansion[1:] == pytest.approx(abs(1 - 0.5 * LAMBDA), rel=1e-9)
    assert list(check.diverged_pairs()) == [500, 500]
    assert "500 diverged" in text.replace("\n  ", " ")
    # 9.5^40 ~ 1e39: far beyond float resolution of the step's noise (sd 1)
    assert check.unresolved[-1] == 500
    # what to change: the step size below the stability limit 2 / lambda in the sampler's units
    limit = float(re.search(r"about ([0-9.]+) in the", " ".join(report.problems)).group(1))
    stable = 2.0 / LAMBDA * (1.0 if sampler.parameterisation == "euler" else 2.0)  # Welling-Teh drifts by eta / 2
    assert limit == pytest.approx(stable, rel=5e-3)  # printed to 3 significant digits
    assert any(p.startswith("what to change: lower the step size") for p in report.problems)
    assert "DIVERGED chains" in text  # the headline does not call rounding "certified"


def test_a_stable_audit_is_still_ok(setup):
    report = _audit(setup, samplers.ula(0.02))
    assert report.ok, report.problems
    check = report.divergence
    assert check.expansion[1:] == pytest.approx(abs(1 - 0.02 * LAMBDA), rel=1e-9)  # 0.58: contracts
    assert not check.diverged().any() and check.diverged_pairs().max() == 0 and check.advice == ""
    assert "(0 non-finite, 0 diverged)" in report.summary()


def test_growth_beyond_float_resolution_is_caught_before_it_overflows(setup):
    # 8 steps at gamma = 0.5: positions near 9.5^8 = 7e7, finite and still resolving the noise
    # (no pair unresolved) but the drift expands: divergence, though nothing is non-finite yet
    model, pair = setup
    sampler = samplers.ula(0.5)
    result = run_coupled(0, model, pair, sampler, num_pairs=200, num_steps=8, record_steps=[1, 8], progress=False)
    check = check_divergence(result, model, pair, sampler)
    assert result.num_nonfinite == 0 and check.unresolved.sum() == 0
    assert check.diverged().all() and all("expands" in line for line in check.problems())

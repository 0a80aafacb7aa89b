"""dpjax.audit: bounds, exact values and measurements side by side; violations flagged."""
import warnings

import numpy as np
import pytest

import dpjax
from dpjax import samplers
from dpjax.accountants import PrivacyCurve, Provenance
from dpjax.accountants.samplers.girsanov import thm54_ula_path
from dpjax.audit import PrivacyViolationWarning, audit
from dpjax.models.gaussian_mean import gaussian_mean, gaussian_mean_dataset
from scipy import optimize, stats

N, PRIOR, GAMMA, DELTA = 20, 1.0, 0.02, 1e-2
X_GAP = 2.0  # |x_0 - x_0'|


def _pair():
    x = np.linspace(-1.0, 1.0, N)
    data = gaussian_mean_dataset(x)
    return dpjax.replace_one(data, 0, {"x": np.array([x[0] + X_GAP])})


def _exact_epsilon(step: int) -> float:
    """Independent closed form: ULA on U = (lambda + n)/2 theta^2 - ..., Euler form, temperature 1.
    Both chains are Gaussian with one variance; their means differ by
    gamma * X_GAP * sum_{j<t} (1 - gamma h)^j, h = lambda + n. Tight eps of two equal-variance
    Gaussians (Balle & Wang 2018) by root finding on delta(eps) written here with scipy."""
    h = PRIOR + N
    a = 1.0 - GAMMA * h
    mean_gap = GAMMA * X_GAP * (1.0 - a**step) / (1.0 - a)
    var = 2.0 * GAMMA * (1.0 - a ** (2 * step)) / (1.0 - a**2)
    mu = mean_gap / np.sqrt(var)

    def delta_of(eps):
        return stats.norm.cdf(mu / 2 - eps / mu) - np.exp(eps) * stats.norm.cdf(-mu / 2 - eps / mu) - DELTA

    return optimize.brentq(delta_of, 0.0, 50.0, xtol=1e-12)


def test_audit_table_is_consistent_and_flags_a_wrong_bound():
    model = gaussian_mean(dim=1, prior_precision=PRIOR, inverse_temperature=1.0)
    sampler = samplers.ula(GAMMA)
    too_small = PrivacyCurve.from_rdp([2.0, 4.0, 8.0], [1e-4, 2e-4, 4e-4], Provenance("deliberately wrong", released="last iterate"))
    with pytest.warns(PrivacyViolationWarning, match="deliberately wrong"):
        report = audit(
            model, _pair(), sampler, num_pairs=20_000, num_steps=40, record_steps=[10, 40], delta=DELTA,
            bounds={
                "Thm 5.4 path": lambda t: thm54_ula_path(X_GAP, GAMMA, t),
                "wrong": too_small,
            },
            exact={"exact": _exact_epsilon}, seed=3,
        )
    t = report.table
    assert set(t["step"]) == {10, 40}
    assert report.coupled.num_nonfinite == 0
    for step in (10, 40):
        rows = t[t["step"] == step].set_index(["quantity", "kind"])["epsilon"]
        exact = rows[("exact", "exact")]
        lcl = rows[("last iterate", "lower bound")]
        # the exact value is reproduced by the audit's own exact column and is >= the lower bound
        assert exact == pytest.approx(_exact_epsilon(step), rel=1e-12)
        assert lcl <= exact
        # the Girsanov path bound is valid (>= exact) and is not flagged
        assert rows[("Thm 5.4 path", "bound")] >= exact
        # the plug-in estimate lands near the exact value (1e4 pairs, histogram; loose but honest:
        # its bootstrap interval must contain the exact value or be within 25%)
        est = t[(t["step"] == step) & (t["kind"] == "estimate") & (t["quantity"] == "last iterate")].iloc[0]
        assert est["lower"] - 0.25 * exact <= exact <= est["upper"] + 0.25 * exact
    # only the deliberately wrong bound is flagged, at the steps where the chains certify more
    assert not report.ok
    assert set(report.violations["quantity"]) == {"wrong"}
    fig = report.figure()
    assert fig.axes


def test_audit_rejects_bad_arguments():
    model = gaussian_mean(dim=1, prior_precision=PRIOR)
    with pytest.raises(ValueError, match="delta=1.5"):
        audit(model, _pair(), samplers.ula(GAMMA), num_pairs=10, num_steps=2, delta=1.5)
    with pytest.raises(TypeError, match="bounds\\['b'\\]"):
        audit(model, _pair(), samplers.ula(GAMMA), num_pairs=10, num_steps=2, bounds={"b": 3.0})

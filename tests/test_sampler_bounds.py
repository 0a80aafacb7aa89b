"""The sampler's own bound (issue 23 item 5): the mapping step size / temperature /
parameterisation / clipping / batching / adjacency -> noise multiplier, sampling rate and number
of compositions, against hand computations for every sampler and batching in both
parameterisations; the curves against the accountants called by hand; audit(bounds="auto")."""
import dataclasses
import math
import sys
import types
import warnings

import numpy as np
import pytest

import dpjax
from dpjax import samplers
from dpjax.accountants import noisy_sgd_curve
from dpjax.accountants.sampler_bounds import BoundUnavailable, composition_epsilons, sampler_composition_curve, sampler_mechanism
from dpjax.audit import LAST_ITERATE, PATH, PrivacyViolationWarning, _auto_bounds, audit
from dpjax.models import logistic_regression, logistic_regression_dataset

N = 20  # record slots
LAST_ITERATE_MODULE = "dpjax.accountants.samplers.last_iterate"


def _pairs():
    x = np.linspace(-1.0, 1.0, N)[:, None]
    y = (x[:, 0] > 0).astype(float)
    data = logistic_regression_dataset(x, y)
    return {"add-remove": dpjax.add_remove(data, 3), "replace-one": dpjax.replace_one(data, 3, {"x": np.array([5.0]), "y": 0.0})}


PAIRS = _pairs()

# (sampler, adjacency, hand-computed noise multiplier, sampling rate, compositions after 45 steps)
# Welling-Teh: drift eta/2, noise sqrt(eta T); Euler: drift gamma, noise sqrt(2 gamma T); the
# record's mean shift is drift * scale * C * m, m = 1 (add/remove) or 2 (replace-one).
CASES = [
    # ULA, Euler (its default): gamma = 0.01, T = 2, C = 0.5, full batch (scale 1)
    (samplers.ula(0.01, temperature=2.0, clip_norm=0.5), "add-remove", math.sqrt(2 * 0.01 * 2) / (0.01 * 1 * 0.5 * 1), 1.0, 45),
    (samplers.ula(0.01, temperature=2.0, clip_norm=0.5), "replace-one", math.sqrt(2 * 0.01 * 2) / (0.01 * 1 * 0.5 * 2), 1.0, 45),
    # ULA, Welling-Teh: eta = 0.02 (drift 0.01, noise sqrt(0.02 * 2))
    (samplers.ula(0.02, temperature=2.0, clip_norm=0.5, parameterisation="welling-teh"), "add-remove",
     math.sqrt(0.02 * 2) / (0.01 * 1 * 0.5), 1.0, 45),
    # SGLD (Welling-Teh default), full batch
    (samplers.sgld(0.02, batching="full", clip_norm=1.0), "add-remove", math.sqrt(0.02) / (0.01 * 1 * 1.0), 1.0, 45),
    # SGLD, Poisson q = 0.25: scale 1/q = 4
    (samplers.sgld(0.02, batching="poisson", sampling_rate=0.25, clip_norm=1.0), "add-remove", math.sqrt(0.02) / (0.01 * 4 * 1.0), 0.25, 45),
    (samplers.sgld(0.02, batching="poisson", sampling_rate=0.25, clip_norm=1.0), "replace-one", math.sqrt(0.02) / (0.01 * 4 * 1.0 * 2), 0.25, 45),
    # SGLD, Euler, Poisson: gamma = 0.01, T = 0.5: noise sqrt(0.01), drift 0.01
    (samplers.sgld(0.01, batching="poisson", sampling_rate=0.25, clip_norm=1.0, temperature=0.5, parameterisation="euler"), "add-remove",
     math.sqrt(2 * 0.01 * 0.5) / (0.01 * 4 * 1.0), 0.25, 45),
    # SGLD, without replacement b = 5 of 20: scale 4, q = b/n (+2^-R, R = 2 ceil(log2 20) + 12 = 22)
    (samplers.sgld(0.02, batching="without-replacement", batch_size=5, clip_norm=1.0), "add-remove",
     math.sqrt(0.02) / (0.01 * 4 * 1.0), 0.25 + 2.0**-22, 45),
    (samplers.sgld(0.02, batching="without-replacement", batch_size=5, clip_norm=1.0, parameterisation="euler"), "replace-one",
     math.sqrt(2 * 0.02) / (0.02 * 4 * 1.0 * 2), 0.25 + 2.0**-22, 45),
    # SGLD, reshuffle b = 5: 4 steps an epoch, scale 4, ceil(45 / 4) = 12 compositions
    (samplers.sgld(0.02, batching="reshuffle", batch_size=5, clip_norm=1.0), "add-remove", math.sqrt(0.02) / (0.01 * 4 * 1.0), 1.0, 12),
    # cyclic SGLD b = 1: 20 steps an epoch, scale 20, ceil(45 / 20) = 3
    (samplers.cyclic_sgld(0.02, clip_norm=1.0), "add-remove", math.sqrt(0.02) / (0.01 * 20 * 1.0), 1.0, 3),
    (samplers.cyclic_sgld(0.01, clip_norm=1.0, parameterisation="euler", temperature=3.0), "replace-one",
     math.sqrt(2 * 0.01 * 3.0) / (0.01 * 20 * 1.0 * 2), 1.0, 3),
    # cyclic b = 6 of 20: blocks 6, 6, 6, 2 (4 steps an epoch): the short block's scale 20/2 = 10
    (samplers.cyclic_sgld(0.02, batch_size=6, clip_norm=1.0), "add-remove", math.sqrt(0.02) / (0.01 * 10 * 1.0), 1.0, 12),
]


@pytest.mark.parametrize("sampler,adjacency,sigma,q,count", CASES, ids=[f"{c[0].name}-{c[0].batching.name}-{c[0].parameterisation}-{c[1]}" for c in CASES])
def test_mapping_equals_the_hand_computation(sampler, adjacency, sigma, q, count):
    mech = sampler_mechanism(sampler, PAIRS[adjacency])
    assert mech.noise_multiplier == pytest.approx(sigma, rel=1e-12)
    assert mech.sampling_rate == pytest.approx(q, rel=1e-15, abs=0)
    assert mech.compositions(45) == count
    assert mech.adjacency == adjacency and f"= {sigma:.6g}" in mech.how


def test_rdp_rows_equal_the_accountant_called_by_hand():
    sampler = samplers.sgld(0.02, batching="poisson", sampling_rate=0.25, clip_norm=1.0)
    mech = sampler_mechanism(sampler, PAIRS["add-remove"])
    eps, prov = composition_epsilons(mech, [10, 45], 1e-3, "rdp")
    by_hand = [noisy_sgd_curve(math.sqrt(0.02) / 0.04, 0.25, t).epsilon(1e-3) for t in (10, 45)]
    np.testing.assert_allclose(eps, by_hand, rtol=1e-12)
    assert prov.released.startswith("path") and "noise multiplier 3.536" in prov.result
    cyclic = sampler_mechanism(samplers.cyclic_sgld(0.02, clip_norm=1.0), PAIRS["add-remove"])
    eps, _ = composition_epsilons(cyclic, [45], 1e-3, "rdp")
    assert eps[0] == pytest.approx(noisy_sgd_curve(math.sqrt(0.02) / 0.2, 1.0, 3).epsilon(1e-3), rel=1e-12)
    curve = sampler_composition_curve(sampler, PAIRS["add-remove"], 45, accountant="rdp")
    assert curve.epsilon(1e-3) == pytest.approx(by_hand[1], rel=1e-12) and "Poisson batches" in curve.provenance.describe()


def test_what_has_no_bound_says_why():
    pair = PAIRS["add-remove"]
    with pytest.raises(BoundUnavailable, match="does not clip"):
        sampler_mechanism(samplers.ula(0.01), pair)
    with pytest.raises(BoundUnavailable, match="with replacement"):
        sampler_mechanism(samplers.sgld(0.02, batching="uniform", batch_size=4, clip_norm=1.0), pair)
    with pytest.raises(BoundUnavailable, match="schedule"):
        sampler_mechanism(samplers.sgld(lambda t: 0.01 / (1.0 + t), batching="full", clip_norm=1.0), pair)
    poisson = sampler_mechanism(samplers.sgld(0.02, batching="poisson", sampling_rate=0.25, clip_norm=1.0), PAIRS["replace-one"])
    with pytest.raises(BoundUnavailable, match="add/remove"):
        composition_epsilons(poisson, [5], 1e-3, "rdp")


@pytest.mark.slow
def test_audit_auto_bounds_cover_a_gradient_canary_and_label_their_release():
    """Logistic regression with a gradient canary (clipped gradient C along one direction at
    every visited position): the chains certify a real leak, and the sampler's own PLD and RDP
    bounds (release: the path) sit above it; the report says why there is no last-iterate row."""
    from dpjax.canaries import gradient_canary

    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 2)) * np.array([1.0, 0.4])
    y = (x[:, 0] > 0).astype(float)
    data = logistic_regression_dataset(x, y)
    model = logistic_regression(1.0, 2)
    sampler = samplers.sgld(0.05, batching="poisson", sampling_rate=0.5, clip_norm=1.0, temperature=0.05)
    positions = rng.normal(size=(200, 2)) * 0.5 + np.array([2.0, 0.0])
    canary = gradient_canary(model, data, 1.0, positions, direction="most-variance")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyViolationWarning)  # a bound below what the chains certify fails the test
        report = audit(model, canary.pair(data), sampler, num_pairs=3000, num_steps=20, record_steps=[5, 20], delta=1e-3,
                       bounds="auto", statistic=canary.statistic, seed=2)
    t = report.table.set_index(["step", "quantity", "kind"])
    for step in (5, 20):
        certified = t.loc[(step, "last iterate", "lower bound"), "epsilon"]
        assert certified > 0.5
        for name in ("PLD (sampler)", "RDP (sampler)"):
            row = t.loc[(step, name, "bound")]
            assert row["released"] == PATH and row["epsilon"] >= certified
        assert t.loc[(step, "PLD (sampler)", "bound"), "epsilon"] <= t.loc[(step, "RDP (sampler)", "bound"), "epsilon"]
    assert report.violations.empty
    # the last-iterate accountant is optional in a build: its row, when present, covers the last
    # iterate and sits above the certified bound (the warning filter above); otherwise a note says why
    last = report.table[report.table["quantity"] == "last iterate (sampler)"]
    if last.empty:
        assert any("last-iterate" in note for note in report.notes)
    else:
        assert last["released"].isin([LAST_ITERATE, PATH]).all() and (last["kind"] == "bound").all()
    assert "release: path (every iterate)" in report.summary(full=True)


class _ConstantsUnavailable(ValueError):
    pass


def _stand_in_last_iterate(monkeypatch, behaviour):
    """A stand-in for dpjax.accountants.samplers.last_iterate with the agreed contract, so audit's
    handling of it is tested in any build; records the calls it gets."""
    module = types.ModuleType(LAST_ITERATE_MODULE)
    module.ConstantsUnavailable = _ConstantsUnavailable
    module.calls = []

    def sampler_last_iterate_curve(model, pair, sampler, num_steps, *, method="auto"):
        module.calls.append((model, pair, sampler, num_steps, method))
        return behaviour(num_steps)

    module.sampler_last_iterate_curve = sampler_last_iterate_curve
    monkeypatch.setitem(sys.modules, LAST_ITERATE_MODULE, module)
    return module


def test_auto_adds_the_last_iterate_bound_labelled_last_iterate(monkeypatch):
    sampler = samplers.sgld(0.02, batching="poisson", sampling_rate=0.25, clip_norm=1.0)
    pair = PAIRS["add-remove"]
    model = logistic_regression(1.0, 1)
    def last_iterate_curve(t):
        curve = noisy_sgd_curve(2.0, 0.1, t)
        return dataclasses.replace(curve, provenance=dataclasses.replace(curve.provenance, released="last iterate"))

    module = _stand_in_last_iterate(monkeypatch, last_iterate_curve)
    claims, notes = _auto_bounds(model, pair, sampler, [5, 40], 1e-3)
    assert [c[3:] for c in module.calls] == [(5, "auto"), (40, "auto")]
    assert all(c[0] is model and c[1] is pair and c[2] is sampler for c in module.calls)
    rows = claims["last iterate (sampler)"]
    for t in (5, 40):
        assert rows[t].released == LAST_ITERATE
        assert rows[t].epsilon == pytest.approx(float(noisy_sgd_curve(2.0, 0.1, t).epsilon(1e-3)), rel=1e-12)
    assert {"PLD (sampler)", "RDP (sampler)"} <= set(claims)  # the composition bounds stay beside it
    assert not any("last-iterate" in note for note in notes)


def test_a_last_iterate_curve_that_releases_the_path_is_labelled_path(monkeypatch):
    """Where the model's constants are uncertified the accountant answers by composition, whose
    release is the path (the last iterate by post-processing): the row says so."""
    def composition(t):
        curve = noisy_sgd_curve(2.0, 0.1, t)
        released = "path (every iterate; the last iterate by post-processing)"
        return dataclasses.replace(curve, provenance=dataclasses.replace(curve.provenance, released=released))

    _stand_in_last_iterate(monkeypatch, composition)
    sampler = samplers.sgld(0.02, batching="poisson", sampling_rate=0.25, clip_norm=1.0)
    claims, _ = _auto_bounds(logistic_regression(1.0, 1), PAIRS["add-remove"], sampler, [5], 1e-3)
    assert claims["last iterate (sampler)"][5].released == PATH


def test_auto_says_why_a_model_cannot_certify_its_constants(monkeypatch):
    def refuse(t):
        raise _ConstantsUnavailable("the model certifies no smoothness constant")

    _stand_in_last_iterate(monkeypatch, refuse)
    sampler = samplers.sgld(0.02, batching="poisson", sampling_rate=0.25, clip_norm=1.0)
    claims, notes = _auto_bounds(logistic_regression(1.0, 1), PAIRS["add-remove"], sampler, [5, 40], 1e-3)
    assert "last iterate (sampler)" not in claims and {"PLD (sampler)", "RDP (sampler)"} <= set(claims)
    assert any("certifies no smoothness constant" in note and "composition bounds only" in note for note in notes)


def test_auto_without_the_last_iterate_accountant_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, LAST_ITERATE_MODULE, None)  # import fails as in a build without it
    sampler = samplers.sgld(0.02, batching="poisson", sampling_rate=0.25, clip_norm=1.0)
    claims, notes = _auto_bounds(logistic_regression(1.0, 1), PAIRS["add-remove"], sampler, [5], 1e-3)
    assert "last iterate (sampler)" not in claims and {"PLD (sampler)", "RDP (sampler)"} <= set(claims)
    assert any("no last-iterate accountant in this build" in note for note in notes)

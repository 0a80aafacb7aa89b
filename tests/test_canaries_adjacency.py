"""Canaries keep the pair's adjacency (issue 38, item 3): built from a replace-one pair, the
helpers' canaries are replace-one and differ from their counterpart by replace-one's
sensitivity (2C for a gradient canary, not add/remove's C); a canary of the wrong adjacency is
refused with the reason; a search where nothing certifies says so, and how many pairs would.

Independent check of the sensitivity: one coupled ULA step from a common start moves D's and
D''s chains apart by exactly drift_coef * (clip g_D(x0) - clip g_D'(x0)) (the noise is shared),
which for the gradient canary is gamma * 2C along its direction (closed form)."""
from __future__ import annotations

import numpy as np
import pytest

import dpjax
from dpjax import run_coupled, samplers
from dpjax.canaries import candidates_in_box, gradient_canary, mislabelled_canary, out_of_distribution_canary, record_gradients, search_canaries
from dpjax.models import bayesian_linear_regression, gaussian_mean, gaussian_mean_dataset, logistic_regression
from dpjax.models import logistic_regression_dataset, regression_dataset

CLIP, GAMMA = 1.0, 0.05


def _logistic(n=60):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 2)) * np.array([1.0, 0.3])
    y = (x[:, 0] + 0.2 * rng.normal(size=n) > 0).astype(float)
    return logistic_regression_dataset(x, y), logistic_regression(1.0, 2)


def _clipped(model, record, positions):
    g = record_gradients(model, record, positions)
    return g * np.minimum(1.0, CLIP / np.linalg.norm(g, axis=1))[:, None]


def _regression(n=50):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(n, 2)) * np.array([1.0, 0.05])
    return regression_dataset(x, x[:, 0] + 0.1 * rng.normal(size=n)), bayesian_linear_regression(1.0, 1.0, dim=2)


def test_a_gradient_canary_of_a_replace_one_pair_is_replace_one_with_twice_the_sensitivity():
    data, model = _regression()
    pair = dpjax.replace_one(data, 3, {"x": np.asarray(data["x"][3]) + 0.1, "y": float(data["y"][3])})
    visited = np.random.default_rng(1).normal(size=(300, 2))
    canary = gradient_canary(model, pair, CLIP, visited, direction="least-variance")
    assert canary.adjacency == "replace-one" and canary.index == 3 and canary.counterpart is not None
    # the two records' clipped gradients are C u and -C u at every visited position: 2C apart
    np.testing.assert_allclose(_clipped(model, canary.record, visited), np.broadcast_to(CLIP * canary.direction, (300, 2)), atol=1e-9)
    np.testing.assert_allclose(_clipped(model, canary.counterpart, visited), np.broadcast_to(-CLIP * canary.direction, (300, 2)), atol=1e-9)
    check = canary.verify(model, visited, CLIP)
    assert check["holds"] and check["counterpart_clipped_share"] == 1.0 and check["counterpart_largest_angle"] <= 1e-6
    # the pair it builds differs in record 3 only, and one coupled step moves the chains gamma 2C apart
    built = canary.pair(pair)
    assert built.adjacency == "replace-one" and built.index == 3
    sampler = samplers.ula(GAMMA, clip_norm=CLIP)
    one = run_coupled(0, model, built, sampler, num_pairs=8, num_steps=1, progress=False)
    gap = one.neighbour_positions[-1] - one.positions[-1]
    np.testing.assert_allclose(np.abs(gap @ canary.direction), GAMMA * 2 * CLIP, rtol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(gap, axis=1), GAMMA * 2 * CLIP, rtol=1e-9)
    # the add/remove canary (what the helper gave before on any pair) moves them half as far
    added = gradient_canary(model, data, CLIP, visited, direction="least-variance")
    assert added.adjacency == "add-remove"
    half = run_coupled(0, model, added.pair(data), sampler, num_pairs=8, num_steps=1, progress=False)
    np.testing.assert_allclose(np.linalg.norm(half.neighbour_positions[-1] - half.positions[-1], axis=1), GAMMA * CLIP, rtol=1e-9)
    # and it is refused on the replace-one pair, with the reason
    with pytest.raises(ValueError, match="the canary is add-remove but the pair is replace-one"):
        added.pair(pair)


def test_a_replace_one_gradient_canary_that_does_not_exist_is_refused_with_the_reason():
    # logistic loss: where theta . u keeps one sign, a record's gradient is large along one
    # direction only (misclassified records all push the same way), so no opposite pair exists
    data, model = _logistic()
    pair = dpjax.replace_one(data, 3, {"x": np.asarray(data["x"][3]) + 0.1, "y": float(data["y"][3])})
    visited = np.random.default_rng(1).normal(loc=[1.0, 0.0], scale=0.1, size=(200, 2))
    with pytest.raises(ValueError, match="replace-one needs both"):
        gradient_canary(model, pair, CLIP, visited, direction="most-variance")


def test_an_out_of_distribution_canary_of_a_replace_one_pair_replaces_the_pairs_record():
    data, model = _logistic()
    pair = dpjax.replace_one(data, 5, {"x": np.zeros(2), "y": 1.0})
    canary = out_of_distribution_canary(pair, scale=4.0, fit_weights=[1.0, 0.0])
    assert canary.adjacency == "replace-one" and canary.index == 5
    built = canary.pair(pair)
    np.testing.assert_allclose(np.asarray(built.neighbour["x"][5]), canary.record["x"])
    np.testing.assert_allclose(np.asarray(built.dataset["x"][5]), -canary.record["x"])  # the mirror in D
    # at theta = 0 (the free axis' centre) the logistic gradients (1/2 - y) x of the canary and of
    # its mirror (-x, same y) are opposite: their difference is their sum in norm, 2 x 4 / 2 = 4
    g_canary = record_gradients(model, canary.record, np.zeros((1, 2)))[0]
    g_mirror = record_gradients(model, canary.counterpart, np.zeros((1, 2)))[0]
    assert np.linalg.norm(g_canary - g_mirror) == pytest.approx(np.linalg.norm(g_canary) + np.linalg.norm(g_mirror), rel=1e-12)
    assert np.linalg.norm(g_canary - g_mirror) == pytest.approx(4.0, rel=1e-12)
    with pytest.raises(ValueError, match=r"adjacency='add-remove' but the pair is replace-one"):
        out_of_distribution_canary(pair, adjacency="add-remove")
    with pytest.raises(ValueError, match=r"adjacency='replace-one' needs index="):
        out_of_distribution_canary(data, adjacency="replace-one")


def test_a_mislabelled_canary_refuses_an_add_remove_pair_and_says_why():
    data, _ = _logistic()
    with pytest.raises(ValueError, match="a mislabelled canary is a replace-one neighbour"):
        mislabelled_canary(dpjax.add_remove(data, 0))
    canary = mislabelled_canary(dpjax.replace_one(data, 2, {"x": np.asarray(data["x"][2]), "y": 1.0 - float(data["y"][2])}))
    assert canary.adjacency == "replace-one" and canary.index == 2 and float(canary.record["y"]) == 1.0 - float(data["y"][2])


def test_a_search_where_nothing_certifies_says_so_and_how_many_pairs_would():
    from dpjax.estimators import pairs_needed

    data = gaussian_mean_dataset(np.linspace(-1, 1, 20))
    model = gaussian_mean(dim=1, prior_precision=1.0)
    # records a hair from record 0 (x = -1): each leaks almost nothing, 300 pairs certify 0
    candidates = candidates_in_box({"x": np.array([-1.0])}, {"x": np.array([-0.9])}, 2, adjacency="replace-one", index=0)
    search = search_canaries(model, data, samplers.ula(0.02), candidates, num_pairs=300, num_steps=10, delta=1e-2)
    assert all(r["certified"] == 0 for r in search.ranking)
    assert "no candidate certifies anything" in search.note and "no candidate certifies anything" in " ".join(repr(search).split())
    best = search.ranking[0]["estimate"]
    if best > 0:  # the plan: what pairs_needed says for 90% of the best estimate, more than the pilot had
        assert search.plan.pairs == pairs_needed(best, 1e-2, fraction=0.9).pairs > 300
        assert f"{int(search.plan.pairs):,} pilot pairs" in search.note

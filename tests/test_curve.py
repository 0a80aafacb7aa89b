"""PrivacyCurve: pytree behaviour, queries from RDP and from a profile, composition, provenance.

The profile checks use the exact delta(eps) of the Gaussian mechanism (Balle & Wang 2018,
Thm 8) as ground truth: reading a profile on a grid must never certify more privacy than
the truth (conservative both ways), and must be within one grid step of it.
"""
from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq
from scipy.stats import norm

from dpjax.accountants import PrivacyCurve, Provenance, rdp_to_delta, rdp_to_epsilon

PROV = Provenance("test curve", mode="exact", assumptions=["a", "b"], released="last iterate")


def gaussian_exact_delta(sigma, eps):
    mu = 1.0 / sigma
    return norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * norm.cdf(-eps / mu - mu / 2)


def gaussian_exact_epsilon(sigma, delta):
    return brentq(lambda e: gaussian_exact_delta(sigma, e) - delta, 0.0, 200.0, xtol=1e-14)


def rdp_curve(rdp=None, orders=None, prov=PROV):
    orders = np.array([1.5, 2.0, 4.0, 16.0, 64.0]) if orders is None else orders
    rdp = orders / 8.0 if rdp is None else rdp
    return PrivacyCurve.from_rdp(orders, rdp, prov)


# --- pytree -----------------------------------------------------------------------------------
def test_pytree_round_trip_keeps_float64_leaves_and_provenance():
    curve = rdp_curve(rdp=np.array([[0.1, 0.2, 0.3, 0.4, 0.5], [1, 2, 3, 4, 5]], dtype=np.float32))
    leaves, treedef = jax.tree_util.tree_flatten(curve)
    assert len(leaves) == 2 and all(leaf.dtype == np.float64 for leaf in leaves)
    back = jax.tree_util.tree_unflatten(treedef, leaves)
    assert back.provenance == curve.provenance
    np.testing.assert_array_equal(back.rdp, curve.rdp)
    doubled = jax.tree_util.tree_map(lambda x: 2 * x, curve)
    np.testing.assert_array_equal(doubled.rdp, 2 * curve.rdp)
    assert isinstance(hash(curve.provenance), int)  # static metadata must hash (lists coerced)
    assert curve.provenance.assumptions == ("a", "b")
    with jax.enable_x64(True):
        through_jit = jax.jit(lambda c: c)(curve)
    np.testing.assert_array_equal(np.asarray(through_jit.rdp), curve.rdp)
    assert through_jit.provenance == PROV


def test_profile_curve_is_a_pytree():
    curve = PrivacyCurve.from_profile([0.0, 1.0, 2.0], [0.5, 0.1, 0.01], PROV)
    leaves, treedef = jax.tree_util.tree_flatten(curve)
    assert len(leaves) == 2
    assert jax.tree_util.tree_unflatten(treedef, leaves).delta(1.5) == 0.1


# --- queries ----------------------------------------------------------------------------------
def test_queries_from_rdp_match_the_conversions_and_batch_axes():
    rng = np.random.default_rng(0)
    orders = np.array([1.5, 2.0, 4.0, 16.0, 64.0])
    rdp = rng.uniform(0, 1, (3, 5)) * orders
    curve = PrivacyCurve.from_rdp(orders, rdp, PROV)
    np.testing.assert_array_equal(curve.epsilon(1e-5), rdp_to_epsilon(orders, rdp, 1e-5))
    np.testing.assert_array_equal(curve.delta(1.0, "mironov"), rdp_to_delta(orders, rdp, 1.0, "mironov"))
    assert curve.epsilon(1e-5).shape == (3,)
    for i in range(3):
        assert curve.epsilon(1e-5)[i] == PrivacyCurve.from_rdp(orders, rdp[i], PROV).epsilon(1e-5)


@pytest.mark.parametrize("sigma", [0.8, 3.0])
def test_profile_queries_are_conservative_and_within_a_grid_step(sigma):
    grid = np.linspace(0.0, 12.0, 241)  # step 0.05
    profile = PrivacyCurve.from_profile(grid, gaussian_exact_delta(sigma, grid), PROV)
    for delta in [1e-2, 1e-5, 1e-9]:
        exact = gaussian_exact_epsilon(sigma, delta)
        got = profile.epsilon(delta)
        assert exact <= got <= exact + 0.05 + 1e-12
    for eps in [0.03, 0.5, 2.27]:
        exact = gaussian_exact_delta(sigma, eps)
        got = profile.delta(eps)
        assert exact <= got <= gaussian_exact_delta(sigma, eps - 0.05)


def test_profile_edges_and_running_minimum():
    profile = PrivacyCurve.from_profile([0.5, 1.0, 2.0], [0.3, 0.05, 0.2], PROV)  # non-monotone
    assert profile.delta(0.1) == 1.0  # below the grid: no guarantee
    assert profile.delta(2.5) == 0.05  # (1.0, 0.05) also certifies eps = 2.5
    assert profile.epsilon(0.01) == np.inf
    assert profile.epsilon(0.06) == 1.0
    batched = PrivacyCurve.from_profile([0.5, 1.0], [[0.3, 0.1], [0.2, 0.01]], PROV)
    np.testing.assert_array_equal(batched.delta(0.7), [0.3, 0.2])
    np.testing.assert_array_equal(batched.delta(np.array([0.7, 1.0])), [0.3, 0.01])
    np.testing.assert_array_equal(batched.epsilon(0.15), [1.0, 1.0])


def test_rdp_to_profile_and_back_is_conservative():
    sigma = 2.0
    orders = np.concatenate([np.linspace(1.05, 11, 100), np.arange(12, 200)])
    curve = PrivacyCurve.from_rdp(orders, orders / (2 * sigma**2), PROV)
    grid = np.linspace(0, 10, 201)
    profile = curve.to_profile(grid)
    assert profile.provenance.result == "profile of [test curve]"
    for delta in [1e-3, 1e-6]:
        e_rdp = curve.epsilon(delta)
        assert e_rdp <= profile.epsilon(delta) <= e_rdp + 0.05 + 1e-12
        assert profile.epsilon(delta) >= gaussian_exact_epsilon(sigma, delta)
    for eps in [0.3, 1.7]:
        assert profile.delta(eps) >= curve.delta(eps) >= gaussian_exact_delta(sigma, eps)


def test_rdp_at():
    curve = rdp_curve()
    np.testing.assert_array_equal(curve.rdp_at([2.0, 64.0]), [0.25, 8.0])
    with pytest.raises(ValueError, match="order 3.0 is not among"):
        curve.rdp_at(3.0)


# --- composition ------------------------------------------------------------------------------
@settings(max_examples=30, deadline=None)
@given(
    a=st.lists(st.floats(0, 50), min_size=5, max_size=5),
    b=st.lists(st.floats(0, 50), min_size=5, max_size=5),
    times=st.integers(1, 1000),
)
def test_composition_adds_and_only_loses_privacy(a, b, times):
    c1, c2 = rdp_curve(np.array(a)), rdp_curve(np.array(b))
    both = c1.compose(c2)
    np.testing.assert_array_equal(both.rdp, np.array(a) + np.array(b))
    assert both.epsilon(1e-5) >= max(c1.epsilon(1e-5), c2.epsilon(1e-5))
    assert both.delta(1.0) >= max(c1.delta(1.0), c2.delta(1.0))
    np.testing.assert_allclose(c1.self_compose(times).rdp, times * np.array(a), rtol=1e-15)
    assert not np.isnan(both.epsilon(1e-5))


def test_composition_provenance():
    other = rdp_curve(prov=Provenance("other", mode="exact", assumptions=("b", "c")))
    both = rdp_curve().compose(other)
    assert both.provenance.result == "composition of [test curve] and [other]"
    assert both.provenance.mode == "exact"
    assert both.provenance.assumptions == ("a", "b", "c")
    mixed = rdp_curve().compose(rdp_curve(prov=Provenance("x", mode="bound")))
    assert mixed.provenance.mode == "bound"
    assert rdp_curve().self_compose(3).provenance.result == "3-fold composition of [test curve]"
    assert "releases last iterate" in PROV.describe() and "assumes a; b" in PROV.describe()


def test_zcdp_curve():
    orders = np.array([2.0, 8.0])
    curve = PrivacyCurve.from_zcdp(0.25, orders, PROV)
    np.testing.assert_array_equal(curve.rdp, [0.5, 2.0])


# --- errors -----------------------------------------------------------------------------------
def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="violate order > 1"):
        PrivacyCurve.from_rdp([0.5, 2.0], [0.1, 0.2], PROV)
    with pytest.raises(ValueError, match="rdp values must be >= 0 and not NaN"):
        PrivacyCurve.from_rdp([2.0], [np.nan], PROV)
    with pytest.raises(ValueError, match="epsilons must be a non-empty increasing"):
        PrivacyCurve.from_profile([1.0, 0.5], [0.1, 0.2], PROV)
    with pytest.raises(ValueError, match="deltas must lie in"):
        PrivacyCurve.from_profile([0.5, 1.0], [0.1, 1.2], PROV)
    with pytest.raises(ValueError, match="curves must share the same orders"):
        rdp_curve().compose(rdp_curve(orders=np.array([1.5, 2.0, 4.0, 16.0, 65.0])))
    profile = PrivacyCurve.from_profile([0.5], [0.1], PROV)
    with pytest.raises(ValueError, match="composition needs RDP values"):
        profile.compose(profile)
    with pytest.raises(ValueError, match="delta=0.0 violates 0 < delta < 1"):
        profile.epsilon(0.0)
    with pytest.raises(ValueError, match="epsilon=-1.0 violates epsilon >= 0"):
        profile.delta(-1.0)
    with pytest.raises(ValueError, match="times=0 violates"):
        rdp_curve().self_compose(0)
    assert dataclasses.replace(PROV, mode="strict").mode == "strict"

"""Girsanov accountant (paper 001): hand-computed values, conversions, soundness against the
exact divergences of the closed-form case, and the assumption checks."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpjax.accountants.samplers import girsanov as g
from dpjax.accountants.curve import Provenance

# One parameter set for the hand computations: c = 0.5, mu = 1, L = 2, gamma = 0.2
# (2 mu / L^2 = 0.5), beta = 2, s = 4, n = 50, order a = 3. D = mu - gamma L^2 / 2 = 0.6.
C_, MU, L_, GAMMA, BETA, S, N, A = 0.5, 1.0, 2.0, 0.2, 2.0, 4, 50, 3.0


def rdp3(curve):
    return float(curve.rdp_at([A])[0])


# ------------------------------------------------------------------------------------------
# values computed by hand from the printed formulas
def test_thm52_by_hand():
    # paper: C3 = c^2 (2(L+1)/D + 1)^2 = 0.25 * (2*3/0.6 + 1)^2 = 0.25 * 11^2 = 30.25
    assert g.thm52_constant(C_, MU, L_, GAMMA, "paper") == pytest.approx(30.25, rel=1e-14)
    assert rdp3(g.thm52_ula_last_iterate(C_, MU, L_, GAMMA)) == pytest.approx(3 * 30.25 / 4, rel=1e-14)
    # strict: (2c(L+1)/D + 2c)^2 = (2*0.5*3/0.6 + 1)^2 = 6^2 = 36
    assert g.thm52_constant(C_, MU, L_, GAMMA, "strict") == pytest.approx(36.0, rel=1e-14)
    assert rdp3(g.thm52_ula_last_iterate(C_, MU, L_, GAMMA, mode="strict")) == pytest.approx(27.0, rel=1e-14)


def test_thm54_by_hand():
    # C5 = n gamma c^2 = 50 * 0.2 * 0.25 = 2.5; RDP_3 = 3 * 2.5 / 4
    assert g.thm54_constant(C_, GAMMA, N) == pytest.approx(2.5, rel=1e-14)
    assert rdp3(g.thm54_ula_path(C_, GAMMA, N)) == pytest.approx(1.875, rel=1e-14)


def test_thm56_by_hand():
    # beta times Thm 5.2's constants: 2 * 30.25 = 60.5 (paper), 2 * 36 = 72 (strict)
    assert g.thm56_constant(C_, MU, L_, GAMMA, BETA, "paper") == pytest.approx(60.5, rel=1e-14)
    assert g.thm56_constant(C_, MU, L_, GAMMA, BETA, "strict") == pytest.approx(72.0, rel=1e-14)
    assert rdp3(g.thm56_sgld_last_iterate(C_, MU, L_, GAMMA, inverse_temperature=BETA)) == pytest.approx(45.375, rel=1e-14)


def test_thm57_by_hand():
    # paper: (beta c^2 / s^2)(2(L+1)/D + 1)^2 = (2 * 0.25 / 16) * 121 = 3.78125
    assert g.thm57_constant(C_, MU, L_, GAMMA, S, BETA, "paper") == pytest.approx(3.78125, rel=1e-14)
    # strict: (beta / s^2)(2c(L+1)/D + 2c)^2 = (2/16) * 36 = 4.5
    assert g.thm57_constant(C_, MU, L_, GAMMA, S, BETA, "strict") == pytest.approx(4.5, rel=1e-14)
    curve = g.thm57_sgld_last_iterate(C_, MU, L_, GAMMA, S, inverse_temperature=BETA, mode="strict")
    assert rdp3(curve) == pytest.approx(3 * 4.5 / 4, rel=1e-14)


def test_thm58_by_hand():
    # (beta c^2 / s^2) n gamma = (2 * 0.25 / 16) * 10 = 0.3125
    assert g.thm58_constant(C_, GAMMA, N, S, BETA) == pytest.approx(0.3125, rel=1e-14)
    assert rdp3(g.thm58_sgld_path(C_, GAMMA, N, S, inverse_temperature=BETA)) == pytest.approx(3 * 0.3125 / 4, rel=1e-14)


def test_prop45_prop46_and_window_by_hand():
    # Prop 4.5: c^2 beta T = 0.25 * 2 * 3 = 1.5
    assert rdp3(g.prop45_path(C_, 3.0, inverse_temperature=BETA)) == pytest.approx(3 * 1.5 / 4, rel=1e-14)
    # Prop 4.6 with C = 0.4, L = 2, c = 0.5, beta = 2: 2 (0.4 * 3 + 0.5)^2 = 2 * 1.7^2 = 5.78
    assert g.last_value_constant(0.4, 2.0, 0.5, 2.0) == pytest.approx(5.78, rel=1e-14)
    assert rdp3(g.prop46_last_value(0.4, 2.0, 0.5, inverse_temperature=2.0)) == pytest.approx(3 * 5.78 / 4, rel=1e-14)
    # window: tau* = 0.4 / (2 * 0.4 + 0.5) = 0.4 / 1.3; C(tau*) = 4 beta C (L C + c) = 4 * 2 * 0.4 * 1.3 = 4.16
    assert g.optimal_window(0.4, 2.0, 0.5) == pytest.approx(0.4 / 1.3, rel=1e-14)
    assert g.windowed_last_value_constant(0.4, 2.0, 0.5, "optimal", 2.0) == pytest.approx(4.16, rel=1e-14)
    # window 1 reproduces Prop 4.6; window 0.5: 2 * 0.5 * (0.8 + 0.5 + 0.8)^2 = 4.41
    assert g.windowed_last_value_constant(0.4, 2.0, 0.5, 1.0, 2.0) == pytest.approx(5.78, rel=1e-14)
    assert g.windowed_last_value_constant(0.4, 2.0, 0.5, 0.5, 2.0) == pytest.approx(4.41, rel=1e-14)
    # horizon 0.2 < tau*: Prop 4.5's 0.25 * 2 * 0.2 = 0.1; horizon 0.5: min(4.16, 0.25) = 0.25
    assert g.windowed_last_value_constant(0.4, 2.0, 0.5, "optimal", 2.0, horizon=0.2) == pytest.approx(0.1, rel=1e-14)
    assert g.windowed_last_value_constant(0.4, 2.0, 0.5, "optimal", 2.0, horizon=0.5) == pytest.approx(0.25, rel=1e-14)
    w = g.prop46_last_value(0.4, 2.0, 0.5, inverse_temperature=2.0, window="optimal")
    assert rdp3(w) == pytest.approx(3 * 4.16 / 4, rel=1e-14)
    assert "not in the paper" in w.provenance.result


def test_synchronous_distance_by_hand():
    # 2c / (s D) = 1 / (4 * 0.6)
    assert g.synchronous_distance(C_, MU, L_, GAMMA, S) == pytest.approx(1 / 2.4, rel=1e-14)
    # Thm 5.2 strict with the optimal window: C_s = 1/0.6, c' = 1, L = 2:
    # 4 C_s (L C_s + c') = 4 / 0.6 * (2 / 0.6 + 1) = 28.888...
    curve = g.thm52_ula_last_iterate(C_, MU, L_, GAMMA, mode="strict", window="optimal")
    assert rdp3(curve) / 3 * 4 == pytest.approx(4 / 0.6 * (2 / 0.6 + 1), rel=1e-13)


def test_epsilon_closed_form_by_hand():
    # C = 4, delta = e^-9: C/4 + sqrt(C * 9) = 1 + 6 = 7; printed 5.7/5.8 form: 4 + 6 = 10
    assert g.girsanov_epsilon(4.0, math.exp(-9.0)) == pytest.approx(7.0, rel=1e-14)
    assert g.girsanov_epsilon(4.0, math.exp(-9.0), "printed_without_quarter") == pytest.approx(10.0, rel=1e-14)


def test_provenance_modes_and_released():
    p = g.thm52_ula_last_iterate(C_, MU, L_, GAMMA, mode="strict").provenance
    assert (p.result, p.mode, p.released) == ("paper 001 Theorem 5.2", "strict", "last iterate")
    assert g.thm58_sgld_path(C_, GAMMA, N, S).provenance.released == "path"
    assert any("no amplification" in a for a in g.thm57_sgld_last_iterate(C_, MU, L_, GAMMA, S).provenance.assumptions)


def test_user_orders_are_added_to_the_grid():
    curve = g.thm54_ula_path(C_, GAMMA, N, orders=[1.5, 3000.0])
    assert 3000.0 in curve.orders and 1.5 in curve.orders and curve.orders.size >= g.DEFAULT_ORDERS.size
    assert float(curve.rdp_at([3000.0])[0]) == pytest.approx(3000 * 2.5 / 4, rel=1e-14)


# ------------------------------------------------------------------------------------------
# the curve's (eps, delta) conversion against the closed form
@settings(max_examples=60, deadline=None)
@given(C=st.floats(1e-3, 1e3), log10_delta=st.floats(-10, -2))
def test_curve_conversion_agrees_or_is_tighter(C, log10_delta):
    delta = 10.0**log10_delta
    closed = C / 4 + math.sqrt(C * math.log(1 / delta))
    curve = g.girsanov_curve(C, Provenance("test"))
    # Mironov's conversion on the grid: min_a a C/4 + log(1/delta)/(a-1), written out here;
    # its continuous minimum is exactly the closed form, so on a grid it can only be larger.
    a = g.DEFAULT_ORDERS
    mironov_by_hand = np.min(a * C / 4 + math.log(1 / delta) / (a - 1))
    assert float(curve.epsilon(delta, "mironov")) == pytest.approx(mironov_by_hand, rel=1e-12)
    assert mironov_by_hand >= closed * (1 - 1e-12)
    # the default conversion (Balle et al. 2020) is at least as tight as the closed form
    assert float(curve.epsilon(delta)) <= closed * (1 + 1e-12)


# ------------------------------------------------------------------------------------------
# soundness against the exact divergences of paper 001's closed-form case (NOTES 001):
# K = mu x^2/2, V_D = -a_D x, a_D - a_D' = 2c, 1-D. The exact laws are computed here by the
# mean/variance recursion of the AR(1) chain (not by the geometric-series closed forms).
def exact_last_by_recursion(gap_per_step, gamma, mu, n, beta):
    """RDP_a / a between N(m_D, v) and N(m_D', v) after n steps of
    x' = (1 - gamma mu) x + gamma a + sqrt(2 gamma / beta) z from a common start."""
    rho = 1.0 - gamma * mu
    dm, v = 0.0, 0.0
    for _ in range(n):
        dm = rho * dm + gap_per_step
        v = rho * rho * v + 2.0 * gamma / beta
    return dm * dm / (2.0 * v)


def exact_path_by_composition(gap_per_step, gamma, n, beta):
    """n Gaussian mechanisms, each with mean gap g and variance 2 gamma / beta: n g^2 / (2 * 2 gamma / beta)."""
    return n * gap_per_step**2 / (2.0 * (2.0 * gamma / beta))


def test_recursion_helper_against_gaussian_renyi():
    from dpjax.accountants.mechanisms.gaussian_divergence import gaussian_renyi

    gamma, mu, c, n, a = 0.3, 1.5, 0.7, 7, 4.0
    rho = 1 - gamma * mu
    dm = 2 * c * gamma * sum(rho**j for j in range(n))
    v = 2 * gamma * sum(rho ** (2 * j) for j in range(n))
    expected = float(gaussian_renyi(0.0, v, dm, v, a)) / a
    assert exact_last_by_recursion(2 * c * gamma, gamma, mu, n, 1.0) == pytest.approx(expected, rel=1e-12)


closed_form_case = dict(
    mu=st.floats(0.01, 10.0),
    l_over_mu=st.floats(1.0, 4.0),
    step_fraction=st.floats(0.01, 0.99),
    c=st.floats(0.01, 10.0),
    n=st.integers(1, 3000),
)


@settings(max_examples=40, deadline=None)
@given(**closed_form_case)
def test_ula_bounds_dominate_exact(mu, l_over_mu, step_fraction, c, n):
    L = mu * l_over_mu  # grad K = mu x is mu-Lipschitz, so any L >= mu is admissible
    gamma = step_fraction * 2 * mu / L**2
    exact_last = exact_last_by_recursion(2 * c * gamma, gamma, mu, n, 1.0)
    exact_path = exact_path_by_composition(2 * c * gamma, gamma, n, 1.0)
    a = 2.0
    for mode in ("paper", "strict"):
        bound = float(g.thm52_ula_last_iterate(c, mu, L, gamma, mode=mode, orders=[a]).rdp_at([a])[0]) / a
        assert bound >= exact_last
    for num_steps in (n, None):  # window capped at the horizon n gamma, and uncapped
        windowed = g.thm52_ula_last_iterate(c, mu, L, gamma, mode="strict", window="optimal", num_steps=num_steps, orders=[a])
        assert float(windowed.rdp_at([a])[0]) / a >= exact_last * (1 - 1e-12)
    # Thm 5.4 with its c = |grad U_D - grad U_D'| = 2c is the exact path divergence (Gaussian
    # mechanism composed n times): equal up to rounding, and never below.
    path = float(g.thm54_ula_path(2 * c, gamma, n, orders=[a]).rdp_at([a])[0]) / a
    assert path == pytest.approx(exact_path, rel=1e-12)
    assert path >= exact_path * (1 - 1e-12)
    # Prop 4.5 on [0, n gamma] with drift gap 2c, and Prop 4.6 with this case's true
    # synchronous distance sup_k |e_k| (computed by recursion) and L, c' = 2c from eq. 20.
    assert float(g.prop45_path(2 * c, n * gamma, orders=[a]).rdp_at([a])[0]) / a >= exact_path * (1 - 1e-12)
    rho, e, sup_e = 1 - gamma * mu, 0.0, 0.0
    for _ in range(n):
        e = rho * e + 2 * c * gamma
        sup_e = max(sup_e, abs(e))
    prop46 = float(g.prop46_last_value(sup_e, L, 2 * c, orders=[a]).rdp_at([a])[0]) / a
    assert prop46 >= exact_last
    assert sup_e <= g.synchronous_distance(c, mu, L, gamma) * (1 + 1e-12)  # eq. 117 holds here


@settings(max_examples=40, deadline=None)
@given(**closed_form_case, s=st.integers(1, 64), beta=st.floats(0.1, 10.0))
def test_sgld_bounds_dominate_exact(mu, l_over_mu, step_fraction, c, n, s, beta):
    """SGLD with per-record terms -a_i x, |a_i| <= c, the differing record in every batch:
    mean gap 2 c gamma / s per step, noise variance 2 gamma / beta."""
    L = mu * l_over_mu
    gamma = step_fraction * 2 * mu / L**2
    gap = 2 * c * gamma / s
    exact_last = exact_last_by_recursion(gap, gamma, mu, n, beta)
    exact_path = exact_path_by_composition(gap, gamma, n, beta)
    a = 3.0
    for mode in ("paper", "strict"):
        b56 = g.thm56_sgld_last_iterate(c, mu, L, gamma, inverse_temperature=beta, mode=mode, orders=[a])
        b57 = g.thm57_sgld_last_iterate(c, mu, L, gamma, s, inverse_temperature=beta, mode=mode, orders=[a])
        assert float(b56.rdp_at([a])[0]) / a >= exact_last
        assert float(b57.rdp_at([a])[0]) / a >= exact_last
    # The theorems cover every batch sequence, including ones that skip the differing record:
    # with 1 - gamma mu < 0, skipping alternate steps gives a larger mean gap than never skipping.
    rho = 1 - gamma * mu
    for phase in (0, 1):
        dm, v = 0.0, 0.0
        for i in range(n):
            dm = rho * dm + (gap if i % 2 == phase else 0.0)
            v = rho * rho * v + 2 * gamma / beta
        skipping = dm * dm / (2 * v)
        assert float(g.thm57_constant(c, mu, L, gamma, s, beta, "paper")) / 4 >= skipping
    for num_steps in (n, None):
        w57 = g.thm57_sgld_last_iterate(c, mu, L, gamma, s, inverse_temperature=beta, mode="strict", window="optimal", num_steps=num_steps, orders=[a])
        assert float(w57.rdp_at([a])[0]) / a >= exact_last * (1 - 1e-12)
    b58 = float(g.thm58_sgld_path(2 * c, gamma, n, s, inverse_temperature=beta, orders=[a]).rdp_at([a])[0]) / a
    assert b58 == pytest.approx(exact_path, rel=1e-12)
    assert b58 >= exact_path * (1 - 1e-12)


def test_printed_drift_gap_is_not_a_valid_same_point_gap():
    """Why the window needs mode='strict': eq. 20 holds with c' = 2c here, not the printed c.
    One ULA step (mu = L = 1, gamma = 0.5, c = 1) has exact RDP_a / a = c^2 gamma = 0.5
    (mean gap 2 c gamma, variance 2 gamma), while Prop 4.5 with gap c gives c^2 gamma / 4."""
    exact = exact_last_by_recursion(2 * 1.0 * 0.5, 0.5, 1.0, 1, 1.0)
    assert exact == pytest.approx(0.5, rel=1e-14)
    assert g.path_constant(1.0, 0.5) / 4 < exact  # the printed gap would be unsound
    assert g.path_constant(2.0, 0.5) / 4 >= exact
    with pytest.raises(ValueError, match=r"mode='paper' violates mode='strict' required by the windowed Proposition 4\.6"):
        g.thm52_ula_last_iterate(1.0, 1.0, 1.0, 0.5, mode="paper", window="optimal", num_steps=1)


# ------------------------------------------------------------------------------------------
# assumption checks: each error names the argument, the value and the rule
def test_step_size_rule_is_cited():
    with pytest.raises(ValueError, match=r"step_size=0\.3 violates step_size < 2 mu / L\^2 = 0\.2 required by Theorem 5\.2"):
        g.thm52_constant(1.0, 0.4, 2.0, 0.3)
    with pytest.raises(ValueError, match=r"step_size=0\.5 violates step_size < 2 mu / L\^2 = 0\.5 required by Theorem 5\.6"):
        g.thm56_sgld_last_iterate(1.0, 1.0, 2.0, 0.5)
    with pytest.raises(ValueError, match=r"required by Theorem 5\.7"):
        g.thm57_constant(1.0, 1.0, 1.0, 2.0, 3)


@pytest.mark.parametrize(
    "call, pattern",
    [
        (lambda: g.thm52_constant(1.0, 0.0, 1.0, 0.1), r"strong_convexity=0 violates strong_convexity > 0 required by Theorem 5\.2"),
        (lambda: g.thm52_constant(1.0, -1.0, 1.0, 0.1), r"strong_convexity=-1 violates strong_convexity > 0"),
        (lambda: g.thm52_constant(1.0, 2.0, 1.0, 0.1), r"smoothness=1 violates smoothness >= strong_convexity = 2 \(L >= mu"),
        (lambda: g.thm52_constant(-1.0, 1.0, 1.0, 0.1), r"grad_bound=-1 violates grad_bound >= 0 required by Theorem 5\.2"),
        (lambda: g.thm52_constant(1.0, 1.0, 1.0, 0.0), r"step_size=0 violates step_size > 0"),
        (lambda: g.thm52_constant(1.0, 1.0, 1.0, 0.1, mode="loose"), r"mode='loose' is not one of"),
        (lambda: g.thm54_constant(1.0, 0.1, 0), r"num_steps=0 violates num_steps >= 1 required by Theorem 5\.4"),
        (lambda: g.thm54_constant(-0.1, 0.1, 3), r"grad_gap=-0.1 violates grad_gap >= 0 required by Theorem 5\.4"),
        (lambda: g.thm56_constant(1.0, 1.0, 1.0, 0.1, inverse_temperature=0.0), r"inverse_temperature=0 violates inverse_temperature > 0"),
        (lambda: g.thm57_constant(1.0, 1.0, 1.0, 0.1, 0), r"batch_size=0 violates batch_size >= 1 required by Theorem 5\.7"),
        (lambda: g.thm58_constant(1.0, 0.1, 10, 0), r"batch_size=0 violates batch_size >= 1 required by Theorem 5\.8"),
        (lambda: g.path_constant(1.0, -2.0), r"horizon=-2 violates horizon >= 0 required by Proposition 4\.5"),
        (lambda: g.last_value_constant(-0.1, 1.0, 1.0), r"sync_distance=-0.1 violates sync_distance >= 0 required by Proposition 4\.6"),
        (lambda: g.windowed_last_value_constant(1.0, 1.0, 1.0, window=-1.0), r"window=-1 violates window > 0"),
        (lambda: g.windowed_last_value_constant(1.0, 1.0, 1.0, window="best"), r"window='best' violates window 'optimal' or a positive number"),
        (lambda: g.girsanov_epsilon(1.0, 1.5), r"delta=1.5 violates 0 < delta < 1"),
        (lambda: g.girsanov_epsilon(1.0, 0.1, form="other"), r"form='other' is not one of"),
        (lambda: g.girsanov_epsilon(-1.0, 0.1), r"constant=-1 violates constant >= 0"),
        (lambda: g.thm54_ula_path(1.0, 0.1, 3, orders=[0.5]), r"violates every order finite and > 1"),
        (lambda: g.prop45_path(float("nan"), 1.0), r"drift_gap=nan violates drift_gap finite"),
    ],
)
def test_value_errors(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


@pytest.mark.parametrize(
    "call, pattern",
    [
        (lambda: g.thm57_constant(1.0, 1.0, 1.0, 0.1, 2.5), r"batch_size must be an integer"),
        (lambda: g.thm54_constant(1.0, 0.1, 3.0), r"num_steps must be an integer"),
        (lambda: g.thm52_constant("1", 1.0, 1.0, 0.1), r"grad_bound must be a real number"),
        (lambda: g.thm58_constant(1.0, 0.1, True, 1), r"num_steps must be an integer"),
    ],
)
def test_type_errors(call, pattern):
    with pytest.raises(TypeError, match=pattern):
        call()


def test_zero_sensitivity_gives_zero_curve():
    curve = g.thm52_ula_last_iterate(0.0, 1.0, 1.0, 0.1, mode="strict")
    assert np.all(curve.rdp == 0) and float(curve.epsilon(1e-5)) == 0.0

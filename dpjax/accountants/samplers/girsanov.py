"""Girsanov accountant: the path and last-iterate bounds of paper 001 (Bertazzi, Johnston,
Roberts, Durmus, "DP guarantees of MCMC algorithms"), each as a :class:`PrivacyCurve`.

Every result of paper 001 §4–5 has the same shape. A Girsanov change of measure whose drift
perturbation ``u`` satisfies ``beta * int |u_t|^2 dt <= C`` almost surely gives

* Rényi DP at every order a >= 1:  eps_a = a C / 4                    (Lemma 4.2, eqs. 19, 22)
* (eps, delta)-DP:                 eps = C/4 + sqrt(C log(1/delta))   (Lemma 4.1, Lemma B.3)

(the RDP curve is that of a Gaussian mechanism with sensitivity/sigma = sqrt(C/2); the
(eps, delta) form is what Mironov's conversion of that curve gives at its optimal order
a* = 1 + 2 sqrt(log(1/delta)/C), so the curve's default, tighter conversion never loses to
it where a* lies on the grid of orders). The results differ only in the constant C:

=========== ============ ================================================= ==================
result      released     C                                                 constants' meaning
=========== ============ ================================================= ==================
Prop 4.5    path [0,T]   beta c^2 T                                        c: same-point drift gap
Prop 4.6    last value   beta (C_s (L+1) + c)^2  (window 1)                C_s: a.s. synchronous
                         beta tau (L C_s + c + C_s/tau)^2  (window tau)    distance; (20): L, c
Thm 5.2     ULA last     paper: c^2 (2(L+1)/D + 1)^2                       c = sup|grad V_D|,
                         strict: (2c(L+1)/D + 2c)^2,  D = mu - gamma L^2/2 K mu-convex L-smooth
Thm 5.4     ULA path     n gamma c^2                                       c: |grad U_D - grad U_D'|
Thm 5.6     SGLD last    beta x (Thm 5.2's constant)                       c = sup|grad v(., d)|
Thm 5.7     SGLD last    paper: (beta c^2/s^2)(2(L+1)/D + 1)^2             + grad v constant in x
                         strict: (beta/s^2)(2c(L+1)/D + 2c)^2
Thm 5.8     SGLD path    (beta c^2/s^2) n gamma                            c: per-record grad gap
=========== ============ ================================================= ==================

``mode="paper"`` uses the printed constants; ``mode="strict"`` the constants the proofs
actually establish (NOTES 001 erratum (i)). Derivation of the strict ones (App. C.1–C.3):
the synchronous error e_n = x_n^D - x_n^D' obeys |e_{n+1}| <= (1 - gamma mu + gamma^2 L^2/2)|e_n|
+ 2 gamma c (eq. 116; the two data gradients contribute c each, or 2c/s in Thm 5.7 where only
the differing record's term survives), so C_s = 2c/D (2c/(sD) for Thm 5.7, eq. 131 with its
sign fixed); then Prop 4.6's condition (20) |f_D(x) - f_D'(y)| <= L|x - y| + c' holds with
c' = 2c (2c/s), not c, because f_D(x) - f_D'(y) = -(grad K(x) - grad K(y)) - grad V_D(x) +
grad V_D'(y). The printed constants keep c' = c. Theorems 5.7 and 5.8 print
eps = C + sqrt(C log(1/delta)) (no /4): valid but looser (erratum (ii));
:func:`girsanov_epsilon` offers it as ``form="printed_without_quarter"``.

The window variant of Prop 4.6 (``window=``) is not in the paper: the proof of Prop 4.6
(App. B.6) steers an auxiliary process onto X^D' over the last unit of time; steering over a
window tau gives |u_t| <= L C_s + c + C_s/tau on a window of length tau, hence
C(tau) = beta tau (L C_s + c + C_s/tau)^2, minimised at tau* = C_s/(L C_s + c) where
C(tau*) = 4 beta C_s (L C_s + c) (<= the window-1 constant by AM-GM). The window must fit in
the horizon T; for T <= tau the auxiliary process starts on X^D' and the bound is Prop 4.5's
beta c^2 T. Without a horizon C(tau*) is still valid uniformly in T, because for T < tau*
beta c^2 T < beta c^2 tau* <= beta c C <= C(tau*). The window is offered only with the strict
constants: with the printed drift gap c (not 2c) the T <= tau fall-back is below the exact
divergence already at n = 1 (see tests/test_girsanov.py).
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import numpy as np

from ..curve import PrivacyCurve, Provenance
from ... import _validate
from ..._floats import product as _prod

__all__ = [
    "DEFAULT_ORDERS",
    "girsanov_rdp",
    "girsanov_epsilon",
    "girsanov_curve",
    "path_constant",
    "last_value_constant",
    "windowed_last_value_constant",
    "optimal_window",
    "synchronous_distance",
    "prop45_path",
    "prop46_last_value",
    "thm52_constant",
    "thm52_ula_last_iterate",
    "thm52_limit_constant",
    "thm52_limit_constant_as_printed",
    "thm52_posterior_limit",
    "thm54_constant",
    "thm54_ula_path",
    "thm56_constant",
    "thm56_sgld_last_iterate",
    "thm57_constant",
    "thm57_sgld_last_iterate",
    "thm58_constant",
    "thm58_sgld_path",
]

# Orders 1.01 ... 1024: dense near 1 (large C), every integer to 64 (the orders other
# accountants report), geometric above (small C needs large orders: the optimal order of the
# (eps, delta) conversion is about 2 sqrt(log(1/delta)/C)).
DEFAULT_ORDERS = np.unique(
    np.concatenate(
        [
            np.linspace(1.01, 1.1, 10),
            np.linspace(1.1, 2.0, 19),
            np.arange(2.0, 65.0),
            np.geomspace(2.0, 1024.0, 91),
        ]
    ).round(12)
)

MODES = ("paper", "strict")
EPSILON_FORMS = ("girsanov", "printed_without_quarter")


# ------------------------------------------------------------------------------------------
# argument checks (each error names the argument, its value and the rule it breaks)
def _fmt(v) -> str:
    return f"{float(v):.6g}"


def _finite(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__} {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name}={value!r} violates {name} finite")
    return v


def _positive(name: str, value, where: str) -> float:
    v = _finite(name, value)
    if not v > 0:
        raise ValueError(f"{name}={_fmt(v)} violates {name} > 0 required by {where}")
    return v


def _nonnegative(name: str, value, where: str) -> float:
    v = _finite(name, value)
    if not v >= 0:
        raise ValueError(f"{name}={_fmt(v)} violates {name} >= 0 required by {where}")
    return v


def _positive_int(name: str, value, where: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer; got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name}={value} violates {name} >= {minimum} required by {where}")
    return int(value)


def _constant(value) -> float:
    """A Girsanov constant C: >= 0, and +inf allowed (a constant that overflowed float64 is a
    valid, vacuous bound: eps_a = +inf at every order)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"constant must be a real number; got {type(value).__name__} {value!r}")
    C = float(value)
    if not C >= 0:  # NaN fails too
        raise ValueError(f"constant={_fmt(C)} violates constant >= 0 (+inf allowed: no guarantee) required by the Girsanov bound")
    return C


def _mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"mode={mode!r} is not one of {MODES}")
    return mode


def _mu_l(strong_convexity, smoothness, where: str):
    """mu > 0 and L >= mu (strong monotonicity + Cauchy–Schwarz force it, eq. 114)."""
    mu = _positive("strong_convexity", strong_convexity, where)
    L = _positive("smoothness", smoothness, where)
    if L < mu:
        raise ValueError(f"smoothness={_fmt(L)} violates smoothness >= strong_convexity = {_fmt(mu)} (L >= mu, eq. 114) required by {where}")
    return mu, L


def _strongly_convex_smooth(strong_convexity, smoothness, step_size, where: str):
    """:func:`_mu_l`, and 0 < gamma < 2 mu / L^2 (eq. 113: the contraction factor is then < 1)."""
    mu, L = _mu_l(strong_convexity, smoothness, where)
    gamma = _positive("step_size", step_size, where)
    limit = _prod(2.0, mu / L, 1.0 / L)  # 2 mu / L^2 without overflowing L^2
    if not (gamma < limit and _contraction_gap(mu, L, gamma) > 0):
        raise ValueError(
            f"step_size={_fmt(gamma)} violates step_size < 2 mu / L^2 = {_fmt(limit)} required by {where} "
            f"(strong_convexity = {_fmt(mu)}, smoothness = {_fmt(L)}; eq. 113)"
        )
    return mu, L, gamma


def _contraction_gap(mu: float, L: float, gamma: float) -> float:
    """D = mu - gamma L^2 / 2 (> 0 iff gamma < 2 mu / L^2), with gamma L formed first: it is
    below 2 mu / L, so gamma L^2 does not overflow when L^2 would."""
    return mu - (gamma * L) * L / 2.0


def _orders(orders: Optional[Sequence[float]]) -> np.ndarray:
    """The default grid, plus any user-supplied orders (each must exceed 1)."""
    if orders is None:
        return DEFAULT_ORDERS
    extra = np.atleast_1d(np.asarray(orders, dtype=np.float64))
    if extra.ndim != 1 or np.any(~np.isfinite(extra)) or np.any(~(extra > 1)):
        raise ValueError(f"orders={np.asarray(orders).tolist()!r} violates every order finite and > 1")
    return np.unique(np.concatenate([DEFAULT_ORDERS, extra]))


# ------------------------------------------------------------------------------------------
# the Girsanov curve itself
@_validate.arguments(constant="number", orders="array")
def girsanov_rdp(constant: float, orders) -> np.ndarray:
    """eps_a = a C / 4 at each order a (paper 001 Lemma 4.2 applied as in eqs. 19, 22)."""
    C = _constant(constant)
    a = np.asarray(orders, dtype=np.float64)
    if np.any(~(a >= 1)):
        raise ValueError(f"orders={a.tolist()!r} violates every order >= 1")
    if C == 0:
        return np.zeros_like(a)  # also at order +inf (0 * inf would be NaN)
    return a * (C / 4.0)


@_validate.arguments(constant="number", delta="number")
def girsanov_epsilon(constant: float, delta: float, form: str = "girsanov") -> float:
    """The (eps, delta) statement of paper 001 in closed form.

    ``form="girsanov"``: eps = C/4 + sqrt(C log(1/delta)) (Props 4.5, 4.6; Thms 5.2–5.6).
    ``form="printed_without_quarter"``: eps = C + sqrt(C log(1/delta)), as printed in
    Theorems 5.7 and 5.8 (valid — it is larger — but looser; NOTES 001 erratum (ii)).
    """
    C = _constant(constant)
    d = _finite("delta", delta)
    if not 0 < d < 1:
        raise ValueError(f"delta={_fmt(d)} violates 0 < delta < 1")
    if form not in EPSILON_FORMS:
        raise ValueError(f"form={form!r} is not one of {EPSILON_FORMS}")
    head = C / 4.0 if form == "girsanov" else C
    return head + math.sqrt(C * math.log(1.0 / d))


@_validate.arguments(constant="number", orders="array?")
def girsanov_curve(constant: float, provenance: Provenance, orders=None) -> PrivacyCurve:
    """The RDP curve a -> a C / 4 on the default orders (plus ``orders``)."""
    grid = _orders(orders)
    return PrivacyCurve.from_rdp(grid, girsanov_rdp(constant, grid), provenance)


# ------------------------------------------------------------------------------------------
# constants of the generic propositions
@_validate.arguments(drift_gap="number", horizon="number", inverse_temperature="number")
def path_constant(drift_gap: float, horizon: float, inverse_temperature: float = 1.0) -> float:
    """Prop 4.5: C1(T) = c^2 beta T, for a same-point drift gap |f_D(x) - f_D'(x)| <= c (eq. 18)."""
    where = "Proposition 4.5"
    c = _nonnegative("drift_gap", drift_gap, where)
    T = _nonnegative("horizon", horizon, where)
    beta = _positive("inverse_temperature", inverse_temperature, where)
    return _prod(c, c, beta, T)


@_validate.arguments(sync_distance="number", lipschitz="number", drift_gap="number", inverse_temperature="number")
def last_value_constant(sync_distance: float, lipschitz: float, drift_gap: float, inverse_temperature: float = 1.0) -> float:
    """Prop 4.6: C2 = beta (C (L + 1) + c)^2, where sup_t |X^D_t - X^D'_t| <= C a.s. under
    synchronous coupling (eq. 21) and |f_D(x) - f_D'(y)| <= L|x - y| + c (eq. 20)."""
    where = "Proposition 4.6"
    Cs = _nonnegative("sync_distance", sync_distance, where)
    L = _nonnegative("lipschitz", lipschitz, where)
    c = _nonnegative("drift_gap", drift_gap, where)
    beta = _positive("inverse_temperature", inverse_temperature, where)
    inner = _prod(Cs, L + 1.0) + c
    return _prod(beta, inner, inner)


@_validate.arguments(sync_distance="number", lipschitz="number", drift_gap="number")
def optimal_window(sync_distance: float, lipschitz: float, drift_gap: float) -> float:
    """tau* = C / (L C + c), the window minimising beta tau (L C + c + C/tau)^2 (not in paper 001)."""
    where = "the windowed Proposition 4.6"
    Cs = _nonnegative("sync_distance", sync_distance, where)
    L = _nonnegative("lipschitz", lipschitz, where)
    c = _nonnegative("drift_gap", drift_gap, where)
    if L * Cs + c == 0:
        if Cs == 0:
            return 1.0  # both chains coincide: any window gives C = 0
        return math.inf
    if Cs == 0:
        return 0.0
    return 1.0 / (L + c / Cs)  # = C / (L C + c), without overflowing L C


@_validate.arguments(sync_distance="number", lipschitz="number", drift_gap="number", inverse_temperature="number", horizon="number?")
def windowed_last_value_constant(
    sync_distance: float,
    lipschitz: float,
    drift_gap: float,
    window: Union[float, str] = "optimal",
    inverse_temperature: float = 1.0,
    horizon: Optional[float] = None,
) -> float:
    """Prop 4.6 with the steering window tau instead of 1 (an extension, not in paper 001):
    C(tau) = beta tau (L C + c + C/tau)^2. ``window="optimal"`` takes tau* = C/(L C + c).

    With a finite ``horizon`` T the window is capped at T; when T <= tau the steered process
    coincides with X^D' from time 0 and the bound is Prop 4.5's beta c^2 T (smaller). With a
    horizon the result is min(C(tau), beta c^2 T): the last value is a function of the path.
    """
    where = "the windowed Proposition 4.6"
    Cs = _nonnegative("sync_distance", sync_distance, where)
    L = _nonnegative("lipschitz", lipschitz, where)
    c = _nonnegative("drift_gap", drift_gap, where)
    beta = _positive("inverse_temperature", inverse_temperature, where)
    if isinstance(window, str):
        if window != "optimal":
            raise ValueError(f"window={window!r} violates window 'optimal' or a positive number")
        tau = optimal_window(Cs, L, c)
    else:
        tau = _positive("window", window, where)
    T = None if horizon is None else _nonnegative("horizon", horizon, where)
    if T is not None and T <= tau:
        return path_constant(c, T, beta)
    if Cs == 0:
        windowed = _prod(beta, tau, c, c)
    elif math.isinf(tau):  # L C + c = 0 with C > 0 can only occur for L = c = 0
        windowed = 0.0
    else:
        inner = _prod(L, Cs) + c + Cs / tau
        windowed = _prod(beta, tau, inner, inner)
    # The last value is a function of the path, so Prop 4.5 (implied by eq. 20 at x = y) holds too.
    return windowed if T is None else min(windowed, path_constant(c, T, beta))


@_validate.arguments(grad_bound="number", strong_convexity="number", smoothness="number", step_size="number", batch_size="int")
def synchronous_distance(grad_bound: float, strong_convexity: float, smoothness: float, step_size: float, batch_size: int = 1) -> float:
    """sup_n |x_n^D - x_n^D'| <= 2 c / (s (mu - gamma L^2 / 2)) for synchronously coupled
    chains (paper 001 eqs. 117 and 131; s = 1 for Thms 5.2 and 5.6)."""
    mu, L, gamma = _strongly_convex_smooth(strong_convexity, smoothness, step_size, "eq. 117")
    c = _nonnegative("grad_bound", grad_bound, "eq. 117")
    s = _positive_int("batch_size", batch_size, "eq. 131")
    return 2.0 * c / s / _contraction_gap(mu, L, gamma)


# ------------------------------------------------------------------------------------------
# results of paper 001 as curves
@_validate.arguments(drift_gap="number", horizon="number", inverse_temperature="number", orders="array?")
def prop45_path(drift_gap: float, horizon: float, *, inverse_temperature: float = 1.0, orders=None) -> PrivacyCurve:
    """Prop 4.5 (privacy of the path on [0, T]): eps_a = a c^2 beta T / 4."""
    C = path_constant(drift_gap, horizon, inverse_temperature)
    prov = Provenance(
        result="paper 001 Proposition 4.5",
        mode="paper",
        assumptions=(
            f"same-point drift gap |f_D(x, eta) - f_D'(x, eta)| <= c = {_fmt(drift_gap)} (eq. 18)",
            f"inverse temperature beta = {_fmt(inverse_temperature)}, horizon T = {_fmt(horizon)}",
            "synchronous coupling, common start",
        ),
        released="path",
    )
    return girsanov_curve(C, prov, orders)


@_validate.arguments(sync_distance="number", lipschitz="number", drift_gap="number", inverse_temperature="number", horizon="number?", orders="array?")
def prop46_last_value(
    sync_distance: float,
    lipschitz: float,
    drift_gap: float,
    *,
    inverse_temperature: float = 1.0,
    window: Union[None, float, str] = None,
    horizon: Optional[float] = None,
    orders=None,
) -> PrivacyCurve:
    """Prop 4.6 (privacy of the final value, uniform in T): eps_a = a beta (C (L+1) + c)^2 / 4.

    ``window=None`` is the paper's unit window; ``window="optimal"`` or a number uses the
    windowed constant (not in the paper; see the module docstring).
    """
    assumptions = (
        f"|f_D(x) - f_D'(y)| <= L|x - y| + c with L = {_fmt(lipschitz)}, c = {_fmt(drift_gap)} (eq. 20)",
        f"sup_t |X^D_t - X^D'_t| <= C = {_fmt(sync_distance)} a.s. under synchronous coupling (eq. 21)",
        f"inverse temperature beta = {_fmt(inverse_temperature)}",
    )
    if window is None:
        C = last_value_constant(sync_distance, lipschitz, drift_gap, inverse_temperature)
        if horizon is not None and _nonnegative("horizon", horizon, "Proposition 4.6") <= 1.0:
            C = min(C, path_constant(drift_gap, horizon, inverse_temperature))  # App. B.6: T <= 1
        prov = Provenance("paper 001 Proposition 4.6", "paper", assumptions, "last iterate")
    else:
        C = windowed_last_value_constant(sync_distance, lipschitz, drift_gap, window, inverse_temperature, horizon)
        prov = Provenance(
            "paper 001 Proposition 4.6 with steering window tau (dpjax extension, not in the paper)",
            "strict",
            assumptions + (f"window = {window!r}, horizon = {horizon!r}",),
            "last iterate",
        )
    return girsanov_curve(C, prov, orders)


def _last_iterate_setting(where, grad_bound, strong_convexity, smoothness, step_size, batch_size=1, inverse_temperature=1.0):
    """The checked (c, mu, L, gamma, beta, s) of the last-iterate theorems 5.2, 5.6 and 5.7:
    c >= 0 (Assumptions 5.1, 5.5), mu > 0, L >= mu, 0 < gamma < 2 mu / L^2, s >= 1, beta > 0."""
    mu, L, gamma = _strongly_convex_smooth(strong_convexity, smoothness, step_size, where)
    c = _nonnegative("grad_bound", grad_bound, where)
    s = _positive_int("batch_size", batch_size, where)
    beta = _positive("inverse_temperature", inverse_temperature, where)
    return c, mu, L, gamma, beta, s


def _path_setting(where, grad_gap, step_size, num_steps, batch_size=1, inverse_temperature=1.0):
    """The checked (c, gamma, n, s, beta) of the path theorems 5.4 and 5.8: a gradient gap
    c >= 0 (eqs. 28, 36), gamma > 0, n >= 1, s >= 1, beta > 0."""
    c = _nonnegative("grad_gap", grad_gap, where)
    gamma = _positive("step_size", step_size, where)
    n = _positive_int("num_steps", num_steps, where)
    s = _positive_int("batch_size", batch_size, where)
    beta = _positive("inverse_temperature", inverse_temperature, where)
    return c, gamma, n, s, beta


def _last_iterate_constant(c, mu, L, gamma, beta, s, mode):
    """beta (C_s (L+1) + c')^2 with C_s = 2c/(s D), c' = 2c/s (strict) or c/s (paper)."""
    D = _contraction_gap(mu, L, gamma)
    per_step = c / s
    sync = 2.0 * per_step / D
    gap = 2.0 * per_step if mode == "strict" else per_step
    inner = _prod(sync, L + 1.0) + gap
    return _prod(beta, inner, inner)


def _windowed_last_iterate_constant(c, mu, L, gamma, beta, s, mode, window, horizon):
    # Only with the proof's constants: the printed drift gap c (instead of eq. 20's 2c) is not
    # a valid same-point gap, and with a short horizon the window bound falls back to Prop 4.5,
    # where c instead of 2c gives values below the exact divergence (n = 1 already).
    if mode != "strict":
        raise ValueError(
            f"mode={mode!r} violates mode='strict' required by the windowed Proposition 4.6 "
            "(the printed constant's drift gap c understates eq. 20's 2c)"
        )
    D = _contraction_gap(mu, L, gamma)
    per_step = c / s
    sync, gap = 2.0 * per_step / D, 2.0 * per_step
    if math.isinf(sync) or math.isinf(gap):
        return math.inf  # the constant overflows float64: a vacuous bound
    return windowed_last_value_constant(sync, L, gap, window, beta, horizon)


@_validate.arguments(grad_bound="number", strong_convexity="number", smoothness="number", step_size="number")
def thm52_constant(grad_bound: float, strong_convexity: float, smoothness: float, step_size: float, mode: str = "paper") -> float:
    """Theorem 5.2 (ULA last iterate): paper C3 = c^2 (2(L+1)/(mu - gamma L^2/2) + 1)^2;
    strict (2c(L+1)/(mu - gamma L^2/2) + 2c)^2."""
    setting = _last_iterate_setting("Theorem 5.2", grad_bound, strong_convexity, smoothness, step_size)
    return _last_iterate_constant(*setting, _mode(mode))


def thm52_limit_constant(grad_bound: float, strong_convexity: float, smoothness: float, mode: str = "paper") -> float:
    """C4 = lim_{gamma -> 0} C3 (paper 001, after Theorem 5.2): what Theorem 5.2 suggests for the
    posterior itself (ULA tends to it as gamma -> 0, n -> infinity).

    paper: c^2 (2(L+1)/mu + 1)^2 -- the printed C4 = c (2(L+1)/mu + 1) lacks this square (NOTES 001
    erratum (iii); :func:`thm52_limit_constant_as_printed`); strict: (2c(L+1)/mu + 2c)^2.
    """
    where = "the gamma -> 0 limit of Theorem 5.2"
    mu, L = _mu_l(strong_convexity, smoothness, where)
    c = _nonnegative("grad_bound", grad_bound, where)
    if _mode(mode) == "strict":
        inner = _prod(2.0, c, (L + 1.0) / mu) + 2.0 * c
    else:
        inner = _prod(c, 2.0 * (L + 1.0) / mu + 1.0)
    return _prod(inner, inner)


def thm52_limit_constant_as_printed(grad_bound: float, strong_convexity: float, smoothness: float) -> float:
    """The printed C4 = c (2(L+1)/mu + 1), without the square: not the limit of C3 and not a valid
    bound (below the exact posterior divergence 2c^2/mu of the closed-form case once c > ~mu/(2(L+1)+mu))."""
    where = "the printed C4"
    mu, L = _mu_l(strong_convexity, smoothness, where)
    return _nonnegative("grad_bound", grad_bound, where) * (2.0 * (L + 1.0) / mu + 1.0)


def thm52_posterior_limit(grad_bound: float, strong_convexity: float, smoothness: float, *, mode: str = "paper", orders=None) -> PrivacyCurve:
    """The posterior's RDP suggested by Theorem 5.2 as gamma -> 0: eps_a = a C4 / 4 (C4 squared)."""
    C = thm52_limit_constant(grad_bound, strong_convexity, smoothness, mode)
    prov = Provenance(
        "paper 001 Theorem 5.2, gamma -> 0 limit (C4, with its square)",
        mode,
        (f"U_D = V_D + K, sup|grad V_D| <= c = {_fmt(grad_bound)}", f"K {_fmt(strong_convexity)}-strongly convex, grad K {_fmt(smoothness)}-Lipschitz",
         "the posterior as the limit of ULA's last iterate (gamma -> 0, n -> infinity)"),
        "posterior sample",
    )
    return girsanov_curve(C, prov, orders)


def _window_horizon(num_steps, step_size, where):
    if num_steps is None:
        return None
    return _positive_int("num_steps", num_steps, where) * float(step_size)


def _with_window(result, where, window, num_steps, grad_bound, strong_convexity, smoothness, step_size, inverse_temperature, batch_size, mode):
    """A last-iterate theorem's constant with Prop 4.6's steering window in place of the unit
    window (dpjax extension), capped at the horizon n gamma; and the result's name saying so."""
    horizon = _window_horizon(num_steps, step_size, where)
    C = _windowed_last_iterate_constant(float(grad_bound), float(strong_convexity), float(smoothness), float(step_size),
                                        float(inverse_temperature), int(batch_size), mode, window, horizon)
    return C, result + " with the steering window of Prop 4.6 optimised (dpjax extension, not in the paper)"


@_validate.arguments(grad_bound="number", strong_convexity="number", smoothness="number", step_size="number", num_steps="int?", orders="array?")
def thm52_ula_last_iterate(
    grad_bound: float,
    strong_convexity: float,
    smoothness: float,
    step_size: float,
    *,
    mode: str = "paper",
    window: Union[None, float, str] = None,
    num_steps: Optional[int] = None,
    orders=None,
) -> PrivacyCurve:
    """Theorem 5.2: ULA x_{n+1} = x_n - gamma grad U_D(x_n) + sqrt(2 gamma) z, U_D = V_D + K,
    sup|grad V_D| <= c, K mu-strongly convex with L-Lipschitz gradient, 0 < gamma < 2 mu/L^2.
    The last iterate is (a, a C3/4)-RDP for every n.

    ``window`` ("optimal" or a number) replaces the unit window of Prop 4.6 (dpjax
    extension); ``num_steps`` then caps it at the horizon n gamma.
    """
    where = "Theorem 5.2"
    C = thm52_constant(grad_bound, strong_convexity, smoothness, step_size, mode)
    assumptions = (
        f"U_D = V_D + K, sup|grad V_D| <= c = {_fmt(grad_bound)} (Assumption 5.1)",
        f"K {_fmt(strong_convexity)}-strongly convex, grad K {_fmt(smoothness)}-Lipschitz",
        f"step_size = {_fmt(step_size)} < 2 mu / L^2",
        "synchronous coupling, common start, beta = 1",
    )
    result = "paper 001 Theorem 5.2"
    if window is not None:
        C, result = _with_window(result, where, window, num_steps, grad_bound, strong_convexity, smoothness, step_size, 1.0, 1, mode)
    return girsanov_curve(C, Provenance(result, mode, assumptions, "last iterate"), orders)


@_validate.arguments(grad_gap="number", step_size="number", num_steps="int")
def thm54_constant(grad_gap: float, step_size: float, num_steps: int) -> float:
    """Theorem 5.4 (ULA path): C5(n) = n gamma c^2, c >= |grad U_D(x) - grad U_D'(x)| (eq. 28)."""
    c, gamma, n, _, _ = _path_setting("Theorem 5.4", grad_gap, step_size, num_steps)
    return _prod(n, gamma, c, c)


@_validate.arguments(grad_gap="number", step_size="number", num_steps="int", orders="array?")
def thm54_ula_path(grad_gap: float, step_size: float, num_steps: int, *, orders=None) -> PrivacyCurve:
    """Theorem 5.4: the ULA path (x_1, ..., x_n) is (a, a n gamma c^2 / 4)-RDP; no step-size condition."""
    C = thm54_constant(grad_gap, step_size, num_steps)
    prov = Provenance(
        "paper 001 Theorem 5.4",
        "paper",
        (f"|grad U_D(x) - grad U_D'(x)| <= c = {_fmt(grad_gap)} for all x (Assumption 5.3)", "common start, beta = 1"),
        "path",
    )
    return girsanov_curve(C, prov, orders)


@_validate.arguments(grad_bound="number", strong_convexity="number", smoothness="number", step_size="number", inverse_temperature="number")
def thm56_constant(
    grad_bound: float, strong_convexity: float, smoothness: float, step_size: float, inverse_temperature: float = 1.0, mode: str = "paper"
) -> float:
    """Theorem 5.6 (SGLD last iterate): paper C6 = beta c^2 (2(L+1)/(mu - gamma L^2/2) + 1)^2;
    strict beta (2c(L+1)/(mu - gamma L^2/2) + 2c)^2. Independent of the batch size."""
    setting = _last_iterate_setting("Theorem 5.6", grad_bound, strong_convexity, smoothness, step_size, 1, inverse_temperature)
    return _last_iterate_constant(*setting, _mode(mode))


@_validate.arguments(grad_bound="number", strong_convexity="number", smoothness="number", step_size="number", inverse_temperature="number", orders="array?")
def thm56_sgld_last_iterate(
    grad_bound: float,
    strong_convexity: float,
    smoothness: float,
    step_size: float,
    *,
    inverse_temperature: float = 1.0,
    mode: str = "paper",
    orders=None,
) -> PrivacyCurve:
    """Theorem 5.6: noisy SGD / SGLD (eq. 31), l(x, d) = v(x, d) + k(x), |grad v| <= c,
    k mu-strongly convex with L-Lipschitz gradient, 0 < gamma < 2 mu/L^2, any batch size."""
    C = thm56_constant(grad_bound, strong_convexity, smoothness, step_size, inverse_temperature, mode)
    prov = Provenance(
        "paper 001 Theorem 5.6",
        mode,
        (
            f"l = v + k, sup|grad_x v| <= c = {_fmt(grad_bound)} (Assumption 5.5)",
            f"k {_fmt(strong_convexity)}-strongly convex, grad k {_fmt(smoothness)}-Lipschitz",
            f"step_size = {_fmt(step_size)} < 2 mu / L^2, beta = {_fmt(inverse_temperature)}",
            "synchronous coupling (same batches and noise), common start, no subsampling amplification",
        ),
        "last iterate",
    )
    return girsanov_curve(C, prov, orders)


@_validate.arguments(grad_bound="number", strong_convexity="number", smoothness="number", step_size="number", batch_size="int", inverse_temperature="number")
def thm57_constant(
    grad_bound: float,
    strong_convexity: float,
    smoothness: float,
    step_size: float,
    batch_size: int,
    inverse_temperature: float = 1.0,
    mode: str = "paper",
) -> float:
    """Theorem 5.7 (SGLD last iterate, grad v constant in x): paper
    C7 = (beta c^2/s^2)(2(L+1)/(mu - gamma L^2/2) + 1)^2; strict (beta/s^2)(2c(L+1)/D + 2c)^2."""
    setting = _last_iterate_setting("Theorem 5.7", grad_bound, strong_convexity, smoothness, step_size, batch_size, inverse_temperature)
    return _last_iterate_constant(*setting, _mode(mode))


@_validate.arguments(grad_bound="number", strong_convexity="number", smoothness="number", step_size="number", batch_size="int", inverse_temperature="number", num_steps="int?", orders="array?")
def thm57_sgld_last_iterate(
    grad_bound: float,
    strong_convexity: float,
    smoothness: float,
    step_size: float,
    batch_size: int,
    *,
    inverse_temperature: float = 1.0,
    mode: str = "paper",
    window: Union[None, float, str] = None,
    num_steps: Optional[int] = None,
    orders=None,
) -> PrivacyCurve:
    """Theorem 5.7: Theorem 5.6's setting with grad_x v(x, d) constant in x; the differing
    record is assumed in every batch (no amplification). RDP a C7 / 4. The printed
    (eps, delta) statement is ``girsanov_epsilon(C7, delta, "printed_without_quarter")``."""
    where = "Theorem 5.7"
    C = thm57_constant(grad_bound, strong_convexity, smoothness, step_size, batch_size, inverse_temperature, mode)
    result = "paper 001 Theorem 5.7"
    if window is not None:
        C, result = _with_window(result, where, window, num_steps, grad_bound, strong_convexity, smoothness, step_size,
                                 inverse_temperature, batch_size, mode)
    prov = Provenance(
        result,
        mode,
        (
            f"l = v + k, sup|grad_x v| <= c = {_fmt(grad_bound)}, grad_x v(x, d) constant in x",
            f"k {_fmt(strong_convexity)}-strongly convex, grad k {_fmt(smoothness)}-Lipschitz",
            f"step_size = {_fmt(step_size)} < 2 mu / L^2, batch size s = {batch_size}, beta = {_fmt(inverse_temperature)}",
            "synchronous coupling, common start, differing record in every batch (no amplification)",
        ),
        "last iterate",
    )
    return girsanov_curve(C, prov, orders)


@_validate.arguments(grad_gap="number", step_size="number", num_steps="int", batch_size="int", inverse_temperature="number")
def thm58_constant(grad_gap: float, step_size: float, num_steps: int, batch_size: int, inverse_temperature: float = 1.0) -> float:
    """Theorem 5.8 (SGLD path): C8(n) = (beta c^2 / s^2) n gamma, c >= |grad l(x, d) - grad l(x, d')| (eq. 36)."""
    c, gamma, n, s, beta = _path_setting("Theorem 5.8", grad_gap, step_size, num_steps, batch_size, inverse_temperature)
    return _prod(beta, c / s, c / s, n, gamma)


@_validate.arguments(grad_gap="number", step_size="number", num_steps="int", batch_size="int", inverse_temperature="number", orders="array?")
def thm58_sgld_path(
    grad_gap: float, step_size: float, num_steps: int, batch_size: int, *, inverse_temperature: float = 1.0, orders=None
) -> PrivacyCurve:
    """Theorem 5.8: the SGLD path (x_1, ..., x_n) is (a, a C8(n)/4)-RDP. The printed
    (eps, delta) statement is ``girsanov_epsilon(C8, delta, "printed_without_quarter")``."""
    C = thm58_constant(grad_gap, step_size, num_steps, batch_size, inverse_temperature)
    prov = Provenance(
        "paper 001 Theorem 5.8",
        "paper",
        (
            f"per-record gradient gap |grad l(x, d) - grad l(x, d')| <= c = {_fmt(grad_gap)} (eq. 36)",
            f"batch size s = {batch_size}, beta = {_fmt(inverse_temperature)}, common start",
            "differing record in every batch (no amplification)",
        ),
        "path",
    )
    return girsanov_curve(C, prov, orders)

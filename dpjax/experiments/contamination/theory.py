"""Paper 003's closed forms (Hu, Aslett, Dai, Pollock, Roberts, "Privacy guarantees in
posterior sampling under contamination"): Theorem 4's (eps_n, delta_n), Lemma 14's constant
T_n for the §4.3 regressions, and Theorem 5's Fisher information of the contaminated model.

* **Theorem 4** (eq. 14): with probability at least 1 - C' exp(-n c5 phi_n^2) over the data,
  the contaminated posterior is (eps_n, delta_n)-DP with
  eps'_n = 2 (1 - p_n) T_n psi_n / p_n, delta_n = (4 / c3) exp(-c1 n phi_n^2 / 2),
  eps_n = eps'_n + log(delta_n + exp(eps'_n)); c1 = 1/12, c2 = 4 / (27 (32 c0 + 8/3)) ~ 1.212e-3
  with c0 = 25 (4 - tau/2) / 16, e^(tau/2) = 5 (Appendix B, after eq. 34); c5 = min(c1 alpha / 8,
  c2); C' = 4 + 40 (log2 n)^2 + 2 c4, or 12 + 2 c4 once exp(-c2 n phi_n^2) <= 1/2.
* **Lemma 14**: sup_x sup_{theta in A_n} |log d(x; theta)| <= (1 - p) T psi / p with
  T >= sup_x ||grad_theta f(x; theta) / g(x)||_2 over the thetas the proof's mean-value step
  visits (the segments from theta* to A_n: the convex hull of A_n and theta*, which need not
  lie in A_n when the box is centred at the MAP) and psi = sup_{A_n} ||theta - theta*||_2.
  Hence log eta_n <= 2 (1 - p) T psi / p, an upper bound on Algorithm 1's log eta_n.
* **Theorem 5**: I_p(theta*) -> I(theta*) as p -> 0, where I_p(theta) = (1 - p)^2
  E_w int (grad f)(grad f)^T / k_p dy (its proof, Appendix "Proof for Theorem 5"). For the
  regressions f(y; theta, w) = F(y - theta.w) (or a Bernoulli in theta.w), grad f =
  dF/du w, so I_p = E_w[c_p(w) w w^T] with the scalar c_p(w) = (1 - p)^2 int (dF/du)^2 / k_p dy
  by quadrature. Since k_p >= (1 - p) f, I_p <= (1 - p) I: the contaminated model is never more
  informative.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import integrate, optimize, special

from ... import _validate as V

# Appendix B (after eq. 34), following Wong and Shen (1995): k = 2/3, exp(tau/2) = 5
_TAU_HALF = math.log(5.0)
C0 = 25.0 * (4.0 - _TAU_HALF) / 16.0
C1 = 1.0 / 12.0
C2 = 4.0 / (27.0 * (32.0 * C0 + 8.0 / 3.0))
REGRESSIONS = ("linear", "cauchy", "logistic")


@dataclasses.dataclass(frozen=True)
class Theorem4Bound:
    """Theorem 4's guarantee: ``epsilon`` (eps_n), ``epsilon_base`` (eps'_n = 2 (1 - p) T psi /
    p), ``delta`` (delta_n) and ``log_delta``; ``failure_probability`` bounds the chance
    (over the data) that the guarantee fails, when ``alpha`` and ``c4`` were given (else NaN)."""

    epsilon: float
    epsilon_base: float
    delta: float
    log_delta: float
    failure_probability: float


def theorem4_bound(
    *,
    num_records: int,
    contamination_rate: float,
    T: float,
    psi: float,
    phi: float,
    c3: float,
    c1: float = C1,
    c2: float = C2,
    alpha: float | None = None,
    c4: float | None = None,
) -> Theorem4Bound:
    """Theorem 4 (eq. 14) of paper 003: eps_n and delta_n from the sequences it is stated in.

    ``T`` (T_n, Lemma 14: see :func:`lemma14_T`), ``psi`` (psi_n: the L2 radius of A_n around
    theta*, Proposition 3), ``phi`` (phi_n: the Hellinger radius of Assumptions 1-3), ``c3``
    (Assumption 2's prior-mass constant). With ``alpha`` (Assumption 2) and ``c4``
    (Assumption 3), also the failure probability C' exp(-n c5 phi^2), capped at 1. Log space:
    log(delta + e^eps') = logaddexp(log delta, eps')."""
    n = V.positive_int("num_records", num_records)
    p = V.in_range("contamination_rate", contamination_rate, 0.0, 1.0, low_open=True, high_open=True)
    T = V.nonnegative("T", T)
    psi = V.nonnegative("psi", psi)
    phi = V.positive("phi", phi)
    c3 = V.positive("c3", c3)
    c1 = V.positive("c1", c1)
    c2 = V.positive("c2", c2)
    eps_base = 2.0 * (1.0 - p) * T * psi / p
    log_delta = math.log(4.0 / c3) - 0.5 * c1 * n * phi * phi
    eps = eps_base + float(np.logaddexp(log_delta, eps_base))
    failure = float("nan")
    if alpha is not None or c4 is not None:
        if alpha is None or c4 is None:
            raise ValueError("alpha and c4 must be given together (the failure probability needs both)")
        alpha = V.in_range("alpha", alpha, 0.0, 1.0, low_open=True)
        c4 = V.nonnegative("c4", c4)
        c5 = min(c1 * alpha / 8.0, c2)
        large = math.exp(-c2 * n * phi * phi) <= 0.5
        c_prime = 12.0 + 2.0 * c4 if large else 4.0 + 40.0 * math.log2(n) ** 2 + 2.0 * c4
        failure = min(1.0, c_prime * math.exp(-n * c5 * phi * phi))
    return Theorem4Bound(epsilon=eps, epsilon_base=eps_base, delta=math.exp(log_delta), log_delta=log_delta,
                         failure_probability=failure)


def theorem4_rates(q: float) -> dict:
    """§5 / Appendix C: phi_n, psi_n ~ n^(-1/q) and p_n = n^(-1/(2q)), q > 4, give
    eps_n ~ n^(-1/(2q)) and delta_n ~ exp(-c1 n^(1 - 2/q) / 2). Returns the exponents."""
    q = V.real("q", q)
    if not q > 4:
        raise ValueError(f"q={q} violates q > 4 (Theorem 4's regression examples, Appendix C)")
    return {"epsilon_exponent": -1.0 / (2.0 * q), "contamination_exponent": -1.0 / (2.0 * q),
            "radius_exponent": -1.0 / q, "delta_log_exponent": 1.0 - 2.0 / q}


# --- the regressions' score pieces: dF/du and g, in the residual / response ------------------------
def _df_over_g(kind: str, scale: float):
    """|dF/du (y; u)| / g(y; u*) as a function of (y, u, u*), for the §4.3 models (numpy)."""
    if kind == "linear":
        log_t_const = special.gammaln(3.0) - special.gammaln(2.5) - 0.5 * math.log(5 * math.pi) - math.log(scale)

        def ratio(y, u, u_star):  # phi(y - u) |y - u| / t_5((y - u*)/s)/s, in logs (no overflow)
            r = y - u
            log_num = -0.5 * r * r - 0.5 * math.log(2 * math.pi) + np.log(np.abs(r) + 1e-300)
            log_g = log_t_const - 3.0 * np.log1p(((y - u_star) / scale) ** 2 / 5.0)
            return np.exp(log_num - log_g)
        return ratio
    if kind == "cauchy":
        def ratio(y, u, u_star):  # 2 |y - u| / (pi (1 + (y - u)^2)^2) over 1 / (pi lam (1 + y^2/lam^2))
            r = y - u
            return 2.0 * np.abs(r) * scale * (1.0 + (y / scale) ** 2) / (1.0 + r * r) ** 2
        return ratio
    raise ValueError(f"kind={kind!r} violates kind in ('linear', 'cauchy') here")


def lemma14_T(kind: str, *, centre, phi: float, theta_star, contamination_scale: float, covariate_bound: float = 1.0) -> float:
    """An upper bound on Lemma 14's T_n for a §4.3 regression on the box A_n = {||theta -
    centre||_inf <= phi}: sup over records and over theta in the convex hull of A_n and theta*
    of ||grad_theta f / g||_2 = |dF/du| ||w||_2 / g.

    ||w||_2 <= sqrt(1 + (d - 1) b^2) is bounded separately from the scalar part, whose sup runs
    over the range of u = theta.w (Cauchy, g centred at 0) or of delta = (theta - theta*).w
    (linear, g centred at theta*.w) over the hull and ||w||_inf <= b: a dense grid in the
    residual and in u (or delta), then scipy's bounded polishing. Logistic: |dF/du| / g =
    2 sigma(u) sigma(-u) <= 1/2 everywhere, attained at u = 0 if in range. Separating ||w||_2 makes
    T an upper bound (a valid T_n for Lemma 14), not necessarily the sup."""
    centre = V.finite_array("centre", V.real_array("centre", centre))
    theta_star = V.finite_array("theta_star", V.real_array("theta_star", theta_star))
    if centre.shape != theta_star.shape or centre.ndim != 1:
        raise ValueError(f"centre {centre.shape} and theta_star {theta_star.shape} must be vectors of one length")
    phi = V.nonnegative("phi", phi)
    b = V.positive("covariate_bound", covariate_bound)
    V.one_of("kind", kind, REGRESSIONS)
    d = centre.shape[0]
    w_norm = math.sqrt(1.0 + (d - 1) * b * b)
    if kind == "logistic":
        lo, hi = _u_range(centre, phi, np.zeros_like(theta_star), theta_star, b)  # u = theta.w over the hull
        u = 0.0 if lo <= 0.0 <= hi else min(abs(lo), abs(hi))
        return w_norm * 2.0 * special.expit(u) * special.expit(-u)
    scale = V.positive("contamination_scale", contamination_scale)
    ratio = _df_over_g(kind, scale)
    if kind == "linear":
        lo, hi = _u_range(centre, phi, theta_star, theta_star, b)  # delta = (theta - theta*).w
        fn = lambda r, dl: ratio(r, dl, 0.0)  # residual form: y = theta*.w + r
        r_grid = np.concatenate([np.linspace(-12, 12, 2401), -np.logspace(1.1, 3, 100), np.logspace(1.1, 3, 100)])
    else:
        lo, hi = _u_range(centre, phi, np.zeros_like(theta_star), theta_star, b)  # u = theta.w
        fn = lambda y, u: ratio(y, u, 0.0)
        r_grid = np.concatenate([np.linspace(-12, 12, 2401) + 0.5 * (lo + hi), -np.logspace(1.1, 4, 150), np.logspace(1.1, 4, 150)])
    s_grid = np.linspace(lo, hi, 101)
    vals = fn(r_grid[:, None], s_grid[None, :])
    i, j = np.unravel_index(np.argmax(vals), vals.shape)
    best = float(vals[i, j])
    res = optimize.minimize(lambda x: -fn(x[0], np.clip(x[1], lo, hi)), [r_grid[i], s_grid[j]], method="Nelder-Mead",
                            options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 4000})
    best = max(best, float(-res.fun))
    return w_norm * best


def _u_range(centre, phi, offset, theta_star, b):
    """[min, max] of (theta - offset).w over theta in hull(box(centre, phi), theta*), w_1 = 1,
    |w_j| <= b: per coordinate the extreme of (theta_j - offset_j) over [min(c_j - phi,
    t*_j), max(c_j + phi, t*_j)], times w_j (= 1 for the intercept, +-b otherwise). The hull's
    coordinate ranges bound the hull, so this range contains the true one."""
    low = np.minimum(centre - phi, theta_star) - offset
    high = np.maximum(centre + phi, theta_star) - offset
    top = high[0] + b * np.sum(np.maximum(np.abs(low[1:]), np.abs(high[1:])))
    bottom = low[0] - b * np.sum(np.maximum(np.abs(low[1:]), np.abs(high[1:])))
    return float(bottom), float(top)


def lemma14_log_eta_bound(*, T: float, psi: float, contamination_rate: float) -> float:
    """log eta_n <= 2 (1 - p) T psi / p (Lemma 14): an upper bound on Algorithm 1's log eta_n."""
    p = V.in_range("contamination_rate", contamination_rate, 0.0, 1.0, low_open=True, high_open=True)
    return 2.0 * (1.0 - p) * V.nonnegative("T", T) * V.nonnegative("psi", psi) / p


def box_psi(centre, phi: float, theta_star) -> float:
    """psi = sup over the L_inf box centre +- phi of ||theta - theta*||_2 (at a vertex)."""
    centre = np.asarray(centre, dtype=float)
    return float(np.linalg.norm(np.abs(centre - np.asarray(theta_star, dtype=float)) + V.nonnegative("phi", phi)))


# --- Theorem 5 -----------------------------------------------------------------------------------
def fisher_information_scalar(kind: str, *, contamination_rate: float, u_star: float = 0.0, contamination_scale: float = 1.0) -> float:
    """c_p(w) = (1 - p)^2 int (dF/du)^2 / k_p dy at u = u* = theta*.w: the per-record Fisher
    information of a §4.3 regression in the direction w is c_p w w^T (Theorem 5's proof).
    p = 0 gives the uncontaminated value: 1 (Gaussian, unit sd), 1/2 (standard Cauchy),
    sigma(u*) sigma(-u*) (logistic). Quadrature over R (scipy.integrate.quad, split at the
    peaks) for the continuous responses; an exact two-point sum for the binary one."""
    V.one_of("kind", kind, REGRESSIONS)
    p = V.in_range("contamination_rate", contamination_rate, 0.0, 1.0, high_open=True)
    u_star = V.finite_real("u_star", u_star)
    if kind == "logistic":
        s1, s0 = special.expit(u_star), special.expit(-u_star)
        df = s1 * s0
        return (1 - p) ** 2 * df * df * (1.0 / ((1 - p) * s1 + p / 2) + 1.0 / ((1 - p) * s0 + p / 2))
    scale = V.positive("contamination_scale", contamination_scale)
    if kind == "linear":
        log_t_const = special.gammaln(3.0) - special.gammaln(2.5) - 0.5 * math.log(5 * math.pi) - math.log(scale)

        def integrand(r):  # residual r = y - u*; g centred at u*
            f = math.exp(-0.5 * r * r) / math.sqrt(2 * math.pi)
            k = (1 - p) * f + p * math.exp(log_t_const - 3.0 * math.log1p((r / scale) ** 2 / 5.0))
            return (1 - p) ** 2 * (f * r) ** 2 / k if k > 0 else 0.0
        pts = (-8.0, -1.0, 0.0, 1.0, 8.0)
    else:
        def integrand(r):  # y = u* + r; g = Cauchy(0, lam) at y
            f = 1.0 / (math.pi * (1 + r * r))
            df = 2.0 * r / (math.pi * (1 + r * r) ** 2)
            y = u_star + r
            k = (1 - p) * f + p / (math.pi * scale * (1 + (y / scale) ** 2))
            return (1 - p) ** 2 * df * df / k
        pts = (-8.0, -1.0, 0.0, 1.0, 8.0, -u_star)
    edges = sorted(set(pts))
    total = integrate.quad(integrand, -np.inf, edges[0], limit=200)[0] + integrate.quad(integrand, edges[-1], np.inf, limit=200)[0]
    for a, b_ in zip(edges[:-1], edges[1:]):
        total += integrate.quad(integrand, a, b_, limit=200, epsabs=1e-14, epsrel=1e-12)[0]
    return float(total)


def contaminated_fisher_information(kind: str, *, theta_star, contamination_rate: float, contamination_scale: float = 1.0,
                                    covariate_bound: float = 1.0, num_covariate_draws: int = 4000, seed: int = 0) -> np.ndarray:
    """Theorem 5's I_p(theta*) for a §4.3 regression, per record: E_w[c_p(w) w w^T] with w =
    (1, w_2..w_d), w_j ~ U[-b, b]. Linear (g centred at theta*.w): c_p does not depend on w and
    E[w w^T] = diag(1, b^2/3, ...) exactly. Cauchy (g centred at 0) and logistic: c_p depends on
    theta*.w; the expectation is a Monte Carlo average over ``num_covariate_draws`` draws
    (seeded), c_p interpolated on a grid of theta*.w (Cauchy) or exact (logistic)."""
    theta_star = V.finite_array("theta_star", V.real_array("theta_star", theta_star))
    if theta_star.ndim != 1 or theta_star.shape[0] < 2:
        raise ValueError(f"theta_star has shape {theta_star.shape}; it must be a vector of length >= 2 (intercept first)")
    b = V.positive("covariate_bound", covariate_bound)
    d = theta_star.shape[0]
    if kind == "linear":
        c = fisher_information_scalar(kind, contamination_rate=contamination_rate, contamination_scale=contamination_scale)
        return c * np.diag([1.0] + [b * b / 3.0] * (d - 1))
    V.one_of("kind", kind, REGRESSIONS)
    draws = V.positive_int("num_covariate_draws", num_covariate_draws)
    rng = np.random.default_rng(V.seed("seed", seed))
    w = np.concatenate([np.ones((draws, 1)), rng.uniform(-b, b, (draws, d - 1))], axis=1)
    u = w @ theta_star
    if kind == "logistic":
        c = np.array([fisher_information_scalar(kind, contamination_rate=contamination_rate, u_star=v) for v in u])
    else:
        nodes = np.linspace(u.min(), u.max(), 41) if u.max() > u.min() else u[:1]
        vals = np.array([fisher_information_scalar(kind, contamination_rate=contamination_rate, u_star=v,
                                                   contamination_scale=contamination_scale) for v in nodes])
        c = np.interp(u, nodes, vals) if nodes.size > 1 else np.full_like(u, vals[0])
    return np.einsum("k,ki,kj->ij", c, w, w) / draws


# --- Figure 1's budgets ---------------------------------------------------------------------------
def zcdp_budget(epsilon, delta, *, rule: str = "exact") -> np.ndarray:
    """rho such that rho-zCDP gives the (epsilon, delta)-DP of Table 1, for Figure 1's
    frequentist baselines (paper 003 §4.2).

    ``rule="exact"``: the largest rho with rho + 2 sqrt(rho log(1/delta)) <= epsilon (Bun &
    Steinke 2016, Prop 1.3; :func:`dpjax.accountants.zcdp_to_epsilon`), i.e. rho =
    (sqrt(L + epsilon) - sqrt(L))^2 with L = log(1/delta), written as epsilon^2 /
    (sqrt(L + epsilon) + sqrt(L))^2 (no cancellation). ``rule="paper"``: the paper's reading
    "eps^2/2-zCDP implies (eps sqrt(log 1/delta), delta)-DP", rho = epsilon^2 / (2 L). That
    statement drops a factor sqrt(2) and the eps^2/2 term: the paper's rho is about twice the
    exact one, and buys (rho + 2 sqrt(rho L), delta) ~ (sqrt(2) epsilon, delta)-DP, more than
    the budget (NOTES 003 erratum), not less as §4.2 says."""
    V.one_of("rule", rule, ("exact", "paper"))
    eps = np.asarray(epsilon, dtype=np.float64)
    if np.any(~np.isfinite(eps)) or np.any(eps <= 0):
        raise ValueError(f"epsilon={epsilon!r} violates epsilon > 0 and finite")
    dl = np.asarray(delta, dtype=np.float64)
    if np.any(~(dl > 0)) or np.any(~(dl < 1)):
        raise ValueError(f"delta={delta!r} violates 0 < delta < 1")
    log_inv = -np.log(dl)
    if rule == "paper":
        return eps**2 / (2.0 * log_inv)
    return eps**2 / (np.sqrt(log_inv + eps) + np.sqrt(log_inv)) ** 2

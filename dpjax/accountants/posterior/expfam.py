"""Rényi divergences of conjugate exponential-family posteriors (paper 004, Geumlek et al. 2017).

A conjugate posterior has density p(theta | eta) = exp(T(theta) . eta - C(eta)); the data
enter only through eta = eta0 + sum_i (S(x_i), 1). Observation A.3 / eq. (14): for order l,

    D_l(P || Q) = [C(l eta_P + (1 - l) eta_Q) - l C(eta_P)] / (l - 1) + C(eta_Q),

and D_l = +inf when the mixed parameter l eta_P + (1 - l) eta_Q is not normalisable.

Beta–Bernoulli (paper 004 eqs. 10–13): with theta = logit(rho), T(theta) = (theta, -A(theta)),
A(theta) = log(1 + e^theta), the density exp(eta1 theta - eta2 A(theta)) is, in rho,
proportional to rho^(eta1 - 1) (1 - rho)^(eta2 - eta1 - 1): natural parameter
eta = (a, a + b) <-> Beta(a, b), C(eta) = ln B(eta1, eta2 - eta1). So the printed priors
"(6, 18)" and "(1, 2)" are Beta(6, 12) (prior mean 1/3, matching the paper's remark that
rho = 1/3 "closely matches the prior") and Beta(1, 1) (the uniform prior, as the paper says).

Mechanisms (paper 004, Algorithms 1–3), for n records with k successes:
Direct Beta(a + k, b + n - k); Diffuse (likelihood tempered by r) Beta(a + r k, b + r (n - k));
Concentrated (prior scaled by 1/m) Beta(a/m + k, b/m + n - k). In natural parameters these are
eta0 + sum, eta0 + r sum, eta0/m + sum.
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple, Sequence

import numpy as np
from scipy.special import betaln, gammaln

from ... import _validate as V
from ..._floats import product as _product
from ..curve import PrivacyCurve, Provenance

__all__ = [
    "expfam_renyi",
    "beta_log_normaliser",
    "beta_in_domain",
    "beta_natural",
    "beta_from_natural",
    "beta_renyi",
    "beta_pair_max_finite_order",
    "BetaBernoulliMechanism",
    "beta_bernoulli_posterior",
    "beta_bernoulli_max_order",
    "beta_bernoulli_worst_case",
    "calibrate_diffuse",
    "calibrate_concentrated",
    "dirichlet_log_normaliser",
    "dirichlet_in_domain",
    "dirichlet_natural",
    "dirichlet_renyi",
    "dirichlet_worst_case",
    "glm_tempered_posterior_rdp",
    "glm_tempered_posterior_curve",
    "HessianBound",
    "beta_log_normaliser_hessian",
    "dirichlet_log_normaliser_hessian",
    "expfam_hessian_renyi_bound",
    "beta_hessian_renyi_bound",
    "gaussian_known_variance_log_normaliser",
    "gaussian_known_variance_in_domain",
    "ClippedGaussianMechanism",
    "clipped_gaussian_prior_natural",
    "clipped_gaussian_posterior",
    "clipped_gaussian_sensitivity",
    "clipped_gaussian_rdp",
    "clipped_gaussian_epsilon",
]


def _check_order(order) -> float:
    lam = float(order)
    if not (np.isfinite(lam) and lam > 0 and lam != 1):
        raise ValueError(f"order={order!r} violates order > 0, order != 1 (Rényi order; paper 004 eq. 14)")
    return lam


# --- the general formula -------------------------------------------------------------------
@V.arguments(eta_p="numbers", eta_q="numbers", order="number")
def expfam_renyi(
    log_normaliser: Callable[[np.ndarray], float],
    eta_p,
    eta_q,
    order: float,
    in_domain: Callable[[np.ndarray], bool] | None = None,
) -> float:
    """D_order(P || Q) for two members of one exponential family (paper 004, Obs. A.3, eq. 14).

    ``log_normaliser`` is C(eta); ``in_domain(eta)`` says whether eta is normalisable (the
    caller knows the natural parameter space). P and Q must be in the domain (else
    ValueError); when the mixed parameter ``order * eta_p + (1 - order) * eta_q`` is not, the
    divergence is +inf. Without ``in_domain``, a non-finite C at the mixed point means +inf.
    """
    lam = _check_order(order)
    eta_p = np.asarray(eta_p, dtype=np.float64)
    eta_q = np.asarray(eta_q, dtype=np.float64)
    if eta_p.shape != eta_q.shape:
        raise ValueError(f"eta_p has shape {eta_p.shape} and eta_q {eta_q.shape}; they must match")
    for name, eta in (("eta_p", eta_p), ("eta_q", eta_q)):
        if in_domain is not None and not in_domain(eta):
            raise ValueError(f"{name}={eta.tolist()} violates {name} in the natural parameter space (in_domain is False)")
    mixed = lam * eta_p + (1.0 - lam) * eta_q
    if in_domain is not None and not in_domain(mixed):
        return float("inf")
    c_mixed = float(log_normaliser(mixed))
    if not np.isfinite(c_mixed):
        return float("inf")
    c_p = float(log_normaliser(eta_p))
    c_q = float(log_normaliser(eta_q))
    value = (c_mixed - lam * c_p) / (lam - 1.0) + c_q
    # A divergence is >= 0; rounding in the cancellation of C values can leave -1e-15.
    return max(value, 0.0)


# --- Beta ----------------------------------------------------------------------------------
def beta_log_normaliser(eta) -> float:
    """C(eta) = ln B(eta1, eta2 - eta1) for the Beta family in paper 004's natural parameters."""
    eta = np.asarray(eta, dtype=np.float64)
    return betaln(eta[..., 0], eta[..., 1] - eta[..., 0])


def beta_in_domain(eta) -> bool:
    """eta = (a, a + b) is normalisable iff a > 0 and b > 0."""
    eta = np.asarray(eta, dtype=np.float64)
    return bool(np.all(eta[..., 0] > 0) and np.all(eta[..., 1] - eta[..., 0] > 0))


@V.arguments(a="numbers", b="numbers")
def beta_natural(a, b) -> np.ndarray:
    """Beta(a, b) -> natural parameter (a, a + b)."""
    return np.stack(np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(a, np.float64) + np.asarray(b, np.float64)), axis=-1)


def beta_from_natural(eta) -> tuple[np.ndarray, np.ndarray]:
    """Natural parameter (eta1, eta2) -> Beta(eta1, eta2 - eta1)."""
    eta = np.asarray(eta, dtype=np.float64)
    return eta[..., 0], eta[..., 1] - eta[..., 0]


@V.arguments(a_p="numbers", b_p="numbers", a_q="numbers", b_q="numbers", order="numbers")
def beta_renyi(a_p, b_p, a_q, b_q, order) -> np.ndarray:
    """D_order(Beta(a_p, b_p) || Beta(a_q, b_q)), vectorised; +inf where the mixed
    parameters l a_p + (1 - l) a_q or l b_p + (1 - l) b_q are <= 0 (paper 004 eq. 14)."""
    a_p, b_p, a_q, b_q, lam = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a_p, b_p, a_q, b_q, order)))
    for name, value in (("a_p", a_p), ("b_p", b_p), ("a_q", a_q), ("b_q", b_q)):
        bad = ~((value > 0) & np.isfinite(value))
        if np.any(bad):
            raise ValueError(f"{name}={V._fmt(float(value[bad].ravel()[0]))} violates {name} > 0 (finite): a Beta parameter")
    if np.any(~(lam > 0)) or np.any(lam == 1) or np.any(~np.isfinite(lam)):
        raise ValueError(f"order={order!r} violates order > 0, order != 1")
    a_m = lam * a_p + (1 - lam) * a_q
    b_m = lam * b_p + (1 - lam) * b_q
    ok = (a_m > 0) & (b_m > 0)
    a_m = np.where(ok, a_m, 1.0)
    b_m = np.where(ok, b_m, 1.0)
    val = (betaln(a_m, b_m) - lam * betaln(a_p, b_p)) / (lam - 1) + betaln(a_q, b_q)
    out = np.where(ok, np.maximum(val, 0.0), np.inf)
    return out if out.ndim else float(out)


@V.arguments(a_p="number", b_p="number", a_q="number", b_q="number")
def beta_pair_max_finite_order(a_p, b_p, a_q, b_q) -> float:
    """Supremum of the orders l > 1 at which D_l(Beta(a_p, b_p) || Beta(a_q, b_q)) is finite.

    l x_p + (1 - l) x_q > 0 fails only for a coordinate with x_q > x_p, at
    l = x_q / (x_q - x_p); the set of finite orders is the open interval (1, sup).
    For Q one count away from P (x_q = x_p + 1) this is 1 + x_p: the "1 + min(a, b)" rule.
    """
    sup = np.inf
    for xp, xq in ((a_p, a_q), (b_p, b_q)):
        xp, xq = float(xp), float(xq)
        if xq > xp:
            sup = min(sup, xq / (xq - xp))
    return float(sup)


def _check_tempering(diffuse_r, concentrate_m) -> None:
    """The two knobs every conjugate mechanism here has: the likelihood tempered by
    ``diffuse_r`` > 0 (paper 004 Algorithm 2) and the prior scaled by 1/``concentrate_m`` > 0
    (Algorithm 3); r = m = 1 is Direct sampling."""
    V.positive("diffuse_r", diffuse_r)
    V.positive("concentrate_m", concentrate_m)


def _validated_by(**rules: Callable) -> Callable:
    """A mechanism's ``validated()``: each field checked by its rule (``rule(name, value)``,
    in the order given), then the tempering knobs (:func:`_check_tempering`); returns the
    mechanism itself."""

    def validated(self):
        for name, rule in rules.items():
            rule(name, getattr(self, name))
        _check_tempering(self.diffuse_r, self.concentrate_m)
        return self

    validated.__doc__ = f"The mechanism itself after checking {', '.join(rules)}, diffuse_r and concentrate_m (ValueError naming the first that fails)."
    return validated


class BetaBernoulliMechanism(NamedTuple):
    """A Beta–Bernoulli posterior sampler of paper 004: prior Beta(prior_a, prior_b) (natural
    parameter (prior_a, prior_a + prior_b)), n records, likelihood tempered by ``diffuse_r``
    (Algorithm 2) and prior scaled by 1/``concentrate_m`` (Algorithm 3). r = m = 1 is Direct."""

    prior_a: float
    prior_b: float
    n: int
    diffuse_r: float = 1.0
    concentrate_m: float = 1.0

    validated = _validated_by(prior_a=V.positive, prior_b=V.positive, n=V.positive_int)


def beta_bernoulli_posterior(mech: BetaBernoulliMechanism, successes) -> tuple[np.ndarray, np.ndarray]:
    """Beta parameters sampled from on data with ``successes`` ones out of mech.n records."""
    k = np.asarray(successes, dtype=np.float64)
    if np.any(k < 0) or np.any(k > mech.n):
        raise ValueError(f"successes={successes!r} violates 0 <= successes <= n={mech.n}")
    a = mech.prior_a / mech.concentrate_m + mech.diffuse_r * k
    b = mech.prior_b / mech.concentrate_m + mech.diffuse_r * (mech.n - k)
    return a, b


def beta_bernoulli_max_order(mech: BetaBernoulliMechanism) -> float:
    """Largest order (supremum, not attained) with a finite worst-case divergence over all
    datasets of size n and replace-one neighbours: 1 + min(a0/m, b0/m)/r, reached at k = 0
    (neighbour k = 1) or k = n (neighbour n - 1). For Direct sampling this is paper 004's
    lambda* = 1 + min(a, b) (= 2 for the uniform prior (1, 2), as printed in §A.5)."""
    mech.validated()
    return 1.0 + min(mech.prior_a, mech.prior_b) / (mech.concentrate_m * mech.diffuse_r)


class WorstCase(NamedTuple):
    divergence: float
    successes_p: int  # k on the dataset whose posterior is P
    successes_q: int  # k on the neighbour (Q)


def beta_bernoulli_worst_case(mech: BetaBernoulliMechanism, order: float) -> WorstCase:
    """sup over datasets and replace-one neighbours of D_order(P || Q) (both directions count).

    Theorem A.14 of paper 004: for a fixed offset b = eta_Q - eta_P the divergence is convex in
    eta_P along the data directions (the Beta family satisfies its g_v-convexity condition,
    §A.6.1 with d = 2). The offset +r (one more success) is realisable for k in [0, n-1], the
    offset -r for k in [1, n]; a convex function on a segment peaks at an end, so the four
    candidates (0 -> 1), (n-1 -> n), (1 -> 0), (n -> n-1) cover the supremum. (A test checks
    this against all k.)
    """
    mech.validated()
    lam = _check_order(order)
    n = mech.n
    cands = [(0, 1), (n - 1, n), (1, 0), (n, n - 1)]
    best = WorstCase(-1.0, 0, 0)
    for kp, kq in cands:
        a_p, b_p = beta_bernoulli_posterior(mech, kp)
        a_q, b_q = beta_bernoulli_posterior(mech, kq)
        d = float(beta_renyi(a_p, b_p, a_q, b_q, lam))
        if d > best.divergence:
            best = WorstCase(d, kp, kq)
    return best


def _bisect_largest(f_ok: Callable[[float], bool], upper: float, rtol: float) -> float:
    """Largest x in (0, upper] with f_ok(x), for f_ok true near 0 and monotone (true then false)."""
    if f_ok(upper):
        return upper
    lo, hi = 0.0, upper
    while hi - lo > rtol * hi:
        mid = 0.5 * (lo + hi)
        if f_ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


@V.arguments(prior_a="number", prior_b="number", n="int", order="number", target_epsilon="number", rtol="number")
def calibrate_diffuse(prior_a: float, prior_b: float, n: int, order: float, target_epsilon: float, rtol: float = 1e-12) -> float:
    """Largest tempering r in (0, 1] with worst-case D_order <= target (paper 004 Theorem A.11,
    Algorithm 2). The worst case grows with r (the data's weight), so bisection applies; the
    returned r is on the safe side (its worst case is <= target)."""
    V.positive("target_epsilon", target_epsilon)
    lam = _check_order(order)
    if lam < 1:
        raise ValueError(f"order={order} violates order > 1 (RDP calibration)")
    base = BetaBernoulliMechanism(prior_a, prior_b, n).validated()
    # Beyond r = min(a, b)/(l - 1) the worst case is +inf.
    r_sup = min(1.0, min(prior_a, prior_b) / (lam - 1.0))

    def ok(r: float) -> bool:
        return beta_bernoulli_worst_case(base._replace(diffuse_r=r), lam).divergence <= target_epsilon

    _check_resolvable_tempering(r_sup, prior_a, prior_b, lam, target_epsilon)
    r = _bisect_largest(ok, r_sup, rtol)
    _check_resolvable_tempering(r, prior_a, prior_b, lam, target_epsilon)
    return r


def _check_resolvable_tempering(r: float, prior_a: float, prior_b: float, order: float, target_epsilon: float) -> None:
    """Neighbouring posteriors differ by r in a parameter that is min(prior_a, prior_b) at the
    worst case; once r is below float64's resolution there, the computed divergence is that
    of rounded (equal) parameters and any r would pass the calibration. Say so instead."""
    smallest = min(prior_a, prior_b)
    relative_error = float(np.spacing(smallest)) / r if r > 0 else math.inf
    if relative_error > 1e-6:
        raise ValueError(
            f"order={V._fmt(order)}, target_epsilon={V._fmt(float(target_epsilon))}, prior_a={V._fmt(float(prior_a))}, "
            f"prior_b={V._fmt(float(prior_b))}: the tempering r={V._fmt(r)} is below float64's resolution of the "
            f"posterior parameter min(prior_a, prior_b) (relative error {relative_error:.2g} in the neighbours' offset), "
            "so the calibration is not resolvable; use a smaller order or a larger target_epsilon"
        )


@V.arguments(prior_a="number", prior_b="number", n="int", order="number", target_epsilon="number", rtol="number")
def calibrate_concentrated(prior_a: float, prior_b: float, n: int, order: float, target_epsilon: float, rtol: float = 1e-12) -> float:
    """Largest prior scaling m in (0, 1] (prior eta0/m) with worst-case D_order <= target
    (paper 004 Theorem A.13, Algorithm 3), by bisection; the answer is on the safe side."""
    V.positive("target_epsilon", target_epsilon)
    lam = _check_order(order)
    if lam < 1:
        raise ValueError(f"order={order} violates order > 1 (RDP calibration)")
    base = BetaBernoulliMechanism(prior_a, prior_b, n).validated()

    def ok(m: float) -> bool:
        return beta_bernoulli_worst_case(base._replace(concentrate_m=m), lam).divergence <= target_epsilon

    return _bisect_largest(ok, 1.0, rtol)


# --- Dirichlet -----------------------------------------------------------------------------
@V.arguments(alpha="array")
def dirichlet_natural(alpha) -> np.ndarray:
    """Dirichlet(alpha_1..alpha_d) -> paper 004's natural parameter (alpha_1..alpha_{d-1}, sum alpha)."""
    alpha = np.asarray(alpha, dtype=np.float64)
    return np.concatenate([alpha[..., :-1], alpha.sum(axis=-1, keepdims=True)], axis=-1)


def _dirichlet_alpha(eta) -> np.ndarray:
    eta = np.asarray(eta, dtype=np.float64)
    last = eta[..., -1:] - eta[..., :-1].sum(axis=-1, keepdims=True)
    return np.concatenate([eta[..., :-1], last], axis=-1)


def dirichlet_in_domain(eta) -> bool:
    return bool(np.all(_dirichlet_alpha(eta) > 0))


def dirichlet_log_normaliser(eta) -> float:
    """C(eta) = sum_k lnGamma(alpha_k) - lnGamma(sum_k alpha_k) (paper 004 eq. 54), with
    alpha_d = eta_d - sum_{k<d} eta_k."""
    alpha = _dirichlet_alpha(eta)
    return gammaln(alpha).sum(axis=-1) - gammaln(alpha.sum(axis=-1))


@V.arguments(alpha_p="array", alpha_q="array", order="number")
def dirichlet_renyi(alpha_p, alpha_q, order) -> float:
    """D_order(Dir(alpha_p) || Dir(alpha_q)) via eq. 14; +inf outside the parameter space."""
    alpha_p = np.asarray(alpha_p, dtype=np.float64)
    alpha_q = np.asarray(alpha_q, dtype=np.float64)
    if alpha_p.ndim != 1 or alpha_p.size < 2 or alpha_p.shape != alpha_q.shape:
        raise ValueError(f"alpha_p {alpha_p.shape} and alpha_q {alpha_q.shape} must be equal 1-D shapes of length >= 2")
    for name, value in (("alpha_p", alpha_p), ("alpha_q", alpha_q)):
        bad = ~((value > 0) & np.isfinite(value))
        if np.any(bad):
            raise ValueError(f"{name}={V._fmt(value.tolist())} violates every {name} > 0 (finite): Dirichlet parameters")
    return expfam_renyi(dirichlet_log_normaliser, dirichlet_natural(alpha_p), dirichlet_natural(alpha_q), order, dirichlet_in_domain)


@V.arguments(prior_alpha="array", n="int", order="number", diffuse_r="number", concentrate_m="number")
def dirichlet_worst_case(prior_alpha: Sequence[float], n: int, order: float, diffuse_r: float = 1.0, concentrate_m: float = 1.0) -> WorstCase:
    """Worst case over count vectors of n categorical records and replace-one neighbours of
    D_order for the Dirichlet posterior Dir(alpha0/m + r counts) (paper 004 §A.6.1).

    Moving one record from category j to i is the offset r (e_i - e_j), realisable on the
    simplex {counts >= 0, counts_j >= 1, sum = n} whose vertices are e_j + (n - 1) e_k. By
    Theorem A.14 the divergence is convex in the counts for a fixed offset, so it peaks at
    one of these O(d^3) vertex pairs. Returns the divergence; the successes fields hold (j, i).
    """
    alpha0 = np.asarray(prior_alpha, dtype=np.float64)
    if alpha0.ndim != 1 or alpha0.size < 2 or np.any(~(alpha0 > 0)):
        raise ValueError(f"prior_alpha={prior_alpha!r} must be a 1-D array of >= 2 positive values")
    n = V.positive_int("n", n)
    _check_tempering(diffuse_r, concentrate_m)
    d = alpha0.size
    eye = np.eye(d)
    best = WorstCase(-1.0, 0, 0)
    for j in range(d):
        for k in range(d):
            counts = eye[j] + (n - 1) * eye[k]
            a_p = alpha0 / concentrate_m + diffuse_r * counts
            for i in range(d):
                if i == j:
                    continue
                a_q = a_p + diffuse_r * (eye[i] - eye[j])
                dv = dirichlet_renyi(a_p, a_q, order)
                if dv > best.divergence:
                    best = WorstCase(dv, j, i)
    return best


# --- GLM (tempered posterior, LSI) ---------------------------------------------------------
@V.arguments(orders="array", temperature="number", lipschitz="number", strong_convexity="number")
def glm_tempered_posterior_rdp(orders, temperature: float, lipschitz: float, strong_convexity: float) -> np.ndarray:
    """RDP of one sample from exp(-temperature sum loss) x prior: 2 rho^2 L^2 order / m
    (paper 004 §A.7.1 Lemma 1; L-Lipschitz convex loss, m-strongly convex -log prior)."""
    rho = V.positive("temperature", temperature)
    lip = V.positive("lipschitz", lipschitz)
    m = V.positive("strong_convexity", strong_convexity)
    orders = np.asarray(orders, dtype=np.float64)
    if np.any(~(orders >= 1)):
        raise ValueError(f"orders={orders.tolist()} violate order >= 1 (paper 004 Lemma 1)")
    # +inf (a vacuous bound) where the coefficient overflows float64, not OverflowError
    return _product(2.0, rho, rho, lip, lip, 1.0 / m) * orders


@V.arguments(orders="array", temperature="number", lipschitz="number", strong_convexity="number")
def glm_tempered_posterior_curve(orders, temperature: float, lipschitz: float, strong_convexity: float) -> PrivacyCurve:
    rdp = glm_tempered_posterior_rdp(orders, temperature, lipschitz, strong_convexity)
    prov = Provenance(
        result="paper 004 §A.7.1 Lemma 1 (tempered posterior, LSI)",
        mode="bound",
        assumptions=("loss L-Lipschitz and convex in w", "-log prior m-strongly convex and C^2"),
        released="posterior sample",
    )
    return PrivacyCurve.from_rdp(orders, rdp, prov)


# --- the Hessian lemma (§A.4, "Lemma 1" of the appendix) ------------------------------------
class HessianBound(NamedTuple):
    bound: float  # the bound on D_order(P || Q)
    curvature: float  # H = sup of v^T Hess C(eta_P + x v) v over the segment (v = eta_Q - eta_P)
    segment: tuple  # the x-range the sup is taken over


def beta_log_normaliser_hessian(eta) -> np.ndarray:
    """Hessian of C(eta) = ln B(eta1, eta2 - eta1) in paper 004's natural parameters:
    [[psi1(a) + psi1(b), -psi1(b)], [-psi1(b), psi1(b) - psi1(a + b)]], a = eta1, b = eta2 - eta1."""
    from scipy.special import polygamma

    a, b = beta_from_natural(eta)
    t_a, t_b, t_ab = (polygamma(1, v) for v in (a, b, a + b))
    return np.array([[t_a + t_b, -t_b], [-t_b, t_b - t_ab]])


def dirichlet_log_normaliser_hessian(eta) -> np.ndarray:
    """Hessian of the Dirichlet C(eta) (paper 004 eq. 56; trigamma psi1), natural parameters
    (alpha_1..alpha_{d-1}, sum alpha). Written from C = sum_k lnGamma(alpha_k) - lnGamma(eta_d)
    with alpha_d = eta_d - sum_{k<d} eta_k: the printed case list is the same matrix."""
    from scipy.special import polygamma

    alpha = _dirichlet_alpha(eta)
    k = alpha.size - 1
    t = polygamma(1, alpha)
    t_last = t[-1]
    h = np.empty((k + 1, k + 1))
    h[:k, :k] = t_last + np.diag(t[:k])
    h[:k, k] = h[k, :k] = -t_last
    h[k, k] = t_last - polygamma(1, alpha.sum())
    return h


def expfam_hessian_renyi_bound(log_normaliser_hessian, eta_p, eta_q, order: float, *, mode: str = "corrected",
                               curvature_convex: bool = False, grid: int = 4097) -> HessianBound:
    """Paper 004 §A.4 Lemma 1 (the Hessian lemma) as a function.

    With g(x) = C(eta_P + x v), v = eta_Q - eta_P, eq. 14 is D = e(1 - l)/(l - 1) + e(1) for the
    first-order Taylor remainders e, so D <= (l/2) sup g'' over x in [1 - l, 1]. That is
    ``mode="corrected"`` (NOTES 004: "the proof gives l H |d eta|^2/2 and needs the segment
    x in [1-l, 1]"). ``mode="paper"`` is the statement as printed: l sup g'' over
    [-(l - 1), l - 1] (twice the constant; for l < 2 its segment misses eta_Q's side).
    g''(x) = v^T Hess C v, bounded in the printed lemma by |Hess C| |v|^2; the directional value is
    what the proof uses (eq. 22) and is never larger.

    The sup is exact when ``curvature_convex`` (g'' convex along the segment, as Theorem A.14
    assumes for v in Diff: Beta, Dirichlet, Gaussian), else a max over ``grid`` points (an
    estimate of the sup, from below). +inf if a point of the segment is not normalisable
    (the Hessian there is not finite).
    """
    lam = _check_order(order)
    if lam <= 1:
        raise ValueError(f"order={order!r} violates order > 1 (paper 004 §A.4 Lemma 1)")
    V.one_of("mode", mode, ("corrected", "paper"))
    eta_p = np.asarray(eta_p, dtype=np.float64)
    eta_q = np.asarray(eta_q, dtype=np.float64)
    if eta_p.shape != eta_q.shape:
        raise ValueError(f"eta_p has shape {eta_p.shape} and eta_q {eta_q.shape}; they must match")
    v = eta_q - eta_p
    lo, hi = (1.0 - lam, 1.0) if mode == "corrected" else (1.0 - lam, lam - 1.0)
    xs = np.array([lo, hi]) if curvature_convex else np.unique(np.concatenate([np.linspace(lo, hi, int(grid)), [0.0, 1.0]]))
    xs = xs[(xs >= lo) & (xs <= hi)]

    def curvature(x):
        h = np.asarray(log_normaliser_hessian(eta_p + x * v), dtype=np.float64)
        return float(v @ h @ v) if np.all(np.isfinite(h)) else float("inf")

    with np.errstate(all="ignore"):
        h_sup = max(curvature(x) for x in xs)
    if not (h_sup >= 0):  # NaN from a point outside the domain
        h_sup = float("inf")
    factor = lam / 2.0 if mode == "corrected" else lam
    return HessianBound(factor * h_sup, h_sup, (lo, hi))


def beta_hessian_renyi_bound(a_p, b_p, a_q, b_q, order: float, mode: str = "corrected") -> HessianBound:
    """The Hessian lemma for two Betas. Exact sup when the pair differs along Diff (same a + b:
    g'' = v1^2 (psi1(a) + psi1(b)), convex), a grid estimate otherwise; +inf where the segment
    leaves the parameter space."""
    eta_p, eta_q = beta_natural(a_p, b_p), beta_natural(a_q, b_q)
    along_diff = bool(np.isclose(eta_p[1], eta_q[1], rtol=0, atol=1e-12 * max(1.0, abs(eta_p[1]))))
    lam = _check_order(order)
    lo, hi = (1.0 - lam, 1.0) if mode == "corrected" else (1.0 - lam, lam - 1.0)
    for x in (lo, hi):
        if not beta_in_domain(eta_p + x * (eta_q - eta_p)):
            return HessianBound(float("inf"), float("inf"), (lo, hi))
    return expfam_hessian_renyi_bound(beta_log_normaliser_hessian, eta_p, eta_q, lam, mode=mode, curvature_convex=along_diff)


# --- §A.6.2: Gaussian mean with known variance, clipped data ---------------------------------
def gaussian_known_variance_log_normaliser(eta, noise_variance: float) -> float:
    """C(eta) for the conjugate family of N(theta, s^2) with known s^2 (paper 004 §A.6.2).

    S(x) = x / s^2, A(theta) = theta^2 / (2 s^2); the posterior exp(eta1 theta - eta2 theta^2/(2 s^2))
    is N(eta1 s^2 / eta2, s^2 / eta2), so C(eta) = eta1^2 s^2 / (2 eta2) + ln(2 pi s^2 / eta2) / 2,
    normalisable iff eta2 > 0.
    """
    s2 = V.positive("noise_variance", noise_variance)
    eta = np.asarray(eta, dtype=np.float64)
    e1, e2 = eta[..., 0], eta[..., 1]
    with np.errstate(all="ignore"):
        out = np.where(e2 > 0, e1 * e1 * s2 / (2.0 * e2) + 0.5 * np.log(2.0 * np.pi * s2 / e2), np.inf)
    return out if out.ndim else float(out)


def gaussian_known_variance_in_domain(eta) -> bool:
    return bool(np.all(np.asarray(eta, dtype=np.float64)[..., 1] > 0))


class ClippedGaussianMechanism(NamedTuple):
    """Paper 004 §A.6.2: observations x_i ~ N(theta, s^2) (s = ``noise_sd`` known), each clipped
    to [-clip, clip] (eq. 63) before the conjugate update; prior N(prior_mean, prior_sd^2)
    (natural parameter: :func:`clipped_gaussian_prior_natural`); optionally tempered
    (``diffuse_r``, Algorithm 2) or with the prior scaled by 1/``concentrate_m`` (Algorithm 3)."""

    noise_sd: float
    prior_mean: float
    prior_sd: float
    n: int
    clip: float
    diffuse_r: float = 1.0
    concentrate_m: float = 1.0

    validated = _validated_by(noise_sd=V.positive, prior_mean=lambda name, v: V.finite_array(name, np.float64(v)),
                              prior_sd=V.positive, n=V.positive_int, clip=V.positive)


def clipped_gaussian_prior_natural(mech: ClippedGaussianMechanism) -> np.ndarray:
    """eta0 with N(prior_mean, prior_sd^2) = N(eta1 s^2/eta2, s^2/eta2): eta2 = s^2/prior_sd^2
    (pseudo-observations), eta1 = prior_mean / prior_sd^2."""
    s2 = mech.noise_sd**2
    return np.array([mech.prior_mean / mech.prior_sd**2, s2 / mech.prior_sd**2])


def clipped_gaussian_posterior(mech: ClippedGaussianMechanism, data) -> tuple[float, float]:
    """(mean, variance) of the mechanism's posterior on ``data`` (n observations, clipped first)."""
    mech.validated()
    x = np.asarray(data, dtype=np.float64).reshape(-1)
    if x.size != mech.n:
        raise ValueError(f"data has {x.size} observations; the mechanism has n={mech.n}")
    V.finite_array("data", x)
    s2 = mech.noise_sd**2
    eta = clipped_gaussian_prior_natural(mech) / mech.concentrate_m + mech.diffuse_r * np.array([np.clip(x, -mech.clip, mech.clip).sum() / s2, x.size])
    return float(eta[0] * s2 / eta[1]), float(s2 / eta[1])


def clipped_gaussian_sensitivity(mech: ClippedGaussianMechanism, mode: str = "corrected") -> float:
    """|eta_P - eta_Q| for replace-one neighbours: r 2 clip / s^2 (one clipped value moves from
    -clip to +clip). ``mode="paper"`` is the printed |eta_P - eta_Q| <= Delta, i.e. r clip / s^2
    (NOTES 004: "clipping to [-D, D] gives sensitivity 2D, not D")."""
    V.one_of("mode", mode, ("corrected", "paper"))
    mech.validated()
    width = 2.0 * mech.clip if mode == "corrected" else mech.clip
    return mech.diffuse_r * width / mech.noise_sd**2


def clipped_gaussian_rdp(mech: ClippedGaussianMechanism, orders, mode: str = "corrected") -> np.ndarray:
    """Worst-case RDP of one posterior sample, order (mean gap)^2 / (2 var): the posterior
    variance var = s^2 / eta2 does not depend on the data, and the mean eta1 s^2 / eta2 moves by
    at most (sensitivity) s^2 / eta2. Equal variances, so this is exact, the same in both
    directions and attained by the pair with one clipped value at -clip and at +clip."""
    orders = np.asarray(orders, dtype=np.float64)
    if np.any(~(orders > 0)) or np.any(~np.isfinite(orders)):
        raise ValueError(f"orders={orders.tolist()} violate order > 0 (finite)")
    sens = clipped_gaussian_sensitivity(mech, mode)
    s2 = mech.noise_sd**2
    eta2 = clipped_gaussian_prior_natural(mech)[1] / mech.concentrate_m + mech.diffuse_r * mech.n
    var = s2 / eta2
    gap = sens * s2 / eta2  # mean = eta1 s^2 / eta2
    return orders * gap * gap / (2.0 * var)


def clipped_gaussian_epsilon(mech: ClippedGaussianMechanism, delta: float, mode: str = "corrected") -> float:
    """Tight worst-case eps(delta) of one posterior sample: the analytic Gaussian mechanism at
    mu = mean gap / posterior sd."""
    from ..mechanisms.gaussian_divergence import analytic_gaussian_epsilon

    rdp1 = float(clipped_gaussian_rdp(mech, [1.0], mode)[0])  # = mu^2 / 2
    return analytic_gaussian_epsilon(math.sqrt(2.0 * rdp1), V.in_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True))

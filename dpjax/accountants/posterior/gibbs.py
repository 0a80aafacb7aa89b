"""Gibbs posteriors G_beta(theta | D) ∝ exp(-beta sum_i loss(theta, x_i)) pi(theta) (paper 002,
Minami et al. 2016, appendix; NOTES 002).

- Exponential mechanism (Theorem 3 / §A): eps = 2 beta Delta_L, pure DP.
- Theorem 7 / eq. D.7 (convex, L-Lipschitz, non-negative loss; -log prior m-strongly convex):
  delta(eps) = exp(-(m/(8 L^2 beta^2)) (eps - 2 L^2 beta^2/m)^2) for eps > 2 L^2 beta^2/m.
  Inverted exactly: eps(delta) = rho + 2 sqrt(rho log(1/delta)), rho = 2 L^2 beta^2/m — the
  zCDP-to-DP formula, so the same curve is (rho)-zCDP-shaped (RDP rho * order; paper 004 §A.7.1
  proves that RDP form directly).
- Corollary 8: beta < (eps/(2L)) sqrt(m/(1 + 2 log(1/delta))) is sufficient only while
  eps <= 2 (s - sqrt(s (s - 1))), s = 1 + 2 log(1/delta) (just above 1; see
  :func:`corollary8_max_epsilon`); NOTES 002 "valid for eps <~ 1".
- Gaussian mean (App. B): loss |theta - x|^2/2, |x| <= r, prior N(0, I/lambda): posterior
  N(beta sum x/(n beta + lambda), I/(n beta + lambda)); Theorem 15's delta; exact RDP
  order beta^2 |x1 - x1'|^2/(2 (n beta + lambda)); (B.8–9) beta <= (n/(2 r^2)) eta(eps, delta);
  (B.7) the classical Gaussian-mechanism rule; and the exact threshold from the analytic
  Gaussian mechanism.
"""
from __future__ import annotations

import math

import numpy as np

from ... import _validate as V
from ..curve import PrivacyCurve, Provenance
from ..mechanisms.gaussian_divergence import analytic_gaussian_delta, analytic_gaussian_epsilon

__all__ = [
    "exponential_mechanism_epsilon",
    "exponential_mechanism_curve",
    "lsi_rho",
    "lsi_delta",
    "lsi_epsilon",
    "lsi_profile_curve",
    "lsi_zcdp_curve",
    "lsi_temperature",
    "corollary8_max_epsilon",
    "corollary8_temperature",
    "gaussian_mean_posterior",
    "gaussian_mean_theorem15_delta",
    "gaussian_mean_exact_rdp",
    "gaussian_mean_exact_epsilon",
    "eta_b9",
    "gaussian_mean_temperature_b89",
    "gaussian_mean_temperature_b7",
    "analytic_gaussian_max_mu",
    "temperature_from_rho",
    "bernoulli_logit_gibbs_delta",
    "bernoulli_logit_gibbs_max_temperature",
    "gaussian_mean_temperature_exact",
]


def _delta(delta) -> float:
    return V.in_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True)


# --- exponential mechanism ----------------------------------------------------------------
@V.arguments(temperature="number", loss_sensitivity="number")
def exponential_mechanism_epsilon(temperature: float, loss_sensitivity: float) -> float:
    """eps = 2 beta Delta_L (paper 002 Theorem 3 / eq. A.2), Delta_L = sup |L(., D) - L(., D')|."""
    return 2.0 * V.positive("temperature", temperature) * V.nonnegative("loss_sensitivity", loss_sensitivity)


@V.arguments(temperature="number", loss_sensitivity="number", orders="array?")
def exponential_mechanism_curve(temperature: float, loss_sensitivity: float, orders=None) -> PrivacyCurve:
    """Pure eps-DP as a curve: profile delta(0) = tanh(eps/2) (the TV bound of eps-DP),
    delta(eps) = 0; RDP min(eps, order eps^2/2) (Bun & Steinke 2016 Prop 3.3: eps-DP => eps^2/2-zCDP)."""
    eps = exponential_mechanism_epsilon(temperature, loss_sensitivity)
    prov = Provenance("paper 002 Theorem 3 (exponential mechanism)", "bound", ("loss sensitivity Delta_L",), "posterior sample")
    orders = np.asarray(np.concatenate([np.linspace(1.1, 10, 90), np.logspace(1.05, 3, 40)]) if orders is None else orders, np.float64)
    rdp = np.minimum(eps, 0.5 * orders * eps * eps)
    if eps == 0:
        return PrivacyCurve.from_rdp(orders, rdp, prov)
    base = PrivacyCurve.from_rdp(orders, rdp, prov)
    return PrivacyCurve(orders=base.orders, rdp=base.rdp, epsilons=np.array([0.0, eps]), deltas=np.array([math.tanh(eps / 2.0), 0.0]), provenance=prov)


# --- Theorem 7 / eq. D.7 ------------------------------------------------------------------
@V.arguments(temperature="number", lipschitz="number", strong_convexity="number")
def lsi_rho(temperature: float, lipschitz: float, strong_convexity: float) -> float:
    """rho = 2 L^2 beta^2 / m (the KL bound D.6 and the zCDP parameter)."""
    b = V.positive("temperature", temperature)
    lip = V.positive("lipschitz", lipschitz)
    m = V.positive("strong_convexity", strong_convexity)
    return 2.0 * lip * lip * b * b / m


@V.arguments(epsilon="numbers", temperature="number", lipschitz="number", strong_convexity="number")
def lsi_delta(epsilon, temperature: float, lipschitz: float, strong_convexity: float) -> np.ndarray:
    """Eq. D.7: delta(eps) = exp(-(eps - rho)^2/(4 rho)) for eps > rho (= m/(8 L^2 beta^2) form);
    1 (no guarantee) for eps <= rho."""
    rho = lsi_rho(temperature, lipschitz, strong_convexity)
    e = np.asarray(epsilon, dtype=np.float64)
    if np.any(np.isnan(e)) or np.any(e < 0):
        raise ValueError(f"epsilon={epsilon!r} violates epsilon >= 0")
    out = np.where(e > rho, np.exp(-np.square(e - rho) / (4.0 * rho)), 1.0)
    return out if out.ndim else float(out)


@V.arguments(delta="numbers", temperature="number", lipschitz="number", strong_convexity="number")
def lsi_epsilon(delta, temperature: float, lipschitz: float, strong_convexity: float) -> float:
    """Exact inverse of D.7: eps(delta) = 2 L^2 beta^2/m + 2 L beta sqrt(2 log(1/delta)/m)."""
    d = _delta(delta)
    rho = lsi_rho(temperature, lipschitz, strong_convexity)
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / d))


@V.arguments(temperature="number", lipschitz="number", strong_convexity="number", epsilons="array?")
def lsi_profile_curve(temperature: float, lipschitz: float, strong_convexity: float, epsilons=None) -> PrivacyCurve:
    """D.7 as a delta(eps) profile on a grid of eps (default: 400 points up to delta ~ 1e-300)."""
    rho = lsi_rho(temperature, lipschitz, strong_convexity)
    if epsilons is None:
        epsilons = np.concatenate([[0.0], rho + 2.0 * np.sqrt(rho * np.logspace(-3, math.log10(690.0), 400))])
    prov = Provenance(
        "paper 002 Theorem 7 / eq. D.7 (LSI concentration)",
        "bound",
        ("loss convex, L-Lipschitz and non-negative", "-log prior m-strongly convex"),
        "posterior sample",
    )
    return PrivacyCurve.from_profile(epsilons, lsi_delta(epsilons, temperature, lipschitz, strong_convexity), prov)


@V.arguments(temperature="number", lipschitz="number", strong_convexity="number", orders="array")
def lsi_zcdp_curve(temperature: float, lipschitz: float, strong_convexity: float, orders) -> PrivacyCurve:
    """rho-zCDP form, RDP = rho * order with rho = 2 L^2 beta^2/m (paper 004 §A.7.1 Lemma 1)."""
    rho = lsi_rho(temperature, lipschitz, strong_convexity)
    orders = np.asarray(orders, np.float64)
    prov = Provenance(
        "paper 002 Theorem 7 as zCDP (paper 004 Lemma 1)",
        "bound",
        ("loss convex and L-Lipschitz", "-log prior m-strongly convex"),
        "posterior sample",
    )
    return PrivacyCurve.from_rdp(orders, rho * orders, prov)


@V.arguments(epsilon="number", delta="number")
def eta_b9(epsilon: float, delta: float) -> float:
    """eta(eps, delta) = eps + 2 log(1/delta) - 2 sqrt(log(1/delta)(eps + log(1/delta))) (B.9)
    = (sqrt(t + eps) - sqrt(t))^2 with t = log(1/delta): evaluated as
    eps^2/(sqrt(t + eps) + sqrt(t))^2, free of the cancellation in the printed form.
    It is the largest rho with rho + 2 sqrt(rho t) <= eps."""
    e = V.positive("epsilon", epsilon)
    t = math.log(1.0 / _delta(delta))
    return e * e / (math.sqrt(t + e) + math.sqrt(t)) ** 2


@V.arguments(epsilon="number", delta="number", lipschitz="number", strong_convexity="number")
def lsi_temperature(epsilon: float, delta: float, lipschitz: float, strong_convexity: float) -> float:
    """Largest beta for which D.7 gives (eps, delta): rho = 2 L^2 beta^2/m = eta(eps, delta)."""
    lip = V.positive("lipschitz", lipschitz)
    m = V.positive("strong_convexity", strong_convexity)
    return math.sqrt(eta_b9(epsilon, delta) * m / 2.0) / lip


@V.arguments(delta="number")
def corollary8_max_epsilon(delta: float) -> float:
    """Largest eps at which Corollary 8's beta is sufficient by D.7 itself.

    With beta = B(eps, delta), rho = eps^2/(2s), s = 1 + 2 log(1/delta); D.7 needs
    rho + 2 sqrt(rho log(1/delta)) <= eps, i.e. eps <= 2 (s - sqrt(s (s - 1))) (in (1, 2]).
    """
    s = 1.0 + 2.0 * math.log(1.0 / _delta(delta))
    # 2 (s - sqrt(s^2 - s)) = 2 s / (s + sqrt(s^2 - s)) without cancellation
    return 2.0 * s / (s + math.sqrt(s * s - s))


@V.arguments(epsilon="number", delta="number", lipschitz="number", strong_convexity="number")
def corollary8_temperature(epsilon: float, delta: float, lipschitz: float, strong_convexity: float) -> float:
    """Corollary 8 (eq. C.1): beta < (eps/(2L)) sqrt(m/(1 + 2 log(1/delta))) gives (eps, delta)-DP.

    Raises ValueError for eps above :func:`corollary8_max_epsilon` (about 1), where the
    corollary's simplification of D.7 no longer implies the guarantee; use
    :func:`lsi_temperature` (the exact inversion) there.
    """
    e = V.positive("epsilon", epsilon)
    d = _delta(delta)
    lip = V.positive("lipschitz", lipschitz)
    m = V.positive("strong_convexity", strong_convexity)
    e_max = corollary8_max_epsilon(d)
    if e > e_max:
        raise ValueError(
            f"epsilon={e:.6g} violates epsilon <= 2 (s - sqrt(s(s-1))) = {e_max:.6g}, s = 1 + 2 log(1/delta), "
            "the range where paper 002 Corollary 8 follows from eq. D.7 (use lsi_temperature)"
        )
    return e / (2.0 * lip) * math.sqrt(m / (1.0 + 2.0 * math.log(1.0 / d)))


# --- Gaussian mean (App. B) ---------------------------------------------------------------
@V.arguments(data="array", temperature="number", prior_precision="number")
def gaussian_mean_posterior(data, temperature: float, prior_precision: float):
    """(B.3): N(beta sum x/(n beta + lambda), I/(n beta + lambda)); data has shape (n, d) or (n,).
    Returns (mean (d,), variance)."""
    x = np.asarray(data, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    V.finite_array("data", x)
    b = V.positive("temperature", temperature)
    lam = V.nonnegative("prior_precision", prior_precision)
    prec = x.shape[0] * b + lam
    return b * x.sum(axis=0) / prec, 1.0 / prec


def _prec(n, temperature, prior_precision):
    n = V.positive_int("n", n)
    return n * V.positive("temperature", temperature) + V.nonnegative("prior_precision", prior_precision)


@V.arguments(epsilon="numbers", temperature="number", n="number", radius="number", prior_precision="number")
def gaussian_mean_theorem15_delta(epsilon, temperature: float, n: int, radius: float, prior_precision: float = 0.0):
    """(B.4): delta = exp(-(n beta + lambda)/(8 r^2 beta^2) (eps - 2 r^2 beta^2/(n beta + lambda))^2)
    for eps >= 2 r^2 beta^2/(n beta + lambda); 1 below."""
    r = V.positive("radius", radius)
    prec = _prec(n, temperature, prior_precision)
    rho = 2.0 * r * r * temperature**2 / prec
    e = np.asarray(epsilon, np.float64)
    if np.any(np.isnan(e)) or np.any(e < 0):
        raise ValueError(f"epsilon={epsilon!r} violates epsilon >= 0")
    out = np.where(e >= rho, np.exp(-np.square(e - rho) / (4.0 * rho)), 1.0)
    return out if out.ndim else float(out)


@V.arguments(orders="array", temperature="number", n="number", radius="number", prior_precision="number")
def gaussian_mean_exact_rdp(orders, temperature: float, n: int, radius: float, prior_precision: float = 0.0) -> np.ndarray:
    """Exact worst-case RDP: order beta^2 (2r)^2/(2 (n beta + lambda)) (equal covariances; the
    worst pair has |x1 - x1'| = 2r)."""
    r = V.positive("radius", radius)
    prec = _prec(n, temperature, prior_precision)
    return np.asarray(orders, np.float64) * temperature**2 * (2.0 * r) ** 2 / (2.0 * prec)


def _mu(temperature, n, radius, prior_precision) -> float:
    """Mean gap over sd for the worst pair: beta 2r / sqrt(n beta + lambda)."""
    return temperature * 2.0 * radius / math.sqrt(_prec(n, temperature, prior_precision))


@V.arguments(delta="number", temperature="number", n="number", radius="number", prior_precision="number")
def gaussian_mean_exact_epsilon(delta: float, temperature: float, n: int, radius: float, prior_precision: float = 0.0) -> float:
    """Tight eps(delta) of the Gibbs posterior for Gaussian mean (analytic Gaussian mechanism)."""
    r = V.positive("radius", radius)
    return analytic_gaussian_epsilon(_mu(temperature, n, r, prior_precision), _delta(delta))


@V.arguments(epsilon="number", delta="number")
def analytic_gaussian_max_mu(epsilon: float, delta: float) -> float:
    """Largest mu = sensitivity/sigma with analytic-Gaussian delta(eps) <= delta (bisection;
    delta(eps) increases with mu). Returned on the safe side, relative precision 1e-13."""
    e = V.positive("epsilon", epsilon)
    d = _delta(delta)
    lo, hi = 0.0, 1.0
    while analytic_gaussian_delta(hi, e) <= d:
        lo, hi = hi, 2.0 * hi
    while hi - lo > 1e-13 * hi:
        mid = 0.5 * (lo + hi)
        if analytic_gaussian_delta(mid, e) <= d:
            lo = mid
        else:
            hi = mid
    return lo


@V.arguments(rho="number", n="number", radius="number", prior_precision="number")
def temperature_from_rho(rho: float, n: int, radius: float, prior_precision: float = 0.0) -> float:
    """Solve 2 r^2 beta^2/(n beta + lambda) = rho for beta > 0 (the Gaussian-mean posterior's
    worst-case zCDP parameter equals rho; mu^2/2 for the Gaussian mechanism's mu)."""
    rho = V.nonnegative("rho", rho)
    n = V.positive("n", n)
    r = V.positive("radius", radius)
    lam = V.nonnegative("prior_precision", prior_precision)
    # 2 r^2 beta^2 - rho n beta - rho lambda = 0; the root is formed without squaring rho n or
    # r (hypot, and r divided out twice), so it stays finite wherever it is representable.
    disc = math.hypot(rho * n, math.sqrt(8.0 * rho * lam) * r)
    beta = (rho * n + disc) / (4.0 * r) / r
    if not math.isfinite(beta) or (beta == 0 and rho > 0):
        raise ValueError(
            f"rho={V._fmt(rho)}, n={V._fmt(n)}, radius={V._fmt(radius)}, prior_precision={V._fmt(lam)}: the temperature "
            f"solving 2 radius^2 beta^2 / (n beta + prior_precision) = rho is {'above' if beta else 'below'} float64's range"
        )
    return beta


@V.arguments(epsilon="number", delta="number", n="number", radius="number", prior_precision="number")
def gaussian_mean_temperature_b89(epsilon: float, delta: float, n: int, radius: float, prior_precision: float = 0.0) -> float:
    """Largest beta with Theorem 15's delta <= delta: (B.8) beta = (n/(2 r^2)) eta(eps, delta) at
    lambda = 0; for lambda > 0 the root of 2 r^2 beta^2/(n beta + lambda) = eta."""
    n = V.positive_int("n", n)
    r = V.positive("radius", radius)
    lam = V.nonnegative("prior_precision", prior_precision)
    return temperature_from_rho(eta_b9(epsilon, delta), n, r, lam)


@V.arguments(epsilon="number", delta="number", n="number", radius="number")
def gaussian_mean_temperature_b7(epsilon: float, delta: float, n: int, radius: float) -> float:
    """(B.7), the classical Gaussian-mechanism rule (Hall 2013, Prop 1.3.3) at lambda = 0:
    beta <= eps^2 n / (8 r^2 log(2/delta)) (a sufficient rule for eps <= 1)."""
    e = V.positive("epsilon", epsilon)
    d = _delta(delta)
    n = V.positive_int("n", n)
    r = V.positive("radius", radius)
    return e * e * n / (8.0 * r * r * math.log(2.0 / d))


@V.arguments(epsilon="number", delta="number", n="number", radius="number", prior_precision="number")
def gaussian_mean_temperature_exact(epsilon: float, delta: float, n: int, radius: float, prior_precision: float = 0.0) -> float:
    """Largest beta with tight (eps, delta)-DP: mu(beta) = 2 r beta/sqrt(n beta + lambda) equal
    to the analytic Gaussian mechanism's largest mu; i.e. rho = mu*^2/2 in 2 r^2 beta^2/(n beta + lambda)."""
    n = V.positive_int("n", n)
    r = V.positive("radius", radius)
    lam = V.nonnegative("prior_precision", prior_precision)
    mu = analytic_gaussian_max_mu(epsilon, delta)
    return temperature_from_rho(mu * mu / 2.0, n, r, lam)


# --- Example 17: Bernoulli likelihood, logit-normal prior (exact, by quadrature) ----------
def _logit_gibbs_log_density(theta, successes, temperature, n, prior_mean, prior_variance):
    # log of sigma(theta)^(beta k) (1 - sigma(theta))^(beta (n - k)) N(theta; mu, v), unnormalised
    return (
        temperature * successes * theta
        - temperature * n * np.logaddexp(0.0, theta)
        - 0.5 * (theta - prior_mean) ** 2 / prior_variance
    )


def _logit_gibbs_log_cdf(successes, temperature, n, prior_mean, prior_variance):
    """(log Z, log CDF callable) of the Example 17 Gibbs posterior with k successes, by
    adaptive quadrature of the density shifted by its log-maximum (it is log-concave)."""
    from scipy import integrate, optimize

    f = lambda t: _logit_gibbs_log_density(t, successes, temperature, n, prior_mean, prior_variance)
    mode = optimize.minimize_scalar(lambda t: -f(t), bracket=(prior_mean - 1.0, prior_mean + 1.0)).x
    peak = f(mode)
    # curvature at the mode >= 1/v: the mass sits within a few multiples of sqrt(v)
    width = math.sqrt(prior_variance)
    lo, hi = mode - 40.0 * width, mode + 40.0 * width
    g = lambda t: math.exp(f(t) - peak)
    total = integrate.quad(g, lo, hi, points=[mode], limit=400, epsabs=0.0, epsrel=1e-13)[0]

    def log_cdf(t):
        if t <= lo:
            return -np.inf
        if t >= hi:
            return 0.0
        # integrate the smaller side to keep relative accuracy in the tails
        if t < mode:
            part = integrate.quad(g, lo, t, limit=400, epsabs=0.0, epsrel=1e-13)[0]
            return math.log(part) - math.log(total) if part > 0 else -np.inf
        upper = integrate.quad(g, t, hi, limit=400, epsabs=0.0, epsrel=1e-13)[0]
        return math.log1p(-upper / total)

    return peak + math.log(total), log_cdf


@V.arguments(epsilon="number", temperature="number", n="number", prior_variance="number", prior_mean="number")
def bernoulli_logit_gibbs_delta(epsilon: float, temperature: float, n: int, prior_variance: float, prior_mean: float = 0.0) -> float:
    """Exact worst-case delta(eps) of one sample from paper 002 Example 17's Gibbs posterior
    G(theta | D) ∝ sigma(theta)^(beta k) (1 - sigma(theta))^(beta (n - k)) N(theta; mu, v),
    over all k in 0..n and replace-one neighbours (k vs k + 1, both directions).

    The privacy loss log G_k(theta) - log G_{k+1}(theta) = -beta theta + log(Z_{k+1}/Z_k) is
    linear in theta, so the optimal set is a half-line and delta = P(S) - e^eps Q(S) needs two
    CDF values, computed by quadrature. O(n) quadratures: meant for n up to a few hundred.
    """
    e = V.nonnegative("epsilon", epsilon)
    b = V.positive("temperature", temperature)
    n = V.positive_int("n", n)
    v = V.positive("prior_variance", prior_variance)
    mu = float(prior_mean)
    cache = {k: _logit_gibbs_log_cdf(k, b, n, mu, v) for k in range(n + 1)}
    worst = 0.0
    for k in range(n):
        log_z_k, cdf_k = cache[k]
        log_z_k1, cdf_k1 = cache[k + 1]
        shift = log_z_k1 - log_z_k
        # P = G_k, Q = G_{k+1}: loss = -b theta + shift > eps  <=>  theta < (shift - eps)/b
        t = (shift - e) / b
        d1 = math.exp(cdf_k(t)) - math.exp(e + cdf_k1(t))
        # P = G_{k+1}, Q = G_k: loss = b theta - shift > eps  <=>  theta > (shift + eps)/b
        t2 = (shift + e) / b
        d2 = -math.expm1(cdf_k1(t2)) - math.exp(e) * -math.expm1(cdf_k(t2))
        worst = max(worst, d1, d2)
    return worst


@V.arguments(epsilon="number", delta="number", n="number", prior_variance="number", prior_mean="number", rtol="number")
def bernoulli_logit_gibbs_max_temperature(epsilon: float, delta: float, n: int, prior_variance: float, prior_mean: float = 0.0, rtol: float = 1e-6) -> float:
    """Largest beta with exact worst-case delta(eps) <= delta for Example 17 at this n
    (bisection in log beta; delta(eps) grows with beta, which the result's checks confirm)."""
    d = _delta(delta)
    f = lambda b: bernoulli_logit_gibbs_delta(epsilon, b, n, prior_variance, prior_mean) <= d
    lo = corollary8_temperature(epsilon, d, 1.0, 1.0 / prior_variance) if epsilon <= corollary8_max_epsilon(d) else 1e-6
    if not f(lo):
        raise ValueError(f"beta={lo:.6g} (Corollary 8) already fails delta={d}: no bracket")
    hi = 2.0 * lo
    while f(hi):
        lo, hi = hi, 2.0 * hi
    while hi / lo - 1.0 > rtol:
        mid = math.sqrt(lo * hi)
        if f(mid):
            lo = mid
        else:
            hi = mid
    return lo

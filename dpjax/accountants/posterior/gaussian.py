"""Privacy of one sample from a Gaussian posterior: exact values, and paper 000's bound.

Exact (mode="exact"):

- :func:`gaussian_posterior_curve` — the Rényi divergence between two Gaussian posteriors in
  d dimensions at every order, in both directions (the larger is the RDP of the pair).
- :func:`gaussian_posterior_epsilon` — tight eps(delta) of the pair (max of both directions).
  d = 1: exact hockey-stick divergence, also for unequal variances. d >= 1 with equal
  covariances: the privacy loss is a 1-D Gaussian along the mean difference in the
  Mahalanobis metric, so eps is the analytic Gaussian mechanism's at mu = |S^-1/2 dm|.
  d >= 2 with unequal covariances: the loss is a non-central quadratic form; only the RDP
  values are exact there, and the eps returned is the RDP conversion (an upper bound) —
  the result says so (``exact=False``).
- :func:`bayesian_linear_regression_posterior` — N(beta S X^T y, S), S = (alpha I + beta X^T X)^-1.

Paper 000 (Bayesian linear regression on the restricted domain of its eq. 5):

- :func:`sgld_paper_posterior_rdp_bound` — Lemma 4.2's eps1 (order nu), valid for
  n > max{1 + 10 (x_h^2/x_l^2)(nu/beta), 1 + nu x_h^2/x_l^2}; a clear error below it.
- :func:`sgld_paper_posterior_epsilon_bound` — Lemma 4.3: eps1 + ln(1/delta)/(nu - 1).
- :func:`sgld_paper_posterior_pair` — the two posteriors of the eq. 7 pair (D1 = n copies of
  (x_h, c x_h); D2 replaces one by (x_l, c x_l)), computed without cancellation.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ... import _validate as V
from ..conversions import rdp_to_epsilon
from ..curve import PrivacyCurve, Provenance
from ..mechanisms.gaussian_divergence import analytic_gaussian_epsilon, check_gaussian, gaussian_epsilon, gaussian_renyi

__all__ = [
    "bayesian_linear_regression_posterior",
    "gaussian_posterior_rdp",
    "gaussian_posterior_curve",
    "PosteriorEpsilon",
    "gaussian_posterior_epsilon",
    "sgld_paper_posterior_threshold",
    "sgld_paper_posterior_rdp_bound",
    "sgld_paper_posterior_curve",
    "sgld_paper_posterior_epsilon_bound",
    "sgld_paper_posterior_pair",
    "sgld_paper_posterior_exact",
]


def _mean_cov(mean, cov, which: str) -> tuple[np.ndarray, np.ndarray]:
    """(mean{which}, cov{which}) checked: finite, covariance symmetric positive definite; the
    error names the argument (mean1, cov2, ...)."""
    mean_name, cov_name = f"mean{which}", f"cov{which}"
    m = np.atleast_1d(np.asarray(mean, dtype=np.float64))
    c = np.asarray(cov, dtype=np.float64)
    if m.ndim != 1:
        raise ValueError(f"{mean_name} must be a scalar or 1-D; got shape {m.shape}")
    if c.ndim == 0:
        c = c.reshape(1, 1)
    if c.shape != (m.size, m.size):
        raise ValueError(f"{cov_name} has shape {c.shape}; expected {(m.size, m.size)}")
    check_gaussian(mean_name, m, cov_name, c)
    return m, c


@V.arguments(features="array", targets="array", prior_precision="number", noise_precision="number")
def bayesian_linear_regression_posterior(features, targets, prior_precision: float, noise_precision: float):
    """Posterior of y = X w + N(0, 1/beta), w ~ N(0, I/alpha): N(beta S X^T y, S),
    S = (alpha I + beta X^T X)^-1 (Bishop 2006 eqs. 3.53–3.54; paper 000 Lemma 4.1 for d = 1).

    Returns (mean (d,), covariance (d, d)) in float64.
    """
    x = np.asarray(features, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    y = np.asarray(targets, dtype=np.float64).reshape(-1)
    if x.ndim != 2 or x.shape[0] != y.size:
        raise ValueError(f"features has shape {np.shape(features)} and targets {np.shape(targets)}; need (n, d) and (n,)")
    V.finite_array("features", x)
    V.finite_array("targets", y)
    alpha = V.positive("prior_precision", prior_precision)
    beta = V.positive("noise_precision", noise_precision)
    precision = alpha * np.eye(x.shape[1]) + beta * x.T @ x
    chol = np.linalg.cholesky(precision)
    # Solve rather than invert: the mean is what privacy depends on most sharply.
    mean = np.linalg.solve(chol.T, np.linalg.solve(chol, beta * x.T @ y))
    inv_chol = np.linalg.solve(chol, np.eye(x.shape[1]))
    cov = inv_chol.T @ inv_chol
    return mean, cov


@V.arguments(mean1="numbers", cov1="numbers", mean2="numbers", cov2="numbers", orders="array")
def gaussian_posterior_rdp(mean1, cov1, mean2, cov2, orders) -> np.ndarray:
    """Exact max(D_a(P || Q), D_a(Q || P)) for P = N(mean1, cov1), Q = N(mean2, cov2), per order
    (+inf at orders where a S_Q + (1 - a) S_P is not positive definite)."""
    m1, c1 = _mean_cov(mean1, cov1, "1")
    m2, c2 = _mean_cov(mean2, cov2, "2")
    orders = np.atleast_1d(np.asarray(orders, dtype=np.float64))
    if np.any(~(orders > 1)):
        raise ValueError(f"orders={orders.tolist()} violate order > 1")
    forward = np.asarray(gaussian_renyi(m1, c1, m2, c2, orders), dtype=np.float64)
    backward = np.asarray(gaussian_renyi(m2, c2, m1, c1, orders), dtype=np.float64)
    return np.maximum(forward, backward)


@V.arguments(mean1="numbers", cov1="numbers", mean2="numbers", cov2="numbers", orders="array")
def gaussian_posterior_curve(mean1, cov1, mean2, cov2, orders) -> PrivacyCurve:
    """Exact RDP curve of releasing one posterior sample, for one neighbouring pair."""
    rdp = gaussian_posterior_rdp(mean1, cov1, mean2, cov2, orders)
    prov = Provenance(
        result="exact Rényi divergence of two Gaussian posteriors (both directions)",
        mode="exact",
        assumptions=("posteriors are exactly Gaussian", "this neighbouring pair"),
        released="posterior sample",
    )
    return PrivacyCurve.from_rdp(np.atleast_1d(orders), rdp, prov)


class PosteriorEpsilon(NamedTuple):
    epsilon: float
    exact: bool  # True: tight eps(delta); False: an upper bound from the exact RDP curve
    method: str


_DEFAULT_ORDERS = np.concatenate([1.0 + np.logspace(-3, 0, 40), np.linspace(2.05, 64, 200), np.logspace(np.log10(65), 4, 60)])


@V.arguments(mean1="numbers", cov1="numbers", mean2="numbers", cov2="numbers", delta="number")
def gaussian_posterior_epsilon(mean1, cov1, mean2, cov2, delta: float) -> PosteriorEpsilon:
    """eps(delta) of one posterior sample for the pair (both directions, the larger)."""
    m1, c1 = _mean_cov(mean1, cov1, "1")
    m2, c2 = _mean_cov(mean2, cov2, "2")
    if m1.size != m2.size:
        raise ValueError(f"dimensions differ: {m1.size} vs {m2.size}")
    if m1.size == 1:
        s1, s2 = math.sqrt(c1[0, 0]), math.sqrt(c2[0, 0])
        eps = max(gaussian_epsilon(m1[0], s1, m2[0], s2, delta), gaussian_epsilon(m2[0], s2, m1[0], s1, delta))
        return PosteriorEpsilon(float(eps), True, "exact hockey-stick divergence (1-D)")
    if np.array_equal(c1, c2):
        chol = np.linalg.cholesky(c1)
        mu = float(np.linalg.norm(np.linalg.solve(chol, m1 - m2)))
        return PosteriorEpsilon(analytic_gaussian_epsilon(mu, delta), True, "analytic Gaussian mechanism, Mahalanobis mean gap")
    rdp = gaussian_posterior_rdp(m1, c1, m2, c2, _DEFAULT_ORDERS)
    eps = float(rdp_to_epsilon(_DEFAULT_ORDERS, rdp, delta))
    return PosteriorEpsilon(eps, False, "exact RDP converted to (eps, delta) (upper bound; unequal covariances, d >= 2)")


# --- paper 000 ------------------------------------------------------------------------------
def _check_paper_problem(alpha, beta, x_high, x_low, gamma1, c):
    alpha = V.positive("alpha", alpha)
    beta = V.positive("beta", beta)
    x_high = V.positive("x_high", x_high)
    x_low = V.positive("x_low", x_low)
    if not x_low <= x_high:
        raise ValueError(f"x_low={x_low} violates x_low <= x_high={x_high} (paper 000 eq. 5)")
    if not x_high**2 * beta > 3:
        raise ValueError(f"x_high^2 beta={x_high**2 * beta:.6g} violates x_h^2 beta > 3 (paper 000 §4 assumption)")
    gamma1 = V.in_range("gamma1", gamma1, 0.0, 0.5, low_open=True, high_open=True)
    c = V.positive("c", c)
    return alpha, beta, x_high, x_low, gamma1, c


@V.arguments(order="number", beta="number", x_high="number", x_low="number")
def sgld_paper_posterior_threshold(order: float, beta: float, x_high: float, x_low: float) -> float:
    """Lemma 4.2's condition is n > max{1 + 10 (x_h^2/x_l^2)(nu/beta), 1 + nu x_h^2/x_l^2}."""
    ratio = x_high**2 / x_low**2
    return max(1.0 + 10.0 * ratio * order / beta, 1.0 + order * ratio)


@V.arguments(n="number", order="number", alpha="number", beta="number", x_high="number", x_low="number", gamma1="number", c="number")
def sgld_paper_posterior_rdp_bound(n: int, order: float, alpha: float, beta: float, x_high: float, x_low: float, gamma1: float, c: float) -> float:
    """eps1 of paper 000 Lemma 4.2: one posterior sample of the Bayesian linear regression
    problem on the domain D(n, gamma1, x_h, x_l, c) of eq. 5 is (nu, eps1)-RDP.

    Raises ValueError when n is at or below the lemma's threshold.
    """
    n = V.positive_int("n", n)
    nu = float(order)
    if not (nu > 1 and math.isfinite(nu)):
        raise ValueError(f"order={order!r} violates order > 1 (paper 000 Lemma 4.2)")
    alpha, beta, x_high, x_low, gamma1, c = _check_paper_problem(alpha, beta, x_high, x_low, gamma1, c)
    thr = sgld_paper_posterior_threshold(nu, beta, x_high, x_low)
    if not n > thr:
        raise ValueError(
            f"n={n} violates n > max{{1 + 10 (x_h^2/x_l^2)(nu/beta), 1 + nu x_h^2/x_l^2}} = {thr:.6g} "
            f"required by paper 000 Lemma 4.2 (nu={nu:.6g})"
        )
    xh2, xl2 = x_high**2, x_low**2
    ng = n**gamma1
    t1 = xh2 / (2.0 * (n - 1) * xl2)
    t2 = 0.5 * (nu - 1.0) * nu * xh2 / ((n - 1) * xl2 - nu * xh2)
    t3 = 2.0 * nu * beta * xh2**2 / (0.9 * n ** (1.0 - 2.0 * gamma1) * xl2)
    k = xh2 * alpha + xh2**2 * beta
    t4 = 2.0 * nu * beta * (xh2 * beta) * k / (0.9 * (xl2 * beta) ** 2) * (c + ng) / n ** (2.0 - gamma1)
    t5 = 0.5 * nu * k**2 / (0.9 * xl2**3 * beta) * (c + ng) ** 2 / float(n) ** 3
    return float(t1 + t2 + t3 + t4 + t5)


@V.arguments(n="number", orders="array", alpha="number", beta="number", x_high="number", x_low="number", gamma1="number", c="number")
def sgld_paper_posterior_curve(n: int, orders, alpha: float, beta: float, x_high: float, x_low: float, gamma1: float, c: float) -> PrivacyCurve:
    """Lemma 4.2 as an RDP curve over ``orders`` (every order must satisfy the lemma's n
    condition; the error names the first that does not). Its Mironov conversion is Lemma 4.3."""
    orders = np.atleast_1d(np.asarray(orders, dtype=np.float64))
    rdp = np.array([sgld_paper_posterior_rdp_bound(n, a, alpha, beta, x_high, x_low, gamma1, c) for a in orders])
    prov = Provenance(
        "paper 000 Lemma 4.2 (posterior RDP on the domain of eq. 5)",
        "bound",
        ("Bayesian linear regression, eq. 4", "data in D(n, gamma1, x_h, x_l, c), eq. 5", "x_h^2 beta > 3, gamma1 < 1/2"),
        "posterior sample",
    )
    return PrivacyCurve.from_rdp(orders, rdp, prov)


@V.arguments(n="number", order="number", delta="number", alpha="number", beta="number", x_high="number", x_low="number", gamma1="number", c="number")
def sgld_paper_posterior_epsilon_bound(n: int, order: float, delta: float, alpha: float, beta: float, x_high: float, x_low: float, gamma1: float, c: float) -> float:
    """Paper 000 Lemma 4.3: (eps1 + ln(1/delta)/(nu - 1), delta)-DP (Mironov's conversion)."""
    d = V.in_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    eps1 = sgld_paper_posterior_rdp_bound(n, order, alpha, beta, x_high, x_low, gamma1, c)
    return eps1 + math.log(1.0 / d) / (float(order) - 1.0)


@V.arguments(n="number", alpha="number", beta="number", x_high="number", x_low="number", c="number")
def sgld_paper_posterior_pair(n: int, alpha: float, beta: float, x_high: float, x_low: float, c: float):
    """Posteriors (mean, variance) on paper 000's eq. 7 pair: D1 = n copies of (x_h, c x_h);
    D2 = D1 with one record replaced by (x_l, c x_l).

    With all ratios y/x equal to c, mu = c (1 - alpha/P) for precision P = alpha + beta sum x^2,
    so mu1 - mu2 = c alpha (P1 - P2)/(P1 P2) with P1 - P2 = beta (x_h^2 - x_l^2): the gap is
    formed without subtracting the two means (~1e6 each at Figure 1's values, gap ~1e-8).
    Returns ((mu1, var1), (mu2, var2), mean_gap = mu1 - mu2).
    """
    n = V.positive_int("n", n)
    alpha = V.positive("alpha", alpha)
    beta = V.positive("beta", beta)
    x_high = V.positive("x_high", x_high)
    x_low = V.positive("x_low", x_low)
    c = V.finite_real("c", c)
    xh2, xl2 = x_high * x_high, x_low * x_low  # inf, not OverflowError, beyond float64
    p1 = alpha + n * xh2 * beta
    p2 = alpha + ((n - 1) * xh2 + xl2) * beta
    gap = c * alpha * beta * (xh2 - xl2) / p1 / p2
    if not (math.isfinite(p1) and math.isfinite(p2) and math.isfinite(gap)):
        raise ValueError(
            f"n={n}, alpha={V._fmt(alpha)}, beta={V._fmt(beta)}, x_high={V._fmt(x_high)}, x_low={V._fmt(x_low)}, c={V._fmt(c)}: "
            "the posterior precisions alpha + beta sum x^2 (or their mean gap) overflow float64, so the posteriors "
            "(variances below 1e-308) are not representable"
        )
    mu1 = c * (1.0 - alpha / p1)
    mu2 = c * (1.0 - alpha / p2)
    return (mu1, 1.0 / p1), (mu2, 1.0 / p2), gap


class PaperPosteriorExact(NamedTuple):
    renyi: float  # max of both directions at the order
    epsilon: float  # tight eps at delta, max of both directions


@V.arguments(n="number", order="number", delta="number", alpha="number", beta="number", x_high="number", x_low="number", c="number")
def sgld_paper_posterior_exact(n: int, order: float, delta: float, alpha: float, beta: float, x_high: float, x_low: float, c: float) -> PaperPosteriorExact:
    """Exact Rényi divergence (order) and tight eps(delta) between the eq. 7 pair's posteriors.

    The means are shifted so that the first sits at 0 (divergences are translation invariant):
    only the exact gap enters.
    """
    (_, v1), (_, v2), gap = sgld_paper_posterior_pair(n, alpha, beta, x_high, x_low, c)
    renyi = float(gaussian_posterior_rdp(0.0, v1, -gap, v2, [order])[0])
    s1, s2 = math.sqrt(v1), math.sqrt(v2)
    eps = max(gaussian_epsilon(0.0, s1, -gap, s2, delta), gaussian_epsilon(-gap, s2, 0.0, s1, delta))
    return PaperPosteriorExact(renyi, float(eps))

"""The noisy Monte Carlo estimator of paper 001 §3.2 (Propositions 3.7, 3.10, A.5), and its exact
privacy in the Gaussian case.

Released value (eq. 7): A(D) = (1/N) sum_{n=1}^N f(X_n^D) + L, L independent noise.

* Prop A.5 / 3.7: if |g_D - g_D'| <= eta with probability >= 1 - delta~ under some coupling
  (Assumption A.4 / 3.6) and L makes scalars eta apart (eps, delta)-indistinguishable
  (Assumption 3.5), A is (eps, delta + delta~)-DP -> :func:`prop37_delta`.
* Prop 3.10: if each chain average is within C of pi_D(f) with probability >= 1 - delta~
  (Assumption 3.8) and |pi_D(f) - pi_D'(f)| <= gamma_f (Assumption 3.9), then with two
  independent chains eta = 2C + gamma_f holds with probability >= (1 - delta~)^2, so A is
  (eps, delta + 2 delta~ - delta~^2)-DP -> :func:`prop310_delta`; Laplace noise of scale
  (2C + gamma_f)/eps gives delta = 0 (:func:`prop310_noise_scale`).
* Erratum (NOTES 001): the printed Var(A(D)) = Var(average) + eta/eps is wrong: Laplace noise of
  scale b = eta/eps has variance 2 b^2 = 2 eta^2/eps^2 (:func:`release_variance`;
  :func:`printed_release_variance` keeps the printed expression for comparison).

Exact privacy when the chain average is Gaussian (any Gaussian AR(1) chain with f(x) = x,
:func:`ar1_average_law`): the release on D is N(a_D, s^2) convolved with Laplace(b), whose
density is

    p(x) = e^{s^2/(2b^2)}/(2b) [e^{-(x-a)/b} Phi((x-a)/s - s/b) + e^{(x-a)/b} Phi(-(x-a)/s - s/b)]

(:func:`gaussian_laplace_logpdf`, in log space). Both datasets give the same s (the same kernel
and start), so the pair is a location family of a log-concave law: the privacy loss is monotone,
bounded by |a_D - a_D'|/b, and the optimal set is a half-line {x > x*}. The hockey-stick
delta(eps) = int_{x*}^inf p_D(x)(1 - e^{eps - loss(x)}) dx is computed by quadrature
(:func:`gaussian_laplace_hockey_stick`); delta(eps) = 0 for eps >= |a_D - a_D'|/b.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import optimize, special

from ... import _validate as V

__all__ = [
    "prop37_delta",
    "prop310_delta",
    "prop310_noise_scale",
    "laplace_variance",
    "release_variance",
    "printed_release_variance",
    "AverageLaw",
    "ar1_average_law",
    "concentration_radius",
    "gaussian_laplace_logpdf",
    "gaussian_laplace_cdf",
    "gaussian_laplace_loss",
    "gaussian_laplace_hockey_stick",
    "gaussian_laplace_epsilon",
]


def _delta_tilde(value) -> float:
    return V.in_range("delta_tilde", value, 0.0, 1.0, high_open=True)


def prop37_delta(delta_tilde: float, noise_delta: float = 0.0) -> float:
    """Props 3.7 / A.5: delta + delta~ (eta holds with probability 1 - delta~ under a coupling)."""
    return min(1.0, V.in_range("noise_delta", noise_delta, 0.0, 1.0) + _delta_tilde(delta_tilde))


def prop310_delta(delta_tilde: float, noise_delta: float = 0.0) -> float:
    """Prop 3.10: delta + 2 delta~ - delta~^2 = delta + 1 - (1 - delta~)^2 (two independent chains)."""
    dt = _delta_tilde(delta_tilde)
    return min(1.0, V.in_range("noise_delta", noise_delta, 0.0, 1.0) + dt * (2.0 - dt))


def prop310_noise_scale(concentration: float, gamma_f: float, epsilon: float) -> float:
    """Laplace scale (2C + gamma_f)/eps: Assumption 3.5 with eta = 2C + gamma_f and delta = 0."""
    C = V.nonnegative("concentration", concentration)
    g = V.nonnegative("gamma_f", gamma_f)
    eps = V.positive("epsilon", epsilon)
    if C == 0 and g == 0:
        raise ValueError("concentration=0 and gamma_f=0: eta = 0 needs no noise; the Laplace scale would be 0")
    return (2.0 * C + g) / eps


def laplace_variance(scale: float) -> float:
    """Variance 2 b^2 of Laplace(0, b)."""
    b = V.positive("scale", scale)
    return 2.0 * b * b


def release_variance(average_variance: float, eta: float, epsilon: float) -> float:
    """Var(A(D)) = Var(chain average) + 2 (eta/eps)^2 (Laplace of scale eta/eps; corrects §3.2)."""
    return V.nonnegative("average_variance", average_variance) + laplace_variance(V.positive("eta", eta) / V.positive("epsilon", epsilon))


def printed_release_variance(average_variance: float, eta: float, epsilon: float) -> float:
    """The printed Var(A(D)) = Var(average) + eta/eps (paper 001 §3.2): wrong, see NOTES 001."""
    return V.nonnegative("average_variance", average_variance) + V.positive("eta", eta) / V.positive("epsilon", epsilon)


class AverageLaw(NamedTuple):
    mean: float  # E[(1/N) sum_{n=1}^N X_n]
    variance: float  # its variance


def ar1_average_law(rho: float, noise_sd: float, centre: float, num_steps: int, mean0: float = 0.0, var0: float = 0.0) -> AverageLaw:
    """Law of (1/N) sum_{n=1}^N X_n for X_{n+1} = centre + rho (X_n - centre) + noise_sd z, X_0 ~ N(mean0, var0).

    sum_n X_n = N centre + (X_0 - centre) S + noise_sd sum_k z_k G_{N-k+1}, with
    S = sum_{n=1}^N rho^n and G_j = sum_{i<j} rho^i = (1 - rho^j)/(1 - rho); so the variance is
    (var0 S^2 + noise_sd^2 sum_{j=1}^N G_j^2)/N^2, summed term by term (1 - rho^j as
    -expm1(j log rho) for rho > 0: no cancellation for rho near 1).
    """
    r = float(rho)
    if not (-1.0 < r < 1.0):
        raise ValueError(f"rho={rho!r} violates -1 < rho < 1")
    tau = V.nonnegative("noise_sd", noise_sd)
    N = V.positive_int("num_steps", num_steps)
    v0 = V.nonnegative("var0", var0)
    j = np.arange(1, N + 1, dtype=np.float64)
    if r > 0:
        one_minus_rho_j = -np.expm1(j * math.log(r))
    else:
        one_minus_rho_j = 1.0 - r**j
    G = one_minus_rho_j / (1.0 - r)
    S = r * G[-1]  # sum_{n=1}^N rho^n = rho (1 - rho^N)/(1 - rho)
    mean = float(centre) + (float(mean0) - float(centre)) * S / N
    var = (v0 * S * S + tau * tau * float(np.sum(G * G))) / (N * N)
    return AverageLaw(mean, var)


def concentration_radius(bias: float, sd: float, delta_tilde: float) -> float:
    """Smallest C with P(|bias + sd Z| <= C) >= 1 - delta~ (Assumption 3.8, exact for a
    Gaussian average): the root of Phi(-(C - bias)/sd) + Phi(-(C + bias)/sd) = delta~."""
    b = abs(float(bias))
    s = V.positive("sd", sd)
    dt = V.in_range("delta_tilde", delta_tilde, 0.0, 1.0, low_open=True, high_open=True)
    tail = lambda C: float(np.logaddexp(special.log_ndtr(-(C - b) / s), special.log_ndtr(-(C + b) / s)))  # log P(|Y| > C)
    target = math.log(dt)
    lo, hi = 0.0, b + s
    if tail(lo) <= target:
        return 0.0
    while tail(hi) > target:
        hi = b + 2.0 * (hi - b)
    return float(optimize.brentq(lambda C: tail(C) - target, lo, hi, xtol=1e-15 * max(1.0, hi), rtol=1e-15))


# ------------------------------------------------------------------------------------------
# the Gaussian-plus-Laplace release
def _check_gl(sd, scale):
    return V.positive("sd", sd), V.positive("scale", scale)


def gaussian_laplace_logpdf(x, mean: float, sd: float, scale: float):
    """log density of N(mean, sd^2) + Laplace(0, scale) (module docstring), vectorised in x."""
    s, b = _check_gl(sd, scale)
    t = (np.asarray(x, dtype=np.float64) - float(mean))
    z = t / s
    k = s / b
    a1 = -t / b + special.log_ndtr(z - k)
    a2 = t / b + special.log_ndtr(-z - k)
    out = 0.5 * k * k - math.log(2.0 * b) + np.logaddexp(a1, a2)
    return out if np.ndim(out) else float(out)


def gaussian_laplace_cdf(x, mean: float, sd: float, scale: float):
    """CDF of N(mean, sd^2) + Laplace(0, scale):
    Phi(z) - e^{k^2/2 - t/b} Phi(z - k)/2 + e^{k^2/2 + t/b} Phi(-z - k)/2, t = x - mean, z = t/sd, k = sd/b.
    (Accurate where it is not far in a tail; the privacy computations use the density instead.)"""
    s, b = _check_gl(sd, scale)
    t = np.asarray(x, dtype=np.float64) - float(mean)
    z, k = t / s, s / b
    out = special.ndtr(z) - 0.5 * np.exp(0.5 * k * k - t / b + special.log_ndtr(z - k)) + 0.5 * np.exp(0.5 * k * k + t / b + special.log_ndtr(-z - k))
    return out if np.ndim(out) else float(out)


def gaussian_laplace_loss(x, mean1: float, mean2: float, sd: float, scale: float):
    """Privacy loss log p_1(x) - log p_2(x) of the two releases (monotone in x, |loss| <= |mean1 - mean2|/scale)."""
    return gaussian_laplace_logpdf(x, mean1, sd, scale) - gaussian_laplace_logpdf(x, mean2, sd, scale)


def gaussian_laplace_hockey_stick(mean1: float, mean2: float, sd: float, scale: float, epsilon: float) -> float:
    """delta(eps) = sup_S P_1(S) - e^eps P_2(S) for the releases N(mean_i, sd^2) + Laplace(scale), one direction.

    S = {loss > eps} is a half-line (monotone likelihood ratio of a log-concave location family);
    its end x* solves loss(x*) = eps (Brent), and delta = int over S of p_1 (1 - e^{eps - loss}) by
    Gauss-Legendre quadrature on panels (the integrand is formed as p_1 * -expm1(eps - loss): no
    cancellation; tested against 30-digit mpmath quadrature).
    """
    s, b = _check_gl(sd, scale)
    eps = float(epsilon)
    if math.isnan(eps) or eps < 0:
        raise ValueError(f"epsilon={epsilon!r} violates epsilon >= 0")
    m1, m2 = float(mean1), float(mean2)
    gap = m1 - m2
    if gap == 0 or eps >= abs(gap) / b:
        return 0.0
    if gap < 0:  # mirror so that the loss increases with x
        m1, m2 = -m1, -m2
        gap = -gap
    loss = lambda x: gaussian_laplace_loss(x, m1, m2, s, b) - eps
    width = s + b
    mid = 0.5 * (m1 + m2)
    lo, hi = mid - width, mid + width
    while loss(lo) > 0:
        lo -= 2 * (hi - lo)
    while loss(hi) <= 0:
        hi += 2 * (hi - lo)
        if hi - mid > 1e6 * width:  # loss -> gap/b - eps > 0 but slowly: the mass beyond is negligible
            break
    x_star = optimize.brentq(loss, lo, hi, xtol=1e-13 * width, rtol=1e-15) if loss(hi) > 0 else hi
    # int_{x*}^inf p_1 (1 - e^{eps - loss}): Gauss-Legendre on panels that are fine where the
    # integrand has structure (within a few sd of x* and of the two means) and coarse in the
    # Laplace tail; beyond x* + 80 (sd + b) the mass of p_1 is below e^-79 of its scale and dropped.
    edges = {x_star + width * f for f in (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 80.0)}
    for centre in (m1, m2):
        edges.update(centre + s * f for f in (-6, -3, -1, 0, 1, 3, 6))
    edges = np.array(sorted(e for e in edges if x_star <= e <= x_star + 80 * width))
    a, c = edges[:-1, None], edges[1:, None]
    x = 0.5 * (a + c) + 0.5 * (c - a) * _GL_NODES[None, :]
    log_p = gaussian_laplace_logpdf(x, m1, s, b)
    excess = gaussian_laplace_logpdf(x, m2, s, b) - log_p + eps  # eps - loss <= 0 on S
    values = np.exp(log_p) * -np.expm1(np.minimum(excess, 0.0))
    return float(np.sum(0.5 * (c - a) * values * _GL_WEIGHTS[None, :]))


_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(64)


def gaussian_laplace_epsilon(mean1: float, mean2: float, sd: float, scale: float, delta: float) -> float:
    """Tight eps(delta) of the two releases (both directions; the pair is symmetric)."""
    s, b = _check_gl(sd, scale)
    d = V.in_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    top = abs(float(mean1) - float(mean2)) / b  # delta(eps) = 0 from here on
    f = lambda e: gaussian_laplace_hockey_stick(mean1, mean2, s, b, e) - d
    if top == 0 or f(0.0) <= 0:
        return 0.0
    return float(optimize.brentq(f, 0.0, top, xtol=1e-12, rtol=1e-12))

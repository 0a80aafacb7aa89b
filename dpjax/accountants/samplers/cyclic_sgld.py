"""Exact epoch-end laws of cyclic SGLD on paper 000's neighbouring pair (NOTES 000).

Problem (paper 000 eqs. 4, 7): y = theta x + N(0, 1/beta), prior theta ~ N(0, 1/alpha);
D1 = n copies of (x_h, c x_h); D2 = D1 with one record replaced by (x_l, c x_l). Cyclic SGLD
with batch size 1 and constant step eta: theta' = lambda_x theta + rho_x + sqrt(eta) xi with
lambda_x = 1 - kappa_x, kappa_x = (eta/2)(alpha + n x^2 beta), rho_x = (eta/2) n beta c x^2.
theta_0 ~ N(m0, v0) (the prior: m0 = 0, v0 = 1/alpha).

On D1 every step is the same affine map, so after e epochs theta ~ N(mu_e, s_e^2). On D2 with
the odd record at position r (1-based) the epoch map has slope A = lambda^(n-1) lambda' for
every r; only the offset and the noise depend on r. With u_r = lambda^(n-r) and
Delta_kappa = kappa - kappa' = (eta/2) n beta (x_h^2 - x_l^2), m* = rho/kappa = c (1 - q),
q = alpha/(alpha + n beta x_h^2), the DIFFERENCE d_r(e) = mu^r_e - mu_e obeys the affine
recursion d_{e+1} = A d_e + Delta_kappa [lambda^(n-1)(mu_e - m*) - u_r c q], whose solution is

  d_r(e) = (m0 - m*) lambda^(ne) expm1(e log(lambda'/lambda)) - u_r Delta_kappa c q (1 - A^e)/(1 - A)

(using A - lambda^n = lambda^(n-1) Delta_kappa exactly), and the component variances are

  (s^r_e)^2 = A^(2e) v0 + eta (1 - A^(2e))/(1 - lambda^2)
              + eta u_r^2 (lambda'^2 - lambda^2)(1 - A^(2e)) / ((1 - lambda^2)(1 - A^2)).

Every small quantity is formed directly: kappa, kappa', Delta_kappa from their definitions
(never 1 - lambda), powers as exp(m log1p(-kappa)), 1 - lambda^m as -expm1(m log1p(-kappa)),
and the two ~1e6 means are never subtracted. The D2 law at an epoch end is the equal-weight
mixture over r of N(mu_e + d_r(e), (s^r_e)^2).
"""
from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import numpy as np

from ... import _validate as V
from ..mechanisms import mixture as mx
from ..curve import PrivacyCurve, Provenance
from ..mechanisms.mixture import GaussianMixture1D, compress_smooth_family, equal_weight_mixture

__all__ = [
    "CyclicSGLDProblem",
    "EpochLaw",
    "paper_step_size",
    "epoch_law",
    "divergence_statistic_q",
    "lower_bound_epoch",
    "epoch_end_epsilon",
    "epoch_end_profile",
    "epoch_end_renyi",
]


@V.arguments(n="int", alpha="number", beta="number", x_high="number")
def paper_step_size(n: int, alpha: float, beta: float, x_high: float) -> float:
    """Paper 000 §4.2: eta = 2 / (alpha + n x_h^2 beta)^2."""
    return 2.0 / (alpha + n * x_high**2 * beta) ** 2


@dataclasses.dataclass(frozen=True)
class CyclicSGLDProblem:
    """Paper 000 eq. 7 pair with cyclic SGLD (b = 1). ``step_size`` None = paper's eta."""

    n: int
    alpha: float = 0.1
    beta: float = 1.0
    x_high: float = 1.8
    x_low: float = 0.9
    c: float = 1165165.0
    step_size: float | None = None
    init_mean: float = 0.0
    init_var: float | None = None  # None: the prior variance 1/alpha

    def __post_init__(self):
        V.positive_int("n", self.n)
        if self.n < 2:
            raise ValueError(f"n={self.n} violates n >= 2 (the pair differs in one of n records)")
        V.positive("alpha", self.alpha)
        V.positive("beta", self.beta)
        V.positive("x_high", self.x_high)
        V.positive("x_low", self.x_low)
        if not math.isfinite(float(self.c)):
            raise ValueError(f"c={self.c!r} must be finite")
        if self.step_size is not None:
            V.positive("step_size", self.step_size)
        if self.init_var is not None:
            V.positive("init_var", self.init_var)
        # lambda_x in (0, 1) for both records: the chain contracts (the closed forms use log1p(-kappa))
        for name, k in (("x_high", self.kappa), ("x_low", self.kappa_low)):
            if not (0 < k < 1):
                raise ValueError(
                    f"step_size={self.eta:.6g} gives kappa={k:.6g} for {name}; need 0 < (eta/2)(alpha + n x^2 beta) < 1"
                )

    # --- small quantities, each formed directly ---------------------------------------
    @property
    def eta(self) -> float:
        return paper_step_size(self.n, self.alpha, self.beta, self.x_high) if self.step_size is None else float(self.step_size)

    @property
    def v0(self) -> float:
        return 1.0 / self.alpha if self.init_var is None else float(self.init_var)

    @property
    def kappa(self) -> float:  # 1 - lambda
        return 0.5 * self.eta * (self.alpha + self.n * self.x_high**2 * self.beta)

    @property
    def kappa_low(self) -> float:  # 1 - lambda'
        return 0.5 * self.eta * (self.alpha + self.n * self.x_low**2 * self.beta)

    @property
    def delta_kappa(self) -> float:  # lambda' - lambda
        return 0.5 * self.eta * self.n * self.beta * (self.x_high**2 - self.x_low**2)

    @property
    def q(self) -> float:  # 1 - m*/c
        return self.alpha / (self.alpha + self.n * self.beta * self.x_high**2)

    @property
    def stationary_mean(self) -> float:  # m* = rho / kappa
        return self.c * self.n * self.beta * self.x_high**2 / (self.alpha + self.n * self.beta * self.x_high**2)

    @property
    def log_lambda(self) -> float:
        return math.log1p(-self.kappa)

    @property
    def log_lambda_low(self) -> float:
        return math.log1p(-self.kappa_low)

    @property
    def log_epoch_slope(self) -> float:  # log A
        return (self.n - 1) * self.log_lambda + self.log_lambda_low


class EpochLaw(NamedTuple):
    """Laws at the end of epoch e: D1 is N(mean, variance); D2's component with the odd record
    at position r has mean ``mean + offset_common + u_r offset_slope`` and variance
    ``var_common + u_r^2 var_slope``, u_r = lambda^(n - r) = exp((n - r) log_lambda)."""

    epoch: int
    n: int
    mean: float
    variance: float
    offset_common: float
    offset_slope: float
    var_common: float
    var_slope: float
    log_lambda: float

    def u(self, j) -> np.ndarray:
        """u at j = n - r (real j allowed: the components are smooth in j)."""
        return np.exp(np.asarray(j, dtype=np.float64) * self.log_lambda)

    def offsets(self, j) -> np.ndarray:
        return self.offset_common + self.u(j) * self.offset_slope

    def variances(self, j) -> np.ndarray:
        return self.var_common + self.u(j) ** 2 * self.var_slope

    def positions(self) -> tuple[np.ndarray, np.ndarray]:
        """(offsets, variances) for r = 1..n (index j = n - r = n-1..0, i.e. r ascending)."""
        j = np.arange(self.n - 1, -1, -1, dtype=np.float64)
        return self.offsets(j), self.variances(j)

    def mixture(self, *, compress: bool = True, panels: int | None = None) -> GaussianMixture1D:
        """D2's law relative to D1's mean, as a mixture (compressed by default; see
        :func:`~dpjax.accountants.mechanisms.mixture.compress_smooth_family`)."""
        sds_at = lambda j: np.sqrt(self.variances(j))
        # the index sum is smooth only when u_r = lambda^(n-r) moves slowly per index step
        if not compress or abs(self.log_lambda) > 1e-3:
            off, var = self.positions()
            return equal_weight_mixture(off, np.sqrt(var))
        if panels is None:
            # resolve the components' motion in j: (total offset change)/(smallest sd) bumps
            spread = abs(self.offset_slope) * (-math.expm1((self.n - 1) * self.log_lambda))
            smin = math.sqrt(min(self.var_common + self.var_slope, self.var_common + self.var_slope * math.exp(2 * (self.n - 1) * self.log_lambda)))
            panels = int(min(4096, max(16, math.ceil(4 * spread / smin), math.ceil(4 * self.n * abs(self.log_lambda)))))
        return compress_smooth_family(self.offsets, sds_at, self.n, panels=panels)


@V.arguments(epoch="int")
def epoch_law(problem: CyclicSGLDProblem, epoch: int) -> EpochLaw:
    """Closed-form laws after ``epoch`` full epochs (see module docstring); epoch >= 0."""
    if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)) or epoch < 0:
        raise ValueError(f"epoch={epoch!r} violates epoch a non-negative integer")
    p = problem
    e = int(epoch)
    n, eta, v0, m0 = p.n, p.eta, p.v0, p.init_mean
    ll, llo, lA = p.log_lambda, p.log_lambda_low, p.log_epoch_slope
    m_star = p.stationary_mean
    lam_ne = math.exp(n * e * ll)
    one_minus_lam_ne = -math.expm1(n * e * ll)
    mean = m0 * lam_ne + m_star * one_minus_lam_ne
    one_minus_lam2 = p.kappa * (2.0 - p.kappa)
    variance = math.exp(2 * n * e * ll) * v0 - eta * math.expm1(2 * n * e * ll) / one_minus_lam2
    # offsets
    log_ratio = llo - ll  # log(lambda'/lambda) = log1p(Delta_kappa / lambda)
    log_ratio = math.log1p(p.delta_kappa / (1.0 - p.kappa))
    offset_common = (m0 - m_star) * lam_ne * math.expm1(e * log_ratio)
    one_minus_Ae = -math.expm1(e * lA)
    one_minus_A = -math.expm1(lA)
    offset_slope = -p.delta_kappa * p.c * p.q * one_minus_Ae / one_minus_A
    # variances
    one_minus_A2e = -math.expm1(2 * e * lA)
    one_minus_A2 = -math.expm1(2 * lA)
    lam_low_sq_minus_lam_sq = p.delta_kappa * (2.0 - p.kappa - p.kappa_low)
    var_common = math.exp(2 * e * lA) * v0 + eta * one_minus_A2e / one_minus_lam2
    var_slope = eta * lam_low_sq_minus_lam_sq * one_minus_A2e / (one_minus_lam2 * one_minus_A2)
    return EpochLaw(e, n, mean, variance, offset_common, offset_slope, var_common, var_slope, ll)


def divergence_statistic_q(law: EpochLaw) -> float:
    """Paper 000 Figure 1: Q(t) = (1/n) sum_r (mu_t - mu_t^r)^2 / (sigma_t^r)^2 (full sum)."""
    off, var = law.positions()
    return float(np.mean(off * off / var))


class LowerBoundEpoch(NamedTuple):
    k_dot: float  # Lemma A.4: (1/(2n)) log_lambda(1/(1 + (1 - lambda^2)/(alpha eta))) - 1
    epoch: int  # ceil(k_dot) + 1: the epoch whose end T = (ceil(k_dot) + 1) n is tested
    step: int  # T


def lower_bound_epoch(problem: CyclicSGLDProblem) -> LowerBoundEpoch:
    """Paper 000 Lemmas 4.5–4.6 / A.4: the epoch k_dot and step T = (ceil(k_dot) + 1) n."""
    p = problem
    one_minus_lam2 = p.kappa * (2.0 - p.kappa)
    k_dot = -math.log1p(one_minus_lam2 / (p.alpha * p.eta)) / (2 * p.n * p.log_lambda) - 1.0
    epoch = math.ceil(k_dot) + 1
    return LowerBoundEpoch(k_dot, epoch, epoch * p.n)


_DIRECTIONS = ("gaussian||mixture", "mixture||gaussian")


@V.arguments(epoch="int", delta="number")
def epoch_end_epsilon(problem: CyclicSGLDProblem, epoch: int, delta: float) -> float:
    """Exact tight eps(delta) between the epoch-end laws on D1 and D2 (larger direction)."""
    law = epoch_law(problem, epoch)
    return mx.mixture_epsilon(math.sqrt(law.variance), law.mixture(), delta)


@V.arguments(epoch="int", order="number")
def epoch_end_renyi(problem: CyclicSGLDProblem, epoch: int, order: float) -> float:
    """Exact Rényi divergence of the given order between the epoch-end laws (larger direction)."""
    law = epoch_law(problem, epoch)
    sd, mix = math.sqrt(law.variance), law.mixture()
    return max(mx.mixture_renyi(sd, mix, order, d) for d in _DIRECTIONS)


@V.arguments(epochs="ints", epsilons="array")
def epoch_end_profile(problem: CyclicSGLDProblem, epochs, epsilons) -> PrivacyCurve:
    """Exact delta(eps) of releasing the last iterate at each epoch end (larger direction):
    a PrivacyCurve profile with deltas of shape (len(epochs), len(epsilons))."""
    eps = np.asarray(epsilons, dtype=np.float64)
    rows = []
    for e in np.atleast_1d(epochs):
        law = epoch_law(problem, int(e))
        sd, mix = math.sqrt(law.variance), law.mixture()
        rows.append(np.maximum(*(np.atleast_1d(mx.mixture_hockey_stick(sd, mix, eps, d)) for d in _DIRECTIONS)))
    prov = Provenance(
        result="paper 000 cyclic SGLD, exact epoch-end laws (Gaussian vs n-component mixture over the odd record's position)",
        mode="exact",
        assumptions=("paper 000 eq. 7 pair", "uniformly random record order fixed across epochs", "batch size 1"),
        released="last iterate",
    )
    return PrivacyCurve.from_profile(eps, np.clip(np.stack(rows), 0.0, 1.0), prov)

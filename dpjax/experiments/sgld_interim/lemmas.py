"""Paper 000's lower-bound chain for cyclic SGLD (Lemmas 4.4-4.6, A.2-A.6) and Theorem 1's
instance sizes, each quantity as a function beside its exact value.

Problem and notation as in :mod:`dpjax.accountants.samplers.cyclic_sgld` (eq. 7 pair, x_l = x_h / 2 for
the odd record): lambda = 1 - (eta/2)(alpha + n x_h^2 beta), lambda^ = 1 - (eta/2)(alpha + n x_l^2 beta),
A = lambda^ lambda^(n-1) (one epoch's slope), m* = c n x_h^2 beta / (alpha + n x_h^2 beta), and
the step (k+1) n is the end of epoch e = k + 1. For the odd record at position r, mu^r and
(sigma^r)^2 are the D2 component's mean and variance; mu is D1's mean.

The chain of the proof, at the epoch it tests (T = (ceil(k_dot) + 1) n, Lemma A.4):

* Lemma A.2: mu - mu^r >= m* lambda^((k+1) n) (lambda^^(k+1)/lambda^(k+1) - 1)   (every r)
  -> :func:`lemma_a2_gap_bound`;
* Lemma A.3 (0 < k <= k_dot): (sigma^1)^2 <= (2/alpha) A^(2(k+1)),
  (sigma^r)^2 <= (6/alpha) (lambda^ lambda^(n-r))^2 A^(2k)  (r > 1)  -> :func:`lemma_a3_variance_bounds`;
* Lemma A.4 (k = ceil(k_dot)): the r = 1 factor 2 becomes 1 + 2 e^(1/(x_h^2 beta))
  -> :func:`lemma_a4_variance_bounds`;
* Lemma A.5: (mu - mu^r)^2/(sigma^r)^2 >= e^(-2/(x_h^2 beta)) (alpha/v1) (3/(32 x_h^2 beta))^2 (c/n)^2,
  v1 = max(6, 1 + 2 e^(1/(x_h^2 beta)))  -> :func:`lemma_a5_ratio_bound` (Lemma 4.5 is its order);
* Lemma 4.4: P(theta^ > mu) <= (1/n) sum_r exp(-(mu - mu^r)^2/(2 (sigma^r)^2)) (Chernoff)
  -> :func:`lemma44_chernoff`, against the exact (1/n) sum_r Phi((mu^r - mu)/sigma^r);
* Lemma A.6 / 4.6: with S = {theta > mu}, P_D1(S) = 1/2, so releasing theta_T is not
  (eps, delta)-DP for eps < log((1/2 - delta)/P_D2(S)); with the A.5 constant (NOTES 000: eqs.
  24-25 should read e^eps exp(-K_A (c/n)^2)) that is eps < K_A (c/n)^2 + ln(1/2 - delta),
  K_A = e^(-2/(x_h^2 beta)) alpha/(2 v1) (3/(32 x_h^2 beta))^2  -> :func:`lemma_a6_epsilon`.

:func:`proof_chain` evaluates every link at one problem: the printed constants, the same
inequalities fed with the exact laws, and the exact tight eps. At Figure 1's parameters the
printed Lemma A.6 value is negative (vacuous) while the exact tight eps is about 3.4.

Theorem 1's instance sizes (:func:`theorem1_instance`): with c = n^gamma2 (Claim D.30,
gamma1 < gamma2 < 3/2; Figure 1 has gamma2 = 1.001), nu = 1 + 2 ln(1/delta)/eps makes Lemma
4.3's eps = eps1 + eps/2, so the posterior is (eps, delta)-DP once eps1(n) <= eps/2 (Lemma 4.2,
decreasing in n above its threshold), and Lemma A.6 certifies eps' once
K_A n^(2 gamma2 - 2) + ln(1/2 - delta) > eps'. The smallest n meeting both (and the lemmas'
own conditions) is computed in log space (it can exceed 10^1000; checked against mpmath).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import mpmath as mp
import numpy as np
from scipy import optimize, special

from ... import _validate as V
from ...accountants.samplers import cyclic_sgld as cs

__all__ = [
    "lemma_a2_gap_bound",
    "lemma_a3_variance_bounds",
    "lemma_a4_variance_bounds",
    "lemma_a5_ratio_bound",
    "lemma_a5_conditions",
    "lemma44_chernoff",
    "lemma_a6_epsilon",
    "certified_epsilon",
    "proof_chain",
    "lemma42_eps1",
    "Theorem1Instance",
    "theorem1_instance",
]


def _paper_pair(problem: cs.CyclicSGLDProblem) -> None:
    if not math.isclose(problem.x_low, problem.x_high / 2.0, rel_tol=1e-12):
        raise ValueError(f"x_low={problem.x_low!r} violates x_low = x_high / 2: the lemmas are proved for eq. 7's odd record (x_h/2, c x_h/2)")
    if not problem.x_high**2 * problem.beta > 3:
        raise ValueError(f"x_high^2 beta={problem.x_high**2 * problem.beta:.6g} violates x_h^2 beta > 3 (paper 000 §4)")


def _epoch(epoch) -> int:
    if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)) or epoch < 1:
        raise ValueError(f"epoch={epoch!r} violates epoch an integer >= 1 (the step (k+1) n, k >= 0)")
    return int(epoch)


def lemma_a2_gap_bound(problem: cs.CyclicSGLDProblem, epoch: int) -> float:
    """Lemma A.2 at the end of ``epoch`` = k + 1: m* lambda^((k+1) n) (lambda^^(k+1)/lambda^(k+1) - 1)."""
    _paper_pair(problem)
    e = _epoch(epoch)
    p = problem
    log_ratio = math.log1p(p.delta_kappa / (1.0 - p.kappa))  # log(lambda^/lambda)
    return p.stationary_mean * math.exp(e * p.n * p.log_lambda) * math.expm1(e * log_ratio)


# up to this n every position r is evaluated; above it, sums over r use the smoothness of the
# components in r (u_r = lambda^(n - r) moves by (n - 1)(1 - lambda) ~ 1/(x_h^2 beta) in all)
_EXACT_SUM_MAX = 2_000_000
_SAMPLE = 20001  # positions sampled for the min / max / check over r when n is larger
_GL_T, _GL_W = np.polynomial.legendre.leggauss(64)


def _positions(problem, r):
    if r is None:
        if problem.n > _EXACT_SUM_MAX:
            raise ValueError(f"n={problem.n} is too large to list every position; pass the positions r to evaluate")
        return np.arange(1, problem.n + 1)
    r = np.atleast_1d(np.asarray(r))
    if r.dtype.kind not in "iu" or np.any(r < 1) or np.any(r > problem.n):
        raise ValueError(f"r={r!r} violates positions 1 <= r <= n = {problem.n}")
    return r


def lemma_a3_variance_bounds(problem: cs.CyclicSGLDProblem, epoch: int, r=None) -> np.ndarray:
    """Lemma A.3's upper bounds on (sigma^r)^2 at the end of ``epoch`` = k + 1, at positions
    ``r`` (default all r = 1..n). The lemma needs 0 < k <= k_dot (see
    :func:`dpjax.accountants.samplers.cyclic_sgld.lower_bound_epoch`)."""
    _paper_pair(problem)
    e = _epoch(epoch)
    k = e - 1
    p = problem
    r = _positions(p, r)
    log_pos = 2.0 * (p.log_lambda_low + (p.n - r.astype(np.float64)) * p.log_lambda)  # log (lambda^ lambda^(n-r))^2
    out = 6.0 / p.alpha * np.exp(log_pos + 2 * k * p.log_epoch_slope)
    return np.where(r == 1, 2.0 / p.alpha * math.exp(2 * e * p.log_epoch_slope), out)


def lemma_a4_variance_bounds(problem: cs.CyclicSGLDProblem, r=None) -> np.ndarray:
    """Lemma A.4's bounds on (sigma^r)^2 at the tested epoch ceil(k_dot) + 1 (default all r)."""
    _paper_pair(problem)
    p = problem
    e = cs.lower_bound_epoch(p).epoch
    r = _positions(p, r)
    r1 = (1.0 + 2.0 * math.exp(1.0 / (p.x_high**2 * p.beta))) / p.alpha * math.exp(2 * e * p.log_epoch_slope)
    return np.where(r == 1, r1, lemma_a3_variance_bounds(p, e, r))


def _v1(xh2beta: float) -> float:
    return max(6.0, 1.0 + 2.0 * math.exp(1.0 / xh2beta))


def lemma_a5_ratio_bound(problem: cs.CyclicSGLDProblem) -> float:
    """Lemma A.5: e^(-2/(x_h^2 beta)) (alpha / v1) (3/(32 x_h^2 beta))^2 (c/n)^2."""
    _paper_pair(problem)
    p = problem
    xb = p.x_high**2 * p.beta
    return math.exp(-2.0 / xb) * p.alpha / _v1(xb) * (3.0 / (32.0 * xb)) ** 2 * (p.c / p.n) ** 2


def lemma_a5_conditions(n, alpha: float, beta: float, x_high: float) -> dict:
    """The conditions of Lemmas A.3 and A.5 on n (each a bool), for any n (mpmath accepted)."""
    xb = x_high**2 * beta
    return {
        "x_h^2 beta > 3": xb > 3,
        "A.3: n > 1/(2 alpha x_h^2 beta) - 1/(x_h^2 beta)": n > 1.0 / (2 * alpha * xb) - 1.0 / xb,
        "A.5: n > alpha/(x_h^2 beta)": n > alpha / xb,
        "A.5: n > (alpha/(x_h^2 beta))(e^(2/(x_h^2 beta)) - 2) + 1/(2 x_h^2 beta)": n > alpha / xb * (math.exp(2.0 / xb) - 2.0) + 1.0 / (2 * xb),
    }


def lemma44_chernoff(gaps: np.ndarray, variances: np.ndarray) -> float:
    """Lemma 4.4: (1/n) sum_r exp(-gap_r^2 / (2 var_r)); each gap_r = mu - mu^r must be >= 0."""
    g = np.asarray(gaps, dtype=np.float64)
    v = np.asarray(variances, dtype=np.float64)
    if np.any(g < 0):
        raise ValueError("Lemma 4.4's Chernoff step needs mu - mu^r >= 0 for every r (a component above mu)")
    return float(np.mean(np.exp(-0.5 * g * g / v)))


def certified_epsilon(prob_d2: float, delta: float) -> float:
    """log((1/2 - delta)/P_D2(S)): the eps that the set S = {theta > mu} rules out (Lemma A.6); -inf if none."""
    d = V.in_range("delta", delta, 0.0, 0.5, high_open=True)
    if not prob_d2 > 0:
        return math.inf
    return math.log(0.5 - d) - math.log(prob_d2)


def lemma_a6_epsilon(ratio_bound: float, delta: float) -> float:
    """Lemma A.6 from a lower bound R on every ratio: P_D2(S) <= e^(-R/2), so eps < R/2 + ln(1/2 - delta)."""
    d = V.in_range("delta", delta, 0.0, 0.5, high_open=True)
    return 0.5 * float(ratio_bound) + math.log(0.5 - d)


def _mean_over_positions(f, n: int, first: int = 1) -> float:
    """(1/(n - first + 1)) sum_{r=first}^n f(r) for f smooth in real r: exact below
    _EXACT_SUM_MAX, else the Euler-Maclaurin trapezoid (integral by 64-point Gauss-Legendre,
    plus the end corrections); the neglected term is of order f'' ~ (log lambda)^2 ~ 1/n^2."""
    count = n - first + 1
    if n <= _EXACT_SUM_MAX:
        return float(np.mean(f(np.arange(first, n + 1, dtype=np.float64))))
    a, b = float(first), float(n)
    x = 0.5 * (a + b) + 0.5 * (b - a) * _GL_T
    integral = 0.5 * (b - a) * float(np.sum(_GL_W * f(x)))
    ends = 0.5 * float(f(np.array([a]))[0] + f(np.array([b]))[0])
    return (integral + ends) / count


def proof_chain(problem: cs.CyclicSGLDProblem, delta: float) -> dict:
    """Every link of the lower-bound chain at the tested epoch, printed constants beside exact values.

    Minima, maxima and checks over the position r use every r for n <= 2e6 and 20001 positions
    (both ends included) above; the means over r are exact sums or the Euler-Maclaurin form.
    """
    _paper_pair(problem)
    p = problem
    lb = cs.lower_bound_epoch(p)
    e = lb.epoch
    law = cs.epoch_law(p, e)
    n = p.n
    r_check = np.arange(1, n + 1) if n <= _EXACT_SUM_MAX else np.unique(np.linspace(1, n, _SAMPLE).round().astype(np.int64))
    j = (n - r_check).astype(np.float64)
    offsets, variances = law.offsets(j), law.variances(j)  # mu^r - mu and (sigma^r)^2
    gaps = -offsets
    ratios = gaps * gaps / variances
    gap_bound = lemma_a2_gap_bound(p, e)
    var_bound = lemma_a4_variance_bounds(p, r_check)
    ratio_from_bounds = gap_bound**2 / var_bound  # A.2 and A.4 combined, per r
    ratio_a5 = lemma_a5_ratio_bound(p)
    if np.any(gaps < 0):
        raise ValueError("a D2 component's mean lies above D1's: Lemma 4.4's Chernoff step does not apply")

    def over_r(fn):
        return _mean_over_positions(lambda r: fn(law.offsets(n - np.asarray(r, np.float64)), law.variances(n - np.asarray(r, np.float64))), n)

    prob_exact = over_r(lambda o, v: special.ndtr(o / np.sqrt(v)))
    chernoff_exact = over_r(lambda o, v: np.exp(-0.5 * o * o / v))
    # Lemma A.4's bound has its own form at r = 1; for r > 1 it is smooth in r
    log_a4_rest = lambda r: math.log(6.0 / p.alpha) + 2.0 * (p.log_lambda_low + (n - r) * p.log_lambda) + 2 * (e - 1) * p.log_epoch_slope
    chernoff_rest = _mean_over_positions(lambda r: np.exp(-0.5 * gap_bound**2 * np.exp(-log_a4_rest(r))), n, first=2)
    chernoff_bounds = (math.exp(-0.5 * gap_bound**2 / float(var_bound[0])) + (n - 1) * chernoff_rest) / n
    tight = cs.epoch_end_epsilon(p, e, delta)
    cn2 = (p.c / p.n) ** 2
    return dict(
        k_dot=lb.k_dot, epoch=e, step=lb.step, c_over_n=p.c / p.n, positions_checked=int(r_check.size),
        conditions=lemma_a5_conditions(p.n, p.alpha, p.beta, p.x_high),
        lemma_a2=dict(bound=gap_bound, exact_min_gap=float(gaps.min()), exact_max_gap=float(gaps.max()), holds=bool(gaps.min() >= gap_bound)),
        lemma_a4=dict(bound_r1=float(var_bound[0]), exact_r1=float(variances[0]), bound_max=float(var_bound.max()), exact_max=float(variances.max()),
                      holds=bool(np.all(variances <= var_bound * (1 + 1e-12)))),
        lemma_a5=dict(bound=ratio_a5, from_a2_a4_min=float(ratio_from_bounds.min()), exact_min=float(ratios.min()), exact_max=float(ratios.max()),
                      holds=bool(ratios.min() >= ratio_a5), bound_over_c_over_n_sq=ratio_a5 / cn2, exact_min_over_c_over_n_sq=float(ratios.min()) / cn2),
        lemma44=dict(exact_probability=prob_exact, chernoff_exact_ratios=chernoff_exact, chernoff_a2_a4_bounds=chernoff_bounds,
                     chernoff_a5=math.exp(-0.5 * ratio_a5), holds=bool(prob_exact <= chernoff_exact)),
        epsilon=dict(
            delta=delta,
            lemma_a6_printed=lemma_a6_epsilon(ratio_a5, delta),
            chernoff_a2_a4=certified_epsilon(chernoff_bounds, delta),
            chernoff_exact_ratios=certified_epsilon(chernoff_exact, delta),
            exact_set_s=certified_epsilon(prob_exact, delta),
            exact_tight=tight,
        ),
    )


# ------------------------------------------------------------------------------------------
# Theorem 1's instance sizes
def lemma42_eps1(n, nu, alpha, beta, x_high, x_low, gamma1, c):
    """Lemma 4.2's eps1 in mpmath (any n, c; the float version is
    :func:`dpjax.accountants.posterior.gaussian.sgld_paper_posterior_rdp_bound`). NaN-free only above the
    lemma's threshold n > max(1 + 10 (x_h^2/x_l^2)(nu/beta), 1 + nu x_h^2/x_l^2)."""
    n, nu, alpha, beta, c = (mp.mpf(v) for v in (n, nu, alpha, beta, c))
    xh2, xl2, g1 = mp.mpf(x_high) ** 2, mp.mpf(x_low) ** 2, mp.mpf(gamma1)
    ng = n**g1
    k = xh2 * alpha + xh2**2 * beta
    t1 = xh2 / (2 * (n - 1) * xl2)
    t2 = (nu - 1) * nu * xh2 / (2 * ((n - 1) * xl2 - nu * xh2))
    t3 = 2 * nu * beta * xh2**2 / (mp.mpf("0.9") * n ** (1 - 2 * g1) * xl2)
    t4 = 2 * nu * beta * (xh2 * beta) * k / (mp.mpf("0.9") * (xl2 * beta) ** 2) * (c + ng) / n ** (2 - g1)
    t5 = nu / 2 * k**2 / (mp.mpf("0.9") * xl2**3 * beta) * (c + ng) ** 2 / n**3
    return t1 + t2 + t3 + t4 + t5


def _eps1_log10n(log10_n: float, nu, alpha, beta, x_high, x_low, gamma1, gamma2) -> float:
    """Lemma 4.2's eps1 at n = 10^log10_n and c = n^gamma2, each term formed in log space (n may
    exceed the float range; checked against :func:`lemma42_eps1` in mpmath)."""
    ln = log10_n * math.log(10.0)
    xh2, xl2 = x_high**2, x_low**2
    k = xh2 * alpha + xh2**2 * beta
    log_nm1 = ln + math.log1p(-math.exp(-ln))  # log(n - 1)
    log_c_plus = gamma2 * ln + math.log1p(math.exp((gamma1 - gamma2) * ln))  # log(n^gamma2 + n^gamma1)
    t1 = math.exp(math.log(xh2 / (2 * xl2)) - log_nm1)
    # (n-1) x_l^2 - nu x_h^2 = (n-1) x_l^2 (1 - nu x_h^2 / ((n-1) x_l^2))
    t2 = math.exp(math.log((nu - 1) * nu * xh2 / (2 * xl2)) - log_nm1 - math.log1p(-nu * xh2 / xl2 * math.exp(-log_nm1)))
    t3 = math.exp(math.log(2 * nu * beta * xh2**2 / (0.9 * xl2)) - (1 - 2 * gamma1) * ln)
    t4 = math.exp(math.log(2 * nu * beta * (xh2 * beta) * k / (0.9 * (xl2 * beta) ** 2)) + log_c_plus - (2 - gamma1) * ln)
    t5 = math.exp(math.log(nu / 2 * k**2 / (0.9 * xl2**3 * beta)) + 2 * log_c_plus - 3 * ln)
    return t1 + t2 + t3 + t4 + t5


class Theorem1Instance(NamedTuple):
    log10_n: float  # the smallest n meeting all conditions (log10)
    log10_n_posterior: float  # from Lemma 4.3's (eps, delta) alone
    log10_n_sgld: float  # from Lemma A.6's eps' alone
    log10_c: float  # c = n^gamma2 at that n
    nu: float


def theorem1_instance(epsilon: float, epsilon_prime: float, delta: float, gamma2: float, *, alpha: float = 0.1, beta: float = 1.0,
                      x_high: float = 1.8, gamma1: float = 0.1) -> Theorem1Instance:
    """Smallest n (with c = n^gamma2, x_l = x_h/2) at which the printed Lemmas 4.3 and A.6 give
    Theorem 1: the posterior (eps, delta)-DP and some SGLD iterate not (eps', delta)-DP.

    nu = 1 + 2 ln(1/delta)/eps (§4.1). Needs 0 < gamma1 < 1/2, 1 < gamma2 < 3/2 and
    gamma1 + gamma2 < 2 (then eps1 decreases with n and Lemma A.6 grows), and delta < 1/2.
    Returns log10 of the sizes (n can be far beyond the float range).
    """
    eps = V.positive("epsilon", epsilon)
    eps_p = V.positive("epsilon_prime", epsilon_prime)
    d = V.in_range("delta", delta, 0.0, 0.5, low_open=True, high_open=True)
    g1 = V.in_range("gamma1", gamma1, 0.0, 0.5, low_open=True, high_open=True)
    g2 = V.in_range("gamma2", gamma2, 1.0, 1.5, low_open=True, high_open=True)
    if not g2 + g1 < 2:
        raise ValueError(f"gamma1 + gamma2 = {g1 + g2:.6g} violates gamma1 + gamma2 < 2 (Lemma 4.2's fourth term must decrease)")
    x_low = x_high / 2.0
    xb = x_high**2 * beta
    if not xb > 3:
        raise ValueError(f"x_high^2 beta={xb:.6g} violates x_h^2 beta > 3 (paper 000 §4)")
    nu = 1.0 + 2.0 * math.log(1.0 / d) / eps
    # Lemma A.6: K n^(2 gamma2 - 2) > eps' - ln(1/2 - delta), K = the A.5 constant / 2 at c/n = 1
    K = 0.5 * math.exp(-2.0 / xb) * alpha / _v1(xb) * (3.0 / (32.0 * xb)) ** 2
    log10_sgld = (math.log10(eps_p - math.log(0.5 - d)) - math.log10(K)) / (2.0 * g2 - 2.0)
    # Lemma 4.2/4.3: eps1(n) <= eps/2, bisection on log10 n above the lemma's threshold (eps1 decreases there)
    threshold = max(1.0 + 10.0 * (x_high**2 / x_low**2) * nu / beta, 1.0 + nu * x_high**2 / x_low**2)
    f = lambda lg: _eps1_log10n(lg, nu, alpha, beta, x_high, x_low, g1, g2) - eps / 2
    lo = math.log10(threshold) + 1e-9
    hi = lo + 1.0
    while f(hi) > 0:
        hi = lo + 2.0 * (hi - lo)
        if hi > 1e6:
            raise ValueError("no n below 10^(10^6) makes Lemma 4.2's eps1 <= eps/2")
    if f(lo) <= 0:
        log10_post = lo
    else:
        log10_post = float(optimize.brentq(f, lo, hi, xtol=1e-12))
    conds = max(1.0 / (2 * alpha * xb) - 1.0 / xb, alpha / xb, alpha / xb * (math.exp(2.0 / xb) - 2.0) + 1.0 / (2 * xb), 1.0)
    log10_n = max(log10_post, log10_sgld, math.log10(conds))
    return Theorem1Instance(log10_n, log10_post, log10_sgld, g2 * log10_n, nu)

"""Sampling checks for ``dpjax reproduce sgld-interim`` (paper 000 §4.2–4.3, appendices B–C).

Two parts, both returning plain dicts for :func:`dpjax.experiments.sgld_interim.figure1.compute`:

- :func:`monte_carlo`: coupled cyclic-SGLD chain pairs on paper 000's eq. 7 pair at a small n,
  recorded at epoch ends; per epoch a 95% lower confidence bound on eps(delta)
  (:func:`dpjax.estimators.epsilon_lower_bound`) and a plug-in estimate
  (:func:`dpjax.estimators.epsilon_estimate`) beside the exact tight eps of the closed-form
  laws (:mod:`dpjax.accountants.samplers.cyclic_sgld`, :mod:`dpjax.accountants.mechanisms.mixture`).
- :func:`propose_test_sample`: Algorithm 1 ("Propose Test Sample") on the eq. 8 pair D3/D4,
  run many times, with line 19 either the posterior sample (Claim 4.1: (5 eps, 2 delta)-DP)
  or cyclic SGLD stopped at an interim step (Claim 4.2: not private); the privacy of each
  variant is measured from its outputs and computed exactly.

Why the exact value of Algorithm 1 is reachable on D3/D4: every record of both datasets has
the ratio y/x = n1^rho3, so V and W are either all records or none, |V|, |W| and m coincide
on D3 and D4, and the whole filter (lines 1–18) has the SAME law on both. The output laws are
then p_null * [null] + (1 - p_null) * L3 and p_null * [null] + (1 - p_null) * L4 with L3, L4
the line-19 laws, so delta_M(eps) = (1 - p_null) delta_L(eps) and
eps_M(delta) = eps_L(delta / (1 - p_null)).
"""
from __future__ import annotations

import dataclasses
import math
import time
from typing import Callable, Mapping, Optional, Sequence

import numpy as np

from ... import _validate as V
from ...accountants.samplers import cyclic_sgld as cs
from ...accountants.mechanisms import mixture as mx

FIGURE1_C_OVER_N = 1165165.0 / 1149019.0  # paper 000 Figure 1: c / n
CLAIMED_FACTOR_EPSILON, CLAIMED_FACTOR_DELTA = 5.0, 2.0  # Claim 4.1: (5 eps, 2 delta)-DP


# ------------------------------------------------------------------------------------------
# shared setup: paper 000 eq. 7 pair for dpjax.run_coupled (also usable by dpjax.demo)
# ------------------------------------------------------------------------------------------
def eq7_coupled_setup(n: int, *, c: float, alpha: float, beta: float, x_high: float, step_size: Optional[float] = None):
    """(problem, model, pair, sampler, init) for cyclic SGLD on paper 000's eq. 7 pair.

    D = n copies of (x_h, c x_h); D' replaces record 0 by (x_h/2, c x_h/2). The sampler is
    Welling–Teh cyclic SGLD with b = 1 and the paper's eta = 2/(alpha + n x_h^2 beta)^2 unless
    ``step_size`` is given; ``init`` draws theta_0 from the prior N(0, 1/alpha).
    """
    import jax

    from ... import make_dataset, replace_one, samplers
    from ...models.linear_regression import bayesian_linear_regression

    x_low = x_high / 2.0
    problem = cs.CyclicSGLDProblem(n=n, alpha=alpha, beta=beta, x_high=x_high, x_low=x_low, c=c, step_size=step_size)
    x = np.full(n, x_high)
    data = make_dataset(x=x[:, None], y=c * x)
    pair = replace_one(data, 0, {"x": np.array([x_low]), "y": np.array(c * x_low)})
    model = bayesian_linear_regression(noise_precision=beta, prior_precision=alpha)
    sampler = samplers.cyclic_sgld(problem.eta)
    prior_sd = 1.0 / math.sqrt(alpha)

    def prior_draw(key):
        # JAX's default float: float64 inside a float64 run, float32 in a float32 one (the
        # runner casts to the run's dtype either way; asking for float64 there only warns)
        return jax.random.normal(key, (1,)) * prior_sd

    return problem, model, pair, sampler, prior_draw


def figure1_c(n: int) -> float:
    """c at ``n`` records with Figure 1's ratio c/n = 1165165/1149019 (paper 000 §4.2)."""
    return n * FIGURE1_C_OVER_N


def exact_epoch_epsilon(problem: cs.CyclicSGLDProblem, epoch: int, delta: float) -> float:
    """Tight eps(delta) at the end of ``epoch`` (Gaussian on D vs n-component mixture on D')."""
    law = cs.epoch_law(problem, int(epoch))
    return float(mx.mixture_epsilon(math.sqrt(law.variance), law.mixture(), delta))


def monte_carlo_epochs(n: int, *, alpha: float, beta: float, x_high: float, delta: float, c: Optional[float] = None,
                       count: int = 3, max_epochs: int = 60) -> list:
    """``count`` epochs up to the interim peak of the exact eps(delta) curve at ``n`` records
    (evenly spaced, the peak last): where the chains are worth recording. ``c`` None: Figure 1's c/n."""
    V.positive_int("count", count)
    problem = cs.CyclicSGLDProblem(n=n, alpha=alpha, beta=beta, x_high=x_high, x_low=x_high / 2.0, c=figure1_c(n) if c is None else float(c))
    peak, _ = sgld_interim_peak(problem, delta, max_epochs)
    return sorted({max(1, round(peak * (k + 1) / count)) for k in range(count)})


def _check_epochs(epochs) -> list:
    ep = [int(e) for e in np.atleast_1d(np.asarray(epochs))]
    if not ep or any(e < 1 for e in ep) or len(set(ep)) != len(ep):
        raise ValueError(f"epochs={list(np.atleast_1d(epochs))!r} violates a non-empty list of distinct integers >= 1")
    return sorted(ep)


def monte_carlo(
    n: int,
    *,
    alpha: float,
    beta: float,
    x_high: float,
    c: Optional[float] = None,
    epochs: Sequence[int],
    delta: float,
    num_pairs: int,
    seed: int,
    confidence: float = 0.95,
    chunk_size: Optional[int] = None,
    progress: bool = False,
    keep_samples: bool = False,
) -> dict:
    """Coupled cyclic-SGLD chains on the eq. 7 pair at ``n`` records, checked against the exact laws.

    ``c`` None keeps Figure 1's c/n (c = n * 1165165/1149019). Every epoch e in ``epochs`` is
    recorded at step e n. Per epoch: ``lower_bound`` (``confidence`` lower bound, so each is
    below the exact value with probability >= ``confidence``), its ``lower_bound_ceiling``
    (the largest value the held-out sizes can certify), the plug-in ``estimate`` and its
    bootstrap ``estimate_interval``, and the ``exact_tight_epsilon``. ``keep_samples`` adds
    ``samples`` = (positions on D, positions on D'), each (epochs, finite pairs), for checks.
    """
    from ... import run_coupled
    from ...estimators import epsilon_estimate, epsilon_lower_bound

    V.positive_int("n", n)
    V.positive_int("num_pairs", num_pairs)
    V.in_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    ep = _check_epochs(epochs)
    if c is None:
        c = figure1_c(n)
    t0 = time.perf_counter()
    problem, model, pair, sampler, init = eq7_coupled_setup(n, c=float(c), alpha=alpha, beta=beta, x_high=x_high)
    exact = np.array([exact_epoch_epsilon(problem, e, delta) for e in ep])
    t_exact = time.perf_counter() - t0
    result = run_coupled(
        seed, model, pair, sampler, num_pairs=num_pairs, num_steps=ep[-1] * n, record_steps=[e * n for e in ep],
        init=init, progress=progress, chunk_size=chunk_size or max(n, 1000),
    )
    t_chains = time.perf_counter() - t0 - t_exact
    fin = result.finite_only()
    lbs, ceilings, ests, intervals = [], [], [], []
    for i in range(len(ep)):
        p, q = np.asarray(fin.positions[i]), np.asarray(fin.neighbour_positions[i])
        lb = epsilon_lower_bound(p, q, delta, confidence, seed=seed + i)
        est = epsilon_estimate(p, q, delta, num_bootstrap=100, seed=seed + i)
        lbs.append(lb.epsilon)
        ceilings.append(lb.resolution_ceiling)
        ests.append(est.epsilon)
        intervals.append(tuple(float(v) for v in est.interval))
    lbs = np.array(lbs)
    extra = dict(samples=(np.asarray(fin.positions[..., 0]), np.asarray(fin.neighbour_positions[..., 0]))) if keep_samples else {}
    return extra | dict(
        n=int(n), c=float(c), alpha=float(alpha), beta=float(beta), x_high=float(x_high), x_low=float(x_high) / 2.0,
        step_size=problem.eta, delta=float(delta), confidence=float(confidence), seed=int(seed),
        epochs=np.array(ep), exact_tight_epsilon=exact,
        lower_bound=lbs, lower_bound_ceiling=np.array(ceilings),
        estimate=np.array(ests), estimate_interval=np.array(intervals),
        num_pairs=int(num_pairs), num_nonfinite=int(result.num_nonfinite),
        all_lower_bounds_below_exact=bool(np.all(lbs <= exact)),
        seconds=dict(exact=t_exact, chains=t_chains, estimators=time.perf_counter() - t0 - t_exact - t_chains),
    )


# ------------------------------------------------------------------------------------------
# Algorithm 1: Propose Test Sample (paper 000 §4.3, appendices B–C)
# ------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class PTSParameters:
    """Algorithm 1's parameters; defaults are paper 000 eq. 27 (x_l = x_h/2, beta = 3, x_h = 1, alpha = 1).

    ``n_min_rule``: "eq26" is eq. 26 as printed (with n2 in place of n1 in the last term, the
    quantity the algorithm knows; NOTES erratum); "feasible" keeps eq. 26's terms that are
    reachable at sizes a computer can run -- the first two terms of n_b1, n_b2 and n2^(rho2/gamma1).
    The other five terms of n_b1 are at least (213 nu/eps)^(1/(1-2 gamma1)) = ~1e116 at eq. 27
    (1/(1 - 2 gamma1) = 50), so with "eq26" Algorithm 1 returns null with probability 1 at
    every n1 < 1e100.
    """

    epsilon: float
    delta: float
    rho1: float = 1.25
    rho2: float = 0.45
    rho3: float = 1.15
    gamma1: float = 0.49
    x_high: float = 1.0
    x_low: Optional[float] = None  # None: x_h / 2
    alpha: float = 1.0
    beta: float = 3.0
    n_min_rule: str = "feasible"

    def __post_init__(self):
        V.positive("epsilon", self.epsilon)
        V.in_range("delta", self.delta, 0.0, 0.5, low_open=True, high_open=True)
        V.in_range("rho1", self.rho1, 1.0, 1.5, low_open=True, high_open=True)
        V.in_range("rho2", self.rho2, 0.0, 0.5, low_open=True, high_open=True)
        V.in_range("gamma1", self.gamma1, self.rho2, 0.5, low_open=True, high_open=True)
        V.in_range("rho3", self.rho3, 1.0, self.rho1, low_open=True, high_open=True)
        V.positive("x_high", self.x_high)
        V.in_range("x_low", self.xl, 0.0, self.x_high, low_open=True, high_open=True)
        V.positive("alpha", self.alpha)
        V.positive("beta", self.beta)
        if self.beta < 3.0 / self.x_high**2:
            raise ValueError(f"beta={self.beta!r} violates beta >= 3/x_h^2 = {3.0 / self.x_high**2:.6g} (Algorithm 1's parameters)")
        V.one_of("n_min_rule", self.n_min_rule, ("feasible", "eq26"))

    @property
    def xl(self) -> float:
        return self.x_high / 2.0 if self.x_low is None else float(self.x_low)

    @property
    def shift(self) -> float:
        """(1/eps) log(1/(2 delta)): the downward shift of every noisy count (lines 6, 8, 15)."""
        return math.log(1.0 / (2.0 * self.delta)) / self.epsilon

    @property
    def nu(self) -> float:
        return 2.0 * math.log(1.0 / self.delta) / self.epsilon + 1.0


def n1_lower_limit(params: PTSParameters) -> float:
    """Eq. 27's lower limit on n1: max{2 L, 4 L, 2^(10 rho1), 2^(9 + 10 rho2)}, L = (1/eps) log(1/(2 delta))."""
    L = params.shift
    return max(2 * L, 4 * L, 2.0 ** (10 * params.rho1), 2.0 ** (9 + 10 * params.rho2))


def n_min_terms(params: PTSParameters, m_check, n2) -> dict:
    """Eq. 26's terms (arrays broadcast over runs). n_b1's c-dependent terms use m-check
    (clipped at 0: a negative estimate makes the term 0 rather than undefined), and the last
    term uses n2 (the NOTES erratum: eq. 36 uses n2, which the algorithm has privately)."""
    p = params
    eps, nu, b, a, xh, xl, g = p.epsilon, p.nu, p.beta, p.alpha, p.x_high, p.xl, p.gamma1
    r2 = (xh / xl) ** 2
    m_pos = np.maximum(np.asarray(m_check, dtype=np.float64), 0.0)
    k4 = (32 * nu * b / eps) * (xh**2 * b / (0.9 * (xl**2 * b) ** 2)) * (xh**2 * a + xh**4 * b)
    k6 = (8 * nu / eps) * ((xh**2 * a + xh**4 * b) / (0.9 * xl**6 * b))
    with np.errstate(over="ignore"):
        terms = dict(
            b1_1=1 + r2 * 8 / eps,
            b1_2=1 + nu * r2 * (1 + 8 * (nu - 1) / eps),
            b1_3=(16 * nu * b * xh**4 / (0.9 * eps * xl**2)) ** (1 / (1 - 2 * g)),
            b1_4=(k4 * m_pos) ** (1 / (2 - g)),
            b1_5=k4 ** (1 / (2 - 2 * g)),
            b1_6=(k6 * m_pos) ** (2 / 3),
            b1_7=k6 ** (2 / (3 - 2 * g)),
            b2_1=1 + r2 * 10 * nu / b,
            b2_2=1 + nu * r2,
            last=np.maximum(np.asarray(n2, dtype=np.float64), 0.0) ** (p.rho2 / g),
        )
    return terms


FEASIBLE_TERMS = ("b1_1", "b1_2", "b2_1", "b2_2", "last")


def n_min(params: PTSParameters, m_check, n2) -> np.ndarray:
    """Eq. 26 (``n_min_rule`` "eq26") or its computable part ("feasible"); see PTSParameters."""
    terms = n_min_terms(params, m_check, n2)
    keys = FEASIBLE_TERMS if params.n_min_rule == "feasible" else tuple(terms)
    out = np.asarray(terms[keys[0]], dtype=np.float64)
    for k in keys[1:]:
        out = np.maximum(out, terms[k])
    return out


@dataclasses.dataclass(frozen=True)
class FilterOutcome:
    """Lines 1–18 of Algorithm 1 for each run (arrays of shape (runs,)).

    ``passed``: the run reaches line 19 with a non-empty W (null otherwise: lines 10, 17, or
    p(theta | {}) = null as the proof of Claim 4.2 assumes). ``w_size``, ``w_sum_xx``,
    ``w_sum_xy``: |W| and W's sufficient statistics; ``w_odd``: W holds a record whose
    clipped x differs from x_h (used by the SGLD replacement on the eq. 8 pair).
    """

    n1_check: np.ndarray
    v_size: np.ndarray
    n2: np.ndarray
    m: np.ndarray
    m_check: np.ndarray
    w_size: np.ndarray
    n_w: np.ndarray
    n_min: np.ndarray
    passed: np.ndarray
    w_sum_xx: np.ndarray
    w_sum_xy: np.ndarray


def standard_laplace_noise(rng: np.random.Generator, num_runs: int) -> dict:
    """The four Laplace(1) draws of Algorithm 1 (lines 6, 8, 13, 15), per run; scaled inside."""
    return {k: rng.laplace(size=num_runs) for k in ("l1", "l2", "l3", "l4")}


def propose_test_filter(x, y, params: PTSParameters, noise: Mapping[str, np.ndarray]) -> FilterOutcome:
    """Lines 1–18 of Algorithm 1, vectorised over runs.

    ``noise`` holds standard Laplace(1) draws ``l1..l4`` (one per run) for lines 6, 8, 13, 15;
    the algorithm scales them (1/eps for the counts, line 13's scale for m). V and W are sets of
    records whose ratio y/x lies in an interval, so with the records sorted by ratio each set
    is an index range and its sums come from prefix sums: O(n1 log n1 + runs log n1).
    W is taken inside V (the filtered database; on the eq. 8 pair V is all or nothing, so the
    choice does not matter there).
    """
    p = params
    x = np.clip(np.asarray(x, dtype=np.float64).reshape(-1), p.xl, p.x_high)  # lines 2-3
    y = np.maximum(np.asarray(y, dtype=np.float64).reshape(-1), 0.0)  # line 4
    if x.shape != y.shape or x.size < 1:
        raise ValueError(f"x and y need the same non-zero length; got {x.shape} and {y.shape}")
    l1, l2, l3, l4 = (np.asarray(noise[k], dtype=np.float64).reshape(-1) for k in ("l1", "l2", "l3", "l4"))
    if not (l1.shape == l2.shape == l3.shape == l4.shape):
        raise ValueError("noise arrays l1..l4 must have one common length (one draw per run)")
    n1 = x.size
    ratio = y / x
    order = np.argsort(ratio, kind="stable")
    r_sorted = ratio[order]
    cxx = np.concatenate([[0.0], np.cumsum(x[order] ** 2)])
    cxy = np.concatenate([[0.0], np.cumsum(x[order] * y[order])])

    n1_check = n1 - p.shift + l1 / p.epsilon  # line 6
    with np.errstate(invalid="ignore"):
        threshold = np.where(n1_check > 0, np.power(np.maximum(n1_check, 0.0), p.rho1), -np.inf)  # line 7
    v_size = np.searchsorted(r_sorted, threshold, side="right")
    n2 = v_size - p.shift + l2 / p.epsilon  # line 8
    alive = n2 > 1  # line 9
    sxx_v, sxy_v = cxx[v_size], cxy[v_size]
    with np.errstate(invalid="ignore", divide="ignore"):
        m = np.where(v_size > 0, sxy_v / np.where(v_size > 0, sxx_v, 1.0), 0.0)  # line 12
        n2_safe = np.where(alive, n2, 2.0)
        thr_pos = np.maximum(threshold, 0.0)  # n1_check^rho1 (0 when n1_check <= 0)
        scale = (thr_pos / p.epsilon) * (2 * (n2_safe - 1) * p.x_high**2 * p.xl**2 + p.x_high**4) / (n2_safe * (n2_safe - 1) * p.xl**4)
        m_check = m + scale * l3  # line 13
        radius = np.power(n2_safe, p.rho2)
    lo = np.searchsorted(r_sorted, m_check - radius, side="left")  # line 14, inside V
    hi = np.minimum(np.searchsorted(r_sorted, m_check + radius, side="right"), v_size)
    w_size = np.maximum(hi - lo, 0)
    n_w = w_size - p.shift + l4 / p.epsilon  # line 15
    nmin = n_min(p, m_check, n2_safe)
    passed = alive & (n_w >= nmin) & (w_size > 0)  # lines 16-19 (p(theta|{}) = null)
    w_sum_xx = np.where(w_size > 0, cxx[np.maximum(hi, lo)] - cxx[lo], 0.0)
    w_sum_xy = np.where(w_size > 0, cxy[np.maximum(hi, lo)] - cxy[lo], 0.0)
    return FilterOutcome(n1_check, v_size, n2, m, m_check, w_size, n_w, nmin, passed, w_sum_xx, w_sum_xy)


def posterior_moments(params: PTSParameters, sum_xx, sum_xy):
    """p(theta | W) = N(mu, s^2), mu = beta sum xy/(alpha + beta sum xx), s^2 = 1/(alpha + beta sum xx) (§4.3)."""
    prec = params.alpha + params.beta * np.asarray(sum_xx, dtype=np.float64)
    return params.beta * np.asarray(sum_xy, dtype=np.float64) / prec, 1.0 / np.sqrt(prec)


# --- the eq. 8 pair ------------------------------------------------------------------------
def eq8_pair(n1: int, params: PTSParameters):
    """(x3, y3), (x4, y4): D3 = n1 records (x_h, n1^rho3 x_h); D4 replaces one by (x_h/2, n1^rho3 x_h/2)."""
    V.positive_int("n1", n1)
    if n1 < 2:
        raise ValueError(f"n1={n1} violates n1 >= 2")
    c = float(n1) ** params.rho3
    x3 = np.full(n1, params.x_high)
    x4 = x3.copy()
    x4[0] = params.x_high / 2.0
    return (x3, c * x3), (x4, c * x4)


def sgld_problem(n1: int, params: PTSParameters) -> cs.CyclicSGLDProblem:
    """Claim 4.2's line 19 on W = D3 or D4: cyclic SGLD, eta = 1/(alpha + n1 x_h^2 beta)^2, theta_0 from the prior."""
    if abs(params.xl - params.x_high / 2.0) > 1e-15 * params.x_high:
        raise ValueError(f"x_low={params.xl!r} must be x_h/2 for the eq. 8 pair (D4's odd record is (x_h/2, c x_h/2))")
    eta = 1.0 / (params.alpha + n1 * params.x_high**2 * params.beta) ** 2
    return cs.CyclicSGLDProblem(n=n1, alpha=params.alpha, beta=params.beta, x_high=params.x_high, x_low=params.xl,
                                c=float(n1) ** params.rho3, step_size=eta)


def sgld_interim_peak(problem: cs.CyclicSGLDProblem, delta: float, max_epochs: int = 80) -> tuple[int, np.ndarray]:
    """T(n1) of Claim 4.2 as the epoch end (T = e n1) where the exact eps(delta) of the SGLD
    iterate on D3 vs D4 peaks, among epochs 1..max_epochs; returns (epoch, [epochs; eps]) for
    the epochs evaluated."""
    # coarse grid, then every epoch around the best: the curve rises to one interim peak and
    # falls (paper 000 Figure 1); ~20 mixture evaluations instead of max_epochs
    stride = max(1, max_epochs // 16)
    values: dict = {}

    def at(e: int) -> float:
        if e not in values:
            values[e] = exact_epoch_epsilon(problem, e, delta)
        return values[e]

    best = max(range(1, max_epochs + 1, stride), key=at)
    best = max(range(max(1, best - stride + 1), min(max_epochs, best + stride - 1) + 1), key=at)
    epochs = np.array(sorted(values))
    return int(best), np.stack([epochs, np.array([values[e] for e in epochs])])


def sample_sgld_iterate(law: cs.EpochLaw, *, odd: bool, rng: np.random.Generator, size: int) -> np.ndarray:
    """Draws of the cyclic-SGLD iterate at an epoch end from its exact law: on the all-x_h
    dataset one Gaussian; with the odd record (``odd``) first its position r, uniform on 1..n
    (each chain's own random order), then that component's Gaussian."""
    z = rng.standard_normal(size)
    if not odd:
        return law.mean + math.sqrt(law.variance) * z
    j = rng.integers(0, law.n, size=size)  # j = n - r
    return law.mean + law.offsets(j) + np.sqrt(law.variances(j)) * z


def _gaussian_pair_epsilon(mean_gap: float, sd_p: float, sd_q: float, delta: float) -> float:
    """Tight eps(delta) between N(0, sd_p^2) and N(mean_gap, sd_q^2), larger direction."""
    return float(mx.mixture_epsilon(sd_p, mx.equal_weight_mixture([mean_gap], [sd_q]), delta))


def _null_adjusted(eps_of_delta: Callable[[float], float], delta: float, p_null: float) -> float:
    """eps_M(delta) = eps_L(delta/(1 - p_null)) (module docstring); 0 when that exceeds 1."""
    d = delta / (1.0 - p_null) if p_null < 1 else math.inf
    return 0.0 if d >= 1.0 else eps_of_delta(d)


NULL_SENTINEL = -1e9  # null's code: below every theta either variant can return (theta in ~[-10, 1e8])


def encode_outputs(passed: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """(is_null, theta) -> one number: theta, or NULL_SENTINEL for null (see propose_test_sample)."""
    return np.where(passed, theta, NULL_SENTINEL)


def propose_test_sample(
    *,
    n1: int,
    epsilon: float,
    delta: float,
    seed: int,
    num_runs: int,
    sgld: bool,
    params: Optional[PTSParameters] = None,
    sgld_epoch: Optional[int] = None,
    num_filter_runs: int = 1_000_000,
    confidence: float = 0.95,
    noise: Optional[Mapping[str, Mapping[str, np.ndarray]]] = None,
) -> dict:
    """Algorithm 1 on paper 000's eq. 8 pair, run ``num_runs`` times on D3 and on D4; its eps measured.

    Line 19 is the posterior sample p(theta | W) (``sgld=False``; Claim 4.1 claims
    (5 eps, 2 delta)-DP) or, ``sgld=True``, Claim 4.2's replacement: cyclic SGLD on W with
    eta = 1/(alpha + n1 x_h^2 beta)^2 from the prior, released after T = e n1 steps where e
    (``sgld_epoch``; default the peak of the exact curve) maximises the exact eps(delta).

    The SGLD iterate is drawn from its exact law (for a fixed record order the chain is a
    Gaussian AR(1) recursion; :mod:`dpjax.accountants.samplers.cyclic_sgld`): on D3 one Gaussian, on
    D4 the component of a uniformly drawn position r of the odd record. This is the law of
    running the chain, not an approximation (tests/test_sgld_interim_mc.py checks it against
    a step-by-step simulation); it makes n1 ~ 1e4 and T ~ 1e5 steps affordable on a CPU.

    Null: outputs are (is_null, theta). For the threshold sets of
    :func:`~dpjax.estimators.epsilon_lower_bound` null is coded as ``NULL_SENTINEL``, below
    every theta; a set {t > c} above the sentinel excludes null, which is Claim 4.2's test set
    S = {theta > mu_T} (eq. 28), chosen before sampling. Null has the same probability on
    D3 and D4 (module docstring), so no set gains from it.

    ``noise``: optional {"D3": {...}, "D4": {...}} of standard Laplace draws l1..l4 (length
    ``num_runs``) to fix lines 6, 8, 13, 15 (tests).

    Exact value: eps_M(delta) = eps_L(delta/(1 - p_null)) with L the line-19 laws; p_null is
    estimated from ``num_filter_runs`` filter runs (exact Clopper–Pearson 99.9% interval), so
    ``exact_epsilon_interval`` brackets the exact value at that confidence.

    No plug-in estimate is reported: at the SGLD peak the two laws are ~12 sd apart, and the
    binned estimator (bins merged until each holds both sides) collapses to one bin and
    returns 0 -- uninformative, not a measurement.
    """
    from scipy import stats

    from ...estimators import epsilon_lower_bound

    if params is None:
        params = PTSParameters(epsilon=epsilon, delta=delta)
    elif params.epsilon != epsilon or params.delta != delta:
        raise ValueError(f"params has epsilon={params.epsilon}, delta={params.delta}; the call passes epsilon={epsilon}, delta={delta}")
    V.positive_int("num_runs", num_runs)
    V.positive_int("num_filter_runs", num_filter_runs)
    t0 = time.perf_counter()
    (x3, y3), (x4, y4) = eq8_pair(n1, params)
    rng = np.random.default_rng(seed)

    # exact line-19 laws on W = D3 and W = D4
    if sgld:
        problem = sgld_problem(n1, params)
        if sgld_epoch is None:
            sgld_epoch, _ = sgld_interim_peak(problem, delta)
        law = cs.epoch_law(problem, int(sgld_epoch))
        sd3, mix4 = math.sqrt(law.variance), law.mixture()
        eps_line19 = lambda d: float(mx.mixture_epsilon(sd3, mix4, d))
    else:
        s3xx, s4xx = float(np.sum(x3**2)), float(np.sum(x4**2))
        mu3, sd3 = posterior_moments(params, s3xx, float(np.sum(x3 * y3)))
        mu4, sd4 = posterior_moments(params, s4xx, float(np.sum(x4 * y4)))
        c = float(n1) ** params.rho3
        # mu3 - mu4 = c alpha beta (S3 - S4)/((alpha + beta S3)(alpha + beta S4)): no cancellation
        gap = -c * params.alpha * params.beta * (s3xx - s4xx) / ((params.alpha + params.beta * s3xx) * (params.alpha + params.beta * s4xx))
        eps_line19 = lambda d: _gaussian_pair_epsilon(gap, float(sd3), float(sd4), d)

    # p_null (same on D3 and D4): a large run of the filter alone
    filt = propose_test_filter(x3, y3, params, standard_laplace_noise(np.random.default_rng([seed, 1]), num_filter_runs))
    k_null = int(np.sum(~filt.passed))
    p_null_hat = k_null / num_filter_runs
    a = 0.001
    p_null_lo = 0.0 if k_null == 0 else float(stats.beta.ppf(a / 2, k_null, num_filter_runs - k_null + 1))
    p_null_hi = 1.0 if k_null == num_filter_runs else float(stats.beta.ppf(1 - a / 2, k_null + 1, num_filter_runs - k_null))
    exact = _null_adjusted(eps_line19, delta, p_null_hat)
    exact_interval = (_null_adjusted(eps_line19, delta, p_null_hi), _null_adjusted(eps_line19, delta, p_null_lo))

    # the mechanism, num_runs times on each dataset
    outputs, null_rates = {}, {}
    for name, (x, y) in (("D3", (x3, y3)), ("D4", (x4, y4))):
        nz = noise[name] if noise is not None else standard_laplace_noise(rng, num_runs)
        f = propose_test_filter(x, y, params, nz)
        runs = f.passed.size
        if sgld:
            # W is all of the dataset whenever the run passes (every ratio is n1^rho3)
            if np.any(f.passed & (f.w_size != n1)):
                raise AssertionError("on the eq. 8 pair W must be all records when non-empty")
            theta = sample_sgld_iterate(law, odd=(name == "D4"), rng=rng, size=runs)
        else:
            mu, sd = posterior_moments(params, f.w_sum_xx, f.w_sum_xy)
            theta = mu + sd * rng.standard_normal(runs)
        outputs[name] = encode_outputs(f.passed, theta)
        null_rates[name] = float(np.mean(~f.passed))
    lb = epsilon_lower_bound(outputs["D3"], outputs["D4"], delta, confidence, seed=seed)
    # size used for the nominal test of eq. 26 (eq26 rule) at a typical passing run
    terms = n_min_terms(params, n1 ** params.rho3, n1 - params.shift)
    return dict(
        variant="sgld" if sgld else "posterior",
        n1=int(n1), epsilon=float(epsilon), delta=float(delta), num_runs=int(num_runs), seed=int(seed),
        parameters=dataclasses.asdict(params) | dict(x_low=params.xl),
        n1_lower_limit_eq27=n1_lower_limit(params),
        n_min_terms_at_typical_run={k: float(v) for k, v in terms.items()},
        claimed_guarantee=(CLAIMED_FACTOR_EPSILON * epsilon, CLAIMED_FACTOR_DELTA * delta),
        sgld_epoch=int(sgld_epoch) if sgld else None,
        sgld_steps=int(sgld_epoch) * int(n1) if sgld else None,
        step_size=(1.0 / (params.alpha + n1 * params.x_high**2 * params.beta) ** 2) if sgld else None,
        null_rate=null_rates,
        p_null=dict(estimate=p_null_hat, interval=(p_null_lo, p_null_hi), num_filter_runs=int(num_filter_runs)),
        exact_epsilon=exact, exact_epsilon_interval=exact_interval,
        line19_epsilon=eps_line19(delta),
        lower_bound=lb.epsilon, lower_bound_ceiling=lb.resolution_ceiling, lower_bound_confidence=float(confidence),
        lower_bound_set=dict(direction=lb.direction, tail=lb.tail, threshold=lb.threshold),
        seconds=time.perf_counter() - t0,
    )

"""Statistically valid lower bounds on the eps of an (eps, delta)-DP mechanism from samples.

A mechanism M is (eps, delta)-DP on the neighbouring pair (D, D') only if for every event S
    P(S) <= e^eps Q(S) + delta   and   Q(S) <= e^eps P(S) + delta,
with P, Q the laws of M(D), M(D'). Any S with P(S) > delta therefore certifies
    eps >= log((P(S) - delta) / Q(S)),
and the same with P and Q swapped. Replacing P(S) by a lower confidence limit and Q(S) by an
upper one gives a lower bound on eps that holds with the stated confidence, provided S was
chosen without looking at the samples used for the limits. This is the auditing recipe of
Jagielski, Ullman & Oprea (2020) and Nasr et al. (2021), with S a threshold set on a 1-D
statistic and exact Clopper–Pearson (1934) limits.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional, Sequence

import numpy as np
from scipy import optimize, stats

from .. import _validate
from .statistics import Statistic, apply_in_chunks, check_confidence, check_delta, check_pair, fit_statistic

DIRECTIONS = ("P vs Q", "Q vs P")
TAILS = ("upper", "lower")


@dataclasses.dataclass(frozen=True)
class LowerBoundResult:
    """Outcome of :func:`epsilon_lower_bound`.

    Attributes:
        epsilon: the certified lower bound (0.0 when no set certifies anything).
        direction: "P vs Q" (the set is likelier under D: eps >= log((P(S)-delta)/Q(S)))
            or "Q vs P" (the roles swapped).
        tail, threshold: the rejection set S = {t > threshold} ("upper") or {t < threshold}
            ("lower") on the 1-D statistic t.
        statistic: the name of the statistic t.
        count_p, count_q: held-out samples in S under D and D'.
        holdout_p, holdout_q: held-out sample sizes (the counts' denominators).
        selection_p, selection_q: sample sizes used to choose S and fit t.
        prob_p_bounds, prob_q_bounds: exact Clopper–Pearson interval for P(S) and Q(S) at
            level 1 - (1 - confidence)/2 each (only the inner ends enter the bound).
        confidence, delta: as requested.
        resolution_ceiling: the largest value this procedure can return at these held-out
            sizes whatever the mechanism (all of one side's held-out samples in S, none of the
            other's): no eps above it is certifiable with this many samples.
        oracle_epsilon: only when reference distributions were given: the bound this same
            procedure returns when the held-out counts equal their expectations
            (n_holdout * exact probability, fed to the same Clopper–Pearson limits), maximised
            over all thresholds and both tails and directions -- the best bound this sample
            size allows for that pair of distributions.
    """

    epsilon: float
    direction: str
    tail: str
    threshold: float
    statistic: str
    count_p: int
    count_q: int
    holdout_p: int
    holdout_q: int
    selection_p: int
    selection_q: int
    prob_p_bounds: tuple
    prob_q_bounds: tuple
    confidence: float
    delta: float
    resolution_ceiling: float
    oracle_epsilon: Optional[float] = None

    def summary(self) -> str:
        """The certified eps, the sample size's ceiling and the certifying set, in 100 columns."""
        from .. import _display

        return _display.lower_bound_summary(self)

    def __repr__(self) -> str:
        return self.summary()


def clopper_pearson_lower(count, n, alpha):
    """Exact one-sided lower confidence limit (level 1 - alpha) for a binomial proportion.

    ``count`` may be non-integer (the oracle feeds expected counts): the Beta quantile form
    interpolates continuously between integer counts.
    """
    count = np.asarray(count, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        lo = stats.beta.ppf(alpha, np.maximum(count, 1e-300), n - count + 1.0)
    return np.where(count > 0, lo, 0.0)


def clopper_pearson_upper(count, n, alpha):
    """Exact one-sided upper confidence limit (level 1 - alpha) for a binomial proportion."""
    count = np.asarray(count, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        hi = stats.beta.isf(alpha, count + 1.0, np.maximum(n - count, 1e-300))
    return np.where(count < n, hi, 1.0)


def _certified(lower_big, upper_small, delta):
    """log((lower_big - delta) / upper_small), -inf where lower_big <= delta."""
    with np.errstate(divide="ignore", invalid="ignore"):
        val = np.log(np.maximum(lower_big - delta, 0.0)) - np.log(upper_small)
    return np.where(lower_big > delta, val, -np.inf)


def _bounds_for_counts(k_p, k_q, h_p, h_q, delta, alpha_each):
    """Certified eps for every (candidate, tail) with counts k_p, k_q, in both directions.

    Returns an array (..., 2) over DIRECTIONS.
    """
    lo_p = clopper_pearson_lower(k_p, h_p, alpha_each)
    hi_p = clopper_pearson_upper(k_p, h_p, alpha_each)
    lo_q = clopper_pearson_lower(k_q, h_q, alpha_each)
    hi_q = clopper_pearson_upper(k_q, h_q, alpha_each)
    return np.stack([_certified(lo_p, hi_q, delta), _certified(lo_q, hi_p, delta)], axis=-1)


def resolution_ceiling(holdout_p: int, holdout_q: int, delta: float, confidence: float) -> float:
    """Largest eps :func:`epsilon_lower_bound` can certify from these held-out sizes.

    Attained when every held-out sample of one side and none of the other lies in S:
    log((cl^(1/h) - delta) / (1 - cl^(1/h'))) with cl = (1 - confidence)/2, maximised over
    the two directions; 0 if even that certifies nothing. Events rarer than about
    log(2/(1-confidence))/h cannot be told apart from probability 0.
    """
    alpha_each = (1.0 - confidence) / 2.0
    best = 0.0
    for h_big, h_small in ((holdout_p, holdout_q), (holdout_q, holdout_p)):
        lo_big = math.exp(math.log(alpha_each) / h_big)
        hi_small = -math.expm1(math.log(alpha_each) / h_small)
        if lo_big > delta:
            best = max(best, math.log(lo_big - delta) - math.log(hi_small))
    return best


def _candidate_thresholds(t_sel_p: np.ndarray, t_sel_q: np.ndarray, per_tail: int) -> np.ndarray:
    """Thresholds between consecutive pooled selection values: dense (geometric) in both
    tails, where the best sets for small delta live, and evenly spread in the bulk."""
    pooled = np.sort(np.concatenate([t_sel_p, t_sel_q]))
    m = pooled.size
    if m < 2:
        return pooled.copy()
    half = max(m // 2, 1)
    from_end = np.unique(np.round(np.geomspace(1, half, per_tail)).astype(np.int64))
    idx = np.unique(np.concatenate([from_end, m - from_end, np.linspace(1, m - 1, per_tail).astype(np.int64)]))
    idx = idx[(idx >= 1) & (idx <= m - 1)]
    return np.unique(0.5 * (pooled[idx - 1] + pooled[idx]))


def _tail_counts(sorted_t: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Counts of {t > c} and {t < c}, shape (len(thresholds), 2) over TAILS."""
    upper = sorted_t.size - np.searchsorted(sorted_t, thresholds, side="right")
    lower = np.searchsorted(sorted_t, thresholds, side="left")
    return np.stack([upper, lower], axis=-1).astype(np.float64)


def _in_set(t: np.ndarray, tail: str, threshold: float) -> int:
    return int(np.count_nonzero(t > threshold if tail == "upper" else t < threshold))


def epsilon_lower_bound(
    samples_p,
    samples_q,
    delta: float,
    confidence: float = 0.95,
    *,
    statistic: Statistic = "auto",
    selection_fraction: float = 0.2,
    candidates_per_tail: int = 400,
    seed: int = 0,
    reference: Optional[Sequence] = None,
) -> LowerBoundResult:
    """Lower confidence bound on the smallest eps for which the mechanism is (eps, delta)-DP.

    Args:
        samples_p, samples_q: i.i.d. outputs of the mechanism on D and on D', shape (n,) or
            (n, d), numpy or JAX. They may be coupled pairwise (row i of each from one coupled
            chain pair, as ``run_coupled`` produces): when n_p == n_q the rows are permuted
            and split together, so pairs never straddle the split. Non-finite values raise.
        delta: in (0, 1).
        confidence: in (0, 1); the probability (over the samples and ``seed``) that the
            returned bound does not exceed the true eps(delta) of the pair (D, D').
        statistic: the 1-D statistic t (see :func:`~dpjax.estimators.statistics.fit_statistic`):
            fitted on the selection split only.
        selection_fraction: share of each side's samples used to fit t and choose the set.
        candidates_per_tail: resolution of the threshold search on the selection split.
        seed: seeds the random split.
        reference: optional (law_p, law_q) of t under D and D' (objects with ``cdf`` and
            ``sf``, e.g. frozen scipy distributions; scalar samples and the identity statistic
            only): fills ``oracle_epsilon``.

    Procedure and guarantee:
        1. The rows are randomly permuted and split into a selection part (a
           ``selection_fraction`` of each side) and a held-out part of sizes h_p, h_q.
        2. On the selection part, t is fitted and one set S is chosen among the thresholds
           {t > c}, {t < c} (both tails) and both directions: the one maximising the bound of
           step 3 computed on the selection part itself (the objective is the confidence
           bound, not the plug-in eps, so S is not rarer than a sample can resolve).
        3. On the held-out part, with k_p, k_q the counts in S: exact Clopper–Pearson limits
           P(S) >= p_lo, Q(S) <= q_hi, each at level 1 - (1 - confidence)/2, and
           eps_lb = max(0, log((p_lo - delta) / q_hi)) (for "Q vs P", the roles swapped).
        Because S is a function of the selection part only, which is independent of the
        held-out part, only this single set is tested and no multiplicity correction for the
        search is needed; the union bound over the two Clopper–Pearson limits (alpha/2 each)
        makes the statement hold whatever the dependence between the D and D' samples. Then
        Pr[eps_lb > eps_true(delta)] <= 1 - confidence, exactly (not asymptotically), since
        eps_lb > eps_true would need P(S) < p_lo or Q(S) > q_hi.
    """
    delta = check_delta(delta)
    confidence = check_confidence(confidence)
    selection_fraction = _validate.in_range("selection_fraction", selection_fraction, 0.0, 1.0, low_open=True, high_open=True)
    candidates_per_tail = _validate.positive_int("candidates_per_tail", candidates_per_tail)
    x_p, x_q = check_pair(samples_p, samples_q, min_samples=4)
    n_p, n_q = x_p.shape[0], x_q.shape[0]
    if reference is not None and (x_p.shape[1] != 1 or statistic not in ("auto", "identity")):
        raise ValueError("reference laws describe the scalar output itself: they need scalar samples and statistic='identity'")

    rng = np.random.default_rng(seed)
    perm_p = rng.permutation(n_p)
    perm_q = perm_p if n_q == n_p else rng.permutation(n_q)
    m_p = min(max(1, int(selection_fraction * n_p)), n_p - 1)
    m_q = min(max(1, int(selection_fraction * n_q)), n_q - 1)
    sel_p, hold_p = x_p[perm_p[:m_p]], x_p[perm_p[m_p:]]
    sel_q, hold_q = x_q[perm_q[:m_q]], x_q[perm_q[m_q:]]
    h_p, h_q = n_p - m_p, n_q - m_q

    t_fn = fit_statistic(statistic, sel_p, sel_q)
    stat_name = statistic if isinstance(statistic, str) else getattr(statistic, "__name__", "callable")
    if stat_name == "auto":
        stat_name = "identity" if x_p.shape[1] == 1 else "lda"
    t_sel_p = np.sort(apply_in_chunks(t_fn, sel_p))
    t_sel_q = np.sort(apply_in_chunks(t_fn, sel_q))

    alpha_each = (1.0 - confidence) / 2.0
    thresholds = _candidate_thresholds(t_sel_p, t_sel_q, candidates_per_tail)
    # The objective is the confidence bound itself computed on the selection split at its own
    # size (not the plug-in eps, and not selection proportions rescaled to the held-out size):
    # the argmax of a rescaled estimate chases sets whose rare-side count was low by chance
    # and then fails on the held-out part; the selection-size bound penalises such sets.
    predicted = _bounds_for_counts(
        _tail_counts(t_sel_p, thresholds), _tail_counts(t_sel_q, thresholds), m_p, m_q, delta, alpha_each
    )  # (candidates, tails, directions)
    if thresholds.size == 0 or not np.any(np.isfinite(predicted)):
        # Nothing looks certifiable; test the median split (still a valid, if weak, bound).
        thresholds = np.array([np.median(np.concatenate([t_sel_p, t_sel_q]))])
        best = (0, 0, 0)
    else:
        best = np.unravel_index(int(np.argmax(predicted)), predicted.shape)
    threshold = float(thresholds[best[0]])
    tail, direction = TAILS[best[1]], DIRECTIONS[best[2]]

    t_hold_p = apply_in_chunks(t_fn, hold_p)
    t_hold_q = apply_in_chunks(t_fn, hold_q)
    c_p, c_q = _in_set(t_hold_p, tail, threshold), _in_set(t_hold_q, tail, threshold)
    p_bounds = (float(clopper_pearson_lower(c_p, h_p, alpha_each)), float(clopper_pearson_upper(c_p, h_p, alpha_each)))
    q_bounds = (float(clopper_pearson_lower(c_q, h_q, alpha_each)), float(clopper_pearson_upper(c_q, h_q, alpha_each)))
    if direction == "P vs Q":
        eps = float(_certified(p_bounds[0], q_bounds[1], delta))
    else:
        eps = float(_certified(q_bounds[0], p_bounds[1], delta))

    oracle = None
    if reference is not None:
        lo = float(min(x_p.min(), x_q.min()))
        hi = float(max(x_p.max(), x_q.max()))
        oracle = oracle_lower_bound(reference[0], reference[1], h_p, h_q, delta, confidence, (lo, hi))

    return LowerBoundResult(
        epsilon=max(eps, 0.0),
        direction=direction,
        tail=tail,
        threshold=threshold,
        statistic=stat_name,
        count_p=c_p,
        count_q=c_q,
        holdout_p=h_p,
        holdout_q=h_q,
        selection_p=m_p,
        selection_q=m_q,
        prob_p_bounds=p_bounds,
        prob_q_bounds=q_bounds,
        confidence=confidence,
        delta=delta,
        resolution_ceiling=resolution_ceiling(h_p, h_q, delta, confidence),
        oracle_epsilon=oracle,
    )


def oracle_lower_bound(
    law_p,
    law_q,
    holdout_p: int,
    holdout_q: int,
    delta: float,
    confidence: float = 0.95,
    threshold_range: Optional[tuple] = None,
    grid_size: int = 20001,
) -> float:
    """The bound :func:`epsilon_lower_bound` returns when fed exact probabilities.

    For every threshold c in ``threshold_range`` (default: where either law has mass above
    1e-12 in each tail), both tails and both directions, the held-out counts are replaced by
    their expectations h * P(S) (non-integer counts go through the same Beta-quantile form of
    the Clopper–Pearson limits) and the largest resulting bound is returned (0 if none
    certifies anything). A grid search followed by a bounded local refinement.
    ``law_p``, ``law_q`` need ``cdf`` and ``sf`` methods, and ``ppf``/``isf`` when no
    ``threshold_range`` is given (frozen scipy distributions have all four).
    """
    delta = check_delta(delta)
    confidence = check_confidence(confidence)
    h_p = _validate.positive_int("holdout_p", holdout_p)
    h_q = _validate.positive_int("holdout_q", holdout_q)
    alpha_each = (1.0 - confidence) / 2.0
    if threshold_range is None:
        lo = min(float(law_p.ppf(1e-12)), float(law_q.ppf(1e-12)))
        hi = max(float(law_p.isf(1e-12)), float(law_q.isf(1e-12)))
    else:
        lo, hi = map(float, threshold_range)

    def bound_at(c):
        c = np.atleast_1d(np.asarray(c, dtype=np.float64))
        k_p = np.stack([law_p.sf(c), law_p.cdf(c)], axis=-1) * h_p
        k_q = np.stack([law_q.sf(c), law_q.cdf(c)], axis=-1) * h_q
        return _bounds_for_counts(k_p, k_q, h_p, h_q, delta, alpha_each)  # (C, tails, dirs)

    grid = np.linspace(lo, hi, grid_size)
    values = bound_at(grid)
    if not np.any(np.isfinite(values)):
        return 0.0
    i, tail, direction = np.unravel_index(int(np.argmax(values)), values.shape)
    step = grid[1] - grid[0] if grid_size > 1 else 1.0
    res = optimize.minimize_scalar(
        lambda c: -bound_at(c)[0, tail, direction],
        bounds=(grid[max(i - 1, 0)], grid[min(i + 1, grid_size - 1)] if grid_size > 1 else grid[0] + step),
        method="bounded",
        options={"xatol": 1e-10 * max(1.0, abs(grid[i]))},
    )
    return float(max(values[i, tail, direction], -res.fun, 0.0))

"""Plug-in point estimate of the tight eps(delta) from samples, with a bootstrap interval.

The output (or a 1-D statistic of it) is binned into equal-mass bins of the pooled sample;
the hockey-stick divergence of the two histograms,
    delta_hat(eps) = sum_b (p_b - e^eps q_b)_+          (and with p, q swapped),
is inverted for the smallest eps >= 0 with delta_hat(eps) <= delta, and the larger of the two
directions is reported (Balle et al. 2018, Theorem 1: the tight delta(eps) of a pair is the
hockey-stick divergence). This is an estimate, not a bound: binning lowers the divergence (data
processing), sampling noise in sparsely filled tail bins raises it. Use
:func:`~dpjax.estimators.epsilon_lower_bound` for a guarantee.

What a sample cannot resolve is said, never returned as a plausible number: the estimate is
never below the certified lower bound computed from the same samples, and when the histogram
cannot see eps(delta) (one bin left after merging; the plug-in below what the samples
certify; or delta below the probability of the single most extreme bin that sets the
estimate) the result has ``resolved=False``, a ``note`` saying which, and an interval whose
upper end is +inf.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional, Union

import numpy as np

from .. import _validate
from .lower_bound import epsilon_lower_bound
from .statistics import Statistic, apply_in_chunks, check_confidence, check_delta, check_pair, fit_statistic
from .._result_methods import printed_by

_BISECTION_STEPS = 80
# Bootstrap resamples beyond this add nothing to a 2-decimal interval and cost memory.
MAX_BOOTSTRAP = 10**6


@dataclasses.dataclass(frozen=True)
class BinnedPair:
    """Bin index of every sample of each side, on shared equal-mass bins (``bins_p``/``bins_q``
    None above :data:`~dpjax.estimators.samples.PERMUTATION_ROWS` pooled rows: then only the
    per-bin counts are kept, counted in row chunks)."""

    bins_p: Optional[np.ndarray]
    bins_q: Optional[np.ndarray]
    num_bins: int
    edges: np.ndarray
    statistic: str
    counts_p: Optional[np.ndarray] = None
    counts_q: Optional[np.ndarray] = None

    def counts(self) -> tuple[np.ndarray, np.ndarray]:
        if self.counts_p is not None:
            return self.counts_p, self.counts_q
        return np.bincount(self.bins_p, minlength=self.num_bins), np.bincount(self.bins_q, minlength=self.num_bins)


def _merged_groups(counts_p: np.ndarray, counts_q: np.ndarray, min_count: int) -> np.ndarray:
    """Group of each bin after merging neighbours, sweeping upwards, until every group holds at
    least ``min_count`` samples of each side (an unfinished last group joins the one below)."""
    group = np.empty(counts_p.size, dtype=np.int64)
    current, have_p, have_q = 0, 0, 0
    for b in range(counts_p.size):
        group[b] = current
        have_p += counts_p[b]
        have_q += counts_q[b]
        if have_p >= min_count and have_q >= min_count:
            current, have_p, have_q = current + 1, 0, 0
    if have_p or have_q or current == 0:
        group[group == current] = max(current - 1, 0)
    return group


def _num_bins(bins, pooled_size: int) -> int:
    if isinstance(bins, str) and bins == "auto":
        return int(np.ceil(np.sqrt(pooled_size)))
    if isinstance(bins, str):
        raise ValueError(f"bins={bins!r} violates bins 'auto' or a positive integer")
    num = _validate.positive_int("bins", bins)
    if num > pooled_size:
        raise ValueError(f"bins={num} violates bins <= the pooled sample size {pooled_size} (equal-mass bins need samples)")
    return num


def _statistic_name(statistic, dim: int) -> str:
    name = statistic if isinstance(statistic, str) else getattr(statistic, "__name__", "callable")
    return ("identity" if dim == 1 else "lda") if name == "auto" else name


def bin_pair(
    samples_p, samples_q, bins: Union[int, str] = "auto", statistic: Statistic = "auto", min_count: int = 10
) -> BinnedPair:
    """Shared equal-mass bins (quantiles of the pooled statistic) and each sample's bin.

    ``bins="auto"`` starts from ceil(sqrt(n_p + n_q)) bins (about as many samples per bin as
    bins, so per-bin noise and binning error both shrink as n grows); then neighbouring bins
    are merged, sweeping upwards, until every bin holds at least ``min_count`` samples of
    *each* side. Without the merge the outermost bins of well separated pairs hold samples of
    one side only and the plug-in ratio there is infinite, an artefact of the sample size.
    For vector samples the statistic (default ``"lda"``) is fitted on all samples: the point
    estimate is then optimistic by the fitting, which vanishes as n grows.

    Above :data:`~dpjax.estimators.samples.PERMUTATION_ROWS` pooled rows (a GPU run's samples)
    nothing is copied whole: the statistic and the bin edges come from a random subset of at
    most :data:`~dpjax.estimators.samples.MAX_SELECTION` rows a side, and every row is counted
    into the bins in chunks (only the counts are kept).
    """
    from . import samples as rows

    min_count = _validate.positive_int("min_count", min_count)
    p_rows, q_rows = rows.sample_pair(samples_p, samples_q, min_samples=2)
    pooled_size = p_rows.num_rows + q_rows.num_rows
    if pooled_size > rows.PERMUTATION_ROWS:
        return _bin_pair_in_chunks(p_rows, q_rows, bins, statistic, min_count)
    x_p, x_q = check_pair(samples_p, samples_q, min_samples=2)
    t_fn = fit_statistic(statistic, x_p, x_q)
    t_p = apply_in_chunks(t_fn, x_p)
    t_q = apply_in_chunks(t_fn, x_q)
    num = _num_bins(bins, pooled_size)
    pooled = np.concatenate([t_p, t_q])
    inner = np.unique(np.quantile(pooled, np.arange(1, num) / num))
    # side="right": a value equal to an inner edge goes to the bin above it, consistently.
    bins_p = np.searchsorted(inner, t_p, side="right")
    bins_q = np.searchsorted(inner, t_q, side="right")
    group = _merged_groups(np.bincount(bins_p, minlength=inner.size + 1), np.bincount(bins_q, minlength=inner.size + 1), min_count)
    keep = np.flatnonzero(np.diff(group))  # inner edge i separates bins i and i + 1
    return BinnedPair(
        bins_p=group[bins_p],
        bins_q=group[bins_q],
        num_bins=int(group.max()) + 1,
        edges=np.concatenate([[-np.inf], inner[keep], [np.inf]]),
        statistic=_statistic_name(statistic, x_p.shape[1]),
    )


def _bin_pair_in_chunks(p_rows, q_rows, bins, statistic, min_count) -> BinnedPair:
    from . import samples as rows

    rng = np.random.default_rng(0)
    sub_p = p_rows.take(np.sort(rng.choice(p_rows.num_rows, min(p_rows.num_rows, rows.MAX_SELECTION), replace=False)))
    sub_q = q_rows.take(np.sort(rng.choice(q_rows.num_rows, min(q_rows.num_rows, rows.MAX_SELECTION), replace=False)))
    t_fn = fit_statistic(statistic, sub_p, sub_q)
    num = _num_bins(bins, p_rows.num_rows + q_rows.num_rows)
    pooled = np.concatenate([apply_in_chunks(t_fn, sub_p), apply_in_chunks(t_fn, sub_q)])
    inner = np.unique(np.quantile(pooled, np.arange(1, num) / num))
    counts = []
    for side in (p_rows, q_rows):
        c = np.zeros(inner.size + 1, dtype=np.int64)
        for _, chunk in side.chunks():
            c += np.bincount(np.searchsorted(inner, apply_in_chunks(t_fn, chunk), side="right"), minlength=inner.size + 1)
        counts.append(c)
    group = _merged_groups(counts[0], counts[1], min_count)
    keep = np.flatnonzero(np.diff(group))
    k = int(group.max()) + 1
    return BinnedPair(
        bins_p=None, bins_q=None, num_bins=k, edges=np.concatenate([[-np.inf], inner[keep], [np.inf]]),
        statistic=_statistic_name(statistic, p_rows.dim),
        counts_p=np.bincount(group, weights=counts[0], minlength=k).astype(np.int64),
        counts_q=np.bincount(group, weights=counts[1], minlength=k).astype(np.int64),
    )


def bootstrap_histograms(binned: BinnedPair, num_bootstrap: int, paired: bool, rng: np.random.Generator):
    """Histograms (as probabilities) of the data and of ``num_bootstrap`` resamples.

    Returns (hist_p, hist_q) of shape (1 + num_bootstrap, num_bins); row 0 is the data. Bins
    stay fixed (the bootstrap is conditional on the edges). ``paired=True`` resamples row
    indices jointly (valid for coupled samples: row i of each side from one chain pair);
    otherwise each side is resampled on its own, drawn as a multinomial on its bin counts
    (the same law as resampling the samples and re-binning).
    """
    k = binned.num_bins
    counts_p, counts_q = binned.counts()
    n_p, n_q = int(counts_p.sum()), int(counts_q.sum())
    if paired and binned.bins_p is None:
        raise ValueError("paired resampling needs every row's bin; above PERMUTATION_ROWS rows only counts are kept (paired=False)")
    hp = np.empty((1 + num_bootstrap, k))
    hq = np.empty((1 + num_bootstrap, k))
    hp[0], hq[0] = counts_p, counts_q
    if paired:
        if n_p != n_q:
            raise ValueError(f"paired=True needs as many samples on each side; got {n_p} and {n_q}")
        for r in range(num_bootstrap):
            idx = rng.integers(0, n_p, size=n_p)
            hp[1 + r] = np.bincount(binned.bins_p[idx], minlength=k)
            hq[1 + r] = np.bincount(binned.bins_q[idx], minlength=k)
    elif num_bootstrap:
        hp[1:] = rng.multinomial(n_p, counts_p / n_p, size=num_bootstrap)
        hq[1:] = rng.multinomial(n_q, counts_q / n_q, size=num_bootstrap)
    return hp / n_p, hq / n_q


def binned_bootstrap(samples_p, samples_q, bins, statistic, min_count, num_bootstrap, paired, seed):
    """Bin the pair on a 1-D statistic and bootstrap the histograms (row 0 = the data).

    Shared by the plug-in eps and Rényi estimates. Returns (binned, hist_p, hist_q, paired);
    ``paired=None`` resamples rows jointly when both sides have the same size (coupled chains).
    """
    num_bootstrap = _validate.nonnegative_int("num_bootstrap", num_bootstrap)
    if num_bootstrap > MAX_BOOTSTRAP:
        raise ValueError(f"num_bootstrap={num_bootstrap} violates num_bootstrap <= {MAX_BOOTSTRAP}")
    seed = _validate.seed("seed", seed)
    if paired is not None and not isinstance(paired, (bool, np.bool_)):
        raise TypeError(f"paired={paired!r} violates paired in (None, True, False)")
    binned = bin_pair(samples_p, samples_q, bins, statistic, min_count)
    if binned.bins_p is None:
        # counted in chunks: the rows' bins are not kept, so each side's counts are resampled
        # (ignoring the pairing widens the interval of coupled samples: their sides correlate)
        if paired:
            raise ValueError("paired=True needs every row's bin; with more rows than dpjax.estimators.samples.PERMUTATION_ROWS only "
                             "counts are kept: pass paired=None or False")
        paired = False
    elif paired is None:
        paired = binned.bins_p.size == binned.bins_q.size
    hp, hq = bootstrap_histograms(binned, int(num_bootstrap), bool(paired), np.random.default_rng(seed))
    return binned, hp, hq, bool(paired)


def hockey_stick_epsilon(hist_big: np.ndarray, hist_small: np.ndarray, delta: float) -> np.ndarray:
    """Smallest eps >= 0 with sum_b (big_b - e^eps small_b)_+ <= delta, per row.

    +inf when the mass of ``big`` on bins where ``small`` is empty already exceeds delta.
    Bisection on eps (the sum is continuous and non-increasing in eps), 80 halvings.
    """
    def excess(eps):
        return np.sum(np.maximum(hist_big - np.exp(eps)[:, None] * hist_small, 0.0), axis=1)

    rows = hist_big.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(hist_small > 0, hist_big / hist_small, 0.0)
    orphan = np.sum(np.where(hist_small > 0, 0.0, hist_big), axis=1)
    hi = np.log(np.maximum(np.max(ratio, axis=1), 1.0))
    lo = np.zeros(rows)
    out = np.where(excess(lo) <= delta, 0.0, np.nan)
    out = np.where(orphan > delta, np.inf, out)
    todo = np.isnan(out)
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        above = excess(mid) > delta
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
    return np.where(todo, hi, out)


def _percentile_interval(values: np.ndarray, confidence: float) -> tuple:
    if values.size == 0:
        return (float("nan"), float("nan"))
    a = (1.0 - confidence) / 2.0
    # method="lower"/"higher" keep +inf replicates meaningful instead of producing nan.
    return (float(np.quantile(values, a, method="lower")), float(np.quantile(values, 1 - a, method="higher")))


def bias_corrected_interval(point: float, replicates: np.ndarray, confidence: float) -> tuple:
    """The percentile interval of the bootstrap replicates, moved by the bootstrap estimate of
    the estimator's median bias (median of the replicates minus ``point``), clipped at 0:
    [point - (median - q_lo), point + (q_hi - median)].

    Why not the plain percentile interval: the plug-in is driven by the largest bin ratios, and
    resampling noise can only raise a maximum, so the replicates sit above the point and the
    percentile interval can miss its own point estimate (seen: 0.691 with [0.717, 0.848]).
    Moving the interval by the bias the bootstrap itself measures corrects that and always
    contains the point (q_lo <= median <= q_hi). NaN (no replicates) when there are none.
    """
    lo, hi = _percentile_interval(replicates, confidence)
    if replicates.size == 0:
        return (lo, hi)
    median = float(np.quantile(replicates, 0.5, method="lower"))
    if not (np.isfinite(point) and np.isfinite(median)):
        return (min(point, lo), math.inf)
    lower = point - (median - lo) if np.isfinite(lo) else point
    upper = point + (hi - median) if np.isfinite(hi) else math.inf
    return (max(0.0, min(lower, point)), max(upper, point))


def bias_aware_interval(point: float, replicates: np.ndarray, confidence: float) -> tuple:
    """The union of the basic bootstrap interval [2 point - q_hi, 2 point - q_lo] and the
    median-centred one of :func:`bias_corrected_interval`, clipped at 0: it allows for the
    plug-in's bias in either direction, and always contains ``point``.

    Why both: the plug-in eps has two biases of opposite sign. Sampling noise in sparse tail bins
    raises the largest bin ratios (upward; the bootstrap sees it: its replicates sit above the
    point by about that bias, and the basic interval moves down by it), while equal-mass bins
    coarser than the event of probability delta lower the hockey-stick divergence (downward, by
    data processing; a resample of the same bins cannot see it, so no bootstrap-only correction
    can). Which one wins depends on mu and delta: on Gaussian pairs N(0, 1) vs N(mu, 1) with
    20,000 samples a side the estimate was above the truth in 95% of runs at mu = 0.5,
    delta = 1e-2 and below it in 80% at mu = 1, delta = 1e-3. The median-centred interval alone
    held the truth in 62-70% of runs at 95% nominal where the bias is upward, the basic one alone
    in 62% where it is downward; their union held it in >= 93% of 40 runs on each of the
    resolved cells (tests/test_plugin_coverage.py measures it, with its Monte Carlo error).
    """
    lo, hi = _percentile_interval(replicates, confidence)
    if replicates.size == 0:
        return (lo, hi)
    median_lo, median_hi = bias_corrected_interval(point, replicates, confidence)
    if not (np.isfinite(point) and np.isfinite(lo) and np.isfinite(hi)):
        return (median_lo, median_hi)
    basic_lo, basic_hi = 2.0 * point - hi, 2.0 * point - lo
    return (max(0.0, min(basic_lo, median_lo)), max(basic_hi, median_hi))


def _set_by_one_bin(hist_big: np.ndarray, hist_small: np.ndarray, delta: float) -> tuple[bool, float]:
    """Whether the hockey-stick solution of one histogram pair is carried by its single most
    extreme bin (every other bin's ratio lies below e^eps at the solution), and that bin's
    probability under ``hist_big``. Then eps_hat is that bin's likelihood ratio (less a little),
    the sample says nothing about events of probability delta, and the true eps(delta) may be
    far above it (for likelihood ratios unbounded in the tails, it is)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(hist_small > 0, hist_big / hist_small, np.where(hist_big > 0, np.inf, 0.0))
    if ratio.size < 2:
        return True, float(hist_big.max(initial=0.0))
    order = np.argsort(ratio)[::-1]
    first, second = order[0], ratio[order[1]]
    excess_at_second = hist_big[first] - second * hist_small[first] if np.isfinite(second) else 0.0
    return bool(excess_at_second > delta), float(hist_big[first])


@dataclasses.dataclass(frozen=True)
class EpsilonEstimate:
    """Outcome of :func:`epsilon_estimate`.

    ``epsilon`` = max(``epsilon_p_vs_q``, ``epsilon_q_vs_p``, ``certified_lower_bound``);
    ``interval`` is the bias-aware bootstrap interval of that maximum from
    ``num_bootstrap`` resamples at ``confidence`` (see :func:`bias_aware_interval`: it allows for
    the plug-in's bias in either direction, held the truth at >= 90% of runs at 95% nominal on
    Gaussian pairs where the estimate is resolved, and always contains ``epsilon``). ``certified_lower_bound``: the
    :func:`~dpjax.estimators.epsilon_lower_bound` of the same samples at ``confidence``.
    ``resolved`` is False when the sample cannot resolve eps(delta) (``note`` says why); then
    ``epsilon`` is only a floor and ``interval`` ends at +inf.
    """

    epsilon: float
    interval: tuple
    epsilon_p_vs_q: float
    epsilon_q_vs_p: float
    delta: float
    confidence: float
    num_bootstrap: int
    num_bins: int
    statistic: str
    paired: bool
    certified_lower_bound: float = 0.0
    resolved: bool = True
    note: str = ""

    summary, __repr__ = printed_by("epsilon_estimate_summary", "The estimate, its bootstrap interval and how it was made, in 100 columns.")


def epsilon_estimate(
    samples_p,
    samples_q,
    delta: float,
    *,
    bins: Union[int, str] = "auto",
    min_count: int = 10,
    statistic: Statistic = "auto",
    num_bootstrap: int = 200,
    confidence: float = 0.95,
    paired: Optional[bool] = None,
    seed: int = 0,
) -> EpsilonEstimate:
    """Plug-in estimate of the tight eps(delta) of the pair, with a bias-aware bootstrap interval.

    Args:
        samples_p, samples_q: outputs on D and D', shape (n,) or (n, d), numpy or JAX.
        delta: in (0, 1).
        bins: number of equal-mass bins of the pooled statistic, or "auto" (sqrt of the pooled
            sample size), before merging.
        min_count: neighbouring bins are merged until each holds at least this many samples
            of each side (see ``bin_pair``).
        statistic: the 1-D statistic (see ``fit_statistic``); fitted on all samples.
        num_bootstrap: number of bootstrap resamples (200 by default; 0 skips the interval).
        confidence: level of the bootstrap interval, in [0.5, 1).
        paired: resample rows jointly (for coupled samples); default: when n_p == n_q.
        seed: seeds the bootstrap.

    Guarantee: none in finite samples. The estimate is consistent as n -> inf with bins
    growing as sqrt(n) for pairs with continuous densities. The bootstrap interval is
    conditional on the bin edges; it allows for the upward bias of noisy tail bins and,
    without measuring it, for the downward bias of binning (:func:`bias_aware_interval`): on
    Gaussian pairs with 20,000 samples a side it held the truth in >= 90% of runs at 95%
    nominal wherever the estimate is resolved (tests/test_plugin_coverage.py). See the
    convergence table in the docs.

    Never a plausible wrong number: the estimate is at least ``certified_lower_bound``
    (:func:`~dpjax.estimators.epsilon_lower_bound` on the same samples, same ``statistic``,
    ``confidence`` and ``seed``); where the sample cannot resolve eps(delta) the result has
    ``resolved=False``, ``note`` says why, ``epsilon`` is a floor and the interval ends at +inf.
    """
    delta = check_delta(delta)
    confidence = check_confidence(confidence)
    binned, hp, hq, paired = binned_bootstrap(samples_p, samples_q, bins, statistic, min_count, num_bootstrap, paired, seed)
    eps_pq = hockey_stick_epsilon(hp, hq, delta)
    eps_qp = hockey_stick_epsilon(hq, hp, delta)
    both = np.maximum(eps_pq, eps_qp)
    point = float(both[0])
    interval = bias_aware_interval(point, both[1:], confidence)
    certified = epsilon_lower_bound(samples_p, samples_q, delta, confidence, statistic=statistic, seed=seed).epsilon
    big, small = (hp[0], hq[0]) if eps_pq[0] >= eps_qp[0] else (hq[0], hp[0])
    one_bin, extreme_mass = _set_by_one_bin(big, small, delta)
    note = ""
    if binned.num_bins < 2:
        note = (
            f"after merging bins until each holds min_count={min_count} samples of each side, one bin is left: "
            "the samples separate the laws (or are too few) and the histogram resolves nothing"
        )
    elif point < certified:
        note = f"the plug-in {point:.4g} is below what the same samples certify ({certified:.4g}): the histogram is too coarse"
    elif point > 0 and one_bin:
        note = (
            f"delta={delta:g} is below the probability {extreme_mass:.3g} of the single most extreme bin that sets the "
            "estimate: the sample does not resolve events of probability delta, and the true eps may be far larger"
        )
    if note:
        floor = max(point, certified)
        lower = interval[0] if np.isfinite(interval[0]) else floor
        point, interval = floor, (max(certified, min(lower, floor)), math.inf)
    elif hp.shape[0] == 1:
        # no resamples (num_bootstrap=0): no interval to give; what the samples say for sure is
        # the certified bound below, nothing above (printed as "no bootstrap interval")
        interval = (certified, math.inf)
    return EpsilonEstimate(
        epsilon=point,
        interval=interval,
        epsilon_p_vs_q=float(eps_pq[0]),
        epsilon_q_vs_p=float(eps_qp[0]),
        delta=delta,
        confidence=confidence,
        num_bootstrap=int(num_bootstrap),
        num_bins=binned.num_bins,
        statistic=binned.statistic,
        paired=bool(paired),
        certified_lower_bound=float(certified),
        resolved=not note,
        note=note,
    )

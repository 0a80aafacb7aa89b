"""A confidence band on the whole trade-off curve: upper bounds on T(P, Q)(alpha) over a grid of
alpha, valid simultaneously.

T(P, Q)(alpha) = inf{beta_phi : alpha_phi <= alpha} is the smallest type-II error of a test of
P against Q at type-I error alpha (Dong, Roth & Su 2022, Def. 2.1): a mechanism is f-DP on the
pair only if T >= f. A measured test phi (type-I error alpha_phi, type-II error beta_phi)
shows T(alpha_phi) <= beta_phi; an upper bound on T is therefore what samples can certify, and
the smaller it is, the more privacy the pair provably lacks.

:func:`tradeoff_upper_bound`:

1. On a selection part of the samples, the 1-D statistic t is fitted and oriented (large t
   points to Q), and for each requested alpha_j a threshold c_j is chosen so that the held-out
   Clopper–Pearson upper limit of the type-I error P(t_P > c_j) is expected to be at most alpha_j.
2. On the held-out part, each test "reject when t > c_j" gets exact Clopper–Pearson upper
   limits alpha_hi_j >= P(t_P > c_j) and beta_hi_j >= P(t_Q <= c_j), each at level
   1 - (1 - confidence) / (2 K) (K tests: a Bonferroni union over all 2K limits, so they hold
   together with probability >= ``confidence``).
3. When they hold, T(alpha_hi_j) <= T(true alpha_j) <= true beta_j <= beta_hi_j (T is
   non-increasing), T(0) <= 1 and T(1) = 0, and T is convex, so T lies below the lower convex
   hull of the points (alpha_hi_j, beta_hi_j), (0, 1) and (1, 0) **everywhere**; the band is
   that hull read at the requested alphas. Exact (not asymptotic), and simultaneous in alpha.

The band also certifies eps: (eps, delta)-DP needs T(alpha) >= 1 - delta - e^eps alpha and
T(alpha) >= e^-eps (1 - delta - alpha), so every point of the band gives a lower bound on eps
(:meth:`TradeoffBand.epsilon_lower_bound`), at the band's confidence.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

import numpy as np

from .. import _validate
from .gdp import orientation
from .lower_bound import clopper_pearson_upper
from .samples import split_pair
from .statistics import Statistic, check_confidence, check_delta

# At most this many alphas: each costs a Bonferroni share of the error budget.
MAX_ALPHAS = 1000
_BISECTION_STEPS = 60


@dataclasses.dataclass(frozen=True)
class TradeoffBand:
    """Outcome of :func:`tradeoff_upper_bound`.

    alpha: the requested type-I errors (as given). beta_upper: at each, an upper bound on the
    pair's trade-off T(P, Q)(alpha); all hold together with probability >= ``confidence``.
    tests: (K, 2) the held-out limits (alpha_hi_j, beta_hi_j) of the tests that make the band.
    statistic, orientation, holdout_p, holdout_q: how the tests were made.
    """

    alpha: np.ndarray
    beta_upper: np.ndarray
    tests: np.ndarray
    confidence: float
    statistic: str
    orientation: str
    holdout_p: int
    holdout_q: int

    def epsilon_lower_bound(self, delta) -> float:
        """The largest eps the band certifies at ``delta`` (0 if none): from each vertex
        (a, b) of the band, eps >= log((1 - delta - b) / a) and eps >= log((1 - delta - a) / b)."""
        delta = check_delta(delta)
        a, b = self.tests[:, 0], self.tests[:, 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            first = np.where((1 - delta - b > 0) & (a > 0), np.log(np.maximum(1 - delta - b, 1e-300)) - np.log(a), -np.inf)
            second = np.where((1 - delta - a > 0) & (b > 0), np.log(np.maximum(1 - delta - a, 1e-300)) - np.log(b), -np.inf)
        best = float(np.max(np.concatenate([first, second]), initial=-np.inf))
        return max(best, 0.0)

    def summary(self) -> str:
        from .. import _display

        return _display.tradeoff_band_summary(self)

    def __repr__(self) -> str:
        return self.summary()


def _check_alpha(alpha) -> np.ndarray:
    a = np.atleast_1d(_validate.real_array("alpha", alpha))
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"alpha must be a non-empty 1-D array of type-I errors; got shape {np.shape(alpha)}")
    bad = a[~((a > 0) & (a < 1))]
    if bad.size:
        raise ValueError(f"alpha={bad[:5].tolist()} violate 0 < alpha < 1 (a type-I error strictly inside (0, 1))")
    if a.size > MAX_ALPHAS:
        raise ValueError(f"alpha has {a.size} values; at most {MAX_ALPHAS} (each costs a share of the confidence budget)")
    return a


def _largest_rate_within(alpha: np.ndarray, n: int, level: float) -> np.ndarray:
    """Per alpha, the largest observed rate r with clopper_pearson_upper(r n, n, level) <= alpha
    (0 when even r = 0 exceeds it), by bisection."""
    lo, hi = np.zeros_like(alpha), alpha.copy()
    fits_at_zero = clopper_pearson_upper(np.zeros_like(alpha), n, level) <= alpha
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        ok = clopper_pearson_upper(mid * n, n, level) <= alpha
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    return np.where(fits_at_zero, lo, 0.0)


def lower_convex_hull(points: np.ndarray) -> np.ndarray:
    """Vertices (sorted by x) of the lower convex hull of 2-D points (Andrew's monotone chain)."""
    pts = points[np.lexsort((points[:, 1], points[:, 0]))]
    hull: list = []
    for x, y in pts:
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (x2 - x1) * (y - y1) - (y2 - y1) * (x - x1) <= 0:  # not a left turn: drop the middle
                hull.pop()
            else:
                break
        if hull and hull[-1][0] == x:
            continue  # same x, larger y (sorted): not on the lower hull
        hull.append((x, y))
    return np.array(hull)


def tradeoff_upper_bound(
    samples_p,
    samples_q,
    alpha,
    *,
    confidence: float = 0.95,
    statistic: Statistic = "auto",
    selection_fraction: float = 0.2,
    paired: Optional[bool] = None,
    seed: int = 0,
) -> TradeoffBand:
    """Upper bounds on the trade-off T(P, Q)(alpha) at every requested alpha, valid
    simultaneously with probability >= ``confidence`` (exact, not asymptotic).

    Args:
        samples_p, samples_q: outputs on D (P) and D' (Q), shape (n,) or (n, d), numpy or JAX
            (device arrays are read in chunks).
        alpha: type-I errors in (0, 1), 1-D, at most 1,000 of them.
        confidence: in [0.5, 1).
        statistic: the 1-D statistic, fitted and oriented on the selection part.
        selection_fraction, paired, seed: the split (see :func:`~dpjax.estimators.samples.split_pair`).

    The module docstring gives the construction and the proof. Where the samples cannot
    resolve a small alpha (the held-out size is too small for a test of that type-I error) the
    band is the hull's chord towards (0, 1): honest, and uninformative there.
    """
    confidence = check_confidence(confidence)
    a = _check_alpha(alpha)
    if paired is not None and not isinstance(paired, (bool, np.bool_)):
        raise TypeError(f"paired={paired!r} violates paired in (None, True, False)")
    split = split_pair(samples_p, samples_q, statistic, selection_fraction, seed, min_samples=4, paired=paired)
    sign = orientation(split)
    targets = np.unique(a)
    level = (1.0 - confidence) / (2.0 * targets.size)
    # 1. thresholds from the selection part: the (1 - r_j) quantile of t_P, with r_j the largest
    #    rate whose held-out upper limit stays within alpha_j
    rates = _largest_rate_within(targets, split.h_p, level)
    oriented_sel_p = np.sort(sign * split.t_sel_p)
    thresholds = np.quantile(oriented_sel_p, 1.0 - rates, method="higher")
    thresholds = np.unique(sign * thresholds)
    # 2. held-out counts: "reject" = oriented t above the oriented threshold
    counts_p, counts_q = split.holdout_tail_counts(thresholds)
    tail = 0 if sign > 0 else 1  # t > c (upper tail) when large t points to Q, else t < c
    rejected_p, rejected_q = counts_p[:, tail], counts_q[:, tail]
    alpha_hi = clopper_pearson_upper(rejected_p, split.h_p, level)
    beta_hi = clopper_pearson_upper(split.h_q - rejected_q, split.h_q, level)
    tests = np.stack([alpha_hi, beta_hi], axis=-1)
    # 3. the lower convex hull with T(0) <= 1 and T(1) = 0
    hull = lower_convex_hull(np.vstack([tests, [[0.0, 1.0], [1.0, 0.0]]]))
    beta_upper = np.minimum(np.interp(a, hull[:, 0], hull[:, 1]), 1.0 - a)
    return TradeoffBand(
        alpha=a,
        beta_upper=beta_upper,
        tests=tests,
        confidence=confidence,
        statistic=split.statistic,
        orientation="large t: samples_q" if sign > 0 else "large t: samples_p",
        holdout_p=split.h_p,
        holdout_q=split.h_q,
    )

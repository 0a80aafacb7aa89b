"""A GDP fit with confidence: a lower confidence limit on mu from samples, and what it means.

For any statistic t and the family of threshold tests "reject P when t > c", the test with
type-I error alpha = P(t_P > c) has type-II error beta = P(t_Q <= c) >= T(P, Q)(alpha), the
pair's trade-off function (Dong, Roth & Su 2022, Def. 2.1). If the pair is mu-GDP,
T(P, Q) >= G_mu(alpha) = Phi(Phi^{-1}(1 - alpha) - mu), so the area under the test family's
ROC curve, AUC = P(t_Q > t_P) (ties counted half), is at most

    integral_0^1 (1 - G_mu(alpha)) d alpha = Phi(mu / sqrt(2))

(the binormal AUC; equality for the likelihood-ratio statistic of a pair whose trade-off is
exactly G_mu). Hence mu >= sqrt(2) Phi^{-1}(AUC) for every statistic, and a lower confidence
limit on the AUC gives one on mu: :func:`gdp_lower_bound`.

What is and is not assumed:

* ``mu`` bounds the smallest mu for which the pair is mu-GDP from below (asymptotically at the
  stated confidence; see "confidence limit" below). This needs no assumption on the pair.
* ``epsilon(delta)`` converts mu to eps(delta) by the Gaussian mechanism's curve
  (Balle & Wang 2018). That is a lower bound on the pair's eps(delta) only **if the pair's
  trade-off is Gaussian** (T(P, Q) = G_mu). That is the assumption a GDP fit trades for power
  (Nasr et al. 2023 use it to audit DP-SGD): for pairs with a bounded privacy loss (pure DP,
  randomised response) it fails and the fitted eps can exceed the truth. An audit labels it
  "fit (assumes GDP)" and never calls it certified.

The confidence limit: the AUC is a two-sample U-statistic; its Hajek projection gives the
variance (DeLong et al. 1988). For coupled samples (row i of each side from one chain pair, the
pairs i.i.d.) the variance is that of the per-pair sums of the projections, which accounts for
the coupling (and makes the limit much tighter: the chains are positively correlated), and the
n diagonal comparisons of a pair with itself are left out of the estimate. The limit is
AUC_hat - Phi^{-1}(confidence) * se (asymptotic). Where fewer than 25 discordant comparisons
per sample are expected (AUC within 25/n of 1), the normal approximation is not trusted and the
distribution-free bounded-differences limit (McDiarmid 1989) is used instead.

The statistic and its orientation are chosen on a selection part of the samples; the AUC is
counted on the held-out rest, binned on up to 4,096 equal-mass bins of the selection (a function
of the output, so by data processing the binned AUC is again at most Phi(mu / sqrt 2)), in row
chunks (memory O(chunk)).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

import numpy as np
from scipy import special

from .samples import SplitPair, split_pair
from .statistics import Statistic, check_confidence, check_delta
from .._result_methods import printed_by

# Fewer samples per side than this and the normal approximation behind the limit is not trusted.
MIN_SAMPLES = 1000
# Bins of the held-out statistic (equal mass on the selection part).
MAX_BINS = 4096
# Below this many expected discordant comparisons per sample the limit is distribution-free.
MIN_DISCORDANT = 25.0

ASSUMPTION = (
    "mu: a lower confidence limit on the smallest mu for which the pair is mu-GDP (AUC of a threshold test family, "
    "asymptotic normal limit; no assumption on the pair). epsilon(delta) ASSUMES the pair's trade-off is Gaussian "
    "(T = G_mu): only then is it a lower bound on eps(delta); it is a fit, not a certified bound"
)


@dataclasses.dataclass(frozen=True)
class GDPLowerBound:
    """Outcome of :func:`gdp_lower_bound` (a fit: read :data:`ASSUMPTION`).

    mu: lower confidence limit on the pair's GDP parameter (0 when nothing is resolved).
    mu_estimate: the point estimate sqrt(2) Phi^{-1}(AUC).
    auc, auc_lower: the held-out AUC of the chosen test family and its lower confidence limit.
    method: "normal (DeLong), paired" / "normal (DeLong)" / "distribution-free (McDiarmid)".
    statistic, orientation: the 1-D statistic and whether large values of it point to D'
        ("large t: samples_q") or to D ("large t: samples_p"), both chosen on the selection part.
    holdout_p, holdout_q, selection_p, selection_q: sample counts; paired: coupled rows.
    confidence: as requested. assumption: what the numbers mean, in words.
    """

    mu: float
    mu_estimate: float
    auc: float
    auc_lower: float
    method: str
    statistic: str
    orientation: str
    holdout_p: int
    holdout_q: int
    selection_p: int
    selection_q: int
    paired: bool
    confidence: float
    assumption: str = ASSUMPTION

    def epsilon(self, delta) -> float:
        """eps(delta) of the Gaussian mechanism at ``mu``: a lower bound on the pair's eps(delta)
        at the stated confidence **if its trade-off is Gaussian** (a fit, not a certified bound)."""
        from ..accountants.mechanisms.gaussian_divergence import analytic_gaussian_epsilon

        return float(analytic_gaussian_epsilon(self.mu, check_delta(delta)))

    def tradeoff(self, alpha) -> np.ndarray:
        """G_mu(alpha) at the lower limit mu: under the GDP assumption, the pair's trade-off lies
        at or below it (with the stated confidence)."""
        from ..accountants.fdp import gdp_tradeoff

        return gdp_tradeoff(self.mu, alpha)

    summary, __repr__ = printed_by("gdp_fit_summary", "mu, eps at a few deltas, the assumption, in 100 columns.")


def orientation(split: SplitPair) -> float:
    """+1 when large statistic values are likelier under samples_q on the selection part (their
    selection AUC is at least 1/2), else -1. Chosen on the selection part only, so the held-out
    counts stay independent of the choice."""
    t_p, t_q = split.t_sel_p, split.t_sel_q  # both sorted
    # P(t_Q > t_P) + 1/2 P(=) on the selection part, by ranks
    greater = np.searchsorted(t_p, t_q, side="left").astype(np.float64)
    ties = np.searchsorted(t_p, t_q, side="right") - greater
    auc = float(np.sum(greater + 0.5 * ties)) / (t_p.size * t_q.size)
    return 1.0 if auc >= 0.5 else -1.0


def equal_mass_edges(split: SplitPair, max_bins: int = MAX_BINS) -> np.ndarray:
    """Sorted unique inner edges of up to ``max_bins`` equal-mass bins of the pooled selection."""
    pooled = np.concatenate([split.t_sel_p, split.t_sel_q])
    bins = int(min(max_bins, max(2, pooled.size // 4)))
    return np.unique(np.quantile(pooled, np.arange(1, bins) / bins))


def _auc_components(counts_p: np.ndarray, counts_q: np.ndarray, sign: float):
    """Per bin, in the oriented order (large = D'-like): V10 of a Q sample in the bin (share of P
    below it, ties half) and V01 of a P sample (share of Q above it, ties half); and the AUC."""
    a, c = counts_p.astype(np.float64), counts_q.astype(np.float64)
    if sign < 0:
        a, c = a[::-1], c[::-1]
    n_p, n_q = a.sum(), c.sum()
    below_p = np.cumsum(a) - a
    above_q = np.cumsum(c[::-1])[::-1] - c
    v10 = (below_p + 0.5 * a) / n_p
    v01 = (above_q + 0.5 * c) / n_q
    auc = float(np.sum(c * v10) / n_q)
    if sign < 0:
        v10, v01 = v10[::-1], v01[::-1]
    return v10, v01, auc


def _weighted_variance(values: np.ndarray, weights: np.ndarray) -> float:
    total = weights.sum()
    mean = np.sum(weights * values) / total
    return float(np.sum(weights * (values - mean) ** 2) / max(total - 1.0, 1.0))


def gdp_lower_bound(
    samples_p,
    samples_q,
    *,
    confidence: float = 0.95,
    statistic: Statistic = "auto",
    selection_fraction: float = 0.1,
    paired: Optional[bool] = None,
    seed: int = 0,
) -> GDPLowerBound:
    """A lower confidence limit on the GDP parameter mu of the pair (D, D'), and the eps(delta)
    it implies **if the pair's trade-off is Gaussian** (a fit, not a certified bound).

    Args:
        samples_p, samples_q: outputs on D and D', shape (n,) or (n, d), numpy or JAX arrays
            (device arrays are read in chunks, never copied whole); at least 1,000 per side.
        confidence: in [0.5, 1).
        statistic: the 1-D statistic (see :func:`~dpjax.estimators.statistics.fit_statistic`),
            fitted on the selection part; for a gradient canary pass its projection
            (:meth:`dpjax.canaries.Canary.statistic`).
        selection_fraction: share of the rows that fit the statistic and orient it (the rest
            counts towards the AUC).
        paired: coupled rows (row i of each side from one chain pair); default: when both sides
            have as many rows. Independent samples of equal size are also valid as pairs.
        seed: seeds the split.

    Returns a :class:`GDPLowerBound`; the module docstring derives the limit and states its
    assumption. Goals met on Gaussian pairs (tests): >= 0.97 mu at 1e5 samples per side and
    >= 0.99 mu at 1e6 for mu in [0.5, 3], at or below the true mu at the nominal rate.
    """
    confidence = check_confidence(confidence)
    if paired is not None and not isinstance(paired, (bool, np.bool_)):
        raise TypeError(f"paired={paired!r} violates paired in (None, True, False)")
    split = split_pair(samples_p, samples_q, statistic, selection_fraction, seed, min_samples=MIN_SAMPLES, paired=paired)
    sign = orientation(split)
    edges = equal_mass_edges(split)
    counts_p, counts_q = split.holdout_bins(edges)
    v10, v01, auc = _auc_components(counts_p, counts_q, sign)
    h_p, h_q = split.h_p, split.h_q
    if split.paired:
        # per-pair projections V10(q_i) + V01(p_i), and the pair's own comparison (left out)
        total, total_sq, own = 0.0, 0.0, 0.0
        for bins_p, bins_q in split.paired_holdout_bins(edges):
            s = v10[bins_q] + v01[bins_p]
            total += float(s.sum())
            total_sq += float(np.sum(s * s))
            oriented = sign * (bins_q.astype(np.int64) - bins_p.astype(np.int64))
            own += float(np.count_nonzero(oriented > 0) + 0.5 * np.count_nonzero(oriented == 0))
        n = h_p
        auc = (auc * n * n - own) / (n * (n - 1.0))
        variance = max(total_sq - total * total / n, 0.0) / (n - 1.0) / n
        effective, method = n, "normal (DeLong), paired"
        bounded_difference = math.sqrt(2.0 * math.log(1.0 / (1.0 - confidence)) / n)
    else:
        variance = _weighted_variance(v10, counts_q.astype(np.float64)) / h_q + _weighted_variance(v01, counts_p.astype(np.float64)) / h_p
        effective, method = min(h_p, h_q), "normal (DeLong)"
        bounded_difference = math.sqrt(math.log(1.0 / (1.0 - confidence)) * (1.0 / h_p + 1.0 / h_q) / 2.0)
    if effective * min(auc, 1.0 - auc) < MIN_DISCORDANT:
        auc_lower, method = auc - bounded_difference, "distribution-free (McDiarmid)"
    else:
        auc_lower = auc - special.ndtri(confidence) * math.sqrt(variance)
    return GDPLowerBound(
        mu=_mu_of_auc(auc_lower),
        mu_estimate=_mu_of_auc(auc),
        auc=float(auc),
        auc_lower=float(auc_lower),
        method=method,
        statistic=split.statistic,
        orientation="large t: samples_q" if sign > 0 else "large t: samples_p",
        holdout_p=h_p,
        holdout_q=h_q,
        selection_p=split.m_p,
        selection_q=split.m_q,
        paired=split.paired,
        confidence=confidence,
    )


def _mu_of_auc(auc: float) -> float:
    """sqrt(2) Phi^{-1}(AUC), 0 at or below 1/2 (nothing resolved), inf at 1."""
    if not auc > 0.5:
        return 0.0
    if auc >= 1.0:
        return math.inf
    return float(math.sqrt(2.0) * special.ndtri(auc))

"""Plug-in Rényi divergence estimates from samples, with bootstrap intervals.

On the shared equal-mass histogram of a 1-D statistic (see :mod:`dpjax.estimators.plugin`):
    D_a(P || Q) = log sum_b p_b^a q_b^(1 - a) / (a - 1),
in log space, for both directions; the RDP of the pair is the larger (Mironov 2017, Def. 3).

Bias (document, do not hide): binning lowers the divergence (data processing); the histogram
cannot see beyond the sample's range, and at order a the sum is dominated by bins where
p_b / q_b is largest, i.e. the tails, which are exactly the least populated. The plug-in is
therefore typically *below* the truth for large orders (for N(0,1) vs N(mu,1) the dominant
region is around mu * a, outside the sample once a * mu exceeds about sqrt(2 log n)), and noisy
tail bins can push it up for small samples. The bootstrap interval reflects sampling noise
only. Prefer :func:`~dpjax.estimators.privacy_loss_profile` when the privacy loss is known.
"""
from __future__ import annotations

import dataclasses
from typing import Optional, Union

import numpy as np
from scipy.special import logsumexp

from ..accountants.curve import PrivacyCurve, Provenance
from .plugin import _percentile_interval, binned_bootstrap
from .statistics import Statistic, check_confidence


def _check_orders(orders) -> np.ndarray:
    a = np.atleast_1d(np.asarray(orders, dtype=np.float64))
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"orders must be a non-empty 1-D array; got shape {np.shape(orders)}")
    bad = a[~(np.isfinite(a) & (a > 1))]
    if bad.size:
        raise ValueError(f"orders={bad[:5].tolist()} violate 1 < order < inf")
    return a


def histogram_renyi(hist_big: np.ndarray, hist_small: np.ndarray, orders: np.ndarray) -> np.ndarray:
    """D_a(big || small) of histograms (rows), shape (rows, orders); +inf where big has mass
    on a bin small lacks (a > 1)."""
    with np.errstate(divide="ignore"):
        log_big = np.log(hist_big)[:, None, :]
        log_small = np.log(hist_small)[:, None, :]
    a = orders[None, :, None]
    with np.errstate(invalid="ignore"):
        terms = np.where(hist_big[:, None, :] > 0, a * log_big + (1 - a) * log_small, -np.inf)
    terms = np.where(np.isnan(terms), np.inf, terms)  # big > 0, small = 0: infinite ratio
    out = logsumexp(terms, axis=-1) / (orders[None, :] - 1.0)
    return np.maximum(out, 0.0)  # a divergence; clips -1e-16 rounding


@dataclasses.dataclass(frozen=True)
class RenyiEstimate:
    """Outcome of :func:`renyi_estimate`: per order, D_a(P||Q), D_a(Q||P), their maximum
    ``rdp`` and its percentile bootstrap interval (``rdp_lower``, ``rdp_upper``)."""

    orders: np.ndarray
    rdp: np.ndarray
    rdp_lower: np.ndarray
    rdp_upper: np.ndarray
    divergence_p_q: np.ndarray
    divergence_q_p: np.ndarray
    confidence: float
    num_bootstrap: int
    num_bins: int
    statistic: str

    def curve(self) -> PrivacyCurve:
        """The point estimates as a PrivacyCurve (mode "estimate": not a guarantee)."""
        return PrivacyCurve.from_rdp(
            self.orders,
            self.rdp,
            Provenance(
                "plug-in histogram Rényi divergence from samples (dpjax.estimators.renyi_estimate)",
                mode="estimate",
                assumptions=("i.i.d. samples", "histogram plug-in: biased low at large orders"),
            ),
        )

    def summary(self) -> str:
        """Divergences by order with their intervals, in 100 columns."""
        from .. import _display

        return _display.renyi_summary(self)

    def __repr__(self) -> str:
        return self.summary()

    def figure(self):
        """Rényi divergence against the order, with the bootstrap band."""
        from .. import _display

        return _display.renyi_figure(self)

    def save(self, path):
        """Write :meth:`figure` to ``path`` (the suffix picks the format); returns the path."""
        from .. import _display

        return _display.save_figure(self.figure(), path)


def renyi_estimate(
    samples_p,
    samples_q,
    orders,
    *,
    bins: Union[int, str] = "auto",
    min_count: int = 10,
    statistic: Statistic = "auto",
    num_bootstrap: int = 200,
    confidence: float = 0.95,
    paired: Optional[bool] = None,
    seed: int = 0,
) -> RenyiEstimate:
    """Plug-in Rényi divergences of the pair at ``orders`` (> 1), both directions, with a
    percentile bootstrap interval from ``num_bootstrap`` resamples (200 by default).

    Arguments as in :func:`~dpjax.estimators.epsilon_estimate`. No finite-sample guarantee:
    see the module docstring for the direction of the bias.
    """
    a = _check_orders(orders)
    confidence = check_confidence(confidence)
    binned, hp, hq, paired = binned_bootstrap(samples_p, samples_q, bins, statistic, min_count, num_bootstrap, paired, seed)
    d_pq = histogram_renyi(hp, hq, a)
    d_qp = histogram_renyi(hq, hp, a)
    both = np.maximum(d_pq, d_qp)
    bounds = np.array([_percentile_interval(both[1:, j], confidence) for j in range(a.size)]).reshape(a.size, 2)
    return RenyiEstimate(
        orders=a,
        rdp=both[0],
        rdp_lower=bounds[:, 0],
        rdp_upper=bounds[:, 1],
        divergence_p_q=d_pq[0],
        divergence_q_p=d_qp[0],
        confidence=confidence,
        num_bootstrap=int(num_bootstrap),
        num_bins=binned.num_bins,
        statistic=binned.statistic,
    )

"""The decay rate of Algorithm 1's eps_hat in n, fitted on a log scale and extrapolated
(paper 003 §4.3, Figures 2-3: "we fit the empirical decay rate of eps_hat and extrapolate the
trend to larger sample sizes (up to 10^7)"), beside Theorem 4's rate eps_n ~ n^(-1/(2q)).

The fit is ordinary least squares of log eps_hat(n) on log n: eps_hat ~ C n^slope. Its
uncertainty comes from the datasets themselves: each bootstrap replicate resamples the K
per-dataset estimates at every n (independently across n, as the datasets are), recomputes
the quantile with the same order statistic, and refits; the slope's and the extrapolation's
intervals are the replicates' percentiles. A quantile that is +inf (a failed dataset counted
as +inf) makes the fit undefined: it is then reported as NaN with ``ok`` False, never as a
number.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import numpy as np

from .. import _validate as V
from .statistics import check_confidence


def theorem4_rate(rate_exponent: float) -> float:
    """Theorem 4's (and §5's) decay exponent of eps_n when p_n = n^(-rate_exponent): with
    p_n = n^(-1/(2q)), eps_n ~ n^(-1/(2q)) (Appendix C), i.e. the exponent is -rate_exponent.
    The theorem asks q > 4, i.e. rate_exponent < 1/8; the paper's simulations use exactly
    1/8 (q = 4, the boundary)."""
    return -V.positive("rate_exponent", rate_exponent)


def _order_statistic(values: np.ndarray, q: float) -> float:
    x = np.sort(values)
    return float(x[max(int(math.ceil(q * x.shape[0])) - 1, 0)])


def _ols(log_n: np.ndarray, log_eps: np.ndarray) -> tuple[float, float]:
    slope, intercept = np.polyfit(log_n, log_eps, 1)
    return float(slope), float(intercept)


@dataclasses.dataclass(frozen=True)
class DecayFit:
    """eps_hat ~ exp(intercept) n^slope. ``slope_interval`` and ``extrapolated_interval`` are
    bootstrap percentile intervals at ``confidence``; ``extrapolated`` maps each n in
    ``extrapolate_to`` to the fitted eps_hat there. ``ok`` is False when some quantile is not
    finite (then every number is NaN)."""

    slope: float
    intercept: float
    slope_interval: tuple
    slope_bootstrap_se: float
    extrapolate_to: tuple
    extrapolated: tuple
    extrapolated_interval: tuple
    residual_sd: float
    confidence: float
    bootstrap: int
    ok: bool

    def predict(self, n) -> np.ndarray:
        """The fitted eps_hat at n (array-like)."""
        return np.exp(self.intercept) * np.asarray(n, dtype=float) ** self.slope

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def decay_rate_fit(
    n_values: Sequence[int],
    per_dataset: Sequence[Sequence[float]],
    *,
    quantile: float = 0.99,
    extrapolate_to: Sequence[float] = (1e7,),
    bootstrap: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> DecayFit:
    """Fit log eps_hat = intercept + slope log n, where eps_hat(n) is the ``quantile``
    order statistic (ceil(q K)) of ``per_dataset[i]`` at ``n_values[i]``; bootstrap the
    datasets for the slope's and the extrapolation's intervals (see the module docstring)."""
    n = np.asarray([V.positive_int("n_values", v) for v in n_values], dtype=float)
    if n.size < 2 or np.unique(n).size < 2:
        raise ValueError(f"n_values={list(n_values)} violates at least two distinct dataset sizes (a line needs two points)")
    if len(per_dataset) != n.size:
        raise ValueError(f"per_dataset has {len(per_dataset)} entries; it needs one per n ({n.size})")
    q = V.in_range("quantile", quantile, 0.0, 1.0, low_open=True, high_open=True)
    conf = check_confidence(confidence)
    bootstrap = V.nonnegative_int("bootstrap", bootstrap)
    targets = tuple(float(V.positive("extrapolate_to", t)) for t in extrapolate_to)
    samples = [np.asarray(v, dtype=float) for v in per_dataset]
    if any(s.ndim != 1 or s.size == 0 for s in samples):
        raise ValueError("per_dataset must hold a non-empty list of per-dataset eps_hat for each n")
    eps = np.array([_order_statistic(s, q) for s in samples])
    nan = float("nan")
    if not np.all(np.isfinite(eps) & (eps > 0)):
        return DecayFit(nan, nan, (nan, nan), nan, targets, tuple(nan for _ in targets), tuple((nan, nan) for _ in targets),
                        nan, conf, bootstrap, False)
    log_n = np.log(n)
    slope, intercept = _ols(log_n, np.log(eps))
    resid = np.log(eps) - (intercept + slope * log_n)
    residual_sd = float(np.sqrt(np.sum(resid**2) / max(n.size - 2, 1))) if n.size > 2 else 0.0
    log_t = np.log(np.asarray(targets))
    lo_q, hi_q = 100 * (1 - conf) / 2, 100 * (1 + conf) / 2
    slope_iv, se = (nan, nan), nan
    extra_iv = tuple((nan, nan) for _ in targets)
    if bootstrap:
        rng = np.random.default_rng(seed)
        fits = []
        for _ in range(bootstrap):
            boot = np.array([_order_statistic(s[rng.integers(0, s.size, s.size)], q) for s in samples])
            if np.all(np.isfinite(boot) & (boot > 0)):
                fits.append(_ols(log_n, np.log(boot)))
        if len(fits) == bootstrap:
            fits = np.asarray(fits)
            slope_iv = tuple(float(v) for v in np.percentile(fits[:, 0], [lo_q, hi_q]))
            se = float(np.std(fits[:, 0]))
            pred = np.exp(fits[:, 1][:, None] + fits[:, 0][:, None] * log_t[None, :])
            extra_iv = tuple((float(a), float(b)) for a, b in zip(*np.percentile(pred, [lo_q, hi_q], axis=0)))
    return DecayFit(
        slope=slope, intercept=intercept, slope_interval=slope_iv, slope_bootstrap_se=se, extrapolate_to=targets,
        extrapolated=tuple(float(math.exp(intercept + slope * t)) for t in log_t), extrapolated_interval=extra_iv,
        residual_sd=residual_sd, confidence=conf, bootstrap=bootstrap, ok=True,
    )

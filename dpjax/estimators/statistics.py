"""Input checks and 1-D statistics for the sample-based estimators.

Every estimator in this package works on a scalar statistic ``t(x)`` of the released object:
the output itself when it is a scalar, and for vectors a score fitted on data the final
computation does not use (a held-out split in :func:`~dpjax.estimators.epsilon_lower_bound`).
By the data-processing inequality, any divergence between the laws of ``t(X)`` under D and
D' is at most the divergence between the laws of ``X``; so a valid lower bound on the former
is a valid lower bound on the latter, whatever ``t`` is (only power depends on the choice).
"""
from __future__ import annotations

from typing import Callable, Union

import numpy as np

from .. import _validate

Statistic = Union[str, Callable[[np.ndarray], np.ndarray]]
STATISTICS = ("auto", "identity", "mean_difference", "lda", "gaussian_llr")
# Ridge added to covariance estimates, relative to their average variance, so a fitted
# score exists even with fewer selection samples than dimensions.
_RIDGE = 1e-6


def as_samples(name: str, value) -> np.ndarray:
    """``value`` (numpy or JAX array, shape (n,) or (n, d)) as a float64 array (n, d).

    Raises on an empty array, more than 2 axes, or any non-finite entry (naming its index):
    a NaN in a sample means the chain diverged, which must not be silently dropped.
    """
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} has dtype {arr.dtype}; expected real numbers")
    arr = arr.astype(np.float64, copy=False)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{name} has shape {np.shape(value)}; expected (n,) or (n, d)")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} has shape {np.shape(value)}; it must hold at least one sample of dimension >= 1")
    _validate.finite_array(name, arr)
    return arr


def check_pair(samples_p, samples_q, min_samples: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Both sample sets as (n, d) float64 arrays with the same d and at least ``min_samples`` rows."""
    x_p = as_samples("samples_p", samples_p)
    x_q = as_samples("samples_q", samples_q)
    if x_p.shape[1] != x_q.shape[1]:
        raise ValueError(
            f"samples_p has dimension {x_p.shape[1]} and samples_q has dimension {x_q.shape[1]}; they must match"
        )
    for name, x in (("samples_p", x_p), ("samples_q", x_q)):
        if x.shape[0] < min_samples:
            raise ValueError(f"{name} has {x.shape[0]} samples; this estimator needs at least {min_samples}")
    return x_p, x_q


def check_delta(delta) -> float:
    return _validate.in_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True)


def check_confidence(confidence) -> float:
    return _validate.in_range("confidence", confidence, 0.0, 1.0, low_open=True, high_open=True)


def fit_statistic(statistic: Statistic, fit_p: np.ndarray, fit_q: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """A map (n, d) -> (n,) chosen from ``statistic`` and fitted on ``fit_p``, ``fit_q``.

    - ``"identity"``: the output itself (d must be 1);
    - ``"mean_difference"``: projection on the difference of the sample means;
    - ``"lda"``: projection on Sigma^-1 (mean_q - mean_p) with the pooled covariance Sigma
      (the exact log-likelihood ratio for two Gaussians with a shared covariance);
    - ``"gaussian_llr"``: the log-likelihood ratio of Gaussians fitted separately to each side
      (quadratic; the exact statistic for Gaussians with different covariances);
    - ``"auto"``: identity for d = 1, else ``"lda"``;
    - a callable: used as is. It must not have been fitted on the data handed to the estimator
      (or the estimator's guarantee is void).
    """
    if callable(statistic):
        def user(x: np.ndarray) -> np.ndarray:
            t = np.asarray(statistic(x), dtype=np.float64).reshape(-1)
            if t.shape[0] != x.shape[0]:
                raise ValueError(f"statistic returned {t.shape[0]} values for {x.shape[0]} samples; expected one per sample")
            return _validate.finite_array("statistic(samples)", t)

        return user
    _validate.one_of("statistic", statistic, STATISTICS)
    d = fit_p.shape[1]
    if statistic == "auto":
        statistic = "identity" if d == 1 else "lda"
    if statistic == "identity":
        if d != 1:
            raise ValueError(f"statistic='identity' needs scalar samples; got dimension {d}")
        return lambda x: x[:, 0]
    mean_p, mean_q = fit_p.mean(axis=0), fit_q.mean(axis=0)
    if statistic == "mean_difference":
        direction = mean_q - mean_p
        return lambda x: x @ direction
    cov_p = _covariance(fit_p, mean_p)
    cov_q = _covariance(fit_q, mean_q)
    if statistic == "lda":
        pooled = (cov_p * fit_p.shape[0] + cov_q * fit_q.shape[0]) / (fit_p.shape[0] + fit_q.shape[0])
        direction = np.linalg.solve(_ridged(pooled), mean_q - mean_p)
        return lambda x: x @ direction
    # gaussian_llr: log N(x; mean_q, cov_q) - log N(x; mean_p, cov_p), up to a constant.
    chol_p = np.linalg.cholesky(_ridged(cov_p))
    chol_q = np.linalg.cholesky(_ridged(cov_q))
    log_det_gap = np.sum(np.log(np.diag(chol_p))) - np.sum(np.log(np.diag(chol_q)))

    def llr(x: np.ndarray) -> np.ndarray:
        z_p = np.linalg.solve(chol_p, (x - mean_p).T)
        z_q = np.linalg.solve(chol_q, (x - mean_q).T)
        return 0.5 * (np.sum(z_p**2, axis=0) - np.sum(z_q**2, axis=0)) + log_det_gap

    return llr


def _covariance(x: np.ndarray, mean: np.ndarray) -> np.ndarray:
    centred = x - mean
    return centred.T @ centred / max(x.shape[0] - 1, 1)


def _ridged(cov: np.ndarray) -> np.ndarray:
    scale = max(float(np.trace(cov)) / cov.shape[0], 1e-300)
    return cov + _RIDGE * scale * np.eye(cov.shape[0])


def apply_in_chunks(fn: Callable[[np.ndarray], np.ndarray], x: np.ndarray, chunk_size: int = 1 << 20) -> np.ndarray:
    """``fn`` over row chunks of ``x`` so vector statistics of 1e7 samples stay small in memory."""
    if x.shape[0] <= chunk_size:
        return fn(x)
    return np.concatenate([fn(x[i : i + chunk_size]) for i in range(0, x.shape[0], chunk_size)])

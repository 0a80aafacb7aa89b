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
    arr = _validate.real_array(name, value)
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


def check_confidence(confidence, name: str = "confidence") -> float:
    """A confidence level in [1/2, 1). Below 1/2 a "lower confidence limit" is more likely above
    the truth than below it (at confidence 1e-12 it is a near-certain overstatement), so every
    estimator refuses it."""
    v = _validate.real(name, confidence, f"{name} in [0.5, 1)")
    if not 0.5 <= v < 1.0:  # NaN fails too
        raise ValueError(
            f"{name}={_validate._fmt(confidence)} violates {name} in [0.5, 1): below 1/2 a confidence limit is more likely wrong than right"
        )
    return v


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

    The vector statistics are fitted in robust coordinates (per-coordinate median and MAD),
    leaving rows beyond 1e6 robust scales out of the fit, so a few blown-up rows of a diverging
    chain neither overflow the fit nor steer it; every returned score is checked finite and a
    non-finite value raises, naming the row.
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
    # Vector statistics are fitted and applied in robustly standardised coordinates
    # z = (x - median) / MAD, clipped at +-_CLIP: a diverging chain's rows (finite but huge,
    # e.g. 1e200) would otherwise overflow the covariance and the score to inf - inf = NaN.
    # Rows beyond _FIT_OUTLIER_SCALES robust scales are left out of the fit only (the fitted
    # score is still applied to them): any fixed function of the output is a valid statistic
    # (data processing), so this changes power, never validity.
    centre, scale = _robust_standardisation(np.concatenate([fit_p, fit_q]))
    z_p, z_q = _standardise(fit_p, centre, scale), _standardise(fit_q, centre, scale)
    z_p, z_q = _without_outlying_rows(z_p), _without_outlying_rows(z_q)
    mean_p, mean_q = z_p.mean(axis=0), z_q.mean(axis=0)
    if statistic == "mean_difference":
        # the difference of the means in the original coordinates, (mean_q - mean_p) * scale,
        # applied to x = z * scale + centre: t = z @ (scale^2 (mean_q - mean_p)) + const.
        direction = scale**2 * (mean_q - mean_p)
        return _finite_score("mean_difference", lambda x: _standardise(x, centre, scale) @ direction)
    cov_p = _covariance(z_p, mean_p)
    cov_q = _covariance(z_q, mean_q)
    if statistic == "lda":
        pooled = (cov_p * z_p.shape[0] + cov_q * z_q.shape[0]) / (z_p.shape[0] + z_q.shape[0])
        direction = np.linalg.solve(_ridged(pooled), mean_q - mean_p)
        return _finite_score("lda", lambda x: _standardise(x, centre, scale) @ direction)
    # gaussian_llr: log N(z; mean_q, cov_q) - log N(z; mean_p, cov_p), up to a constant (the
    # log-likelihood ratio is the same in z and in x coordinates: the Jacobians cancel).
    chol_p = np.linalg.cholesky(_ridged(cov_p))
    chol_q = np.linalg.cholesky(_ridged(cov_q))
    log_det_gap = np.sum(np.log(np.diag(chol_p))) - np.sum(np.log(np.diag(chol_q)))

    def llr(x: np.ndarray) -> np.ndarray:
        z = _standardise(x, centre, scale)
        w_p = np.linalg.solve(chol_p, (z - mean_p).T)
        w_q = np.linalg.solve(chol_q, (z - mean_q).T)
        return 0.5 * (np.sum(w_p**2, axis=0) - np.sum(w_q**2, axis=0)) + log_det_gap

    return _finite_score("gaussian_llr", llr)


# Standardised coordinates are clipped here before a fitted score is applied: squares and
# whitening of 1e100 stay far from float64 overflow, and no real sample lies that far out in
# robust scales (rows beyond it are ranked as if they sat at the clip, all in the same tail).
_CLIP = 1e100
# Rows with a coordinate further than this many robust scales from the pooled median are left
# out of the fit of a vector statistic (kept when that would leave fewer than 2 rows a side).
_FIT_OUTLIER_SCALES = 1e6


def _robust_standardisation(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-coordinate median and median absolute deviation (1 where the MAD is 0)."""
    centre = np.median(x, axis=0)
    with np.errstate(over="ignore", invalid="ignore"):
        mad = np.median(np.abs(x - centre), axis=0)
    scale = np.where(np.isfinite(mad) & (mad > 0), mad, 1.0)
    return centre, scale


def _standardise(x: np.ndarray, centre: np.ndarray, scale: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.clip((x - centre) / scale, -_CLIP, _CLIP)


def _without_outlying_rows(z: np.ndarray) -> np.ndarray:
    keep = np.max(np.abs(z), axis=1) <= _FIT_OUTLIER_SCALES
    return z[keep] if np.count_nonzero(keep) >= 2 else z


def _finite_score(name: str, score: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """``score`` with a check that every value is finite (a non-finite statistic would make
    every threshold comparison, and so every bound and estimate, silently meaningless)."""
    def checked(x: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):
            t = score(x)
        if not np.all(np.isfinite(t)):
            i = int(np.flatnonzero(~np.isfinite(t))[0])
            raise ValueError(
                f"statistic={name!r} is non-finite ({t[i]!r}) on sample row {i} (max |x| = {np.max(np.abs(x[i])):.3g}); "
                "the samples are too extreme for this score: pass a callable statistic that maps them to finite values"
            )
        return t

    return checked


def _covariance(x: np.ndarray, mean: np.ndarray) -> np.ndarray:
    centred = x - mean
    return centred.T @ centred / max(x.shape[0] - 1, 1)


def _ridged(cov: np.ndarray) -> np.ndarray:
    # In robustly standardised coordinates the unit is one MAD, so the ridge is at least
    # _RIDGE of that: a side whose samples are all equal (covariance 0) still whitens to
    # finite values (a relative-only ridge of 1e-306 would overflow the squares).
    scale = max(float(np.trace(cov)) / cov.shape[0], 1.0)
    return cov + _RIDGE * scale * np.eye(cov.shape[0])


def apply_in_chunks(fn: Callable[[np.ndarray], np.ndarray], x: np.ndarray, chunk_size: int = 1 << 20) -> np.ndarray:
    """``fn`` over row chunks of ``x`` so vector statistics of 1e7 samples stay small in memory."""
    if x.shape[0] <= chunk_size:
        return fn(x)
    return np.concatenate([fn(x[i : i + chunk_size]) for i in range(0, x.shape[0], chunk_size)])

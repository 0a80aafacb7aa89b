"""Bayesian linear regression (paper 000, eq. 4 in one dimension).

    y_i = <theta, x_i> + N(0, 1/noise_precision),   theta ~ N(0, I / prior_precision).

Records are ``{"x": (d,), "y": ()}``; a dataset stores ``x`` with shape (n, d) and ``y``
with shape (n,). The posterior is Gaussian (paper 000, Lemma 4.1, for d = 1):
precision alpha + beta sum x_i^2, mean beta sum x_i y_i / (alpha + beta sum x_i^2).
"""
from __future__ import annotations

import math
from typing import Any

import jax.numpy as jnp
import numpy as np

from .. import _validate as V
from ..data import Dataset, make_dataset
from ._design import design_matrix, present_design
from ._priors import isotropic_gaussian_log_prior
from .base import shared
from .constants import CurvatureCertificate
from .quadratic import QuadraticModel
from .structure import GLM

_LOG_2PI = math.log(2 * math.pi)


def _check_xy_dataset(dataset: Dataset, dim: int, name: str) -> None:
    for field in ("x", "y"):
        if field not in dataset.fields:
            raise ValueError(f"{name} needs a dataset with fields 'x' (n, {dim}) and 'y' (n,); field {field!r} is missing")
    x, y = dataset.fields["x"], dataset.fields["y"]
    if x.ndim != 2 or x.shape[1] != dim:
        raise ValueError(f"{name}: field 'x' has shape {tuple(x.shape)}; it must have shape (n, {dim})")
    if y.ndim != 1:
        raise ValueError(f"{name}: field 'y' has shape {tuple(y.shape)}; it must have shape (n,)")


def regression_dataset(x: Any, y: Any, mask: Any = None) -> Dataset:
    """Dataset with ``x`` of shape (n, d) and ``y`` of shape (n,); a 1-D ``x`` becomes (n, 1)."""
    x = design_matrix(x)
    y = V.real_array("y", y, cast=False)
    if y.ndim != 1:
        raise ValueError(f"y has shape {y.shape}; it must be 1-D (n,)")
    return make_dataset(mask=mask, x=x, y=y)


@shared
def bayesian_linear_regression(noise_precision: float, prior_precision: float, dim: int = 1) -> QuadraticModel:
    """Gaussian likelihood N(y; <theta, x>, 1/noise_precision), prior N(0, I/prior_precision).

    ``noise_precision`` is paper 000's beta, ``prior_precision`` its alpha. The potential is
    exactly quadratic: see :func:`dpjax.models.quadratic_form`.
    """
    beta = V.positive("noise_precision", noise_precision)
    alpha = V.positive("prior_precision", prior_precision)
    dim = V.dimension("dim", dim)
    log_norm_lik = 0.5 * (math.log(beta) - _LOG_2PI)

    def log_likelihood(theta, record):
        residual = record["y"] - jnp.dot(record["x"], theta)
        return log_norm_lik - 0.5 * beta * residual**2

    def record_quadratic(fields):
        x, y = fields["x"], fields["y"]
        return beta * np.einsum("ni,nj->nij", x, x), beta * y[:, None] * x

    def check(dataset):
        _check_xy_dataset(dataset, dim, "bayesian_linear_regression")

    # a GLM in eta = <theta, x>: -log p = beta (y - eta)^2 / 2 + const, d/d eta = beta (eta - y)
    glm = GLM(loss=lambda y, eta: 0.5 * beta * (y - eta) ** 2 - log_norm_lik, loss_derivative=lambda y, eta: beta * (eta - y), design="x", response="y")
    return QuadraticModel(
        glm=glm,
        log_likelihood=log_likelihood,
        log_prior=isotropic_gaussian_log_prior(alpha, dim),
        dim=dim,
        name="bayesian_linear_regression",
        dataset_check=check,
        prior_precision=alpha,
        record_quadratic=record_quadratic,
        curvature=CurvatureCertificate("linear-regression", alpha, beta),
    )


def linear_regression_posterior(noise_precision: float, prior_precision: float, dataset: Dataset) -> tuple[np.ndarray, np.ndarray]:
    """Conjugate posterior N(m, S), S = (alpha I + beta X^T X)^{-1}, m = beta S X^T y (Bishop 3.53-3.54;
    paper 000 Lemma 4.1 for d = 1), with removed records (mask 0) left out. float64 numpy."""
    beta = V.positive("noise_precision", noise_precision)
    alpha = V.positive("prior_precision", prior_precision)
    x, mask = present_design(dataset)
    y = np.asarray(dataset.fields["y"], dtype=np.float64)
    precision = alpha * np.eye(x.shape[1]) + beta * (x * mask[:, None]).T @ x
    covariance = np.linalg.inv(precision)
    mean = beta * covariance @ (x.T @ (mask * y))
    return mean, covariance

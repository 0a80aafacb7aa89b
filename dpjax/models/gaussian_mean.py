"""Gaussian mean estimation as a Gibbs posterior with quadratic loss (paper 002, App. B).

    G_beta(theta | D) ∝ exp(-beta sum_i ||theta - x_i||^2 / 2) pi(theta),
    pi = N(0, I / lambda)  (eq. B.1; lambda = 0 is the flat prior of the printed examples).

Records are ``{"x": (d,)}``. The posterior is N(beta sum x_i / (n beta + lambda),
I / (n beta + lambda)) (App. B), which :func:`gaussian_mean_posterior` returns.
"""
from __future__ import annotations

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


def gaussian_mean_dataset(x: Any, mask: Any = None) -> Dataset:
    """Dataset with ``x`` of shape (n, d); a 1-D ``x`` becomes (n, 1)."""
    return make_dataset(mask=mask, x=design_matrix(x))


@shared
def gaussian_mean(dim: int = 1, prior_precision: float = 1.0, inverse_temperature: float = 1.0) -> QuadraticModel:
    """Gibbs posterior for the mean with loss ||theta - x||^2 / 2 (paper 002, App. B).

    ``inverse_temperature`` is paper 002's beta and becomes the model's
    ``likelihood_weight``; ``prior_precision`` is lambda (>= 0; 0 gives the flat prior, whose
    Gibbs posterior is still proper because the loss is strongly convex). The "log-likelihood"
    is minus the loss (it is not a normalised density; the Gibbs posterior does not need one).
    """
    dim = V.dimension("dim", dim)
    lam = V.nonnegative("prior_precision", prior_precision, "prior_precision >= 0 (0 is the flat prior)")
    beta = V.positive("inverse_temperature", inverse_temperature)

    def log_likelihood(theta, record):
        return -0.5 * jnp.sum((theta - record["x"]) ** 2)

    def record_quadratic(fields):
        x = fields["x"]
        n = x.shape[0]
        return np.broadcast_to(np.eye(dim), (n, dim, dim)), x

    def check(dataset):
        if "x" not in dataset.fields:
            raise ValueError("gaussian_mean needs a dataset with field 'x' of shape (n, dim)")
        x = dataset.fields["x"]
        if x.ndim != 2 or x.shape[1] != dim:
            raise ValueError(f"gaussian_mean: field 'x' has shape {tuple(x.shape)}; it must have shape (n, {dim})")

    return QuadraticModel(
        log_likelihood=log_likelihood,
        log_prior=isotropic_gaussian_log_prior(lam, dim),
        dim=dim,
        likelihood_weight=beta,
        name="gaussian_mean",
        dataset_check=check,
        prior_precision=lam,
        record_quadratic=record_quadratic,
        curvature=CurvatureCertificate("gaussian-mean", lam),
    )


def gaussian_mean_posterior(inverse_temperature: float, prior_precision: float, dataset: Dataset) -> tuple[np.ndarray, np.ndarray]:
    """Paper 002 App. B: N(beta sum x_i / (n beta + lambda), I / (n beta + lambda)), float64,
    with n the number of present records (mask 1)."""
    beta = V.positive("inverse_temperature", inverse_temperature)
    lam = V.nonnegative("prior_precision", prior_precision)
    x, mask = present_design(dataset)
    precision = mask.sum() * beta + lam
    if not precision > 0:
        raise ValueError("the Gibbs posterior is improper: no records and prior_precision = 0")
    return beta * (mask @ x) / precision, np.eye(x.shape[1]) / precision

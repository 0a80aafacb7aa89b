"""Logistic regression with a Gaussian prior.

    P(y_i = 1 | x_i, theta) = sigmoid(<theta, x_i>),   theta ~ N(0, I / prior_precision).

Records are ``{"x": (d,), "y": ()}`` with y in {0, 1}. The log-likelihood is written with
``log_sigmoid`` so it stays finite for any margin (log(sigmoid(z)) underflows for z < -745).
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validate as V
from ..data import Dataset
from ._priors import isotropic_gaussian_log_prior
from .base import Model, shared
from .constants import CurvatureCertificate
from .linear_regression import _check_xy_dataset, regression_dataset
from .structure import GLM


def check_binary_labels(y: Any, name: str = "y") -> None:
    """Raise ``ValueError`` unless every label is 0 or 1."""
    arr = V.real_array(name, y, cast=False)
    bad = np.flatnonzero((arr != 0) & (arr != 1))
    if bad.size:
        raise ValueError(f"{name}[{bad[0]}]={arr.reshape(-1)[bad[0]].item()!r} violates y in {{0, 1}} required by logistic regression")


def logistic_regression_dataset(x: Any, y: Any, mask: Any = None) -> Dataset:
    """Dataset for :func:`logistic_regression`: ``x`` (n, d) (1-D becomes (n, 1)), ``y`` (n,) in {0, 1}."""
    check_binary_labels(y)
    return regression_dataset(x, y, mask=mask)


@shared
def logistic_regression(prior_precision: float, dim: int) -> Model:
    """Bernoulli likelihood with logit <theta, x>, prior N(0, I/prior_precision).

    log p(y | x, theta) = y log sigmoid(z) + (1 - y) log sigmoid(-z), z = <theta, x>.
    """
    alpha = V.positive("prior_precision", prior_precision)
    dim = V.dimension("dim", dim)

    def log_likelihood(theta, record):
        z = jnp.dot(record["x"], theta)
        y = record["y"]
        return y * jax.nn.log_sigmoid(z) + (1 - y) * jax.nn.log_sigmoid(-z)

    def check(dataset):
        _check_xy_dataset(dataset, dim, "logistic_regression")
        check_binary_labels(dataset.fields["y"], "y")

    # a GLM in the logit z = <theta, x>: -log p = softplus(z) - y z, d/dz = sigmoid(z) - y
    glm = GLM(loss=lambda y, z: jax.nn.softplus(z) - y * z, loss_derivative=lambda y, z: jax.nn.sigmoid(z) - y, design="x", response="y")
    return Model(log_likelihood=log_likelihood, log_prior=isotropic_gaussian_log_prior(alpha, dim), dim=dim, name="logistic_regression", dataset_check=check,
                 curvature=CurvatureCertificate("logistic-regression", alpha), glm=glm)

"""The isotropic Gaussian prior N(0, I / precision) of the built-in models, written once.

Bayesian linear and logistic regression, the MLP classifier and the Gaussian-mean Gibbs
posterior (paper 002, eq. B.1) all put this prior on theta; its log-density keeps its
normalising constant, so a model's log-posterior is the true one up to the likelihood's.
"""
from __future__ import annotations

import math
from typing import Callable

import jax.numpy as jnp

_LOG_2PI = math.log(2 * math.pi)


def isotropic_gaussian_log_prior(precision: float, dim: int) -> Callable:
    """theta -> log N(theta; 0, I / precision) in ``dim`` dimensions, normalised.

    ``precision`` 0 is the flat prior (log-density 0, improper: only for a posterior whose
    likelihood alone is proper, as paper 002's strongly convex Gibbs losses). The caller has
    checked ``precision`` >= 0 and ``dim`` >= 1.
    """
    log_norm = 0.5 * dim * (math.log(precision) - _LOG_2PI) if precision > 0 else 0.0

    def log_prior(theta):
        return log_norm - 0.5 * precision * jnp.sum(theta**2)

    return log_prior

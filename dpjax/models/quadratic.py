"""Models whose potential is an exact quadratic in theta, and their closed forms.

For these models (Bayesian linear regression, Gaussian mean / Gibbs posterior with quadratic
loss) the potential on a dataset D is

    U_D(theta) = 1/2 theta^T H theta - g^T theta + const,

so the (tempered) posterior exp(-U_D) is N(H^{-1} g, H^{-1}). ``quadratic_form`` returns
(H, g) in float64 numpy; the exact accountants build on it (every ULA / SGLD iterate on such a
potential is Gaussian).
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from ..data import Dataset
from .base import Model

# record_quadratic(fields) -> (A, b): fields are float64 numpy arrays with a leading record
# axis; A has shape (n, d, d) and b shape (n, d), with
#   -log p(record_i | theta) = 1/2 theta^T A_i theta - b_i^T theta + const_i.
RecordQuadratic = Callable[[dict], tuple]


@dataclasses.dataclass(frozen=True)
class QuadraticModel(Model):
    """A :class:`Model` whose per-record negative log-likelihood and negative log-prior are
    quadratic in theta. ``prior_precision`` is the isotropic prior precision (prior mean 0);
    ``record_quadratic`` gives each record's (A_i, b_i) in closed form (see module docstring).
    """

    prior_precision: float = 1.0
    record_quadratic: RecordQuadratic | None = None


def _float64_fields(dataset: Dataset) -> dict:
    return {k: np.asarray(v, dtype=np.float64) for k, v in dataset.fields.items()}


def quadratic_form(model: Model, dataset: Dataset) -> tuple[np.ndarray, np.ndarray]:
    """(H, g) with U_D(theta) = 1/2 theta^T H theta - g^T theta + const, float64, exact.

    H = prior_precision I + w sum_i mask_i A_i and g = w sum_i mask_i b_i, where w is the
    model's ``likelihood_weight``. Raises ``TypeError`` for a model whose potential is not a
    known quadratic (build it with :func:`bayesian_linear_regression` or
    :func:`gaussian_mean`).
    """
    if not isinstance(model, QuadraticModel) or model.record_quadratic is None:
        raise TypeError(
            f"model {getattr(model, 'name', model)!r} has no closed-form quadratic potential; "
            "quadratic_form needs a QuadraticModel (bayesian_linear_regression or gaussian_mean)"
        )
    model.check_dataset(dataset)
    a, b = model.record_quadratic(_float64_fields(dataset))
    mask = np.asarray(dataset.mask, dtype=np.float64)
    w = float(model.likelihood_weight)
    hessian = model.prior_precision * np.eye(model.dim) + w * np.einsum("n,nij->ij", mask, a)
    linear = w * np.einsum("n,ni->i", mask, b)
    return hessian, linear


def gaussian_posterior(model: Model, dataset: Dataset) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance of exp(-U_D) = N(H^{-1} g, H^{-1}), float64.

    Raises ``ValueError`` when H is not positive definite (e.g. a flat prior with too few
    records), in which case the posterior is improper.
    """
    hessian, linear = quadratic_form(model, dataset)
    try:
        chol = np.linalg.cholesky(hessian)
    except np.linalg.LinAlgError:
        raise ValueError(
            f"the potential's Hessian has smallest eigenvalue {np.linalg.eigvalsh(hessian)[0]:.3g}; "
            "it must be positive definite for a proper posterior (raise prior_precision or add records)"
        ) from None
    eye = np.eye(model.dim)
    chol_inv = np.linalg.solve(chol, eye)
    covariance = chol_inv.T @ chol_inv
    mean = covariance @ linear
    return mean, covariance

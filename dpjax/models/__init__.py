"""Models: a per-record log-likelihood plus a log-prior (see :mod:`dpjax.models.base`).

Built in: :func:`bayesian_linear_regression`, :func:`logistic_regression`,
:func:`gaussian_mean` (Gibbs posterior), the neural-network classifier
:func:`mlp_classifier`, the numpyro adapter :func:`from_numpyro`, and the
exact quadratic form / Gaussian posterior of the quadratic models, and paper 003's
Huber-contaminated likelihoods (:class:`ContaminationModel`).
"""
from .base import Model
from .contamination import ContaminationModel, logistic_regression_contamination, truncated_normal_mean_contamination
from .contamination_regression import cauchy_regression_contamination, linear_regression_contamination
from .gaussian_mean import gaussian_mean, gaussian_mean_dataset, gaussian_mean_posterior
from .linear_regression import bayesian_linear_regression, linear_regression_posterior, regression_dataset
from .logistic import logistic_regression, logistic_regression_dataset
from .mlp import mlp_classifier, mlp_classifier_dataset, mlp_dim, mlp_unflatten
from .numpyro_adapter import NumpyroModel, from_numpyro
from .quadratic import QuadraticModel, gaussian_posterior, quadratic_form
from .structure import GLM, check_glm, glm_of

__all__ = [
    "Model",
    "QuadraticModel",
    "GLM",
    "glm_of",
    "check_glm",
    "ContaminationModel",
    "truncated_normal_mean_contamination",
    "logistic_regression_contamination",
    "linear_regression_contamination",
    "cauchy_regression_contamination",
    "NumpyroModel",
    "bayesian_linear_regression",
    "logistic_regression",
    "mlp_classifier",
    "gaussian_mean",
    "from_numpyro",
    "quadratic_form",
    "gaussian_posterior",
    "linear_regression_posterior",
    "gaussian_mean_posterior",
    "regression_dataset",
    "logistic_regression_dataset",
    "mlp_classifier_dataset",
    "mlp_dim",
    "mlp_unflatten",
    "gaussian_mean_dataset",
]

"""Mechanisms: the privacy of one noisy release.

Each module bounds a single use of one mechanism, exactly where a closed form exists: the
Gaussian mechanism and its Poisson-subsampled form in Rényi DP (:mod:`.gaussian`), the Laplace
mechanism at every order and as an exact privacy profile (:mod:`.laplace`), exact divergences
between two Gaussian laws (:mod:`.gaussian_divergence`: KL, Rényi, hockey-stick, the analytic
Gaussian mechanism) and between a Gaussian and a Gaussian mixture (:mod:`.mixture`), and total
variation between Gaussians (:mod:`.gaussian_tv`, a module: its function has the same name). Composition over many steps is in
:mod:`dpjax.accountants.composition`.
"""
from . import gaussian, gaussian_divergence, gaussian_tv, laplace, mixture
from .gaussian import gaussian_rdp, subsampled_gaussian_rdp
from .gaussian_divergence import (
    analytic_gaussian_delta,
    analytic_gaussian_epsilon,
    gaussian_epsilon,
    gaussian_hockey_stick,
    gaussian_kl,
    gaussian_renyi,
)
from .laplace import laplace_curve, laplace_delta, laplace_rdp
from .mixture import GaussianMixture1D, equal_weight_mixture, mixture_epsilon, mixture_hockey_stick, mixture_renyi

__all__ = [
    "gaussian",
    "gaussian_divergence",
    "gaussian_tv",
    "laplace",
    "mixture",
    "gaussian_rdp",
    "subsampled_gaussian_rdp",
    "analytic_gaussian_delta",
    "analytic_gaussian_epsilon",
    "gaussian_epsilon",
    "gaussian_hockey_stick",
    "gaussian_kl",
    "gaussian_renyi",
    "laplace_curve",
    "laplace_delta",
    "laplace_rdp",
    "GaussianMixture1D",
    "equal_weight_mixture",
    "mixture_epsilon",
    "mixture_hockey_stick",
    "mixture_renyi",
]

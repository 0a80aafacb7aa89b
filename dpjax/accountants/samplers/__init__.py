"""Bounds for samplers: the privacy of a Langevin-type chain, its whole path or its last iterate.

Upper bounds from Girsanov's theorem for ULA and SGLD, path and last iterate (:mod:`.girsanov`,
paper 001 §4–5); exact laws where the chain is Gaussian: ULA/SGLD on quadratic potentials
(:mod:`.exact`) and cyclic SGLD at epoch ends on paper 000's pair (:mod:`.cyclic_sgld`);
Langevin Monte Carlo towards a Gibbs posterior with Dalalyan's schedule (:mod:`.lmc`, paper 002
App. D.2); and the laws of one-dimensional chains (including MALA) by quadrature on a grid
(:mod:`.markov_grid`). These are the values the coupled chains' empirical lower bounds are
checked against. The released last iterate of noisy (projected) GD / SGLD on convex smooth
losses: the shifted-interpolation bound (:mod:`.shifted_interpolation`, Bok, Su & Altschuler
2024), its Poisson-subsampled form (:mod:`.subsampled_interpolation`), the Rényi bounds of
Chourasia, Ye & Shokri 2021 (:mod:`.chourasia_ye_shokri`) and Ye & Shokri 2022 for shuffled
batches (:mod:`.ye_shokri`) beside composition, behind :func:`last_iterate_curve` and, from a dpjax run (model, pair,
sampler; :mod:`.sampler_constants`), :func:`sampler_last_iterate_curve` (:mod:`.last_iterate`).
"""
from . import (chourasia_ye_shokri, cyclic_sgld, exact, girsanov, last_iterate, lmc, markov_grid, sampler_constants,
               shifted_interpolation, subsampled_interpolation, ye_shokri)
from .cyclic_sgld import epoch_end_epsilon, epoch_end_profile, epoch_end_renyi
from .exact import exact_last_iterate_curve, exact_last_iterate_epsilon, exact_path_curve
from .girsanov import girsanov_curve, girsanov_epsilon, girsanov_rdp
from .last_iterate import ConstantsUnavailable, LastIterateGDP, last_iterate_curve, last_iterate_gdp_mu, sampler_last_iterate_curve
from .lmc import lmc_privacy_delta

__all__ = [
    "chourasia_ye_shokri",
    "cyclic_sgld",
    "exact",
    "girsanov",
    "last_iterate",
    "lmc",
    "markov_grid",
    "sampler_constants",
    "shifted_interpolation",
    "subsampled_interpolation",
    "ye_shokri",
    "epoch_end_epsilon",
    "epoch_end_profile",
    "epoch_end_renyi",
    "exact_last_iterate_curve",
    "exact_last_iterate_epsilon",
    "exact_path_curve",
    "girsanov_curve",
    "girsanov_epsilon",
    "girsanov_rdp",
    "lmc_privacy_delta",
    "ConstantsUnavailable",
    "last_iterate_curve",
    "last_iterate_gdp_mu",
    "LastIterateGDP",
    "sampler_last_iterate_curve",
]

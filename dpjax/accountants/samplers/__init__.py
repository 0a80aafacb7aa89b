"""Bounds for samplers: the privacy of a Langevin-type chain, its whole path or its last iterate.

Upper bounds from Girsanov's theorem for ULA and SGLD, path and last iterate (:mod:`.girsanov`,
paper 001 §4–5); exact laws where the chain is Gaussian: ULA/SGLD on quadratic potentials
(:mod:`.exact`) and cyclic SGLD at epoch ends on paper 000's pair (:mod:`.cyclic_sgld`);
Langevin Monte Carlo towards a Gibbs posterior with Dalalyan's schedule (:mod:`.lmc`, paper 002
App. D.2); and the laws of one-dimensional chains (including MALA) by quadrature on a grid
(:mod:`.markov_grid`). These are the values the coupled chains' empirical lower bounds are
checked against.
"""
from . import cyclic_sgld, exact, girsanov, lmc, markov_grid
from .cyclic_sgld import epoch_end_epsilon, epoch_end_profile, epoch_end_renyi
from .exact import exact_last_iterate_curve, exact_last_iterate_epsilon, exact_path_curve
from .girsanov import girsanov_curve, girsanov_epsilon, girsanov_rdp
from .lmc import lmc_privacy_delta

__all__ = [
    "cyclic_sgld",
    "exact",
    "girsanov",
    "lmc",
    "markov_grid",
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
]

"""Composition: the privacy of many noisy steps, such as a run of noisy SGD.

Two accountants for T steps of a (subsampled) Gaussian or Laplace mechanism, both returning a
:class:`~dpjax.accountants.curve.PrivacyCurve`: Rényi-DP composition (:mod:`.rdp`,
:func:`noisy_sgd_curve`, also the mapping from a Langevin sampler's step size and temperature
to a noise multiplier), and privacy-loss distributions composed by FFT (:mod:`.pld_accountant`,
:func:`pld_curve`: tight up to a reported discretisation error). The PLD machinery is split by
concept: the discrete PLD on a grid (:mod:`.pld`), the dominating pair of one step
(:mod:`.pld_pairs`), and the pessimistic/optimistic bracket a curve holds (:mod:`.pld_bracket`).
"""
from . import pld, pld_accountant, pld_bracket, pld_pairs, rdp
from .pld import DiscretePLD
from .pld_accountant import pld_curve, pld_epsilons, pld_sequence_curve
from .pld_bracket import PLDBracket, PLDEpsilons, compose_plds
from .rdp import DEFAULT_ORDERS, langevin_noise_multiplier, noisy_sgd_curve

__all__ = [
    "pld",
    "pld_accountant",
    "pld_bracket",
    "pld_pairs",
    "rdp",
    "DiscretePLD",
    "PLDBracket",
    "PLDEpsilons",
    "compose_plds",
    "pld_curve",
    "pld_epsilons",
    "pld_sequence_curve",
    "DEFAULT_ORDERS",
    "langevin_noise_multiplier",
    "noisy_sgd_curve",
]

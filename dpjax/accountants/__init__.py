"""Accountants: upper bounds on privacy, each returned as a :class:`PrivacyCurve`.

The package is grouped by what a bound is about. Here at the top: the curve itself and its
algebra — :mod:`.curve` (:class:`PrivacyCurve`, :class:`Provenance`), :mod:`.conversions`
(Rényi DP and zCDP to (eps, delta)), :mod:`.fdp` (trade-off functions and Gaussian-DP
summaries), :mod:`.group` (group privacy) and :mod:`.calibration` (the noise, steps or sampling
rate that meet a target). Then four groups: :mod:`.mechanisms` (one noisy release: Gaussian,
Laplace, mixtures, exact divergences), :mod:`.composition` (many steps: RDP and PLD accountants
for noisy SGD), :mod:`.samplers` (Langevin-type chains: Girsanov path and last-iterate bounds,
exact laws) and :mod:`.posterior` (one draw from a posterior: Gaussian, Gibbs, exponential
families, GLMs). The names below are the entry points most users reach for first; everything
else is one import away in its group.
"""
import importlib
from typing import TYPE_CHECKING, Any

from .. import _moved

# Every name below is imported on first use (PEP 562): ``import dpjax.accountants`` costs
# milliseconds, not JAX's and scipy's start-up (2.4 s on the 2-core CPU before issue 38; the
# PLD accountant alone pulls in JAX). public name -> the module that defines it
_PUBLIC = {
    **dict.fromkeys(("Calibration", "calibrate_noise_multiplier", "calibrate_sampling_rate", "calibrate_steps"),
                    "dpjax.accountants.calibration"),
    **dict.fromkeys(("DEFAULT_ORDERS", "langevin_noise_multiplier", "noisy_sgd_curve"), "dpjax.accountants.composition.rdp"),
    "DiscretePLD": "dpjax.accountants.composition.pld",
    **dict.fromkeys(("PLDBracket", "PLDEpsilons"), "dpjax.accountants.composition.pld_bracket"),
    **dict.fromkeys(("pld_curve", "pld_epsilons", "pld_sequence_curve"), "dpjax.accountants.composition.pld_accountant"),
    **dict.fromkeys(("rdp_to_delta", "rdp_to_epsilon", "rdp_to_epsilon_per_order", "tv_corrected_delta", "zcdp_rdp",
                     "zcdp_to_epsilon"), "dpjax.accountants.conversions"),
    **dict.fromkeys(("PrivacyCurve", "Provenance"), "dpjax.accountants.curve"),
    **dict.fromkeys(("GDPSummary", "gdp_delta", "gdp_tradeoff"), "dpjax.accountants.fdp"),
    **dict.fromkeys(("analytic_gaussian_epsilon", "gaussian_epsilon", "gaussian_rdp", "gaussian_renyi", "laplace_curve",
                     "laplace_delta", "laplace_rdp", "subsampled_gaussian_rdp"), "dpjax.accountants.mechanisms"),
    **dict.fromkeys(("exact_last_iterate_curve", "exact_last_iterate_epsilon", "exact_path_curve", "ConstantsUnavailable",
                     "LastIterateGDP", "last_iterate_curve", "last_iterate_gdp_mu", "sampler_last_iterate_curve"),
                    "dpjax.accountants.samplers"),
}
_SUBMODULES = ("calibration", "conversions", "curve", "fdp", "group", "mechanisms", "composition", "samplers", "posterior")

if TYPE_CHECKING:  # what static tools see; at run time these come from __getattr__
    from . import calibration, composition, conversions, curve, fdp, group, mechanisms, posterior, samplers
    from .calibration import Calibration, calibrate_noise_multiplier, calibrate_sampling_rate, calibrate_steps
    from .composition import (
        DEFAULT_ORDERS,
        DiscretePLD,
        PLDBracket,
        PLDEpsilons,
        langevin_noise_multiplier,
        noisy_sgd_curve,
        pld_curve,
        pld_epsilons,
        pld_sequence_curve,
    )
    from .conversions import (
        rdp_to_delta,
        rdp_to_epsilon,
        rdp_to_epsilon_per_order,
        tv_corrected_delta,
        zcdp_rdp,
        zcdp_to_epsilon,
    )
    from .curve import PrivacyCurve, Provenance
    from .fdp import GDPSummary, gdp_delta, gdp_tradeoff
    from .mechanisms import (
        analytic_gaussian_epsilon,
        gaussian_epsilon,
        gaussian_rdp,
        gaussian_renyi,
        laplace_curve,
        laplace_delta,
        laplace_rdp,
        subsampled_gaussian_rdp,
    )
    from .samplers import exact_last_iterate_curve, exact_last_iterate_epsilon, exact_path_curve
    from .samplers import ConstantsUnavailable, LastIterateGDP, last_iterate_curve, last_iterate_gdp_mu, sampler_last_iterate_curve

__all__ = [
    # the curve and its algebra
    "PrivacyCurve",
    "Provenance",
    "rdp_to_epsilon",
    "rdp_to_epsilon_per_order",
    "rdp_to_delta",
    "zcdp_to_epsilon",
    "zcdp_rdp",
    "tv_corrected_delta",
    "GDPSummary",
    "gdp_delta",
    "gdp_tradeoff",
    "Calibration",
    "calibrate_noise_multiplier",
    "calibrate_sampling_rate",
    "calibrate_steps",
    # mechanisms
    "gaussian_rdp",
    "subsampled_gaussian_rdp",
    "analytic_gaussian_epsilon",
    "gaussian_epsilon",
    "gaussian_renyi",
    "laplace_curve",
    "laplace_delta",
    "laplace_rdp",
    # composition
    "DEFAULT_ORDERS",
    "langevin_noise_multiplier",
    "noisy_sgd_curve",
    "DiscretePLD",
    "PLDBracket",
    "PLDEpsilons",
    "pld_curve",
    "pld_epsilons",
    "pld_sequence_curve",
    # samplers
    "exact_last_iterate_curve",
    "exact_last_iterate_epsilon",
    "exact_path_curve",
    "last_iterate_curve",
    "last_iterate_gdp_mu",
    "LastIterateGDP",
    "sampler_last_iterate_curve",
    "ConstantsUnavailable",
    # modules and groups
    "calibration",
    "conversions",
    "curve",
    "fdp",
    "group",
    "mechanisms",
    "composition",
    "samplers",
    "posterior",
]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        # modules that lived here before the grouping (dpjax.accountants.girsanov, ...): one
        # DeprecationWarning naming the new path, then the module itself
        return _moved.old_attribute(__name__, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC) | set(_SUBMODULES))

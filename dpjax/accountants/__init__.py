"""Accountants: every one returns a :class:`~dpjax.accountants.curve.PrivacyCurve`."""
from .conversions import (
    rdp_to_delta,
    rdp_to_epsilon,
    rdp_to_epsilon_per_order,
    tv_corrected_delta,
    zcdp_rdp,
    zcdp_to_epsilon,
)
from .curve import PrivacyCurve, Provenance
from .gaussian import gaussian_rdp, subsampled_gaussian_rdp
from .noisy_sgd import DEFAULT_ORDERS, langevin_noise_multiplier, noisy_sgd_curve
from .pld import DiscretePLD
from .pld_accountant import PLDBracket, pld_curve, pld_epsilons, pld_sequence_curve

__all__ = [
    "PrivacyCurve",
    "Provenance",
    "rdp_to_epsilon",
    "rdp_to_epsilon_per_order",
    "rdp_to_delta",
    "zcdp_to_epsilon",
    "zcdp_rdp",
    "tv_corrected_delta",
    "gaussian_rdp",
    "subsampled_gaussian_rdp",
    "DEFAULT_ORDERS",
    "langevin_noise_multiplier",
    "noisy_sgd_curve",
    "DiscretePLD",
    "PLDBracket",
    "pld_curve",
    "pld_epsilons",
    "pld_sequence_curve",
]

# Theorem-by-theorem accountants live in their own modules (one concept each); import them
# as submodules: dpjax.accountants.girsanov.thm52_ula_last_iterate(...), etc.
from . import cyclic_sgld, exact, expfam, gaussian_divergence, gibbs, girsanov, mixture, posterior  # noqa: E402
from . import contamination  # noqa: E402  (paper 003's closed forms: Theorem 4, Lemma 14, Theorem 5)
from .exact import exact_last_iterate_curve, exact_last_iterate_epsilon, exact_path_curve  # noqa: E402
from .gaussian_divergence import analytic_gaussian_epsilon, gaussian_epsilon, gaussian_renyi  # noqa: E402

__all__ += [
    "contamination",
    "cyclic_sgld",
    "exact",
    "expfam",
    "gaussian_divergence",
    "gibbs",
    "girsanov",
    "mixture",
    "posterior",
    "exact_last_iterate_curve",
    "exact_last_iterate_epsilon",
    "exact_path_curve",
    "analytic_gaussian_epsilon",
    "gaussian_epsilon",
    "gaussian_renyi",
]

# f-DP trade-offs and GDP summaries, calibration, group privacy, the Laplace mechanism (issue 13)
from . import calibration, fdp, group, laplace  # noqa: E402
from .calibration import Calibration, calibrate_noise_multiplier, calibrate_sampling_rate, calibrate_steps  # noqa: E402
from .fdp import GDPSummary, gdp_delta, gdp_tradeoff  # noqa: E402
from .laplace import laplace_curve, laplace_delta, laplace_rdp  # noqa: E402

__all__ += [
    "calibration",
    "fdp",
    "group",
    "laplace",
    "Calibration",
    "calibrate_noise_multiplier",
    "calibrate_sampling_rate",
    "calibrate_steps",
    "GDPSummary",
    "gdp_delta",
    "gdp_tradeoff",
    "laplace_curve",
    "laplace_delta",
    "laplace_rdp",
]

# the released last iterate (issue 22): hidden-state bounds beside path composition
from . import last_iterate, sampler_constants, shifted_interpolation  # noqa: E402
from .last_iterate import ConstantsUnavailable, last_iterate_curve, last_iterate_gdp_mu, sampler_last_iterate_curve  # noqa: E402

__all__ += [
    "last_iterate",
    "sampler_constants",
    "shifted_interpolation",
    "ConstantsUnavailable",
    "last_iterate_curve",
    "last_iterate_gdp_mu",
    "sampler_last_iterate_curve",
]

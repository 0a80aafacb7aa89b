"""Accountants: every one returns a :class:`~dpjax.accountants.curve.PrivacyCurve`."""
from .conversions import rdp_to_delta, rdp_to_epsilon, tv_corrected_delta, zcdp_to_epsilon
from .curve import PrivacyCurve, Provenance

__all__ = [
    "PrivacyCurve",
    "Provenance",
    "rdp_to_epsilon",
    "rdp_to_delta",
    "zcdp_to_epsilon",
    "tv_corrected_delta",
]

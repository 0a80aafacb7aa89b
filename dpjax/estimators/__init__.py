"""Empirical privacy-loss estimators from samples of a mechanism's output on D and D'.

- :func:`epsilon_lower_bound`: a lower confidence bound on eps(delta) (auditing; exact
  Clopper–Pearson limits on a held-out split).
- :func:`epsilon_estimate`, :func:`renyi_estimate`: plug-in point estimates with bootstrap
  intervals (no finite-sample guarantee).
- :func:`privacy_loss_profile`, :class:`PrivacyLossAccumulator`: delta(eps) and RDP from
  samples of a known privacy loss, streamed over chunks.
- :func:`contamination_epsilon`: paper 003's Algorithm 1 (random DP under Huber contamination).
"""
from .contamination import ContaminationEstimate, contamination_epsilon
from .lower_bound import LowerBoundResult, epsilon_lower_bound, oracle_lower_bound, resolution_ceiling
from .path_loss import PrivacyLossAccumulator, PrivacyLossEstimate, privacy_loss_profile
from .plugin import EpsilonEstimate, epsilon_estimate
from .renyi import RenyiEstimate, renyi_estimate

__all__ = [
    "ContaminationEstimate",
    "contamination_epsilon",
    "EpsilonEstimate",
    "LowerBoundResult",
    "PrivacyLossAccumulator",
    "PrivacyLossEstimate",
    "RenyiEstimate",
    "epsilon_estimate",
    "epsilon_lower_bound",
    "oracle_lower_bound",
    "privacy_loss_profile",
    "renyi_estimate",
    "resolution_ceiling",
]

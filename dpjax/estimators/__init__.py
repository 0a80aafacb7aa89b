"""Empirical privacy-loss estimators from samples of a mechanism's output on D and D'.

Certified (exact finite-sample guarantees; counted in row chunks, so 1e8 device samples never
leave the device whole):

- :func:`epsilon_lower_bound`: a lower confidence bound on eps(delta) (auditing; exact
  Clopper–Pearson limits on a held-out split).
- :func:`tradeoff_upper_bound`: a confidence band on the whole trade-off curve (upper bounds on
  beta(alpha), valid simultaneously).
- :func:`rdp_lower_bound`: lower confidence limits on the RDP at several orders, valid together.

Fits (an assumption traded for power; never certified):

- :func:`gdp_lower_bound`: a lower confidence limit on the GDP parameter mu, and the eps(delta)
  it implies if the pair's trade-off is Gaussian.

Estimates (no finite-sample guarantee) and known privacy losses:

- :func:`epsilon_estimate`, :func:`renyi_estimate`: plug-in point estimates with bootstrap
  intervals.
- :func:`privacy_loss_profile`, :class:`PrivacyLossAccumulator`: delta(eps) and RDP from
  samples of a known privacy loss, streamed over chunks.
- :func:`contamination_epsilon`: paper 003's Algorithm 1 (random DP under Huber contamination).

Planning: :func:`pairs_needed` (how many chain pairs an audit needs).

Every estimator refuses a confidence below 1/2.
"""
from .contamination import ContaminationEstimate, contamination_epsilon
from .gdp import GDPLowerBound, gdp_lower_bound
from .lower_bound import (
    LowerBoundResult,
    RDPLowerBound,
    epsilon_lower_bound,
    oracle_lower_bound,
    rdp_lower_bound,
    renyi_lower_bounds,
    resolution_ceiling,
)
from .path_loss import PrivacyLossAccumulator, PrivacyLossEstimate, privacy_loss_profile
from .planning import PairsPlan, expected_certified_bound, pairs_needed
from .plugin import EpsilonEstimate, epsilon_estimate
from .renyi import RenyiEstimate, renyi_estimate
from .tradeoff import TradeoffBand, tradeoff_upper_bound

__all__ = [
    "ContaminationEstimate",
    "contamination_epsilon",
    "EpsilonEstimate",
    "GDPLowerBound",
    "LowerBoundResult",
    "PairsPlan",
    "PrivacyLossAccumulator",
    "PrivacyLossEstimate",
    "RDPLowerBound",
    "RenyiEstimate",
    "TradeoffBand",
    "epsilon_estimate",
    "epsilon_lower_bound",
    "expected_certified_bound",
    "gdp_lower_bound",
    "oracle_lower_bound",
    "pairs_needed",
    "privacy_loss_profile",
    "rdp_lower_bound",
    "renyi_estimate",
    "renyi_lower_bounds",
    "resolution_ceiling",
    "tradeoff_upper_bound",
]

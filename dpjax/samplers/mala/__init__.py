"""MALA (Metropolis-adjusted Langevin), in one place, for two jobs.

- :mod:`.coupled` — MALA and the exact AR(1) kernel run as synchronously coupled chain pairs on
  neighbouring datasets (:func:`run_metropolis_pair`), for privacy lower bounds of pi-invariant
  samplers (paper 001 §3).
- :mod:`.preconditioned` — preconditioned MALA for many posteriors at once, with dual-averaging
  step sizes and split R-hat / ESS diagnostics (:func:`mala_sample`), to draw the samples that a
  posterior-sampling mechanism releases (paper 004's utility experiments).
"""
from . import coupled, preconditioned
from .coupled import MALA, ExactAR1, MetropolisPairResult, ar1_step, exact_ar1, mala, mala_step, run_metropolis_pair
from .preconditioned import TARGET_ACCEPTANCE, ChainDiagnostics, MalaResult, chain_diagnostics, mala_sample

__all__ = [
    "coupled",
    "preconditioned",
    "MALA",
    "ExactAR1",
    "MetropolisPairResult",
    "ar1_step",
    "exact_ar1",
    "mala",
    "mala_step",
    "run_metropolis_pair",
    "TARGET_ACCEPTANCE",
    "ChainDiagnostics",
    "MalaResult",
    "chain_diagnostics",
    "mala_sample",
]

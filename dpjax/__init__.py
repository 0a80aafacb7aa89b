"""dpjax: measure how much privacy Langevin-type samplers leak.

Coupled chains on neighbouring datasets, pluggable accountants (one privacy-curve type),
and empirical divergence estimates with honest confidence.
"""
from __future__ import annotations

from . import _moved

_moved.install()  # old module paths (before issue 25's reorganisation) keep working for one release

from .data import Dataset, NeighbouringPair, add_remove, make_dataset, make_pair, replace_one
from .models.base import Model
from .accountants.curve import PrivacyCurve, Provenance
from .coupled import CoupledResult, run_coupled

__version__ = "0.1.0"

__all__ = [
    "Dataset",
    "NeighbouringPair",
    "make_dataset",
    "make_pair",
    "replace_one",
    "add_remove",
    "Model",
    "PrivacyCurve",
    "Provenance",
    "run_coupled",
    "CoupledResult",
]

"""dpjax: measure how much privacy Langevin-type samplers leak.

Coupled chains on neighbouring datasets, pluggable accountants (one privacy-curve type),
and empirical divergence estimates with honest confidence.

The public names below are imported on first use (PEP 562): ``import dpjax`` and
``dpjax --help`` do not pay JAX's start-up (seconds on a loaded machine). Importing dpjax also
turns on JAX's persistent compilation cache for the process once JAX loads (see
:mod:`dpjax._compilation_cache`; off with ``DPJAX_NO_COMPILATION_CACHE=1``).
"""
from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

from . import _compilation_cache, _moved

_moved.install()  # old module paths (before issue 25's reorganisation) keep working for one release

__version__ = "0.1.0"

# public name -> the module that defines it
_PUBLIC = {
    "Dataset": "dpjax.data",
    "NeighbouringPair": "dpjax.data",
    "make_dataset": "dpjax.data",
    "make_pair": "dpjax.data",
    "replace_one": "dpjax.data",
    "add_remove": "dpjax.data",
    "Model": "dpjax.models.base",
    "PrivacyCurve": "dpjax.accountants.curve",
    "Provenance": "dpjax.accountants.curve",
    "run_coupled": "dpjax.coupled",
    "CoupledResult": "dpjax.coupled",
}

__all__ = list(_PUBLIC)


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
    elif not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        # a subpackage (dpjax.accountants, dpjax.samplers, ...): `import dpjax` used to load
        # several of them, and code reaching them as attributes keeps working
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))


if TYPE_CHECKING:  # what static tools see; at run time these come from __getattr__
    from .accountants.curve import PrivacyCurve, Provenance
    from .coupled import CoupledResult, run_coupled
    from .data import Dataset, NeighbouringPair, add_remove, make_dataset, make_pair, replace_one
    from .models.base import Model

_compilation_cache.install()

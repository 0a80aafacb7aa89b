"""One API convention for the accountants (docs/guide/conventions.md).

* Argument order: the mechanism's parameters first (noise, sampling rate, step size, ...),
  the number of steps last, options by keyword: ``pld_curve(noise_multiplier, sampling_rate,
  steps)``, ``noisy_sgd_curve(noise_multiplier, sampling_rate, steps)``,
  ``last_iterate_curve(step_size, noise_std, steps, ...)``; a calibration names its target
  first (``target_epsilon, delta``), then the fixed parameters in the same order.
* Names: ``noise_multiplier``, ``sampling_rate``, ``steps``, ``delta``, ``target_epsilon``.
* Adjacency: ``"add-remove"`` or ``"replace-one"`` (the spelling :mod:`dpjax.data` uses), the
  same in arguments and in printed provenance; sampling: ``"poisson"`` or
  ``"without-replacement"``.

The spellings of the previous release (``"add_remove"``, ``"replace_one"``,
``"without_replacement"``, ``"fixed-batch"``, ``"fixed_batch"``, ``num_steps=``) keep working
for one release, each with a ``DeprecationWarning`` naming the new form.
"""
from __future__ import annotations

import os
import sys
import warnings
from typing import Any

from .. import _validate

ADJACENCIES = ("add-remove", "replace-one")
SAMPLINGS = ("poisson", "without-replacement")
DEPRECATED_ADJACENCIES = {"add_remove": "add-remove", "replace_one": "replace-one"}
DEPRECATED_SAMPLINGS = {"without_replacement": "without-replacement", "fixed-batch": "without-replacement",
                        "fixed_batch": "without-replacement"}
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _outside_dpjax() -> int:
    """The stacklevel of the first caller outside the dpjax package (the user's line)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def deprecated(old: str, new: str) -> None:
    """One DeprecationWarning: ``old`` still works for this release; ``new`` is the spelling."""
    warnings.warn(f"{old} is deprecated and will stop working in the next release; write {new} "
                  "(dpjax's one convention: docs/guide/conventions.md)", DeprecationWarning, stacklevel=_outside_dpjax())


def _spelling(name: str, value: Any, accepted: tuple, deprecated_forms: dict) -> str:
    if isinstance(value, str) and value in deprecated_forms:
        deprecated(f"{name}={value!r}", f"{name}={deprecated_forms[value]!r}")
        return deprecated_forms[value]
    if not (isinstance(value, str) and value in accepted):
        raise ValueError(f"{name}={_validate._fmt(value)} is not one of {list(accepted)}")
    return value


def adjacency(value: Any, name: str = "adjacency") -> str:
    """``value`` as "add-remove" or "replace-one"; the underscore spellings with a
    DeprecationWarning; anything else a ValueError naming the argument, the value and the rule."""
    return _spelling(name, value, ADJACENCIES, DEPRECATED_ADJACENCIES)


def sampling(value: Any, name: str = "sampling") -> str:
    """``value`` as "poisson" or "without-replacement" (older spellings with a DeprecationWarning)."""
    return _spelling(name, value, SAMPLINGS, DEPRECATED_SAMPLINGS)

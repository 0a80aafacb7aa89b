"""Samplers as pure (init, step) kernels: ULA, SGLD / noisy SGD, cyclic SGLD.

All three are :class:`LangevinSampler` configurations (see :mod:`.kernel` for the update,
the two parameterisations and the randomness layout; :mod:`.batching` for the schemes).
"""
from __future__ import annotations

import warnings

from typing import Optional, Union

from .batching import (
    ORDER_FAMILIES,
    SCHEMES,
    Batch,
    BatchingScheme,
    Cyclic,
    FullBatch,
    Poisson,
    Reshuffle,
    UniformWithReplacement,
    WithoutReplacement,
    make_batching,
)
from .kernel import PARAMETERISATIONS, ChainKeys, LangevinSampler, SamplerState, StepInfo, StepSize
from . import permutation
from .. import _validate

__all__ = [
    "ula",
    "sgld",
    "cyclic_sgld",
    "LangevinSampler",
    "SamplerState",
    "StepInfo",
    "ChainKeys",
    "Batch",
    "BatchingScheme",
    "FullBatch",
    "UniformWithReplacement",
    "WithoutReplacement",
    "Poisson",
    "Reshuffle",
    "Cyclic",
    "ORDER_FAMILIES",
    "make_batching",
    "SCHEMES",
    "PARAMETERISATIONS",
    "permutation",
]


def ula(step_size: StepSize, *, temperature: float = 1.0, parameterisation: str = "euler", clip_norm: Optional[float] = None) -> LangevinSampler:
    """Unadjusted Langevin algorithm: full-batch gradients (paper 001, Euler form by default).

    ``parameterisation="euler"``: x' = x - gamma grad U(x) + sqrt(2 gamma T) z, step_size = gamma.
    ``"welling-teh"``: theta' = theta - (eta/2) grad U + sqrt(eta T) xi, step_size = eta (gamma = eta/2).
    """
    return LangevinSampler(step_size, FullBatch(), temperature, clip_norm, parameterisation, "ula")


_MAX_BATCH = 2**31 - 1  # record indices are int32 on the device


def _check_batch_size(batch_size) -> None:
    """A batch size beyond any data set the device can index (10**30 was accepted, issue 38)."""
    if _validate._is_integer(batch_size) and int(batch_size) > _MAX_BATCH:
        raise ValueError(f"batch_size={int(batch_size)} violates batch_size <= 2**31 - 1 (record indices are int32 on the device)")


def sgld(
    step_size: StepSize,
    *,
    batching: Union[str, BatchingScheme] = "uniform",
    batch_size: Optional[int] = None,
    sampling_rate: Optional[float] = None,
    temperature: float = 1.0,
    parameterisation: str = "welling-teh",
    clip_norm: Optional[float] = None,
    rate: Optional[float] = None,
) -> LangevinSampler:
    """SGLD / noisy SGD with any batching scheme (Welling–Teh form by default, paper 000 eq. 3).

    ``batching`` is a scheme name (:data:`SCHEMES`) with ``batch_size`` / ``sampling_rate``
    (the Poisson inclusion probability, the accountants' ``sampling_rate``; the previous
    release's ``rate=`` still works, with a DeprecationWarning), or a
    :class:`BatchingScheme`. ``"welling-teh"``: theta' = theta - (eta/2) grad U_hat + sqrt(eta T) xi;
    ``"euler"`` (paper 001 eq. 31): x' = x - gamma grad U_hat + sqrt(2 gamma / beta) z, beta = 1/T.
    """
    _check_batch_size(batch_size)
    if rate is not None:  # one name per quantity (issue 38): the accountants' sampling_rate
        if sampling_rate is not None:
            raise ValueError(f"pass sampling_rate={_validate._fmt(sampling_rate)} or the deprecated rate={_validate._fmt(rate)}, "
                             "not both")
        warnings.warn("sgld(rate=...) is deprecated: use sampling_rate=... (the name the accountants use); rate= stops "
                      "working in the next release", DeprecationWarning, stacklevel=2)
        sampling_rate = rate
    if sampling_rate is not None:
        _validate.in_range("sampling_rate", sampling_rate, 0.0, 1.0, low_open=True)
    rate = sampling_rate
    if isinstance(batching, str):
        batching = make_batching(batching, batch_size=batch_size, rate=rate)
    elif not isinstance(batching, BatchingScheme):
        raise _validate.ArgumentKindError(f"batching={batching!r} must be a scheme name from {sorted(SCHEMES)} or a BatchingScheme")
    elif batch_size is not None or rate is not None:
        raise ValueError("pass batch_size / sampling_rate only with a scheme name, not with a BatchingScheme instance")
    return LangevinSampler(step_size, batching, temperature, clip_norm, parameterisation, "sgld")


def cyclic_sgld(
    step_size: StepSize,
    *,
    batch_size: int = 1,
    order=None,
    order_family: str = "affine",
    temperature: float = 1.0,
    parameterisation: str = "welling-teh",
    clip_norm: Optional[float] = None,
) -> LangevinSampler:
    """Cyclic SGLD (paper 000): one order per chain, used epoch after epoch; b = 1 by default.

    ``order=None`` gives each chain its own keyed random order of the family ``order_family``
    (``"affine"``: exactly uniform position of every record, O(1) per step; ``"swap-or-not"``:
    closer to a uniform permutation, O(log n) per step; see :mod:`.permutation`); an explicit
    permutation of 0..n-1 fixes the same order for every chain.
    """
    if batch_size is None:
        raise _validate.ArgumentKindError("batch_size=None violates batch_size a positive integer (1 by default)")
    _check_batch_size(batch_size)
    batching = make_batching("cyclic", batch_size=batch_size, order=order, order_family=order_family)
    return LangevinSampler(step_size, batching, temperature, clip_norm, parameterisation, "cyclic-sgld")

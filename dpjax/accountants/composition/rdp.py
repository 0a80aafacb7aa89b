"""RDP accounting for noisy SGD / DP-SGD-style runs of a Langevin sampler with clipped gradients.

The sampler (paper 001 eq. 31, with per-record clipping added; Welling–Teh SGLD is the case
below with gradient_scale = n / b):

    x_{k+1} = x_k - gamma * g_scale * sum_{i in B_k} clip_C(grad l(x_k, d_i)) + sqrt(2 gamma / beta) z_{k+1},

with clip_C(v) = v min(1, C / |v|), z ~ N(0, I), gamma the step size, beta the inverse
temperature and g_scale a constant that does not depend on the batch (1/s for the mean over
an expected batch size s; n/b for SGLD's unbiased full-data gradient). The batch B_k is a
Poisson sample (each record independently with probability q) or the full data set (q = 1).

One step is a Gaussian mechanism applied to the batch sum. Under add/remove adjacency the
sum changes by one clipped gradient, of norm <= C, so the drift moves by at most
gamma * g_scale * C (under replace-one, by 2 gamma g_scale C). Given x_k, the next iterate is
N(x_k - drift, (2 gamma / beta) I), so the step is the Gaussian mechanism with

    noise_multiplier = sqrt(2 gamma / beta) / (gamma * g_scale * C * m),   m = 1 (add/remove), 2 (replace-one),

and, with Poisson sampling, the Poisson-subsampled Gaussian mechanism of Mironov, Talwar and
Zhang (2019) at that noise multiplier. Releasing every iterate is an adaptive composition of
T such steps, so the RDP of the whole path is T times the per-step RDP (Mironov 2017,
Prop. 1); the last iterate alone leaks no more (post-processing).

Caveats written into each curve's provenance: g_scale must not depend on the realised batch
size (divide by the expected size); the batch must be a Poisson sample, not a fixed-size
sample without replacement (that needs a different amplification bound; paper 001's A_k are
such subsets, so use q = 1, i.e. no amplification, for them); and subsampled accounting is
for add/remove adjacency only.
"""
from __future__ import annotations

import dataclasses
import inspect
import math

import numpy as np

from ... import _validate
from .. import _convention
from ..curve import PrivacyCurve, Provenance
from ..mechanisms.gaussian import subsampled_gaussian_rdp

ADJACENCIES = _convention.ADJACENCIES
ACCOUNTANTS = ("rdp", "pld")

# dp_accounting's default orders (RdpAccountant): fine fractional grid, integers, powers of two.
DEFAULT_ORDERS = np.array(
    [1.0 + x / 10.0 for x in range(1, 100)] + list(range(11, 64)) + [128, 256, 512, 1024], dtype=np.float64
)


@_validate.arguments(step_size="number", inverse_temperature="number", clip_norm="number", gradient_scale="number")
def langevin_noise_multiplier(
    step_size: float,
    inverse_temperature: float,
    clip_norm: float,
    gradient_scale: float,
    adjacency: str = "add-remove",
) -> float:
    """Noise multiplier of one clipped-gradient Langevin step seen as a Gaussian mechanism.

    sqrt(2 gamma / beta) / (gamma * gradient_scale * clip_norm * m), with m = 1 for add-remove
    and m = 2 for replace-one adjacency (see the module docstring for the derivation).
    """
    gamma = _validate.positive("step_size", step_size)
    beta = _validate.positive("inverse_temperature", inverse_temperature)
    c = _validate.positive("clip_norm", clip_norm)
    g = _validate.positive("gradient_scale", gradient_scale)
    adjacency = _convention.adjacency(adjacency)
    multiplicity = 1.0 if adjacency == "add-remove" else 2.0
    return math.sqrt(2.0 * gamma / beta) / (gamma * g * c * multiplicity)


_MISSING = object()


def _is_count(value) -> bool:
    return _validate._is_integer(value) and int(value) >= 1


def _is_rate(value) -> bool:
    if isinstance(value, (bool, np.bool_, str, bytes)) or value is None:
        return False
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        return False
    return arr.dtype.kind in "iuf" and arr.size > 0 and bool(np.all((arr >= 0) & (arr <= 1)))


def _resolve_order(args: tuple, kwargs: dict) -> tuple:
    """(noise_multiplier, sampling_rate, steps, orders, adjacency, accountant) from a call in
    the convention's order (noise_multiplier, sampling_rate, steps) or, with a
    DeprecationWarning, the previous release's (num_steps, noise_multiplier, sampling_rate=1.0,
    orders, adjacency, accountant), told apart by which reading is valid: the steps are a
    positive integer and a sampling rate lies in [0, 1]. A call both readings accept with
    different meanings is refused (pass keywords)."""
    names = ("noise_multiplier", "sampling_rate", "steps")
    given = dict(zip(names, args[:3]))
    old_keyword = kwargs.pop("num_steps", _MISSING)
    if old_keyword is not _MISSING:
        _convention.deprecated("noisy_sgd_curve(num_steps=...)", "steps=...")
        if "steps" in kwargs or len(args) >= 3:
            raise TypeError("noisy_sgd_curve() got both num_steps= (deprecated) and steps; pass steps alone")
        kwargs["steps"] = _validate.positive_int("num_steps", old_keyword)  # named as passed
        if len(args) < 2:
            kwargs.setdefault("sampling_rate", 1.0)  # the previous release's default
    positional_old = False
    if len(args) > 3 or (len(args) in (2, 3) and "steps" not in kwargs):
        a = args
        reads_old = _is_count(a[0]) and np.ndim(a[0]) == 0 and (len(a) < 3 or _is_rate(a[2]))
        reads_new = len(a) >= 3 and len(a) <= 3 and _is_count(a[2]) and (np.ndim(a[1]) > 0 or _is_rate(a[1]))
        if reads_old and reads_new:
            same = float(a[0]) == float(a[1]) == float(a[2])  # (1, 1, 1): both readings are one configuration
            if not same:
                raise ValueError(
                    f"noisy_sgd_curve{tuple(a)!r} reads both as (noise_multiplier, sampling_rate, steps) and as the deprecated "
                    "(num_steps, noise_multiplier, sampling_rate), with different meanings; pass noise_multiplier=, "
                    "sampling_rate=, steps= by keyword")
        elif reads_old:
            positional_old = True
    if positional_old:
        old_names = ("steps", "noise_multiplier", "sampling_rate", "orders", "adjacency", "accountant")
        if len(args) > len(old_names):
            raise TypeError(f"noisy_sgd_curve() takes at most {len(old_names)} positional arguments in the deprecated order")
        given = dict(zip(old_names, args))
        given["steps"] = _validate.positive_int("num_steps", given["steps"])
        if "sampling_rate" not in kwargs:
            given.setdefault("sampling_rate", 1.0)
        _convention.deprecated("noisy_sgd_curve(num_steps, noise_multiplier, sampling_rate)",
                               "noisy_sgd_curve(noise_multiplier, sampling_rate, steps)")
    elif len(args) > 3:
        raise TypeError(f"noisy_sgd_curve() takes 3 positional arguments (noise_multiplier, sampling_rate, steps) but "
                        f"{len(args)} were given; pass orders=, adjacency=, accountant= by keyword")
    for key, value in given.items():
        if key in kwargs:
            raise TypeError(f"noisy_sgd_curve() got multiple values for argument {key!r}")
        kwargs[key] = value
    missing = [k for k in names if k not in kwargs]
    if missing:
        raise TypeError(f"noisy_sgd_curve() missing required argument(s) {missing}: call it as "
                        "noisy_sgd_curve(noise_multiplier, sampling_rate, steps)")
    return kwargs


def _noisy_sgd_curve_signature(noise_multiplier, sampling_rate, steps: int, *, orders=None, adjacency: str = "add-remove",
                               accountant: str = "rdp", **pld_options) -> PrivacyCurve:
    """What ``help(noisy_sgd_curve)`` shows (the wrapper itself also reads the deprecated order)."""


def noisy_sgd_curve(*args, **kwargs) -> PrivacyCurve:
    """RDP curve of ``steps`` noisy-SGD steps (every iterate released):
    ``noisy_sgd_curve(noise_multiplier, sampling_rate, steps, *, orders=None,
    adjacency="add-remove", accountant="rdp", **pld_options)``.

    ``noise_multiplier``: per-step noise std over the step's sensitivity (use
    :func:`langevin_noise_multiplier` for a Langevin sampler). ``sampling_rate``: Poisson
    sampling probability q (1.0 = full batch). ``noise_multiplier`` and ``sampling_rate``
    broadcast, giving a curve with those batch axes. Full batch allows either adjacency (the
    noise multiplier must then be computed for it); q < 1 requires add-remove with the RDP
    accountant (``accountant="pld"`` handles replace-one).

    ``accountant="pld"`` uses the privacy-loss-distribution accountant instead
    (:func:`dpjax.accountants.pld_curve`, Poisson sampling; ``pld_options`` such as
    ``value_discretization_interval`` pass through): tight up to a stated discretisation error,
    and it also covers replace-one adjacency with q < 1. The default stays "rdp".

    The argument order is the accountants' convention (docs/guide/conventions.md); the previous
    release's ``noisy_sgd_curve(num_steps, noise_multiplier, sampling_rate)`` and ``num_steps=``
    still work for this release, with a DeprecationWarning.
    """
    kwargs = _resolve_order(args, dict(kwargs))
    return _noisy_sgd_curve(**kwargs)



@_validate.arguments(noise_multiplier="numbers", sampling_rate="numbers", steps="int", orders="array?")
def _noisy_sgd_curve(noise_multiplier, sampling_rate, steps, *, orders=None, adjacency: str = "add-remove",
                     accountant: str = "rdp", **pld_options) -> PrivacyCurve:
    steps = _validate.positive_int("steps", steps)
    passed_adjacency, adjacency = adjacency, _convention.adjacency(adjacency)
    _validate.one_of("accountant", accountant, ACCOUNTANTS)
    if accountant == "pld":
        from .pld_accountant import pld_curve

        if orders is not None:
            raise ValueError("orders applies to accountant='rdp' only")
        curve = pld_curve(noise_multiplier, sampling_rate, steps, adjacency=adjacency, sampling="poisson", **pld_options)
        prov = dataclasses.replace(curve.provenance, released="path (every iterate; the last iterate by post-processing)")
        return dataclasses.replace(curve, provenance=prov)
    if pld_options:
        raise TypeError(f"noisy_sgd_curve() got options {sorted(pld_options)} that only accountant='pld' takes")
    return _rdp_curve(noise_multiplier, sampling_rate, steps, orders, adjacency, passed_adjacency)


def _rdp_curve(noise_multiplier, sampling_rate, steps: int, orders, adjacency: str, passed_adjacency=None) -> PrivacyCurve:
    """The RDP accountant's curve for checked ``steps`` and canonical ``adjacency`` (errors
    name ``passed_adjacency``, the spelling the caller used)."""
    orders = DEFAULT_ORDERS if orders is None else np.asarray(orders, dtype=np.float64)
    q = np.asarray(sampling_rate, dtype=np.float64)
    sigma = np.asarray(noise_multiplier, dtype=np.float64)
    if np.any(~((q >= 0) & (q <= 1))):
        raise ValueError(f"sampling_rate={sampling_rate!r} violates 0 <= sampling_rate <= 1")
    if np.any(~((sigma > 0) & np.isfinite(sigma))):
        raise ValueError(f"noise_multiplier={noise_multiplier!r} violates noise_multiplier > 0 (finite)")
    subsampled = bool(np.any(q < 1))
    if subsampled and adjacency != "add-remove":
        raise ValueError(
            f"adjacency={passed_adjacency or adjacency!r} with sampling_rate < 1 is not supported by the RDP accountant: the Poisson-subsampled "
            "Gaussian bound (Mironov, Talwar, Zhang 2019) holds for add-remove adjacency; accountant='pld' handles "
            "replace-one (its mixture-vs-mixture pair)")
    per_step = subsampled_gaussian_rdp(q[..., None], sigma[..., None], orders)
    assumptions = [
        "per-record gradients clipped to norm C; the drift's gradient scale does not depend on the batch",
        "Gaussian noise independent across steps; noise_multiplier = noise std / (step's sensitivity)",
        f"{adjacency} adjacency",
    ]
    if subsampled:
        assumptions.append("batches are Poisson samples (each record independently with probability q)")
        result = "Poisson-subsampled Gaussian mechanism (Mironov, Talwar, Zhang 2019)"
    else:
        assumptions.append("full batch (every record in every step)")
        result = "Gaussian mechanism (Mironov 2017, Prop. 7)"
    prov = Provenance(
        result=f"{result}, {steps}-fold adaptive composition (Mironov 2017, Prop. 1)",
        mode="bound",
        assumptions=tuple(assumptions),
        released="path (every iterate; the last iterate by post-processing)",
    )
    return PrivacyCurve.from_rdp(orders, steps * per_step, prov)


noisy_sgd_curve.__signature__ = inspect.signature(_noisy_sgd_curve_signature)
noisy_sgd_curve.argument_kinds = _noisy_sgd_curve.argument_kinds

__all__ = ["DEFAULT_ORDERS", "langevin_noise_multiplier", "noisy_sgd_curve"]

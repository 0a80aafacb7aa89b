"""The Laplace mechanism: RDP at every order (including inf) and its exact privacy profile.

Sensitivity 1, noise Laplace(0, scale) (add/remove or replace-one: the worst pair is a shift
by 1). With c = 1 / scale:

* RDP (Mironov 2017, Prop. 6 / Table II): for 1 < a < inf,
      D_a = log( a/(2a-1) e^{(a-1) c} + (a-1)/(2a-1) e^{-a c} ) / (a - 1),
  evaluated by log-sum-exp; D_inf = c (the max divergence: pure c-DP).
* Privacy profile (the hockey-stick divergence of Laplace(0, b) and Laplace(1, b); the
  privacy loss is c on x <= 0, (1 - 2x) c on [0, 1], -c beyond):
      delta(eps) = 1 - e^{(eps - c)/2} for 0 <= eps < c, and 0 for eps >= c.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ... import _validate
from ..curve import PrivacyCurve, Provenance


def _scale(scale) -> np.ndarray:
    b = np.asarray(scale, dtype=np.float64)
    if np.any(~((b > 0) & np.isfinite(b))):
        raise ValueError(f"scale={scale!r} violates scale > 0 (finite)")
    return b


@_validate.arguments(scale="numbers", orders="array")
def laplace_rdp(scale, orders) -> np.ndarray:
    """RDP of the Laplace mechanism at ``orders`` (Mironov 2017, Prop. 6), order inf allowed."""
    b = _scale(scale)
    a = np.asarray(orders, dtype=np.float64)
    if np.any(~(a > 1)):
        raise ValueError(f"orders={orders!r} violate 1 < order <= inf")
    c = 1.0 / b
    finite_a = np.where(np.isfinite(a), a, 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_terms = np.logaddexp(
            np.log(finite_a) - np.log(2.0 * finite_a - 1.0) + (finite_a - 1.0) * c,
            np.log(finite_a - 1.0) - np.log(2.0 * finite_a - 1.0) - finite_a * c,
        )
        rdp = log_terms / (finite_a - 1.0)
    return np.where(np.isfinite(a), np.maximum(rdp, 0.0), c * np.ones_like(rdp))


@_validate.arguments(scale="numbers", epsilon="numbers")
def laplace_delta(scale, epsilon) -> np.ndarray:
    """Exact delta(eps) of the Laplace mechanism: 1 - e^{(eps - 1/scale)/2} below 1/scale, 0 above."""
    c = 1.0 / _scale(scale)
    e = np.asarray(epsilon, dtype=np.float64)
    if np.any(~(e >= 0)):
        raise ValueError(f"epsilon={epsilon!r} violates epsilon >= 0")
    return np.where(e < c, -np.expm1(np.minimum(e - c, 0.0) / 2.0), 0.0)


def laplace_curve(scale: float, orders=None, epsilons=None) -> PrivacyCurve:
    """The Laplace mechanism as a :class:`PrivacyCurve`: RDP at ``orders`` (default: dp_accounting's
    orders plus inf) and the exact profile on ``epsilons`` (default: 401 points on [0, 1/scale])."""
    from ..composition.rdp import DEFAULT_ORDERS

    b = float(_validate.positive("scale", scale))
    orders = np.append(DEFAULT_ORDERS, np.inf) if orders is None else np.asarray(orders, dtype=np.float64)
    epsilons = np.linspace(0.0, 1.0 / b, 401) if epsilons is None else np.asarray(epsilons, dtype=np.float64)
    prov = Provenance("Laplace mechanism (Mironov 2017, Prop. 6; exact profile)", mode="exact",
                      assumptions=("sensitivity 1, Laplace noise of the given scale",))
    rdp_curve = PrivacyCurve.from_rdp(orders, laplace_rdp(b, orders), prov)
    profile = PrivacyCurve.from_profile(epsilons, laplace_delta(b, epsilons), prov)  # validates the grid
    return dataclasses.replace(rdp_curve, epsilons=profile.epsilons, deltas=profile.deltas)


__all__ = ["laplace_curve", "laplace_delta", "laplace_rdp"]

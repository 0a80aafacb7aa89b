"""Group privacy: what a guarantee for one record implies for a group of k records.

* RDP (Mironov 2017, "Rényi differential privacy", Prop. 11, the weak triangle inequality
  with p = q = 2): for distributions P, Q, R and a > 1,
      D_a(P || R) <= (a - 1/2)/(a - 1) D_{2a}(P || Q) + D_{2a-1}(Q || R).
  Splitting a group of k into m = ceil(k/2) and k - m records (datasets D_0, D_m, D_k) gives
  the recursion
      B_k(a) = (a - 1/2)/(a - 1) B_m(2a) + B_{k-m}(2a - 1),     B_1 = the curve's RDP,
  and for k = 2^c and a >= 2 it is at most 3^c rdp(2^c a) (Mironov's Cor. 4). Orders the
  curve does not hold are read from the next larger order it holds (Rényi divergences are
  non-decreasing in the order, Mironov Prop. 9, so a bound at a larger order is a bound at a
  smaller one); an order beyond the curve's largest gives inf (no bound). At order inf the
  recursion is exact arithmetic of pure DP: B_k(inf) = k rdp(inf).
* A profile (Vadhan 2017, "The complexity of differential privacy", Lemma 2.2 / Dwork & Roth
  2014 Thm 2.2 for pure DP): (eps, delta)-DP implies (k eps, k e^{(k-1) eps} delta)-DP for
  groups of k, applied to every grid point (in log space, capped at 1).

Both are bounds: for a mechanism whose sensitivity scales with the group (the Gaussian
mechanism: a group of k has sensitivity k, so rdp = k^2 a / (2 sigma^2) exactly) calling its
own accountant at sensitivity k is tighter.
"""
from __future__ import annotations

import math

import numpy as np

from .. import _validate


def _envelope(orders: np.ndarray, rdp: np.ndarray):
    """rdp at any order a > 1: the value at the smallest held order >= a (inf beyond the largest)."""
    order_idx = np.argsort(orders)
    sorted_orders = orders[order_idx]
    # a bound at order b holds at every order below b: take the running minimum from the right
    sorted_rdp = np.minimum.accumulate(rdp[..., order_idx][..., ::-1], axis=-1)[..., ::-1]

    def at(a: np.ndarray) -> np.ndarray:
        pos = np.searchsorted(sorted_orders, a, side="left")
        inside = pos < sorted_orders.size
        vals = np.take(sorted_rdp, np.minimum(pos, sorted_orders.size - 1), axis=-1)
        return np.where(inside, vals, np.inf)

    return at


@_validate.arguments(orders="reals", rdp="reals")
def group_rdp(orders, rdp, size: int) -> np.ndarray:
    """RDP bound for groups of ``size`` records at the curve's ``orders`` (orders on the last
    axis of ``rdp``); see the module docstring (Mironov 2017, Prop. 11 and Cor. 4)."""
    from .conversions import _check_orders_rdp

    k = _validate.positive_int("size", size)
    orders, rdp = _check_orders_rdp(orders, rdp)
    base = _envelope(orders, rdp)
    top = float(np.max(orders))

    def bound(k: int, a: np.ndarray) -> np.ndarray:
        if k == 1:
            return base(a)
        if np.all(np.isfinite(a) & (2.0 * a - 1.0 > top)):
            return np.full(np.broadcast_shapes(rdp.shape[:-1], a.shape), np.inf)
        m = (k + 1) // 2
        with np.errstate(invalid="ignore", over="ignore"):
            factor = np.where(np.isinf(a), 1.0, (a - 0.5) / (a - 1.0))
            out = factor * bound(m, 2.0 * a) + bound(k - m, 2.0 * a - 1.0)
        return np.where(np.isnan(out), np.inf, out)

    return bound(k, orders)


@_validate.arguments(epsilons="numbers", deltas="numbers")
def group_profile(epsilons, deltas, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(k eps, min(1, k e^{(k-1) eps} delta)) at every grid point (Vadhan 2017, Lemma 2.2).

    ``epsilons`` >= 0 and ``deltas`` in [0, 1] (broadcasting); None or NaN is refused before
    any arithmetic: np.asarray(None, float) is NaN, and a NaN delta used to come out as
    delta 0, a claim of pure DP."""
    k = _validate.positive_int("size", size)
    eps = np.asarray(epsilons, dtype=np.float64)
    d = np.asarray(deltas, dtype=np.float64)
    if np.any(~(eps >= 0)):
        raise ValueError(f"epsilons={_validate._fmt(epsilons)} violates epsilons >= 0 (a privacy profile's eps)")
    if np.any(~((d >= 0) & (d <= 1))):
        raise ValueError(f"deltas={_validate._fmt(deltas)} violates 0 <= deltas <= 1 (a privacy profile's delta)")
    try:
        np.broadcast_shapes(eps.shape, d.shape)
    except ValueError:
        raise ValueError(f"epsilons (shape {eps.shape}) and deltas (shape {d.shape}) violate the rule that they broadcast "
                         "(one profile: a delta per eps)") from None
    with np.errstate(divide="ignore", over="ignore"):
        log_d = math.log(k) + (k - 1) * eps + np.log(d)
    return k * eps, np.where(d > 0, np.minimum(np.exp(np.minimum(log_d, 0.0)), 1.0), 0.0)


__all__ = ["group_profile", "group_rdp"]

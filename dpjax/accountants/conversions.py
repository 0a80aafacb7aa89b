"""Conversions between Rényi DP, zCDP and (eps, delta)-DP, in float64 numpy.

All functions broadcast like NumPy; ``rdp`` has the orders on its last axis.

- Mironov (2017), Prop. 3: eps = rdp_a + log(1/delta)/(a - 1).
- Balle, Barthe, Gaboardi, Hsu, Sato (2020) Thm 21 / Canonne, Kamath, Steinke (2020) Prop 12
  (the conversion dp_accounting uses): eps = rdp_a + log1p(-1/a) - (log delta + log a)/(a - 1),
  for a > 1.01 (unstable as a -> 1), and eps = 0 once delta^2 >= 1 - exp(-rdp) (the KL/Pinsker
  route). This is the default.
- zCDP (Bun & Steinke 2016, Prop 1.3): eps = rho + 2 sqrt(rho log(1/delta)).
- RDP of rho-zCDP: rho * a.
- Order infinity (the max divergence, pure DP; Mironov 2017, Sec. 3): an RDP value eps_inf at
  order inf is (eps_inf, 0)-DP, so eps(delta) = eps_inf for every delta (the a -> inf limit of
  both conversions) and, for eps < eps_inf, delta(eps) = (e^eps_inf - e^eps) / (1 + e^eps_inf),
  the profile of randomized response, which dominates every eps_inf-DP mechanism (Kairouz,
  Oh, Viswanath 2015, Thm 2.4).
- Total-variation correction for approximate samplers (paper 001 Prop A.2, paper 002 Prop 12):
  (eps, delta)-DP target + TV distance tv => (eps, delta + (1 + e^eps) tv).
"""
from __future__ import annotations

import numpy as np
from .. import _validate

CONVERSIONS = ("balle", "mironov")
_MIN_ORDER_BALLE = 1.01


def _check_delta(delta) -> np.ndarray:
    d = np.asarray(delta, dtype=np.float64)
    if np.any(~(d > 0)) or np.any(~(d < 1)):
        raise ValueError(f"delta={delta!r} violates 0 < delta < 1")
    return d


def _log1mexp(x):
    """log(1 - e^x) for x <= 0 (-inf at 0), elementwise without cancellation."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > -np.log(2.0), np.log(-np.expm1(x)), np.log1p(-np.exp(x)))


def _check_orders_rdp(orders, rdp) -> tuple[np.ndarray, np.ndarray]:
    orders = np.asarray(orders, dtype=np.float64)
    rdp = np.asarray(rdp, dtype=np.float64)
    if orders.ndim != 1 or orders.size == 0:
        raise ValueError(f"orders must be a non-empty 1-D array; got shape {orders.shape}")
    if np.any(~(orders > 1)):
        raise ValueError(f"orders={orders[~(orders > 1)][:5].tolist()} violate order > 1")
    if rdp.shape[-1:] != orders.shape:
        raise ValueError(f"rdp has shape {rdp.shape}; its last axis must match orders' length {orders.size}")
    if np.any(np.isnan(rdp)) or np.any(rdp < 0):
        raise ValueError("rdp values must be >= 0 and not NaN (+inf is allowed: no guarantee at that order)")
    return orders, rdp


@_validate.arguments(orders="array", rdp="array", delta="numbers")
def rdp_to_epsilon_per_order(orders, rdp, delta, conversion: str = "balle") -> np.ndarray:
    """eps(delta) implied by each order separately; shape of ``rdp`` broadcast with delta."""
    if conversion not in CONVERSIONS:
        raise ValueError(f"conversion={conversion!r} is not one of {CONVERSIONS}")
    orders, rdp = _check_orders_rdp(orders, rdp)
    delta = _check_delta(delta)[..., None]
    log_delta = np.log(delta)
    infinite = np.isinf(orders)
    with np.errstate(over="ignore", invalid="ignore"):
        if conversion == "mironov":
            eps = rdp - log_delta / (orders - 1.0)
        else:
            eps = rdp + np.log1p(-1.0 / orders) - (log_delta + np.log(orders)) / (orders - 1.0)
            eps = np.where(orders > _MIN_ORDER_BALLE, eps, np.inf)
            # delta^2 >= 1 - exp(-rdp): the KL (Pinsker-type) route already gives eps = 0.
            kl_zero = delta**2 + np.expm1(-rdp) >= 0
            eps = np.where(kl_zero, 0.0, eps)
        # order inf: the a -> inf limit of either formula is rdp itself (the KL route still applies)
        eps = np.where(infinite, np.where(kl_zero, 0.0, rdp) if conversion == "balle" else rdp, eps)
    eps = np.where(np.isnan(eps), np.inf, eps)
    return np.maximum(eps, 0.0)


@_validate.arguments(orders="array", rdp="array", delta="numbers")
def rdp_to_epsilon(orders, rdp, delta, conversion: str = "balle") -> np.ndarray:
    """Smallest eps over orders such that the RDP curve implies (eps, delta)-DP.

    ``rdp`` has the orders on its last axis, which is reduced; ``delta`` broadcasts against
    the leading axes (NumPy rules). ``conversion="balle"`` (default) is the conversion of
    Balle et al. 2020 Thm 21 / Canonne, Kamath, Steinke 2020 Prop 12 with the KL route,
    identical to dp_accounting's ``compute_epsilon``; ``"mironov"`` is Mironov 2017 Prop 3.
    An order with rdp = +inf gives no guarantee and is skipped (eps = inf if all are).
    """
    return np.min(rdp_to_epsilon_per_order(orders, rdp, delta, conversion), axis=-1)


@_validate.arguments(orders="array", rdp="array", epsilon="numbers")
def rdp_to_delta(orders, rdp, epsilon, conversion: str = "balle") -> np.ndarray:
    """Smallest delta over orders such that the RDP curve implies (epsilon, delta)-DP.

    Same conventions as :func:`rdp_to_epsilon` (dp_accounting's ``compute_delta`` for "balle").
    """
    if conversion not in CONVERSIONS:
        raise ValueError(f"conversion={conversion!r} is not one of {CONVERSIONS}")
    orders, rdp = _check_orders_rdp(orders, rdp)
    eps = np.asarray(epsilon, dtype=np.float64)
    if np.any(np.isnan(eps)) or np.any(eps < 0):
        raise ValueError(f"epsilon={epsilon!r} violates epsilon >= 0")
    eps = eps[..., None]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if conversion == "mironov":
            log_delta = (orders - 1.0) * (rdp - eps)
        else:
            log_delta = (orders - 1.0) * (rdp - eps + np.log1p(-1.0 / orders)) - np.log(orders)
            log_delta = np.where(orders > _MIN_ORDER_BALLE, log_delta, np.inf)
            log_delta = np.minimum(log_delta, 0.5 * np.log1p(-np.exp(-rdp)))
        infinite = np.isinf(orders)
        if np.any(infinite):
            # pure rdp-DP: delta = 0 from eps = rdp on; below, randomized response's profile
            pure = np.where(eps >= rdp, -np.inf, rdp + _log1mexp(np.minimum(eps - rdp, 0.0)) - np.logaddexp(0.0, rdp))
            pure = np.where(np.isinf(rdp), np.inf, pure)
            kl_route = 0.5 * np.log1p(-np.exp(-rdp))
            log_delta = np.where(infinite, np.minimum(kl_route, pure) if conversion == "balle" else pure, log_delta)
    log_delta = np.where(np.isnan(log_delta), np.inf, log_delta)
    return np.minimum(np.exp(np.min(log_delta, axis=-1)), 1.0)


@_validate.arguments(rho="numbers", delta="numbers")
def zcdp_to_epsilon(rho, delta) -> np.ndarray:
    """eps = rho + 2 sqrt(rho log(1/delta)) for rho-zCDP (Bun & Steinke 2016, Prop 1.3).

    This is the Mironov conversion of the RDP curve rho * a minimised over all real a > 1.
    """
    rho_in, rho = rho, np.asarray(rho, dtype=np.float64)
    if np.any(np.isnan(rho)) or np.any(rho < 0):
        raise ValueError(f"rho={rho_in!r} violates rho >= 0")
    delta = _check_delta(delta)
    return rho + 2.0 * np.sqrt(rho * -np.log(delta))


@_validate.arguments(rho="numbers", orders="array")
def zcdp_rdp(rho, orders) -> np.ndarray:
    """RDP curve of rho-zCDP: rdp(a) = rho * a (Bun & Steinke 2016, Def. 1.1); orders on the last axis."""
    rho_in, rho = rho, np.asarray(rho, dtype=np.float64)
    if np.any(np.isnan(rho)) or np.any(rho < 0):
        raise ValueError(f"rho={rho_in!r} violates rho >= 0")
    orders, _ = _check_orders_rdp(orders, np.zeros(np.shape(orders)))
    return rho[..., None] * orders


@_validate.arguments(epsilon="numbers", delta="numbers", total_variation="numbers")
def tv_corrected_delta(epsilon, delta, total_variation) -> np.ndarray:
    """delta + (1 + e^eps) * tv: the delta of an approximate sampler within TV ``tv`` of an
    (eps, delta)-DP target, on both datasets (paper 001 Prop A.2; paper 002 Prop 12).

    Capped at 1 (every mechanism is (eps, 1)-DP); tv = 0 returns delta even for eps = inf.
    """
    tv = np.asarray(total_variation, dtype=np.float64)
    if np.any(np.isnan(tv)) or np.any(tv < 0) or np.any(tv > 1):
        raise ValueError(f"total_variation={total_variation!r} violates 0 <= total_variation <= 1")
    eps = np.asarray(epsilon, dtype=np.float64)
    if np.any(np.isnan(eps)) or np.any(eps < 0):
        raise ValueError(f"epsilon={epsilon!r} violates epsilon >= 0")
    dl = np.asarray(delta, dtype=np.float64)
    if np.any(np.isnan(dl)) or np.any(dl < 0) or np.any(dl > 1):
        raise ValueError(f"delta={delta!r} violates 0 <= delta <= 1")
    with np.errstate(over="ignore", invalid="ignore"):
        extra = np.where(tv > 0, (1.0 + np.exp(eps)) * tv, 0.0)
    return np.minimum(dl + extra, 1.0)

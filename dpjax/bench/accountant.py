"""``dpjax bench accountant``: eps(delta) of many DP-SGD configurations, dpjax vs dp_accounting.

Draws ``--configs`` random (q, noise multiplier, steps) configurations (q log-uniform in
[1e-4, 0.5], noise multiplier uniform in [0.5, 20], steps log-uniform in [1, 1e6]) and
computes eps at ``--delta`` for all of them

* with dpjax: one vectorised call of :func:`subsampled_gaussian_rdp` over (configs, orders),
  then :func:`rdp_to_epsilon` reducing over the orders;
* with dp_accounting: an ``RdpAccountant`` per configuration, composing
  ``PoissonSampledDpEvent(q, GaussianDpEvent(sigma))`` ``steps`` times, then ``get_epsilon``,

at the same orders (dp_accounting's defaults), in the same process. Times are medians over
``--repeats`` warm repeats (dpjax's first, compiling call is reported separately). The
relative difference is reported at integer orders only (where both compute the same exact
sum) and over the full grid (where dp_accounting's fractional-order series overestimates,
see tests/test_gaussian_rdp.py), the share of configurations where dp_accounting's
epsilon is below dpjax's (it should be 0 up to rounding), and how many configurations had
orders dropped by dp_accounting (its fractional series did not converge: rdp = inf there).

The PLD row (unless ``--pld-configs 0``): eps at ``--delta`` for ``--pld-configs`` random
DP-SGD configurations (q log-uniform in [1e-3, 0.1], noise multiplier uniform in [0.8, 4],
steps log-uniform in [1, 2000]) by :func:`dpjax.accountants.pld_epsilons` (one batched call,
pessimistic side only, as dp_accounting's accountant; the bracket with the optimistic side is
timed too) against dp_accounting's ``PLDAccountant`` looped over the first
``--pld-baseline-configs`` of them (its loop takes about a second per configuration, so the
1000-configuration time is that subsample's median per-configuration time x the number of
configurations: stated in the output), both at the same ``value_discretization_interval``.
Accuracy on the subsample: the largest |eps_dpjax - eps_dp_accounting| (both pessimistic),
and whether dp_accounting's value lies inside dpjax's [optimistic, pessimistic] bracket.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from ..accountants import rdp_to_epsilon, subsampled_gaussian_rdp
from ..accountants.composition.rdp import DEFAULT_ORDERS
from ._baselines import add_configuration_arguments, median_seconds


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_configuration_arguments(parser, what="(q, sigma, steps)", repeats=3)
    parser.add_argument("--baseline-repeats", type=int, default=1, help="timed repeats of the dp_accounting loop")
    parser.add_argument("--pld-configs", type=int, default=1000, help="configurations of the PLD row (0: skip it)")
    parser.add_argument("--pld-baseline-configs", type=int, default=60,
                        help="how many of them dp_accounting's PLDAccountant computes (about 1 s each)")
    parser.add_argument("--pld-interval", type=float, default=1e-4, help="value_discretization_interval of both PLD accountants")


def sample_configs(num: int, seed: int):
    rng = np.random.default_rng(seed)
    q = 10.0 ** rng.uniform(-4.0, np.log10(0.5), num)
    sigma = rng.uniform(0.5, 20.0, num)
    steps = np.round(10.0 ** rng.uniform(0.0, 6.0, num)).astype(np.int64)
    return q, sigma, steps


def dpjax_epsilons(q, sigma, steps, delta, orders=DEFAULT_ORDERS):
    rdp = subsampled_gaussian_rdp(q[:, None], sigma[:, None], orders) * steps[:, None]
    return rdp_to_epsilon(orders, rdp, delta)


def dp_accounting_epsilons(q, sigma, steps, delta, orders=DEFAULT_ORDERS, dropped=None):
    """The baseline loop; ``dropped`` (a list) collects how many orders each accountant lost (inf)."""
    import dp_accounting

    out = np.empty(q.shape)
    for i in range(q.size):
        acc = dp_accounting.rdp.RdpAccountant(list(orders))
        event = dp_accounting.PoissonSampledDpEvent(float(q[i]), dp_accounting.GaussianDpEvent(float(sigma[i])))
        acc.compose(event, int(steps[i]))
        out[i] = acc.get_epsilon(delta)
        if dropped is not None:
            dropped.append(int(np.sum(np.isinf(acc._rdp))))
    return out


def _relative_difference(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(a == b, 0.0, np.abs(a - b) / np.abs(b))


def sample_pld_configs(num: int, seed: int):
    rng = np.random.default_rng(seed + 1)
    q = 10.0 ** rng.uniform(-3.0, -1.0, num)
    sigma = rng.uniform(0.8, 4.0, num)
    steps = np.round(10.0 ** rng.uniform(0.0, np.log10(2000.0), num)).astype(np.int64)
    return q, sigma, steps


def dp_accounting_pld_epsilons(q, sigma, steps, delta, interval):
    from dp_accounting import GaussianDpEvent, PoissonSampledDpEvent
    from dp_accounting.pld import pld_privacy_accountant

    out, times = np.empty(q.shape), np.empty(q.shape)
    for i in range(q.size):
        t0 = time.perf_counter()
        acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=interval)
        acc.compose(PoissonSampledDpEvent(float(q[i]), GaussianDpEvent(float(sigma[i]))), int(steps[i]))
        out[i] = acc.get_epsilon(delta)
        times[i] = time.perf_counter() - t0
    return out, times


def run_pld(args) -> dict:
    from ..accountants import pld_epsilons

    q, sigma, steps = sample_pld_configs(args.pld_configs, args.seed)
    h = args.pld_interval
    t0 = time.perf_counter()
    pld_epsilons(sigma, q, steps, args.delta, value_discretization_interval=h, optimistic=False)  # compiles
    first_call = time.perf_counter() - t0
    t_pess, pess = median_seconds(lambda: pld_epsilons(sigma, q, steps, args.delta, value_discretization_interval=h, optimistic=False), args.repeats)
    pld_epsilons(sigma, q, steps, args.delta, value_discretization_interval=h)  # compiles the optimistic side's shapes
    t_bracket, bracket = median_seconds(lambda: pld_epsilons(sigma, q, steps, args.delta, value_discretization_interval=h), args.repeats)
    eps_pess, eps_hi, eps_lo = pess.epsilon, bracket.epsilon, bracket.optimistic_epsilon
    k = min(args.pld_baseline_configs, args.pld_configs)
    eps_base, per_config = dp_accounting_pld_epsilons(q[:k], sigma[:k], steps[:k], args.delta, h)
    t_base = float(np.mean(per_config)) * args.pld_configs  # a total: the mean per configuration, not the median
    diff = np.abs(eps_pess[:k] - eps_base)
    return {
        "pld_configs": args.pld_configs,
        "pld_interval": h,
        "pld_dpjax_seconds_median": t_pess,
        "pld_dpjax_first_call_seconds": first_call,
        "pld_dpjax_bracket_seconds_median": t_bracket,
        "pld_dp_accounting_configs_timed": k,
        "pld_dp_accounting_seconds_per_config_median": float(np.median(per_config)),
        "pld_dp_accounting_seconds_per_config_mean": float(np.mean(per_config)),
        "pld_dp_accounting_seconds_estimated": t_base,
        "pld_dp_accounting_seconds_subsample_total": float(np.sum(per_config)),
        "pld_speedup": t_base / t_pess,
        "pld_speedup_bracket": t_base / t_bracket,
        "pld_max_abs_eps_diff": float(diff.max()),
        "pld_median_abs_eps_diff": float(np.median(diff)),
        "pld_max_rel_eps_diff": float(np.max(diff / eps_base)),
        "pld_dp_accounting_inside_bracket": float(np.mean((eps_base >= eps_lo[:k] * (1 - 1e-9)) & (eps_base <= eps_hi[:k] * (1 + 1e-9)))),
        "pld_max_bracket_width": float(np.max(eps_hi - eps_lo)),
        "pld_median_eps": float(np.median(eps_pess)),
    }


def run(args) -> dict:
    out = _run_rdp(args)
    if getattr(args, "pld_configs", 0):
        out.update(run_pld(args))
    return out


def _run_rdp(args) -> dict:
    q, sigma, steps = sample_configs(args.configs, args.seed)
    t0 = time.perf_counter()
    dpjax_epsilons(q, sigma, steps, args.delta)  # compiles
    first_call = time.perf_counter() - t0
    t_dpjax, eps_dpjax = median_seconds(lambda: dpjax_epsilons(q, sigma, steps, args.delta), args.repeats)
    t_base, eps_base = median_seconds(lambda: dp_accounting_epsilons(q, sigma, steps, args.delta), args.baseline_repeats)

    integer_orders = DEFAULT_ORDERS[DEFAULT_ORDERS == np.round(DEFAULT_ORDERS)]
    eps_int_dpjax = dpjax_epsilons(q, sigma, steps, args.delta, integer_orders)
    eps_int_base = dp_accounting_epsilons(q, sigma, steps, args.delta, integer_orders)
    rel_int = _relative_difference(eps_int_dpjax, eps_int_base)
    rel_all = _relative_difference(eps_dpjax, eps_base)
    dropped = []
    dp_accounting_epsilons(q, sigma, steps, args.delta, dropped=dropped)
    dropped = np.asarray(dropped)
    return {
        "configs": args.configs,
        "orders": int(DEFAULT_ORDERS.size),
        "delta": args.delta,
        "dpjax_seconds_median": t_dpjax,
        "dpjax_first_call_seconds": first_call,
        "dp_accounting_seconds_median": t_base,
        "speedup": t_base / t_dpjax,
        "max_rel_diff_integer_orders": float(rel_int.max()),
        "max_rel_diff_default_orders": float(rel_all.max()),
        "median_rel_diff_default_orders": float(np.median(rel_all)),
        "share_dp_accounting_below_dpjax": float(np.mean(eps_base < eps_dpjax * (1 - 1e-9))),
        "configs_where_dp_accounting_dropped_orders": int(np.sum(dropped > 0)),
        "orders_dropped_by_dp_accounting_max": int(dropped.max()),
    }

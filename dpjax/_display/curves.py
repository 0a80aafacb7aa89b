"""How curves print and draw: :class:`~dpjax.accountants.PrivacyCurve`, and the estimators' curves
(:class:`~dpjax.estimators.RenyiEstimate`, :class:`~dpjax.estimators.PrivacyLossEstimate`)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from . import (
    DELTAS, WIDTH, _confidence, epsilon_axis, fmt, fmt_array, fmt_count, fmt_interval, new_figure, readable_log_ticks,
    text_table, truncate, wrap_text,
)


def curve_summary(curve, deltas: Sequence[float] = DELTAS, width: int = WIDTH) -> str:
    """eps at a ladder of deltas, what the curve holds, and its provenance."""
    prov = curve.provenance
    head = f"PrivacyCurve ({prov.mode}): {prov.result}" + (f"; releases {prov.released}" if prov.released else "; release not stated")
    lines = [wrap_text(head, width, indent="  ", first="")]
    batch = curve.rdp.shape[:-1] if curve.has_rdp else (curve.deltas.shape[:-1] if curve.has_profile else ())
    if getattr(curve, "has_pld", False) and not curve.has_rdp and not curve.has_profile:
        batch = tuple(curve.pld.batch_shape)
    if batch:
        lines.append(f"  a batch of {int(np.prod(batch))} curves, shape {tuple(batch)}")
    cells = []
    for d in deltas:
        try:
            eps = np.asarray(curve.epsilon(d), dtype=float)
            value = fmt(eps) if eps.ndim == 0 else fmt_array(eps, limit=4)
        except ValueError as err:  # e.g. a profile that says nothing at this delta
            value = f"({err})"
        cells.append((fmt(d), value))
    if batch:
        lines.extend(f"  eps at delta = {d}: {v}" for d, v in cells)
    else:
        lines.append(truncate("  eps(delta): " + "   ".join(f"{v} at {d}" for d, v in cells), width))
    held = []
    if curve.has_rdp:
        held.append(f"RDP at {curve.orders.size} orders in [{fmt(curve.orders.min())}, {fmt(curve.orders.max())}]")
    if curve.has_profile:
        held.append(f"a delta(eps) profile on {curve.epsilons.size} eps in [{fmt(curve.epsilons.min())}, {fmt(curve.epsilons.max())}]")
    if getattr(curve, "has_pld", False):
        pess = curve.pld.pessimistic[0]
        held.append(f"privacy-loss distributions on a grid of step {fmt(pess.step)} ({len(curve.pld.pessimistic)} "
                    f"direction(s); pessimistic, .optimistic() for the lower side)")
    lines.append("  holds " + " and ".join(held) if held else "  holds nothing (no RDP values, no profile)")
    if prov.assumptions:
        lines.append(wrap_text("assumes: " + "; ".join(prov.assumptions), width, indent="    ", first="  "))
    return "\n".join(lines)


def curve_figure(curve, deltas=None):
    """eps(delta) over delta (left) and, when the curve has them, its RDP values by order (right)."""
    ncols = 2 if curve.has_rdp else 1
    fig, axes = new_figure(ncols, size=(5.2, 3.8))
    ds = np.logspace(-10, -1, 37) if deltas is None else np.asarray(deltas, dtype=float)
    eps = np.asarray([curve.epsilon(d) for d in ds], dtype=float)  # (deltas, *batch)
    ax = axes[0]
    ax.plot(ds, eps.reshape(ds.size, -1), marker=".")
    ax.set_xscale("log")
    ax.set_xlabel("delta")
    ax.set_ylabel("epsilon")
    epsilon_axis(ax, eps)
    readable_log_ticks(ax, "x")
    ax.set_title("eps(delta)", fontsize=10)
    ax.grid(alpha=0.3)
    if curve.has_rdp:
        ax = axes[1]
        rdp = np.asarray(curve.rdp, dtype=float).reshape(-1, curve.orders.size)
        ax.plot(curve.orders, rdp.T, marker=".", ms=3)
        ax.set_xscale("log")
        if np.all(rdp[np.isfinite(rdp)] > 0):
            ax.set_yscale("log")
            readable_log_ticks(ax, "y")
        ax.set_xlabel("Rényi order")
        ax.set_ylabel("RDP")
        readable_log_ticks(ax, "x")
        ax.set_title("Rényi DP by order", fontsize=10)
        ax.grid(alpha=0.3)
    fig.suptitle(truncate(curve.provenance.result, 90), fontsize=10)
    return fig


def renyi_summary(r, width: int = WIDTH, limit: int = 12) -> str:
    head = (f"RenyiEstimate: plug-in Rényi divergences at {r.orders.size} orders ({r.num_bins} bins of {r.statistic!r}, "
            f"{r.num_bootstrap} bootstrap resamples, {_confidence(r.confidence)} intervals; biased low at large orders)")
    idx = np.arange(r.orders.size)
    if idx.size > limit:
        idx = np.unique(np.linspace(0, idx.size - 1, limit).round().astype(int))
    rows = [[fmt(r.orders[i]), fmt(r.rdp[i]), fmt_interval(r.rdp_lower[i], r.rdp_upper[i]), fmt(r.divergence_p_q[i]), fmt(r.divergence_q_p[i])] for i in idx]
    table = text_table(["order", "RDP (max)", "interval", "D(P||Q)", "D(Q||P)"], rows, indent=2, width=width)
    more = f"\n  ({r.orders.size - idx.size} more orders in .orders / .rdp)" if idx.size < r.orders.size else ""
    return wrap_text(head, width, indent="  ", first="") + "\n" + table + more


def renyi_figure(r):
    fig, (ax,) = new_figure(1, size=(6.0, 3.8))
    ax.plot(r.orders, r.rdp, marker=".", label="max of both directions")
    ax.fill_between(r.orders, r.rdp_lower, r.rdp_upper, alpha=0.25, label=f"{_confidence(r.confidence)} bootstrap interval")
    ax.set_xlabel("Rényi order")
    ax.set_ylabel("Rényi divergence")
    epsilon_axis(ax, np.concatenate([r.rdp, r.rdp_upper]))
    if r.orders.max() / r.orders.min() > 10:
        ax.set_xscale("log")
        readable_log_ticks(ax, "x")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax.set_title("plug-in Rényi divergence from samples (no guarantee)", fontsize=10)
    return fig


def loss_profile_summary(r, width: int = WIDTH, deltas: Sequence[float] = DELTAS) -> str:
    point, upper = r.curve(), r.upper_curve()
    cells = []
    for d in deltas:
        cells.append(f"{fmt(point.epsilon(d))} (<= {fmt(upper.epsilon(d))}) at {fmt(d)}")
    lines = [
        wrap_text(
            f"PrivacyLossEstimate: eps(delta) from {fmt_count(r.num_samples)} samples of the privacy loss (P vs Q), "
            f"with {_confidence(r.confidence)} simultaneous upper limits (empirical Bernstein, exact in finite samples)",
            width, indent="  ", first="",
        ),
        wrap_text("eps(delta): " + "   ".join(cells), width, indent="    ", first="  "),
        f"  grid: {r.epsilons.size} eps in [{fmt(r.epsilons.min())}, {fmt(r.epsilons.max())}]; an eps read from it is rounded up to the grid",
    ]
    if r.orders.size:
        ess = np.asarray(r.effective_sample_size, dtype=float)
        lines.append(truncate(
            f"  RDP at orders {fmt_array(r.orders, limit=5)}: {fmt_array(r.rdp, limit=5)} (bootstrap; effective sample sizes "
            f"{fmt_array(ess, 3, limit=5)})", width))
    return "\n".join(lines)


def loss_profile_figure(r):
    fig, (ax,) = new_figure(1, size=(6.0, 3.8))
    ax.plot(r.epsilons, r.delta, label="delta(eps), Monte Carlo")
    ax.fill_between(r.epsilons, np.maximum(r.delta_lower, 1e-300), r.delta_upper, alpha=0.25, label=f"{_confidence(r.confidence)} pointwise interval")
    ax.plot(r.epsilons, r.delta_upper_simultaneous, "--", label="simultaneous upper limit")
    positive = np.concatenate([r.delta[r.delta > 0], r.delta_upper_simultaneous[r.delta_upper_simultaneous > 0]])
    if positive.size:
        ax.set_yscale("log")
        ax.set_ylim(max(positive.min(), 1e-12) / 2, 1.5)
        readable_log_ticks(ax, "y")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("delta")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax.set_title(f"privacy profile from {fmt_count(r.num_samples)} privacy-loss samples", fontsize=10)
    return fig


def _values(x, digits: int = 4) -> str:
    """A number, or a batch as ``[a, b, ..., z] (n values)``."""
    arr = np.asarray(x, dtype=float)
    return fmt(arr, digits) if arr.ndim == 0 else fmt_array(arr, digits, limit=5)


def _batch_text(x) -> str:
    shape = np.shape(x)
    return "1 configuration" if shape == () else f"{int(np.prod(shape))} configurations, shape {shape}"


def pld_epsilons_summary(r, width: int = WIDTH) -> str:
    """:class:`~dpjax.accountants.composition.pld_bracket.PLDEpsilons`: both sides, the delta, the grid."""
    opt = np.asarray(r.optimistic_epsilon, dtype=float)
    lower = ("not computed (optimistic=False)" if opt.size and bool(np.all(np.isnan(opt)))
             else _values(opt) + " (never above the truth)")
    return "\n".join([
        truncate(f"PLDEpsilons at delta = {fmt(r.delta)}: {_batch_text(r.epsilon)}; PLD accountant, grid "
                 f"{fmt(r.value_discretization_interval)} nats", width),
        truncate(f"  epsilon (pessimistic, an upper bound): {_values(r.epsilon)}", width),
        truncate(f"  optimistic_epsilon: {lower}", width),
    ])


def last_iterate_gdp_summary(r, width: int = WIDTH, deltas: Sequence[float] = (1e-3, 1e-5, 1e-6)) -> str:
    """:class:`~dpjax.accountants.samplers.last_iterate.LastIterateGDP`: mu of each bound, the
    smaller one's eps at a few deltas."""
    comp = "None (Poisson batches: not Gaussian DP)" if r.composition is None else _values(r.composition)
    if np.ndim(r.mu) == 0:
        eps = "   ".join(f"{fmt(r.epsilon(d))} at {fmt(d)}" for d in deltas)
    else:
        eps = f"{_values(r.epsilon(deltas[1]))} at {fmt(deltas[1])}"
    return "\n".join([
        truncate(f"LastIterateGDP: Gaussian-DP mu of the released last iterate; {_batch_text(r.shifted_interpolation)}", width),
        truncate(f"  shifted_interpolation (Bok, Su & Altschuler 2024): mu = {_values(r.shifted_interpolation)}", width),
        truncate(f"  composition (the whole path): mu = {comp}", width),
        truncate(f"  eps(delta) of the smaller mu: {eps}", width),
    ])

"""How dpjax's result objects print and draw themselves.

One place for the presentation of :class:`~dpjax.audit.AuditReport`, the estimator results,
:class:`~dpjax.accountants.PrivacyCurve` and :class:`~dpjax.CoupledResult`: their
``__repr__`` / ``summary()`` / ``figure()`` / ``save(path)`` methods are thin calls into this
module, so the result classes stay about numbers and this module about reading them.

Conventions: text fits :data:`WIDTH` columns (a terminal, a notebook cell); numbers carry four
significant digits (``fmt``), infinities print as ``inf``, a missing value as ``-``; every
summary names where its numbers come from (the accountant's provenance, the estimator and
its confidence, the number of chain pairs). Figures are :class:`matplotlib.figure.Figure`
objects (no pyplot state: nothing opens a window or leaks between calls); notebooks display
them, scripts write them with ``save(path)``.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable, Optional, Sequence

import numpy as np

WIDTH = 100  # columns of every summary
DELTAS = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6)  # where a PrivacyCurve's summary reads eps(delta)


# --- numbers and text ---------------------------------------------------------------------------
def fmt(value, digits: int = 4) -> str:
    """A number in ``digits`` significant digits; ``inf``/``-inf``/``nan``; ``-`` for None."""
    if value is None:
        return "-"
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0:
        return "0"
    return f"{v:.{digits}g}"


def fmt_interval(low, high, digits: int = 3) -> str:
    """``[low, high]``; an end that is missing (NaN or None) prints as ``-``."""
    def end(x):
        return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else fmt(x, digits)

    return f"[{end(low)}, {end(high)}]"


def _confidence(c) -> str:
    pct = 100.0 * float(c)
    return f"{pct:.0f}%" if abs(pct - round(pct)) < 1e-9 else f"{pct:g}%"


def fmt_count(n) -> str:
    return f"{int(n):,}"


def fmt_array(values, digits: int = 4, limit: int = 6) -> str:
    """A short 1-D rendering: ``[a, b, c, ..., z]`` (at most ``limit`` numbers)."""
    arr = np.ravel(np.asarray(values, dtype=float))
    if arr.size <= limit:
        return "[" + ", ".join(fmt(x, digits) for x in arr) + "]"
    head = ", ".join(fmt(x, digits) for x in arr[: limit - 1])
    return f"[{head}, ..., {fmt(arr[-1], digits)}] ({arr.size} values)"


def truncate(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, ending in "..." when cut."""
    text = str(text)
    if len(text) <= width:
        return text
    return text[: max(width - 3, 0)] + "..."


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]], *, align: Optional[str] = None, width: int = WIDTH, indent: int = 0) -> str:
    """Rows of strings as aligned columns; the last column is cut so every line fits ``width``.

    ``align``: one letter per column, "l" or "r" (default: first column left, others right).
    """
    ncol = len(header)
    align = align or ("l" + "r" * (ncol - 1))
    cells = [list(map(str, header))] + [list(map(str, r)) for r in rows]
    widths = [max(len(r[j]) for r in cells) for j in range(ncol)]
    used = indent + sum(widths[:-1]) + 2 * (ncol - 1)
    widths[-1] = max(8, min(widths[-1], width - used))
    lines = []
    for r in cells:
        parts = []
        for j, cell in enumerate(r):
            cell = truncate(cell, widths[j])
            parts.append(cell.ljust(widths[j]) if align[j] == "l" else cell.rjust(widths[j]))
        lines.append(" " * indent + "  ".join(parts).rstrip())
    return "\n".join(lines)


def wrap_text(text: str, width: int = WIDTH, indent: str = "", first: Optional[str] = None) -> str:
    import textwrap

    return textwrap.fill(text, width=width, initial_indent=indent if first is None else first, subsequent_indent=indent, break_on_hyphens=False)


# --- figures --------------------------------------------------------------------------------------
def enable_notebook_display() -> None:
    """In IPython / Jupyter, show a pyplot-free figure as a PNG when it is a cell's value.

    Jupyter draws a bare :class:`matplotlib.figure.Figure` only once pyplot has set up the
    inline backend; without this, ``report.figure()`` in a notebook that never imported pyplot
    would print "<Figure size ...>". Outside IPython this does nothing."""
    import sys

    if "IPython" not in sys.modules:
        return
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return
    import matplotlib.figure

    png = shell.display_formatter.formatters["image/png"]
    try:
        png.lookup_by_type(matplotlib.figure.Figure)
        return  # the inline backend (or a user) already draws figures
    except KeyError:
        from IPython.core.pylabtools import print_figure

        png.for_type(matplotlib.figure.Figure, lambda fig: print_figure(fig, "png", bbox_inches="tight"))


def new_figure(ncols: int = 1, size=(7.0, 4.2)):
    """A pyplot-free figure with ``ncols`` axes side by side."""
    import matplotlib.figure

    enable_notebook_display()
    fig = matplotlib.figure.Figure(figsize=(size[0] * ncols if ncols > 1 else size[0], size[1]), layout="constrained")
    axes = [fig.add_subplot(1, ncols, j + 1) for j in range(ncols)]
    return fig, axes


def save_figure(fig, path, dpi: int = 120) -> Path:
    """Write ``fig`` to ``path`` (the suffix picks the format; folders are created)."""
    path = Path(path)
    if path.suffix == "":
        raise ValueError(f"path={str(path)!r} has no suffix; name the format, e.g. {str(path)!r} + '.png'")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    return path


def readable_log_ticks(ax, axis: str = "y") -> None:
    """Tick labels on a log (or symlog) axis that a reader can use.

    Matplotlib labels only powers of ten, so a range inside one or two decades shows one label
    (or none). Here every decade gets 1, 2 and 5 labelled when the range spans at most a decade
    and a half (1 and 3 up to three decades), and the labels are plain numbers ("0.5", "20",
    "1e-5"), not 10^k.
    """
    from matplotlib import ticker

    scale_axis = ax.yaxis if axis == "y" else ax.xaxis
    lo, hi = (ax.get_ylim() if axis == "y" else ax.get_xlim())
    scale = scale_axis.get_scale()
    if scale not in ("log", "symlog"):
        return
    lo_pos = lo if lo > 0 else None
    if scale == "symlog":
        linthresh = scale_axis.get_transform().linthresh
        lo_pos = max(lo, linthresh) if hi > linthresh else None
    decades = math.log10(hi / lo_pos) if (lo_pos and hi > lo_pos) else 0.0
    # labelled ticks per decade: 1-2-5 inside a decade and a half, 1-3 up to three decades
    subs = (1.0, 2.0, 5.0) if decades <= 1.5 else ((1.0, 3.0) if decades <= 3.0 else (1.0,))
    numticks = 50 if len(subs) > 1 else "auto"  # "auto" thins long ranges; never thin 1-2-5
    formatter = ticker.FuncFormatter(lambda v, _: _tick_label(v))
    if scale == "log":
        scale_axis.set_major_locator(ticker.LogLocator(base=10.0, subs=subs, numticks=numticks))
        scale_axis.set_minor_locator(ticker.LogLocator(base=10.0, subs=np.arange(1.0, 10.0)))
        scale_axis.set_minor_formatter(ticker.NullFormatter())
    else:
        scale_axis.set_major_locator(ticker.SymmetricalLogLocator(base=10.0, linthresh=linthresh, subs=subs))
    scale_axis.set_major_formatter(formatter)


def _tick_label(v: float) -> str:
    if v == 0:
        return "0"
    a = abs(v)
    if 1e-3 <= a < 1e4:
        return f"{v:g}"
    return f"{v:.0e}".replace("e-0", "e-").replace("e+0", "e")


def epsilon_axis(ax, values: Iterable[float], axis: str = "y") -> None:
    """Scale an eps axis for ``values``: linear from 0 when they span under 1.5 decades
    (the common case, and the easiest to read), else symlog (0 stays drawable) with
    readable ticks."""
    v = np.asarray([x for x in np.ravel(np.asarray(list(values), dtype=float)) if np.isfinite(x)])
    pos = v[v > 0]
    set_scale = ax.set_yscale if axis == "y" else ax.set_xscale
    set_lim = ax.set_ylim if axis == "y" else ax.set_xlim
    if pos.size == 0 or pos.max() / pos.min() < 10**1.5:
        set_scale("linear")
        top = pos.max() if pos.size else 1.0
        set_lim(0.0, 1.08 * top)
        return
    linthresh = 10 ** math.floor(math.log10(pos.min()))
    set_scale("symlog", linthresh=linthresh, linscale=0.3)
    set_lim(0.0, 1.5 * pos.max())
    readable_log_ticks(ax, axis)


# --- shared summaries ---------------------------------------------------------------------------
def provenance_line(provenance) -> str:
    return provenance.describe() if provenance is not None else "unspecified"


# --- AuditReport ----------------------------------------------------------------------------------
_KIND_LABEL = {"bound": "bound", "exact": "exact", "lower bound": "certified", "estimate": "estimate"}


def _audit_cell(row) -> str:
    kind, eps = row["kind"], row["epsilon"]
    if kind == "bound":
        return "<= " + fmt(eps)
    if kind == "exact":
        return "= " + fmt(eps)
    if kind == "lower bound":
        return ">= " + fmt(eps)
    lo, hi = row.get("lower", np.nan), row.get("upper", np.nan)
    if all(x is None or not np.isfinite(x) for x in (lo, hi)) and not (isinstance(hi, float) and math.isinf(hi)):
        return fmt(eps)
    return f"{fmt(eps, 3)} {fmt_interval(lo, hi)}"


def _step_blocks(steps: Sequence[int], cell_width: int, first_width: int, width: int) -> list:
    per_block = max(1, (width - first_width) // (cell_width + 2))
    return [list(steps[i : i + per_block]) for i in range(0, len(steps), per_block)]


def audit_summary(report, full: bool = False, width: int = WIDTH) -> str:
    """The audit at a glance: the headline at the last step (how much privacy leaks, by whose
    account, how sure), a table of eps per recorded step, the verdict and the sources.

    ``full=False`` shows the steps that fit one block of ``width`` columns (first and last
    steps kept); ``full=True`` shows every step, in as many blocks as needed."""
    t = report.table
    coupled = report.coupled
    num_pairs = len(coupled.finite)
    conf = _confidence(report.confidence)
    nonfinite = f"{fmt_count(coupled.num_nonfinite)} non-finite" + (", excluded" if coupled.num_nonfinite else "")
    out = [wrap_text(
        f"dpjax audit: eps at delta = {fmt(report.delta)}, {conf} confidence, {fmt_count(num_pairs)} coupled chain pairs ({nonfinite})",
        width, indent="  ", first="")]
    if t.empty:
        out.append("no step after 0 was recorded: nothing is released yet, so there is nothing to compare")
        out.append(_audit_verdict(report))
        return "\n".join(out)
    steps = sorted(int(s) for s in t["step"].unique())
    out.extend(wrap_text(line, width) for line in _audit_headline(report, steps[-1]))

    order = {"bound": 0, "exact": 1, "lower bound": 2, "estimate": 3}
    keys = sorted(dict.fromkeys(zip(t["quantity"], t["kind"])), key=lambda qk: order.get(qk[1], 4))
    labels = [(q, _KIND_LABEL.get(k, k)) for q, k in keys]
    cells = {}
    for _, row in t.iterrows():
        cells[(row["quantity"], row["kind"], int(row["step"]))] = _audit_cell(row)
    cell_width = max([len(c) for c in cells.values()] + [len(f"step {steps[-1]}")])
    first_width = max(len(q) for q, _ in labels) + max(len(k) for _, k in labels) + 4
    blocks = _step_blocks(steps, cell_width, first_width, width)
    hidden = 0
    if not full and len(blocks) > 1:
        keep = blocks[0]
        if steps[-1] not in keep:  # keep the last step: it is the headline's
            keep = keep[:-1] + [steps[-1]] if len(keep) > 1 else [steps[-1]]
        hidden = len(steps) - len(keep)
        blocks = [keep]
    for block in blocks:
        out.append("")
        header = ["quantity", "kind"] + [f"step {s}" for s in block]
        rows = [[q, lab] + [cells.get((key[0], key[1], s), "-") for s in block] for (q, lab), key in zip(labels, keys)]
        out.append(text_table(header, rows, align="ll" + "r" * len(block), width=width))
    if hidden:
        out.append(f"({hidden} more recorded step{'s' if hidden > 1 else ''}: print(report.summary(full=True)), or report.table)")
    out.append("")
    out.append(_audit_verdict(report))
    out.append("sources:")
    sources = sorted(dict.fromkeys(zip(t["quantity"], t["kind"], t["source"], t["released"])), key=lambda r: order.get(r[1], 4))
    seen = set()
    for q, k, src, released in sources:
        if (q, k) in seen:
            continue
        seen.add((q, k))
        text = wrap_text(f"{q} ({k}; releases {released}): {src}", width, indent="    ", first="  ")
        if not full and text.count("\n") > 1:  # two lines each; report.summary(full=True) has all
            text = "\n".join(text.splitlines()[:2])[: -3].rstrip() + "..."
        out.append(text)
    return "\n".join(out)


def _audit_headline(report, step: int) -> list:
    """One sentence: between what the chains certify and what the accountants allow."""
    t = report.table
    at = t[t["step"] == step]
    bounds = at[at["kind"] == "bound"]
    exact = at[at["kind"] == "exact"]
    lb = at[at["kind"] == "lower bound"]
    est = at[(at["kind"] == "estimate") & (at["quantity"] == "last iterate")]
    parts = []
    if not lb.empty:
        parts.append(f"at least {fmt(lb['epsilon'].iloc[0])} (certified by the chains at {_confidence(report.confidence)} confidence)")
    for _, r in exact.iterrows():
        parts.append(f"exactly {fmt(r['epsilon'])} ({r['quantity']})")
    finite_bounds = bounds[np.isfinite(bounds["epsilon"].astype(float))]
    if not finite_bounds.empty:
        best = finite_bounds.loc[finite_bounds["epsilon"].astype(float).idxmin()]
        of = f", the tightest of {len(bounds)} bounds" if len(bounds) > 1 else ""
        parts.append(f"at most {fmt(best['epsilon'])} ({best['quantity']}{of}, a bound for releasing the {best['released'] or 'output'})")
    elif not bounds.empty:
        parts.append("unbounded by the accountants given (every bound is infinite)")
    if not parts:
        return []
    sentence = f"At step {step} the last iterate's eps(delta = {fmt(report.delta)}) is " + " and ".join(
        [", ".join(parts[:-1]), parts[-1]] if len(parts) > 1 else parts
    )
    if not est.empty:
        e = est.iloc[0]
        sentence += f"; the plug-in estimate is {fmt(e['epsilon'], 3)} {fmt_interval(e['lower'], e['upper'])} (no guarantee)"
    return [sentence + "."]


def _audit_verdict(report) -> str:
    violations = getattr(report, "violations", None)
    if report.ok:
        return "verdict: ok (no bound or exact value lies below the chains' certified lower bound)"
    if violations is not None and not violations.empty:
        items = "; ".join(
            f"step {int(v.step)}: {v.quantity} ({v.kind}) {fmt(v.epsilon)} < certified {fmt(v.lower_confidence_limit)}"
            for v in violations.itertuples()
        )
        return "verdict: PRIVACY VIOLATION: a claimed value lies below what the chains certify: " + items
    return "verdict: NOT OK (see the report's checks)"


# --- PrivacyCurve ---------------------------------------------------------------------------------
def curve_summary(curve, deltas: Sequence[float] = DELTAS, width: int = WIDTH) -> str:
    """eps at a ladder of deltas, what the curve holds, and its provenance."""
    prov = curve.provenance
    head = f"PrivacyCurve ({prov.mode}): {prov.result}" + (f"; releases {prov.released}" if prov.released else "")
    lines = [wrap_text(head, width, indent="  ", first="")]
    batch = curve.rdp.shape[:-1] if curve.has_rdp else (curve.deltas.shape[:-1] if curve.has_profile else ())
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


# --- estimator results ----------------------------------------------------------------------------
def lower_bound_summary(r, width: int = WIDTH) -> str:
    """LowerBoundResult: the certified eps, the sample size's ceiling and the certifying set."""
    op = ">" if r.tail == "upper" else "<"
    lines = [
        f"LowerBoundResult: eps >= {fmt(r.epsilon)} at delta = {fmt(r.delta)} ({_confidence(r.confidence)} confidence; "
        f"a valid lower bound)",
        wrap_text(
            f"Clopper-Pearson limits on {fmt_count(r.holdout_p)} + {fmt_count(r.holdout_q)} held-out samples "
            f"(the set chosen on {fmt_count(r.selection_p)} + {fmt_count(r.selection_q)} others); the most these sample "
            f"sizes can certify is {fmt(r.resolution_ceiling, 3)}",
            width, indent="  ",
        ),
        wrap_text(
            f"set {{{r.statistic} {op} {fmt(r.threshold)}}}, {r.direction}: held-out counts {fmt_count(r.count_p)} (D) / "
            f"{fmt_count(r.count_q)} (D'); P(S) >= {fmt(r.prob_p_bounds[0], 3)}, Q(S) <= {fmt(r.prob_q_bounds[1], 3)}"
            if r.direction == "P vs Q" else
            f"set {{{r.statistic} {op} {fmt(r.threshold)}}}, {r.direction}: held-out counts {fmt_count(r.count_p)} (D) / "
            f"{fmt_count(r.count_q)} (D'); Q(S) >= {fmt(r.prob_q_bounds[0], 3)}, P(S) <= {fmt(r.prob_p_bounds[1], 3)}",
            width, indent="  ",
        ),
    ]
    if getattr(r, "oracle_epsilon", None) is not None:
        lines.append(f"  the best this procedure can do at this sample size for the reference pair: {fmt(r.oracle_epsilon)}")
    return "\n".join(lines)


def epsilon_estimate_summary(r, width: int = WIDTH) -> str:
    lines = [
        f"EpsilonEstimate: eps ~ {fmt(r.epsilon)} at delta = {fmt(r.delta)}, {_confidence(r.confidence)} bootstrap interval "
        f"{fmt_interval(*r.interval)}",
        wrap_text(
            f"plug-in histogram estimate ({r.num_bins} bins of the statistic {r.statistic!r}, {r.num_bootstrap} "
            f"{'paired ' if r.paired else ''}bootstrap resamples); no finite-sample guarantee (for one: "
            f"epsilon_lower_bound). By direction: P vs Q {fmt(r.epsilon_p_vs_q)}, Q vs P {fmt(r.epsilon_q_vs_p)}",
            width, indent="  ",
        ),
    ]
    return "\n".join(lines)


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


def contamination_summary(r, width: int = WIDTH) -> str:
    k = np.asarray(r.epsilons).size
    lines = [
        wrap_text(f"ContaminationEstimate: eps_hat = {fmt(r.epsilon)} at delta = {fmt(r.delta)} (the {r.quantile:g} quantile "
                  f"over {fmt_count(k)} simulated datasets)", width, indent="  ", first=""),
        wrap_text(
            f"{_confidence(r.interval_confidence)} distribution-free interval for that quantile {fmt_interval(*r.interval)}; "
            f"bootstrap s.e. {fmt(r.bootstrap_se, 3)}; n = {fmt_count(r.num_records)} records, contamination rate "
            f"{fmt(r.contamination_rate)} (paper 003, Algorithm 1); {fmt(r.seconds, 3)} s",
            width, indent="  ",
        ),
    ]
    if r.num_failed or r.num_unresolved_tail:
        lines.append(wrap_text(
            f"WARNING: {r.num_failed} datasets failed (counted as +inf) and {r.num_unresolved_tail} had no particle outside the "
            "box (phi set by the particles' extent: raise num_particles or proposal_scale)", width, indent="  ", first="  "))
    return "\n".join(lines)


def contamination_figure(r):
    fig, (ax,) = new_figure(1, size=(6.0, 3.8))
    eps = np.asarray(r.epsilons, dtype=float)
    finite = eps[np.isfinite(eps)]
    ax.hist(finite, bins=min(50, max(10, finite.size // 10)), alpha=0.7, label=f"eps_hat per dataset ({finite.size})")
    ax.axvline(r.epsilon, color="C3", label=f"{r.quantile:g} quantile = {fmt(r.epsilon, 3)}")
    lo, hi = r.interval
    if np.isfinite(lo) and np.isfinite(hi):
        ax.axvspan(lo, hi, color="C3", alpha=0.15, label=f"{_confidence(r.interval_confidence)} interval")
    ax.set_xlabel("eps_hat")
    ax.set_ylabel("datasets")
    ax.legend(fontsize=8)
    ax.set_title(f"paper 003 Algorithm 1: n = {fmt_count(r.num_records)}, delta = {fmt(r.delta)}", fontsize=10)
    return fig


# --- CoupledResult --------------------------------------------------------------------------------
def _law_gap(x: np.ndarray, y: np.ndarray):
    """Mean difference of the two chains' laws (norm) and the spread of D's chains along it."""
    diff = y.mean(axis=0) - x.mean(axis=0)
    norm = float(np.linalg.norm(diff))
    direction = diff / norm if norm > 0 else np.eye(x.shape[1])[0]
    return norm, float(np.std(x @ direction))


def coupled_summary(r, width: int = WIDTH, limit: int = 8) -> str:
    cfg = r.config or {}
    num_pairs = len(r.finite)
    model = cfg.get("model", "?")
    dim = cfg.get("dim", r.positions.shape[-1] if np.ndim(r.positions) == 3 else "?")
    sampler = cfg.get("sampler", {}) or {}
    batching = (sampler.get("batching") or {}).get("name", "?") if isinstance(sampler, dict) else "?"
    lines = [
        wrap_text(
            f"CoupledResult: {fmt_count(num_pairs)} chain pairs on D and D' ({fmt_count(r.num_nonfinite)} non-finite), "
            f"model {model} (d = {dim}), {sampler.get('name', 'sampler') if isinstance(sampler, dict) else sampler} "
            f"(step size {sampler.get('step_size', '?') if isinstance(sampler, dict) else '?'}, {batching} batches"
            + (f", clip {sampler['clip_norm']}" if isinstance(sampler, dict) and sampler.get("clip_norm") else "")
            + f"), {cfg.get('adjacency', '?')} pair differing in record {cfg.get('differing_index', '?')} of "
            f"{cfg.get('num_records', '?')}",
            width, indent="  ", first="",
        )
    ]
    fin = r.finite_only() if r.num_nonfinite else r
    steps = np.asarray(r.steps)
    idx = np.arange(steps.size)
    if idx.size > limit:
        idx = np.unique(np.linspace(0, idx.size - 1, limit).round().astype(int))
    rows = []
    for i in idx:
        x, y = np.asarray(fin.positions[i], dtype=float), np.asarray(fin.neighbour_positions[i], dtype=float)
        if x.shape[0] == 0:
            rows.append([str(int(steps[i])), "-", "-", "-", "-"])
            continue
        gap, spread = _law_gap(x, y)
        loss = np.asarray(fin.path_loss[i], dtype=float)
        rows.append([str(int(steps[i])), fmt(gap, 3), fmt(spread, 3), fmt(gap / spread if spread > 0 else np.inf, 3), f"{fmt(loss.mean(), 3)} +- {fmt(loss.std(), 3)}"])
    lines.append(text_table(["step", "|mean D - mean D'|", "sd along it", "gap / sd", "path privacy loss"], rows, indent=2, width=width))
    if idx.size < steps.size:
        lines.append(f"  ({steps.size - idx.size} more recorded steps in .steps)")
    timing = [f"{k.split('_')[0]} {fmt(cfg[k], 3)} s" for k in ("compile_seconds", "run_seconds") if k in cfg]
    lines.append(truncate(
        "  arrays: positions, neighbour_positions (step, pair, d); path_loss (step, pair)"
        + (f"; {', '.join(timing)}" if timing else ""), width))
    return "\n".join(lines)


def coupled_figure(r, max_panels: int = 4):
    """Per recorded step (up to ``max_panels``, the last included): histograms of D's and D''s
    chains projected on the difference of their means (for d = 1, the coordinate itself)."""
    fin = r.finite_only() if r.num_nonfinite else r
    steps = np.asarray(r.steps)
    keep = [i for i in range(steps.size) if steps[i] > 0] or list(range(steps.size))
    if len(keep) > max_panels:
        keep = [keep[j] for j in np.unique(np.linspace(0, len(keep) - 1, max_panels).round().astype(int))]
    fig, axes = new_figure(len(keep), size=(3.6, 3.2))
    for ax, i in zip(axes, keep):
        x, y = np.asarray(fin.positions[i], dtype=float), np.asarray(fin.neighbour_positions[i], dtype=float)
        if x.shape[1] == 1:
            px, py, label = x[:, 0], y[:, 0], "theta"
        else:
            diff = y.mean(axis=0) - x.mean(axis=0)
            u = diff / np.linalg.norm(diff) if np.linalg.norm(diff) > 0 else np.eye(x.shape[1])[0]
            px, py, label = x @ u, y @ u, "theta along mean(D') - mean(D)"
        lo, hi = np.quantile(np.concatenate([px, py]), [0.001, 0.999])
        bins = np.linspace(lo, hi, 60)
        ax.hist(px, bins=bins, alpha=0.55, density=True, label="D")
        ax.hist(py, bins=bins, alpha=0.55, density=True, label="D'")
        ax.set_title(f"step {int(steps[i])}", fontsize=10)
        ax.set_xlabel(label, fontsize=8)
        ax.set_yticks([])
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{fmt_count(len(fin.finite))} coupled pairs: where the two chains' laws differ", fontsize=10)
    return fig

"""How dpjax's result objects print and draw themselves.

One place for the presentation of :class:`~dpjax.audit.AuditReport`, the estimator results,
:class:`~dpjax.accountants.PrivacyCurve` and :class:`~dpjax.CoupledResult`: their
``__repr__`` / ``summary()`` / ``figure()`` / ``save(path)`` methods are thin calls into this
package, so the result classes stay about numbers and this package about reading them.

Conventions: text fits :data:`WIDTH` columns (a terminal, a notebook cell); numbers carry four
significant digits (``fmt``), infinities print as ``inf``, a missing value as ``-``; every
summary names where its numbers come from (the accountant's provenance, the estimator and
its confidence, the number of chain pairs). Figures are :class:`matplotlib.figure.Figure`
objects (no pyplot state: nothing opens a window or leaks between calls); notebooks display
them, scripts write them with ``save(path)``.

Layout: this file holds the primitives (numbers, text tables, figures, readable axes); one
submodule per family of results holds its summary and figure (:mod:`.audit`,
:mod:`.curves`, :mod:`.estimates`, :mod:`.coupled`), re-exported here.
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
    set_scale("symlog", linthresh=linthresh, linscale=0.5)
    set_lim(0.0, 1.5 * pos.max())
    readable_log_ticks(ax, axis)
    # say where the axis changes from linear (0 up to linthresh) to logarithmic: without it,
    # ticks reading 0, 0.01, 0.03 look evenly spaced numbers on one scale
    span = ax.axhspan if axis == "y" else ax.axvspan
    span(0.0, linthresh, color="0.93", zorder=0, lw=0)
    where = (0.99, 0.5 * linthresh) if axis == "y" else (0.5 * linthresh, 0.99)
    transform = ax.get_yaxis_transform() if axis == "y" else ax.get_xaxis_transform()
    ax.text(*where, f"linear below {_tick_label(linthresh)}, log above", transform=transform, fontsize=6, color="0.45",
            ha="right" if axis == "y" else "center", va="center", rotation=0 if axis == "y" else 90)


# the per-result presentations (they import the primitives above)
from .audit import audit_figure, audit_summary, verdict_word  # noqa: E402
from .coupled import coupled_figure, coupled_summary  # noqa: E402
from .curves import (  # noqa: E402
    curve_figure, curve_summary, last_iterate_gdp_summary, loss_profile_figure, loss_profile_summary, pld_epsilons_summary,
    renyi_figure, renyi_summary,
)
from .estimates import (  # noqa: E402
    contamination_figure,
    contamination_summary,
    epsilon_estimate_summary,
    gdp_fit_summary,
    lower_bound_summary,
    rdp_lower_bound_summary,
    tradeoff_band_summary,
)

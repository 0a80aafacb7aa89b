"""How an :class:`~dpjax.audit.AuditReport` prints and draws: the headline, eps per step with each
row's release, the verdict, the notes, the sources at the headline step; one figure panel per
release with the verdict in the title."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from . import WIDTH, _confidence, epsilon_axis, fmt, fmt_count, fmt_interval, new_figure, text_table, wrap_text

# The table's own words print as they are (report.table["kind"], report.table["released"]): one
# set of labels. Claims first, then what the chains certify, then the fit, then estimates.
_KIND_ORDER = {"bound": 0, "exact": 1, "lower bound": 2, "band": 3, "fit (assumes GDP)": 4, "estimate": 5}
# A release longer than this prints as a reference ("release 1") with its full words below the
# table, so a bound's own description never widens the table past the page or is cut.
_RELEASE_WIDTH = 24
# Releases that contain one another: the last iterate is a function of the path, the path of the
# path with its batches. A number of a larger release is not bounded by a smaller one's bound.
_RELEASE_RANK = {"last iterate": 0, "path (every iterate)": 1, "path and batches": 2}


def _release_keys(releases) -> dict:
    """release -> what the table prints for it: itself, or "release k" when too long."""
    out, k = {}, 0
    for released in releases:
        if released in out:
            continue
        if len(released) <= _RELEASE_WIDTH:
            out[released] = released
        else:
            k += 1
            out[released] = f"release {k}"
    return out


def _not_comparable(at) -> list:
    """Sentences for rows at one step that a reader could compare but must not: a number of a
    larger (or unrelated) release beside a bound of a smaller one. Every release contains the
    last iterate, so the last iterate's numbers are comparable with any bound (the audit checks
    exactly that); a path's numbers only with bounds of the path or a larger release."""
    bounds = at[(at["kind"] == "bound") & np.isfinite(at["epsilon"].astype(float))]
    measured = at[at["kind"].isin(["lower bound", "band", "fit (assumes GDP)", "estimate", "exact"])
                  & np.isfinite(at["epsilon"].astype(float)) & (at["released"] != "last iterate")]
    out = []
    for m in measured.itertuples():
        rank_m = _RELEASE_RANK.get(m.released)
        apart = []
        for b in bounds.itertuples():
            rank_b = _RELEASE_RANK.get(b.released)
            if b.released == m.released or (rank_b is not None and rank_m is not None and rank_m < rank_b):
                continue  # the same release, or one the bound's release contains
            apart.append(f"{b.quantity} ({fmt(b.epsilon)}, {b.released})")
        if apart:
            out.append(f"{m.quantity} ({m.kind}, {fmt(m.epsilon)}) is of the {m.released}, a release the bound{'s' if len(apart) > 1 else ''} "
                       f"{', '.join(apart[:-1]) + ' and ' if len(apart) > 1 else ''}{apart[-1]} {'do' if len(apart) > 1 else 'does'} not cover: not comparable (above "
                       f"{'them' if len(apart) > 1 else 'it'} would be no violation)")
    return out


def _audit_cell(row) -> str:
    kind, eps = row["kind"], row["epsilon"]
    if kind == "bound":
        return "<= " + fmt(eps)
    if kind == "exact":
        return "= " + fmt(eps)
    if kind in ("lower bound", "band", "fit (assumes GDP)"):
        return ">= " + fmt(eps)
    lo, hi = row.get("lower", np.nan), row.get("upper", np.nan)
    if all(x is None or not np.isfinite(x) for x in (lo, hi)) and not (isinstance(hi, float) and math.isinf(hi)):
        return fmt(eps)
    return f"{fmt(eps, 3)} {fmt_interval(lo, hi)}"


def _step_blocks(steps: Sequence[int], cell_width: int, first_width: int, width: int) -> list:
    # first_width counts a 2-space separator after each label column; a block of k steps adds k
    # cells and k - 1 more separators: first_width + k (cell_width + 2) - 2 <= width
    per_block = max(1, (width - first_width + 2) // (cell_width + 2))
    return [list(steps[i : i + per_block]) for i in range(0, len(steps), per_block)]


def _row_keys(t) -> list:
    """(quantity, kind, released) of the table in print order: claims, certified, fits, estimates."""
    keys = list(dict.fromkeys(zip(t["quantity"], t["kind"], t["released"])))
    return sorted(keys, key=lambda k: _KIND_ORDER.get(k[1], 9))


def audit_summary(report, full: bool = False, width: int = WIDTH) -> str:
    """The audit at a glance: the headline at the last step (how much privacy leaks, by whose
    account, how sure), a table of eps per recorded step (each row naming its release), the
    verdict, the notes and the sources of the headline step's numbers.

    ``full=False`` shows the steps that fit one block of ``width`` columns (first and last
    steps kept); ``full=True`` shows every step, in as many blocks as needed."""
    t = report.table
    coupled = report.coupled
    num_pairs = len(coupled.finite)
    conf = _confidence(report.confidence)
    nonfinite = f"{fmt_count(coupled.num_nonfinite)} non-finite" + (", excluded" if coupled.num_nonfinite else "")
    divergence = getattr(report, "divergence", None)
    if divergence is not None:
        # the most pairs counted as diverged at any recorded step (non-finite ones included)
        grown = int(np.max(divergence.diverged_pairs(), initial=0))
        nonfinite += f", {fmt_count(grown)} diverged" + (": NOT measurable, see the verdict" if grown else "")
    out = [wrap_text(
        f"dpjax audit: eps at delta = {fmt(report.delta)}, {conf} confidence, {fmt_count(num_pairs)} coupled chain pairs ({nonfinite})",
        width, indent="  ", first="")]
    if t.empty:
        out.append("no step after 0 was recorded: nothing is released yet, so there is nothing to compare")
        out.append(_audit_verdict(report, width))
        return "\n".join(out)
    steps = sorted(int(s) for s in t["step"].unique())
    out.extend(wrap_text(line, width) for line in _audit_headline(report, steps[-1]))

    keys = _row_keys(t)
    cells = {}
    for _, row in t.iterrows():
        cells[(row["quantity"], row["kind"], row["released"], int(row["step"]))] = _audit_cell(row)
    release_keys = _release_keys(r for _, _, r in keys)
    labels = [(q, k, release_keys[r]) for q, k, r in keys]
    cell_width = max([len(c) for c in cells.values()] + [len(f"step {steps[-1]}")])
    first_width = sum(max(len(lab[j]) for lab in labels) for j in range(3)) + 6
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
        header = ["quantity", "kind", "release"] + [f"step {s}" for s in block]
        rows = [[q, lab, rel] + [cells.get((key[0], key[1], key[2], s), "-") for s in block] for (q, lab, rel), key in zip(labels, keys)]
        out.append(text_table(header, rows, align="lll" + "r" * len(block), width=width))
    if hidden:
        out.append(f"({hidden} more recorded step{'s' if hidden > 1 else ''}: print(report.summary(full=True)), or report.table)")
    for released, key in release_keys.items():
        if key != released:
            out.append(wrap_text(f"{key}: {released}", width, indent="  ", first=""))
    apart = _not_comparable(t[t["step"] == steps[-1]])
    if apart:
        out.append(f"releases differ (step {steps[-1]}):")
        out.extend(wrap_text(line, width, indent="    ", first="  ") for line in apart)
    rdp = getattr(report, "rdp", None)
    if rdp is not None:
        shown = ", ".join(f"a={fmt(a, 3)}: >= {fmt(v)}" if c else f"a={fmt(a, 3)}: -" for a, v, c in zip(rdp.orders, rdp.rdp, rdp.certified))
        out.append(wrap_text(f"RDP of the last iterate at step {steps[-1]} (certified, {conf}, all orders together; - where the "
                             f"samples certify nothing): {shown}", width, indent="  ", first=""))
    out.append("")
    out.append(_audit_verdict(report, width))
    notes = list(getattr(report, "notes", []) or [])
    if notes:
        out.append("notes:")
        out.extend(wrap_text(note, width, indent="    ", first="  ") for note in notes)
    out.append(f"sources: (of the numbers at step {steps[-1]}, the headline's)")
    at = t[t["step"] == steps[-1]]
    for q, k, released in _row_keys(at):
        src = at[(at["quantity"] == q) & (at["kind"] == k) & (at["released"] == released)]["source"].iloc[0]
        # in full, wrapped at word boundaries: a source cut mid-sentence can drop the very
        # assumption ("ONLY IF ...") that decides whether the number applies
        out.append(wrap_text(f"{q} ({k}; release: {released}): {src}", width, indent="    ", first="  "))
    return "\n".join(out)


def _release_phrase(released: str) -> str:
    if released == "last iterate":
        return "a bound for releasing the last iterate"
    if released.startswith("path (every iterate)"):
        return "a bound for releasing every iterate, hence the last one"
    if released.startswith("release not stated"):
        return "a bound that does not state its release"
    return f"a bound for releasing the {released}"


def _audit_headline(report, step: int) -> list:
    """One sentence: between what the chains certify and what the accountants allow."""
    t = report.table
    at = t[t["step"] == step]
    bounds = at[at["kind"] == "bound"]
    exact = at[at["kind"] == "exact"]
    lb = at[at["kind"] == "lower bound"]
    est = at[(at["kind"] == "estimate") & (at["quantity"] == "last iterate")]
    fit = at[at["kind"] == "fit (assumes GDP)"]
    parts = []
    if not lb.empty:
        parts.append(f"at least {fmt(lb['epsilon'].iloc[0])} (certified by the chains at {_confidence(report.confidence)} confidence)")
    for _, r in exact.iterrows():
        parts.append(f"exactly {fmt(r['epsilon'])} ({r['quantity']})")
    finite_bounds = bounds[np.isfinite(bounds["epsilon"].astype(float))]
    if not finite_bounds.empty:
        best = finite_bounds.loc[finite_bounds["epsilon"].astype(float).idxmin()]
        of = f", the tightest of {len(bounds)} bounds" if len(bounds) > 1 else ""
        parts.append(f"at most {fmt(best['epsilon'])} ({best['quantity']}{of}, {_release_phrase(str(best['released']))})")
    elif not bounds.empty:
        parts.append("unbounded by the accountants given (every bound is infinite)")
    if not parts:
        return []
    divergence = getattr(report, "divergence", None)
    if divergence is not None and divergence.diverged()[np.asarray(divergence.steps) > 0].any():
        # what the chains "certify" after they diverged is a property of the rounding, not of the sampler
        parts = [p.replace("(certified by the chains at", "(what the DIVERGED chains show at") for p in parts]
    sentence = f"At step {step} the last iterate's eps(delta = {fmt(report.delta)}) is " + " and ".join(
        [", ".join(parts[:-1]), parts[-1]] if len(parts) > 1 else parts
    )
    extras = []
    if not fit.empty:
        extras.append(f"a GDP fit gives {fmt(fit['epsilon'].iloc[0])} (assumes the trade-off is Gaussian; not certified)")
    if not est.empty:
        e = est.iloc[0]
        extras.append(f"the plug-in estimate is {fmt(e['epsilon'], 3)} {fmt_interval(e['lower'], e['upper'])} (no guarantee)")
    if extras:
        sentence += "; " + "; ".join(extras)
    return [sentence + "."]


def verdict_word(report) -> str:
    """"ok", "PRIVACY VIOLATION" or "NOT OK": the verdict in the figure's title."""
    if report.ok:
        return "ok"
    violations = getattr(report, "violations", None)
    return "PRIVACY VIOLATION" if violations is not None and not violations.empty else "NOT OK"


def _audit_verdict(report, width: int = WIDTH) -> str:
    """The verdict line, then one indented line per problem (each wrapped). An audit's
    ``problems`` already restate its violations (with their sources), so the violations table
    is listed only for a report that carries no problems of its own."""
    violations = getattr(report, "violations", None)
    if report.ok:
        return wrap_text("verdict: ok (no bound or exact value lies below the chains' certified lower bound; fits are not part of the verdict)",
                         width, indent="  ", first="")
    violated = violations is not None and not violations.empty
    lines = list(getattr(report, "problems", []) or [])
    if violated and not lines:
        lines = [
            f"step {int(v.step)}: {v.quantity} ({v.kind}) {fmt(v.epsilon)} < certified {fmt(v.lower_confidence_limit)}"
            for v in violations.itertuples()
        ]
    if not lines:
        return "verdict: NOT OK (see the report's checks)"
    head = "verdict: PRIVACY VIOLATION: a claimed value lies below what the chains certify:" if violated else "verdict: NOT OK:"
    return "\n".join([head] + [wrap_text(line, width, indent="    ", first="  ") for line in lines])


# --- the figure ---------------------------------------------------------------------------------
_STYLE = {
    "bound": dict(ls="--", marker="."),
    "exact": dict(ls="-", marker="."),
    "lower bound": dict(fmt="^", ms=8),
    "band": dict(fmt="v", ms=7),
    "fit (assumes GDP)": dict(fmt="D", ms=6, mfc="none"),
    "estimate": dict(fmt="o", ms=5),
}


def _panels(t) -> list:
    """Releases in the order: last iterate, path, path and batches, the rest."""
    order = {"last iterate": 0, "path (every iterate)": 1, "path and batches": 2}
    return sorted(t["released"].unique(), key=lambda r: (order.get(r, 3), r))


def _label(quantity: str, kind: str, confidence: float) -> str:
    if kind == "lower bound":
        return f"{quantity}: certified {_confidence(confidence)} lower bound"
    if kind == "band":
        return f"{quantity}: certified by the trade-off band ({_confidence(confidence)})"
    if kind == "fit (assumes GDP)":
        return f"{quantity}: GDP fit ({_confidence(confidence)}; assumes GDP, not certified)"
    if kind == "estimate":
        return f"{quantity}: estimate, {_confidence(confidence)} interval"
    return f"{quantity} ({kind})"


def audit_figure(report, ax=None):
    """eps(delta) against the step, one panel per release (the last iterate's certified lower
    bound is repeated, faint, in the panels of larger releases, where it is a lower bound too).
    Infinite interval ends are arrows to the top; markers at 0 are drawn on the axis (not
    clipped); legends sit below their panel; the title carries the verdict."""
    t = report.table
    releases = _panels(t) if not t.empty else ["last iterate"]
    if ax is not None:
        fig, axes = ax.figure, [ax] * len(releases)
    else:
        fig, axes = new_figure(len(releases), size=(5.6, 4.6))
    lcl = t[t["kind"] == "lower bound"].sort_values("step") if not t.empty else t
    for j, (released, axis) in enumerate(zip(releases, axes)):
        rows_here = t[t["released"] == released]
        values = np.concatenate([rows_here["epsilon"], rows_here["upper"]]) if not rows_here.empty else np.array([1.0])
        if released != "last iterate" and not lcl.empty:
            values = np.concatenate([values, lcl["epsilon"]])
        epsilon_axis(axis, values)
        top = axis.get_ylim()[1]
        for (quantity, kind), rows in rows_here.groupby(["quantity", "kind"], sort=False):
            rows = rows.sort_values("step")
            label = _label(quantity, kind, report.confidence)
            style = _STYLE.get(kind, dict(fmt="o"))
            if kind in ("bound", "exact"):
                axis.plot(rows["step"], rows["epsilon"], label=label, clip_on=False, **style)
                continue
            eps = rows["epsilon"].to_numpy(float)
            lo = np.nan_to_num(eps - rows["lower"].to_numpy(float), nan=0.0, posinf=0.0, neginf=0.0)
            hi = rows["upper"].to_numpy(float)
            open_above = np.isposinf(hi)
            hi_err = np.nan_to_num(np.where(open_above, top - eps, hi - eps), nan=0.0, posinf=0.0, neginf=0.0)
            yerr = None if kind in ("lower bound", "band", "fit (assumes GDP)") else np.vstack([np.maximum(lo, 0), np.maximum(hi_err, 0)])
            line = axis.errorbar(rows["step"], eps, yerr=yerr, capsize=3, label=label, clip_on=False, **style)
            for s, e in zip(rows["step"][open_above], eps[open_above]):  # an infinite upper end: an arrow off the top
                axis.annotate("", xy=(s, top), xytext=(s, e), annotation_clip=False,
                              arrowprops=dict(arrowstyle="->", color=line[0].get_color(), lw=1.2))
            if open_above.any():
                axis.plot([], [], ls="none", marker=r"$\uparrow$", color=line[0].get_color(), label=f"{quantity}: interval open above (inf)")
        if released != "last iterate" and not lcl.empty:
            axis.plot(lcl["step"], lcl["epsilon"], "^", color="0.6", ms=7, clip_on=False,
                      label="certified for the last iterate (a lower bound here too)")
        if not report.violations.empty:
            v = report.violations[report.violations["released"] == released]
            if not v.empty:
                axis.scatter(v["step"], v["epsilon"], s=140, facecolors="none", edgecolors="red", linewidths=2, label="VIOLATION",
                             zorder=5, clip_on=False)
        from matplotlib.ticker import MaxNLocator

        axis.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
        axis.set_xlabel("step")
        axis.set_ylabel(f"epsilon at delta = {fmt(report.delta)}")
        axis.set_title(f"release: {released}", fontsize=10)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=1, frameon=False)
    n = len(report.coupled.finite)
    fig.suptitle(f"audit: {verdict_word(report)}; {fmt_count(n)} coupled chain pairs ({fmt_count(report.coupled.num_nonfinite)} "
                 f"non-finite), {_confidence(report.confidence)} confidence", fontsize=11)
    return fig

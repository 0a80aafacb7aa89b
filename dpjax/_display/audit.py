"""How an :class:`~dpjax.audit.AuditReport` prints: the headline, eps per step, the verdict, the sources."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from . import WIDTH, _confidence, fmt, fmt_count, fmt_interval, text_table, wrap_text


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
        out.append(_audit_verdict(report, width))
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
    out.append(_audit_verdict(report, width))
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


def _audit_verdict(report, width: int = WIDTH) -> str:
    """The verdict line, then one indented line per problem (each wrapped). An audit's
    ``problems`` already restate its violations (with their sources), so the violations table
    is listed only for a report that carries no problems of its own."""
    violations = getattr(report, "violations", None)
    if report.ok:
        return "verdict: ok (no bound or exact value lies below the chains' certified lower bound)"
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

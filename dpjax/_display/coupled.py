"""How a :class:`~dpjax.CoupledResult` prints (what ran, how far apart the two laws are per step) and
draws (the two chains' histograms)."""
from __future__ import annotations


import numpy as np

from . import WIDTH, fmt, fmt_count, new_figure, text_table, truncate, wrap_text


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

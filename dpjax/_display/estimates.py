"""How the scalar estimators' results print: the certified lower bound, the plug-in estimate, paper
003's contamination estimate (with its histogram)."""
from __future__ import annotations


import numpy as np

from . import WIDTH, _confidence, fmt, fmt_count, fmt_interval, new_figure, wrap_text


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
        f"EpsilonEstimate: eps ~ {fmt(r.epsilon)} at delta = {fmt(r.delta)}, "
        + (f"{_confidence(r.confidence)} bootstrap interval {fmt_interval(*r.interval)}" if r.num_bootstrap
           else f"no bootstrap interval (num_bootstrap=0; certified >= {fmt(r.interval[0])})"),
        wrap_text(
            f"plug-in histogram estimate ({r.num_bins} bins of the statistic {r.statistic!r}, {r.num_bootstrap} "
            f"{'paired ' if r.paired else ''}bootstrap resamples); no finite-sample guarantee (for one: "
            f"epsilon_lower_bound). By direction: P vs Q {fmt(r.epsilon_p_vs_q)}, Q vs P {fmt(r.epsilon_q_vs_p)}",
            width, indent="  ",
        ),
    ]
    return "\n".join(lines)


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
    ax.legend(fontsize=8, loc="upper right", framealpha=0.95)
    ax.set_title(f"paper 003 Algorithm 1: n = {fmt_count(r.num_records)}, delta = {fmt(r.delta)}", fontsize=10)
    return fig




def gdp_fit_summary(r, width: int = WIDTH, deltas=(1e-2, 1e-3, 1e-5)) -> str:
    """GDPLowerBound: mu, eps at a few deltas labelled as a fit, and the assumption in words."""
    eps = ", ".join(f"{fmt(r.epsilon(d))} at delta = {fmt(d)}" for d in deltas)
    lines = [
        f"GDPLowerBound (a fit, assumes GDP): mu >= {fmt(r.mu)} ({_confidence(r.confidence)} confidence; estimate "
        f"{fmt(r.mu_estimate)}); eps {eps}",
        wrap_text(
            f"AUC {fmt(r.auc)} (lower limit {fmt(r.auc_lower)}, {r.method}) of the threshold tests on {r.statistic!r} "
            f"({r.orientation}), {fmt_count(r.holdout_p)} + {fmt_count(r.holdout_q)} held-out samples "
            f"({'coupled pairs' if r.paired else 'independent'})",
            width, indent="  ",
        ),
        wrap_text(r.assumption, width, indent="  "),
    ]
    return "\n".join(lines)


def tradeoff_band_summary(r, width: int = WIDTH) -> str:
    """TradeoffBand: the band at each alpha, simultaneous, and the eps it certifies."""
    rows = ", ".join(f"T({fmt(a, 3)}) <= {fmt(b, 3)}" for a, b in zip(r.alpha[:8], r.beta_upper[:8]))
    more = f" (+{r.alpha.size - 8} more)" if r.alpha.size > 8 else ""
    return "\n".join([
        f"TradeoffBand: upper bounds on the trade-off T(P, Q), {_confidence(r.confidence)} simultaneous (a band, exact)",
        wrap_text(rows + more, width, indent="  "),
        wrap_text(
            f"from {len(r.tests)} threshold tests on {r.statistic!r} ({r.orientation}), {fmt_count(r.holdout_p)} + "
            f"{fmt_count(r.holdout_q)} held-out samples; certifies eps >= {fmt(r.epsilon_lower_bound(1e-3))} at delta = 0.001",
            width, indent="  ",
        ),
    ])


def rdp_lower_bound_summary(r, width: int = WIDTH) -> str:
    """RDPLowerBound: the certified RDP per order, the unresolved orders named."""
    shown = ", ".join(f"a={fmt(a, 3)}: {fmt(v) if c else 'not certified'}" for a, v, c in zip(r.orders, r.rdp, r.certified))
    return "\n".join([
        f"RDPLowerBound: RDP >= the values below, {_confidence(r.confidence)} confidence for all orders together (certified)",
        wrap_text(shown, width, indent="  "),
    ])

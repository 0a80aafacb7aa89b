"""Small PLD jobs in numpy: the jitted engine's algorithm, without compiling it.

The engine of :mod:`.pld_accountant` runs each step of a PLD accounting as a jitted JAX
program, and each new shape (one step's grid length, FFT length, chunk size) compiles new
programs: 0.5-1.5 s each on a 2-core CPU, so a first answer took 10 s where dp_accounting
takes 0.2 s (issue 38). A handful of configurations is computed here instead, one at a time in
numpy, by the same functions (:mod:`.pld` and :mod:`.pld_pairs` run on numpy or JAX arrays
alike, :mod:`dpjax.accountants._xp`) and the same plan: the same grids and their groups, the same
discretisation (each grid one block of :func:`.pld._discretise_block`), the same Chernoff
windows and FFT lengths (:func:`.pld_plan.window`), the same error terms, tilts and
trimming. Only the rounding differs: numpy's FFT, erfc and sums are not XLA's, and the eps
of the composed PLD is read by :meth:`.pld.DiscretePLD.epsilon` (exact for it, as the
engine's blocked query). tests/test_pld_numpy.py states and checks how closely the two
paths agree (the pessimistic eps of a kept curve to 1e-9 relative at delta >= 1e-5; where a
round-off term is a large part of a mass, up to that term).

The FFT error bound (:func:`.pld.fft_error_constant`) holds for numpy's pocketfft as for XLA's
CPU FFT (DUCC, its successor): both are Cooley-Tukey FFTs of log2(n) butterfly levels for a
power of two n.
"""
from __future__ import annotations

import numpy as np

from .. import _xp
from . import pld as _pld
from . import pld_pairs, pld_plan
from .pld_bracket import _trim


def composed_sets(plan, groups, lengths, step, tail, deltas, keep, max_grid, optimistic, skip_over_limit):
    """As :func:`.pld_accountant._composed_sets`: (pessimistic?, result) of each set of stage
    PMFs (the pessimistic set, then the optimistic ones) of the configurations of ``groups``
    in their order."""
    with np.errstate(all="ignore"):  # logs of 0 and exps of -inf are expected (-inf and 0)
        by_group = [_discretise_group(plan, idx, int(length), step, optimistic) for idx, length in zip(groups, lengths)]
        idx = np.concatenate(groups)
        out = []
        for s_i in range(len(by_group[0])):
            parts = [sets[s_i] for sets in by_group]
            rows = [row for part in parts for row in part[0]]
            inf, k_lo, k_hi = (np.concatenate([part[j] for part in parts]) for j in (1, 2, 3))
            pessimistic = parts[0][4]
            out.append((pessimistic, _compose_set(rows, inf, k_lo, k_hi, plan.steps[idx], step, tail, pessimistic,
                                                  np.asarray(deltas, dtype=np.float64), keep, max_grid, skip_over_limit)))
        return out


def _discretise_group(plan, idx, length, step, optimistic):
    """As :func:`.pld_accountant._discretise_group`, with the stage PMFs of each configuration
    as one (S, W) array of a list (W as the engine's: ``length`` points, or the symmetrised
    pairs' grid)."""
    sigma, q = plan.sigma[idx], plan.q[idx]
    if plan.kind.startswith("symmetrised_"):
        k_top = int(np.max(plan.k_hi[idx]))
        base = plan.kind.split("_", 1)[1]
        disc_len = max(length, 2 * k_top + 1)
        stages = [[_pld._symmetrised_one(disc_len, step, k_top, s, r, base) for s, r in zip(sig, qq)] for sig, qq in zip(sigma, q)]
        pess = [np.stack([st[0] for st in conf]) for conf in stages]
        pess_inf = np.array([[st[1] for st in conf] for conf in stages])
        opt_r = [np.stack([st[2][0] for st in conf]) for conf in stages]
        opt_a = [np.stack([st[2][1] for st in conf]) for conf in stages]
        sets = pld_plan.symmetrised_sets(pess, pess_inf, opt_r, opt_a, sigma.shape, k_top, disc_len)
    else:
        k_lo, k_hi = plan.k_lo[idx], plan.k_hi[idx]
        base, mirrored = pld_pairs.unmirrored(plan.kind)
        steps = [[_discretise(base, mirrored, s, r, lo, hi, length, step) for s, r, lo, hi in zip(*row)]
                 for row in zip(sigma, q, k_lo, k_hi)]
        pess = [np.stack([st[0] for st in conf]) for conf in steps]
        pess_inf = np.array([[st[1] for st in conf] for conf in steps])
        opt = [np.stack([st[2] for st in conf]) for conf in steps]
        sets = [(pess, pess_inf, k_lo, k_hi, True), (opt, np.zeros(sigma.shape), k_lo, k_hi, False)]
    return sets if optimistic else [st for st in sets if st[4]]


def _discretise(base, mirrored, sigma, q, k_lo, k_hi, width, step):
    """One stage's (pess, mass at +inf, opt) on the grid k_lo..k_hi, zero-padded to ``width``:
    the engine's blocks and row assembly (:func:`.pld_accountant._assemble_rows`) with the
    whole grid as one block."""
    cells = int(k_hi - k_lo)
    pess, opt, log_below, log_above = _pld._discretise_block(base, step, np.float64(sigma), np.float64(q), np.int64(k_lo), 0,
                                                             cells, np.bool_(mirrored), size=cells + 1)
    pess = _xp.add_at(pess, 0, np.exp(log_below))  # the mass below the grid, on its lowest point
    above = np.exp(log_above)
    opt = _xp.add_at(opt, cells, above)  # the mass above the grid, rounded down to its top point
    pad = (0, width - (cells + 1))
    return np.pad(pess, pad), above, np.pad(opt, pad)


def _compose_set(rows, inf, k_lo, k_hi, steps, step, tail, pessimistic, deltas, keep, max_grid, skip_over_limit):
    """As :func:`.pld_accountant._compose_set` for the configurations whose stage PMFs are
    ``rows`` ((S, W) each), one at a time."""
    nconf = len(rows)
    stepsf = steps.astype(np.float64)
    chernoff = [_pld.chernoff_log_mgf(p, lo, t, step) for p, lo, t in zip(rows, k_lo, stepsf)]
    lambdas, lm_pos, lm_neg = (np.stack([c[j] for c in chernoff]) for j in range(3))
    offset = np.sum(steps * k_lo, axis=-1)
    top_support = np.sum(steps * k_hi, axis=-1)
    start, n_conf = pld_plan.window(lambdas, lm_pos, lm_neg, offset, top_support, np.max(k_hi - k_lo, axis=-1) + 1, step, tail)
    over = n_conf > max_grid
    if np.any(over) and not skip_over_limit:
        pld_plan.raise_window_limit(over, n_conf, steps, step, max_grid)
    res = {"eps": [np.full(len(deltas), np.nan)] * nconf, "n": n_conf, "tau_up": np.zeros(nconf), "roundoff": np.zeros(nconf),
           "pld": [None] * nconf}
    at_once = not keep and float(np.min(deltas)) < pld_plan.TILT_ALWAYS_BELOW
    for i in np.flatnonzero(~over):
        n = int(n_conf[i])
        p = rows[i][:, :n] if rows[i].shape[-1] >= n else np.pad(rows[i], ((0, 0), (0, n - rows[i].shape[-1])))
        args = (p, k_lo[i], stepsf[i], k_hi[i], start[i])
        out, inf_out, tau_up, tau_lo, roundoff = _pld._compose_one(n, step, p, inf[i], k_lo[i], stepsf[i], k_hi[i], start[i],
                                                                   lambdas[i], lm_pos[i], lm_neg[i])
        if tau_up > tail * 1.0001 or tau_lo > tail * 1.0001:  # the window from _window guarantees this
            raise AssertionError(f"Chernoff window too small: tau_up={tau_up:.3g}, tau_lo={tau_lo:.3g}")
        res["tau_up"][i], res["roundoff"][i] = tau_up, roundoff
        if not pessimistic:
            if keep:
                kept = _pld.remove_from_top(out, tau_lo + roundoff)
                res["pld"][i] = _trim(kept, start[i], np.asarray(inf_out), tail, False)
            eps = [0.0 if keep and d_i == 0 else _epsilon(out, start[i], inf_out - tau_lo - roundoff, step, d)
                   for d_i, d in enumerate(deltas)]
        elif keep:  # bounded through the tilts aimed at KEPT_TILTS: one window for every delta
            bound = _tilted_bound(n, step, args, pld_plan.KEPT_TILTS)
            out_p, inf_p = _pld.pessimistic_window(out, inf_out, tau_up, tau_lo, roundoff, bound)
            res["pld"][i] = _trim(out_p, start[i], np.asarray(inf_p), tail, True)
            eps = [0.0] + [_epsilon(out_p, start[i], inf_p, step, d) for d in deltas[1:]]
        else:  # a tilt aimed at each asked delta, where the engine takes one (TILT_NEEDED, TILT_ALWAYS_BELOW)
            tilt = at_once or roundoff > pld_plan.TILT_NEEDED * float(np.min(deltas))
            eps = []
            for d in deltas:
                bound = _tilted_bound(n, step, args, (d,)) if tilt else None
                out_p, inf_p = _pld.pessimistic_window(out, inf_out, tau_up, tau_lo, roundoff, bound)
                eps.append(_epsilon(out_p, start[i], inf_p, step, d))
        res["eps"][i] = np.array(eps, dtype=np.float64)
    return res


def _tilted_bound(n, step, args, targets):
    """The smallest of the tilted compositions' bounds aimed at the upper-tail masses
    ``targets`` (:func:`.pld.tilt_order`, :func:`.pld.tilted_upper_bound`)."""
    p, lo, t, hi, st = args
    bounds = [_pld.tilted_upper_bound(n, step, p, lo, t, hi, st, _pld.tilt_order(p, lo, t, step, np.float64(target)), None)
              for target in targets]
    return np.min(bounds, axis=0)


def _epsilon(pmf, start, inf_mass, step, delta) -> float:
    """eps(delta) of the composed window, exact for it (:meth:`.pld.DiscretePLD.epsilon`)."""
    return float(_pld.DiscretePLD(pmf, np.asarray(start), np.asarray(inf_mass), step).epsilon(delta))

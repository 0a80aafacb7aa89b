"""``dpjax reproduce sgld-interim``: reduced n vs brute force; full n vs 30-digit mpmath."""
import argparse
import math

import mpmath as mp
import numpy as np
import pytest

from dpjax.accountants.samplers import cyclic_sgld as cs
from dpjax.accountants.mechanisms import mixture as mx
from dpjax.experiments.sgld_interim import figure1 as si


def _args(**kw):
    parser = argparse.ArgumentParser()
    si.add_arguments(parser)
    args = parser.parse_args([])
    args.out, args.quick, args.seed = "unused", True, 0
    args.mc_n, args.pts_runs = 0, 0  # the Monte Carlo and Algorithm 1 parts have their own tests
    for k, v in kw.items():
        setattr(args, k, v)
    return args


def _brute_force_laws(p, epochs):
    """Step-by-step recursion of all n D2 chains (one per odd-record position) and the D1 chain."""
    n, eta = p.n, p.eta
    lam_h = 1 - 0.5 * eta * (p.alpha + n * p.x_high**2 * p.beta)
    lam_l = 1 - 0.5 * eta * (p.alpha + n * p.x_low**2 * p.beta)
    rho_h = 0.5 * eta * n * p.beta * p.c * p.x_high**2
    rho_l = 0.5 * eta * n * p.beta * p.c * p.x_low**2
    m1, v1 = 0.0, p.v0
    m2, v2 = np.zeros(n), np.full(n, p.v0)
    out = []
    for _ in range(epochs):
        for pos in range(n):
            lam = np.full(n, lam_h)
            rho = np.full(n, rho_h)
            lam[pos], rho[pos] = lam_l, rho_l
            m1, v1 = lam_h * m1 + rho_h, lam_h**2 * v1 + eta
            m2, v2 = lam * m2 + rho, lam**2 * v2 + eta
        out.append((m1, v1, m2 - m1, v2.copy()))
    return out


def test_reduced_configuration_matches_brute_force():
    args = _args(n=2000, epochs=10)
    res, fig = si.run(args)
    p = cs.CyclicSGLDProblem(n=2000)
    brute = _brute_force_laws(p, 10)
    order = si.renyi_order(0.01)
    assert res["renyi_order"] == pytest.approx(1 + 2 * math.log(100) / 1.6)
    for e, (m1, v1, off, v2) in enumerate(brute):
        # brute-force differences of means ~1e6 carry ~1e-10 absolute error; the sd is ~0.03
        assert res["Q"][e] == pytest.approx(np.mean(off**2 / v2), rel=1e-7)
        mix = mx.equal_weight_mixture(off, np.sqrt(v2))
        assert res["tight_epsilon"][e] == pytest.approx(mx.mixture_epsilon(math.sqrt(v1), mix, 0.01), rel=1e-6, abs=1e-9)
        if e in (0, 4, 9):
            ren = max(mx.mixture_renyi(math.sqrt(v1), mix, order, d) for d in ("gaussian||mixture", "mixture||gaussian"))
            assert res["renyi_divergence"][e] == pytest.approx(ren, rel=1e-6)
    assert res["peak_tight_epsilon"] == pytest.approx(max(res["tight_epsilon"]))
    assert res["monte_carlo"] is None
    assert fig is not None


def test_full_n_peak_matches_mpmath():
    """Paper n, epochs 1..25 (the peak): Q at epochs 5 and 25 against mpmath's Euler–Maclaurin
    sum, and delta at the reported tight eps (epoch 25) recomputed in 30 digits with the
    mixture mass summed over all n positions by mp.sumem."""
    res, _ = si.run(_args(epochs=25))
    p = cs.CyclicSGLDProblem(n=1149019)
    assert res["peak_epoch"] == 25
    assert res["full_sum_check"]["max_relative_gap"] < 1e-12
    eps = res["tight_epsilon"][24]
    law = cs.epoch_law(p, 25)
    sd = math.sqrt(law.variance)
    finder = mx._LossSetFinder(sd, law.mixture(), "mg")  # the binding direction at the peak
    intervals = finder.intervals(eps)
    with mp.workdps(30):
        n, eta = p.n, mp.mpf(p.eta)
        lam = 1 - eta / 2 * (p.alpha + n * mp.mpf(p.x_high) ** 2 * p.beta)
        laml = 1 - eta / 2 * (p.alpha + n * mp.mpf(p.x_low) ** 2 * p.beta)
        rho = eta / 2 * n * p.beta * mp.mpf(p.c) * mp.mpf(p.x_high) ** 2
        rhol = eta / 2 * n * p.beta * mp.mpf(p.c) * mp.mpf(p.x_low) ** 2

        def power(k):
            lk = lam**k
            return lk, rho * (1 - lk) / (1 - lam), eta * (1 - lk**2) / (1 - lam**2)

        def run_epochs(f, e):
            m, v = mp.mpf(0), mp.mpf(p.v0)
            for _ in range(e):
                m, v = f[0] * m + f[1], f[0] ** 2 * v + f[2]
            return m, v

        def r_map(r):
            a, b, c = power(r - 1)
            a, b, c = laml * a, laml * b + rhol, laml**2 * c + eta
            a2, b2, c2 = power(n - r)
            return a2 * a, a2 * b + b2, a2**2 * c + c2

        for e in (5, 25):
            m1, _ = run_epochs(power(n), e)

            def q_term(r):
                mr, vr = run_epochs(r_map(r), e)
                return (mr - m1) ** 2 / vr

            assert res["Q"][e - 1] == pytest.approx(float(mp.sumem(q_term, [1, n]) / n), rel=1e-11)
        m1, v1 = run_epochs(power(n), 25)

        def mass(mean, var):
            s = mp.sqrt(var)
            return mp.fsum(mp.ncdf((hi - mean) / s) - mp.ncdf((lo - mean) / s) for lo, hi in
                           [(mp.mpf(a) + m1 if a != -np.inf else -mp.inf, mp.mpf(b) + m1 if b != np.inf else mp.inf) for a, b in intervals])

        def comp_mass(r):
            mr, vr = run_epochs(r_map(r), 25)
            return mass(mr, vr)

        m_mass = mp.sumem(comp_mass, [1, n]) / n
        delta = m_mass - mp.e ** mp.mpf(eps) * mass(m1, v1)
    assert float(delta) == pytest.approx(0.01, rel=1e-8)


def test_monte_carlo_and_propose_test_sample_are_wired_in():
    res, _ = si.run(_args(n=200, epochs=3, mc_n=30, pts_runs=2000))
    mc = res["monte_carlo"]
    assert mc["n"] == 30 and mc["num_nonfinite"] == 0
    assert all(lb <= ex for lb, ex in zip(mc["lower_bound"], mc["exact_tight_epsilon"]))
    pts = res["propose_test_sample"]
    assert set(pts) == {"posterior", "sgld"}
    # Claim 4.2: the SGLD variant leaks far more than the posterior variant
    assert pts["sgld"]["exact_epsilon"] > pts["posterior"]["exact_epsilon"]
    # the headline: the posterior's target beside dpjax's values, the chains' bound, both PTS variants
    from dpjax.experiments._report import headline_table

    rows = si.headline(res)
    assert rows[0]["paper"] == 1.6 and rows[2]["dpjax"] == res["peak_tight_epsilon"]
    assert [r["dpjax"] for r in rows[-2:]] == [pts["posterior"]["exact_epsilon"], pts["sgld"]["exact_epsilon"]]
    peak = int(np.argmax(mc["exact_tight_epsilon"]))
    assert any(r["dpjax"] == float(mc["lower_bound"][peak]) for r in rows)
    assert max(len(line) for line in headline_table(rows).splitlines()) <= 100


def test_errors():
    with pytest.raises(ValueError, match="epochs=0 violates epochs >= 1"):
        si.compute(_args(n=100, epochs=0))
    with pytest.raises(ValueError, match="n=1 violates"):
        si.compute(_args(n=1, epochs=2))

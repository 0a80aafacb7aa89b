"""Paper 000's lower-bound chain (Lemmas 4.4-4.6, A.2-A.6) and Theorem 1's instance sizes,
against brute-force recursion of the chain's means and variances, the float and mpmath forms of
Lemma 4.2, and the definitions of the instance sizes."""
from __future__ import annotations

import argparse
import math

import mpmath as mp
import numpy as np
import pytest

from dpjax.accountants.samplers import cyclic_sgld as cs
from dpjax.experiments.sgld_interim import lemmas as pr
from dpjax.accountants.posterior.gaussian import sgld_paper_posterior_rdp_bound


def _brute(p, r, epochs):
    """Mean and variance after ``epochs`` epochs with the odd record at position r (r = 0: D1)."""
    m, v = p.init_mean, p.v0
    for _ in range(epochs):
        for pos in range(1, p.n + 1):
            x = p.x_low if pos == r else p.x_high
            lam = 1 - 0.5 * p.eta * (p.alpha + p.n * x * x * p.beta)
            m = lam * m + 0.5 * p.eta * p.n * p.beta * p.c * x * x
            v = lam * lam * v + p.eta
    return m, v


@pytest.mark.parametrize("n", [4, 9])
def test_lemmas_a2_a3_a4_against_brute_force(n):
    p = cs.CyclicSGLDProblem(n=n, alpha=0.1, beta=1.0, x_high=1.8, x_low=0.9, c=float(n) ** 1.001)  # the paper's eta
    lb = cs.lower_bound_epoch(p)
    for e in range(1, lb.epoch + 1):
        m1, _ = _brute(p, 0, e)
        gaps, variances = [], []
        for r in range(1, n + 1):
            mr, vr = _brute(p, r, e)
            gaps.append(m1 - mr)
            variances.append(vr)
        assert min(gaps) >= pr.lemma_a2_gap_bound(p, e) * (1 - 1e-9)  # Lemma A.2, every epoch
        if 1 <= e - 1 <= lb.k_dot:  # Lemma A.3 needs 0 < k <= k_dot
            assert np.all(np.array(variances) <= pr.lemma_a3_variance_bounds(p, e) * (1 + 1e-12))
    m1, _ = _brute(p, 0, lb.epoch)
    v = np.array([_brute(p, r, lb.epoch)[1] for r in range(1, n + 1)])
    assert np.all(v <= pr.lemma_a4_variance_bounds(p) * (1 + 1e-12))  # Lemma A.4 at the tested epoch
    g = np.array([m1 - _brute(p, r, lb.epoch)[0] for r in range(1, n + 1)])
    assert np.min(g * g / v) >= pr.lemma_a5_ratio_bound(p)  # Lemma A.5
    # the lemma's constant, written out: e^(-2/3.24) (0.1/6) (3/(32 * 3.24))^2 (c/n)^2
    assert pr.lemma_a5_ratio_bound(p) == pytest.approx(math.exp(-2 / 3.24) * 0.1 / 6 * (3 / (32 * 3.24)) ** 2 * (p.c / n) ** 2)


def test_proof_chain_at_small_n_matches_brute_force_probabilities():
    from scipy import stats

    p = cs.CyclicSGLDProblem(n=6, c=6.0**1.001)
    ch = pr.proof_chain(p, 0.01)
    m1, _ = _brute(p, 0, ch["epoch"])
    comps = [_brute(p, r, ch["epoch"]) for r in range(1, 7)]
    prob = np.mean([stats.norm.sf(m1, mr, math.sqrt(vr)) for mr, vr in comps])
    assert ch["lemma44"]["exact_probability"] == pytest.approx(prob, rel=1e-9)
    cher = np.mean([math.exp(-0.5 * (m1 - mr) ** 2 / vr) for mr, vr in comps])
    assert ch["lemma44"]["chernoff_exact_ratios"] == pytest.approx(cher, rel=1e-9)
    e = ch["epsilon"]
    assert e["lemma_a6_printed"] <= e["chernoff_a2_a4"] <= e["chernoff_exact_ratios"] <= e["exact_set_s"] <= e["exact_tight"]
    assert e["exact_set_s"] == pytest.approx(math.log(0.49 / prob), rel=1e-9)


def test_large_n_sums_over_positions_match_the_exact_sums(monkeypatch):
    p = cs.CyclicSGLDProblem(n=300_000, c=300_000.0**1.001)
    exact = pr.proof_chain(p, 0.01)
    monkeypatch.setattr(pr, "_EXACT_SUM_MAX", 1000)  # force the Euler-Maclaurin sums and sampled positions
    approx = pr.proof_chain(p, 0.01)
    for key in ("exact_probability", "chernoff_exact_ratios", "chernoff_a2_a4_bounds"):
        assert approx["lemma44"][key] == pytest.approx(exact["lemma44"][key], rel=1e-9)
    assert approx["lemma_a5"]["exact_min"] == pytest.approx(exact["lemma_a5"]["exact_min"], rel=1e-12)
    assert approx["positions_checked"] < exact["positions_checked"]


def test_lemma42_in_log_space_matches_float_and_mpmath():
    nu = 1 + 2 * math.log(100) / 1.6
    for n in (5000, 1149019):
        c = n**1.001
        ref = sgld_paper_posterior_rdp_bound(n, nu, 0.1, 1.0, 1.8, 0.9, 0.1, c)
        assert pr._eps1_log10n(math.log10(n), nu, 0.1, 1.0, 1.8, 0.9, 0.1, 1.001) == pytest.approx(ref, rel=1e-10)
    mp.mp.dps = 30
    n = mp.power(10, 400)
    ref = pr.lemma42_eps1(n, nu, 0.1, 1.0, 1.8, 0.9, 0.1, n ** mp.mpf("1.2"))
    assert pr._eps1_log10n(400.0, nu, 0.1, 1.0, 1.8, 0.9, 0.1, 1.2) == pytest.approx(float(ref), rel=1e-10)


def test_theorem1_instance_sizes_meet_their_definitions():
    inst = pr.theorem1_instance(1.6, 3.0, 0.01, 1.25)
    xb = 3.24
    K = 0.5 * math.exp(-2 / xb) * 0.1 / 6 * (3 / (32 * xb)) ** 2
    # Lemma A.6's certified eps equals eps' exactly at the SGLD-side size
    assert K * 10 ** ((2 * 1.25 - 2) * inst.log10_n_sgld) + math.log(0.49) == pytest.approx(3.0, rel=1e-9)
    # Lemma 4.3's eps equals eps at the posterior-side size: eps1 = eps/2
    eps1 = pr._eps1_log10n(inst.log10_n_posterior, inst.nu, 0.1, 1.0, 1.8, 0.9, 0.1, 1.25)
    assert eps1 == pytest.approx(0.8, rel=1e-8)
    assert inst.log10_n == max(inst.log10_n_posterior, inst.log10_n_sgld)
    # Figure 1's gamma2 = 1.001: thousands of digits
    assert pr.theorem1_instance(1.6, 1.0, 0.01, 1.001).log10_n > 2000
    with pytest.raises(ValueError, match="gamma2"):
        pr.theorem1_instance(1.6, 1.0, 0.01, 1.0)
    with pytest.raises(ValueError, match="delta"):
        pr.theorem1_instance(1.6, 1.0, 0.6, 1.2)
    with pytest.raises(ValueError, match="x_low"):
        pr.proof_chain(cs.CyclicSGLDProblem(n=10, x_low=0.5), 0.01)
    with pytest.raises(ValueError, match="epoch"):
        pr.lemma_a2_gap_bound(cs.CyclicSGLDProblem(n=10), 0)


def test_sgld_interim_proof_quick_run():
    from dpjax.experiments.sgld_interim import proof as ex

    parser = argparse.ArgumentParser()
    ex.add_arguments(parser)
    args = parser.parse_args(["--n", "20000", "--c", str(20000**1.001)])
    args.quick, args.seed = True, 0
    results = ex.compute(args)
    assert all(results["checks"].values()), results["checks"]
    assert results["chain"]["epsilon"]["lemma_a6_printed"] < 0 < results["chain"]["epsilon"]["exact_tight"]
    best = results["theorem1_best_gamma2"][1.0]
    assert 1.0 < best["gamma2"] < 1.5 and best["log10_n"] < results["theorem1_printed"][1.0][1.001]["log10_n"]
    assert len(ex.headline(results)) >= 4

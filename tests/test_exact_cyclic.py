"""Cyclic-SGLD closed forms (paper 000) vs brute-force recursion, 50-digit mpmath, naive float64."""
import math

import mpmath as mp
import numpy as np
import pytest

from dpjax.accountants.samplers import cyclic_sgld as cs

PAPER = cs.CyclicSGLDProblem(n=1149019)


def _brute(p, r, epochs):
    """Step-by-step mean/variance with the odd record at position r (r = 0: D1)."""
    m, v = p.init_mean, p.v0
    for _ in range(epochs):
        for pos in range(1, p.n + 1):
            x = p.x_low if pos == r else p.x_high
            lam = 1 - 0.5 * p.eta * (p.alpha + p.n * x * x * p.beta)
            m = lam * m + 0.5 * p.eta * p.n * p.beta * p.c * x * x
            v = lam * lam * v + p.eta
    return m, v


@pytest.mark.parametrize("n", [5, 17, 50])
def test_closed_forms_match_brute_force_small_n(n):
    p = cs.CyclicSGLDProblem(n=n, alpha=0.5, beta=1.0, x_high=1.2, x_low=0.5, c=3.0, step_size=0.3 / n, init_mean=0.3)
    for e in [1, 4, 12]:
        law = cs.epoch_law(p, e)
        m1, v1 = _brute(p, 0, e)
        assert law.mean == pytest.approx(m1, rel=1e-12)
        assert law.variance == pytest.approx(v1, rel=1e-12)
        off, var = law.positions()
        qs = []
        for r in range(1, n + 1):
            mr, vr = _brute(p, r, e)
            # means are O(1) here, so the brute-force difference is accurate to ~1e-15
            assert off[r - 1] == pytest.approx(mr - m1, rel=1e-10, abs=1e-14)
            assert var[r - 1] == pytest.approx(vr, rel=1e-12)
            qs.append((mr - m1) ** 2 / vr)
        assert cs.divergence_statistic_q(law) == pytest.approx(np.mean(qs), rel=1e-9)


def _power(lam, rho, eta, k):
    lk = lam**k
    return (lk, rho * (1 - lk) / (1 - lam), eta * (1 - lk**2) / (1 - lam**2))


def _then(f, g):
    return (g[0] * f[0], g[0] * f[1] + g[1], g[0] ** 2 * f[2] + g[2])


def _reference(p, epochs, rs, num):
    """Epoch-end laws by composing the per-step affine maps with the textbook formulas
    (1 - lam, lam**k, subtract the means), in the number type ``num`` (mpf or float)."""
    n, eta = p.n, num(p.eta)
    lam = 1 - eta / 2 * (num(p.alpha) + n * num(p.x_high) ** 2 * num(p.beta))
    laml = 1 - eta / 2 * (num(p.alpha) + n * num(p.x_low) ** 2 * num(p.beta))
    rho = eta / 2 * n * num(p.beta) * num(p.c) * num(p.x_high) ** 2
    rhol = eta / 2 * n * num(p.beta) * num(p.c) * num(p.x_low) ** 2
    e1 = _power(lam, rho, eta, n)
    maps = {r: _then(_then(_power(lam, rho, eta, r - 1), (laml, rhol, eta)), _power(lam, rho, eta, n - r)) for r in rs}
    m, v = num(p.init_mean), num(p.v0)
    mr = {r: (m, v) for r in rs}
    out = {}
    for e in range(1, max(epochs) + 1):
        m, v = e1[0] * m + e1[1], e1[0] ** 2 * v + e1[2]
        mr = {r: (maps[r][0] * mr[r][0] + maps[r][1], maps[r][0] ** 2 * mr[r][1] + maps[r][2]) for r in rs}
        if e in epochs:
            out[e] = (m, v, {r: (mr[r][0] - m, mr[r][1]) for r in rs})
    return out


def test_paper_n_matches_50_digits_and_naive_float64_does_not():
    rs = [1, 2, 500000, PAPER.n - 1, PAPER.n]
    epochs = [3, 25, 45, 60]
    with mp.workdps(50):
        ref = _reference(PAPER, epochs, rs, mp.mpf)
    naive = _reference(PAPER, epochs, rs, float)
    worst_naive_60 = 0.0
    for e in epochs:
        law = cs.epoch_law(PAPER, e)
        m, v, comps = ref[e]
        assert law.mean == pytest.approx(float(m), rel=1e-14)
        assert law.variance == pytest.approx(float(v), rel=1e-13)
        for r, (d, vr) in comps.items():
            j = PAPER.n - r
            assert float(law.offsets(j)) == pytest.approx(float(d), rel=1e-13)
            assert float(law.variances(j)) == pytest.approx(float(vr), rel=1e-13)
            if e == 60:
                worst_naive_60 = max(worst_naive_60, abs(naive[e][2][r][0] - float(d)) / abs(float(d)))
    # The naive float64 route (1 - lam, subtracting two ~1.2e6 means) is off by > 1e-4
    # relative at epoch 60, ~1e12 times our error.
    assert worst_naive_60 > 1e-4


def test_paper_q_matches_mpmath_euler_maclaurin():
    """Q at two epochs: our float64 full sum vs mpmath's Euler–Maclaurin sum (mp.sumem) of the
    composed-map reference, 30 digits."""
    for e in [5, 25]:
        law = cs.epoch_law(PAPER, e)
        with mp.workdps(30):
            p = PAPER
            n, eta = p.n, mp.mpf(p.eta)
            lam = 1 - eta / 2 * (p.alpha + n * mp.mpf(p.x_high) ** 2 * p.beta)
            laml = 1 - eta / 2 * (p.alpha + n * mp.mpf(p.x_low) ** 2 * p.beta)
            rho = eta / 2 * n * p.beta * mp.mpf(p.c) * mp.mpf(p.x_high) ** 2
            rhol = eta / 2 * n * p.beta * mp.mpf(p.c) * mp.mpf(p.x_low) ** 2
            e1 = _power(lam, rho, eta, n)
            m, v = mp.mpf(0), mp.mpf(p.v0)
            for _ in range(e):
                m, v = e1[0] * m + e1[1], e1[0] ** 2 * v + e1[2]

            def term(r):
                f = _then(_then(_power(lam, rho, eta, r - 1), (laml, rhol, eta)), _power(lam, rho, eta, n - r))
                mr, vr = mp.mpf(0), mp.mpf(p.v0)
                for _ in range(e):
                    mr, vr = f[0] * mr + f[1], f[0] ** 2 * vr + f[2]
                return (mr - m) ** 2 / vr

            q_ref = mp.sumem(term, [1, n]) / n
        assert cs.divergence_statistic_q(law) == pytest.approx(float(q_ref), rel=1e-12)


def test_figure1_scales_and_peak():
    assert PAPER.kappa == pytest.approx(2.686e-7, rel=1e-3)
    law = cs.epoch_law(PAPER, 60)
    assert law.mean == pytest.approx(1.165e6, rel=1e-3)
    assert math.sqrt(law.variance) == pytest.approx(5.18e-4, rel=1e-2)
    qs = [cs.divergence_statistic_q(cs.epoch_law(PAPER, e)) for e in (1, 25, 60)]
    assert qs[0] < 0.01 and qs[1] > 3.0 and qs[2] < 1e-6  # small early and at convergence


def test_lower_bound_epoch_matches_definition_in_mpmath():
    lb = cs.lower_bound_epoch(PAPER)
    with mp.workdps(50):
        eta = mp.mpf(PAPER.eta)
        lam = 1 - eta / 2 * (PAPER.alpha + PAPER.n * mp.mpf(PAPER.x_high) ** 2 * PAPER.beta)
        k_dot = mp.log(1 / (1 + (1 - lam**2) / (PAPER.alpha * eta))) / mp.log(lam) / (2 * PAPER.n) - 1
    assert lb.k_dot == pytest.approx(float(k_dot), rel=1e-12)
    assert lb.epoch == math.ceil(float(k_dot)) + 1 and lb.step == lb.epoch * PAPER.n


def test_errors():
    with pytest.raises(ValueError, match="n=1 violates n >= 2"):
        cs.CyclicSGLDProblem(n=1)
    with pytest.raises(ValueError, match="alpha=-1 violates"):
        cs.CyclicSGLDProblem(n=10, alpha=-1.0)
    with pytest.raises(ValueError, match="need 0 < \\(eta/2\\)"):
        cs.CyclicSGLDProblem(n=10, step_size=1.0)
    with pytest.raises(ValueError, match="epoch=-1 violates"):
        cs.epoch_law(PAPER, -1)

"""Paper 003's closed forms (dpjax.experiments.contamination.theory): Theorem 4's (eps_n, delta_n),
Lemma 14's T_n and bound, Theorem 5's Fisher information, against the printed constants,
50-digit mpmath, dense grids, and the log-likelihood ratio itself at random records."""
import math

import mpmath
import numpy as np
import pytest
from scipy import special, stats

from dpjax.experiments.contamination import theory as C


def test_printed_constants():
    # Appendix B after eq. 34: c0 ~ 3.74, c1 = 1/12, c2 ~ 1.212e-3
    assert C.C0 == pytest.approx(3.74, abs=5e-3) and C.C1 == 1 / 12
    assert C.C2 == pytest.approx(1.212e-3, abs=5e-7)
    # c2 is (1 - k) k^2 / (2^5 c0 + 4 k) at k = 2/3 (eq. 34's exponent)
    k = 2 / 3
    assert C.C2 == pytest.approx((1 - k) * k**2 / (2**5 * C.C0 + 4 * k), rel=1e-14)


@pytest.mark.parametrize("n,p,T,psi,phi,c3", [(1000, 0.42, 2.0, 0.1, 0.3, 1.0), (10**7, 0.13, 5.0, 1e-3, 0.05, 0.2),
                                              (10**9, 0.07, 3.0, 1e-4, 0.2, 1.0)])
def test_theorem4_bound_against_mpmath(n, p, T, psi, phi, c3):
    mpmath.mp.dps = 50
    b = C.theorem4_bound(num_records=n, contamination_rate=p, T=T, psi=psi, phi=phi, c3=c3)
    eps_base = 2 * (1 - mpmath.mpf(p)) * T * psi / p
    delta = 4 / mpmath.mpf(c3) * mpmath.exp(-mpmath.mpf(1) / 12 * n * mpmath.mpf(phi) ** 2 / 2)
    eps = eps_base + mpmath.log(delta + mpmath.exp(eps_base))
    # log-space evaluation: relative 1e-13 in eps and log delta (delta itself underflows at n = 1e9)
    assert b.epsilon == pytest.approx(float(eps), rel=1e-13)
    assert b.log_delta == pytest.approx(float(mpmath.log(delta)), rel=1e-13)
    assert b.epsilon_base == pytest.approx(float(eps_base), rel=1e-13) and math.isnan(b.failure_probability)
    assert b.epsilon > 2 * b.epsilon_base - 1e-15  # eps = eps' + log(delta + e^eps') >= 2 eps'


def test_theorem4_failure_probability_branches_and_validation():
    # small n phi^2: exp(-c2 n phi^2) > 1/2, so C' = 4 + 40 (log2 n)^2 + 2 c4; capped at 1
    b = C.theorem4_bound(num_records=1000, contamination_rate=0.4, T=1, psi=0.1, phi=0.3, c3=1, alpha=0.5, c4=2)
    assert b.failure_probability == 1.0
    n, phi = 10**8, 0.05
    b = C.theorem4_bound(num_records=n, contamination_rate=0.1, T=1, psi=0.1, phi=phi, c3=1, alpha=1.0, c4=2)
    c5 = min(C.C1 / 8, C.C2)
    assert b.failure_probability == pytest.approx((12 + 4) * math.exp(-n * c5 * phi**2), rel=1e-12)
    with pytest.raises(ValueError, match="alpha and c4 must be given together"):
        C.theorem4_bound(num_records=10, contamination_rate=0.1, T=1, psi=1, phi=1, c3=1, alpha=0.5)
    with pytest.raises(ValueError, match=r"contamination_rate=0 violates contamination_rate in \(0.0, 1.0\)"):
        C.theorem4_bound(num_records=10, contamination_rate=0.0, T=1, psi=1, phi=1, c3=1)
    assert C.theorem4_rates(5.0)["epsilon_exponent"] == -0.1
    with pytest.raises(ValueError, match="q=4.0 violates q > 4"):
        C.theorem4_rates(4.0)


def np_log_d(kind, y, u, u_star, p, scale):
    if kind == "linear":
        lf = lambda uu: stats.norm.logpdf(y, uu, 1.0)
        lg = stats.t.logpdf(y, 5.0, u_star, scale)
    else:
        lf = lambda uu: stats.cauchy.logpdf(y, uu, 1.0)
        lg = stats.cauchy.logpdf(y, 0.0, scale)
    lk = lambda uu: np.logaddexp(math.log1p(-p) + lf(uu), math.log(p) + lg)
    return lk(u) - lk(u_star)


@pytest.mark.parametrize("kind,scale", [("linear", 1.0), ("linear", 0.5), ("cauchy", 10.0)])
def test_lemma14_T_bounds_the_score_ratio_and_log_d(kind, scale):
    theta_star = np.array([0.5, -1.0, 1.0, -0.5])
    centre = theta_star + np.array([0.05, -0.03, 0.02, 0.04])  # a MAP beside theta*
    phi = 0.1
    T = C.lemma14_T(kind, centre=centre, phi=phi, theta_star=theta_star, contamination_scale=scale)
    rng = np.random.default_rng(0)
    k = 200000
    w = np.concatenate([np.ones((k, 1)), rng.uniform(-1, 1, (k, 3))], axis=1)
    # theta in the hull of the box and theta* (the mean-value segments of Lemma 14)
    lam = rng.uniform(0, 1, (k, 1))
    theta = lam * (centre + phi * rng.uniform(-1, 1, (k, 4))) + (1 - lam) * theta_star
    u, u_star = np.sum(w * theta, 1), w @ theta_star
    y = u_star + np.concatenate([rng.normal(0, 3, k // 2), rng.standard_cauchy(k // 2) * 5])
    r = y - u
    if kind == "linear":
        grad_f = stats.norm.pdf(r) * np.abs(r)
        g = stats.t.pdf(y, 5.0, u_star, scale)
    else:
        grad_f = 2 * np.abs(r) / (math.pi * (1 + r * r) ** 2)
        g = stats.cauchy.pdf(y, 0.0, scale)
    ratio = grad_f * np.linalg.norm(w, axis=1) / g
    # T is a sup: no sampled point exceeds it (relative slack 1e-9 for the polishing's tolerance)
    assert np.max(ratio) <= T * (1 + 1e-9)
    # and it is not wildly loose: the sampled max reaches a fair share of it (||w||_2 is bounded apart)
    assert np.max(ratio) > 0.3 * T
    # Lemma 14: |log d| <= (1 - p) T psi / p on the box (theta in A_n, records anywhere)
    psi = C.box_psi(centre, phi, theta_star)
    for p in (0.05, 0.3):
        in_box = centre + phi * rng.uniform(-1, 1, (k, 4))
        ld = np_log_d(kind, y, np.sum(w * in_box, 1), u_star, p, scale)
        assert np.max(np.abs(ld)) <= (1 - p) * T * psi / p
        assert C.lemma14_log_eta_bound(T=T, psi=psi, contamination_rate=p) == pytest.approx(2 * (1 - p) * T * psi / p)


def test_lemma14_T_logistic_is_half_norm_w():
    ts = np.array([0.5, -1.0, 1.0])
    T = C.lemma14_T("logistic", centre=ts, phi=0.1, theta_star=ts, contamination_scale=1.0)
    # |d sigma/du| / (1/2) = 2 sigma(u) sigma(-u) <= 1/2 at u = 0, reachable here; ||w||_2 <= sqrt(3)
    assert T == pytest.approx(math.sqrt(3) / 2, rel=1e-15)
    with pytest.raises(ValueError, match="kind='probit' is not one of"):
        C.lemma14_T("probit", centre=ts, phi=0.1, theta_star=ts, contamination_scale=1.0)


def mp_fisher(kind, p, u_star, scale):
    """(1 - p)^2 int (dF/du)^2 / k_p dy at 50 digits (mpmath quadrature, split at the peaks)."""
    mpmath.mp.dps = 30
    p = mpmath.mpf(p)
    if kind == "linear":
        tc = mpmath.gamma(3) / (mpmath.gamma(mpmath.mpf(5) / 2) * mpmath.sqrt(5 * mpmath.pi) * scale)
        def fn(r):
            f = mpmath.npdf(r)
            k = (1 - p) * f + p * tc * (1 + (r / scale) ** 2 / 5) ** -3
            return (1 - p) ** 2 * (f * r) ** 2 / k
        pts = [-mpmath.inf, -8, -1, 0, 1, 8, mpmath.inf]
    else:
        def fn(r):
            f = 1 / (mpmath.pi * (1 + r * r))
            df = 2 * r / (mpmath.pi * (1 + r * r) ** 2)
            k = (1 - p) * f + p / (mpmath.pi * scale * (1 + ((u_star + r) / scale) ** 2))
            return (1 - p) ** 2 * df * df / k
        pts = sorted({-8, -1, 0, 1, 8, -u_star})
        pts = [-mpmath.inf] + pts + [mpmath.inf]
    return float(mpmath.quad(fn, pts))


@pytest.mark.parametrize("kind,p,u_star,scale", [("linear", 0.3, 0.0, 1.0), ("linear", 0.02, 0.0, 2.0), ("cauchy", 0.3, 1.5, 10.0),
                                                 ("cauchy", 0.1, -2.0, 2.0)])
def test_theorem5_scalar_against_mpmath(kind, p, u_star, scale):
    got = C.fisher_information_scalar(kind, contamination_rate=p, u_star=u_star, contamination_scale=scale)
    # scipy quad at epsrel 1e-12 per piece against 30-digit mpmath: 1e-9 relative
    assert got == pytest.approx(mp_fisher(kind, p, u_star, scale), rel=1e-9)
    uncontaminated = {"linear": 1.0, "cauchy": 0.5}[kind]
    # k_p >= (1 - p) f gives I_p <= (1 - p) I
    assert got <= (1 - p) * uncontaminated * (1 + 1e-12)


@pytest.mark.parametrize("kind,limit", [("linear", 1.0), ("cauchy", 0.5), ("logistic", None)])
def test_theorem5_convergence_as_p_vanishes(kind, limit):
    u_star = 0.7
    if limit is None:
        limit = special.expit(u_star) * special.expit(-u_star)
    values = [C.fisher_information_scalar(kind, contamination_rate=p, u_star=u_star, contamination_scale=3.0) for p in (0.3, 0.1, 1e-2, 1e-4, 0.0)]
    assert values[-1] == pytest.approx(limit, rel=1e-10)
    gaps = [limit - v for v in values[:-1]]
    # Theorem 5: I_p -> I; here monotonically, and the gap vanishes at least linearly in p
    assert all(g > 0 for g in gaps) and all(a > b for a, b in zip(gaps, gaps[1:])) and gaps[-1] < 1e-3


def test_theorem5_matrix_linear_exact_and_logistic_monte_carlo():
    ts = np.array([0.5, -1.0, 1.0])
    m = C.contaminated_fisher_information("linear", theta_star=ts, contamination_rate=0.2)
    c = C.fisher_information_scalar("linear", contamination_rate=0.2)
    np.testing.assert_allclose(m, c * np.diag([1, 1 / 3, 1 / 3]), rtol=1e-14)
    # logistic: E_w[sigma(u) sigma(-u) w w^T] at p = 0 by an independent Monte Carlo (other seed, 2e5 draws);
    # the two Monte Carlo errors are ~1e-3 of entries ~0.1-0.2: agreement to 0.01 absolute
    got = C.contaminated_fisher_information("logistic", theta_star=ts, contamination_rate=0.0, num_covariate_draws=4000)
    rng = np.random.default_rng(99)
    w = np.concatenate([np.ones((200000, 1)), rng.uniform(-1, 1, (200000, 2))], axis=1)
    s = special.expit(w @ ts)
    ref = np.einsum("k,ki,kj->ij", s * (1 - s), w, w) / w.shape[0]
    np.testing.assert_allclose(got, ref, atol=0.01)
    cm = C.contaminated_fisher_information("cauchy", theta_star=ts, contamination_rate=0.3, contamination_scale=10.0, num_covariate_draws=500)
    c0 = C.contaminated_fisher_information("cauchy", theta_star=ts, contamination_rate=0.0, contamination_scale=10.0, num_covariate_draws=500)
    np.testing.assert_allclose(c0, 0.5 * np.einsum("ki,kj->ij", *[np.concatenate([np.ones((500, 1)), np.random.default_rng(0).uniform(-1, 1, (500, 2))], 1)] * 2) / 500, rtol=1e-6)
    assert np.all(np.linalg.eigvalsh(0.7 * c0 - cm) >= -1e-12)  # I_p <= (1 - p) I as matrices


def test_zcdp_budget_exact_inverts_bun_steinke_and_paper_rule_overspends():
    from dpjax.accountants import zcdp_to_epsilon

    n = np.array([100, 1000, 2000, 5000, 10000, 20000, 50000])
    eps = np.array([2.85, 0.94, 0.72, 0.46, 0.32, 0.26, 0.18])  # Table 1
    delta = 1 / (10 * n)
    exact = C.zcdp_budget(eps, delta)
    # the exact rho spends exactly the budget (Prop 1.3 is an equality in its rho)
    np.testing.assert_allclose(zcdp_to_epsilon(exact, delta), eps, rtol=1e-13)
    # mpmath: the root of rho + 2 sqrt(rho L) = eps at 50 digits
    mpmath.mp.dps = 50
    for e, dl, r in zip(eps, delta, exact):
        L = -mpmath.log(mpmath.mpf(dl))
        root = (mpmath.sqrt(L + mpmath.mpf(e)) - mpmath.sqrt(L)) ** 2
        assert r == pytest.approx(float(root), rel=1e-13)
    paper = C.zcdp_budget(eps, delta, rule="paper")
    np.testing.assert_allclose(paper, eps**2 / (2 * np.log(1 / delta)), rtol=1e-15)
    spent = zcdp_to_epsilon(paper, delta)
    # the paper's rho buys more than eps: about sqrt(2) eps (plus rho), and about twice the exact rho
    assert np.all(spent > eps) and np.all(spent / eps > 1.41) and np.all(paper / exact > 2.0)
    with pytest.raises(ValueError, match="rule='zcdp' is not one of"):
        C.zcdp_budget(1.0, 1e-5, rule="zcdp")

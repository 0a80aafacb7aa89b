"""dpjax's accountants against values pinned from Opacus (Meta's DP-SGD library: opacus 1.6.0
with torch 2.14.1, computed on 2026-11-25; Opacus needs torch, too heavy for a test extra).

For each (noise multiplier sigma, Poisson rate q, steps T) at delta = 1e-5:

* ``opacus.accountants.RDPAccountant`` with ``history = [(sigma, q, T)]``,
  ``get_privacy_spent(delta=1e-5)``: eps and the best order over Opacus's default orders
  (1.1, 1.2, ..., 10.9, 12, 13, ..., 63) with the Balle et al. (2020) conversion;
* ``opacus.accountants.PRVAccountant`` with the same history, ``get_epsilon(delta=1e-5,
  eps_error=0.01)``: an upper bound on eps whose estimate is within eps_error of the truth
  (Gopi, Lee & Wutschitz 2021), i.e. the true eps lies in [upper - 2 eps_error, upper].
"""
import numpy as np
import pytest

from dpjax.accountants import noisy_sgd_curve, pld_epsilons

OPACUS_ORDERS = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))
PRV_EPS_ERROR = 0.01
DELTA = 1e-5
# (sigma, q, T): (RDP eps, its order, PRV upper bound)
OPACUS = {
    (1.1, 0.01, 1000): (1.7117700912203435, 9.6, 1.525472649316146),
    (0.8, 0.05, 200): (8.73182993236997, 2.9, 7.71268820847272),
    (2.0, 0.001, 1000): (0.1310693537060617, 54.0, 0.06006370637415146),
    (1.5, 0.02, 500): (1.5139921034392088, 12.0, 1.3797335447490697),
    (4.0, 0.1, 50): (0.757679064528859, 21.0, 0.6942738388402591),
    (0.9, 0.004, 3000): (1.792031136989652, 7.9, 1.4644493689626785),
}


pytestmark = pytest.mark.usefixtures("x64")  # every test here computes in float64 (tests/conftest.py)


@pytest.mark.parametrize("config", list(OPACUS))
def test_rdp_epsilon_and_order_equal_opacus_at_its_orders(config):
    sigma, q, steps = config
    eps, order, _ = OPACUS[config]
    curve = noisy_sgd_curve(sigma, q, steps, orders=np.array(OPACUS_ORDERS))
    # the same closed forms in float64: agreement to summation order (observed <= 7e-12)
    assert float(curve.epsilon(DELTA)) == pytest.approx(eps, rel=1e-10)
    assert float(curve.optimal_order(DELTA)) == order


def test_pld_bracket_is_consistent_with_opacus_prv_bound():
    configs = list(OPACUS)
    sigma, q, steps = (np.array([c[i] for c in configs]) for i in range(3))
    res = pld_epsilons(sigma, q, steps.astype(int), DELTA)
    pess, opt = res.epsilon, res.optimistic_epsilon
    for j, config in enumerate(configs):
        upper = OPACUS[config][2]
        # two certified statements about one true eps: opt <= eps <= upper and eps >= upper - 2 eps_error
        assert float(opt[j]) <= upper + 1e-12, config
        assert float(pess[j]) >= upper - 2 * PRV_EPS_ERROR * 1.001, config
        # and the PLD's pessimistic value is tighter than RDP's, as it must be for a tight accountant
        assert float(pess[j]) < OPACUS[config][0], config

"""The Rényi bound of Chourasia, Ye & Shokri (NeurIPS 2021) for the last iterate of full-batch noisy GD.

Source and how it was read. Chourasia, Ye & Shokri, "Differential privacy dynamics of Langevin
diffusion and noisy gradient descent" (NeurIPS 2021, arXiv 2102.05855), its RDP theorem for
noisy GD (the Langevin-diffusion tracing argument). The paper's full text could not be opened
from this project's stored copies (only its abstract and the start of its introduction; see
``docs/guide/last_iterate.md``, "What is not here"), so the theorem's number, its exact
conditions and its noise convention are not verified here. The statement used is the one a
public re-implementation encodes (a ``get_privacy_spent`` routine for "Langevin DP" in a
DP-SGLD code base: the conditions eta < 1/beta and theta_0 ~ Pi_C(N(0, 2 sigma^2 / lambda I)),
and eps(alpha) = 4 alpha L^2 / (lambda sigma^2 n^2) (1 - e^{-lambda eta K / 2}) for L-Lipschitz
losses, i.e. S_g = 2 L), read with the noise convention of the paper's Langevin diffusion
(d theta = -grad L dt + sqrt(2 sigma_L^2) dW, discretised with step eta):

    eps(alpha) = alpha S_g^2 / (lambda sigma_L^2 n^2) * (1 - exp(-lambda eta K / 2)),

for the update theta_{k+1} = Pi_C(theta_k - eta grad L_D(theta_k) + sqrt(2 eta sigma_L^2) N(0, I)),
L_D the mean of the losses l(theta; x_i), each lambda-strongly convex and beta-smooth on the
convex set C, S_g = sup ||grad l(.; x) - grad l(.; x')|| the gradient sensitivity, K steps.

Because the statement could not be checked against the paper, dpjax does not rely on it: the
implemented number is proven here to be at least the shifted-interpolation bound
(:mod:`.shifted_interpolation`, Bok, Su & Altschuler 2024), which holds under weaker assumptions
(eta M <= 2, any common start). So every value this module returns is a valid bound on dpjax's
update whatever the paper's exact constants are; it is never tighter than shifted interpolation,
and is kept as the paper's own account (its value, its dynamics in T) beside it.

Parameter mapping. dpjax's update theta' = Pi_K(theta - eta (grad F_D(theta) + Z)),
Z ~ N(0, sigma^2 I), F_D the mean loss, adds eta Z ~ N(0, eta^2 sigma^2 I); the paper adds
sqrt(2 eta sigma_L^2) N(0, I). So sigma_L^2 = eta sigma^2 / 2, lambda = m (``strong_convexity``),
beta = M (``smoothness``), S_g = Delta (``gradient_sensitivity``), K = T (``steps``), n the data
set size (the mean over n records), C = K (any diameter; the bound does not use it):

    RDP(alpha) = 2 alpha Delta^2 / (m eta sigma^2 n^2) * (1 - exp(-m eta T / 2)).

Limits: T = 1 gives alpha (Delta / (n sigma))^2 (1 - e^{-x/2}) / (x / 2), x = eta m in (0, 1),
between 1.57 and 2 times the one-step Gaussian mechanism's alpha (Delta / (n sigma))^2 / 2;
T -> inf gives 2 alpha Delta^2 / (m eta sigma^2 n^2), about twice the exact stationary value
alpha Delta^2 (2 - x) / (2 x sigma^2 n^2) of the quadratic; m -> 0 is refused (the bound needs
m > 0; with m -> 0 it tends to twice composition).

Proof that RDP_CYS(alpha) >= alpha mu_SI^2 / 2 (mu_SI the shifted-interpolation GDP mu, whose
Rényi divergence of order alpha is alpha mu^2 / 2). With eta M < 1, c = 1 - x and, full batch,
mu_SI^2 <= (Delta / (n sigma))^2 (1 + c)(1 - c^T) / ((1 - c)(1 + c^T)) (the closed form; the
optimised schedule is never above it). Writing s = x T / 2 it suffices that
2 (1 - e^{-s}) >= (1 - x / 2) tanh(y), y = -T log(1 - x) / 2 >= s:
  * s >= log 2: the left side is >= 1 >= the right side;
  * T = 1: the right side is exactly x / 2 and 2 (1 - e^{-x/2}) >= x - x^2 / 4 >= x / 2;
  * T >= 2 and s < log 2 (so x < log 2): the left side is >= 2 s - s^2 >= (2 - log 2) s and the
    right side is <= s (1 - x / 2)(-log(1 - x)) / x <= 1.12 s (increasing in x; 1.114 at log 2).
The tests check the inequality on a grid besides.
"""
from __future__ import annotations

import numpy as np

RESULT = ("Chourasia, Ye & Shokri 2021 (NeurIPS), RDP theorem for noisy GD (numbering unverified): RDP(a) = a Delta^2 / (m sigma_L^2 n^2) (1 - exp(-m eta T / 2)) "
          "with sigma_L^2 = eta sigma^2 / 2 (statement as re-implemented publicly; the paper's text was not readable here; "
          "proven >= the shifted-interpolation bound, so valid regardless)")
SHORT = "Chourasia, Ye & Shokri 2021 (NeurIPS), RDP of noisy GD"
BATCHINGS = ("full",)


def violated_assumption(step_size, smoothness, strong_convexity, batching: str):
    """The first assumption of the theorem that fails for some configuration, as a message, or
    None. Its assumptions: full batches (the gradient of the mean loss over all n records),
    m > 0 (strong convexity), eta M < 1 (the paper's step condition eta < 1/beta)."""
    if batching not in BATCHINGS:
        return (f"batching={batching!r} is not covered by the Chourasia-Ye-Shokri bound (its theorem is for full-batch noisy GD; "
                "for shuffled batches its minibatch extension is method='ye-shokri'): use batching='full' or another method")
    small = np.broadcast_to(np.asarray(strong_convexity, dtype=np.float64), np.broadcast_shapes(
        np.shape(step_size), np.shape(smoothness), np.shape(strong_convexity)))
    if np.any(small <= 0):
        return ("strong_convexity=0.0 violates strong_convexity > 0 required by the Chourasia-Ye-Shokri bound (the theorem needs "
                "an m-strongly convex loss: its bound is 1/m)")
    eta, big = np.broadcast_arrays(np.asarray(step_size, dtype=np.float64), np.asarray(smoothness, dtype=np.float64))
    bad = eta * big >= 1.0
    if np.any(bad):
        i = tuple(np.argwhere(bad)[0])
        return (f"step_size={float(eta[i]):.6g} violates step_size < 1 / smoothness = {1.0 / float(big[i]):.6g} required by the "
                "Chourasia-Ye-Shokri bound (the theorem's eta < 1/beta)")
    return None


def valid(step_size, smoothness, strong_convexity, batching: str) -> np.ndarray:
    """Where the theorem's assumptions hold (broadcast over configurations)."""
    eta = np.asarray(step_size, dtype=np.float64)
    ok = (np.asarray(strong_convexity, dtype=np.float64) > 0) & (eta * np.asarray(smoothness, dtype=np.float64) < 1.0)
    return ok & (batching in BATCHINGS)


def rdp(step_size, noise_std, steps, *, dataset_size, gradient_sensitivity, strong_convexity, orders) -> np.ndarray:
    """RDP(alpha) = 2 alpha Delta^2 / (m eta sigma^2 n^2) (1 - exp(-m eta T / 2)), shape
    configurations + (len(orders),); inf where m <= 0 (no bound). Assumes validated input.

    1 - exp(-x) is formed as -expm1(-x) (no cancellation for small m eta T), the prefactor over
    m as (1 - e^{-x}) / x times T / 2, so the m -> 0 limit is finite in floating point."""
    eta = np.asarray(step_size, dtype=np.float64)
    sigma = np.asarray(noise_std, dtype=np.float64)
    t = np.asarray(steps, dtype=np.float64)
    n = np.asarray(dataset_size, dtype=np.float64)
    delta_g = np.asarray(gradient_sensitivity, dtype=np.float64)
    m = np.asarray(strong_convexity, dtype=np.float64)
    x = m * eta * t / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(x > 0, -np.expm1(-x) / np.where(x > 0, x, 1.0), 1.0)  # (1 - e^{-x}) / x
    # 2 a Delta^2 / (m eta sigma^2 n^2) (1 - e^{-x}) = a (Delta / (n sigma))^2 T (1 - e^{-x}) / x
    per_order = (delta_g / (n * sigma)) ** 2 * t * ratio
    per_order = np.where(m > 0, per_order, np.inf)
    return per_order[..., None] * np.asarray(orders, dtype=np.float64)


__all__ = ["RESULT", "SHORT", "BATCHINGS", "violated_assumption", "valid", "rdp"]

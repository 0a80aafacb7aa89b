"""The Rényi bound of Ye & Shokri (NeurIPS 2022) for the last iterate of noisy SGD with shuffled batches.

Source. Ye & Shokri, "Differentially private learning needs hidden state (or much faster
convergence)", NeurIPS 2022 (arXiv 2203.05363), its "shuffle and partition" bound, as the
authors' code computes it (repository privacytrustlab/dp_dynamics, ``dp_utils.py``:
``first_epoch_guarantee``, ``shuffle_guarantee``, ``priv_dynamics_guarantees``; read there and
re-implemented here in dpjax's conventions, in log-space). The paper's text could not be read
here, so this is the bound their experiments report, not a re-derivation; dpjax tests it
against the exact last iterate of linear losses (tests/_last_iterate_oracle.py) on a grid.

Their algorithm: each epoch a fresh uniform shuffle cut into K = floor(n / b) batches of b,
theta <- theta - eta [(1/b)(sum of clipped gradients + sigma_m C N(0, I)) + lam theta]. In
dpjax's terms (theta' = theta - eta (grad F_B + Z), Z ~ N(0, sigma^2 I) on the batch mean):
sigma = sigma_m C / b, gradient sensitivity Delta = 2 C (replace-one, clip C), so one use of
the record is a Gaussian mechanism with rho = Delta / (b sigma) = 2 / sigma_m, and their
contraction 1 - eta lam is dpjax's c = 1 - eta m (m the strong convexity, valid as the step's
Lipschitz constant when eta (M + m) <= 2).

The bound at order a, with E = T / K epochs and eps_1(j) = (a rho^2 / 2) c^(2(j-1)) (1 - c^2) / (1 - c^(2j))
(their ``first_epoch_guarantee``: the record used j steps before the end of a one-epoch run,
the later noise paying the shift):

    RDP(a) = eps_1(floor(K/2)) (1 - c^(2 (E-1) (K - floor(K/2)))) / (1 - c^(2 (K - floor(K/2))))
             + 1/(a-1) log( (1/K) sum_{j=1}^{K} exp((a-1) eps_1(j)) ).

The second term averages over the record's (uniform) position in the last epoch. The first
charges each earlier epoch as a use floor(K/2) steps before that epoch's end, discounted by
c^(2 (K - floor(K/2))) per epoch: what the code does, and the place where it may differ from the
paper (a worst case over positions would use the epoch's last step, j = 1). With K = 1 the code
divides by zero (eps_1(0)); dpjax refuses K < 2. Their code adds ``rdp_init`` (the cost of a
private normalisation layer in their experiments): not part of noisy SGD, left out.
"""
from __future__ import annotations

import numpy as np
from scipy import special

RESULT = ("Ye & Shokri 2022 (NeurIPS), shuffle-and-partition RDP of the last iterate, as computed by the authors' code "
          "(privacytrustlab/dp_dynamics, dp_utils.shuffle_guarantee; without rdp_init)")
SHORT = "Ye & Shokri 2022 (NeurIPS), shuffled batches"


def violated_assumption(step_size, noise_std, steps, *, dataset_size, smoothness, strong_convexity, batching, batch_size):
    """The first assumption of the bound that fails for some configuration (a message naming
    argument, value and rule), or None."""
    if batching != "shuffled":
        return (f"batching={batching!r} is not covered by the Ye-Shokri bound (its theorem is for shuffle-and-partition "
                "batches, a fresh order each epoch): use batching='shuffled' or another method")
    eta, big, small, n, b, t = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (
        step_size, smoothness, strong_convexity, dataset_size, batch_size, steps)))
    checks = [
        (small <= 0, lambda i: f"strong_convexity={small[i]!r} violates strong_convexity > 0 required by the Ye-Shokri bound "
                               "(its contraction 1 - eta lam needs an l2 term / strong convexity)"),
        (eta * (big + small) > 2, lambda i: f"step_size={eta[i]:.6g} violates step_size <= 2 / (smoothness + strong_convexity) = "
                                            f"{2 / (big[i] + small[i]):.6g} required by the Ye-Shokri bound (the step contracts by "
                                            "1 - eta m only there)"),
        (np.mod(n, b) != 0, lambda i: f"batch_size={int(b[i])} violates batch_size divides dataset_size = {int(n[i])} required by "
                                      "the Ye-Shokri bound (shuffle and partition: floor(n / b) batches of exactly b)"),
        (np.floor(n / b) < 2, lambda i: f"batch_size={int(b[i])} violates dataset_size // batch_size >= 2 required by the Ye-Shokri "
                                        "bound (with K = 1 batch per epoch the authors' floor(K/2) term divides by zero)"),
        (np.mod(t, np.floor(n / b)) != 0, lambda i: f"steps={int(t[i])} violates steps a multiple of dataset_size // batch_size = "
                                                   f"{int(n[i] // b[i])} required by the Ye-Shokri bound (whole epochs)"),
    ]
    for bad, message in checks:
        if np.any(bad):
            return message(tuple(np.argwhere(bad)[0]))
    return None


def valid(step_size, noise_std, steps, *, dataset_size, smoothness, strong_convexity, batching, batch_size) -> np.ndarray:
    """Where the bound's assumptions hold (broadcast over configurations)."""
    if batching != "shuffled":
        return np.zeros(np.broadcast_shapes(*(np.shape(a) for a in (step_size, steps, dataset_size, batch_size))), dtype=bool)
    eta, big, small, n, b, t = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (
        step_size, smoothness, strong_convexity, dataset_size, batch_size, steps)))
    k = np.floor(n / b)
    return (small > 0) & (eta * (big + small) <= 2) & (np.mod(n, b) == 0) & (k >= 2) & (np.mod(t, np.maximum(k, 1)) == 0)


def _log_first_epoch(j, log_c, log_half_rho2):
    """log eps_1(j) / a = log(rho^2 / 2) + 2 (j - 1) log c + log((1 - c^2) / (1 - c^(2j))), j >= 1;
    the ratio as expm1(2 log c) / expm1(2 j log c) (1 / j in the limit c -> 1)."""
    j = np.asarray(j, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(log_c < 0, np.expm1(2 * log_c) / np.expm1(2 * j * log_c), 1.0 / j)
    return log_half_rho2 + 2 * (j - 1) * log_c + np.log(ratio)


def rdp(step_size, noise_std, steps, *, dataset_size, gradient_sensitivity, strong_convexity, batch_size, orders) -> np.ndarray:
    """RDP at ``orders`` (shape configurations + (len(orders),)); assumes :func:`valid` holds."""
    eta = np.asarray(step_size, dtype=np.float64)
    sigma = np.asarray(noise_std, dtype=np.float64)
    shape = np.broadcast_shapes(eta.shape, sigma.shape, np.shape(steps), np.shape(dataset_size), np.shape(gradient_sensitivity),
                                np.shape(strong_convexity), np.shape(batch_size))
    a = np.asarray(orders, dtype=np.float64)
    out = np.empty(shape + (a.size,))
    args = [np.broadcast_to(np.asarray(x, dtype=np.float64), shape) for x in (
        eta, sigma, steps, dataset_size, gradient_sensitivity, strong_convexity, batch_size)]
    for idx in np.ndindex(shape):  # K varies per configuration: one log-sum-exp over its K positions each
        e, s, t, n, dg, m, b = (float(x[idx]) for x in args)
        k = int(n // b)
        epochs = int(t) // k
        log_c = float(np.log1p(-e * m))
        half_rho2 = 0.5 * (dg / (b * s)) ** 2
        if half_rho2 == 0:
            out[idx] = 0.0
            continue
        log_h = float(np.log(half_rho2))
        half = k // 2
        rest = k - half
        # earlier epochs: eps_1(floor(K/2)) sum_{e < E-1} c^(2 e (K - floor(K/2))), the geometric sum by expm1
        first = np.exp(_log_first_epoch(half, log_c, log_h)) * a
        ratio = np.expm1(2 * (epochs - 1) * rest * log_c) / np.expm1(2 * rest * log_c) if log_c < 0 else float(epochs - 1)
        term1 = first * ratio
        j = np.arange(1, k + 1)
        eps_j = np.exp(_log_first_epoch(j, log_c, log_h))[None, :] * a[:, None]
        term2 = (special.logsumexp((a[:, None] - 1) * eps_j, axis=-1) - np.log(k)) / (a - 1)
        out[idx] = term1 + term2
    return out


__all__ = ["RESULT", "SHORT", "violated_assumption", "valid", "rdp"]

"""Privacy of the released last iterate: ``last_iterate_curve`` and ``sampler_last_iterate_curve``.

Every other dpjax accountant for noisy SGD / SGLD bounds the release of the whole path, which
grows without limit in the number of steps. When only the final iterate is published, and the
losses are convex and smooth, the hidden intermediate iterates give a bound that stops growing
("privacy amplification by iteration"). This module is the entry point:

* :func:`last_iterate_curve` — the update theta' = Pi_K(theta - eta (grad F_B + Z)),
  Z ~ N(0, sigma^2 I), described by its constants; arrays of configurations broadcast into one
  curve computed in one vectorised call.
* :func:`sampler_last_iterate_curve` — the same for a dpjax sampler run on a model and a
  neighbouring pair: the model certifies its constants (:mod:`dpjax.models.constants`), the
  sampler's parameterisation, temperature, clipping and batching map to (eta, sigma, batching).

Methods (``method=``):

* ``"shifted-interpolation"`` — the GDP bound of Bok, Su & Altschuler (ICML 2024) with the
  shift schedule optimised (:mod:`dpjax.accountants.samplers.shifted_interpolation`); needs eta M <= 2.
* ``"composition"`` — the whole path: the Gaussian mechanism composed over the record's uses
  (full / cyclic / shuffled: sqrt(uses) x one use's mu, exact for Gaussian composition, with its
  RDP from :func:`~dpjax.accountants.noisy_sgd_curve`), or for Poisson batches the
  Poisson-subsampled Gaussian mechanism (``adjacency``: add/remove or replace-one) composed over the steps by the
  PLD accountant (:func:`~dpjax.accountants.pld_curve`) and by RDP
  (:func:`~dpjax.accountants.noisy_sgd_curve`), the tighter at each delta
  (``poisson_composition="rdp"``: RDP alone, faster for large sweeps). The last iterate leaks
  no more, by post-processing.
* ``"subsampled-interpolation"`` — Poisson batches: the shifted-interpolation argument with the
  noise split between the walk's shift (a Gaussian part G_mu1) and the record's random uses
  (T - tau Poisson-subsampled Gaussian steps, composed by the PLD accountant, pessimistic; or
  RDP), minimised over tau and the split (:mod:`dpjax.accountants.samplers.subsampled_interpolation`,
  where the argument is written out). It sees amplification by subsampling and by iteration.
* ``"ye-shokri"`` — the Rényi bound of Ye & Shokri (NeurIPS 2022) for shuffled batches on
  strongly convex losses, as the authors' code computes it (:mod:`dpjax.accountants.samplers.ye_shokri`).
* ``"chourasia-ye-shokri"`` — the Rényi bound of Chourasia, Ye & Shokri (NeurIPS 2021) for
  full-batch noisy GD on m-strongly convex (m > 0), M-smooth losses with eta M < 1
  (:mod:`dpjax.accountants.samplers.chourasia_ye_shokri`; other batchings refused by name). Its
  statement is a public re-implementation's, and dpjax proves the implemented value is never below the shifted-interpolation bound,
  so it is valid whatever the paper's constants; it never wins.
* ``"auto"`` — per configuration the tightest of all of these (never worse than composition);
  the provenance names the one that won at delta = 1e-5 and lists its assumptions.

Poisson batches take ``adjacency="add-remove"`` (default: D' lacks the record whose gradient
Delta bounds) or ``"replace-one"`` (each record's gradient bounded by Delta / 2; PLD only).

What is not here and why (see ``docs/guide/last_iterate.md``): the sampled-minibatch bound of
Altschuler & Talwar (NeurIPS 2022, arXiv 2205.13710): dpjax has no statement of its theorem
with explicit constants to check an implementation against, and no public implementation of
it, so it does not guess one.
"""
from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple, Optional

import numpy as np
from scipy import special

from ... import _validate
from ..._result_methods import printed_by
from .. import _convention, fdp
from . import chourasia_ye_shokri as cys
from . import shifted_interpolation as si
from . import subsampled_interpolation as ssi
from . import ye_shokri as ys
from ..composition.rdp import DEFAULT_ORDERS, noisy_sgd_curve
from ..curve import PrivacyCurve, Provenance
from ...models.constants import ConstantsUnavailable  # the models' certificates raise it too

METHODS = ("auto", "shifted-interpolation", "subsampled-interpolation", "ye-shokri", "chourasia-ye-shokri", "composition")
ADJACENCIES = ("add-remove", "replace-one")
REFERENCE_DELTA = ssi.REFERENCE_DELTA  # where auto names the tightest method (every part stays valid at every delta)
BATCHINGS = si.BATCHINGS
RELEASED = "last iterate"
# eps grid of the GDP profiles: 0, then 0.58% relative steps from 1e-4 to 100 (eps read off the
# profile rounds up to the next grid point; the RDP values beside it answer below 1e-4)
PROFILE_EPSILONS = np.concatenate([[0.0], np.geomspace(1e-4, 100.0, 2401)])
_SI_RESULT = ("Bok, Su & Altschuler 2024 (ICML), shifted interpolation for f-DP, Secs. 3-4 "
              "(noisy GD / NoisyCGD; shift schedule optimised; Renyi form: Feldman et al. 2018, Thm 22)")




# ------------------------------------------------------------------------------------------
# validation (before any compute)
def _array(name, value, rule, check):
    arr = np.asarray(value, dtype=np.float64)
    bad = ~check(arr)
    if np.any(bad):
        where = np.argwhere(bad)[0].tolist() if arr.ndim else []
        shown = arr[tuple(where)] if arr.ndim else arr
        raise ValueError(f"{name}={float(shown)!r}{f' at index {where}' if where else ''} violates {rule}")
    return arr


def _int_array(name, value, rule, minimum):
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise _validate.ArgumentKindError(f"{name}={value!r} violates {rule}: got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if np.any(arr < minimum):
        bad = arr[arr < minimum].flat[0]
        raise ValueError(f"{name}={int(bad)} violates {rule}")
    return arr


@dataclasses.dataclass(frozen=True)
class _Config:
    eta: np.ndarray
    sigma: np.ndarray
    steps: np.ndarray
    n: np.ndarray
    sensitivity: np.ndarray
    smoothness: np.ndarray
    strong_convexity: np.ndarray
    diameter: Optional[np.ndarray]
    batching: str
    batch_size: Optional[np.ndarray]
    shape: tuple
    adjacency: str = "add-remove"  # Poisson batches only: the subsampled step's neighbouring relation
    # the subsampled step's sensitivity for the PLD accountant (Delta; a replace-one sampler pair: 2 G)
    pld_sensitivity: Optional[np.ndarray] = None


def _validate_config(step_size, noise_std, steps, dataset_size, gradient_sensitivity, smoothness, strong_convexity,
                     diameter, batching, batch_size, method, internal=False, adjacency=None) -> _Config:
    _validate.one_of("method", method, METHODS)
    _validate.one_of("batching", batching, si._INTERNAL_BATCHINGS if internal else BATCHINGS)
    if batching == "poisson":
        adjacency = "add-remove" if adjacency is None else adjacency
        _validate.one_of("adjacency", adjacency, ADJACENCIES)
    elif adjacency is not None:
        raise ValueError(f"adjacency={adjacency!r} with batching={batching!r}: adjacency applies to Poisson batches only "
                         "(for full, cyclic and shuffled batches gradient_sensitivity bounds the differing record's gradient "
                         "difference, which covers either relation); leave it None")
    else:
        adjacency = "replace-one"
    eta = _array("step_size", step_size, "step_size > 0 (finite)", lambda a: (a > 0) & np.isfinite(a))
    sigma = _array("noise_std", noise_std, "noise_std > 0 (finite): the Gaussian noise added to each gradient",
                   lambda a: (a > 0) & np.isfinite(a))
    t = _int_array("steps", steps, "steps an integer >= 1", 1)
    n = _int_array("dataset_size", dataset_size, "dataset_size an integer >= 1", 1)
    delta_g = _array("gradient_sensitivity", gradient_sensitivity,
                     "gradient_sensitivity >= 0 (finite): sup over theta of ||grad f_i - grad f'_i||", lambda a: (a >= 0) & np.isfinite(a))
    big = _array("smoothness", smoothness, "smoothness >= 0 (finite): M bounds the Hessian of every batch loss F_B",
                 lambda a: (a >= 0) & np.isfinite(a))
    small = _array("strong_convexity", strong_convexity, "strong_convexity >= 0 (finite)", lambda a: (a >= 0) & np.isfinite(a))
    if np.any(small > big):
        s, b = np.broadcast_arrays(small, big)
        i = np.argwhere(s > b)[0]
        raise ValueError(f"strong_convexity={float(s[tuple(i)])!r} violates strong_convexity <= smoothness = {float(b[tuple(i)])!r}")
    diam = None
    if diameter is not None:
        diam = _array("diameter", diameter, "diameter > 0 (the projection set's diameter D; None for R^d)", lambda a: a > 0)
    b = None
    if batching == "full":
        if batch_size is not None:
            raise ValueError(f"batch_size={batch_size!r} with batching='full': a full batch uses all dataset_size records; "
                             "leave batch_size None")
    else:
        if batch_size is None:
            raise ValueError(f"batching={batching!r} needs batch_size (a positive integer; for 'poisson' the expected batch "
                             "size q n that normalises the batch sum)")
        if batching == "poisson":
            b = _array("batch_size", batch_size, "batch_size > 0 (the expected batch size q n)", lambda a: (a > 0) & np.isfinite(a))
        else:
            b = _int_array("batch_size", batch_size, "batch_size an integer >= 1", 1)
        nb, bb = np.broadcast_arrays(n, b)
        if np.any(bb > nb):
            i = np.argwhere(bb > nb)[0]
            raise ValueError(f"batch_size={float(bb[tuple(i)]):g} violates batch_size <= dataset_size = {int(nb[tuple(i)])}")
    arrays = [eta, sigma, t, n, delta_g, big, small] + ([diam] if diam is not None else []) + ([b] if b is not None else [])
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        shapes = ", ".join(f"{nm}{a.shape}" for nm, a in zip(("step_size", "noise_std", "steps", "dataset_size",
                                                                "gradient_sensitivity", "smoothness", "strong_convexity"), arrays))
        raise ValueError(f"the numeric arguments do not broadcast together: {shapes}") from None
    return _Config(eta, sigma, t, n, delta_g, big, small, diam, batching, b, shape, adjacency)


# ------------------------------------------------------------------------------------------
# the bounds
def _one_use_mu(cfg: _Config) -> np.ndarray:
    """mu of one use of the record: the batch-mean gradient moves by Delta / b against noise sigma."""
    if cfg.batching == "full":
        b = cfg.n.astype(np.float64)
    elif cfg.batching in ("poisson", "sampled"):
        b = cfg.batch_size
    else:
        rem = cfg.n % cfg.batch_size
        b = np.where(rem > 0, rem, cfg.batch_size).astype(np.float64)
    return np.broadcast_to(cfg.sensitivity / (b * cfg.sigma), cfg.shape)


def _poisson_mechanism(cfg: _Config) -> tuple[np.ndarray, np.ndarray]:
    """(noise multiplier b sigma / Delta, rate q = b / n) of one Poisson-subsampled step, shape
    cfg.shape: the mechanism both composition accountants compose (inf where Delta = 0)."""
    sens = cfg.sensitivity if cfg.pld_sensitivity is None else cfg.pld_sensitivity
    rho = np.broadcast_to(sens / (cfg.batch_size * cfg.sigma), cfg.shape)
    with np.errstate(divide="ignore"):
        multiplier = np.where(rho > 0, 1.0 / np.where(rho > 0, rho, 1.0), np.inf)
    return multiplier, np.broadcast_to(cfg.batch_size / cfg.n, cfg.shape)


def _composition(cfg: _Config):
    """(gdp mu or None, rdp (shape + orders,)) of the whole path."""
    rho = _one_use_mu(cfg)
    steps = np.broadcast_to(cfg.steps, cfg.shape)
    if cfg.batching == "poisson" and cfg.adjacency == "replace-one":
        # no RDP accountant for the replace-one subsampled Gaussian here: the PLD accountant alone
        return None, np.full(cfg.shape + (DEFAULT_ORDERS.size,), np.inf)
    if cfg.batching == "poisson":
        multiplier, q = _poisson_mechanism(cfg)
        finite = np.isfinite(multiplier)
        # one RDP evaluation per distinct (noise multiplier, rate): sweeps over steps share it
        pairs = np.stack([np.where(finite, multiplier, 1.0).ravel(), q.ravel()], axis=-1)
        unique, inverse = np.unique(pairs, axis=0, return_inverse=True)
        per_step = _subsampled_rdp_per_step(unique[:, 0], unique[:, 1])
        rdp = per_step[inverse.ravel()].reshape(cfg.shape + (DEFAULT_ORDERS.size,)) * steps[..., None]
        return None, np.where(finite[..., None], rdp, 0.0)
    uses = si.schedule(cfg.batching, steps, cfg.n, cfg.batch_size).uses
    mu = np.sqrt(uses.astype(np.float64)) * rho
    # the Gaussian mechanism's RDP, through the package's accountant (a rho = 0 step is free)
    safe = np.where(rho > 0, rho, 1.0)
    rdp = noisy_sgd_curve(1.0 / safe, 1.0, 1).rdp * (uses * (rho > 0))[..., None]
    return mu, rdp


_PER_STEP_CACHE: dict = {}


def _subsampled_rdp_per_step(multipliers: np.ndarray, rates: np.ndarray) -> np.ndarray:
    """One step's Poisson-subsampled Gaussian RDP at DEFAULT_ORDERS (noisy_sgd_curve), cached by
    value: a sweep over steps, or the same run asked at several step counts, computes it once."""
    key = (multipliers.tobytes(), rates.tobytes())
    if key not in _PER_STEP_CACHE:
        if len(_PER_STEP_CACHE) >= 64:
            _PER_STEP_CACHE.pop(next(iter(_PER_STEP_CACHE)))
        _PER_STEP_CACHE[key] = noisy_sgd_curve(multipliers, rates, 1).rdp
    return _PER_STEP_CACHE[key]


POISSON_COMPOSITIONS = ("pld", "rdp")


def _poisson_pld(cfg: _Config):
    """(PLD bracket of the whole path or None, a note for the provenance) for Poisson batches:
    the PLD accountant's add/remove pair of the Poisson-subsampled Gaussian at the same noise
    multiplier b sigma / Delta as the RDP composition beside it (Doroshenko et al. 2022;
    :func:`~dpjax.accountants.pld_curve`). Where the PLD accountant cannot represent a
    configuration (a zero sensitivity, a grid beyond its limit) the RDP composition stands
    alone, and the note says so: never a silently weaker claim."""
    from ..composition.pld_accountant import GridLimitError, pld_curve

    multiplier, q = _poisson_mechanism(cfg)
    if not np.all(np.isfinite(multiplier)):
        return None, "; PLD composition skipped (a configuration with gradient_sensitivity = 0: RDP composition, which is 0 there)"
    try:
        curve = pld_curve(multiplier, q, np.broadcast_to(cfg.steps, cfg.shape), adjacency=cfg.adjacency, sampling="poisson")
    except GridLimitError as err:
        return None, f"; PLD composition unavailable ({err}): RDP composition alone"
    return curve.pld, ""


def _shifted_interpolation(cfg: _Config) -> np.ndarray:
    return si.gdp_mu(cfg.eta, cfg.sigma, cfg.steps, dataset_size=cfg.n, gradient_sensitivity=cfg.sensitivity,
                     smoothness=cfg.smoothness, strong_convexity=cfg.strong_convexity, diameter=cfg.diameter,
                     batching=cfg.batching, batch_size=cfg.batch_size) + np.zeros(cfg.shape)


def _check_contraction(cfg: _Config) -> None:
    gap = si.gap_to_one(cfg.eta, cfg.smoothness, cfg.strong_convexity)
    if np.any(gap < 0):
        eta, big = np.broadcast_arrays(cfg.eta, cfg.smoothness)
        i = tuple(np.argwhere(np.broadcast_to(gap, eta.shape) < 0)[0])
        raise ConstantsUnavailable(
            f"step_size={float(eta[i]):.6g} violates step_size <= 2 / smoothness = {2.0 / float(big[i]):.6g} required by the "
            "shifted-interpolation bound (Bok, Su & Altschuler 2024): the gradient step theta - eta grad F_B must be a "
            "contraction (1-Lipschitz), which fails for eta M > 2")


def gdp_epsilon(mu, delta) -> np.ndarray:
    """Exact eps(delta) of mu-GDP (Dong, Roth & Su 2022, Cor. 2.13), vectorised: bisection on
    log delta_mu(eps), rounded up (the returned eps certifies delta); see
    :func:`dpjax.accountants.fdp.gdp_epsilon`."""
    d = float(delta)
    if not 0 < d < 1:
        raise ValueError(f"delta={delta!r} violates 0 < delta < 1")
    return fdp.gdp_epsilon(mu, d)


def gdp_profile(mu, epsilons) -> np.ndarray:
    """delta_mu(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu) of mu-GDP on a grid, shape
    mu.shape + (len(epsilons),) (Balle & Wang 2018, Thm 8; Dong, Roth & Su 2022, Cor. 2.13).

    The same formulas as :func:`dpjax.accountants.fdp.gdp_log_delta` (the tail through the scaled
    complementary error function, so the two terms are O(1) numbers), evaluated only on the
    branch each point needs: this is the bulk of a batched curve's cost."""
    mu = np.asarray(mu, dtype=np.float64)[..., None]
    eps = np.asarray(epsilons, dtype=np.float64)
    m, e = np.broadcast_arrays(mu, eps)
    m, e = m.ravel(), e.ravel()
    out = np.zeros(m.shape)
    live = m > 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        x1 = np.where(live, m / 2.0 - e / np.where(live, m, 1.0), -np.inf)
        tail = live & (x1 <= 0)
        u = -x1[tail] / math.sqrt(2.0)
        v = u + m[tail] / math.sqrt(2.0)
        out[tail] = 0.5 * np.exp(-0.5 * x1[tail] ** 2) * (special.erfcx(u) - special.erfcx(v))
        body = live & (x1 > 0)
        out[body] = special.ndtr(x1[body]) - np.exp(e[body] + special.log_ndtr(x1[body] - m[body]))
    out = np.where(np.isinf(m), np.where(np.isinf(e), 0.0, 1.0), out)
    return np.clip(out, 0.0, 1.0).reshape(np.broadcast_shapes(mu.shape, eps.shape))


def _mixture_parts(weights: np.ndarray, mus: np.ndarray):
    """(delta profile, RDP) of the mixture sum_g w_g G_{mu_g} (weights and mus on a trailing group
    axis): delta(eps) <= sum_g w_g delta_{mu_g}(eps) and, by joint convexity of
    exp((a - 1) D_a), RDP_a <= log(sum_g w_g exp((a - 1) a mu_g^2 / 2)) / (a - 1)."""
    finite = np.all(np.isfinite(mus), axis=-1)
    m = np.where(np.isfinite(mus), mus, 0.0)
    deltas = 0.0
    for g in range(m.shape[-1]):  # one group at a time: memory of one profile per configuration
        w = weights[..., g]
        if np.any(w > 0):
            deltas = deltas + w[..., None] * gdp_profile(np.where(w > 0, m[..., g], 0.0), PROFILE_EPSILONS)
    a = DEFAULT_ORDERS
    with np.errstate(divide="ignore"):
        log_w = np.log(weights)[..., None, :]
    rdp = special.logsumexp(log_w + ((a - 1.0) * a)[:, None] * (m * m)[..., None, :] / 2.0, axis=-1) / (a - 1.0)
    deltas = np.where(finite[..., None], np.clip(deltas, 0.0, 1.0), 1.0)
    rdp = np.where(finite[..., None], np.maximum(rdp, 0.0), np.inf)
    return deltas, rdp


def _curve(mu: Optional[np.ndarray], rdp: Optional[np.ndarray], provenance: Provenance, mixture=None,
           extra_deltas: Optional[np.ndarray] = None) -> PrivacyCurve:
    """A curve from a GDP mu (held exactly: eps(delta) by the closed form, Dong, Roth & Su 2022,
    Cor. 2.13; beside it its profile on PROFILE_EPSILONS and its RDP a mu^2 / 2) and/or RDP
    values and/or a delta profile on PROFILE_EPSILONS (``extra_deltas``)."""
    rdp_parts = []
    deltas = extra_deltas
    if mixture is not None:
        deltas, mix_rdp = _mixture_parts(*mixture)
        rdp_parts.append(mix_rdp)
    if mu is not None:
        finite = np.isfinite(mu)
        m = np.where(finite, mu, 0.0)
        mu_deltas = np.where(finite[..., None], gdp_profile(m, PROFILE_EPSILONS), 1.0)
        deltas = mu_deltas if deltas is None else np.minimum(deltas, mu_deltas)
        gdp_mu = np.asarray(mu, dtype=np.float64)
        rdp_parts.append(np.where(finite[..., None], DEFAULT_ORDERS * (m * m)[..., None] / 2.0, np.inf))
    if rdp is not None:
        rdp_parts.append(rdp)
    rdp_all = np.minimum.reduce(np.broadcast_arrays(*rdp_parts)) if rdp_parts else None
    if rdp_all is None:  # a profile alone (the replace-one subsampled bound): no RDP to convert
        rdp_all = np.full(np.shape(deltas)[:-1] + (DEFAULT_ORDERS.size,), np.inf)
    curve = PrivacyCurve(orders=DEFAULT_ORDERS, rdp=np.array(rdp_all, dtype=np.float64), provenance=provenance)
    if deltas is not None:
        curve = dataclasses.replace(curve, epsilons=PROFILE_EPSILONS, deltas=np.clip(deltas, 0.0, 1.0))
    if mu is not None:
        curve = dataclasses.replace(curve, gdp_mu=gdp_mu)
    return curve


def _constants_text(cfg: _Config) -> str:
    if cfg.shape != ():
        return f"{int(np.prod(cfg.shape))} configurations (constants per configuration)"
    c = 1.0 - float(si.gap_to_one(cfg.eta, cfg.smoothness, cfg.strong_convexity))
    parts = [f"eta={float(cfg.eta):.6g}", f"sigma={float(cfg.sigma):.6g}", f"T={int(cfg.steps)}", f"n={int(cfg.n)}",
             f"Delta={float(cfg.sensitivity):.6g}", f"M={float(cfg.smoothness):.6g}", f"m={float(cfg.strong_convexity):.6g}",
             f"c={c:.10g}"]
    if cfg.diameter is not None:
        parts.append(f"D={float(cfg.diameter):.6g}")
    if cfg.batch_size is not None:
        parts.append(f"b={float(cfg.batch_size):g}")
    return ", ".join(parts)


def _assumptions(cfg: _Config, method: str) -> tuple:
    out = ["theta' = Pi_K(theta - eta (grad F_B(theta) + Z)), Z ~ N(0, sigma^2 I), F_B the mean of f_i over the batch",
           "sup_theta ||grad f_i - grad f'_i|| <= Delta for the differing record; both chains use the same batches"]
    if method == "chourasia-ye-shokri":
        out += ["every f_i m-strongly convex and M-smooth with m > 0, eta M < 1 (Chourasia, Ye & Shokri 2021; the value is "
                "also >= the shifted-interpolation bound, valid for any common start with eta M <= 2)",
                "K convex of diameter D" if cfg.diameter is not None else "K = R^d (no projection)",
                "the paper starts both chains from Pi_K(N(0, eta sigma^2 / m I)); dpjax's validity argument only needs a common start"]
    elif method == "ye-shokri":
        out += ["every F_B m-strongly convex and M-smooth with m > 0, eta (M + m) <= 2 (the step contracts by c = 1 - eta m)",
                "shuffle and partition: a fresh uniform order each epoch, n / b >= 2 batches of exactly b, whole epochs",
                "as computed by the authors' code (its earlier epochs charged at position floor(K/2)); both chains start "
                "from the same distribution"]
    elif method != "composition":
        out += ["every F_B convex with m I <= Hessian <= M I; eta M <= 2 (the step contracts by c = max|1 - eta m|, |1 - eta M|)",
                "K convex of diameter D" if cfg.diameter is not None else "K = R^d (no projection)",
                "both chains start from the same distribution"]
    schemes = {
        "full": "full batch (every record in every step)",
        "cyclic": "cyclic: one fixed order, batches of b, worst position of the differing record",
        "cyclic-random": "cyclic: one secret uniformly random order for every epoch, batches of b (averaged over the record's "
                         "position)",
        "shuffled": "shuffled: a fresh order each epoch, batches of b, worst positions",
        "sampled": "fixed-size batches of b drawn afresh each step: any step may hold the record (no amplification claimed)",
        "poisson": "Poisson batches (rate q = b / n), sum normalised by b; "
                   + (("add/remove adjacency (D' lacks the record)" if cfg.adjacency == "add-remove" else
                       "replace-one adjacency (each record's gradient bounded by Delta / 2)")
                      if method != "shifted-interpolation" else "no amplification by subsampling claimed by the last-iterate bound"),
    }
    out.append(schemes[cfg.batching])
    return tuple(out)


@_validate.arguments(step_size="numbers", noise_std="numbers", steps="ints", dataset_size="ints",
                     gradient_sensitivity="numbers", smoothness="numbers", strong_convexity="numbers",
                     diameter="numbers?", batch_size="numbers?")
def last_iterate_curve(step_size, noise_std, steps, *, dataset_size, gradient_sensitivity, smoothness,
                       strong_convexity=0.0, diameter=None, batching="full", batch_size=None, method="auto",
                       poisson_composition="pld", adjacency=None) -> PrivacyCurve:
    """Privacy of releasing only theta_T of theta' = Pi_K(theta - eta (grad F_B(theta) + Z)).

    Args:
        step_size: eta > 0. noise_std: sigma > 0 (Z ~ N(0, sigma^2 I) is added to the gradient).
        steps: T >= 1. dataset_size: n.
        gradient_sensitivity: Delta = sup_theta ||grad f_i(theta) - grad f'_i(theta)|| for the
            differing record (e.g. 2 C for replace-one with clipping at C; C for add/remove).
        smoothness, strong_convexity: M >= m >= 0 bounding the Hessian of every batch loss F_B
            (for Poisson batches: of every batch the run can draw).
        diameter: D of the convex set K the iterates are projected onto (None: no projection).
        batching: "full", "cyclic" (fixed order), "shuffled" (fresh order each epoch) or
            "poisson"; batch_size: b (Poisson: the expected size q n normalising the batch sum;
            composition then assumes add/remove adjacency, D' lacking the record whose gradient
            Delta bounds: use :func:`sampler_last_iterate_curve` for a replace-one pair).
        method: "auto" (per configuration the tightest valid bound, never above composition),
            "shifted-interpolation" (no amplification by subsampling), "subsampled-interpolation"
            (Poisson batches: shifted interpolation composed with the subsampled steps),
            "ye-shokri" (shuffled batches, m > 0, whole epochs; RDP only), "chourasia-ye-shokri"
            (full batches, m > 0, eta M < 1; RDP only), "composition".
        poisson_composition: how "composition" (and "auto") account for Poisson batches: "pld"
            (default: the PLD accountant beside the RDP one, the tighter per delta; a few ms
            per configuration once compiled) or "rdp" (RDP alone: for sweeps of thousands of
            configurations, where speed matters more than the last ~10% of eps; add/remove only).
            The same choice applies to "subsampled-interpolation" (its subsampled part).
        adjacency: Poisson batches only: "add-remove" (default: D' lacks the record, whose
            gradient Delta bounds) or "replace-one" (each record's gradient bounded by Delta / 2,
            so Delta = 2 C for clip C; PLD accountant only).

    All numeric arguments broadcast: arrays of configurations give one curve whose
    ``epsilon(delta)`` returns an array. The curve holds RDP values (orders
    :data:`~dpjax.accountants.DEFAULT_ORDERS`) and, where the bound is Gaussian DP, its exact
    delta(eps) profile on :data:`PROFILE_EPSILONS` (so ``epsilon`` is the exact GDP eps rounded
    up to that grid; :func:`last_iterate_gdp_mu` gives the mu itself).

    Raises ``ValueError`` (naming the argument) on bad input and :class:`ConstantsUnavailable`
    when ``method="shifted-interpolation"`` meets a step that does not contract (eta M > 2), or
    ``method="chourasia-ye-shokri"`` a batching other than "full", m = 0 or eta M >= 1.
    """
    _validate.one_of("poisson_composition", poisson_composition, POISSON_COMPOSITIONS)
    cfg = _validate_config(step_size, noise_std, steps, dataset_size, gradient_sensitivity, smoothness, strong_convexity,
                           diameter, batching, batch_size, method, adjacency=adjacency)
    if poisson_composition == "rdp" and cfg.batching == "poisson" and cfg.adjacency == "replace-one":
        raise ValueError("poisson_composition='rdp' with adjacency='replace-one' violates poisson_composition='pld' for "
                         "replace-one (dpjax has no RDP accountant for the replace-one Poisson-subsampled Gaussian)")
    _check_method(cfg, method)
    return _build(cfg, method, poisson_composition=poisson_composition)


def _check_method(cfg: _Config, method: str) -> None:
    """Raise ConstantsUnavailable (or ValueError for a batching the method never covers) where a
    method asked for by name cannot bound the configuration."""
    if method in ("shifted-interpolation", "subsampled-interpolation"):
        if method == "subsampled-interpolation" and cfg.batching != "poisson":
            raise ValueError(f"method='subsampled-interpolation' with batching={cfg.batching!r} violates batching='poisson' "
                             "(amplification by subsampling needs Poisson batches; use 'shifted-interpolation')")
        _check_contraction(cfg)
    elif method == "chourasia-ye-shokri":
        _check_chourasia_ye_shokri(cfg)
    elif method == "ye-shokri":
        message = ys.violated_assumption(cfg.eta, cfg.sigma, cfg.steps, dataset_size=cfg.n, smoothness=cfg.smoothness,
                                         strong_convexity=cfg.strong_convexity, batching=cfg.batching,
                                         batch_size=cfg.batch_size)
        if message is not None:
            raise ConstantsUnavailable(message)


def _check_chourasia_ye_shokri(cfg: _Config) -> None:
    message = cys.violated_assumption(cfg.eta, cfg.smoothness, cfg.strong_convexity, cfg.batching)
    if message is not None:
        raise ConstantsUnavailable(message)


def _chourasia_ye_shokri(cfg: _Config) -> np.ndarray:
    """RDP (shape + orders) of Chourasia, Ye & Shokri's bound; inf where its assumptions fail."""
    ok = np.broadcast_to(cys.valid(cfg.eta, cfg.smoothness, cfg.strong_convexity, cfg.batching), cfg.shape)
    values = cys.rdp(cfg.eta, cfg.sigma, cfg.steps, dataset_size=cfg.n, gradient_sensitivity=cfg.sensitivity,
                     strong_convexity=cfg.strong_convexity, orders=DEFAULT_ORDERS)
    return np.where(ok[..., None], np.broadcast_to(values, cfg.shape + (DEFAULT_ORDERS.size,)), np.inf)


class _Subsampled(NamedTuple):
    """The subsampled shifted-interpolation bound of every configuration: RDP (add/remove; None
    for replace-one), its delta profile on PROFILE_EPSILONS from the PLD (None in RDP mode),
    the PLD bracket of a single configuration (None otherwise), eps at REFERENCE_DELTA."""

    rdp: Optional[np.ndarray]
    deltas: Optional[np.ndarray]
    pld: object
    eps: np.ndarray
    choice: str


def _subsampled(cfg: _Config, poisson_composition: str) -> _Subsampled:
    """Bok, Su & Altschuler's shifted interpolation with the Poisson-subsampled steps accounted
    (:mod:`.subsampled_interpolation`): inf (no bound) where the step does not contract."""
    from ..conversions import rdp_to_epsilon

    contracting = np.broadcast_to(si.gap_to_one(cfg.eta, cfg.smoothness, cfg.strong_convexity) >= 0, cfg.shape)
    multiplier, q = _poisson_mechanism(cfg)
    live = np.isfinite(multiplier) & contracting
    zero = ~np.isfinite(multiplier)  # Delta = 0: nothing to leak
    cands = ssi.candidates(cfg.eta, cfg.sigma, cfg.steps, dataset_size=cfg.n, gradient_sensitivity=cfg.sensitivity,
                           smoothness=cfg.smoothness, strong_convexity=cfg.strong_convexity, diameter=cfg.diameter,
                           batch_size=cfg.batch_size)
    cands = ssi.Candidates(*(np.broadcast_to(a, cfg.shape + a.shape[-2:]) for a in cands))
    safe_m = np.where(np.isfinite(multiplier), multiplier, 1.0)
    # RDP over the grid: the bound itself for add/remove, the search's guide for replace-one
    rdp_min, grid = ssi.rdp(cands, safe_m, q, DEFAULT_ORDERS, _subsampled_rdp_per_step)
    rdp = None
    eps = np.array(np.broadcast_to(np.where(zero, 0.0, np.inf), cfg.shape))
    if cfg.adjacency == "add-remove":
        rdp = np.where(live[..., None], rdp_min, np.where(zero[..., None], 0.0, np.inf))
        eps = np.array(np.minimum(eps, np.where(live, rdp_to_epsilon(DEFAULT_ORDERS, rdp, REFERENCE_DELTA), np.inf)))
    deltas, pld, choice = None, None, "RDP"
    if poisson_composition == "pld":
        deltas = np.where(zero[..., None], 0.0, 1.0) + np.zeros(cfg.shape + PROFILE_EPSILONS.shape)
        picks = []
        for idx in np.ndindex(cfg.shape):
            if not live[idx]:
                continue
            bracket, e, n_sub, split, mu1 = ssi.best_pld(ssi.Candidates(*(a[idx] for a in cands)), grid[idx], DEFAULT_ORDERS,
                                                         float(multiplier[idx]), float(q[idx]), cfg.adjacency)
            deltas[idx] = bracket.delta(PROFILE_EPSILONS)
            eps[idx] = min(eps[idx], e)
            picks.append((int(np.asarray(cfg.steps).reshape(-1)[0]) if cfg.shape == () else None, n_sub, split, mu1))
            if cfg.shape == ():
                pld = bracket
        if cfg.shape == () and picks:
            _, n_sub, split, mu1 = picks[0]
            choice = (f"PLD; chosen tau = T - {n_sub}, sigma_2 / sigma = {split:g}, mu_1 = {mu1:.4g} (at delta = "
                      f"{REFERENCE_DELTA:g})")
        else:
            choice = "PLD (tau and split per configuration)"
    return _Subsampled(rdp, deltas, pld, eps, choice)


def _ye_shokri(cfg: _Config) -> np.ndarray:
    """RDP (shape + orders) of Ye & Shokri's shuffled bound; inf where its assumptions fail."""
    ok = np.broadcast_to(ys.valid(cfg.eta, cfg.sigma, cfg.steps, dataset_size=cfg.n, smoothness=cfg.smoothness,
                                  strong_convexity=cfg.strong_convexity, batching=cfg.batching, batch_size=cfg.batch_size),
                         cfg.shape)
    out = np.full(cfg.shape + (DEFAULT_ORDERS.size,), np.inf)
    if np.any(ok):
        args = [np.broadcast_to(np.asarray(a, dtype=np.float64), cfg.shape)[ok] for a in (
            cfg.eta, cfg.sigma, cfg.steps, cfg.n, cfg.sensitivity, cfg.strong_convexity, cfg.batch_size)]
        out[ok] = ys.rdp(args[0], args[1], args[2], dataset_size=args[3], gradient_sensitivity=args[4],
                         strong_convexity=args[5], batch_size=args[6], orders=DEFAULT_ORDERS)
    return out


_NAMES = {"shifted-interpolation": "shifted interpolation (Bok, Su & Altschuler 2024)",
          "subsampled-interpolation": "subsampled shifted interpolation (Bok, Su & Altschuler 2024, PLD)",
          "composition": "composition", "chourasia-ye-shokri": "Chourasia, Ye & Shokri 2021",
          "ye-shokri": "Ye & Shokri 2022"}


def _winners(parts: dict) -> tuple:
    """(text naming the tightest part at REFERENCE_DELTA per configuration, the name of the
    winner of a single configuration or None)."""
    names = list(parts)
    stacked = np.stack([np.broadcast_to(parts[k], np.shape(parts[names[0]])) for k in names], axis=-1)
    best = np.argmin(stacked, axis=-1)
    if best.ndim == 0:
        name = names[int(best)]
        return f"tightest at delta = {REFERENCE_DELTA:g}: {_NAMES[name]} (eps {float(stacked[..., int(best)]):.4g})", name
    counts = ", ".join(f"{_NAMES[names[k]]} in {int(np.sum(best == k))}" for k in range(len(names)) if np.any(best == k))
    return f"tightest at delta = {REFERENCE_DELTA:g}: {counts} of {best.size} configurations", None


def _build(cfg: _Config, method: str, extra_assumptions=(), poisson_composition: str = "pld") -> PrivacyCurve:
    from ..conversions import rdp_to_epsilon

    constants = _constants_text(cfg)
    extra = tuple(extra_assumptions)
    if method == "chourasia-ye-shokri":
        prov = Provenance(f"{cys.RESULT}; {constants}", "bound", _assumptions(cfg, method) + extra, RELEASED)
        return _curve(None, _chourasia_ye_shokri(cfg), prov)
    if method == "ye-shokri":
        prov = Provenance(f"{ys.RESULT}; {constants}", "bound", _assumptions(cfg, method) + extra, RELEASED)
        return _curve(None, _ye_shokri(cfg), prov)
    mixture = _shuffled_mixture(cfg)
    if method == "shifted-interpolation":
        mu = _shifted_interpolation(cfg)
        prov = Provenance(f"{_SI_RESULT}{_MIXTURE_NOTE if mixture else ''}; {constants}", "bound",
                          _assumptions(cfg, method) + extra, RELEASED)
        return _curve(mu, None, prov, mixture)
    if method == "subsampled-interpolation":
        part = _subsampled(cfg, poisson_composition)
        result = ssi.RESULT if part.deltas is not None else ssi.RESULT_RDP
        prov = Provenance(f"{result} ({part.choice}); {constants}", "bound", _assumptions(cfg, method) + extra, RELEASED)
        return _with_pld(_curve(None, part.rdp, prov, extra_deltas=part.deltas), part.pld)
    comp_mu, comp_rdp = _composition(cfg)
    pld, pld_note = (None, "")
    if cfg.batching == "poisson" and poisson_composition == "pld":
        pld, pld_note = _poisson_pld(cfg)
    if method == "composition":
        prov = Provenance(f"{_composition_result(cfg, pld is not None)}{pld_note}; {constants}", "bound",
                          _assumptions(cfg, method) + extra, "path (every iterate; the last iterate by post-processing)")
        return _with_pld(_curve(comp_mu, comp_rdp, prov), pld)
    # auto: every valid part, per configuration the tightest
    dummy = Provenance("part")
    si_mu = _shifted_interpolation(cfg)  # inf where the step does not contract: composition alone there
    mu = si_mu if comp_mu is None else np.minimum(si_mu, comp_mu)
    contracting = np.isfinite(si_mu)
    note = "" if np.all(contracting) else (
        f"; shifted interpolation unavailable for {int(np.sum(~contracting))} configuration(s) with eta M > 2 (composition there)")
    comp_curve = _with_pld(_curve(comp_mu, comp_rdp, dummy), pld)
    parts = {"shifted-interpolation": _curve(si_mu, None, dummy, mixture).epsilon(REFERENCE_DELTA),
             "composition": comp_curve.epsilon(REFERENCE_DELTA)}
    rdp = comp_rdp
    pieces = [f"[{_SI_RESULT}{_MIXTURE_NOTE if mixture else ''}]", f"[{_composition_result(cfg, pld is not None)}]"]
    if np.any(cys.valid(cfg.eta, cfg.smoothness, cfg.strong_convexity, cfg.batching)):
        # never below shifted interpolation (proof in chourasia_ye_shokri): kept so auto is the minimum over every method
        cys_rdp = _chourasia_ye_shokri(cfg)
        rdp = np.minimum(rdp, cys_rdp)
        parts["chourasia-ye-shokri"] = rdp_to_epsilon(DEFAULT_ORDERS, cys_rdp, REFERENCE_DELTA)
        pieces.append(f"[{cys.SHORT}, where m > 0 and eta M < 1]")
    if cfg.batching == "shuffled":
        ys_rdp = _ye_shokri(cfg)
        if np.any(np.isfinite(ys_rdp)):
            rdp = np.minimum(rdp, ys_rdp)
            parts["ye-shokri"] = rdp_to_epsilon(DEFAULT_ORDERS, ys_rdp, REFERENCE_DELTA)
            pieces.append(f"[{ys.SHORT}, where m > 0, eta (M + m) <= 2, b divides n, n / b >= 2 and whole epochs]")
    extra_deltas = None
    if cfg.batching == "poisson" and np.any(contracting):
        part = _subsampled(cfg, poisson_composition)
        if part.rdp is not None:
            rdp = np.minimum(rdp, part.rdp)
        parts["subsampled-interpolation"] = part.eps
        pieces.append(f"[{ssi.RESULT if part.deltas is not None else ssi.RESULT_RDP} ({part.choice})]")
        extra_deltas = part.deltas
        if part.pld is not None and (pld is None or float(part.eps) < float(pld.epsilon(REFERENCE_DELTA))):
            # the curve holds one PLD: the tighter at the reference delta; the other as a profile
            if pld is not None:
                extra_deltas = np.minimum(extra_deltas, pld.delta(PROFILE_EPSILONS))
            pld = part.pld
    won_text, won = _winners(parts)
    # the assumptions of the method that won (of them all for a batch of configurations)
    used = "auto" if won is None else won
    prov = Provenance(f"tightest per configuration of {' and '.join(pieces)}{note}{pld_note}; {won_text}; {constants}",
                      "bound", _assumptions(cfg, used) + extra, RELEASED)
    return _with_pld(_curve(mu, rdp, prov, mixture, extra_deltas=extra_deltas), pld)


def _with_pld(curve: PrivacyCurve, pld) -> PrivacyCurve:
    """The curve with the path's PLD beside its RDP and profile: eps(delta) is then the smallest
    of the three (each a valid bound)."""
    return curve if pld is None else dataclasses.replace(curve, pld=pld)


_MIXTURE_NOTE = (", averaged over the record's batch in the last epoch by joint convexity (a fresh uniform order each "
                 "epoch; earlier epochs at their worst positions)")


def _shuffled_mixture(cfg: _Config):
    """(weights, mus) of the position mixture for batches in a secret random order (shuffled each
    epoch, or one random order for all epochs: the internal "cyclic-random"); None otherwise."""
    if cfg.batching not in ("shuffled", "cyclic-random"):
        return None
    return si.position_mixture(cfg.eta, cfg.sigma, cfg.steps, dataset_size=cfg.n, gradient_sensitivity=cfg.sensitivity,
                               smoothness=cfg.smoothness, strong_convexity=cfg.strong_convexity, diameter=cfg.diameter,
                               batch_size=cfg.batch_size, order="shuffled" if cfg.batching == "shuffled" else "random-fixed")


def _composition_result(cfg: _Config, pld: bool = False) -> str:
    if cfg.batching == "poisson":
        rdp = ("Poisson-subsampled Gaussian mechanism (Mironov, Talwar & Zhang 2019) composed over the T steps "
               "(Mironov 2017, Prop. 1), via noisy_sgd_curve")
        if not pld:
            return rdp
        return (f"the tighter of {rdp} and its PLD composition (add/remove pair, Zhu, Dong & Wang 2022 Thm 11; "
                "Doroshenko et al. 2022), via pld_curve")
    return ("Gaussian mechanism composed over the differing record's uses (mu sqrt(uses); Dong, Roth & Su 2022, Cor. 3.3; "
            "RDP via noisy_sgd_curve)")


_GDP_KEYS = {"shifted-interpolation": "shifted_interpolation", "composition": "composition"}  # the old dict's keys


@dataclasses.dataclass(frozen=True)
class LastIterateGDP:
    """The Gaussian-DP mu of each last-iterate bound that is Gaussian DP, as
    :func:`last_iterate_gdp_mu` returns it (one per configuration, the arguments' broadcast shape).

    shifted_interpolation: mu of the shifted-interpolation bound (Bok, Su & Altschuler 2024);
        inf where eta M > 2 (the gradient step is no contraction and the bound says nothing).
    composition: mu of the whole path's Gaussian composition (the last iterate by
        post-processing); None for Poisson batches, whose composition is not Gaussian DP.

    Both are valid bounds, so the smaller holds: :attr:`mu`, and :meth:`epsilon` reads it at a
    delta. The previous release's dict access (``result["shifted-interpolation"]``, ``keys()``,
    ``items()``, ``values()``, ``get``) still works for this release, with a DeprecationWarning.
    """

    shifted_interpolation: np.ndarray
    composition: Optional[np.ndarray]

    summary, __repr__ = printed_by("last_iterate_gdp_summary", "mu of each bound, the tighter one's eps at a few deltas.")

    @property
    def mu(self) -> np.ndarray:
        """The smaller mu of the two bounds, per configuration (each holds, so the smaller does)."""
        if self.composition is None:
            return self.shifted_interpolation
        return np.minimum(self.shifted_interpolation, self.composition)

    def epsilon(self, delta) -> np.ndarray:
        """eps(``delta``) of :attr:`mu`-GDP (exact, rounded up; Dong, Roth & Su 2022, Cor. 2.13)."""
        return gdp_epsilon(self.mu, delta)

    # the previous release's dict by method, deprecated
    def _as_dict(self, old: str) -> dict:
        _convention.deprecated(f"{old}, where result = last_iterate_gdp_mu(...) (a dict by method in the previous release),",
                               "result.shifted_interpolation and result.composition")
        return {key: getattr(self, name) for key, name in _GDP_KEYS.items()}

    def __getitem__(self, key):
        return self._as_dict(f"result[{key!r}]")[key]

    def get(self, key, default=None):
        return self._as_dict("result.get(key)").get(key, default)

    def keys(self):
        return self._as_dict("result.keys()").keys()

    def values(self):
        return self._as_dict("result.values()").values()

    def items(self):
        return self._as_dict("result.items()").items()

    def __iter__(self):
        return iter(self._as_dict("iter(result)"))

    def __contains__(self, key) -> bool:
        return key in self._as_dict("key in result")


@_validate.arguments(step_size="numbers", noise_std="numbers", steps="ints", dataset_size="ints",
                     gradient_sensitivity="numbers", smoothness="numbers", strong_convexity="numbers",
                     diameter="numbers?", batch_size="numbers?")
def last_iterate_gdp_mu(step_size, noise_std, steps, *, dataset_size, gradient_sensitivity, smoothness,
                        strong_convexity=0.0, diameter=None, batching="full", batch_size=None) -> LastIterateGDP:
    """The GDP mu of each Gaussian-DP last-iterate bound (same arguments as
    :func:`last_iterate_curve`), as a :class:`LastIterateGDP`: ``.shifted_interpolation`` (inf
    where eta M > 2) and ``.composition`` (None for Poisson batches: not Gaussian DP)."""
    cfg = _validate_config(step_size, noise_std, steps, dataset_size, gradient_sensitivity, smoothness, strong_convexity,
                           diameter, batching, batch_size, "auto")
    comp_mu, _ = _composition(cfg)
    return LastIterateGDP(_shifted_interpolation(cfg), comp_mu)


# ------------------------------------------------------------------------------------------
# from a dpjax run
def sampler_last_iterate_curve(model, pair, sampler, num_steps: int, *, method: str = "auto") -> PrivacyCurve:
    """The tightest valid bound for releasing the chain's iterate after ``num_steps`` steps of
    ``sampler`` on ``model`` and the neighbouring ``pair`` (see :func:`last_iterate_curve`).

    The model certifies its constants for the pair (:func:`dpjax.models.constants.certify`);
    the sampler maps to eta = its drift coefficient, sigma = noise_std / drift coefficient
    (Welling–Teh: eta = step/2, sigma = 2 sqrt(T/step); Euler: eta = gamma, sigma =
    sqrt(2 T / gamma)), F_B = the batch mean of f_i = -log prior - n w_lik log p(x_i | theta)
    (clipped per record when the sampler clips). Raises :class:`ConstantsUnavailable` naming the
    constant or assumption that fails (e.g. a model with no certified constants, a step-size
    schedule, a batching the bounds do not cover) unless ``method="composition"`` can still
    account for the run.
    """
    from . import sampler_constants

    num_steps = _validate.positive_int("num_steps", num_steps)
    if num_steps > 2**62:
        raise ValueError(f"num_steps={num_steps} violates num_steps <= 2^62 (an int64 step count)")
    _validate.one_of("method", method, METHODS)
    run = sampler_constants.describe_run(model, pair, sampler, num_steps, need_constants=(method in (
        "shifted-interpolation", "subsampled-interpolation", "ye-shokri", "chourasia-ye-shokri")))
    cfg = _validate_config(run.step_size, run.noise_std, num_steps, run.dataset_size, run.gradient_sensitivity,
                           run.smoothness, run.strong_convexity, None, run.batching, run.batch_size, method, internal=True)
    _check_method(cfg, method)
    if method == "auto" and not run.constants_certified:
        method = "composition"
    if cfg.batching == "poisson" and run.adjacency == "replace-one" and method not in ("shifted-interpolation",
                                                                                      "chourasia-ye-shokri"):
        return _replace_one_poisson(cfg, run, method)
    return _build(cfg, method, extra_assumptions=run.assumptions)


def _replace_one_poisson(cfg: _Config, run, method: str) -> PrivacyCurve:
    """Poisson batches with a replace-one pair: the path is accounted by the PLD accountant's
    replace-one pair (each record's contribution bounded by the gradient bound G, noise
    multiplier sigma b / (2 G)); ``auto`` adds the shifted-interpolation GDP bound beside it."""
    if not math.isfinite(run.gradient_bound) and method == "auto":
        prov = Provenance(f"{_SI_RESULT}; {_constants_text(cfg)}; composition unavailable (unbounded record gradients, "
                          "replace-one with Poisson batches)", "bound", _assumptions(cfg, "shifted-interpolation") + tuple(run.assumptions),
                          RELEASED)
        return _curve(_shifted_interpolation(cfg), None, prov)
    if not math.isfinite(run.gradient_bound):
        raise ConstantsUnavailable("a replace-one pair with Poisson batches needs each record's gradient bounded (the "
                                   "subsampled composition accountant's C); this model's unclipped gradients are not: clip them")
    # the replace-one pair of the PLD accountant: each record's contribution bounded by G, so the
    # subsampled step's sensitivity is 2 G (noise multiplier sigma b / (2 G)); the shifted part
    # keeps the certified gradient difference Delta
    cfg = dataclasses.replace(cfg, adjacency="replace-one", pld_sensitivity=np.asarray(2.0 * run.gradient_bound))
    assumptions = tuple(run.assumptions) + (f"replace-one: records' gradients bounded by G = {run.gradient_bound:.6g} "
                                            "(PLD replace-one pair)",)
    return _build(cfg, method, extra_assumptions=assumptions)


__all__ = ["ConstantsUnavailable", "METHODS", "ADJACENCIES", "BATCHINGS", "PROFILE_EPSILONS", "REFERENCE_DELTA", "LastIterateGDP",
           "last_iterate_curve", "last_iterate_gdp_mu",
           "sampler_last_iterate_curve", "gdp_epsilon"]

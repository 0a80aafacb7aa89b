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
  Poisson-subsampled Gaussian mechanism (add/remove adjacency) composed over the steps by the
  PLD accountant (:func:`~dpjax.accountants.pld_curve`) and by RDP
  (:func:`~dpjax.accountants.noisy_sgd_curve`), the tighter at each delta
  (``poisson_composition="rdp"``: RDP alone, faster for large sweeps). The last iterate leaks
  no more, by post-processing.
* ``"chourasia-ye-shokri"`` — the Rényi bound of Chourasia, Ye & Shokri (NeurIPS 2021) for
  full-batch noisy GD on m-strongly convex (m > 0), M-smooth losses with eta M < 1
  (:mod:`dpjax.accountants.samplers.chourasia_ye_shokri`; other batchings refused by name). Its
  statement was taken from a public re-implementation (the paper's text could not be read
  here) and dpjax proves the implemented value is never below the shifted-interpolation bound,
  so it is valid whatever the paper's constants; it never wins.
* ``"auto"`` — per configuration the tightest of all of these (never worse than composition).

What is not here and why (see ``docs/guide/last_iterate.md``): the minibatch Rényi bounds of
Ye & Shokri (NeurIPS 2022, arXiv 2203.05363: "shuffle and partition" and "sample without
replacement" batches) and the sampled-minibatch bound of Altschuler & Talwar (NeurIPS 2022,
arXiv 2205.13710: convex, Lipschitz, smooth losses on a domain of diameter D, flat after about
D n / (L eta) steps). Their theorem statements with explicit constants could not be read from
the stored copies available to this project (the stored ar5iv / proceedings / mirror pages give
only their first page: title, abstract, introduction; no public implementation of either bound
was found), and neither has a dominance argument like the one that makes the Chourasia-Ye-Shokri
value safe, so they are not reconstructed from memory. For full batches on strongly convex
quadratics the shifted-interpolation bound is already exact; for Poisson batches composition
with amplification by subsampling stands beside it.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

import numpy as np
from scipy import special

from ... import _validate
from .. import fdp
from . import chourasia_ye_shokri as cys
from . import shifted_interpolation as si
from ..composition.rdp import DEFAULT_ORDERS, noisy_sgd_curve
from ..curve import PrivacyCurve, Provenance
from ...models.constants import ConstantsUnavailable  # the models' certificates raise it too

METHODS = ("auto", "shifted-interpolation", "chourasia-ye-shokri", "composition")
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


def _validate_config(step_size, noise_std, steps, dataset_size, gradient_sensitivity, smoothness, strong_convexity,
                     diameter, batching, batch_size, method, internal=False) -> _Config:
    _validate.one_of("method", method, METHODS)
    _validate.one_of("batching", batching, si._INTERNAL_BATCHINGS if internal else BATCHINGS)
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
    return _Config(eta, sigma, t, n, delta_g, big, small, diam, batching, b, shape)


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
    rho = _one_use_mu(cfg)
    with np.errstate(divide="ignore"):
        multiplier = np.where(rho > 0, 1.0 / np.where(rho > 0, rho, 1.0), np.inf)
    return multiplier, np.broadcast_to(cfg.batch_size / cfg.n, cfg.shape)


def _composition(cfg: _Config):
    """(gdp mu or None, rdp (shape + orders,)) of the whole path."""
    rho = _one_use_mu(cfg)
    steps = np.broadcast_to(cfg.steps, cfg.shape)
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
        curve = pld_curve(multiplier, q, np.broadcast_to(cfg.steps, cfg.shape), adjacency="add-remove", sampling="poisson")
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
    log delta_mu(eps), rounded up (the returned eps certifies delta)."""
    mu = np.asarray(mu, dtype=np.float64)
    d = float(delta)
    if not 0 < d < 1:
        raise ValueError(f"delta={delta!r} violates 0 < delta < 1")
    log_d = math.log(d)
    finite = np.isfinite(mu)
    m = np.where(finite, mu, 1.0)
    lo = np.zeros_like(m)
    hi = m * m / 2 + m * math.sqrt(2 * math.log(1 / d)) + 1e-12  # zCDP: delta_mu(hi) <= delta
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        ok = fdp.gdp_log_delta(m, mid) <= log_d
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid)
    return np.where(finite, np.where(mu == 0, 0.0, hi), np.inf)


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


def _curve(mu: Optional[np.ndarray], rdp: Optional[np.ndarray], provenance: Provenance, mixture=None) -> PrivacyCurve:
    """A curve from a GDP mu (its exact profile on PROFILE_EPSILONS and its RDP a mu^2 / 2) and/or RDP values."""
    rdp_parts = []
    deltas = None
    if mixture is not None:
        deltas, mix_rdp = _mixture_parts(*mixture)
        rdp_parts.append(mix_rdp)
    if mu is not None:
        finite = np.isfinite(mu)
        m = np.where(finite, mu, 0.0)
        mu_deltas = np.where(finite[..., None], gdp_profile(m, PROFILE_EPSILONS), 1.0)
        deltas = mu_deltas if deltas is None else np.minimum(deltas, mu_deltas)
        rdp_parts.append(np.where(finite[..., None], DEFAULT_ORDERS * (m * m)[..., None] / 2.0, np.inf))
    if rdp is not None:
        rdp_parts.append(rdp)
    rdp_all = np.minimum.reduce(np.broadcast_arrays(*rdp_parts)) if rdp_parts else None
    curve = PrivacyCurve(orders=DEFAULT_ORDERS, rdp=np.array(rdp_all, dtype=np.float64), provenance=provenance)
    if deltas is not None:
        curve = dataclasses.replace(curve, epsilons=PROFILE_EPSILONS, deltas=np.clip(deltas, 0.0, 1.0))
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
                   + ("add/remove adjacency (D' lacks the record)" if method != "shifted-interpolation" else
                      "no amplification by subsampling claimed by the last-iterate bound"),
    }
    out.append(schemes[cfg.batching])
    return tuple(out)


@_validate.arguments(step_size="numbers", noise_std="numbers", steps="ints", dataset_size="ints",
                     gradient_sensitivity="numbers", smoothness="numbers", strong_convexity="numbers",
                     diameter="numbers?", batch_size="numbers?")
def last_iterate_curve(step_size, noise_std, steps, *, dataset_size, gradient_sensitivity, smoothness,
                       strong_convexity=0.0, diameter=None, batching="full", batch_size=None, method="auto",
                       poisson_composition="pld") -> PrivacyCurve:
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
        method: "auto" (tightest, including composition), "shifted-interpolation",
            "chourasia-ye-shokri" (full batches, m > 0, eta M < 1; RDP only), "composition".
        poisson_composition: how "composition" (and "auto") account for Poisson batches: "pld"
            (default: the PLD accountant beside the RDP one, the tighter per delta; a few ms
            per configuration once compiled) or "rdp" (RDP alone: for sweeps of thousands of
            configurations, where speed matters more than the last ~10% of eps).

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
                           diameter, batching, batch_size, method)
    if method == "shifted-interpolation":
        _check_contraction(cfg)
    elif method == "chourasia-ye-shokri":
        _check_chourasia_ye_shokri(cfg)
    return _build(cfg, method, poisson_composition=poisson_composition)


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


def _build(cfg: _Config, method: str, extra_assumptions=(), poisson_composition: str = "pld") -> PrivacyCurve:
    constants = _constants_text(cfg)
    if method == "chourasia-ye-shokri":
        prov = Provenance(f"{cys.RESULT}; {constants}", "bound", _assumptions(cfg, method) + tuple(extra_assumptions), RELEASED)
        return _curve(None, _chourasia_ye_shokri(cfg), prov)
    mixture = _shuffled_mixture(cfg)
    if method == "shifted-interpolation":
        mu = _shifted_interpolation(cfg)
        prov = Provenance(f"{_SI_RESULT}{_MIXTURE_NOTE if mixture else ''}; {constants}", "bound",
                          _assumptions(cfg, method) + tuple(extra_assumptions), RELEASED)
        return _curve(mu, None, prov, mixture)
    comp_mu, comp_rdp = _composition(cfg)
    pld, pld_note = (None, "")
    if cfg.batching == "poisson" and poisson_composition == "pld":
        pld, pld_note = _poisson_pld(cfg)
    if method == "composition":
        prov = Provenance(f"{_composition_result(cfg, pld is not None)}{pld_note}; {constants}", "bound",
                          _assumptions(cfg, method) + tuple(extra_assumptions), "path (every iterate; the last iterate by post-processing)")
        return _with_pld(_curve(comp_mu, comp_rdp, prov), pld)
    si_mu = _shifted_interpolation(cfg)  # inf where the step does not contract: composition alone there
    mu = si_mu if comp_mu is None else np.minimum(si_mu, comp_mu)
    contracting = np.isfinite(si_mu)
    note = "" if np.all(contracting) else (
        f"; shifted interpolation unavailable for {int(np.sum(~contracting))} configuration(s) with eta M > 2 (composition there)")
    rdp = comp_rdp
    cys_part = ""
    if np.any(cys.valid(cfg.eta, cfg.smoothness, cfg.strong_convexity, cfg.batching)):
        # never below shifted interpolation (proof in chourasia_ye_shokri): kept so auto is the minimum over every method
        rdp = np.minimum(comp_rdp, _chourasia_ye_shokri(cfg))
        cys_part = f" and [{cys.SHORT}, where m > 0 and eta M < 1]"
    prov = Provenance(
        f"tightest per configuration of [{_SI_RESULT}{_MIXTURE_NOTE if mixture else ''}] and [{_composition_result(cfg, pld is not None)}]"
        f"{cys_part}{note}{pld_note}; {constants}", "bound", _assumptions(cfg, "auto") + tuple(extra_assumptions), RELEASED)
    return _with_pld(_curve(mu, rdp, prov, mixture), pld)


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


@_validate.arguments(step_size="numbers", noise_std="numbers", steps="ints", dataset_size="ints",
                     gradient_sensitivity="numbers", smoothness="numbers", strong_convexity="numbers",
                     diameter="numbers?", batch_size="numbers?")
def last_iterate_gdp_mu(step_size, noise_std, steps, *, dataset_size, gradient_sensitivity, smoothness,
                        strong_convexity=0.0, diameter=None, batching="full", batch_size=None) -> dict:
    """The GDP mu of each Gaussian-DP bound, by method (same arguments as
    :func:`last_iterate_curve`): ``{"shifted-interpolation": mu (inf where eta M > 2),
    "composition": mu or None (Poisson composition is not Gaussian DP)}``."""
    cfg = _validate_config(step_size, noise_std, steps, dataset_size, gradient_sensitivity, smoothness, strong_convexity,
                           diameter, batching, batch_size, "auto")
    comp_mu, _ = _composition(cfg)
    return {"shifted-interpolation": _shifted_interpolation(cfg), "composition": comp_mu}


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
    run = sampler_constants.describe_run(model, pair, sampler, num_steps, need_constants=(method in ("shifted-interpolation",
                                                                                                         "chourasia-ye-shokri")))
    cfg = _validate_config(run.step_size, run.noise_std, num_steps, run.dataset_size, run.gradient_sensitivity,
                           run.smoothness, run.strong_convexity, None, run.batching, run.batch_size, method, internal=True)
    if method == "shifted-interpolation":
        _check_contraction(cfg)
    elif method == "chourasia-ye-shokri":
        _check_chourasia_ye_shokri(cfg)
    elif method == "auto" and not run.constants_certified:
        method = "composition"
    if cfg.batching == "poisson" and run.adjacency == "replace-one" and method not in ("shifted-interpolation",
                                                                                      "chourasia-ye-shokri"):
        return _replace_one_poisson(cfg, run, method)
    return _build(cfg, method, extra_assumptions=run.assumptions)


def _replace_one_poisson(cfg: _Config, run, method: str) -> PrivacyCurve:
    """Poisson batches with a replace-one pair: the path is accounted by the PLD accountant's
    replace-one pair (each record's contribution bounded by the gradient bound G, noise
    multiplier sigma b / (2 G)); ``auto`` adds the shifted-interpolation GDP bound beside it."""
    from ..composition.pld_accountant import pld_curve

    if not math.isfinite(run.gradient_bound) and method == "auto":
        prov = Provenance(f"{_SI_RESULT}; {_constants_text(cfg)}; composition unavailable (unbounded record gradients, "
                          "replace-one with Poisson batches)", "bound", _assumptions(cfg, "shifted-interpolation") + tuple(run.assumptions),
                          RELEASED)
        return _curve(_shifted_interpolation(cfg), None, prov)
    if not math.isfinite(run.gradient_bound):
        raise ConstantsUnavailable("a replace-one pair with Poisson batches needs each record's gradient bounded (the "
                                   "subsampled composition accountant's C); this model's unclipped gradients are not: clip them")
    multiplier = float(cfg.sigma) * float(cfg.batch_size) / (2.0 * run.gradient_bound)
    comp = pld_curve(multiplier, float(cfg.batch_size) / float(cfg.n), int(cfg.steps), adjacency="replace-one")
    constants = _constants_text(cfg)
    assumptions = _assumptions(cfg, method) + tuple(run.assumptions) + ("replace-one: records' gradients bounded by "
                                                                       f"G = {run.gradient_bound:.6g} (PLD replace-one pair)",)
    if method == "composition":
        prov = Provenance(f"[{comp.provenance.result}]; {constants}", "bound", assumptions,
                          "path (every iterate; the last iterate by post-processing)")
        return dataclasses.replace(comp, provenance=prov)
    mu = _shifted_interpolation(cfg)
    prov = Provenance(f"tightest of [{_SI_RESULT}] and [{comp.provenance.result}]; {constants}", "bound", assumptions, RELEASED)
    si_curve = _curve(mu, None, prov)
    return dataclasses.replace(si_curve, pld=comp.pld)


__all__ = ["ConstantsUnavailable", "METHODS", "BATCHINGS", "PROFILE_EPSILONS", "last_iterate_curve", "last_iterate_gdp_mu",
           "sampler_last_iterate_curve", "gdp_epsilon"]

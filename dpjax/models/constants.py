"""Constants a model certifies for the last-iterate accountants: curvature and gradient gaps.

The accountants of :mod:`dpjax.accountants.samplers.last_iterate` need, for the per-record loss
l_i(theta) = -w log p(x_i | theta) (w: the model's ``likelihood_weight``; per-record clipped
to norm C when the sampler clips):

* ``record_smoothness`` M_r and ``record_strong_convexity`` m_r: m_r I <= Hessian of l_i <= M_r I
  for every record of D and D' and every theta;
* ``gradient_difference``: sup_theta ||grad l_i - grad l'_i|| for the pair's differing record
  (l' = 0 for add/remove: D' lacks the record);
* ``gradient_bound``: sup_theta of ||grad l_i|| and ||grad l'_i|| (what a subsampled
  composition accountant needs);
* ``prior_precision``: the Hessian of -log prior (an isotropic Gaussian prior).

A model certifies them through its ``curvature`` field, a :class:`CurvatureCertificate` set by
its factory (:func:`~dpjax.models.gaussian_mean`, :func:`~dpjax.models.bayesian_linear_regression`,
:func:`~dpjax.models.logistic_regression`). The per-family derivations:

* Gaussian mean, l = w ||theta - x||^2 / 2: Hessian w I; gradient w (theta - x). Clipped, it is
  the gradient of w times a Huber loss (convex, w-smooth, curvature 0 in its linear parts).
  Replace-one gap w ||x - x'||; add/remove gap w ||theta - x||, unbounded unless clipped.
* Linear regression, l = w beta (y - <theta, x>)^2 / 2: Hessian w beta x x^T (so M_r =
  w beta max ||x||^2, m_r = w beta min ||x||^2 in d = 1, 0 for d > 1); gradient
  w beta (<theta, x> - y) x. Two records with x' != +-x have gradients whose difference grows
  with theta: no finite gap unless clipped.
* Logistic regression, l = w log(1 + e^{-(2y-1) <theta, x>}): Hessian w s'(u) x x^T <=
  (w / 4) ||x||^2 I, curvature 0 at infinity; gradient w (sigmoid(u) - y) x, of norm < w ||x||.
* Clipping a GLM gradient s(u) x to norm C clips the scalar s to +-C/||x||, still a
  non-decreasing function of u = <theta, x>: the clipped gradient is the gradient of a convex
  loss with the same smoothness bound and no curvature guaranteed (m_r = 0). Clipping is
  1-Lipschitz, so a gap shrinks to min(gap, 2C) (replace-one) or min(gap, C) (add/remove).
"""
from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple, Optional

import numpy as np

FAMILIES = ("gaussian-mean", "linear-regression", "logistic-regression")


@dataclasses.dataclass(frozen=True)
class CurvatureCertificate:
    """What a built-in model declares about itself: its ``family``, its isotropic Gaussian prior's
    ``prior_precision`` (0 = flat) and, for linear regression, the likelihood's ``noise_precision``."""

    family: str
    prior_precision: float
    noise_precision: float = 1.0

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ValueError(f"family={self.family!r} is not one of {FAMILIES}")


class RecordConstants(NamedTuple):
    prior_precision: float
    record_smoothness: float
    record_strong_convexity: float
    gradient_difference: float
    gradient_bound: float
    derivation: tuple


class ConstantsUnavailable(ValueError):
    """A last-iterate bound needs a constant (smoothness, strong convexity, a bounded
    per-record gradient difference, a contracting step) that the model, the pair or the
    sampler cannot certify; the message names it and says why. Defined here, with the
    certificates, so that the models never import an accountant; the accountants re-export it
    (``dpjax.accountants.ConstantsUnavailable``)."""


def _unavailable(message: str):
    return ConstantsUnavailable(message)


def _records(dataset, index=None):
    fields = {k: np.asarray(v, dtype=np.float64) for k, v in dataset.fields.items()}
    mask = np.asarray(dataset.mask, dtype=np.float64)
    if index is not None:
        return {k: v[index] for k, v in fields.items()}
    return {k: v[mask > 0] for k, v in fields.items()}


def certify(model, pair, clip_norm: Optional[float] = None) -> RecordConstants:
    """The constants of ``model``'s per-record loss on ``pair`` (see the module docstring), with
    per-record clipping at ``clip_norm`` if given. Raises
    :class:`~dpjax.accountants.samplers.last_iterate.ConstantsUnavailable` naming the constant that cannot be
    certified and why."""
    cert = getattr(model, "curvature", None)
    name = getattr(model, "name", type(model).__name__)
    if not isinstance(cert, CurvatureCertificate):
        raise _unavailable(
            f"model {name!r} certifies no smoothness, strong convexity or gradient gap (it has no CurvatureCertificate; "
            "only dpjax.models.gaussian_mean, bayesian_linear_regression and logistic_regression do): the last-iterate "
            "bounds need them, so only path composition applies (and, without clipping, not even that)")
    w = float(model.likelihood_weight)
    adjacency = pair.adjacency
    x1 = _records(pair.dataset, pair.index)
    x2 = None if adjacency == "add-remove" else _records(pair.neighbour, pair.index)
    present = [_records(pair.dataset)] + ([] if x2 is None else [_records(pair.neighbour)])
    xs = np.concatenate([np.atleast_2d(p["x"].reshape(p["x"].shape[0], -1)) for p in present])
    norms2 = np.sum(xs * xs, axis=-1)
    notes = [f"{cert.family}: constants of l = -{w:g} log p(x | theta) over the records of D and D'"]
    if cert.family == "gaussian-mean":
        smooth, strong = w, (0.0 if clip_norm is not None else w)
        gap_free = (w * float(np.linalg.norm(x1["x"] - x2["x"]))) if x2 is not None else math.inf
        bound = math.inf
        why = "the removed record's gradient w (theta - x) grows without bound in theta"
    elif cert.family == "linear-regression":
        wb = w * cert.noise_precision
        smooth = wb * float(np.max(norms2))
        dim = xs.shape[-1]
        strong = 0.0 if (clip_norm is not None or dim > 1) else wb * float(np.min(norms2))
        bound = math.inf
        a, b = np.ravel(x1["x"]), float(x1["y"])
        if x2 is None:
            gap_free = 0.0 if not np.any(a) else math.inf
            why = "the removed record's gradient w beta (<theta, x> - y) x grows without bound in theta"
        else:
            a2, b2 = np.ravel(x2["x"]), float(x2["y"])
            if np.array_equal(a, a2):
                gap_free = wb * abs(b - b2) * float(np.linalg.norm(a))
            elif np.array_equal(a, -a2):
                gap_free = wb * abs(b + b2) * float(np.linalg.norm(a))
            else:
                gap_free = math.inf
            why = ("the two records have different x, so their gradients w beta (<theta, x> - y) x differ by a term that "
                   "grows with theta (different Hessians on D and D')")
    else:  # logistic regression
        smooth = w * float(np.max(norms2)) / 4.0
        strong = 0.0
        n1 = float(np.linalg.norm(x1["x"]))
        if x2 is None:
            gap_free = w * n1
            bound = w * n1
        else:
            n2 = float(np.linalg.norm(x2["x"]))
            same_x = np.array_equal(np.ravel(x1["x"]), np.ravel(x2["x"]))
            gap_free = w * abs(float(x1["y"]) - float(x2["y"])) * n1 if same_x else w * (n1 + n2)
            bound = w * max(n1, n2)
        why = ""
        notes.append("logistic: |sigmoid(u) - y| < 1, Hessian <= (w/4) ||x||^2, no curvature at infinity")
    if clip_norm is not None:
        c = float(clip_norm)
        gap = min(gap_free, (2.0 if x2 is not None else 1.0) * c)
        bound = min(bound, c)
        notes.append(f"per-record gradients clipped to norm {c:g}: a GLM/Huber gradient, convex, same smoothness, m_r = 0")
    else:
        gap = gap_free
    if not math.isfinite(gap):
        raise _unavailable(f"gradient_sensitivity of model {name!r} on this {adjacency} pair is infinite: {why}; "
                           "clip the per-record gradients (clip_norm) to bound it")
    return RecordConstants(float(cert.prior_precision), float(smooth), float(strong), float(gap), float(bound), tuple(notes))


__all__ = ["CurvatureCertificate", "RecordConstants", "FAMILIES", "certify"]

"""Neighbours that leak most: build the differing record ("canary") of an audit, and choose among
candidates by short pilot runs.

An audit certifies only what its neighbouring pair (D, D') leaks; a typical record leaks far
less than the worst case the accountants bound, so the pair decides how informative the audit
is. Three constructions and a search:

* :func:`out_of_distribution_canary` — features far out along the direction in which the data
  vary least, labelled against the fit. The data hold theta along that direction almost only
  through the prior, so the canary's pushes accumulate instead of being absorbed.
* :func:`mislabelled_canary` — an existing record with its label flipped (the classic
  membership-inference canary; replace-one).
* :func:`gradient_canary` — for GLMs and clipped samplers: a record whose *clipped* per-record
  gradient is exactly C along one fixed direction at every position the chains visit (its
  unclipped gradient is at least C there and, a GLM's being l'(y, x.theta) x, always parallel to
  x). Each step it is in the batch then adds the same vector to the drift: the differing record
  acts as the Gaussian mechanism's worst-case sensitivity vector at every step, as in the
  hidden-state auditing papers' crafted gradient canaries (Annamalai 2024; Cebere et al. 2025).
  The statistic for the last iterate is the projection on that direction
  (:attr:`Canary.statistic`); :meth:`Canary.verify` checks the norm on recorded iterates.
* :func:`search_canaries` — short coupled pilot runs per candidate, ranked by the eps they
  certify (:func:`~dpjax.estimators.epsilon_lower_bound`): the neighbour is chosen by what the
  audit can show, not by a heuristic.

Which statistic for which release (also in the docs' auditing guide): the last iterate of a
gradient canary: the projection on its direction; of any other canary: the default fitted
linear score ("auto"; "gaussian_llr" when the chains' spread differs between D and D'); the
whole path (with its batches): the exact path privacy loss the coupled runner records.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Sequence

import numpy as np

from . import _validate
from .data import Dataset, NeighbouringPair, add_remove, make_dataset, replace_one
from .models.base import Model

OUT_OF_DISTRIBUTION_WORST_CASE = (
    "Worst case for the last iterate of a model whose data barely constrain some direction (a GLM with a flat or "
    "nearly flat axis): there only the prior pulls theta back, so each step's push of the canary survives to the "
    "last iterate. Not the worst case when the data constrain every direction strongly (the push is forgotten "
    "within a few steps: a canary along the best-identified direction, or a gradient canary, may leak more), when "
    "clipping caps every record at C anyway (then a record whose clipped gradient stays at C everywhere is at least "
    "as strong: gradient_canary), or for the path release (every step's gradient is released; the direction "
    "matters less than how often the record is used)."
)
MISLABELLED_WORST_CASE = (
    "A realistic canary (a real record, one label wrong): the worst case among in-distribution records for "
    "membership inference, but rarely for a sampler's last iterate: the data's own pull absorbs most of its "
    "effect. Use it to audit what a typical record leaks, not to certify the mechanism's worst case."
)
GRADIENT_WORST_CASE = (
    "With per-record clipping at C and the record in every batch it is sampled in, a clipped gradient of norm C along "
    "one fixed direction makes each such step exactly the Gaussian mechanism at its sensitivity, so the path's "
    "composition bound is tight for it. For the last iterate it is the worst case among records when the dynamics "
    "along its direction do not depend on the data (the direction the data leave free: only the prior contracts "
    "the difference); along a direction the data constrain, contraction shrinks what the last iterate keeps, and a "
    "canary along a freer direction may leak more (compare them with search_canaries). It is a gradient canary only "
    "where its unclipped gradient stays >= C: check with Canary.verify on the audit's recorded iterates."
)


@dataclasses.dataclass(frozen=True)
class Canary:
    """A differing record and what is known about it.

    record: the record's fields (numpy), e.g. {"x": (d,), "y": ()}.
    kind: "out-of-distribution", "mislabelled", "gradient" or "candidate".
    direction: for a gradient canary, the unit vector in parameter space its clipped gradient
        points along at every visited position (the release's statistic projects on it); else None.
    adjacency: the adjacency it is built for ("add-remove": D = data + canary, D' = data;
        "replace-one": the record at ``index`` replaced by the canary).
    index: the replaced record (replace-one), else None.
    counterpart: replace-one only: the record D holds at ``index`` (None: the dataset's own). A
        crafted replace-one canary has one (a record whose clipped gradient is the opposite of
        the canary's), so the pair differs by twice an add/remove canary's sensitivity, as the
        replace-one accountants assume.
    description, worst_case: what it is, and when it is (and is not) the worst case, in words.
    details: numbers behind the construction (scales, norms, fitted logits).
    """

    record: dict
    kind: str
    adjacency: str = "add-remove"
    index: Optional[int] = None
    direction: Optional[np.ndarray] = None
    description: str = ""
    worst_case: str = ""
    details: dict = dataclasses.field(default_factory=dict)
    counterpart: Optional[dict] = None

    def pair(self, dataset) -> NeighbouringPair:
        """The neighbouring pair of ``dataset`` and this canary: add-remove puts the canary in
        slot 0 of D (D' = the data); replace-one replaces record ``index`` of D' by it (and of D
        by ``counterpart`` when there is one).

        ``dataset`` may be a :class:`~dpjax.NeighbouringPair`: the canary must then have the
        pair's adjacency (a ``ValueError`` says so otherwise: an add/remove canary on a
        replace-one pair halves the sensitivity the replace-one accountants bound), and the
        data are the pair's D (replace-one) or its D' (add-remove: the data without the record)."""
        if isinstance(dataset, NeighbouringPair):
            given = dataset
            if given.adjacency != self.adjacency:
                raise ValueError(
                    f"the canary is {self.adjacency} but the pair is {given.adjacency}: build the canary from the pair (e.g. "
                    f"out_of_distribution_canary(pair) or gradient_canary(model, pair, ...)) so that it keeps the pair's adjacency"
                )
            dataset = given.dataset if self.adjacency == "replace-one" else given.neighbour
        if not isinstance(dataset, Dataset):
            raise TypeError(f"dataset={type(dataset).__name__} must be a dpjax.Dataset or a dpjax.NeighbouringPair")
        missing = set(dataset.fields) ^ set(self.record)
        if missing:
            raise ValueError(f"the canary has fields {sorted(self.record)}; the dataset has {sorted(dataset.fields)}: they must match")
        if self.adjacency == "replace-one":
            if self.counterpart is not None:
                dataset = replace_one(dataset, self.index, self.counterpart).neighbour
            return replace_one(dataset, self.index, self.record)
        fields = {k: np.concatenate([np.asarray(self.record[k], dtype=np.asarray(v).dtype)[None], np.asarray(v)]) for k, v in dataset.fields.items()}
        mask = np.concatenate([[1.0], np.asarray(dataset.mask, dtype=np.float64)])
        return add_remove(make_dataset(mask=mask, **fields), 0)

    @property
    def statistic(self):
        """The 1-D statistic for the last iterate: the projection on ``direction`` for a gradient
        canary (a fixed function of the output: any audit may use it), else "auto"."""
        if self.direction is None:
            return "auto"
        u = np.asarray(self.direction, dtype=np.float64)

        def projection(theta: np.ndarray) -> np.ndarray:
            return np.asarray(theta, dtype=np.float64).reshape(-1, u.size) @ u

        projection.__name__ = "projection on the canary's direction"
        return projection

    def verify(self, model: Model, positions, clip_norm: float, tolerance: float = 1e-9) -> dict:
        """Check, at the given parameter positions (e.g. a recorded step's chains on D,
        ``result.positions[r]``), that the record's clipped gradient is C along ``direction``.

        Returns min_norm (the smallest unclipped gradient norm over the positions), clipped_share
        (the share of positions where it is >= C, so that the clipped gradient has norm C),
        largest_angle (radians, between the gradient and ``direction``) and holds (True when
        every position passes, within ``tolerance``). A replace-one canary with a counterpart
        also reports counterpart_min_norm, counterpart_clipped_share and
        counterpart_largest_angle (against -``direction``), and holds only when both pass."""
        if self.direction is None:
            raise ValueError(f"a {self.kind} canary has no fixed direction to verify (only gradient canaries do)")
        c = _validate.positive("clip_norm", clip_norm)
        grads = record_gradients(model, self.record, positions)
        norms = np.linalg.norm(grads, axis=1)
        cos = (grads @ self.direction) / np.where(norms > 0, norms, 1.0)
        angle = float(np.max(np.arccos(np.clip(cos, -1.0, 1.0)))) if cos.size else 0.0
        share = float(np.mean(norms >= c * (1 - tolerance)))
        out = dict(min_norm=float(norms.min()), clipped_share=share, largest_angle=angle,
                   holds=bool(share == 1.0 and angle <= 1e-6))
        if self.counterpart is not None:
            # replace-one: D's record must be clipped to C along the opposite direction, or the
            # pair differs by less than the 2C it was built for
            back = record_gradients(model, self.counterpart, positions)
            back_norms = np.linalg.norm(back, axis=1)
            back_cos = -(back @ self.direction) / np.where(back_norms > 0, back_norms, 1.0)
            back_angle = float(np.max(np.arccos(np.clip(back_cos, -1.0, 1.0)))) if back_cos.size else 0.0
            back_share = float(np.mean(back_norms >= c * (1 - tolerance)))
            out.update(counterpart_min_norm=float(back_norms.min()), counterpart_clipped_share=back_share,
                       counterpart_largest_angle=back_angle)
            out["holds"] = bool(out["holds"] and back_share == 1.0 and back_angle <= 1e-6)
        return out


def record_gradients(model: Model, record: dict, positions) -> np.ndarray:
    """The gradient of -likelihood_weight log p(record | theta) at each position (k, d), float64."""
    import jax
    import jax.numpy as jnp

    if not isinstance(model, Model):
        raise TypeError(f"model={type(model).__name__} must be a dpjax.Model")
    theta = np.asarray(positions, dtype=np.float64).reshape(-1, model.dim)
    with jax.enable_x64(True):
        rec = {k: jnp.asarray(v) for k, v in record.items()}
        grads = jax.vmap(lambda t: model.record_grad(t, rec))(jnp.asarray(theta))
        return np.asarray(grads, dtype=np.float64)


def _adjacency(dataset, adjacency: Optional[str], index: Optional[int], *, kind: str) -> tuple:
    """(data, adjacency, index) of a helper's ``dataset`` argument: a Dataset (adjacency
    "add-remove" unless given) or a NeighbouringPair, whose adjacency and index the canary keeps
    (an ``adjacency``/``index`` that contradicts the pair is refused)."""
    if adjacency is not None:
        _validate.one_of("adjacency", adjacency, ("add-remove", "replace-one"))
    if isinstance(dataset, NeighbouringPair):
        if adjacency is not None and adjacency != dataset.adjacency:
            raise ValueError(f"adjacency={adjacency!r} but the pair is {dataset.adjacency}: a {kind} canary keeps the pair's adjacency")
        if index is not None and dataset.adjacency == "replace-one" and int(index) != dataset.index:
            raise ValueError(f"index={index} but the pair replaces record {dataset.index}: a {kind} canary keeps the pair's record")
        data = dataset.dataset if dataset.adjacency == "replace-one" else dataset.neighbour
        return data, dataset.adjacency, (dataset.index if dataset.adjacency == "replace-one" else None)
    adjacency = adjacency or "add-remove"
    if adjacency == "replace-one":
        if index is None:
            raise ValueError(f"adjacency='replace-one' needs index= (the record the {kind} canary replaces), or pass the pair itself")
        index = _validate.nonnegative_int("index", index)
        if isinstance(dataset, Dataset) and not (index < dataset.num_slots and float(np.asarray(dataset.mask)[index]) > 0):
            raise ValueError(f"index={index} violates index a present record of the dataset ({dataset.num_slots} slots)")
    elif index is not None:
        raise ValueError(f"index={index} is for adjacency='replace-one'; an add-remove canary is added, it replaces no record")
    return dataset, adjacency, index


def _xy(dataset) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(dataset, Dataset):
        if not {"x", "y"} <= set(dataset.fields):
            raise TypeError(f"the dataset has fields {sorted(dataset.fields)}; canary helpers need a GLM dataset with fields 'x' (n, d) and 'y' (n,)")
        present = np.asarray(dataset.mask) > 0
        x, y = np.asarray(dataset.fields["x"], np.float64)[present], np.asarray(dataset.fields["y"], np.float64)[present]
    else:
        raise TypeError(f"dataset={type(dataset).__name__} must be a dpjax.Dataset with fields 'x' and 'y'")
    if x.ndim != 2 or y.ndim != 1 or x.shape[0] != y.shape[0] or x.shape[0] < 2:
        raise ValueError(f"the dataset's x has shape {x.shape} and y {y.shape}; canary helpers need x (n, d), y (n,) with n >= 2")
    return x, y


def least_varying_direction(x: np.ndarray) -> tuple[np.ndarray, float, float]:
    """The unit principal axis of least variance of the rows of ``x``, its sd and the largest sd."""
    x = _validate.finite_array("x", _validate.real_array("x", x))
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 1:  # a 1-D x ended in numpy's LinAlgError
        raise ValueError(f"x (shape {x.shape}) violates x a 2-D array of feature rows (n, d) with n >= 2, d >= 1")
    centred = x - x.mean(axis=0)
    _, singular, vt = np.linalg.svd(centred, full_matrices=False)
    scale = np.sqrt(max(x.shape[0] - 1, 1))
    return vt[-1], float(singular[-1] / scale), float(singular[0] / scale)


def out_of_distribution_canary(
    dataset: Dataset,
    *,
    scale: float = 4.0,
    fit_weights=None,
    fit_intercept: float = 0.0,
    binary: Optional[bool] = None,
    adjacency: Optional[str] = None,
    index: Optional[int] = None,
) -> Canary:
    """A canary ``scale`` units out along the principal axis in which the data's features vary
    least, labelled against the fit there (add/remove by default; replace-one on a replace-one
    pair).

    Args:
        dataset: a GLM dataset (fields "x" (n, d), "y" (n,)); removed records are ignored. Or a
            :class:`~dpjax.NeighbouringPair`: the canary keeps its adjacency (and, replace-one,
            the record it replaces), so an audit of the canary bounds what the pair's
            accountants bound.
        scale: distance along the axis, in the features' units (> 0).
        fit_weights, fit_intercept: a (non-private) fit's weights (d,) and intercept: the axis is
            signed along the weights and the label is the one the fit gets wrong (binary labels:
            1 where the fitted logit is negative; real labels: opposite the fitted value, at the
            data's largest |y| beyond it). Without a fit: the positive sign, label 1 (binary) or
            the largest |y| (real).
        binary: labels in {0, 1}; default: when every label is 0 or 1.
        adjacency, index: "add-remove" (default for a Dataset) or "replace-one" with the record
            ``index`` it replaces. Replace-one: D holds the mirror record (the features negated,
            the same label) at ``index`` and D' the canary: their gradients are opposite where
            theta . x is near 0, so the two differ by both pushes, as replace-one's doubled
            sensitivity allows.

    When it is (and is not) the worst case: :data:`OUT_OF_DISTRIBUTION_WORST_CASE`.
    """
    dataset, adjacency, index = _adjacency(dataset, adjacency, index, kind="out-of-distribution")
    x, y = _xy(dataset)
    scale = _validate.positive("scale", scale)
    axis, axis_sd, largest_sd = least_varying_direction(x)
    weights = None if fit_weights is None else np.asarray(_validate.real_array("fit_weights", fit_weights)).reshape(-1)
    if weights is not None and weights.size != x.shape[1]:
        raise ValueError(f"fit_weights has {weights.size} entries; it needs one per feature ({x.shape[1]})")
    if weights is not None and axis @ weights < 0:
        axis = -axis
    features = scale * axis
    fitted = float(features @ weights + float(fit_intercept)) if weights is not None else 0.0
    binary = bool(np.all((y == 0) | (y == 1))) if binary is None else bool(binary)

    def against_the_fit(fitted_value: float) -> float:
        if binary:
            return float(fitted_value < 0.0) if weights is not None else 1.0
        reach = float(np.max(np.abs(y)))
        return -np.sign(fitted_value or 1.0) * (abs(fitted_value) + reach)

    label = against_the_fit(fitted)
    counterpart = None
    if adjacency == "replace-one":
        # the mirror: the features negated, the same label. A GLM record's gradient is
        # l'(y, x.theta) x; along the axis the data leave free theta . x stays near 0, where
        # l'(y, -x.theta) ~ l'(y, x.theta), so the mirror's gradient is the canary's negated and
        # the pair differs by both pushes. (The mirror labelled against the fit at -x would push
        # the same way as the canary, and the pair would differ by almost nothing.)
        counterpart = {"x": -features, "y": np.asarray(label)}
    return Canary(
        record={"x": features, "y": np.asarray(label)},
        kind="out-of-distribution",
        adjacency=adjacency,
        index=index,
        counterpart=counterpart,
        description=f"features {scale:g} units along the least-varying principal axis (sd {axis_sd:.3g} there, largest {largest_sd:.3g}), "
                    f"label {label:g}" + (" against the fit" if weights is not None else " (no fit given)")
                    + (f"; replaces record {index}, which D holds as the mirror record" if adjacency == "replace-one" else ""),
        worst_case=OUT_OF_DISTRIBUTION_WORST_CASE,
        details=dict(axis=axis, axis_sd=axis_sd, largest_sd=largest_sd, fitted_value=fitted, scale=scale),
    )


def mislabelled_canary(dataset, index: Optional[int] = None) -> Canary:
    """Record ``index`` (default: the one with the largest feature norm, the highest leverage)
    with its label flipped (binary: 1 - y; real: -y), as a replace-one neighbour.

    ``dataset`` may be a replace-one :class:`~dpjax.NeighbouringPair` (the canary flips the
    pair's record); an add-remove pair is refused: a flipped copy of a real record is a
    replace-one neighbour, and added it would be another canary (use
    :func:`out_of_distribution_canary` or :func:`gradient_canary` on that pair).
    When it is (and is not) the worst case: :data:`MISLABELLED_WORST_CASE`."""
    if isinstance(dataset, NeighbouringPair):
        if dataset.adjacency != "replace-one":
            raise ValueError(
                f"the pair is {dataset.adjacency}; a mislabelled canary is a replace-one neighbour (a real record with its label "
                "flipped): use out_of_distribution_canary(pair) or gradient_canary(model, pair, ...) for an add-remove pair"
            )
        dataset, _, index = _adjacency(dataset, None, index, kind="mislabelled")
    x, y = _xy(dataset)
    present = np.flatnonzero(np.asarray(dataset.mask) > 0)
    if index is None:
        pos = int(np.argmax(np.linalg.norm(x, axis=1)))
        index = int(present[pos])
    else:
        index = _validate.nonnegative_int("index", index)
        if index not in set(present.tolist()):
            raise ValueError(f"index={index} is not a present record of the dataset (n = {dataset.num_slots} slots)")
        pos = int(np.flatnonzero(present == index)[0])
    binary = bool(np.all((y == 0) | (y == 1)))
    label = 1.0 - y[pos] if binary else -y[pos]
    return Canary(
        record={"x": x[pos], "y": np.asarray(label)}, kind="mislabelled", adjacency="replace-one", index=index,
        description=f"record {index} with its label flipped ({y[pos]:g} -> {label:g})", worst_case=MISLABELLED_WORST_CASE,
        details=dict(feature_norm=float(np.linalg.norm(x[pos]))),
    )


def _label_candidates(y: np.ndarray) -> list:
    if np.all((y == 0) | (y == 1)):
        return [0.0, 1.0]
    reach = float(np.max(np.abs(y))) + float(np.ptp(y)) + 1.0
    return [-10.0 * reach, 10.0 * reach]


def gradient_canary(
    model: Model,
    dataset: Dataset,
    clip_norm: float,
    positions,
    *,
    direction="least-variance",
    scales: Optional[Sequence[float]] = None,
    labels: Optional[Sequence[float]] = None,
    margin: float = 1.5,
    adjacency: Optional[str] = None,
    index: Optional[int] = None,
) -> Canary:
    """A record whose clipped gradient is C along one fixed direction wherever the chains go.

    Args:
        model: a GLM (its per-record gradient is l'(y, x.theta) times a direction that does not
            depend on theta: logistic or linear regression, or a numpyro GLM); checked on the
            positions, and a model whose record gradient turns with theta is refused.
        dataset: its GLM dataset (fields "x", "y"), or a :class:`~dpjax.NeighbouringPair`
            whose adjacency (and replaced record) the canary keeps.
        clip_norm: the sampler's per-record clip norm C.
        positions: parameter vectors (k, d) the chains visit: a pilot run's recorded iterates
            of D and D' (``np.concatenate([r.positions[i], r.neighbour_positions[i]])``), or
            draws near the fit. The canary moves the chains of D a little; check the audit's
            own iterates with :meth:`Canary.verify`.
        direction: the features' direction: "least-variance" (the axis the data leave free;
            the strongest for the last iterate when its gradient can be kept saturated),
            "most-variance" (the best-identified axis), or a vector (d,) in feature space.
        scales: feature norms to try (default: 1 to 1e4 times the features' largest sd, 17
            values); labels: labels to try (default: 0 and 1 for binary data, +-10 times the
            labels' reach otherwise).
        margin: the smallest unclipped gradient norm over the positions must be at least
            ``margin`` * C (room for the canary's own push to move the chains).
        adjacency, index: "add-remove" (default for a Dataset) or "replace-one" with the record
            ``index`` it replaces. Replace-one: two records qualify together, one whose clipped
            gradient is C u (in D') and one whose clipped gradient is -C u (in D, at ``index``),
            so each step differs by 2C, the replace-one sensitivity the accountants assume (an
            add/remove canary on a replace-one pair differs by C: half).

    Returns a gradient :class:`Canary` whose ``direction`` is the unit clipped gradient in
    parameter space and whose ``statistic`` projects on it; of the (scale, label) pairs that
    qualify, the one whose smallest gradient norm is largest relative to C (replace-one: the
    opposite pair whose weaker record is strongest). Raises ``ValueError`` naming the best
    reached when none qualifies.
    When it is (and is not) the worst case: :data:`GRADIENT_WORST_CASE`.
    """
    dataset, adjacency, index = _adjacency(dataset, adjacency, index, kind="gradient")
    x, y = _xy(dataset)
    c = _validate.positive("clip_norm", clip_norm)
    margin = _validate.in_range("margin", margin, 1.0, 1e6)
    theta = np.asarray(_validate.real_array("positions", positions), dtype=np.float64)
    if theta.ndim != 2 or theta.shape[1] != model.dim or theta.shape[0] < 1:
        raise ValueError(f"positions has shape {theta.shape}; it must be (k, {model.dim}) parameter vectors with k >= 1")
    _validate.finite_array("positions", theta)
    if isinstance(direction, str):
        _validate.one_of("direction", direction, ("least-variance", "most-variance"))
        centred = x - x.mean(axis=0)
        _, _, vt = np.linalg.svd(centred, full_matrices=False)
        u = vt[-1] if direction == "least-variance" else vt[0]
    else:
        u = np.asarray(_validate.real_array("direction", direction), dtype=np.float64).reshape(-1)
        if u.size != x.shape[1] or not np.all(np.isfinite(u)) or np.linalg.norm(u) == 0:
            raise ValueError(f"direction has {u.size} entries; it must be a non-zero finite vector of {x.shape[1]} features")
        u = u / np.linalg.norm(u)
    sd = float(np.max(np.std(x, axis=0))) or 1.0
    scales = sd * np.geomspace(1.0, 1e4, 17) if scales is None else np.asarray(_validate.real_array("scales", scales)).reshape(-1)
    labels = _label_candidates(y) if labels is None else list(np.asarray(_validate.real_array("labels", labels)).reshape(-1))
    qualified = []  # (ratio, record, unit, scale, label, sign) of every record of fixed direction
    for sign in (1.0, -1.0):
        for s in scales:
            for label in labels:
                record = {"x": sign * float(s) * u, "y": np.asarray(float(label))}
                grads = record_gradients(model, record, theta)
                norms = np.linalg.norm(grads, axis=1)
                if not np.all(np.isfinite(norms)) or norms.min() <= 0:
                    continue
                unit = grads / norms[:, None]
                same = np.linalg.norm(unit - unit[0], axis=1)
                flipped = np.linalg.norm(unit + unit[0], axis=1)
                turn = float(np.max(np.minimum(same, flipped)))
                if turn > 1e-6:
                    raise ValueError(
                        f"model {model.name!r} is not a GLM for this record: its gradient turns by up to {turn:.3g} (unit-vector distance) "
                        "over the positions; a gradient canary needs a record gradient of fixed direction"
                    )
                # the loss derivative changes sign somewhere: the clipped gradient is not one vector
                ratio = 0.0 if np.any(flipped < same) else float(norms.min()) / c
                qualified.append((ratio, record, unit[0], float(s), float(label), sign))
    best = max(qualified, key=lambda q: q[0], default=None)
    counterpart = None
    if adjacency == "replace-one":
        # the strongest two records whose clipped gradients are opposite (C u and -C u)
        pairs = [(min(a[0], b[0]), a, b) for a in qualified for b in qualified
                 if a[0] > 0 and b[0] > 0 and float(a[2] @ b[2]) < -1.0 + 1e-9]
        if not pairs:
            reached = "no finite gradient" if best is None else f"one direction reaches {best[0]:.3g} C, the opposite none"
            raise ValueError(
                f"no replace-one gradient canary along this direction qualifies at clip_norm={c:g}: it needs two records whose "
                f"clipped gradients are opposite (C u and -C u) over the {theta.shape[0]} positions, and {reached}; try the other "
                "direction, larger scales, or other labels"
            )
        ratio, best, other = max(pairs, key=lambda p: p[0])
        best = (ratio,) + tuple(best[1:])
        counterpart = other[1]
    if best is None or best[0] < margin:
        reached = "no finite gradient" if best is None else f"the smallest unclipped norm reaches {best[0]:.3g} C at best"
        if adjacency == "replace-one":
            reached += (" for the weaker of two records with opposite clipped gradients (replace-one needs both: one record "
                        "alone differs by C, add/remove's sensitivity, half what the replace-one accountants bound)")
        raise ValueError(
            f"no gradient canary along this direction qualifies at clip_norm={c:g}: {reached} (margin {margin:g} C needed) over the "
            f"{theta.shape[0]} positions; try the other direction, larger scales, or other labels"
        )
    ratio, record, unit, s, label, sign = best
    which = direction if isinstance(direction, str) else "given"
    return Canary(
        record=record, kind="gradient", direction=unit, adjacency=adjacency, index=index, counterpart=counterpart,
        description=f"features {sign * s:.4g} x a unit {which} direction, label {label:g}: "
                    f"its unclipped gradient is at least {ratio:.3g} C over {theta.shape[0]} positions, so clipped it is C along one direction"
                    + (f"; replaces record {index}, which D holds as a record whose clipped gradient is the opposite (-C): the pair "
                       "differs by 2C a step" if adjacency == "replace-one" else ""),
        worst_case=GRADIENT_WORST_CASE,
        details=dict(feature_direction=u * sign, scale=s, label=label, smallest_norm_over_c=ratio),
    )


@dataclasses.dataclass(frozen=True)
class CanarySearch:
    """Outcome of :func:`search_canaries`: candidates ranked by the eps their pilot certifies.

    ranking: one dict per candidate (index, kind, certified, estimate, ceiling, description),
    best first. best: the winning :class:`Canary`. delta, confidence, num_pairs, num_steps: the pilots'.
    note: empty when a candidate certifies a positive eps; else it says that nothing certifies,
        that the ranking rests on plug-in estimates (no guarantee), and how many pairs would
        certify (:func:`~dpjax.estimators.pairs_needed`). plan: that
        :class:`~dpjax.estimators.PairsPlan`, or None.
    """

    ranking: list
    best: Canary
    delta: float
    confidence: float
    num_pairs: int
    num_steps: int
    note: str = ""
    plan: object = None

    def __repr__(self) -> str:
        from . import _display

        rows = [[str(r["index"]), r["kind"], _display.fmt(r["certified"]), _display.fmt(r["estimate"], 3), r["description"]] for r in self.ranking]
        head = (f"CanarySearch: {len(self.ranking)} candidates, {self.num_pairs:,} pilot pairs x {self.num_steps} steps each, ranked by "
                f"the eps each certifies at delta = {self.delta:g} ({self.confidence:.0%})")
        text = head + "\n" + _display.text_table(["#", "kind", "certified", "estimate", "canary"], rows)
        if self.note:
            text += "\n" + _display.wrap_text(f"note: {self.note}", _display.WIDTH, indent="  ", first="")
        return text


def search_canaries(
    model: Model,
    dataset: Dataset,
    sampler,
    candidates: Sequence[Canary],
    *,
    num_pairs: int = 2000,
    num_steps: int,
    delta: float = 1e-3,
    confidence: float = 0.95,
    seed: int = 0,
    init=None,
) -> CanarySearch:
    """Run a short coupled pilot per candidate and rank them by the eps the last iterate
    certifies (:func:`~dpjax.estimators.epsilon_lower_bound` with the candidate's statistic;
    ties broken by the plug-in estimate). Every pilot uses the same seed, so the candidates
    are compared on common randomness. Use :func:`candidates_in_box` for a random search over
    records in a box.
    """
    from .coupled import run_coupled
    from .estimators import epsilon_estimate, epsilon_lower_bound
    from .estimators.statistics import check_confidence

    candidates = list(candidates)
    if not candidates or not all(isinstance(c, Canary) for c in candidates):
        raise TypeError("candidates must be a non-empty sequence of dpjax.canaries.Canary")
    num_pairs = _validate.positive_int("num_pairs", num_pairs)
    num_steps = _validate.positive_int("num_steps", num_steps)
    delta = _validate.in_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    confidence = check_confidence(confidence)
    ranking = []
    for i, canary in enumerate(candidates):
        pair = canary.pair(dataset)
        result = run_coupled(seed, model, pair, sampler, num_pairs=num_pairs, num_steps=num_steps, init=init, progress=False)
        fin = result.finite_only()
        p, q = fin.positions[-1], fin.neighbour_positions[-1]
        lb = epsilon_lower_bound(p, q, delta, confidence, statistic=canary.statistic, seed=seed)
        est = epsilon_estimate(p, q, delta, confidence=confidence, statistic=canary.statistic, seed=seed, num_bootstrap=0)
        ranking.append(dict(index=i, kind=canary.kind, certified=lb.epsilon, estimate=est.epsilon, ceiling=lb.resolution_ceiling,
                            nonfinite=result.num_nonfinite, description=canary.description))
    ranking.sort(key=lambda r: (-r["certified"], -r["estimate"]))
    note, plan = _nothing_certifies(ranking, num_pairs, delta, confidence)
    return CanarySearch(ranking=ranking, best=candidates[ranking[0]["index"]], delta=delta, confidence=confidence,
                        num_pairs=num_pairs, num_steps=num_steps, note=note, plan=plan)


def _nothing_certifies(ranking: list, num_pairs: int, delta: float, confidence: float) -> tuple:
    """(note, plan) when no candidate certifies a positive eps: the ranking then rests on the
    plug-in estimates alone, which a reader must be told, with the pilot size that would certify."""
    from .estimators import pairs_needed

    if any(r["certified"] > 0 for r in ranking):
        return "", None
    best = ranking[0]["estimate"]
    head = (f"no candidate certifies anything (every certified eps is 0 at {num_pairs:,} pilot pairs): the ranking rests on the "
            "plug-in estimates, which carry no guarantee")
    if not (np.isfinite(best) and best > 0):
        return head + "; the estimates are 0 too: no leak is resolved at this size (more pilot steps or pairs, or other candidates)", None
    plan = pairs_needed(float(best), delta, fraction=0.9, confidence=confidence)
    if not np.isfinite(plan.pairs):
        return head + f"; no pilot size up to 1e12 pairs certifies 90% of the best estimate {best:.3g}", plan
    return (head + f"; about {int(plan.pairs):,} pilot pairs per candidate would certify 90% of the best estimate {best:.3g} if "
            "the pair's trade-off were Gaussian (dpjax.estimators.pairs_needed)"), plan


def candidates_in_box(low: dict, high: dict, num: int, *, adjacency: str = "add-remove", index: Optional[int] = None, seed: int = 0) -> list:
    """``num`` candidate records drawn uniformly in the box [low, high] (per field), for
    :func:`search_canaries` (a random search over the box)."""
    num = _validate.positive_int("num", num)
    if set(low) != set(high):
        raise ValueError(f"low has fields {sorted(low)} and high {sorted(high)}; they must match")
    _validate.one_of("adjacency", adjacency, ("add-remove", "replace-one"))
    rng = np.random.default_rng(_validate.seed("seed", seed))
    out = []
    for _ in range(num):
        record = {}
        for k in low:
            lo, hi = np.asarray(low[k], np.float64), np.asarray(high[k], np.float64)
            if lo.shape != hi.shape or np.any(hi < lo):
                raise ValueError(f"field {k!r}: low and high must have one shape and low <= high")
            record[k] = rng.uniform(lo, hi)
        out.append(Canary(record=record, kind="candidate", adjacency=adjacency, index=index,
                          description=", ".join(f"{k}={np.array2string(np.atleast_1d(v), precision=3)}" for k, v in record.items())))
    return out


__all__ = [
    "Canary",
    "CanarySearch",
    "candidates_in_box",
    "gradient_canary",
    "least_varying_direction",
    "mislabelled_canary",
    "out_of_distribution_canary",
    "record_gradients",
    "search_canaries",
]

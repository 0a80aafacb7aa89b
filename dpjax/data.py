"""Datasets and neighbouring pairs.

A :class:`Dataset` is a pytree whose leaves all share a leading record axis, plus a float
``mask`` over that axis (1 = the record is present). The mask lets add/remove adjacency keep
static shapes: D' is D with one record's mask set to 0, so both chains of a coupled pair run
the same compiled program on arrays of the same shape.

A :class:`NeighbouringPair` holds (D, D'), the index of the record that differs and the
adjacency ("replace-one" or "add-remove").
"""
from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from ._validate import ArgumentKindError

ADJACENCIES = ("replace-one", "add-remove")


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Dataset:
    """Records as a dict of arrays with a common leading axis, and a presence mask.

    ``fields["x"][i]`` is field ``x`` of record ``i``. ``mask[i]`` is 1.0 when record ``i``
    is present and 0.0 when it has been removed (add/remove adjacency).
    """

    fields: dict
    mask: jax.Array

    def __str__(self) -> str:
        """One line: the records and the fields' shapes (repr() keeps the full contents)."""
        shapes = ", ".join(f"{k} {tuple(np.shape(v))[1:] or '()'}" for k, v in self.fields.items())
        return f"Dataset of {self.num_records} records ({self.num_slots} slots): {shapes}"

    @property
    def num_slots(self) -> int:
        """Length of the record axis (present and removed records)."""
        return int(self.mask.shape[0])

    @property
    def num_records(self) -> int:
        """Number of present records (mask entries equal to 1), a Python int.

        Counted on the host with NumPy: a JAX reduction of the float64 mask would return a
        float and, outside x64 mode, warn about truncating it to float32."""
        return int(np.count_nonzero(np.asarray(self.mask)))

    def __getitem__(self, name: str) -> jax.Array:
        return self.fields[name]

    def record(self, index: int) -> dict:
        """Record ``index`` as a dict of its fields."""
        return {k: v[index] for k, v in self.fields.items()}


def make_dataset(*args: Any, mask: Any = None, **fields: Any) -> Dataset:
    """Build a validated :class:`Dataset` from named arrays with a common leading axis,
    e.g. ``make_dataset(x=features, y=labels)`` or ``make_dataset(x=features, mask=present)``.

    ``mask`` (keyword only; default all ones): 1 for a present record, 0 for a removed one.
    The old call ``make_dataset(mask, x=...)``, with the mask as the only positional argument,
    still works for one release with a ``DeprecationWarning``; a positional argument without
    named fields (``make_dataset(features)``) is a ``TypeError``, since a dataset's fields need
    names. Raises ``ValueError`` when fields have different record counts, when a value is not
    finite, or when the mask is not 0/1 of the right length; ``TypeError`` for a field or mask
    that is not an array of numbers.
    """
    from_position = False
    if args:
        if len(args) == 1 and fields and mask is None:
            warnings.warn(
                "make_dataset(mask, **fields): the mask as a positional argument is deprecated and will be removed "
                "in the next release; pass it by name, make_dataset(x=..., mask=...)",
                DeprecationWarning,
                stacklevel=2,
            )
            mask, from_position = args[0], True
        else:
            raise ArgumentKindError(
                f"make_dataset got {len(args)} positional argument(s) {_short(args)}; it takes the fields by name, "
                "e.g. make_dataset(x=features, y=labels), and the mask as mask=..."
            )
    if not fields:
        raise ValueError("make_dataset needs at least one field, e.g. make_dataset(x=..., y=...)")
    arrays = {}
    counts = {}
    for name, value in fields.items():
        if value is None or isinstance(value, (str, bytes)):
            raise ArgumentKindError(f"field {name!r}={value!r} must be an array of numbers with a leading record axis")
        try:
            arr = np.asarray(value)
        except (ValueError, TypeError):
            raise ArgumentKindError(f"field {name!r} is ragged (its nested sequences differ in length); it must be a rectangular array") from None
        if arr.ndim == 0:
            raise ValueError(f"field {name!r} is a scalar; every field needs a leading record axis")
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"field {name!r} has dtype {arr.dtype}; fields must be numeric")
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            bad = int(np.argwhere(~np.isfinite(arr.reshape(arr.shape[0], -1)))[0][0])
            raise ValueError(f"field {name!r} has a non-finite value in record {bad}; all data must be finite")
        counts[name] = arr.shape[0]
        arrays[name] = _device_array(arr)
    if len(set(counts.values())) != 1:
        raise ValueError(f"fields have different record counts {counts}; every field needs the same leading axis length")
    n = next(iter(counts.values()))
    if n == 0:
        raise ValueError(f"fields {sorted(counts)} hold 0 records; a dataset needs at least one")
    if mask is None:
        mask_arr = np.ones(n)
    else:
        hint = " (it was the positional argument: pass fields by name, e.g. make_dataset(x=...))" if from_position else ""
        try:
            mask_arr = np.asarray(mask)
            ok = mask_arr.dtype.kind in "biuf"
        except (ValueError, TypeError):  # ragged
            ok = False
        if isinstance(mask, (str, bytes)) or not ok:
            raise ArgumentKindError(f"mask={_short(mask)} violates the rule that mask is an array of 0 (removed) and 1 (present), one per record{hint}")
        mask_arr = mask_arr.astype(float)
        if mask_arr.shape != (n,):
            raise ValueError(f"mask has shape {mask_arr.shape}; it must have shape ({n},), one entry per record{hint}")
        if not np.all((mask_arr == 0) | (mask_arr == 1)):
            raise ValueError(f"mask must contain only 0 (removed) and 1 (present){hint}")
    return Dataset(fields=arrays, mask=_device_array(mask_arr))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _check_dataset(name: str, value: Any) -> "Dataset":
    """``value`` if it is a :class:`Dataset`; else a TypeError naming ``name``."""
    if not isinstance(value, Dataset):
        raise ArgumentKindError(
            f"{name}={_short(value)} violates the rule that {name} is a dpjax Dataset (build one with "
            f"dpjax.make_dataset(x=..., y=...)); got {type(value).__name__}"
        )
    return value


def _device_array(arr: np.ndarray) -> jax.Array:
    """A JAX array with the data's own precision: float64 data stays float64 whatever the
    caller's x64 setting (the runner casts to the run's dtype), so a neighbour built from it
    differs from it in exactly the edited record."""
    with jax.enable_x64(True):
        return jnp.asarray(arr)


def _check_index(index: Any, n: int) -> int:
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
        raise TypeError(f"index={index!r} must be an integer record index")
    if not 0 <= int(index) < n:
        raise ValueError(f"index={index} is out of range; it must satisfy 0 <= index < {n}")
    return int(index)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class NeighbouringPair:
    """Neighbouring datasets (D, D') that differ in the record at ``index``."""

    dataset: Dataset
    neighbour: Dataset
    index: int = dataclasses.field(metadata=dict(static=True))
    adjacency: str = dataclasses.field(metadata=dict(static=True))

    def __post_init__(self):
        if self.adjacency not in ADJACENCIES:
            raise ValueError(f"adjacency={self.adjacency!r} is not one of {ADJACENCIES}")

    def __str__(self) -> str:
        """A few lines, not every record (print(pair) dumped 24 KB for 500 records, issue 38);
        repr() keeps the full contents."""
        differing = {k: np.asarray(v[self.index]).tolist() for k, v in self.neighbour.fields.items()}
        if self.adjacency == "replace-one":
            what = f"record {self.index} replaced by {_short(differing)}"
        else:
            what = f"record {self.index} ({_short({k: np.asarray(v[self.index]).tolist() for k, v in self.dataset.fields.items()})}) " \
                   "present in D, absent from D'"
        return f"NeighbouringPair ({self.adjacency}): {self.dataset}; {what}"


def replace_one(dataset: Dataset, index: int, record: Mapping[str, Any]) -> NeighbouringPair:
    """D' = D with record ``index`` replaced by ``record`` (replace-one adjacency)."""
    _check_dataset("dataset", dataset)
    index = _check_index(index, dataset.num_slots)
    if not isinstance(record, Mapping):
        raise ArgumentKindError(
            f"record={_short(record)} violates the rule that record is a mapping from field name to value, "
            f"e.g. {{{', '.join(repr(k) + ': ...' for k in dataset.fields)}}}; got {type(record).__name__}"
        )
    missing = set(dataset.fields) - set(record)
    extra = set(record) - set(dataset.fields)
    if missing or extra:
        raise ValueError(f"record has fields {sorted(record)}; it must have exactly the dataset's fields {sorted(dataset.fields)}")
    new_fields = {}
    for name, arr in dataset.fields.items():
        try:
            value = np.asarray(record[name])
        except (ValueError, TypeError):
            value = None
        if isinstance(record[name], (str, bytes)) or value is None or value.dtype.kind not in "biuf":
            raise ArgumentKindError(f"record[{name!r}]={_short(record[name])} violates the rule that a field's value is a number or an array of numbers")
        if value.shape != arr.shape[1:]:
            raise ValueError(f"record[{name!r}] has shape {value.shape}; it must have shape {arr.shape[1:]}")
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            raise ValueError(f"record[{name!r}]={value!r} is not finite; all data must be finite")
        with jax.enable_x64(True):
            new_fields[name] = arr.at[index].set(jnp.asarray(value, dtype=arr.dtype))
    neighbour = Dataset(fields=new_fields, mask=dataset.mask)
    return NeighbouringPair(dataset=dataset, neighbour=neighbour, index=index, adjacency="replace-one")


def add_remove(dataset: Dataset, index: int) -> NeighbouringPair:
    """D' = D without record ``index`` (add/remove adjacency, static shapes via the mask)."""
    _check_dataset("dataset", dataset)
    index = _check_index(index, dataset.num_slots)
    if float(dataset.mask[index]) != 1.0:
        raise ValueError(f"record {index} is already removed (mask 0); add_remove needs a present record")
    with jax.enable_x64(True):
        neighbour = Dataset(fields=dataset.fields, mask=dataset.mask.at[index].set(0.0))
    return NeighbouringPair(dataset=dataset, neighbour=neighbour, index=index, adjacency="add-remove")


def make_pair(dataset: Dataset, neighbour: Dataset, adjacency: str = "replace-one") -> NeighbouringPair:
    """Validate two datasets as neighbours and find the record where they differ.

    Raises ``ValueError`` when they differ in no record or in more than one.
    """
    _check_dataset("dataset", dataset)
    _check_dataset("neighbour", neighbour)
    if not isinstance(adjacency, str) or adjacency not in ADJACENCIES:
        raise ValueError(f"adjacency={_short(adjacency)} is not one of {ADJACENCIES}")
    if set(dataset.fields) != set(neighbour.fields) or dataset.num_slots != neighbour.num_slots:
        raise ValueError("dataset and neighbour must have the same fields and the same number of record slots")
    differs = np.asarray(dataset.mask) != np.asarray(neighbour.mask)
    for name in dataset.fields:
        a = np.asarray(dataset.fields[name]).reshape(dataset.num_slots, -1)
        b = np.asarray(neighbour.fields[name]).reshape(dataset.num_slots, -1)
        differs |= np.any(a != b, axis=1)
    where = np.flatnonzero(differs)
    if len(where) != 1:
        raise ValueError(
            f"dataset and neighbour differ in {len(where)} records (indices {where[:10].tolist()}); neighbours must differ in exactly one"
        )
    index = int(where[0])
    if adjacency == "add-remove":
        if not (float(dataset.mask[index]) == 1.0 and float(neighbour.mask[index]) == 0.0):
            raise ValueError(f"add-remove pair must have record {index} present in dataset and removed (mask 0) in neighbour")
    elif float(dataset.mask[index]) != float(neighbour.mask[index]):
        raise ValueError("replace-one pair must have the same mask in both datasets")
    return NeighbouringPair(dataset=dataset, neighbour=neighbour, index=index, adjacency=adjacency)

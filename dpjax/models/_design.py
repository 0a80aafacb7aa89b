"""The design matrix x of the built-in models' records ((n, d); a 1-D x is n records of
dimension 1), read the same way when a dataset is built and when a closed form reads one."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate as V
from ..data import Dataset, _check_dataset


def design_matrix(x: Any) -> np.ndarray:
    """``x`` checked to be real and made (n, d): a 1-D ``x`` becomes (n, 1); else ValueError.
    The array keeps its dtype (a dataset stores the data's own precision)."""
    x = V.real_array("x", x, cast=False)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValueError(f"x has shape {x.shape}; it must be 1-D (n,) or 2-D (n, d)")
    return x


def present_design(dataset: Dataset) -> tuple[np.ndarray, np.ndarray]:
    """(x as float64 (n, d), mask as float64 (n,)) of ``dataset`` (a TypeError if it is not a
    :class:`~dpjax.data.Dataset`): what a conjugate closed form sums over, with the removed
    records (mask 0) left for the caller to weight out."""
    _check_dataset("dataset", dataset)
    x = np.asarray(dataset.fields["x"], dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    return x, np.asarray(dataset.mask, dtype=np.float64)

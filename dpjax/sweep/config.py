"""Sweep configuration: YAML -> a validated list of fully resolved points, each with a stable hash.

A configuration file is a mapping::

    seed: 0                      # default seed of every point
    checkpoint_every: 500        # optional: checkpoint chain state every N steps
    defaults:                    # a partial point merged under every point
      model: {name: gaussian_mean, dim: 1}
      data: {generator: gaussian, n: 20, record: {x: [4.0]}}
      sampler: {name: ula, step_size: 0.05}
      num_pairs: 2000
      num_steps: 100
      record_steps: [50, 100]
      quantities: [{name: epsilon_lower_bound, delta: 0.001}]
    points:                      # optional explicit list of partial points
      - {sampler: {name: sgld, step_size: 0.01, batching: uniform, batch_size: 5}}
    grid:                        # optional cartesian product: dotted key path -> list of values
      sampler.step_size: [0.01, 0.02]

The points are ``points`` (or ``[{}]`` without it) times every combination of ``grid``, each
merged over ``defaults``. Every key of every point is checked against :data:`MODELS`,
:data:`GENERATORS`, :data:`SAMPLERS` and :data:`QUANTITIES` before anything runs; an error
names the key path, the value and what is allowed (:class:`ConfigError`, a ``ValueError``).

A resolved point has every key present (defaults filled in, ``None`` where a key does not
apply), numbers coerced to their declared type, so its canonical JSON (sorted keys, no
whitespace) and the hash of it (:func:`point_hash`) identify the computation: the same
numbers come out whatever the device layout, so the layout is not part of the hash.
"""
from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import os
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from ..samplers.batching import SCHEMES


class ConfigError(ValueError):
    """An invalid sweep configuration; the message names the key path, the value and the rule."""


_MISSING = object()
REQUIRED = object()


def _fmt(value: Any) -> str:
    return json.dumps(value) if isinstance(value, (str, list, dict)) else repr(value)


def _fail(path: str, value: Any, rule: str) -> None:
    raise ConfigError(f"{path}={_fmt(value)}: {rule}")


# --- field types ------------------------------------------------------------------------------
# A field is (checker, default); checker(path, value) -> coerced value or raises ConfigError.


def _yaml_number(value: Any) -> Any:
    """A string that spells a number, as the number: PyYAML follows YAML 1.1, which reads
    ``1e-3`` (no dot) and ``1e+5`` as strings, though the user meant 0.001 and 100000. Other
    values come back unchanged (and are then rejected with the rule they break)."""
    if isinstance(value, str):
        try:
            return float(value.strip().replace("_", ""))
        except ValueError:
            return value
    return value


def integer(low: Optional[int] = None) -> Callable[[str, Any], int]:
    def check(path, value):
        value = _yaml_number(value)
        if isinstance(value, (float, np.floating)) and math.isfinite(value) and float(value).is_integer():
            value = int(value)  # 1e3 or 1000.0 for an integer field: the integer meant
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            _fail(path, value, "must be an integer" + (f" >= {low}" if low is not None else ""))
        if low is not None and value < low:
            _fail(path, value, f"must be an integer >= {low}")
        return int(value)

    return check


def real(low: Optional[float] = None, high: Optional[float] = None, low_open: bool = False, high_open: bool = False):
    lo, hi = ("(" if low_open else "["), (")" if high_open else "]")
    rule = f"must be a finite number in {lo}{'-inf' if low is None else low}, {'inf' if high is None else high}{hi}"

    def check(path, value):
        value = _yaml_number(value)
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            _fail(path, value, rule)
        v = float(value)
        ok = math.isfinite(v)
        if ok and low is not None:
            ok = v > low if low_open else v >= low
        if ok and high is not None:
            ok = v < high if high_open else v <= high
        if not ok:
            _fail(path, value, rule)
        return v

    return check


def choice(*allowed: str):
    def check(path, value):
        if value not in allowed:
            _fail(path, value, f"must be one of {list(allowed)}")
        return value

    return check


def optional(checker):
    def check(path, value):
        return None if value is None else checker(path, value)

    return check


def list_of(checker, min_length: int = 1):
    def check(path, value):
        if not isinstance(value, (list, tuple)) or len(value) < min_length:
            _fail(path, value, f"must be a list of at least {min_length} item(s)")
        return [checker(f"{path}[{i}]", v) for i, v in enumerate(value)]

    return check


def record_mapping(path, value):
    """A record for replace-one: field name -> number or list of numbers."""
    if not isinstance(value, Mapping) or not value:
        _fail(path, value, "must be a mapping field -> number or list of numbers, e.g. {x: [4.0]}")
    out = {}
    for name, v in value.items():
        if isinstance(v, (list, tuple)):
            out[str(name)] = [real()(f"{path}.{name}[{i}]", x) for i, x in enumerate(v)]
        else:
            out[str(name)] = real()(f"{path}.{name}", v)
    return out


# --- the schema ---------------------------------------------------------------------------------

POSITIVE = real(0.0, low_open=True)
PROBABILITY_OPEN = real(0.0, 1.0, low_open=True, high_open=True)

MODELS: dict[str, dict] = {
    "gaussian_mean": {"dim": (integer(1), 1), "prior_precision": (real(0.0), 1.0), "inverse_temperature": (POSITIVE, 1.0)},
    "bayesian_linear_regression": {"dim": (integer(1), 1), "noise_precision": (POSITIVE, 1.0), "prior_precision": (POSITIVE, 1.0)},
    "logistic_regression": {"dim": (integer(1), 1), "prior_precision": (POSITIVE, 1.0)},
}

_NEIGHBOUR_FIELDS = {
    "adjacency": (choice("replace-one", "add-remove"), "replace-one"),
    "index": (integer(0), 0),
    "record": (optional(record_mapping), None),
}
GENERATORS: dict[str, dict] = {
    # x_i ~ N(mean, scale^2 I_d), i < n  (for gaussian_mean)
    "gaussian": {"n": (integer(2), REQUIRED), "seed": (integer(0), 0), "mean": (real(), 0.0), "scale": (POSITIVE, 1.0), **_NEIGHBOUR_FIELDS},
    # x_i ~ N(0, I_d); y_i = <w 1, x_i> + noise_scale * N(0, 1) (linear) or ~ Bernoulli(sigmoid) (logistic)
    "regression": {
        "n": (integer(2), REQUIRED),
        "seed": (integer(0), 0),
        "coefficient": (real(), 1.0),
        "noise_scale": (POSITIVE, 1.0),
        **_NEIGHBOUR_FIELDS,
    },
    # paper 000 eq. 7: D = n copies of (x_h, c x_h); D' replaces record `index` by (x_h/2, c x_h/2)
    "paper000": {"n": (integer(2), REQUIRED), "x_high": (POSITIVE, 1.8), "c": (optional(POSITIVE), None), "index": (integer(0), 0)},
}
GENERATOR_MODELS = {
    "gaussian": ("gaussian_mean",),
    "regression": ("bayesian_linear_regression", "logistic_regression"),
    "paper000": ("bayesian_linear_regression",),
}

_COMMON_SAMPLER = {
    "step_size": (POSITIVE, REQUIRED),
    "temperature": (POSITIVE, 1.0),
    "clip_norm": (optional(POSITIVE), None),
}
SAMPLERS: dict[str, dict] = {
    "ula": {**_COMMON_SAMPLER, "parameterisation": (choice("euler", "welling-teh"), "euler")},
    "sgld": {
        **_COMMON_SAMPLER,
        "parameterisation": (choice("welling-teh", "euler"), "welling-teh"),
        "batching": (choice(*SCHEMES), "uniform"),
        "batch_size": (optional(integer(1)), None),
        "rate": (optional(real(0.0, 1.0, low_open=True)), None),
    },
    "cyclic-sgld": {
        **_COMMON_SAMPLER,
        "parameterisation": (choice("welling-teh", "euler"), "welling-teh"),
        "batch_size": (integer(1), 1),
    },
}

QUANTITIES: dict[str, dict] = {
    # lower confidence bound on the last iterate's eps(delta) (estimators.epsilon_lower_bound)
    "epsilon_lower_bound": {"delta": (PROBABILITY_OPEN, REQUIRED), "confidence": (PROBABILITY_OPEN, 0.95)},
    # plug-in eps(delta) of the last iterate with a bootstrap interval (estimators.epsilon_estimate)
    "epsilon_estimate": {
        "delta": (PROBABILITY_OPEN, REQUIRED),
        "confidence": (PROBABILITY_OPEN, 0.95),
        "num_bootstrap": (integer(0), 200),
    },
    # delta(eps) of the path (D vs D' direction) from the recorded path loss (estimators.privacy_loss_profile)
    "path_delta": {"epsilons": (list_of(real(0.0)), REQUIRED), "confidence": (PROBABILITY_OPEN, 0.95)},
    # exact tight eps(delta) of ULA's last iterate on a quadratic model (accountants.samplers.exact)
    "exact_epsilon": {"delta": (PROBABILITY_OPEN, REQUIRED)},
    # paper 001 Theorem 5.4 path bound for ULA when grad U_D - grad U_D' is a constant (accountants.samplers.girsanov)
    "girsanov_path_epsilon": {"delta": (PROBABILITY_OPEN, REQUIRED)},
}

POINT_KEYS = ("seed", "model", "data", "sampler", "num_pairs", "num_steps", "record_steps", "dtype", "init", "quantities")
TOP_KEYS = ("seed", "checkpoint_every", "chunk_size", "defaults", "points", "grid")


def _check_fields(path: str, given: Any, fields: Mapping[str, tuple], skip: Sequence[str] = ()) -> dict:
    if not isinstance(given, Mapping):
        _fail(path, given, "must be a mapping")
    unknown = sorted(set(given) - set(fields) - set(skip))
    if unknown:
        key = unknown[0]
        _fail(f"{path}.{key}", given[key], f"unknown key; allowed keys here are {sorted(set(fields) | set(skip))}")
    out = {}
    for key, (checker, default) in fields.items():
        value = given.get(key, _MISSING)
        if value is _MISSING:
            if default is REQUIRED:
                raise ConfigError(f"{path}.{key} is missing; it is required here")
            out[key] = default
        else:
            out[key] = checker(f"{path}.{key}", value)
    return out


def _named(path: str, given: Any, table: Mapping[str, dict]) -> dict:
    if not isinstance(given, Mapping):
        _fail(path, given, f"must be a mapping with a 'name' from {sorted(table)}")
    name_key = "generator" if table is GENERATORS else "name"
    name = given.get(name_key, _MISSING)
    if name is _MISSING:
        raise ConfigError(f"{path}.{name_key} is missing; it must be one of {sorted(table)}")
    if name not in table:
        _fail(f"{path}.{name_key}", name, f"must be one of {sorted(table)}")
    return {name_key: name, **_check_fields(path, given, table[name], skip=(name_key,))}


def resolve_point(raw: Mapping[str, Any], path: str = "point") -> dict:
    """Validate one merged point and return it resolved (all keys, declared types)."""
    if not isinstance(raw, Mapping):
        _fail(path, raw, "must be a mapping")
    unknown = sorted(set(raw) - set(POINT_KEYS))
    if unknown:
        _fail(f"{path}.{unknown[0]}", raw[unknown[0]], f"unknown key; allowed keys are {list(POINT_KEYS)}")
    for key in ("model", "data", "sampler", "num_pairs", "num_steps", "quantities"):
        if key not in raw:
            raise ConfigError(f"{path}.{key} is missing; it is required (set it in defaults or in the point)")
    point: dict[str, Any] = {"seed": integer(0)(f"{path}.seed", raw.get("seed", 0))}
    point["model"] = _named(f"{path}.model", raw["model"], MODELS)
    point["data"] = _named(f"{path}.data", raw["data"], GENERATORS)
    point["sampler"] = _named(f"{path}.sampler", raw["sampler"], SAMPLERS)
    point["num_pairs"] = integer(4)(f"{path}.num_pairs", raw["num_pairs"])
    point["num_steps"] = integer(1)(f"{path}.num_steps", raw["num_steps"])
    steps = list_of(integer(0))(f"{path}.record_steps", raw.get("record_steps", [point["num_steps"]]))
    if max(steps) > point["num_steps"] or steps != sorted(set(steps)):
        _fail(f"{path}.record_steps", steps, f"must be strictly increasing integers in [0, num_steps={point['num_steps']}]")
    point["record_steps"] = steps
    point["dtype"] = choice("float64", "float32")(f"{path}.dtype", raw.get("dtype", "float64"))
    dim = point["model"]["dim"]
    init = optional(list_of(real()))(f"{path}.init", raw.get("init"))
    if init is not None and len(init) != dim:
        _fail(f"{path}.init", init, f"must be a list of model.dim={dim} numbers (the shared start)")
    point["init"] = init
    quantities = raw["quantities"]
    if not isinstance(quantities, (list, tuple)) or not quantities:
        _fail(f"{path}.quantities", quantities, f"must be a non-empty list of mappings with a 'name' from {sorted(QUANTITIES)}")
    point["quantities"] = [_named(f"{path}.quantities[{i}]", q, QUANTITIES) for i, q in enumerate(quantities)]
    _cross_checks(point, path)
    return point


def _cross_checks(point: dict, path: str) -> None:
    model, data, sampler = point["model"], point["data"], point["sampler"]
    gen = data["generator"]
    if model["name"] not in GENERATOR_MODELS[gen]:
        _fail(f"{path}.data.generator", gen, f"does not fit model.name={model['name']!r}; it serves {list(GENERATOR_MODELS[gen])}")
    if gen == "paper000" and model["dim"] != 1:
        _fail(f"{path}.model.dim", model["dim"], "must be 1 for data.generator='paper000' (paper 000 eq. 7 is one-dimensional)")
    if data["index"] >= data["n"]:
        _fail(f"{path}.data.index", data["index"], f"must satisfy 0 <= index < data.n={data['n']}")
    if gen != "paper000":
        if data["adjacency"] == "replace-one" and data["record"] is None:
            raise ConfigError(f"{path}.data.record is missing; replace-one adjacency needs the replacement record, e.g. {{x: [4.0]}}")
        if data["adjacency"] == "add-remove" and data["record"] is not None:
            _fail(f"{path}.data.record", data["record"], "must be absent for add-remove adjacency (the record is removed)")
    if sampler["name"] == "sgld":
        scheme = sampler["batching"]
        if scheme == "poisson" and sampler["rate"] is None:
            raise ConfigError(f"{path}.sampler.rate is missing; batching='poisson' needs rate in (0, 1]")
        if scheme in ("uniform", "without-replacement", "reshuffle") and sampler["batch_size"] is None:
            raise ConfigError(f"{path}.sampler.batch_size is missing; batching={scheme!r} needs it")
    for i, q in enumerate(point["quantities"]):
        where = f"{path}.quantities[{i}].name"
        if q["name"] in ("exact_epsilon", "girsanov_path_epsilon"):
            if sampler["name"] != "ula":
                _fail(where, q["name"], f"needs sampler.name='ula' (got {sampler['name']!r}): the closed forms are for full-batch ULA")
            if model["name"] not in ("gaussian_mean", "bayesian_linear_regression"):
                _fail(where, q["name"], f"needs a quadratic model (gaussian_mean, bayesian_linear_regression), not {model['name']!r}")
            if sampler["clip_norm"] is not None:
                _fail(where, q["name"], "needs sampler.clip_norm absent: clipping makes the chain non-Gaussian")
        if q["name"] == "girsanov_path_epsilon" and sampler["temperature"] != 1.0:
            _fail(where, q["name"], f"needs sampler.temperature=1 (Theorem 5.4 is stated for beta = 1), got {sampler['temperature']}")


def _set_dotted(target: dict, dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    node = target
    for k in keys[:-1]:
        child = node.get(k)
        if child is None:
            child = node[k] = {}
        elif not isinstance(child, dict):
            raise ConfigError(f"grid.{dotted}: {'.'.join(keys[:-1])} is not a mapping in the point, so it cannot hold {keys[-1]!r}")
        node = child
    node[keys[-1]] = value


def _deep_merge(base: Mapping, over: Mapping) -> dict:
    out = copy.deepcopy(dict(base))
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) and not (k in ("model", "data", "sampler") and _renames(out[k], v)):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _renames(base: Mapping, over: Mapping) -> bool:
    # A point that names another model / generator / sampler replaces the default block whole:
    # the old block's parameters (e.g. ULA's) mean nothing for the new one.
    for key in ("name", "generator"):
        if key in over and key in base and over[key] != base[key]:
            return True
    return False


def expand(config: Mapping[str, Any]) -> tuple[list[dict], dict]:
    """Validate a parsed configuration; return (resolved points, sweep settings).

    Sweep settings: ``checkpoint_every`` (int or None), ``chunk_size`` (int).
    """
    if not isinstance(config, Mapping):
        _fail("config", config, "must be a mapping with keys among " + str(list(TOP_KEYS)))
    unknown = sorted(set(config) - set(TOP_KEYS))
    if unknown:
        _fail(unknown[0], config[unknown[0]], f"unknown top-level key; allowed keys are {list(TOP_KEYS)}")
    settings = {
        "checkpoint_every": optional(integer(1))("checkpoint_every", config.get("checkpoint_every")),
        "chunk_size": integer(1)("chunk_size", config.get("chunk_size", 1000)),
    }
    seed = integer(0)("seed", config.get("seed", 0))
    defaults = config.get("defaults", {}) or {}
    if not isinstance(defaults, Mapping):
        _fail("defaults", defaults, "must be a mapping (a partial point)")
    bases = config.get("points")
    if bases is None:
        bases = [{}]
    elif not isinstance(bases, (list, tuple)) or not bases:
        _fail("points", bases, "must be a non-empty list of mappings (partial points)")
    grid = config.get("grid", {}) or {}
    if not isinstance(grid, Mapping):
        _fail("grid", grid, "must be a mapping from dotted key paths (e.g. sampler.step_size) to lists of values")
    for key, values in grid.items():
        if not isinstance(values, (list, tuple)) or not values:
            _fail(f"grid.{key}", values, "must be a non-empty list of values")
        if key.split(".")[0] not in POINT_KEYS:
            _fail(f"grid.{key}", values, f"must start with one of {list(POINT_KEYS)}")
    combos = list(itertools.product(*grid.values())) if grid else [()]
    points: list[dict] = []
    for b, base in enumerate(bases):
        if not isinstance(base, Mapping):
            _fail(f"points[{b}]", base, "must be a mapping (a partial point)")
        for combo in combos:
            raw = _deep_merge({"seed": seed}, defaults)
            raw = _deep_merge(raw, base)
            for key, value in zip(grid.keys(), combo):
                _set_dotted(raw, key, copy.deepcopy(value))
            where = f"points[{b}]" if config.get("points") is not None else "point"
            if combo:
                where += "{" + ", ".join(f"{k}={_fmt(v)}" for k, v in zip(grid.keys(), combo)) + "}"
            points.append(resolve_point(raw, where))
    hashes = [point_hash(p) for p in points]
    seen: dict[str, int] = {}
    for i, h in enumerate(hashes):
        if h in seen:
            raise ConfigError(f"points {seen[h]} and {i} resolve to the same configuration (hash {h}); remove the duplicate")
        seen[h] = i
    return points, settings


def _unique_key_loader():
    """PyYAML's safe loader, refusing a mapping that names a key twice (PyYAML keeps the last
    silently: a grid written twice would run half the sweep the user wrote). Keys brought in by
    a merge (``<<: *defaults``) may still be overridden, as YAML intends."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            first_line: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    seen = key in first_line
                except TypeError:  # an unhashable key: the base class reports it with its line
                    continue
                if seen:
                    raise yaml.constructor.ConstructorError(
                        "while reading a mapping", node.start_mark,
                        f"found the key {key!r} a second time (first on line {first_line[key]}); a key may appear once in a mapping",
                        key_node.start_mark,
                    )
                first_line[key] = key_node.start_mark.line + 1
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


def _line_of(text: bytes, offset: int) -> int:
    return text.count(b"\n", 0, max(0, offset)) + 1


def load(path: str | Path) -> tuple[list[dict], dict]:
    """Read a YAML configuration file and :func:`expand` it.

    Raises :class:`ConfigError` naming the file and the line for a file that is not UTF-8 text
    (e.g. a binary file), is not valid YAML, or names a key twice in one mapping."""
    import yaml

    if path is None or not isinstance(path, (str, os.PathLike)):
        raise ConfigError(f"config={path!r}: must be the path of a YAML file")
    path = Path(path)
    where = f"config={str(path)!r}"
    if not path.is_file():
        raise ConfigError(f"{where}: {'is a folder, not a file' if path.is_dir() else 'no such file'}")
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise ConfigError(f"{where} cannot be read: {err.strerror or err}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(f"{where} line {_line_of(raw, err.start)}: is not UTF-8 text (byte 0x{raw[err.start]:02x} at offset "
                          f"{err.start}); a YAML configuration is a text file") from None
    try:
        config = yaml.load(text, Loader=_unique_key_loader())
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        if mark is not None:
            line = f" line {mark.line + 1}, column {mark.column + 1}"
        elif isinstance(err, yaml.reader.ReaderError):  # a character YAML does not allow (e.g. NUL)
            line = f" line {text.count(chr(10), 0, err.position) + 1}"
        else:
            line = ""
        if isinstance(err, yaml.reader.ReaderError):
            code = err.character if isinstance(err.character, int) else ord(err.character)
            what = f"the character #x{code:04x} is not allowed in YAML ({err.reason})"
        else:
            what = " ".join(str(getattr(err, "problem", None) or err).split())
        context = getattr(err, "context", None)
        kind = "names a key twice" if "a second time" in what else "is not valid YAML"
        raise ConfigError(f"{where}{line}: {kind}: {what}" + (f" ({context})" if context else "")) from None
    return expand(config)


def canonical_json(point: Mapping[str, Any]) -> str:
    """Canonical JSON of a resolved point: sorted keys, no whitespace, floats by repr."""
    return json.dumps(point, sort_keys=True, separators=(",", ":"), allow_nan=False)


def point_hash(point: Mapping[str, Any]) -> str:
    """16 hex digits of SHA-256 of the canonical JSON: the point's identity in the store.
    Raises :class:`ConfigError` for a point that is not a mapping of JSON values (finite
    numbers, strings, lists, mappings, None)."""
    if not isinstance(point, Mapping):
        _fail("point", point, "must be a mapping (a resolved point, see resolve_point)")
    try:
        text = canonical_json(point)
    except (TypeError, ValueError) as err:  # NaN, inf, arrays, objects
        raise ConfigError(f"point={_short(point)}: every value must be a finite number, a string, a list, a mapping or None ({err})") from None
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def flatten(point: Mapping[str, Any]) -> dict:
    """Point parameters as flat columns ("sampler.step_size", ...); quantities are left out
    (they become rows); lists and mappings become canonical JSON strings."""
    out: dict[str, Any] = {}

    def walk(prefix, node):
        for k, v in node.items():
            key = f"{prefix}{k}"
            if k == "quantities" and not prefix:
                continue
            if isinstance(v, Mapping) and k in ("model", "data", "sampler") and not prefix:
                walk(key + ".", v)
            elif isinstance(v, (list, tuple, Mapping)):
                out[key] = json.dumps(v, sort_keys=True, separators=(",", ":"))
            else:
                out[key] = v

    walk("", point)
    return out

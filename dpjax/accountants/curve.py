"""One privacy-curve type for every accountant and estimator.

A :class:`PrivacyCurve` holds, in float64, an RDP curve (``orders``, ``rdp`` with the orders
on its last axis, possibly with leading batch axes) and/or a privacy profile
(``epsilons``, ``deltas``: delta(eps) on a grid), plus :class:`Provenance` (which result,
which mode, which assumptions). It is a pytree: the arrays are leaves, the provenance is
static metadata.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

import jax
import numpy as np

from . import conversions
from .. import _validate


@dataclasses.dataclass(frozen=True)
class Provenance:
    """Where a curve comes from: the result (e.g. "paper 001 Theorem 5.2"), the mode
    ("paper", "strict", "exact", "bound", "estimate"), and the assumptions it relies on."""

    result: str
    mode: str = "bound"
    assumptions: tuple = ()
    released: str = ""  # "last iterate", "path", "posterior sample", ...

    def __post_init__(self):
        for name in ("result", "mode", "released"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"Provenance {name}={getattr(self, name)!r} must be a string")
        # static pytree metadata must be hashable: accept any iterable of assumptions
        if isinstance(self.assumptions, str):
            object.__setattr__(self, "assumptions", (self.assumptions,))
        else:
            object.__setattr__(self, "assumptions", tuple(self.assumptions))

    def describe(self) -> str:
        parts = [self.result, f"mode={self.mode}"]
        if self.released:
            parts.append(f"releases {self.released}")
        if self.assumptions:
            parts.append("assumes " + "; ".join(self.assumptions))
        return ", ".join(parts)


def _as_f64(x):
    return None if x is None else np.asarray(x, dtype=np.float64)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class PrivacyCurve:
    """RDP values over orders and/or a delta(eps) profile, with provenance.

    Use :meth:`from_rdp` or :meth:`from_profile` to build one (they validate).
    """

    orders: Optional[np.ndarray] = None
    rdp: Optional[np.ndarray] = None
    epsilons: Optional[np.ndarray] = None
    deltas: Optional[np.ndarray] = None
    pld: Optional[object] = None  # a composition.pld_bracket.PLDBracket (pessimistic and optimistic PLDs)
    # mu of a curve known to be mu-GDP (per configuration; inf: none): eps and delta by the closed form
    gdp_mu: Optional[np.ndarray] = None
    provenance: Provenance = dataclasses.field(default=Provenance("unspecified"), metadata=dict(static=True))

    # --- construction -------------------------------------------------------------------
    @classmethod
    @_validate.arguments(orders="reals", rdp="reals")
    def from_rdp(cls, orders, rdp, provenance: Provenance) -> "PrivacyCurve":
        orders, rdp = conversions._check_orders_rdp(orders, np.broadcast_to(_as_f64(rdp), np.shape(rdp)))
        return cls(orders=orders, rdp=np.array(rdp), provenance=provenance)

    @classmethod
    @_validate.arguments(epsilons="array", deltas="reals")
    def from_profile(cls, epsilons, deltas, provenance: Provenance) -> "PrivacyCurve":
        """A delta(eps) profile on a grid of ``epsilons`` (increasing, >= 0)."""
        eps = _as_f64(epsilons)
        dl = _as_f64(deltas)
        if eps.ndim != 1 or eps.size == 0 or np.any(np.diff(eps) <= 0) or np.any(eps < 0):
            raise ValueError("epsilons must be a non-empty increasing 1-D grid of values >= 0")
        if dl.shape[-1:] != eps.shape:
            raise ValueError(f"deltas has shape {dl.shape}; its last axis must match epsilons' length {eps.size}")
        if np.any(np.isnan(dl)) or np.any(dl < 0) or np.any(dl > 1):
            raise ValueError("deltas must lie in [0, 1]")
        return cls(epsilons=eps, deltas=dl, provenance=provenance)

    @classmethod
    def from_pld(cls, bracket, provenance: Provenance) -> "PrivacyCurve":
        """A curve backed by privacy-loss distributions (:func:`dpjax.accountants.pld_curve`):
        ``epsilon``/``delta`` are the pessimistic values, :meth:`optimistic` the companion."""
        from .composition.pld_bracket import PLDBracket

        if not isinstance(bracket, PLDBracket):
            raise TypeError(f"bracket must be a PLDBracket; got {type(bracket).__name__}")
        return cls(pld=bracket, provenance=provenance)

    def optimistic(self) -> "PrivacyCurve":
        """The PLD curve's optimistic companion: never above the true eps/delta of the
        dominating pair (so it is not a bound); with :meth:`epsilon` it brackets the truth."""
        if not self.has_pld:
            raise ValueError("only PLD curves (pld_curve) have an optimistic companion")
        bracket = self.pld
        flipped = type(bracket)(bracket.optimistic, bracket.optimistic, bracket.adjacency, bracket.step)
        prov = dataclasses.replace(self.provenance, result=f"optimistic companion of [{self.provenance.result}]", mode="estimate")
        return PrivacyCurve(pld=flipped, provenance=prov)

    @classmethod
    def from_zcdp(cls, rho, orders, provenance: Provenance) -> "PrivacyCurve":
        """The RDP curve rho * a of rho-zCDP (Bun & Steinke 2016) at ``orders``."""
        return cls.from_rdp(orders, conversions.zcdp_rdp(rho, orders), provenance)

    def to_profile(self, epsilons, conversion: str = "balle") -> "PrivacyCurve":
        """This curve's delta(eps) on the grid ``epsilons``, as a profile curve.

        Sound both ways: each grid delta is a valid guarantee at its eps, and reading an
        eps back from the profile rounds up to the grid, so it is never below this curve's.
        """
        eps = _as_f64(epsilons)
        deltas = self._delta_on_grid(eps, conversion)
        prov = dataclasses.replace(self.provenance, result=f"profile of [{self.provenance.result}]")
        return PrivacyCurve.from_profile(eps, deltas, prov)

    def _delta_on_grid(self, eps, conversion):
        # delta() broadcasts its argument against the batch axes; a grid needs its own axis
        batch = self.rdp.shape[:-1] if self.has_rdp else (self.deltas.shape[:-1] if self.has_profile else self.pld.batch_shape)
        out = np.stack([self.delta(np.full(batch, e), conversion) for e in eps], axis=-1)
        return out

    @property
    def has_rdp(self) -> bool:
        return self.rdp is not None

    @property
    def has_profile(self) -> bool:
        return self.deltas is not None

    @property
    def has_pld(self) -> bool:
        return self.pld is not None

    # --- queries ------------------------------------------------------------------------
    @_validate.arguments(delta="numbers")
    def epsilon(self, delta, conversion: str = "balle") -> np.ndarray:
        """Smallest eps this curve certifies at ``delta`` (min over RDP orders and profile).

        From a profile on a grid the answer is the smallest grid eps whose delta is <= the
        target (rounded up to the grid, so it stays a valid guarantee).
        """
        _validate.one_of("conversion", conversion, conversions.CONVERSIONS)  # checked on every kind of curve (a typo is never ignored)
        candidates = []
        if self.has_rdp:
            candidates.append(conversions.rdp_to_epsilon(self.orders, self.rdp, delta, conversion))
        if self.has_profile:
            d = conversions._check_delta(delta)[..., None]
            ok = self.deltas <= d
            idx = np.argmax(ok, axis=-1)
            eps = np.where(np.any(ok, axis=-1), self.epsilons[idx], np.inf)
            candidates.append(eps)
        if self.has_pld:
            candidates.append(self.pld.epsilon(conversions._check_delta(delta)))
        if self.gdp_mu is not None:
            # exact: a discretised profile would round eps up to its grid
            from . import fdp

            candidates.append(fdp.gdp_epsilon(self.gdp_mu, conversions._check_delta(delta)))
        if not candidates:
            raise ValueError("this curve has neither RDP values nor a profile")
        return np.minimum.reduce(np.broadcast_arrays(*candidates))

    @_validate.arguments(epsilon="numbers")
    def delta(self, epsilon, conversion: str = "balle") -> np.ndarray:
        """Smallest delta this curve certifies at ``epsilon``."""
        _validate.one_of("conversion", conversion, conversions.CONVERSIONS)
        candidates = []
        if self.has_rdp:
            candidates.append(conversions.rdp_to_delta(self.orders, self.rdp, epsilon, conversion))
        if self.has_profile:
            e = np.asarray(epsilon, dtype=np.float64)
            if np.any(np.isnan(e)) or np.any(e < 0):
                raise ValueError(f"epsilon={epsilon!r} violates epsilon >= 0")
            # every grid point eps_i <= eps certifies (eps, delta_i): take the smallest such
            # delta_i (a running minimum, so a non-monotone profile is still used soundly).
            idx = np.searchsorted(self.epsilons, e, side="right") - 1
            running_min = np.minimum.accumulate(self.deltas, axis=-1)
            shape = np.broadcast_shapes(idx.shape, running_min.shape[:-1])
            rm = np.broadcast_to(running_min, shape + running_min.shape[-1:])
            ii = np.broadcast_to(np.clip(idx, 0, None), shape)[..., None]
            vals = np.take_along_axis(rm, ii, axis=-1)[..., 0]
            candidates.append(np.where(idx >= 0, vals, 1.0))
        if self.has_pld:
            e = np.asarray(epsilon, dtype=np.float64)
            if np.any(np.isnan(e)) or np.any(e < 0):
                raise ValueError(f"epsilon={epsilon!r} violates epsilon >= 0")
            candidates.append(self.pld.delta(e))
        if self.gdp_mu is not None:
            from . import fdp

            e = np.asarray(epsilon, dtype=np.float64)
            if np.any(np.isnan(e)) or np.any(e < 0):
                raise ValueError(f"epsilon={epsilon!r} violates epsilon >= 0")
            mu = np.asarray(self.gdp_mu, dtype=np.float64)
            candidates.append(np.where(np.isfinite(mu), fdp.gdp_delta(np.where(np.isfinite(mu), mu, 1.0), e), 1.0))
        if not candidates:
            raise ValueError("this curve has neither RDP values nor a profile")
        return np.minimum.reduce(np.broadcast_arrays(*candidates))

    def rdp_at(self, orders) -> np.ndarray:
        """RDP values at given orders, which must be among this curve's orders."""
        if not self.has_rdp:
            raise ValueError("this curve has no RDP values")
        orders = np.atleast_1d(np.asarray(orders, dtype=np.float64))
        idx = np.array([np.flatnonzero(np.isclose(self.orders, a, rtol=0, atol=1e-12))[:1] for a in orders], dtype=object)
        out = []
        for a, i in zip(orders, idx):
            if len(i) == 0:
                raise ValueError(f"order {a} is not among this curve's orders")
            out.append(self.rdp[..., int(i[0])])
        return np.stack(out, axis=-1)

    # --- f-DP, GDP, RDP extras (dpjax.accountants.fdp, dpjax.accountants.group) ------------
    @_validate.arguments(alpha="numbers")
    def tradeoff(self, alpha, epsilons=None, conversion: str = "balle") -> np.ndarray:
        """f-DP trade-off beta(alpha): the smallest type II error at type I error ``alpha`` that
        this curve certifies, sup over eps of max(0, 1 - delta(eps) - e^eps alpha,
        e^-eps (1 - delta(eps) - alpha)) (Dong, Roth & Su 2022, Prop. 2.12).

        Built from :meth:`delta` alone, so it works for every kind of curve. A valid lower
        envelope of the true trade-off (never above the true beta): slack comes from the
        curve's own delta(eps) (an RDP conversion, a profile rounded to its grid) and from the
        finite eps set (the profile's grid points, which are optimal for a profile, plus a grid
        to eps(1e-15) refined by golden section; or ``epsilons`` if given). Symmetric
        (f = f^-1) because (eps, delta)-DP bounds both directions. Shape: batch + alpha's shape.
        See :mod:`dpjax.accountants.fdp`.
        """
        from . import fdp

        return fdp.curve_tradeoff(self, alpha, epsilons, conversion)

    def gdp(self, min_delta: float = 1e-10, conversion: str = "balle", rtol: float = 1e-4):
        """The tightest mu-GDP that dominates this curve for every eps whose delta is >=
        ``min_delta``, certified between grid points, with whether it dominates everywhere:
        a :class:`~dpjax.accountants.fdp.GDPSummary` (see :func:`~dpjax.accountants.fdp.curve_gdp`)."""
        from . import fdp

        return fdp.curve_gdp(self, min_delta=min_delta, conversion=conversion, rtol=rtol)

    @_validate.arguments(delta="numbers")
    def optimal_order(self, delta, conversion: str = "balle") -> np.ndarray:
        """The RDP order at which the RDP curve attains its eps(``delta``) (the argmin over
        orders of the conversion; the first one on ties). An answer at the smallest or largest
        order held suggests extending the orders. Needs RDP values."""
        if not self.has_rdp:
            raise ValueError("optimal_order needs RDP values; this curve has none")
        per_order = conversions.rdp_to_epsilon_per_order(self.orders, self.rdp, delta, conversion)
        return self.orders[np.argmin(per_order, axis=-1)]

    def group(self, size: int) -> "PrivacyCurve":
        """This guarantee for groups of ``size`` records: RDP through Mironov's weak triangle
        inequality (2017, Prop. 11 / Cor. 4), a profile through (k eps, k e^{(k-1) eps} delta)
        (Vadhan 2017, Lemma 2.2); see :mod:`dpjax.accountants.group`."""
        from . import group as _group

        k = _validate.positive_int("size", size)
        if not (self.has_rdp or self.has_profile):
            raise ValueError("group privacy needs RDP values or a profile; this curve has neither")
        prov = dataclasses.replace(
            self.provenance,
            result=f"group of {k} records of [{self.provenance.result}] (Mironov 2017 Prop. 11; Vadhan 2017 Lemma 2.2)",
            mode="bound" if k > 1 else self.provenance.mode,
        )
        rdp = _group.group_rdp(self.orders, self.rdp, k) if self.has_rdp else None
        eps, deltas = _group.group_profile(self.epsilons, self.deltas, k) if self.has_profile else (None, None)
        return PrivacyCurve(orders=self.orders, rdp=rdp, epsilons=eps, deltas=deltas, provenance=prov)

    # --- composition --------------------------------------------------------------------
    def compose(self, other: "PrivacyCurve", provenance: Optional[Provenance] = None) -> "PrivacyCurve":
        """Adaptive composition: RDP values add at each order (orders must match); PLD curves
        compose by convolving their privacy-loss distributions (FFT)."""
        if not isinstance(other, PrivacyCurve):
            raise TypeError(f"other={_validate._fmt(other)} violates other a PrivacyCurve: compose() composes two curves, "
                            f"got {type(other).__name__}")
        if provenance is not None and not isinstance(provenance, Provenance):
            raise TypeError(f"provenance={_validate._fmt(provenance)} violates provenance a Provenance (or None)")
        if self.has_pld and other.has_pld:
            prov = provenance or Provenance(
                result=f"composition of [{self.provenance.result}] and [{other.provenance.result}] (PLD convolution)",
                mode=self.provenance.mode if self.provenance.mode == other.provenance.mode else "bound",
                assumptions=tuple(dict.fromkeys(self.provenance.assumptions + other.provenance.assumptions)),
            )
            return PrivacyCurve(pld=self.pld.compose(other.pld), provenance=prov)
        if not (self.has_rdp and other.has_rdp):
            raise ValueError("composition needs RDP values on both curves (profiles do not compose by addition)")
        if self.orders.shape != other.orders.shape or not np.allclose(self.orders, other.orders, rtol=0, atol=1e-12):
            raise ValueError("curves must share the same orders to compose")
        prov = provenance or Provenance(
            result=f"composition of [{self.provenance.result}] and [{other.provenance.result}]",
            mode=self.provenance.mode if self.provenance.mode == other.provenance.mode else "bound",
            assumptions=tuple(dict.fromkeys(self.provenance.assumptions + other.provenance.assumptions)),
        )
        return PrivacyCurve.from_rdp(self.orders, self.rdp + other.rdp, prov)

    def self_compose(self, times: int) -> "PrivacyCurve":
        """``times``-fold composition with itself (RDP multiplied by ``times``)."""
        if isinstance(times, bool) or not isinstance(times, (int, np.integer)) or times < 1:
            raise ValueError(f"times={times!r} violates times a positive integer")
        if self.has_pld and not self.has_rdp:
            return self._pld_self_compose(int(times))
        if not self.has_rdp:
            raise ValueError("self_compose needs RDP values")
        prov = dataclasses.replace(self.provenance, result=f"{times}-fold composition of [{self.provenance.result}]")
        return PrivacyCurve.from_rdp(self.orders, self.rdp * times, prov)

    def _pld_self_compose(self, times: int) -> "PrivacyCurve":
        """PLD: ``times``-fold convolution by binary powering (about 2 log2(times) convolutions,
        not times - 1: a loop of 1e30 convolutions never ended and could not be interrupted,
        issue 38), refused before any work when the composed PLD cannot fit the grid limit."""
        from .composition.pld_bracket import MAX_GRID

        bracket = self.pld
        # the composed loss spreads like sqrt(times) standard deviations of one copy; the window
        # keeps about +-8 of them (tail mass 1e-15), so it needs at least this many points
        widest = 0.0
        for p in bracket.pessimistic:
            pmf = np.asarray(p.pmf, dtype=np.float64)
            grid = np.arange(pmf.shape[-1]) * p.step
            mass = np.maximum(pmf.sum(axis=-1, keepdims=True), 1e-300)
            mean = (pmf * grid).sum(axis=-1, keepdims=True) / mass
            sd = np.sqrt(np.max((pmf * (grid - mean) ** 2).sum(axis=-1) / mass[..., 0]))
            widest = max(widest, 16.0 * math.sqrt(times) * sd / p.step)
        if widest > MAX_GRID:
            raise ValueError(
                f"times={times} violates the PLD grid limit: the {times}-fold composition of this curve's privacy-loss "
                f"distribution needs about {widest:.3g} grid points (> {MAX_GRID}); account for the whole run at once with "
                "pld_curve(..., steps=...) on a coarser value_discretization_interval, or with noisy_sgd_curve (RDP)")
        # composed without the RDP fallback (joining its stages at every squaring would double
        # them each time); the run's RDP bound is set once at the end: times x this curve's
        result, power, k = None, dataclasses.replace(self, pld=dataclasses.replace(bracket, fallback=None)), times
        while True:  # binary powering: result = self^times
            if k & 1:
                result = power if result is None else result.compose(power)
            k >>= 1
            if not k:
                break
            power = power.compose(power)
        fallback = None if bracket.fallback is None else bracket.fallback.times(times)
        prov = dataclasses.replace(self.provenance, result=f"{times}-fold composition of [{self.provenance.result}]")
        return PrivacyCurve(pld=dataclasses.replace(result.pld, fallback=fallback), provenance=prov)

    # --- presentation (dpjax._display) ----------------------------------------------------
    def summary(self) -> str:
        """eps at delta = 1e-2 ... 1e-6, what the curve holds, and its provenance (100 columns)."""
        from .. import _display

        return _display.curve_summary(self)

    def figure(self, deltas=None):
        """eps(delta) over ``deltas`` (default 1e-10 .. 0.1) and, with RDP values, RDP by order."""
        from .. import _display

        return _display.curve_figure(self, deltas)

    def save(self, path, deltas=None):
        """Write :meth:`figure` to ``path`` (the suffix picks the format); returns the path."""
        from .. import _display

        return _display.save_figure(self.figure(deltas), path)

    def __repr__(self) -> str:
        if isinstance(self.rdp, np.ndarray) or isinstance(self.deltas, np.ndarray) or self.has_pld:
            try:
                return self.summary()
            except Exception:  # noqa: BLE001 - a repr must not raise; fall back to the outline below
                pass
        what = []
        if self.has_rdp:
            what.append(f"{self.orders.size} orders")
        if self.has_profile:
            what.append(f"profile on {self.epsilons.size} eps")
        if self.has_pld:
            what.append("privacy-loss distributions")
        return f"PrivacyCurve({', '.join(what)}; {self.provenance.describe()})"

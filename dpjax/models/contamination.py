"""Huber-contaminated likelihoods (paper 003).

Each record is, with probability p, replaced by a draw from a public heavy-tailed density g;
inference uses the mixture likelihood

    k_p(x; theta) = (1 - p) f(x; theta) + p g(x),

evaluated in log space as logaddexp(log(1 - p) + log f, log p + log g), so neither term
underflows when x sits far in f's tail (where g dominates and gives the privacy).
The likelihood ratio that drives paper 003's analysis (Proposition 1, §4.1) is

    d(x; theta) = k_p(x; theta) / k_p(x; theta*).

:class:`ContaminationModel` holds log f, log g and the log-prior, and optionally samplers for
f and g and the support box of a record (needed by Algorithm 1, see
:mod:`dpjax.estimators.contamination`). ``to_model(p)`` gives an ordinary dpjax
:class:`~dpjax.models.Model` (records ``{"x": ...}``) for the samplers.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validate as V
from .base import Model

LogF = Callable[[Any, jax.Array], jax.Array]  # (record, theta) -> log f(record; theta)
LogG = Callable[[Any], jax.Array]  # record -> log g(record)


def check_contamination_rate(p: Any, allow_zero: bool = False) -> float:
    """p must lie in (0, 1): p = 0 removes the contamination (and the privacy), p = 1 the data.
    ``allow_zero``: accept p = 0, the uncontaminated baseline that paper 003 §4.3 compares
    against (meaningful where d(x; theta) is bounded without g, e.g. a binary response)."""
    return V.in_range("contamination_rate", p, 0.0, 1.0, low_open=not allow_zero, high_open=True)


def _log1mexp(x):
    """log(1 - exp(x)) for x <= 0, accurate on both sides of -log 2 (Maechler 2012)."""
    return jnp.where(x > -math.log(2.0), jnp.log(-jnp.expm1(x)), jnp.log1p(-jnp.exp(x)))


_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def log_ndtr_compact(x):
    """log Phi(x), from one erfc plus the Mills-ratio series for x < -20.

    Accurate to ~2e-13 relative against mpmath (the series' first omitted term at x = -20 is 135135 / x^14
    ~ 1e-13 of a quantity of size 1 inside the log1p). Written instead of
    ``jax.scipy.special.log_ndtr`` (which evaluates erf and erfc in several branches) because
    Algorithm 1 traces the truncation normaliser at many call sites and XLA compile time
    grows with each copy.
    """
    # each branch sees only arguments in its own range, so the branch not taken never
    # produces inf/nan (which would poison gradients through jnp.where)
    near = jnp.maximum(x, -20.0)
    lower_tail = 0.5 * jax.lax.erfc(jnp.abs(near) / math.sqrt(2.0))  # Phi(-|x|)
    direct = jnp.where(near <= 0, jnp.log(lower_tail), jnp.log1p(-lower_tail))
    safe = jnp.minimum(x, -20.0)
    r = 1.0 / (safe * safe)
    series = r * (-1.0 + r * (3.0 + r * (-15.0 + r * (105.0 + r * (-945.0 + r * 10395.0)))))
    asymptotic = -0.5 * safe * safe - jnp.log(-safe) - _LOG_SQRT_2PI + jnp.log1p(series)
    return jnp.where(x < -20.0, asymptotic, direct)


def log_normal_mass(a, b):
    """log(Phi(b) - Phi(a)) for a <= b, without cancellation in either tail.

    Reflect so the interval does not lie in the right tail (Phi(b) - Phi(a) = Phi(-a) -
    Phi(-b)); then either both ends are in the left tail (difference of two logs) or the
    interval straddles 0 (one minus the two tail masses).
    """
    flip = a > 0
    lo = jnp.where(flip, -b, a)
    hi = jnp.where(flip, -a, b)
    log_lo = log_ndtr_compact(lo)
    log_hi = log_ndtr_compact(jnp.where(hi < 0, hi, -hi))  # log Phi(hi) in the tail case, log Phi(-hi) otherwise
    tail = hi < 0
    # branch arguments made safe where the branch is not taken (no inf/nan in gradients)
    left_tail = log_hi + _log1mexp(jnp.where(tail, log_lo - log_hi, -1.0))
    straddle = _log1mexp(jnp.where(tail, -1.0, jnp.logaddexp(log_lo, log_hi)))
    return jnp.where(tail, left_tail, straddle)


def log_mix(log_f_value, log_g_value, p):
    """log((1 - p) e^{log f} + p e^{log g}), written out (max + log1p(exp(-|diff|))) rather than
    with jnp.logaddexp, which is ~4x slower on CPU in the particles x records inner loop."""
    a = jnp.log1p(-p) + log_f_value
    b = jnp.log(p) + log_g_value
    top = jnp.maximum(a, b)
    return jnp.where(jnp.isneginf(top), top, top + jnp.log1p(jnp.exp(-jnp.abs(a - b))))


@dataclasses.dataclass(frozen=True)
class ContaminationModel:
    """log f(x; theta), log g(x) and log prior(theta) of a contaminated model (paper 003).

    log f(x; theta) = ``log_f(x, theta) - log_f_normaliser(theta)``: give a theta-only
    normaliser (e.g. a truncation mass) separately, when there is one, so Algorithm 1 computes
    it once per theta rather than once per (x, theta) pair; without it log_f is the density.
    ``sample_f(key, theta, n)`` draws n records (leading axis n); ``sample_g(key, records)``
    draws the replacement for each of ``records`` (same structure): g may depend on a
    record's covariates, as in the regressions of paper 003 §4.3, where only the response is
    replaced. ``record_low``/``record_high`` bound a record's support, used by Algorithm 1's
    sup/inf over records: floats for a scalar record (the truncation interval), or one value
    per component for a vector record, with ``record_levels`` giving, per component, either
    None (continuous in [low, high]) or the tuple of values a discrete component takes (a
    binary response, an intercept fixed at 1). All are optional for plain likelihood use.

    Unbounded records (a regression's real response): ``record_low``/``record_high`` then
    bound a *search* vector v, and ``record_transform(v)`` maps it to the record, e.g.
    y = theta*.w + a tan(pi v_0 / 2) with v_0 in [-1, 1], whose ends map to |y| ~ 1e17, where
    log d has reached its |y| -> infinity limit to float64 precision (the model's docstring
    says what the limit is). ``record_grid_points``: per component, the grid size for that
    continuous component (None: the caller's ``points_per_axis``).
    ``covariates(record) -> w``: declares that f(x; theta) depends on theta only through
    w.theta (a regression), which lets Algorithm 1 search the box A_n along the one-parameter
    family theta = centre + t phi sign(w), t in [-1, 1], whose w.theta covers exactly the
    range of w.theta over the box. ``theta_star``: the theta* a model is built around (when g
    or the transform depends on it; the estimator checks that it is the one it is given).
    ``bounded_without_contamination``: False when d(x; theta) is unbounded in x at p = 0
    (e.g. a Gaussian response), so the uncontaminated eps is +inf.
    ``mixture_density(record, theta, p) -> k_p(x; theta)``: optional, for speed only: the
    mixture itself (not its log) in closed form, e.g. (1 - p) sigmoid(+-theta.w) + p/2. Algorithm
    1's two O(n m) and O(grid m) loops then take one log per record (or none: the particle
    mixture sums it with linear-space weights) instead of mixing log f and log g in log
    space, 2-3x faster. It must agree with the log-space mixture to rounding (the models'
    tests check it) wherever the value is a positive normal float; where it is not (0, a
    subnormal, inf or NaN: an overflow far outside the data), the estimator returns NaN for
    the dataset, counted as failed, rather than a wrong finite number.
    """

    log_f: LogF
    log_g: LogG
    log_prior: Callable[[jax.Array], jax.Array]
    dim: int
    sample_f: Callable | None = None
    sample_g: Callable | None = None
    record_low: float | tuple | None = None
    record_high: float | tuple | None = None
    name: str = "contamination"
    log_f_normaliser: Callable[[jax.Array], jax.Array] | None = None
    record_levels: tuple | None = None
    record_transform: Callable | None = None
    record_grid_points: tuple | None = None
    covariates: Callable | None = None
    theta_star: tuple | None = None
    bounded_without_contamination: bool = True
    mixture_density: Callable | None = None

    def __post_init__(self):
        V.positive_int("dim", self.dim)
        if (self.record_low is None) != (self.record_high is None):
            raise ValueError("record_low and record_high must be given together")
        if self.record_low is None:
            if self.record_levels is not None:
                raise ValueError("record_levels needs record_low and record_high")
            return
        low, high = np.atleast_1d(np.asarray(self.record_low, float)), np.atleast_1d(np.asarray(self.record_high, float))
        if low.shape != high.shape or low.ndim != 1:
            raise ValueError(f"record_low {low.shape} and record_high {high.shape} must be scalars or equal-length sequences")
        levels = self._component_levels(low.shape[0])
        if len(levels) != low.shape[0]:
            raise ValueError(f"record_levels has {len(levels)} entries; it needs one per record component ({low.shape[0]})")
        if self.record_grid_points is not None and len(self.record_grid_points) != low.shape[0]:
            raise ValueError(f"record_grid_points has {len(self.record_grid_points)} entries; it needs one per record component ({low.shape[0]})")
        for k, (lo, hi, lev) in enumerate(zip(low, high, levels)):
            if lev is None and not lo < hi:
                raise ValueError(f"record_low={lo} must be < record_high={hi} (record component {k})")
            if lev is not None and not (len(lev) >= 1 and all(lo <= v <= hi for v in lev)):
                raise ValueError(f"record_levels[{k}]={lev!r} must be a non-empty tuple of values in [{lo}, {hi}]")

    def _component_levels(self, size: int) -> tuple:
        """``record_levels``, or every one of ``size`` components continuous when it is None."""
        return self.record_levels if self.record_levels is not None else (None,) * size

    @property
    def vector_records(self) -> bool:
        """True when a record has components (record_low given per component)."""
        return self.record_low is not None and np.ndim(self.record_low) == 1

    def record_space(self, points_per_axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """A vector record's search space for Algorithm 1's sup/inf: (grid, low, high, step).

        ``grid`` is the product of each component's levels (discrete) or ``points_per_axis``
        equally spaced values over [low, high] (continuous); ``step`` is the continuous
        components' grid spacing and 0 for discrete ones (refinement moves only the former).
        """
        if not self.vector_records:
            raise ValueError(f"model {self.name!r} has no per-component record support (record_low/record_high sequences)")
        if isinstance(points_per_axis, bool) or not isinstance(points_per_axis, (int, np.integer)) or points_per_axis < 2:
            raise ValueError(f"points_per_axis={points_per_axis!r} violates points_per_axis an integer >= 2")
        low, high = np.asarray(self.record_low, float), np.asarray(self.record_high, float)
        levels = self._component_levels(low.shape[0])
        axes, step = [], np.zeros_like(low)
        counts = self.record_grid_points or (None,) * low.shape[0]
        for k, lev in enumerate(levels):
            if lev is None:
                points = points_per_axis if counts[k] is None else int(counts[k])
                axes.append(np.linspace(low[k], high[k], points))
                step[k] = (high[k] - low[k]) / (points - 1)
            else:
                axes.append(np.asarray(lev, float))
        grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, low.shape[0])
        return grid, low, high, step

    def to_record(self, v):
        """The record a search vector v stands for (``record_transform``; identity without one)."""
        return v if self.record_transform is None else self.record_transform(v)

    def log_normaliser(self, theta):
        """The theta-only part of log f (0 when the model has none)."""
        if self.log_f_normaliser is None:
            return jnp.zeros((), dtype=jnp.result_type(theta))
        return self.log_f_normaliser(theta)

    def log_density_f(self, record, theta):
        """log f(x; theta), normaliser included."""
        return self.log_f(record, theta) - self.log_normaliser(theta)

    def log_k(self, record, theta, p, log_normaliser=None):
        """log k_p(x; theta) = log((1 - p) f(x; theta) + p g(x)), in log space.
        ``log_normaliser``: a precomputed ``log_normaliser(theta)``."""
        norm = self.log_normaliser(theta) if log_normaliser is None else log_normaliser
        return log_mix(self.log_f(record, theta) - norm, self.log_g(record), p)

    def log_d(self, record, theta, theta_star, p):
        """log d(x; theta) = log k_p(x; theta) - log k_p(x; theta*) (paper 003, §4.1)."""
        return self.log_k(record, theta, p) - self.log_k(record, theta_star, p)

    def contaminate(self, key, records, theta_star, p):
        """Replace each record with probability p by a draw from g (Algorithm 1, line 4)."""
        if self.sample_g is None:
            raise ValueError(f"model {self.name!r} has no sample_g; contamination needs draws from g")
        n = jax.tree_util.tree_leaves(records)[0].shape[0]
        k_mask, k_g = jax.random.split(key)
        replace = jax.random.bernoulli(k_mask, p, (n,))
        draws = self.sample_g(k_g, records)

        def pick(a, b):
            return jnp.where(replace.reshape((n,) + (1,) * (a.ndim - 1)), b, a)

        return jax.tree_util.tree_map(pick, records, draws)

    def simulate(self, key, theta_star, n, p):
        """n records drawn from f(.; theta*) and contaminated at rate p (Algorithm 1, lines 3-4)."""
        if self.sample_f is None:
            raise ValueError(f"model {self.name!r} has no sample_f; simulation needs draws from f")
        k_f, k_c = jax.random.split(key)
        return self.contaminate(k_c, self.sample_f(k_f, theta_star, n), theta_star, p)

    def to_model(self, contamination_rate: float, likelihood_weight: float = 1.0) -> Model:
        """The contaminated posterior as a dpjax Model; records are ``{"x": record}``."""
        p = check_contamination_rate(contamination_rate)
        return Model(
            log_likelihood=lambda theta, record: self.log_k(record["x"], theta, p),
            log_prior=self.log_prior,
            dim=self.dim,
            likelihood_weight=likelihood_weight,
            name=f"{self.name}(p={p:g})",
        )


def truncated_normal_mean_contamination(
    *,
    sigma: float = 8.0,
    low: float = -270.0,
    high: float = 330.0,
    contamination_df: float = 5.0,
    contamination_location: float = 30.0,
    contamination_scale: float = 8.0,
    prior_mean: float = 40.0,
    prior_sd: float = 40.0,
) -> ContaminationModel:
    """Paper 003 §4.2 (Table 1): private mean estimation under contamination.

    f(x; theta) = N(theta, sigma^2) truncated to [low, high] (normaliser depends on theta),
    g = Student-t(df) with the given location and scale truncated to [low, high] (exact
    normaliser; the paper's printed normaliser is wrong, NOTES 003), prior N(prior_mean,
    prior_sd^2). Defaults: sigma = 8, g = t_5(30, 8), prior N(40, 40^2), and the width-600
    interval centred at theta* = 30 ([-270, 330]; the paper gives only the width).
    Cached: equal arguments return the same instance, so compiled estimators are reused.
    """
    sigma = V.positive("sigma", sigma)
    nu = V.positive("contamination_df", contamination_df)
    scale = V.positive("contamination_scale", contamination_scale)
    prior_sd = V.positive("prior_sd", prior_sd)
    if not (low < high):
        raise ValueError(f"low={low} must be < high={high}")
    return _truncated_normal_mean_contamination(
        sigma, float(low), float(high), nu, float(contamination_location), scale, float(prior_mean), prior_sd
    )


def student_t_log_normaliser(df: float, scale: float) -> float:
    """log of Gamma((df+1)/2) / (Gamma(df/2) sqrt(df pi) scale), the Student-t density's constant,
    by host math on Python floats: jnp's gammaln would be a tracer when a model is built inside
    jit (newer JAX stages every jnp call), and float() of a tracer fails."""
    return math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi) - math.log(scale)


@functools.lru_cache(maxsize=32)
def _truncated_normal_mean_contamination(sigma, low, high, nu, loc, scale, prior_mean, prior_sd) -> ContaminationModel:
    from scipy import stats  # here, not at import: scipy.stats takes ~0.4 s to import, and dpjax.models is imported by every run

    # log of the t mass on [low, high], from whichever tail avoids cancellation
    za, zb = (low - loc) / scale, (high - loc) / scale
    if za >= 0:
        t_mass = stats.t.sf(za, nu) - stats.t.sf(zb, nu)
    elif zb <= 0:
        t_mass = stats.t.cdf(zb, nu) - stats.t.cdf(za, nu)
    else:
        t_mass = 1.0 - stats.t.cdf(za, nu) - stats.t.sf(zb, nu)
    log_g_norm = student_t_log_normaliser(nu, scale) - math.log(t_mass)
    log_prior_norm = -0.5 * math.log(2 * math.pi) - math.log(prior_sd)
    log_f_const = -0.5 * math.log(2 * math.pi) - math.log(sigma)

    def log_f(x, theta):
        t = theta[0]
        z = (x - t) / sigma
        inside = (x >= low) & (x <= high)
        return jnp.where(inside, log_f_const - 0.5 * z**2, -jnp.inf)

    def log_f_normaliser(theta):
        t = theta[0]
        return log_normal_mass((low - t) / sigma, (high - t) / sigma)

    def log_g(x):
        z = (x - loc) / scale
        inside = (x >= low) & (x <= high)
        return jnp.where(inside, log_g_norm - 0.5 * (nu + 1) * jnp.log1p(z**2 / nu), -jnp.inf)

    def log_prior(theta):
        return log_prior_norm - 0.5 * ((theta[0] - prior_mean) / prior_sd) ** 2

    def sample_f(key, theta, n):
        t = jnp.asarray(theta)[0]
        z = jax.random.truncated_normal(key, (low - t) / sigma, (high - t) / sigma, (n,), dtype=jnp.result_type(float))
        return t + sigma * z

    def sample_g(key, records):
        n = records.shape[0]
        # rejection with one redraw: a t_5 draw lands outside [low, high] with probability
        # q ~ 1e-7 at the default width, so a record needs a third draw with probability q^2
        # ~ 1e-14 (about 1e-6 over a full Table 1 run); such a record is clipped to the
        # interval. Each extra round would inline another gamma sampler into the compiled code.
        k1, k2 = jax.random.split(key)
        draw = lambda k: loc + scale * jax.random.t(k, nu, (n,), dtype=jnp.result_type(float))
        x = draw(k1)
        x = jnp.where((x < low) | (x > high), draw(k2), x)
        return jnp.clip(x, low, high)

    return ContaminationModel(
        log_f=log_f,
        log_g=log_g,
        log_prior=log_prior,
        dim=1,
        sample_f=sample_f,
        sample_g=sample_g,
        record_low=float(low),
        record_high=float(high),
        name="truncated_normal_mean",
        log_f_normaliser=log_f_normaliser,
    )


def logistic_regression_contamination(
    *,
    dim: int = 5,
    prior_sd: float = 10.0,
    covariate_bound: float = 1.0,
) -> ContaminationModel:
    """Paper 003 §4.3, Bayesian logistic regression under contamination.

    A record is the vector (y, w_1, ..., w_d): response y in {0, 1} and covariates w with
    w_1 = 1 (the intercept) and w_2..w_d uniform on [-b, b] (b = ``covariate_bound``; the
    paper's Remark 14 takes ||W||_inf <= 1). f(y; theta, w) = sigmoid(theta.w)^y
    sigmoid(-theta.w)^(1-y); contamination replaces y (not w) by a Bernoulli(1/2) draw, so
    g(y) = 1/2 and k_p = (1 - p) f + p/2. Prior N(0, prior_sd^2 I) (the paper: sd 10).
    Cached: equal arguments return the same instance, so compiled estimators are reused.
    """
    dim = V.dimension("dim", dim)
    if dim < 2:
        raise ValueError(f"dim={dim} violates dim >= 2 (an intercept and at least one covariate)")
    return _logistic_regression_contamination(dim, V.positive("prior_sd", prior_sd), V.positive("covariate_bound", covariate_bound))


@functools.lru_cache(maxsize=8)
def _logistic_regression_contamination(dim: int, prior_sd: float, bound: float) -> ContaminationModel:
    log_prior_norm = dim * (-0.5 * math.log(2 * math.pi) - math.log(prior_sd))
    log_half = -math.log(2.0)

    def log_f(record, theta):
        u = jnp.dot(record[1:], theta)
        return record[0] * jax.nn.log_sigmoid(u) + (1.0 - record[0]) * jax.nn.log_sigmoid(-u)

    def log_g(record):
        return jnp.zeros((), record.dtype) + log_half

    def mixture_density(record, theta, p):
        # y in {0, 1}: f = sigmoid(s theta.w), s = 2y - 1; k_p >= p/2, and for p = 0 sigmoid(s u)
        # underflows only at s u < -745, far outside any posterior box of a bounded-covariate model
        s = 2.0 * record[0] - 1.0
        return (1.0 - p) * jax.nn.sigmoid(s * jnp.dot(record[1:], theta)) + 0.5 * p

    def log_prior(theta):
        return log_prior_norm - 0.5 * jnp.sum((theta / prior_sd) ** 2)

    def sample_f(key, theta, n):
        k_w, k_y = jax.random.split(key)
        dtype = jnp.result_type(float)
        w = jax.random.uniform(k_w, (n, dim - 1), dtype, -bound, bound)
        w = jnp.concatenate([jnp.ones((n, 1), dtype), w], axis=1)
        y = jax.random.bernoulli(k_y, jax.nn.sigmoid(w @ jnp.asarray(theta, dtype))).astype(dtype)
        return jnp.concatenate([y[:, None], w], axis=1)

    def sample_g(key, records):
        y = jax.random.bernoulli(key, 0.5, (records.shape[0],)).astype(records.dtype)
        return records.at[:, 0].set(y)

    return ContaminationModel(
        log_f=log_f,
        log_g=log_g,
        log_prior=log_prior,
        dim=dim,
        sample_f=sample_f,
        sample_g=sample_g,
        record_low=(0.0, 1.0) + (-bound,) * (dim - 1),
        record_high=(1.0, 1.0) + (bound,) * (dim - 1),
        record_levels=((0.0, 1.0), (1.0,)) + (None,) * (dim - 1),
        covariates=lambda record: record[1:],
        name=f"logistic_regression_d{dim}",
        mixture_density=mixture_density,
    )

"""Paper 003 §4.3's regressions with a real (unbounded) response: linear regression with a
Student-t(5) contamination and Cauchy regression with a wider Cauchy contamination.

A record is the vector (y, w_1, ..., w_d): a response y in R and covariates w with w_1 = 1
(the intercept) and w_2..w_d uniform on [-1, 1] (Remark 14: ||W||_inf <= 1). Contamination
replaces y (never w) by a draw from g. f depends on theta only through u = theta.w, which
:class:`~dpjax.models.contamination.ContaminationModel` is told (``covariates``), so
Algorithm 1 searches the L_inf box A_n along a single line.

**Sup/inf over an unbounded response.** Algorithm 1 needs sup_y and inf_y of log d(y, w;
theta) and of the particle mixture sum_j w_j d(y, w; theta_j). Write r = y - theta*.w (the
residual under theta*) and delta = (theta - theta*).w. The limits as |y| -> infinity are
analytic:

* linear, p > 0: (1 - p) phi(r - delta) / (p t(r)) -> 0 (Gaussian over polynomial tails), so
  d -> 1 and log d -> 0; the mixture -> 1. At p = 0, log d = r delta - delta^2/2 is unbounded
  (linear in r): the uncontaminated eps is +inf (``bounded_without_contamination=False``).
* Cauchy, any p: f and g both decay like 1/(pi y^2) (g like lambda/(pi y^2)), so
  d -> ((1 - p) + p lambda) / ((1 - p) + p lambda) = 1, log d -> 0.

So both extremes are attained at a finite y or equal the limit 0. The search runs over a
compact variable v in [-1, 1] with y = theta*.w + a tan(pi v / 2) (``response_scale`` a): the
map is a bijection from (-1, 1) onto R, uniform in y near the data (spacing ~ a pi/2 per unit
v) and stretching to infinity at the ends, and v = +-1 maps to |y| ~ 1.6e16 a, where log d
equals its limit 0 to float64 precision (tests check this against the analytic limit).
Everything in between is searched by the grid plus golden-section and projected-Newton
refinement of :mod:`dpjax.estimators.contamination`.
"""
from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validate as V
from .contamination import ContaminationModel, student_t_log_normaliser

_LOG_PI = math.log(math.pi)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _check(dim, theta_star, prior_sd, covariate_bound, response_scale, response_points):
    dim = V.dimension("dim", dim)
    if dim < 2:
        raise ValueError(f"dim={dim} violates dim >= 2 (an intercept and at least one covariate)")
    theta_star = V.finite_array("theta_star", V.real_array("theta_star", theta_star))
    if theta_star.shape != (dim,):
        raise ValueError(f"theta_star has shape {theta_star.shape}; it must have shape ({dim},) (dim = {dim})")
    if isinstance(response_points, bool) or not isinstance(response_points, int) or response_points < 5 or response_points % 2 == 0:
        raise ValueError(f"response_points={response_points!r} violates response_points an odd integer >= 5 (the grid keeps v = 0 and both ends)")
    return (dim, tuple(float(t) for t in theta_star), V.positive("prior_sd", prior_sd), V.positive("covariate_bound", covariate_bound),
            V.positive("response_scale", response_scale), response_points)


def _common(dim, theta_star, prior_sd, bound, response_scale, response_points):
    """The pieces both regressions share: prior, covariate sampler, the compactified search."""
    # a numpy constant: the model may be built outside float64 mode and used inside it
    theta_star_arr = np.asarray(theta_star, dtype=np.float64)
    log_prior_norm = dim * (-0.5 * math.log(2 * math.pi) - math.log(prior_sd))

    def log_prior(theta):
        return log_prior_norm - 0.5 * jnp.sum((theta / prior_sd) ** 2)

    def sample_w(key, n):
        dtype = jnp.result_type(float)
        w = jax.random.uniform(key, (n, dim - 1), dtype, -bound, bound)
        return jnp.concatenate([jnp.ones((n, 1), dtype), w], axis=1)

    def record_transform(v):
        # v_0 in [-1, 1] -> y = theta*.w + a tan(pi v_0 / 2); the ends give |y| ~ 1.6e16 a
        centre = jnp.dot(v[1:], theta_star_arr.astype(v.dtype))
        return v.at[0].set(centre + response_scale * jnp.tan(0.5 * math.pi * v[0]))

    space = dict(
        record_low=(-1.0, 1.0) + (-bound,) * (dim - 1),
        record_high=(1.0, 1.0) + (bound,) * (dim - 1),
        record_levels=(None, (1.0,)) + (None,) * (dim - 1),
        record_grid_points=(response_points,) + (None,) * dim,
        record_transform=record_transform,
        covariates=lambda record: record[1:],
        theta_star=theta_star,
    )
    return theta_star_arr, log_prior, sample_w, space


def linear_regression_contamination(
    *,
    theta_star,
    contamination_scale: float = 1.0,
    contamination_df: float = 5.0,
    noise_sd: float = 1.0,
    prior_sd: float = 10.0,
    covariate_bound: float = 1.0,
    response_scale: float = 4.0,
    response_points: int = 41,
) -> ContaminationModel:
    """Paper 003 §4.3 (1), Bayesian linear regression under contamination.

    f(y; theta, w) = N(y; theta.w, noise_sd^2) (paper: sd 1); g(y; w) = Student-t(df) with
    location theta*.w and scale ``contamination_scale`` s (paper: t_5 with a "dispersion
    parameter lambda" it does not give; its printed normaliser Gamma(3) / (lambda sqrt(3 pi)
    Gamma(5/2)) is not the t_5's, NOTES 003: here the exact one, Gamma(3) / (s sqrt(5 pi)
    Gamma(5/2)) for (1 + r^2/(5 s^2))^-3, i.e. lambda = 5 s^2). Default s = 1 (the noise sd):
    chosen here. Prior N(0, prior_sd^2 I). Unbounded without contamination (see the module
    docstring). ``response_scale``, ``response_points``: the compactified response search
    (y = theta*.w + a tan(pi v/2), ``response_points`` values of v on [-1, 1]).
    Cached: equal arguments return the same instance, so compiled estimators are reused.
    """
    args = _check(len(theta_star) if hasattr(theta_star, "__len__") else 1, theta_star, prior_sd, covariate_bound,
                  response_scale, response_points)
    return _linear(*args, V.positive("contamination_scale", contamination_scale), V.positive("contamination_df", contamination_df),
                   V.positive("noise_sd", noise_sd))


@functools.lru_cache(maxsize=16)
def _linear(dim, theta_star, prior_sd, bound, response_scale, response_points, scale, df, noise_sd) -> ContaminationModel:
    theta_star_arr, log_prior, sample_w, space = _common(dim, theta_star, prior_sd, bound, response_scale, response_points)
    log_f_const = -_HALF_LOG_2PI - math.log(noise_sd)
    log_g_const = student_t_log_normaliser(df, scale)

    def log_f(record, theta):
        z = (record[0] - jnp.dot(record[1:], theta)) / noise_sd
        return log_f_const - 0.5 * z * z

    def log_g(record):
        r = (record[0] - jnp.dot(record[1:], theta_star_arr.astype(record.dtype))) / scale
        return log_g_const - 0.5 * (df + 1) * jnp.log1p(r * r / df)

    def mixture_density(record, theta, p):
        # (1 - p) phi + p g: phi underflows to 0 far out, where p g (~ |r|^-(df+1), from the
        # log-space log g) carries the value; positive and normal for |r| <~ 1e50 (checked by
        # the estimator, flagged beyond)
        z = (record[0] - jnp.dot(record[1:], theta)) / noise_sd
        return (1.0 - p) * jnp.exp(log_f_const - 0.5 * z * z) + p * jnp.exp(log_g(record))

    def sample_f(key, theta, n):
        k_w, k_e = jax.random.split(key)
        w = sample_w(k_w, n)
        y = w @ jnp.asarray(theta, w.dtype) + noise_sd * jax.random.normal(k_e, (n,), w.dtype)
        return jnp.concatenate([y[:, None], w], axis=1)

    def sample_g(key, records):
        y = records[:, 1:] @ theta_star_arr.astype(records.dtype) + scale * jax.random.t(key, df, (records.shape[0],), records.dtype)
        return records.at[:, 0].set(y)

    return ContaminationModel(
        log_f=log_f, log_g=log_g, log_prior=log_prior, dim=dim, sample_f=sample_f, sample_g=sample_g,
        name=f"linear_regression_d{dim}", bounded_without_contamination=False, mixture_density=mixture_density, **space,
    )


def cauchy_regression_contamination(
    *,
    theta_star,
    contamination_scale: float = 10.0,
    prior_sd: float = 10.0,
    covariate_bound: float = 1.0,
    response_scale: float = 4.0,
    response_points: int = 41,
) -> ContaminationModel:
    """Paper 003 §4.3 (3), Bayesian Cauchy regression under contamination.

    f(y; theta, w) = 1 / (pi (1 + (y - theta.w)^2)) (standard Cauchy errors); g(y) = 1 /
    (lambda pi (1 + y^2/lambda^2)), a Cauchy centred at 0 (as printed: unlike the linear
    case, no covariate dependence) with scale lambda = ``contamination_scale``, which the
    paper does not give ("another Cauchy distribution with a different scale"); default
    lambda = 10, chosen here. Prior N(0, prior_sd^2 I). d(y; theta) is bounded with or without
    contamination (both tails ~ 1/y^2). ``response_scale``, ``response_points``: as in
    :func:`linear_regression_contamination`.
    Cached: equal arguments return the same instance, so compiled estimators are reused.
    """
    args = _check(len(theta_star) if hasattr(theta_star, "__len__") else 1, theta_star, prior_sd, covariate_bound,
                  response_scale, response_points)
    return _cauchy(*args, V.positive("contamination_scale", contamination_scale))


@functools.lru_cache(maxsize=16)
def _cauchy(dim, theta_star, prior_sd, bound, response_scale, response_points, lam) -> ContaminationModel:
    theta_star_arr, log_prior, sample_w, space = _common(dim, theta_star, prior_sd, bound, response_scale, response_points)
    log_g_const = -_LOG_PI - math.log(lam)

    def log_f(record, theta):
        r = record[0] - jnp.dot(record[1:], theta)
        return -_LOG_PI - jnp.log1p(r * r)

    def log_g(record):
        z = record[0] / lam
        return log_g_const - jnp.log1p(z * z)

    def mixture_density(record, theta, p):
        # two rational functions, no transcendental: positive and normal while r^2 and y^2 do
        # not overflow (|y| <~ 1e154; the compactified search reaches 1.6e16 response_scale)
        r = record[0] - jnp.dot(record[1:], theta)
        z = record[0] / lam
        return ((1.0 - p) / (1.0 + r * r) + (p / lam) / (1.0 + z * z)) / math.pi

    def sample_f(key, theta, n):
        k_w, k_e = jax.random.split(key)
        w = sample_w(k_w, n)
        y = w @ jnp.asarray(theta, w.dtype) + jax.random.cauchy(k_e, (n,), w.dtype)
        return jnp.concatenate([y[:, None], w], axis=1)

    def sample_g(key, records):
        return records.at[:, 0].set(lam * jax.random.cauchy(key, (records.shape[0],), records.dtype))

    return ContaminationModel(
        log_f=log_f, log_g=log_g, log_prior=log_prior, dim=dim, sample_f=sample_f, sample_g=sample_g,
        name=f"cauchy_regression_d{dim}", mixture_density=mixture_density, **space,
    )

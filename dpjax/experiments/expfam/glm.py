"""``dpjax reproduce expfam-glm``: paper 004 §A.8, Figures 3–4 — Bayesian logistic regression
released as one posterior sample, under the diffuse and concentrated mechanisms and One
Posterior Sample (OPS), test error and negative log-likelihood against eps for lambda (the
Rényi order) in {1, 10, 100}.

Data. The paper's GLM data sets are named only in its main text, which is not here. dpjax uses
real data sets that ship inside scikit-learn (no download): ``breast-cancer`` (569 records,
30 features, malignant vs benign), ``digits`` (1,797 8x8 images, even vs odd digit, 64 pixels)
and ``wine`` (178 records, 13 features, cultivar 1 vs the others). Each split is a stratified
80/20 train/test split (seeded). Features are standardised with the training split's means
and standard deviations (a preprocessing step outside the privacy analysis, as is usual; zero-
variance pixels are dropped), divided by sqrt(#features), and each record is projected onto
the ball of radius sqrt(3)/2, then a bias coordinate 1/2 is appended: every record has
|x| <= 1 (c = 1), so the logistic loss is 1-Lipschitz (L = 1). The projection is per record and
so does not touch the privacy analysis.

Mechanisms at (order lambda, eps)-RDP (:mod:`dpjax.accountants.posterior.glm`): with the base
prior N(0, I/m0),

- Diffuse: rho = min(1, sqrt(eps m0 / (2 lambda))), prior N(0, I/m0) (Lemma 1, §A.7.1);
- Concentrated: rho = 1, prior precision max(m0, 2 lambda / eps) (Lemma 1);
- OPS: rho = min(1, eps_DP / (2 R)) on the ball |w| <= R (the prior N(0, I/m0) truncated), with
  eps_DP the largest pure-DP level whose RDP at lambda is <= eps (``--ops-conversion``).

Not given by the paper, so chosen here and shown in the sensitivity panel: m0 (default 1), R
(default 5), the OPS conversion (default "bounded-range", the tightest; "pure" is the paper's
likely reading), the eps grid (default 1e-2 .. 10, two points a decade).

Sampling. Each posterior is log-concave: its MAP and Laplace covariance H^-1 come from damped
Newton; K chains per posterior start at N(MAP, 1.2^2 H^-1) (projected into the ball for OPS) and
run preconditioned MALA (:mod:`dpjax.samplers.mala`, step tuned in warm-up, then frozen); every retained
draw is one release of the mechanism, so the utility is the mean over draws and its standard
error comes from the K chain means. Convergence: split R-hat and effective sample size over
every coordinate and the test NLL (numpyro.diagnostics); the JSON flags any posterior with
R-hat > 1.05 or ESS < 100.

Ordering (the paper: "diffuse ... always better than the concentrate algorithm", both better
than OPS): per data set, lambda and eps the paired difference (same splits) with its Monte Carlo
standard error; a claim "holds" when the difference is below -2 SE, "tie" within 2 SE, and
"fails" above 2 SE. Where rho is capped at 1 both mechanisms are the same posterior up to the
prior, which the JSON marks.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

from ...accountants.posterior import glm as gp
from .._report import stage

DATASETS = ("breast-cancer", "digits", "wine")
QUICK_DATASETS = ("breast-cancer",)
ORDERS = (1.0, 10.0, 100.0)
MECHANISMS = ("diffuse", "concentrated", "ops")
BIAS = 0.5
RHAT_MAX, ESS_MIN = 1.05, 100.0


def _floats(text: str) -> list[float]:
    try:
        vals = [float(t) for t in str(text).split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of numbers") from None
    if not vals or any(not (v > 0 and math.isfinite(v)) for v in vals):
        raise argparse.ArgumentTypeError(f"{text!r} violates a non-empty list of positive finite numbers")
    return vals


def _names(text: str) -> list[str]:
    names = [t.strip() for t in str(text).split(",") if t.strip()]
    bad = [t for t in names if t not in DATASETS]
    if not names or bad:
        raise argparse.ArgumentTypeError(f"datasets={text!r}: {bad or 'empty'} not in {list(DATASETS)}")
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--datasets", type=_names, default=None, help=f"comma-separated, from {','.join(DATASETS)} (default all; --quick breast-cancer)")
    parser.add_argument("--orders", type=_floats, default=list(ORDERS), help="Rényi orders lambda (paper: 1, 10, 100)")
    parser.add_argument("--epsilons", type=_floats, default=None, help="eps grid (default 10^(-2..1) every half decade; --quick 0.01,0.1,1,10)")
    parser.add_argument("--prior-precision", type=float, default=1.0, help="base prior precision m0 (not in the paper; default 1)")
    parser.add_argument("--ops-radius", type=float, default=5.0, help="OPS parameter ball radius R (not in the paper; default 5)")
    parser.add_argument("--ops-conversion", choices=gp.OPS_CONVERSIONS, default="bounded-range", help="pure DP -> RDP for OPS (default bounded-range)")
    parser.add_argument("--splits", type=int, default=None, help="random 80/20 splits (default 3; --quick 1)")
    parser.add_argument("--chains", type=int, default=None, help="MALA chains per posterior (default 32; --quick 8)")
    parser.add_argument("--warmup", type=int, default=None, help="MALA warm-up steps (default 600; --quick 300)")
    parser.add_argument("--draws", type=int, default=None, help="retained draws per chain (default 100; --quick 40)")
    parser.add_argument("--thin", type=int, default=5, help="MALA steps between retained draws (default 5)")
    parser.add_argument("--sensitivity-datasets", type=str, default="breast-cancer",
                        help="data sets for the sensitivity runs at lambda = 10 (m0 x {0.1, 10}, R in {2, 10, 20}, OPS conversion 'pure'); 'none' to skip")


# --- data -----------------------------------------------------------------------------------
def load_classification(name: str, split: int, test_fraction: float = 0.2):
    """(x_train, y_train, x_test, y_test, info) for one seeded stratified split, preprocessed as
    in the module docstring (every record |x| <= 1, the last coordinate the bias 1/2)."""
    try:
        from sklearn import datasets
        from sklearn.model_selection import train_test_split
    except ImportError as err:  # the data sets ship with scikit-learn, the "data" extra
        raise ImportError("expfam-glm's data sets come with scikit-learn: pip install 'dpjax[data]'") from err

    if name == "breast-cancer":
        bunch = datasets.load_breast_cancer()
        x, y, task = bunch.data, bunch.target, "benign (1) vs malignant (0)"
    elif name == "digits":
        bunch = datasets.load_digits()
        x, y, task = bunch.data, (bunch.target % 2 == 0).astype(int), "even digit (1) vs odd (0)"
    elif name == "wine":
        bunch = datasets.load_wine()
        x, y, task = bunch.data, (bunch.target == 0).astype(int), "cultivar 1 (1) vs the others (0)"
    else:
        raise ValueError(f"dataset={name!r} is not one of {list(DATASETS)}")
    x_tr, x_te, y_tr, y_te = train_test_split(x.astype(np.float64), y.astype(np.float64), test_size=test_fraction,
                                              stratify=y, random_state=int(split))
    mean, sd = x_tr.mean(axis=0), x_tr.std(axis=0)
    keep = sd > 0
    feat_radius = math.sqrt(1.0 - BIAS * BIAS)

    def prep(a):
        z = (a[:, keep] - mean[keep]) / sd[keep] / math.sqrt(keep.sum())
        norm = np.linalg.norm(z, axis=1, keepdims=True)
        z = z * np.minimum(1.0, feat_radius / np.maximum(norm, 1e-300))
        return np.concatenate([z, np.full((a.shape[0], 1), BIAS)], axis=1)

    info = {"name": name, "task": task, "source": f"sklearn.datasets.load_{name.replace('-', '_')}",
            "n_train": int(x_tr.shape[0]), "n_test": int(x_te.shape[0]), "dim": int(keep.sum()) + 1,
            "positive_rate_train": float(y_tr.mean())}
    return prep(x_tr), y_tr, prep(x_te), y_te, info


# --- posteriors -----------------------------------------------------------------------------
def _tanh_over(t):
    """tanh(t)/t, smooth at 0."""
    import jax.numpy as jnp

    small = t < 1e-4
    return jnp.where(small, 1.0 - t * t / 3.0, jnp.tanh(t) / jnp.where(small, 1.0, t))


def to_ball(v, radius):
    """w = R tanh(|v|/R) v/|v| (the identity for R = inf) and log|det dw/dv|.

    The map sends R^d onto the open ball |w| < R. For a radial map w = g(s) v/s the Jacobian
    determinant is g'(s) (g(s)/s)^(d-1) = sech^2(s/R) (tanh(s/R)/(s/R))^(d-1). A posterior truncated
    to the ball (OPS) often piles up against the sphere, where MALA in w mixes badly; in v that
    boundary layer is spread over an exponentially growing range of |v| with light tails.
    """
    import jax.numpy as jnp

    finite = jnp.isfinite(radius)
    r = jnp.where(finite, radius, 1.0)
    s = jnp.sqrt(jnp.sum(v * v, axis=-1) + 1e-300)
    t = s / r
    ratio = _tanh_over(t)
    w = v * jnp.where(finite, ratio, 1.0)[..., None]
    log_cosh = t + jnp.log1p(jnp.exp(-2.0 * t)) - jnp.log(2.0)
    log_jac = jnp.where(finite, -2.0 * log_cosh + (v.shape[-1] - 1) * jnp.log(ratio), 0.0)
    return w, log_jac


def from_ball(w, radius):
    """Inverse of :func:`to_ball` for |w| < R: v = R artanh(|w|/R) w/|w|."""
    w = np.asarray(w, dtype=np.float64)
    radius = np.broadcast_to(np.asarray(radius, dtype=np.float64), w.shape[:-1])
    s = np.linalg.norm(w, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(np.isfinite(radius) & (s > 0), radius * np.arctanh(np.minimum(s / radius, 1 - 1e-15)) / s, 1.0)
    return w * scale[..., None]


def logistic_log_density(v, params, data):
    """Log density of v for the target rho * sum_i log p(y_i | x_i, w) - m |w|^2 / 2 on the ball
    |w| < R, with w = :func:`to_ball` (v, R) (plus the map's log-Jacobian); for R = inf, v = w.
    params = (rho, m, R), data = (x, y). Module level: the MALA runner compiles once per data shape."""
    import jax
    import jax.numpy as jnp

    rho, m, radius = params
    x, y = data
    w, log_jac = to_ball(v, radius)
    z = x @ w
    ll = jnp.sum(y * jax.nn.log_sigmoid(z) + (1.0 - y) * jax.nn.log_sigmoid(-z))
    return rho * ll - 0.5 * m * jnp.sum(w * w) + log_jac


def laplace(x, y, rho, m, iterations: int = 60):
    """MAP and Cholesky factor of the inverse Hessian of rho * loglik - m |w|^2/2, for each
    (rho, m) pair, by Newton's method with step halving (numpy, float64: small d).
    Returns (MAPs (P, d), Cholesky factors (P, d, d), final gradient norms (P,))."""
    from scipy.special import expit, log_expit

    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    d = x.shape[1]
    maps, chols, gnorms = [], [], []
    for r, mm in zip(np.atleast_1d(rho), np.atleast_1d(m)):
        def objective(w):
            z = x @ w
            return -(r * np.sum(y * log_expit(z) + (1 - y) * log_expit(-z))) + 0.5 * mm * w @ w

        w = np.zeros(d)
        for _ in range(iterations):
            p = expit(x @ w)
            g = -r * x.T @ (y - p) + mm * w
            h = r * (x.T * (p * (1 - p))) @ x + mm * np.eye(d)
            step = np.linalg.solve(h, g)
            f0, t = objective(w), 1.0
            while objective(w - t * step) > f0 and t > 1e-6:
                t *= 0.5
            w = w - t * step
            if np.linalg.norm(g) < 1e-12 * max(1.0, r * x.shape[0]):
                break
        p = expit(x @ w)
        g = -r * x.T @ (y - p) + mm * w
        h = r * (x.T * (p * (1 - p))) @ x + mm * np.eye(d)
        cov = np.linalg.inv(h)
        maps.append(w)
        chols.append(np.linalg.cholesky(0.5 * (cov + cov.T)))
        gnorms.append(np.linalg.norm(g))
    return np.array(maps), np.array(chols), np.array(gnorms)


def sample_posteriors(x, y, configs, *, chains, warmup, draws, thin, seed, dtype="float32"):
    """MALA draws of w for each (rho, m, R) in ``configs``: (MalaResult with draws (P, K, S, d) of w, MAPs).

    For a finite R the chains run on v with w = :func:`to_ball` (v, R); the preconditioner
    (Laplace at the unconstrained MAP) is then only a start, and the warm-up's covariance
    adaptation takes over. Diagnostics are computed on w."""
    from ...samplers.mala import mala_sample

    rho = np.array([c[0] for c in configs], dtype=np.float64)
    m = np.array([c[1] for c in configs], dtype=np.float64)
    radius = np.array([c[2] for c in configs], dtype=np.float64)
    w_map, chol, gnorm = laplace(x, y, rho, m)
    if np.any(gnorm > 1e-6 * np.maximum(1.0, rho * x.shape[0])):
        raise RuntimeError(f"Newton did not converge for some posterior (gradient norms {gnorm.max():.3g})")
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((len(configs), chains, x.shape[1]))
    init = w_map[:, None, :] + 1.2 * np.einsum("pij,pkj->pki", chol, z)
    # OPS: start inside the ball (the truncated target has density 0 outside)
    norms = np.linalg.norm(init, axis=-1, keepdims=True)
    init = np.where(norms > 0.98 * radius[:, None, None], init * (0.98 * radius[:, None, None] / norms), init)
    init_v = from_ball(init, radius[:, None])
    result = mala_sample(seed, logistic_log_density, (rho, m, radius), init_v, chol, data=(x, y),
                         num_warmup=warmup, num_samples=draws, thin=thin, initial_step=0.5, dtype=dtype)
    import jax

    with jax.enable_x64(True):
        w = np.asarray(jax.vmap(lambda v, r: to_ball(v, r)[0])(np.asarray(result.draws, np.float64), radius))
    return result._replace(draws=w), w_map


def utilities(w, x_test, y_test):
    """Test error and mean negative log-likelihood of each draw; w: (..., d)."""
    z = w @ x_test.T  # (..., n_test)
    sign = 2.0 * y_test - 1.0
    error = np.mean((z > 0) != (y_test > 0.5), axis=-1)
    nll = np.mean(np.logaddexp(0.0, -sign * z), axis=-1)
    return error, nll


def _chain_mean_se(values):
    """Mean over (K, S) draws and its standard error from the K chain means."""
    chain_means = values.mean(axis=-1)
    k = chain_means.shape[-1]
    return values.mean(axis=(-2, -1)), chain_means.std(axis=-1, ddof=1) / math.sqrt(k)


# --- the experiment -------------------------------------------------------------------------
def _configs(orders, epsilons, m0, radius, conversion):
    """{(order, eps, mechanism): (rho, m, R)} and the non-private posterior."""
    table = {}
    for lam in orders:
        for eps in epsilons:
            cal = gp.calibrate_glm(eps, lam, prior_precision=m0, ops_radius=radius, ops_conversion=conversion)
            table[(lam, eps, "diffuse")] = (cal.diffuse_temperature, m0, np.inf)
            table[(lam, eps, "concentrated")] = (1.0, cal.concentrated_prior_precision, np.inf)
            table[(lam, eps, "ops")] = (cal.ops_temperature, m0, radius)
    table[("non-private",)] = (1.0, m0, np.inf)
    return table


def _run_split(name, split, tables, args, seed):
    """Sample every posterior of every table (label -> {key: (rho, m, R)}) for one split in one
    MALA call; returns ({label: {key: metrics}}, data info)."""
    x_tr, y_tr, x_te, y_te, info = load_classification(name, split)
    unique = sorted({c for table in tables.values() for c in table.values()})
    index = {c: i for i, c in enumerate(unique)}
    with stage(f"{name} split {split}: MALA on {len(unique)} posteriors x {args._chains} chains x "
               f"{args._warmup + args._draws * args.thin} steps (n = {info['n_train']}, d = {info['dim']})"):
        result, _ = sample_posteriors(x_tr, y_tr, unique, chains=args._chains, warmup=args._warmup, draws=args._draws,
                                      thin=args.thin, seed=seed)
    from ...samplers.mala import chain_diagnostics

    error, nll = utilities(result.draws, x_te, y_te)  # (P, K, S)
    diag = chain_diagnostics(result.draws, summaries=nll[..., None])
    err_mean, err_se = _chain_mean_se(error)
    nll_mean, nll_se = _chain_mean_se(nll)
    out = {}
    for label, table in tables.items():
        per_config = {}
        for key, cfg in table.items():
            i = index[cfg]
            per_config[key] = dict(error=float(err_mean[i]), error_se=float(err_se[i]), nll=float(nll_mean[i]), nll_se=float(nll_se[i]),
                                   rhat=float(diag.max_rhat[i]), ess=float(diag.min_ess[i]), acceptance=float(result.acceptance[i]),
                                   step_size=float(result.step_size[i]))
        out[label] = per_config
    return out, info


def _aggregate(per_split):
    """Average each config over splits; MC standard error of the average."""
    keys = per_split[0].keys()
    out = {}
    s = len(per_split)
    for key in keys:
        rows = [p[key] for p in per_split]
        agg = {}
        for metric in ("error", "nll"):
            agg[metric] = float(np.mean([r[metric] for r in rows]))
            agg[metric + "_se"] = float(math.sqrt(sum(r[metric + "_se"] ** 2 for r in rows)) / s)
            agg[metric + "_per_split"] = [r[metric] for r in rows]
        agg["max_rhat"] = float(max(r["rhat"] for r in rows))
        agg["min_ess"] = float(min(r["ess"] for r in rows))
        agg["acceptance"] = float(np.mean([r["acceptance"] for r in rows]))
        out[key] = agg
    return out


def _verdict(diff: float, se: float) -> str:
    if diff < -2 * se:
        return "holds"
    if diff > 2 * se:
        return "fails"
    return "tie"


def _ordering(agg, table, orders, epsilons, per_split):
    """Paired checks diffuse <= concentrated and concentrated <= OPS (error and NLL)."""
    rows = []
    for lam in orders:
        for eps in epsilons:
            for metric in ("error", "nll"):
                for better, worse in (("diffuse", "concentrated"), ("concentrated", "ops"), ("diffuse", "ops")):
                    a, b = (lam, eps, better), (lam, eps, worse)
                    diffs = [p[a][metric] - p[b][metric] for p in per_split]
                    se = math.sqrt(sum(p[a][metric + "_se"] ** 2 + p[b][metric + "_se"] ** 2 for p in per_split)) / len(per_split)
                    diff = float(np.mean(diffs))
                    rows.append(dict(order=lam, epsilon=eps, metric=metric, claim=f"{better} <= {worse}", difference=diff, se=se,
                                     verdict=_verdict(diff, se), same_posterior=table[a] == table[b]))
    return rows


def run(args) -> tuple[dict, object]:
    quick = bool(getattr(args, "quick", False))
    names = list(args.datasets or (QUICK_DATASETS if quick else DATASETS))
    epsilons = [float(e) for e in (args.epsilons or ([0.01, 0.1, 1.0, 10.0] if quick else np.round(np.logspace(-2, 1, 7), 6)))]
    orders = list(args.orders)
    m0 = float(args.prior_precision)
    radius = float(args.ops_radius)
    if not (m0 > 0 and math.isfinite(m0)):
        raise ValueError(f"prior_precision={m0} violates prior_precision > 0 (finite)")
    if not (radius > 0 and math.isfinite(radius)):
        raise ValueError(f"ops_radius={radius} violates ops_radius > 0 (finite)")
    if any(not lam >= 1 for lam in orders):
        raise ValueError(f"orders={orders} violate order >= 1 (Lemma 1 holds for order >= 1)")
    splits = int(args.splits if args.splits is not None else (1 if quick else 3))
    if splits < 1:
        raise ValueError(f"splits={splits} violates splits >= 1")
    args._chains = int(args.chains if args.chains is not None else (8 if quick else 32))
    args._warmup = int(args.warmup if args.warmup is not None else (300 if quick else 600))
    args._draws = int(args.draws if args.draws is not None else (40 if quick else 100))
    if args._chains < 2 or args._draws < 4:
        raise ValueError(f"chains={args._chains}, draws={args._draws} violate chains >= 2 and draws >= 4 (R-hat needs them)")
    sens_names = [] if str(args.sensitivity_datasets).lower() == "none" else _names(args.sensitivity_datasets)
    sens_names = [s for s in sens_names if s in names]
    seed = int(getattr(args, "seed", 0))
    t0 = time.perf_counter()

    table = _configs(orders, epsilons, m0, radius, args.ops_conversion)
    results = {
        "settings": {
            "orders": orders, "epsilons": epsilons, "prior_precision": m0, "ops_radius": radius, "ops_conversion": args.ops_conversion,
            "splits": splits, "chains": args._chains, "warmup": args._warmup, "draws_per_chain": args._draws, "thin": args.thin,
            "feature_norm": 1.0, "lipschitz": 1.0, "bias_coordinate": BIAS, "quick": quick, "seed": seed,
            "sampler": "preconditioned MALA (dpjax.samplers.mala), Laplace preconditioner, dual-averaging warm-up",
            "convergence_rule": f"split R-hat <= {RHAT_MAX} and ESS >= {ESS_MIN} (coordinates and test NLL)",
            "not_in_paper": "data sets (the main text is not available), m0, R, the OPS conversion, the eps grid, preprocessing",
        },
        "calibration": {f"{k[0]:g}|{k[1]:g}|{k[2]}": {"temperature": v[0], "prior_precision": v[1], "radius": v[2]}
                        for k, v in table.items() if len(k) == 3},
        "datasets": {},
    }
    for name in names:
        sens = _sensitivity_tables(epsilons, m0, radius, args.ops_conversion) if name in sens_names else {}
        per_split, info = [], None
        for s in range(splits):
            tables = {"main": table} | (sens if s == 0 else {})
            res, info = _run_split(name, s, tables, args, seed + 1000 * s)
            per_split.append(res["main"])
            if s == 0 and sens:
                results.setdefault("sensitivity", {})[name] = _sensitivity_curves(res, sens, epsilons)
        agg = _aggregate(per_split)
        entry = {"info": info, "non_private": agg[("non-private",)], "curves": {}}
        for lam in orders:
            for mech in MECHANISMS:
                rows = [agg[(lam, e, mech)] for e in epsilons]
                entry["curves"][f"{lam:g}|{mech}"] = {k: [r[k] for r in rows] for k in rows[0]}
        entry["ordering"] = _ordering(agg, table, orders, epsilons, per_split)
        bad = ["|".join(f"{p:g}" if isinstance(p, float) else str(p) for p in k) for k, v in agg.items()
               if v["max_rhat"] > RHAT_MAX or v["min_ess"] < ESS_MIN]
        entry["convergence"] = {"max_rhat": max(v["max_rhat"] for v in agg.values()), "min_ess": min(v["min_ess"] for v in agg.values()),
                                "flagged": bad}
        results["datasets"][name] = entry
    results.setdefault("sensitivity", {})
    results["ordering_summary"] = _summary(results)
    results["seconds"] = time.perf_counter() - t0
    return results, _figure(results)


SENSITIVITY_ORDER = 10.0


def _sensitivity_tables(epsilons, m0, radius, conversion):
    """One unstated choice moved at a time, at lambda = 10 (run on split 0):
    m0 x 0.1 and x 10 (all three mechanisms), R in {2, 10, 20} and the 'pure' conversion (OPS)."""
    lam = SENSITIVITY_ORDER
    variants = {f"m0={v:g}": dict(m0=v, radius=radius, conversion=conversion) for v in (0.1 * m0, 10.0 * m0)}
    variants.update({f"R={v:g}": dict(m0=m0, radius=v, conversion=conversion) for v in (2.0, 10.0, 20.0) if v != radius})
    if conversion != "pure":
        variants["conversion=pure"] = dict(m0=m0, radius=radius, conversion="pure")
    tables = {}
    for label, v in variants.items():
        table = _configs([lam], epsilons, v["m0"], v["radius"], v["conversion"])
        if not label.startswith("m0="):
            table = {k: c for k, c in table.items() if len(k) == 1 or k[2] == "ops"}
        tables[label] = table
    return tables


def _sensitivity_curves(res, sens, epsilons):
    lam = SENSITIVITY_ORDER
    out = {}
    for label in sens:
        per_config = res[label]
        curves = {}
        for mech in MECHANISMS:
            if (lam, epsilons[0], mech) in per_config:
                curves[mech] = {m: [per_config[(lam, e, mech)][m] for e in epsilons] for m in ("error", "error_se", "nll", "nll_se")}
        out[label] = {"order": lam, "curves": curves, "non_private": per_config[("non-private",)]}
    return out


def _summary(results):
    out = {}
    for name, entry in results["datasets"].items():
        counts = {}
        for row in entry["ordering"]:
            key = f"{row['claim']} ({row['metric']})"
            c = counts.setdefault(key, {"holds": 0, "tie": 0, "fails": 0, "fails_at": []})
            c[row["verdict"]] += 1
            if row["verdict"] == "fails":
                c["fails_at"].append(f"lambda={row['order']:g}, eps={row['epsilon']:g}")
        out[name] = counts
    return out


def headline(results) -> list[dict]:
    rows = []
    for name, counts in results["ordering_summary"].items():
        for claim in ("diffuse <= concentrated (error)", "concentrated <= ops (error)"):
            c = counts.get(claim)
            if c is None:
                continue
            total = c["holds"] + c["tie"] + c["fails"]
            rows.append(dict(quantity=f"{name}: {claim}", paper="always", dpjax=f"holds {c['holds']}, tie {c['tie']}, fails {c['fails']} of {total}",
                             note=("fails at " + "; ".join(c["fails_at"][:4])) if c["fails"] else ""))
        npv = results["datasets"][name]["non_private"]
        rows.append(dict(quantity=f"{name}: non-private posterior test error", paper=None, dpjax=f"{npv['error']:.4f} ± {npv['error_se']:.4f}", note=""))
    return rows


def _figure(results):
    from matplotlib.figure import Figure

    names = list(results["datasets"])
    orders = results["settings"]["orders"]
    eps = np.asarray(results["settings"]["epsilons"])
    sens = results.get("sensitivity", {})
    rows = 2 * len(orders) + (1 if sens else 0)
    cols = max(len(names), 2 if sens else 1)
    fig = Figure(figsize=(4.2 * cols, 3.0 * rows))
    style = {"diffuse": ("o-", "C0"), "concentrated": ("s-", "C1"), "ops": ("^-", "C2")}
    for j, name in enumerate(names):
        entry = results["datasets"][name]
        for r, (metric, lam) in enumerate([(mt, lm) for mt in ("error", "nll") for lm in orders]):
            ax = fig.add_subplot(rows, cols, r * cols + j + 1)
            for mech, (fmt, color) in style.items():
                c = entry["curves"][f"{lam:g}|{mech}"]
                ax.errorbar(eps, c[metric], yerr=2 * np.asarray(c[metric + "_se"]), fmt=fmt, color=color, ms=3, capsize=2,
                            label={"ops": "OPS"}.get(mech, mech.capitalize()))
            ax.axhline(entry["non_private"][metric], color="k", ls=":", lw=1, label="non-private posterior")
            ax.set_xscale("log")
            if metric == "nll":
                ax.set_yscale("log")
            ax.set_title(f"{name}, lambda = {lam:g}", fontsize=9)
            ax.set_xlabel("eps (RDP at order lambda)")
            ax.set_ylabel("test error" if metric == "error" else "test NLL (per record)")
            if r == 0 and j == 0:
                ax.legend(fontsize=7)
    if sens:
        name = next(iter(sens))
        ax = fig.add_subplot(rows, cols, (rows - 1) * cols + 1)
        ax2 = fig.add_subplot(rows, cols, (rows - 1) * cols + 2)
        base = results["datasets"][name]["curves"]
        for mech, (fmt, color) in style.items():
            ax.plot(eps, base[f"10|{mech}"]["error"], fmt, color=color, ms=3, label=f"{mech} (default)")
        for k, (label, v) in enumerate(sens[name].items()):
            target = ax2 if label.startswith("R=") or label.startswith("conversion") else ax
            for mech, c in v["curves"].items():
                target.plot(eps, c["error"], ls="--", marker=".", color=style[mech][1], alpha=0.4 + 0.15 * (k % 4), label=f"{mech}, {label}")
        if "10|ops" in {f"10|{m}" for m in style}:
            ax2.plot(eps, base["10|ops"]["error"], "^-", color="C2", ms=3, label="ops (default)")
        for a, title in ((ax, "m0 (diffuse, concentrated, OPS)"), (ax2, "OPS: R and the pure->RDP conversion")):
            a.set_xscale("log")
            a.set_xlabel("eps (lambda = 10)")
            a.set_ylabel("test error")
            a.set_title(f"{name}: sensitivity to {title}", fontsize=8)
            a.legend(fontsize=5, ncol=2)
    fig.tight_layout()
    return fig

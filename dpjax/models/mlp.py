"""A one-hidden-layer neural-network classifier (an MLP) with a Gaussian prior on every weight.

    h_i = act(W1^T x_i + b1),   z_i = w2 . h_i + b2,   P(y_i = 1 | x_i, theta) = sigmoid(z_i),
    theta = (W1, b1, w2, b2) ~ N(0, I / prior_precision),

with W1 of shape (p, m) (p inputs, m hidden units), b1 (m,), w2 (m,), b2 (). The parameters are
one flat vector theta of dimension d = p m + 2 m + 1 (20-64-1: d = 1,409), in the order
W1 (row-major), b1, w2, b2 (:func:`mlp_unflatten`). Records are ``{"x": (p,), "y": ()}`` with y in
{0, 1}, as for :func:`dpjax.models.logistic_regression` (:func:`mlp_classifier_dataset`).

**Exact per-record gradient norms for clipping (the ghost-norm identity).** For a dense layer
u = W^T a + b, the gradient of a record's log-likelihood with respect to W is the outer product
a (x) delta of the layer's input a and its backpropagated signal delta = d log p / d u, and with
respect to b it is delta; so its squared norm is ||a||^2 ||delta||^2 + ||delta||^2 without forming
the outer product (Goodfellow 2015, "Efficient per-example gradient computations", arXiv:1510.01799;
used for DP-SGD clipping by Lee & Kifer 2021, "Scaling up differentially private deep learning
with fast per-example gradient clipping", PoPETs 2021(1)). Here, with r_i = y_i - sigmoid(z_i)
(d log p / d z_i):

    ||g_i|| = |r_i| sqrt(||h_i||^2 + 1 + ||w2 * act'(u_i)||^2 (||x_i||^2 + 1))
            (delta_i = r_i w2 * act'(u_i), u_i = W1^T x_i + b1),

from one forward pass over the batch (b x m numbers), never a b x d tensor. This is the model's
``record_grad_norms`` (:mod:`dpjax.models.structure`).

**The clipped batch gradient in one pass** (the model's ``weighted_grad_sum``). The same
forward pass gives everything a weighted sum of record gradients needs: with coefficients c_j
(the engine's clip factors, which may depend on the norms above) and e_j = c_j r_j,

    sum_j c_j grad_theta log p(y_j | x_j, theta) = (X^T Delta, 1^T Delta, e^T H, 1^T e),
    Delta = e (x) (w2 * act'(U))   (rows delta_j = e_j w2 * act'(u_j)),

two matrix products (X^T Delta: p x b times b x m; e^T H) after the forward pass, and no
b x d tensor: the norms and the clipped sum cost one forward pass and one backward pass,
what one unclipped reverse-mode gradient costs. The coupled engine's "batched" path uses it
(:class:`dpjax.engine.gradients.BatchedGradients`).
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from .. import _validate as V
from ..data import Dataset
from ._priors import isotropic_gaussian_log_prior
from .base import Model, shared
from .linear_regression import _check_xy_dataset
from .logistic import check_binary_labels, logistic_regression_dataset

# smooth activations (the Langevin drift needs a differentiable log-likelihood)
ACTIVATIONS = {"tanh": jnp.tanh, "softplus": jax.nn.softplus, "sigmoid": jax.nn.sigmoid}


def mlp_dim(num_inputs: int, hidden: int) -> int:
    """d = p m + 2 m + 1: the number of parameters of a p-m-1 MLP classifier."""
    return num_inputs * hidden + 2 * hidden + 1


def mlp_unflatten(theta: jax.Array, num_inputs: int, hidden: int) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """(W1 (p, m), b1 (m,), w2 (m,), b2 ()) from the flat theta (d,) (order W1, b1, w2, b2)."""
    p, m = num_inputs, hidden
    w1 = theta[: p * m].reshape(p, m)
    b1 = theta[p * m: p * m + m]
    w2 = theta[p * m + m: p * m + 2 * m]
    return w1, b1, w2, theta[p * m + 2 * m]


def mlp_classifier_dataset(x: Any, y: Any, mask: Any = None) -> Dataset:
    """Dataset for :func:`mlp_classifier`: ``x`` (n, p), ``y`` (n,) in {0, 1}."""
    return logistic_regression_dataset(x, y, mask=mask)


@shared
def mlp_classifier(prior_precision: float, num_inputs: int, hidden: int = 64, activation: str = "tanh") -> Model:
    """A p-m-1 MLP classifier (module docstring): Bernoulli likelihood with logit
    z = w2 . act(W1^T x + b1) + b2, prior N(0, I / prior_precision) on all d = p m + 2 m + 1
    weights, exact ghost-norm ``record_grad_norms`` for per-record clipping, and the clipped
    batch gradient in one forward and one backward pass (``weighted_grad_sum``).

    prior_precision > 0; num_inputs (p) >= 1; hidden (m) >= 1 (default 64); activation one of
    "tanh" (default), "softplus", "sigmoid".
    """
    alpha = V.positive("prior_precision", prior_precision)
    p = V.positive_int("num_inputs", num_inputs)
    m = V.positive_int("hidden", hidden)
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation={activation!r} is not one of {sorted(ACTIVATIONS)}")
    act = ACTIVATIONS[activation]
    dim = mlp_dim(p, m)

    def logit(theta, x):
        w1, b1, w2, b2 = mlp_unflatten(theta, p, m)
        return jnp.dot(act(x @ w1 + b1), w2) + b2

    def log_likelihood(theta, record):
        z = logit(theta, record["x"])
        y = record["y"]
        # log_sigmoid keeps every margin finite (log(sigmoid(z)) underflows for z < -745)
        return y * jax.nn.log_sigmoid(z) + (1 - y) * jax.nn.log_sigmoid(-z)

    def forward(theta, x):
        """(h, d z / d u, z) of a batch x (b, p): hidden units, output signal, logits."""
        w1, b1, w2, b2 = mlp_unflatten(theta, p, m)
        u = x @ w1 + b1  # (b, m): the hidden pre-activations
        # h and act'(u) in one forward-mode pass (elementwise: a tangent of ones gives act')
        h, slope = jax.jvp(act, (u,), (jnp.ones_like(u),))
        return h, w2 * slope, h @ w2 + b2

    def norms_of(x, y, h, signal, z):
        """(||grad_theta log p(record_j | theta)||, d log p / d z) of a batch (module docstring)."""
        # d log p / d z = y - sigmoid(z), written as y sigmoid(-z) - (1 - y) sigmoid(z) so that a
        # saturated logit keeps its relative precision (1 - sigmoid(z) would cancel)
        r = y * jax.nn.sigmoid(-z) - (1 - y) * jax.nn.sigmoid(z)
        # delta = r (w2 * act'(u)): the common factor |r| is taken out of the square root, so a
        # saturated record's tiny r is never squared into underflow
        out_sq = jnp.sum(h**2, axis=-1) + 1.0  # w2 and b2
        hidden_sq = jnp.sum(signal**2, axis=-1) * (jnp.sum(x**2, axis=-1) + 1.0)  # W1 and b1
        return jnp.abs(r) * jnp.sqrt(out_sq + hidden_sq), r

    def record_grad_norms(theta, records):
        """||grad_theta log p(record_j | theta)|| for a batch (records' x: (b, p), y: (b,))."""
        x = records["x"]
        h, signal, z = forward(theta, x)
        return norms_of(x, records["y"], h, signal, z)[0]

    def weighted_grad_sum(theta, records, weigh):
        """sum_j c_j grad_theta log p(record_j | theta) with c = weigh(norms) (module docstring):
        one forward pass, the norms, then two matrix products. The engine hands it finite
        records only (an absent record's fields are replaced before the call)."""
        x = records["x"]
        h, signal, z = forward(theta, x)
        norms, r = norms_of(x, records["y"], h, signal, z)
        e = weigh(norms) * r  # (b,): c_j d log p_j / d z_j
        delta = e[:, None] * signal  # (b, m): the backprop signals at the hidden pre-activations
        return jnp.concatenate([(x.T @ delta).reshape(-1), jnp.sum(delta, axis=0), e @ h, jnp.sum(e)[None]])

    def check(dataset):
        _check_xy_dataset(dataset, p, "mlp_classifier")
        check_binary_labels(dataset.fields["y"], "y")

    return Model(log_likelihood=log_likelihood, log_prior=isotropic_gaussian_log_prior(alpha, dim), dim=dim, name=f"mlp_classifier_{p}_{m}_1",
                 dataset_check=check, record_grad_norms=record_grad_norms, weighted_grad_sum=weighted_grad_sum)

"""Models: a per-record log-likelihood plus a log-prior (see :mod:`dpjax.models.base`)."""
from .base import Model

__all__ = ["Model"]

"""Empirical privacy-loss estimators from samples of a mechanism's output on D and D'."""

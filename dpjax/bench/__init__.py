"""Benchmarks behind ``dpjax bench NAME``: always a ratio against a baseline measured in the same run."""

"""Shared test configuration. Tests enable float64 where they compute privacy numbers."""

"""Shared test configuration. Tests enable float64 where they compute privacy numbers."""

from hypothesis import settings

# CI runs the property tests on a fixed sequence of examples (a red CI means a change broke
# something, never that a new random draw found an old flaw); `pytest --hypothesis-profile
# explore` draws fresh examples each run to look for new counterexamples.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None, print_blob=True)
settings.load_profile("ci")

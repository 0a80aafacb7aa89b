"""Run `dpjax reproduce contamination-cauchy` from a checkout: `python experiments/contamination_cauchy.py --out DIR [flags]`.

The code lives in :mod:`dpjax.experiments.contamination.cauchy` (importable: `add_arguments`, `run`).
"""
import sys

from dpjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["reproduce", "contamination-cauchy", *sys.argv[1:]]))

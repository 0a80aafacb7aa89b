"""Run `dpjax reproduce girsanov-double-well` from a checkout: `python experiments/girsanov_double_well.py --out DIR [flags]`.

The code lives in :mod:`dpjax.experiments.girsanov.double_well` (importable: `add_arguments`, `run`).
"""
import sys

from dpjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["reproduce", "girsanov-double-well", *sys.argv[1:]]))

"""Run `dpjax reproduce girsanov-quadratic` from a checkout: `python experiments/girsanov_quadratic.py --out DIR [flags]`.

The code lives in :mod:`dpjax.experiments.girsanov.quadratic` (importable: `add_arguments`, `run`).
"""
import sys

from dpjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["reproduce", "girsanov-quadratic", *sys.argv[1:]]))

"""Run `dpjax reproduce expfam-beta` from a checkout: `python experiments/expfam_beta.py --out DIR [flags]`.

The code lives in :mod:`dpjax.experiments.expfam.beta` (importable: `add_arguments`, `run`).
"""
import sys

from dpjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["reproduce", "expfam-beta", *sys.argv[1:]]))

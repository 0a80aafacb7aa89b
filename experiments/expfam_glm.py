"""Run `dpjax reproduce expfam-glm` from a checkout: `python experiments/expfam_glm.py --out DIR [flags]`.

The code lives in :mod:`dpjax.experiments.expfam.glm` (importable: `add_arguments`, `run`).
"""
import sys

from dpjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["reproduce", "expfam-glm", *sys.argv[1:]]))

"""Execute notebooks/*.ipynb and store the executed copies, outputs included, in docs/notebooks/.

The docs render these copies without executing anything (docs/conf.py: nb_execution_mode =
"off"), and tests/test_notebooks.py, which executes every notebook anyway, checks that each
copy's code is the notebook's and that its printed outputs are what the execution prints
(numbers within one unit of their last digit, as for the pages' examples). So a copy goes
stale only with a failing test, and the suite pays for each notebook once.

    python tools/docs/render_notebooks.py                 # every notebook
    python tools/docs/render_notebooks.py quickstart      # some of them, by name

Run it after changing a notebook, or when test_notebooks says a copy's outputs drifted.
"""
from __future__ import annotations

import json
import pathlib
import sys
import tempfile
import time

import nbclient
import nbformat

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCE = ROOT / "notebooks"
RENDERED = ROOT / "docs" / "notebooks"
KERNEL_NAME = "dpjax-render"
CELL_TIMEOUT_S = 600


def _kernel(jupyter_dir: pathlib.Path) -> str:
    """A kernelspec that runs this interpreter, so the notebooks import this dpjax."""
    spec_dir = jupyter_dir / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": "dpjax", "language": "python"}
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    return KERNEL_NAME


def stored_form(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """What the docs keep of an executed notebook: no stderr (warnings, progress bars), no
    timestamps, the kernelspec of a plain Python 3 kernel."""
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if not (o.output_type == "stream" and o.name == "stderr")]
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    return nb


def render(path: pathlib.Path, kernel: str) -> float:
    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as workdir:
        t0 = time.perf_counter()
        nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name=kernel, resources={"metadata": {"path": workdir}}).execute()
        seconds = time.perf_counter() - t0
    RENDERED.mkdir(parents=True, exist_ok=True)
    nbformat.write(stored_form(nb), RENDERED / path.name)
    return seconds


def main(names: list[str]) -> int:
    import os

    paths = sorted(SOURCE.glob("*.ipynb"))
    if names:
        paths = [p for p in paths if p.stem in names]
        unknown = set(names) - {p.stem for p in paths}
        if unknown:
            print(f"no notebook named {sorted(unknown)} in {SOURCE}", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory() as jupyter:
        os.environ["JUPYTER_PATH"] = jupyter
        os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
        kernel = _kernel(pathlib.Path(jupyter))
        for path in paths:
            print(f"{path.name}: executed in {render(path, kernel):.1f} s -> {(RENDERED / path.name).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Execute every notebook in notebooks/ and fail on any cell error (issue 5).

Each notebook runs in a fresh kernel whose interpreter is the one running pytest
(``sys.executable``), so the notebooks see the same installed dpjax as the tests, whatever
kernelspecs the machine has. The notebooks are stored without outputs; nothing is written back.
"""
from __future__ import annotations

import json
import pathlib
import sys
import time

import re

import nbclient  # with nbmake (the "test" extra), as are nbformat and ipykernel
import nbformat
import pytest

import doc_examples

NOTEBOOK_DIR = pathlib.Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
# executed copies with outputs, which the docs render (tools/docs/render_notebooks.py writes them)
RENDERED_DIR = NOTEBOOK_DIR.parent / "docs" / "notebooks"
RERENDER = "rerun `python tools/docs/render_notebooks.py {}` and commit docs/notebooks/{}.ipynb"
CELL_TIMEOUT_S = 240  # per cell; a whole notebook takes 15-40 s on a loaded 2-core CPU


KERNEL_NAME = "dpjax-notebook-test"


def _kernel_for_this_interpreter(root: pathlib.Path, monkeypatch) -> str:
    """A kernelspec whose argv runs ipykernel with ``sys.executable``, found first on JUPYTER_PATH.

    Whatever "python3" kernel the machine has (another env, another Python), the notebooks
    then import the dpjax that the tests import."""
    spec_dir = root / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": "dpjax tests", "language": "python"}
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    monkeypatch.setenv("JUPYTER_PATH", str(root))
    return KERNEL_NAME


def test_notebooks_exist():
    names = {p.stem for p in NOTEBOOKS}
    assert "quickstart" in names, f"notebooks/quickstart.ipynb is missing (found {sorted(names)})"


def test_kernel_runs_this_interpreter(tmp_path: pathlib.Path, monkeypatch):
    kernel = _kernel_for_this_interpreter(tmp_path / "jupyter", monkeypatch)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import sys, dpjax; print(sys.executable); print(dpjax.__file__)")])
    nbclient.NotebookClient(nb, timeout=60, kernel_name=kernel).execute()
    executable, dpjax_file = nb.cells[0].outputs[0]["text"].split()
    import dpjax

    assert pathlib.Path(executable).resolve() == pathlib.Path(sys.executable).resolve()
    assert pathlib.Path(dpjax_file).resolve() == pathlib.Path(dpjax.__file__).resolve()


def test_notebooks_are_stored_without_outputs():
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                assert not cell.outputs and cell.execution_count is None, f"{path.name} cell {i} has stored outputs; clear them"


def test_notebooks_do_not_hide_warnings():
    """A notebook that filters warnings hides what the library says to its reader (the quickstart
    once hid a RuntimeWarning of the library's own audit figure)."""
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                assert "filterwarnings" not in cell.source and "simplefilter" not in cell.source, f"{path.name} cell {i} silences warnings"


def _code(nb) -> list[str]:
    return [cell.source for cell in nb.cells if cell.cell_type == "code"]


def _printed(cell) -> str:
    """The text a code cell showed: stdout and plain-text results (no stderr, no figures'
    pixels); memory addresses, which change from run to run, are blanked."""
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream" and output.get("name") == "stdout":
            parts.append(output.get("text", ""))
        elif output.get("output_type") in ("execute_result", "display_data"):
            parts.append(output.get("data", {}).get("text/plain", "") + "\n")
    # wall times, e.g. "(55.7 s)", differ from run to run: blanked like addresses
    text = re.sub(r"\(\d+(?:\.\d+)? s\)", "(_ s)", "".join(parts))
    return re.sub(r"0x[0-9a-fA-F]+", "0x_", text)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_docs_render_a_copy_with_the_same_code(path: pathlib.Path):
    copy = RENDERED_DIR / path.name
    assert copy.exists(), f"docs/notebooks/{path.name} is missing: " + RERENDER.format(path.stem, path.stem)
    assert _code(nbformat.read(copy, as_version=4)) == _code(nbformat.read(path, as_version=4)), \
        f"docs/notebooks/{path.name} holds other code than notebooks/{path.name}: " + RERENDER.format(path.stem, path.stem)


@pytest.mark.slow  # end to end: 15-40 s each on a loaded 2-core CPU
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
@pytest.mark.usefixtures("xla_as_users_run_it")  # printed as a reader gets it (tests/conftest.py)
def test_notebook_executes(path: pathlib.Path, tmp_path: pathlib.Path, monkeypatch):
    kernel = _kernel_for_this_interpreter(tmp_path / "jupyter", monkeypatch)
    workdir = tmp_path / "run"
    workdir.mkdir()
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name=kernel, resources={"metadata": {"path": str(workdir)}})
    t0 = time.perf_counter()
    client.execute()  # raises CellExecutionError naming the cell on any error
    seconds = time.perf_counter() - t0
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{path.name}: {errors[0].get('ename')}: {errors[0].get('evalue')}"
    # a numerical warning in a notebook is the library's to fix, not the reader's to see
    numeric = [o["text"] for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
               if o.get("name") == "stderr" and "RuntimeWarning" in o.get("text", "")]
    assert not numeric, f"{path.name} prints {numeric[0][:300]}"
    print(f"{path.name}: executed in {seconds:.1f} s")
    # the docs' rendered copy shows what this execution printed (numbers within one unit of
    # their last shown digit, as for the pages' examples)
    copy = nbformat.read(RENDERED_DIR / path.name, as_version=4)
    shown = [c for c in copy.cells if c.cell_type == "code"]
    ran = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.source for c in shown] == [c.source for c in ran], RERENDER.format(path.stem, path.stem)
    drifted = [k for k, (a, b) in enumerate(zip(shown, ran)) if not doc_examples.matches(_printed(a), _printed(b))]
    assert not drifted, (f"{path.name}: code cells {drifted} print other text than docs/notebooks/{path.name} shows "
                         f"(first: shown {_printed(shown[drifted[0]])!r}, printed {_printed(ran[drifted[0]])!r}); "
                         + RERENDER.format(path.stem, path.stem))

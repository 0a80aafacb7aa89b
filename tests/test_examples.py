"""Every ```python block of README.md and of every docs/**/*.md page runs, and prints what the
page shows (tests/doc_examples.py has the convention; docs/contributing.md explains it)."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

import doc_examples as ex

HERE = pathlib.Path(__file__).resolve().parent


def _page_params():
    """Every page with a python block to run (README.md and docs/**/*.md, found anew each run)."""
    params = []
    for path in ex.pages():
        text = path.read_text(encoding="utf-8")
        if not any(b.language == "python" and not b.skip for b in ex.parse_blocks(text)):
            continue
        marks = [pytest.mark.slow] if ex.SLOW_MARK in text else []
        params.append(pytest.param(path, id=str(path.relative_to(ex.ROOT)), marks=marks))
    return params


@pytest.mark.parametrize("page", _page_params())
@pytest.mark.usefixtures("xla_as_users_run_it")  # printed as a reader gets it (tests/conftest.py)
def test_page_prints_what_it_shows(page: pathlib.Path, tmp_path: pathlib.Path):
    # a fresh interpreter per page: a page's global settings (jax.config, warnings filters)
    # cannot leak into other tests, and the page runs as a reader would run it
    env = dict(os.environ, MPLBACKEND="Agg")
    done = subprocess.run([sys.executable, str(HERE / "doc_examples.py"), "--check", str(page)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{page.relative_to(ex.ROOT)}:\n{done.stderr[-20000:]}"


# ----------------------------------------------------------------------------------------
# the comparison itself


def test_the_readme_and_the_guide_are_among_the_pages():
    ids = {p.id for p in _page_params()}
    assert {"README.md", "docs/guide/getting_started.md", "docs/guide/accounting.md"} <= ids, ids


def test_a_stale_number_fails_and_last_digit_rounding_passes():
    assert ex.matches("eps = 0.4435", "eps = 0.4435\n")
    assert ex.matches("eps = 0.4435", "eps = 0.4436")  # one unit of the last shown digit
    assert ex.matches("eps = 0.4435", "eps = 0.4434")
    assert not ex.matches("eps = 0.4435", "eps = 0.5522")  # the README's stale tour number
    assert not ex.matches("eps = 0.4435", "eps = 0.4437")
    assert ex.matches("delta(1) = 5.48e-10", "delta(1) = 5.49e-10")
    assert not ex.matches("delta(1) = 5.48e-10", "delta(1) = 5.50e-10")
    assert not ex.matches("delta(1) = 5.48e-10", "delta(1) = 5.48e-11")
    assert ex.matches("20,000 pairs", "20,001 pairs") and not ex.matches("20,000 pairs", "20,002 pairs")
    assert ex.matches("[2.5842 1.5131 1.0223]", "[2.5842 1.5131 1.0224]")


def test_words_must_agree_and_alignment_does_not_matter():
    assert ex.matches("a   b  0.5", "a b 0.5")  # column alignment moves with number widths
    assert not ex.matches("a b 0.5", "ab 0.5")
    assert not ex.matches("at least 0.5", "at most 0.5")
    assert not ex.matches("0.5", "0.5 extra")
    assert not ex.matches("eps inf", "eps 7.1")  # inf is a word, never a number within a digit
    assert ex.matches("float64 x64 eps1", "float64 x64 eps1")  # digits inside names are words
    assert not ex.matches("float64", "float32")


def test_an_ellipsis_line_stands_for_any_lines():
    printed = "head 1\nmiddle 2\nmiddle 3\ntail 4\n"
    assert ex.matches("head 1\n...\ntail 4\n", printed)
    assert ex.matches("head 1\n  ...\n", printed)
    assert not ex.matches("head 1\n...\ntail 6\n", printed)
    assert not ex.matches("head 3\n...\n", printed)


def test_blocks_pair_with_the_text_block_directly_after_them():
    page = "\n".join([
        "```python", "print(1)", "```", "", "```text", "1", "```",
        "```python", "print(2)", "```", "some prose", "```text", "2", "```",
        "<!-- example: skip -->", "```python", "undefined_name", "```",
        "````{note}", "```python", "print(3)", "```", "```text", "3", "```", "````",
        "```console", "$ dpjax demo", "```",
    ])
    blocks = [b for b in ex.parse_blocks(page) if b.language == "python"]
    assert [b.code for b in blocks] == ["print(1)\n", "print(2)\n", "undefined_name\n", "print(3)\n"]
    assert blocks[0].followed_by.code == "1\n"
    assert blocks[1].followed_by is None  # prose in between: not its output
    assert blocks[2].skip and not blocks[0].skip
    assert blocks[3].followed_by.code == "3\n"  # inside a MyST directive
    runs, namespace = ex.run_blocks(ex.parse_blocks(page), "page.md", pathlib.Path.cwd())
    assert [r.printed for r in runs] == ["1\n", "2\n", "3\n"]
    found = ex.problems(runs, "page.md")
    assert len(found) == 1 and "page.md:8" in found[0] and "no ```text block" in found[0]


def test_a_failing_block_is_reported_with_its_line():
    page = "```python\nx = 1\n```\n\n```python\nprint(x / 0)\n```\n\n```text\n1\n```\n"
    runs, _ = ex.run_blocks(ex.parse_blocks(page), "page.md", pathlib.Path.cwd())
    found = ex.problems(runs, "page.md")
    assert len(found) == 1 and "page.md:5" in found[0] and "ZeroDivisionError" in found[0]


def test_write_keeps_head_and_tail_of_an_ellipsis():
    assert ex._written("a 1\n...\nz 9\n", "a 2\nb\nc\nz 8\n") == "a 2\n...\nz 8\n"
    assert ex._written("old\n", "new 1\nnew 2\n") == "new 1\nnew 2\n"


def test_a_block_inside_a_list_item_runs_too():
    page = "- an item:\n\n    ```python\n    print(2 + 2)\n    ```\n\n    ```text\n    4\n    ```\n"
    blocks = ex.parse_blocks(page)
    assert blocks[0].code == "print(2 + 2)\n" and blocks[0].followed_by.code == "4\n"
    runs, _ = ex.run_blocks(blocks, "page.md", pathlib.Path.cwd())
    assert not ex.problems(runs, "page.md")

"""Run the ```python blocks of a Markdown page and compare what they print with the page.

The convention (docs/contributing.md, "Examples are executed"):

- every ```python block of a page runs, in page order, in one namespace, in a temporary
  working directory;
- a block that prints is followed directly (only blank lines between) by a ```text block
  holding its output; a block that prints nothing has no such block;
- the comparison: the same words, and each number equal to the shown one within one unit of
  the shown number's last digit (0.4435 accepts 0.4434 .. 0.4436); a line holding only
  ``...`` stands for any number of output lines;
- ``<!-- example: skip -->`` on the line before a ```python block: the block is not run
  (pseudo-code, or a command that needs a GPU or a cluster); ``<!-- example: slow -->``
  anywhere on a page: the page's test is marked slow (CI still runs it). Shell sessions are
  ```console / ```bash blocks and are never run.

Shown outputs are written by running the code, never by hand:
``python tests/doc_examples.py --write README.md docs/guide/accounting.md``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import pathlib
import re
import sys
import tempfile
import traceback
from typing import Optional

ROOT = pathlib.Path(__file__).resolve().parents[1]
SKIP_MARK = "<!-- example: skip -->"
SLOW_MARK = "<!-- example: slow -->"
ELLIPSIS = "..."
_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")  # indented too: fences in list items


@dataclasses.dataclass
class Block:
    """One fenced block: its info string's first word, its text, and where it starts."""

    language: str
    code: str
    line: int  # 1-based line of the opening fence
    end_line: int  # 1-based line of the closing fence
    skip: bool = False
    followed_by: Optional["Block"] = None  # the ```text block directly after a python block


def pages() -> list[pathlib.Path]:
    """README.md and every Markdown page under docs/ (pages that land later included)."""
    docs = sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts)
    return [ROOT / "README.md"] + docs


def parse_blocks(text: str) -> list[Block]:
    """Every fenced block of ``text`` in order; MyST directives ({note} ...) are searched inside."""
    return _parse(text.splitlines(), 0)


def _parse(lines: list[str], offset: int) -> list[Block]:
    blocks: list[Block] = []
    i = 0
    last_block_end = None  # index of the closing fence of the previous block at this level
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, indent, info = match["fence"], len(match["indent"]), match["info"].strip()
        j = i + 1
        while j < len(lines):
            close = _FENCE.match(lines[j])
            if close and close["fence"][0] == fence[0] and len(close["fence"]) >= len(fence) and not close["info"].strip():
                break
            j += 1
        body = [line[indent:] if line[:indent].strip() == "" else line for line in lines[i + 1 : j]]
        language = info.split()[0] if info else ""
        if language.startswith("{"):  # a MyST directive: its content may hold code blocks
            blocks.extend(_parse(body, offset + i + 1))
        else:
            previous = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
            block = Block(language, "\n".join(body) + ("\n" if body else ""), offset + i + 1, offset + j + 1, previous == SKIP_MARK)
            between = lines[last_block_end + 1 : i] if last_block_end is not None else None
            if blocks and blocks[-1].language == "python" and language == "text" and between is not None and not any(s.strip() for s in between):
                blocks[-1].followed_by = block
            blocks.append(block)
        last_block_end = j
        i = j + 1
    return blocks


# ----------------------------------------------------------------------------------------
# comparing printed text

_NUMBER = re.compile(r"(?<![A-Za-z_\d.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\d])")


@dataclasses.dataclass(frozen=True)
class _Token:
    text: str
    number: Optional[float] = None  # set for numbers
    unit: float = 0.0  # one unit of the last printed digit


def _number_token(shown: str) -> _Token:
    mantissa, _, exponent = shown.replace(",", "").lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    unit = 10.0 ** (int(exponent or 0) - decimals)
    return _Token(shown, float(shown.replace(",", "")), unit)


def tokens(text: str) -> list:
    """Words and numbers of ``text``; whitespace-separated chunks are kept apart by None.
    A line holding only ``...`` becomes the ELLIPSIS marker."""
    out: list = []
    for line in text.splitlines():
        if line.strip() == ELLIPSIS:
            out.append(ELLIPSIS)
            continue
        for chunk in line.split():
            position = 0
            for match in _NUMBER.finditer(chunk):
                if match.start() > position:
                    out.append(_Token(chunk[position : match.start()]))
                out.append(_number_token(match.group()))
                position = match.end()
            if position < len(chunk):
                out.append(_Token(chunk[position:]))
            out.append(None)
    return out


def _same(shown: _Token, printed: _Token) -> bool:
    if shown.number is None or printed.number is None:
        return shown.text == printed.text
    # one unit of the shown number's last digit; the 1e-9 absorbs the decimal -> binary of both
    return abs(printed.number - shown.number) <= shown.unit * (1 + 1e-9) + 1e-12 * abs(shown.number)


def matches(shown: str, printed: str) -> bool:
    """True when ``printed`` is what ``shown`` shows (same words, numbers within a last digit)."""
    expected, actual = tokens(shown), tokens(printed)
    # reachable[j]: expected[:i] can match actual[:j]
    reachable = [True] + [False] * len(actual)
    for token in expected:
        if token == ELLIPSIS:
            first = next((j for j, ok in enumerate(reachable) if ok), None)
            reachable = [first is not None and j >= first for j in range(len(actual) + 1)]
            continue
        step = [False] * (len(actual) + 1)
        for j in range(len(actual)):
            if reachable[j] and (token is None and actual[j] is None or token is not None and actual[j] is not None and _same(token, actual[j])):
                step[j + 1] = True
        reachable = step
    return reachable[-1]


def first_difference(shown: str, printed: str) -> str:
    """A short line-level hint for a failure message."""
    shown_lines = [line for line in shown.splitlines()]
    printed_lines = [line for line in printed.splitlines()]
    for k, (a, b) in enumerate(zip(shown_lines, printed_lines)):
        if a.strip() == ELLIPSIS:
            return "(after an ellipsis line: compare the full texts below)"
        if not matches(a, b):
            return f"line {k + 1}:\n  shown:   {a.strip()}\n  printed: {b.strip()}"
    return f"shown {len(shown_lines)} lines, printed {len(printed_lines)}"


# ----------------------------------------------------------------------------------------
# running a page


@dataclasses.dataclass
class BlockRun:
    block: Block
    printed: str
    error: Optional[str] = None  # the traceback, if the block raised


def run_blocks(blocks: list[Block], source: str, workdir: pathlib.Path) -> tuple[list[BlockRun], dict]:
    """Execute the page's python blocks in order in one namespace inside ``workdir``."""
    namespace: dict = {"__name__": "__doc_example__"}
    runs: list[BlockRun] = []
    previous_dir = os.getcwd()
    os.chdir(workdir)
    try:
        for block in blocks:
            if block.language != "python" or block.skip:
                continue
            buffer = io.StringIO()
            try:
                with contextlib.redirect_stdout(buffer):
                    exec(compile(block.code, f"{source}:{block.line}", "exec"), namespace)
            except Exception:  # reported with the page and line, the rest of the page is not run
                runs.append(BlockRun(block, buffer.getvalue(), traceback.format_exc()))
                break
            runs.append(BlockRun(block, buffer.getvalue()))
    finally:
        os.chdir(previous_dir)
    return runs, namespace


def problems(runs: list[BlockRun], source: str) -> list[str]:
    """What differs between the page and what its blocks printed, one message per block."""
    found = []
    for run in runs:
        where = f"{source}:{run.block.line}"
        if run.error:
            found.append(f"{where}: the block raised\n{run.error}")
            continue
        shown = run.block.followed_by
        if shown is None:
            if run.printed.strip():
                found.append(f"{where}: the block prints but no ```text block follows it directly; it printed:\n{run.printed}")
            continue
        if not run.printed.strip():
            found.append(f"{where}: the ```text block after it shows output, but the block printed nothing")
        elif not matches(shown.code, run.printed):
            found.append(f"{where}: printed output differs from the ```text block at line {shown.line} "
                         f"({first_difference(shown.code, run.printed)})\n--- shown\n{shown.code}--- printed\n{run.printed}")
    return found


def run_page(path: pathlib.Path, workdir: Optional[pathlib.Path] = None) -> tuple[list[BlockRun], dict]:
    text = path.read_text(encoding="utf-8")
    if workdir is None:
        with tempfile.TemporaryDirectory() as tmp:
            return run_blocks(parse_blocks(text), _relative(path), pathlib.Path(tmp))
    return run_blocks(parse_blocks(text), _relative(path), workdir)


def _relative(path: pathlib.Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _written(shown: str, printed: str) -> str:
    """The new ```text content: the printed output, keeping a head ... tail ellipsis if shown."""
    lines = shown.splitlines()
    cuts = [k for k, line in enumerate(lines) if line.strip() == ELLIPSIS]
    printed_lines = printed.rstrip("\n").splitlines()
    if not cuts:
        return "\n".join(printed_lines) + "\n"
    if len(cuts) > 1:
        raise SystemExit("--write keeps one '...' line (head ... tail); edit the block to have at most one")
    head, tail = cuts[0], len(lines) - cuts[0] - 1
    if head + tail >= len(printed_lines):
        return "\n".join(printed_lines) + "\n"
    kept = printed_lines[:head] + [lines[cuts[0]]] + (printed_lines[-tail:] if tail else [])
    return "\n".join(kept) + "\n"


def write_outputs(path: pathlib.Path) -> int:
    """Run ``path``'s blocks and rewrite each ```text block with what its python block printed."""
    text = path.read_text(encoding="utf-8")
    runs, _ = run_page(path)
    lines = text.splitlines(keepends=True)
    changed = 0
    for run in reversed(runs):  # from the end, so earlier line numbers stay valid
        if run.error:
            raise SystemExit(f"{_relative(path)}:{run.block.line}: the block raised\n{run.error}")
        shown = run.block.followed_by
        if shown is None or matches(shown.code, run.printed):
            continue
        indent = re.match(r" *", lines[shown.line - 1]).group()
        new = [indent + line if line.strip() else line for line in _written(shown.code, run.printed).splitlines(keepends=True)]
        lines[shown.line : shown.end_line - 1] = new
        changed += 1
    path.write_text("".join(lines), encoding="utf-8")
    for message in problems(runs, _relative(path)):  # what rewriting cannot fix: a missing ```text block
        if "differs from" not in message:
            print(message, file=sys.stderr)
    return changed


def check(path: pathlib.Path) -> list[str]:
    """Run ``path``'s blocks (in a fresh temporary folder) and return what differs."""
    return problems(run_page(path)[0], _relative(path))


def _main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("--write", "--check"):
        print("usage: python tests/doc_examples.py --check|--write PAGE.md [PAGE.md ...]", file=sys.stderr)
        return 2
    import matplotlib

    matplotlib.use("Agg")  # examples save figures; nothing is shown
    failed = 0
    for name in argv[1:]:
        if argv[0] == "--write":
            print(f"{name}: {write_outputs(pathlib.Path(name))} text block(s) rewritten")
            continue
        found = check(pathlib.Path(name))
        failed += bool(found)
        for message in found:
            print(message, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))

"""What ``dpjax reproduce NAME`` tells its user while and after a result runs.

Two conventions every module under :mod:`dpjax.experiments` follows:

* **Progress.** Long steps are wrapped in :func:`stage`, which writes one line to stderr when
  the step starts and one with its wall time when it ends, so a run of minutes is never silent.
* **Headline.** A module may define ``headline(results) -> list[dict]``: the few numbers a
  reader wants first, one dict per row with keys ``quantity`` (what), ``paper`` (the printed
  value, or ``None`` where the paper prints none), ``dpjax`` (dpjax's value) and optionally
  ``note`` (where and why they differ). The CLI prints them as a table after writing the files.
"""
from __future__ import annotations

import contextlib
import sys
import time
from typing import Iterator


@contextlib.contextmanager
def stage(message: str, *, stream=None) -> Iterator[None]:
    """Announce a long step on stderr, then report how long it took."""
    stream = sys.stderr if stream is None else stream
    print(f"... {message}", file=stream, flush=True)
    start = time.perf_counter()
    yield
    print(f"    done in {time.perf_counter() - start:.1f} s", file=stream, flush=True)


HEADLINE_KEYS = ("quantity", "paper", "dpjax")


def headline_table(rows, title: str = "", width: int = 100) -> str:
    """The rows of a module's ``headline(results)`` as a text table in ``width`` columns.

    Numbers print with four significant digits, ``None`` in the paper column as "-" (the paper
    prints no value); strings are kept as given (a row may say "1.6 (target)"). The note, where
    a row has one, goes on the lines below the row, indented, so the table stays narrow.
    """
    from .. import _display

    rows = list(rows)
    for i, row in enumerate(rows):
        missing = [k for k in HEADLINE_KEYS if k not in row]
        if missing:
            raise ValueError(f"headline row {i} lacks the keys {missing}; each row needs {HEADLINE_KEYS} (and optionally 'note')")

    def cell(value):
        if value is None:
            return "-"
        if isinstance(value, str):
            return value
        if isinstance(value, (list, tuple)):
            return ", ".join(cell(v) for v in value)
        return _display.fmt(value)

    body = [[str(r["quantity"]), cell(r["paper"]), cell(r["dpjax"])] for r in rows]
    w_paper = max([len("paper")] + [len(b[1]) for b in body])
    w_dpjax = max([len("dpjax")] + [len(b[2]) for b in body])
    w_quantity = max(12, min(max([len("quantity")] + [len(b[0]) for b in body]), width - w_paper - w_dpjax - 4))
    out = [title] if title else []
    out.append(f"{'quantity':<{w_quantity}}  {'paper':>{w_paper}}  {'dpjax':>{w_dpjax}}")
    out.append("-" * min(width, w_quantity + w_paper + w_dpjax + 4))
    for (quantity, paper, value), row in zip(body, rows):
        quantity = _display.truncate(quantity, w_quantity)
        out.append(f"{quantity:<{w_quantity}}  {paper:>{w_paper}}  {value:>{w_dpjax}}".rstrip())
        if row.get("note"):
            out.append(_display.wrap_text(str(row["note"]), width, indent="      "))
    return "\n".join(out)

"""Render dpjax's docstrings as their authors wrote them: plain text for ``help()`` first.

dpjax's docstrings are read in a terminal as often as on a web page, so they are written as
plain text with a little reStructuredText (``literals``, :func:`roles`, ``::`` blocks,
bullets). Two habits of that plain text are not reStructuredText, and this extension reads
them as meant, before autodoc hands the docstring to docutils (after napoleon):

1. ASCII mathematics: ``|x|`` is an absolute value or a norm, ``P || Q`` a divergence. A
   bare ``|`` is escaped (reStructuredText would read ``|x|`` as a substitution).
2. Entries with hanging indents, the way arguments and result fields are described::

       seed: integer seed; pair k's randomness is a function of (seed, k, step) only.
       record_steps: step counts t in [0, num_steps] at which to record (default:
           [num_steps]); t = 0 records the shared start.

   A run of such ``name: text`` lines becomes a bullet list, each entry's continuation
   joined to it. Any other line indented deeper than the paragraph it follows (a displayed
   formula) becomes an indented block, with the blank lines reStructuredText wants around it.

Everything else (literal blocks after ``::``, directives, field lists, doctest blocks) is left
as written, and the build runs with warnings as errors: a docstring this does not cover
fails the build and is fixed in the docstring.
"""
from __future__ import annotations

import re

_ENTRY = re.compile(r"^(?P<name>(?:``[^`]+``|\*{0,2}[A-Za-z_][\w.]*(?:\(\))?\*{0,2})(?:, ?(?:``[^`]+``|[A-Za-z_][\w.]*))*): (?P<text>\S.*)$")
_BULLET = re.compile(r"^(?P<mark>[-*+] |\d+[.)] |#[.)] |\(\d+\) )")
_FIELD = re.compile(r"^:[^:]+:")
_INLINE_LITERAL = re.compile(r"(``.+?``|:[\w:+-]+:`[^`]*`|`[^`]+`_{0,2})")
_NAPOLEON_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Raises|Yields|Attributes|Examples?|Notes?|References|See Also|Warns?|Warnings?):\s*$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _escape_bars(line: str) -> str:
    parts = _INLINE_LITERAL.split(line)
    return "".join(part if k % 2 else re.sub(r"(?<!\\)\|", r"\\|", part) for k, part in enumerate(parts))


def _content_indent(line: str) -> int:
    """Where a continuation of ``line`` may start without opening a new block."""
    stripped = line.lstrip(" ")
    bullet = _BULLET.match(stripped)
    return _indent(line) + (len(bullet["mark"]) if bullet else 0)


def _is_entry(line: str, base: int) -> bool:
    return _indent(line) == base and bool(_ENTRY.match(line[base:])) and not _NAPOLEON_SECTION.match(line[base:])


def _entry_runs(lines: list[str]) -> list[str]:
    """Turn runs of ``name: text`` entries with hanging indents into bullet lists."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        base = _indent(line)
        starts_paragraph = not out or not out[-1].strip() or _indent(out[-1]) != base or _is_entry(out[-1], base)
        if line.strip() and _is_entry(line, base) and starts_paragraph:
            # collect the run: entries at this indent, each with deeper continuation lines
            entries: list[list[str]] = []
            j = i
            while j < len(lines) and lines[j].strip() and _indent(lines[j]) == base and _is_entry(lines[j], base):
                entry = [lines[j][base:]]
                j += 1
                while j < len(lines) and lines[j].strip() and _indent(lines[j]) > base:
                    entry.append(lines[j].strip())
                    j += 1
                entries.append(entry)
            if len(entries) >= 2 or len(entries[0]) > 1:
                if out and out[-1].strip():
                    out.append("")
                for entry in entries:
                    out.append(" " * base + "- " + entry[0])
                    out.extend(" " * (base + 2) + text for text in entry[1:])
                if j < len(lines) and lines[j].strip():
                    out.append("")
                i = j
                continue
        out.append(line)
        i += 1
    return out


def _hanging_blocks(lines: list[str]) -> list[str]:
    """Give a deeper-indented run after a paragraph line the blank lines around it."""
    out: list[str] = []
    literal_indent = None  # inside a literal block / directive: leave alone until it ends
    paragraph_indent = None  # content indent of the paragraph line above, if any
    quote_from = None  # indent of the paragraph the open indented block interrupted
    list_indent = None  # marker indent of the list item the lines above belong to
    for line in lines:
        if not line.strip():
            out.append(line)
            paragraph_indent = None
            continue
        indent = _indent(line)
        if literal_indent is not None:
            if indent > literal_indent:
                out.append(line)
                continue
            literal_indent = None
        if quote_from is not None and indent <= quote_from:
            out.append("")  # the indented block ends: reStructuredText wants a blank line
            quote_from = None
        stripped = line.strip()
        bullet = bool(_BULLET.match(stripped))
        if paragraph_indent is not None:
            if quote_from is None and indent > paragraph_indent and not _FIELD.match(out[-1].strip()):
                out.append("")  # a displayed formula or a hanging indent: an indented block
                quote_from = paragraph_indent
            elif bullet and list_indent is None:
                out.append("")  # a list right under a paragraph line
            elif list_indent is not None and not bullet and indent <= list_indent:
                out.append("")  # a paragraph right under a list
        if bullet:
            list_indent = indent
        elif list_indent is not None and indent <= list_indent:
            list_indent = None
        out.append(line)
        if stripped.endswith("::") or stripped.startswith(".. ") or stripped.startswith(">>>"):
            literal_indent = indent
            paragraph_indent = None
        else:
            paragraph_indent = _content_indent(line) if bullet else indent
    return out


def _is_type_docstring(obj, lines: list[str]) -> bool:
    """True when ``lines`` are the docstring of ``obj``'s type (a constant has none of its own)."""
    paragraphs = [" ".join(p.split()) for p in (getattr(type(obj), "__doc__", None) or "").split("\n\n")]
    shown = " ".join(" ".join(lines).split())
    return any(len(p) > 20 and p[:80] in shown for p in paragraphs[:2])


def process_docstring(app, what, name, obj, options, lines: list[str]) -> None:
    if what in ("data", "attribute") and _is_type_docstring(obj, lines):
        lines[:] = []  # a constant (an array, a float) would show its type's docstring
        return
    if not lines:
        return
    new = _hanging_blocks(_entry_runs(lines))
    literal_indent = None
    for k, line in enumerate(new):
        if literal_indent is not None and (not line.strip() or _indent(line) > literal_indent):
            continue
        literal_indent = None
        new[k] = _escape_bars(line)
        if line.strip().endswith("::"):
            literal_indent = _indent(line)
    lines[:] = new


def skip_tuple_fields(app, what, name, obj, skip, options):
    """A NamedTuple's fields are described in its docstring; their generated
    "Alias for field number N" entries only repeat the names."""
    if (getattr(obj, "__doc__", None) or "").startswith("Alias for field number"):
        return True
    return None


def setup(app):
    app.setup_extension("sphinx.ext.autodoc")
    app.connect("autodoc-skip-member", skip_tuple_fields)
    # after napoleon (priority 500): its Args:/Returns: sections are field lists by then
    app.connect("autodoc-process-docstring", process_docstring, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

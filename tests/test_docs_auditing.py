"""docs/guide/auditing.md runs as written: its python blocks, executed in order in one namespace,
print exactly the text blocks that follow them (a stale printed number fails)."""
import contextlib
import io
import re
import warnings
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "guide" / "auditing.md"


@pytest.mark.slow
def test_auditing_guide_prints_what_it_shows(tmp_path, monkeypatch):
    text = PAGE.read_text(encoding="utf-8")
    pairs = re.findall(r"```python\n(.*?)```\n\n```text\n(.*?)```", text, re.S)
    assert len(pairs) == len(re.findall(r"```python\n", text)) >= 5  # every python block is followed by its output
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for code, shown in pairs:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(code, str(PAGE), "exec"), namespace)
        assert out.getvalue().rstrip("\n") == shown.rstrip("\n"), code

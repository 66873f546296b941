"""The README shows each rule's documentation, the same text `zerolint rule` prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def zerolint(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zerolint", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def test_readme_carries_the_rule_docs_verbatim() -> None:
    run = subprocess.run(
        [sys.executable, "devtools/sync_readme.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout


def test_zerolint_rule_prints_the_same_text() -> None:
    run = zerolint("rule", "ZL001")
    assert run.returncode == 0
    doc = (ROOT / "rules" / "ZL001.md").read_text()
    assert run.stdout == doc
    body = doc.split("\n", 1)[1]  # the README demotes the title heading only
    readme = (ROOT / "README.md").read_text()
    for paragraph in body.split("\n\n"):
        if paragraph.strip() and not paragraph.startswith("#"):
            assert paragraph.strip() in readme


def test_rules_lists_zl001() -> None:
    run = zerolint("rules")
    assert run.returncode == 0 and run.stdout.startswith("ZL001")


def test_unknown_rule_is_a_usage_error() -> None:
    run = zerolint("rule", "ZL999")
    assert run.returncode == 2
    assert run.stderr.strip() == "zerolint: error: unknown rule: ZL999 (see `zerolint rules`)"


def test_the_bundled_example_matches_the_readme() -> None:
    run = zerolint("check", "--no-cache", "--color", "never", "examples/")
    assert run.returncode == 1
    readme = (ROOT / "README.md").read_text()
    shown = readme.split("Expected output of the first command", 1)[1]
    shown = shown.split("```text\n", 1)[1].split("```", 1)[0]
    assert run.stdout == shown


def test_the_rule_doc_example_is_what_the_tool_prints(tmp_path: Path) -> None:
    import re

    doc = (ROOT / "rules" / "ZL001.md").read_text()
    code = re.findall(r"```python\n(.*?)```", doc, re.DOTALL)[0]
    shown = re.findall(r"```text\n(.*?)```", doc, re.DOTALL)[0]
    (tmp_path / "indexer.py").write_text(code)
    run = zerolint("check", "--no-cache", "--color", "never", "indexer.py", cwd=tmp_path)
    assert run.stdout.startswith(shown)

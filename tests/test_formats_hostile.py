"""Hostile bytes in checked code cannot drive the terminal (as in Ruff, control characters
in source lines, file names and messages are shown, not acted on), in every format: text
and GitHub annotations show control pictures; JSON and SARIF keep the data, escaped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_cli_check import write

# The sink line carries an escape sequence that clears the screen, backspaces that would
# erase the finding's header, a C1 CSI and a right-to-left override (raw, in a string).
PAYLOAD = "\x1b[2J\x1b[H\x08\x08All checks passed!\x9b31m \u202eevil"
HOSTILE = (
    "from deep_gemm import get_paged_mqa_logits_metadata\n"
    "\n"
    "\n"
    "def build(seq_lens, num_sms):\n"
    "    lens = seq_lens // 4\n"
    f'    return get_paged_mqa_logits_metadata(lens, 64, num_sms, tag="{PAYLOAD}")\n'
)
NAME = "bad\x1b[2Jname.py"
RAW = ("\x1b", "\x08", "\x9b", "\u202e")


@pytest.mark.parametrize("fmt", ["text", "github", "json", "sarif"])
def test_no_control_character_reaches_the_output(tmp_path: Path, check, fmt: str) -> None:
    write(tmp_path, {NAME: HOSTILE})
    code, out, err = check("--format", fmt, ".")
    assert code == 1, err
    for raw in RAW:
        assert raw not in out, (fmt, raw)
    if fmt == "json":  # the data is intact, only written escaped
        finding = json.loads(out)["findings"][0]
        assert finding["path"] == NAME and PAYLOAD in finding["flows"][0]["steps"][-1]["code"]
    elif fmt == "sarif":
        result = json.loads(out)["runs"][0]["results"][0]
        uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert uri == "bad%1B%5B2Jname.py"
    else:
        assert "bad␛[2Jname.py" in out


def test_text_shows_control_pictures_in_the_source_line(tmp_path: Path, check) -> None:
    write(tmp_path, {"bad.py": HOSTILE})
    _, out, _ = check(".")
    assert 'tag="␛[2J␛[H␈␈All checks passed!\\u009b31m \\u202eevil")' in out
    assert "\nFound 1 error.\n" in out

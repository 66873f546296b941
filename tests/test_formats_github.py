"""GitHub workflow commands: escaping as the Actions runner reads it, and annotation spans.

The parser below follows the runner's rules for ``::name k=v,k=v::message`` (split the
properties on ``,`` and each on its first ``=``, then undo ``%25 %0D %0A %3A %2C``), so a
command that survives it is one the runner reads back as written.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.fixtures.formats import reports
from tests.test_cli_check import write
from zerolint.formats import RenderOptions, render
from zerolint.formats.github import escape_data, escape_property
from zerolint.formats.text import finding_lines
from zerolint.model import Report

_UNESCAPES = [("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")]


def _unescape(text: str) -> str:
    for escaped, raw in _UNESCAPES:
        text = text.replace(escaped, raw)
    return text


def parse_command(line: str) -> tuple[str, dict[str, str], str]:
    """(command, properties, message) of one workflow command line."""
    assert line.startswith("::")
    head, separator, message = line[2:].partition("::")
    assert separator, f"no '::' before the message in {line!r}"
    name, _, props = head.partition(" ")
    properties = {}
    for pair in props.split(","):
        key, _, value = pair.partition("=")
        properties[key] = _unescape(value)
    return name, properties, _unescape(message)


def _commands(report: Report, **options: object) -> list[tuple[str, dict[str, str], str]]:
    text = render(report, "github", root=reports.ROOT, **options)  # type: ignore[arg-type]
    return [parse_command(line) for line in text.splitlines()]


@given(st.text())
def test_escaped_property_reads_back_and_holds_no_separator(text: str) -> None:
    escaped = escape_property(text)
    assert not set(escaped) & {",", ":", "\n", "\r"}
    assert _unescape(escaped) == text


@given(st.text())
def test_escaped_message_reads_back_on_one_line(text: str) -> None:
    escaped = escape_data(text)
    assert not set(escaped) & {"\n", "\r"}
    assert _unescape(escaped) == text


def test_odd_path_and_message_read_back_exactly() -> None:
    (finding, diagnostic) = _commands(reports.escaping())
    name, properties, message = finding
    assert name == "error"
    assert properties == {
        "file": "odd dir/a,b:c%d é.py",
        "line": "3",
        "col": "1",
        "endLine": "3",
        "endColumn": "41",
        "title": "ZL001",
    }
    plain = RenderOptions(root=reports.ROOT)
    assert message == "\n".join(finding_lines(reports.escaping().findings[0], plain))
    assert diagnostic == (
        "warning",
        {"file": "odd dir/x,y:z.py", "line": "9", "title": "ZL901"},
        "ZL901 syntax error: 'x,y:z%0A'",
    )


def test_the_message_is_the_whole_trace() -> None:
    ((_, _, message),) = _commands(reports.vllm_indexer())
    lines = message.split("\n")
    assert lines[0].startswith("vllm/v1/attention/backends/mla/indexer.py:951:53: ZL001 ")
    assert "    934: seq_lens //= self.compress_ratio   floor division" in lines
    assert "  path 2:" in lines
    assert lines[-1] == (
        "  witness (path 1): B=32, seq_len=1, compress_ratio=4 -> every context length 0"
    )


def test_a_call_over_several_lines_gets_lines_but_no_columns() -> None:
    # The runner drops an annotation with col/endColumn when line != endLine.
    ((_, properties, _),) = _commands(reports.vllm_indexer())
    assert properties == {
        "file": "vllm/v1/attention/backends/mla/indexer.py",
        "line": "951",
        "endLine": "955",
        "title": "ZL001",
    }


def test_unknown_end_gives_only_the_start() -> None:
    report = reports.vllm_indexer()
    report.findings[0] = replace(report.findings[0], end_line=0, end_col=0)
    ((_, properties, _),) = _commands(report)
    assert properties == {
        "file": "vllm/v1/attention/backends/mla/indexer.py",
        "line": "951",
        "col": "53",
        "title": "ZL001",
    }


def test_one_command_per_finding_then_notices_and_warnings() -> None:
    names = [
        (name, props["title"]) for name, props, _ in _commands(reports.mixed(), show_proved=True)
    ]
    assert names == [("error", "ZL001")] * 4 + [
        ("notice", "ZL001 proved safe"),
        ("warning", "ZL901"),
        ("warning", "ZL903"),
    ]
    assert render(reports.clean(), "github") == ""


SINK = (
    "from deep_gemm import get_paged_mqa_logits_metadata\n"
    "\n"
    "\n"
    "def build(seq_lens, num_sms):\n"
    "    lens = seq_lens // 4\n"
    "    return get_paged_mqa_logits_metadata(lens, 64, num_sms)\n"
)


def test_a_file_name_with_a_line_break_is_annotated_under_its_own_name(
    tmp_path: Path, check
) -> None:
    """A file name holding a newline or a carriage return (or `%`, `:`, `,`) is escaped in
    `file=` as the runner reads it back (`%0A`, `%0D`, ...): the annotation names the file.
    Line breaks were made control pictures first (`a␊b.py`), a file the runner cannot find;
    the message, one line per command, shows them so."""
    names = ["a\nb.py", "c\rd.py", "e%f:g,h.py", "i\r\nj%0A.py"]
    write(tmp_path, dict.fromkeys(names, SINK))
    code, out, err = check("--format", "github", ".")
    assert code == 1, err
    lines = out.split("\n")
    assert lines[-1] == "" and all(line.startswith("::error ") for line in lines[:-1]), out
    commands = [parse_command(line) for line in lines[:-1]]
    assert sorted(properties["file"] for _, properties, _ in commands) == sorted(names)
    for name, properties, message in commands:
        assert name == "error" and properties["line"] == "6"
        shown = properties["file"].replace("\n", "\u240a").replace("\r", "\u240d")
        assert message.startswith(f"{shown}:6:12: ZL001 "), message

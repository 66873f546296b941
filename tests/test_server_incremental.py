"""The language server's warm index after a sequence of edits says, file by file, what a
cold check of the same file contents says.

The index (``server_index.WorkspaceIndex``, what `zerolint server` runs) keeps its parsed
modules and re-parses only the chunks an edit touched (``server_reparse``); after every
edit of a random sequence, the contents of every buffer are written to a fresh folder and
checked there with a new engine (a new project, every file parsed whole), and the findings
and diagnostics of each file must be equal: every field, every path step.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from zerolint.config import load_settings
from zerolint.engine import Engine
from zerolint.model import Diagnostic, Finding
from zerolint.server_index import Log, WorkspaceIndex

PYPROJECT = "[tool.zerolint]\ncompress-ratios = [4]\n"
BUILDER = """\
import deep_gemm

from .plan import Planner
from .utils import compressed_lens


def build_schedule(seq_lens, compress_ratio, num_sms):
    lens = compressed_lens(seq_lens, compress_ratio)
    return deep_gemm.get_paged_mqa_logits_metadata(lens.unsqueeze(-1), 64, num_sms)


class Builder:
    def __init__(self, num_sms):
        self.num_sms = num_sms

    def plan(self, seq_lens):
        lens = Planner(4).lens(seq_lens)
        return deep_gemm.get_paged_mqa_logits_metadata(lens, 64, self.num_sms)

    def halved(self, seq_lens):
        lens = seq_lens // 2
        return deep_gemm.get_paged_mqa_logits_metadata(lens, 64, self.num_sms)


def unrelated(x):
    return x + 1
"""
UTILS = '''\
"""Length helpers."""


def compressed_lens(seq_lens, compress_ratio):
    return seq_lens // compress_ratio


def padded(n):
    return n + 8
'''
PLAN = """\
from .utils import compressed_lens


class Planner:
    def __init__(self, ratio):
        self.ratio = ratio

    def lens(self, seq_lens):
        return compressed_lens(seq_lens, self.ratio)

    def other(self):
        return 1
"""
FILES = {
    "pkg/__init__.py": "",
    "pkg/builder.py": BUILDER,
    "pkg/utils.py": UTILS,
    "pkg/plan.py": PLAN,
}

Edit = Callable[[str, random.Random], str | None]


def replace(old: str, new: str) -> Edit:
    return lambda text, rng: text.replace(old, new, 1) if old in text else None


def insert_line(line: str) -> Edit:
    def edit(text: str, rng: random.Random) -> str:
        lines = text.splitlines(keepends=True)
        i = rng.randrange(len(lines) + 1)
        return "".join(lines[:i] + [line] + lines[i:])

    return edit


def delete_line(text: str, rng: random.Random) -> str | None:
    lines = text.splitlines(keepends=True)
    if not lines:
        return None
    i = rng.randrange(len(lines))
    return "".join(lines[:i] + lines[i + 1 :])


EDITS: dict[str, list[Edit]] = {
    "pkg/builder.py": [
        replace("    lens = compressed_lens(seq_lens, compress_ratio)\n", "    lens = 1\n"),
        replace(
            "compress_ratio)\n    return",
            "compress_ratio)\n    lens = lens.clamp(min=1)\n    return",
        ),
        replace("    lens = lens.clamp(min=1)\n", ""),
        replace("lens = seq_lens // 2", "lens = (seq_lens // 2).clamp(min=1)"),
        replace("lens = (seq_lens // 2).clamp(min=1)", "lens = seq_lens // 2"),
        replace(
            "self.num_sms)\n\n    def halved", "self.num_sms)  # noqa: ZL001\n\n    def halved"
        ),
        replace("  # noqa: ZL001", ""),
        replace("def unrelated(x):", "def unrelated(x)"),  # a syntax error ...
        replace("def unrelated(x)\n", "def unrelated(x):\n"),  # ... and its fix
        insert_line("# a comment\n"),
        insert_line("\n"),
        delete_line,
    ],
    "pkg/utils.py": [
        replace(
            "return seq_lens // compress_ratio", "return (seq_lens // compress_ratio).clamp(min=1)"
        ),
        replace(
            "return (seq_lens // compress_ratio).clamp(min=1)", "return seq_lens // compress_ratio"
        ),
        replace("return n + 8", "return n // 8"),
        replace(
            "def compressed_lens(",
            "def compressed(",
        ),  # the import breaks
        replace("def compressed(", "def compressed_lens("),
        insert_line("# a comment\n"),
        insert_line("\n"),
    ],
    "pkg/plan.py": [
        replace(
            "compressed_lens(seq_lens, self.ratio)",
            "compressed_lens(seq_lens, self.ratio).clamp(min=1)",
        ),
        replace(
            "compressed_lens(seq_lens, self.ratio).clamp(min=1)",
            "compressed_lens(seq_lens, self.ratio)",
        ),
        replace(
            "    def other(self):\n        return 1\n", "    def other(self):\n        return 2\n"
        ),
        insert_line("    # an indented comment\n"),
        insert_line("\n"),
    ],
}


def write_tree(root: Path, texts: dict[str, str]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    for rel, text in texts.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def indexed(
    root: Path, texts: dict[str, str], opened: Iterable[str], log: Log | None = None
) -> WorkspaceIndex:
    """``texts`` written to ``root`` and indexed as ``zerolint server`` indexes it, with
    the files ``opened`` open in the editor, in that order (its log lines to ``log``)."""
    write_tree(root, texts)
    index = WorkspaceIndex([root], log or (lambda level, message: None))
    for rel in opened:
        index.analyse(root / rel, texts[rel])
    return index


def apply_random_edit(
    rng: random.Random, edits: dict[str, list[Edit]], texts: dict[str, str]
) -> str | None:
    """One of ``edits`` (a file's edits, by file), chosen by ``rng``, applied to ``texts``:
    the file it changed, or None (the edit did not apply, or changed nothing)."""
    rel = rng.choice(sorted(edits))
    new = rng.choice(edits[rel])(texts[rel], rng)
    if new is None or new == texts[rel]:
        return None
    texts[rel] = new
    return rel


def findings_key(finding: Finding, root: Path) -> tuple:
    def rel(shown: str) -> str:
        return Path(os.path.abspath(shown)).relative_to(root).as_posix()

    flows = tuple(
        tuple((rel(s.path), s.line, s.col, s.code, s.role, s.op, s.note) for s in flow.steps)
        for flow in finding.flows
    )
    v = finding.verdict
    verdict = (v.status, tuple(sorted(v.witness.items())), v.reason, v.flow_index) if v else None
    return (
        finding.code,
        rel(finding.path),
        finding.line,
        finding.col,
        finding.end_line,
        finding.end_col,
        finding.message,
        finding.sink,
        finding.argument,
        flows,
        verdict,
    )


def diagnostic_key(d: Diagnostic, root: Path) -> tuple:
    rel = Path(os.path.abspath(d.path)).relative_to(root).as_posix()
    return (d.code, rel, d.line, d.col, d.message)


def cold(root: Path, texts: dict[str, str]) -> dict[str, tuple[list, list]]:
    """A fresh check of ``texts`` written to ``root``: file -> (findings, diagnostics)."""
    if root.exists():
        shutil.rmtree(root)
    write_tree(root, texts)
    report = Engine(load_settings([root])).check([root])
    out: dict[str, tuple[list, list]] = {rel: ([], []) for rel in texts}
    for f in report.findings:
        key = findings_key(f, root)
        out[key[1]][0].append(key)
    for d in report.diagnostics:
        key = diagnostic_key(d, root)
        out[key[1]][1].append(key)
    return out


def warm(index: WorkspaceIndex, root: Path, texts: dict[str, str]) -> dict[str, tuple[list, list]]:
    out: dict[str, tuple[list, list]] = {}
    for rel in texts:
        context = index.context_for(root / rel)
        assert context is not None
        result = context.result(root / rel)
        out[rel] = (
            sorted(findings_key(f, root) for f in result.findings),
            sorted(diagnostic_key(d, root) for d in result.diagnostics),
        )
    return out


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_warm_index_after_edits_equals_a_cold_check(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    root = tmp_path / "ws"
    texts = dict(FILES)
    index = indexed(root, texts, texts)  # every file open in the editor
    first = warm(index, root, texts)
    assert first == cold(tmp_path / "cold", texts)
    assert any(findings for findings, _ in first.values())  # the fixture has findings
    seen = {repr(first)}
    for step in range(25):
        rel = apply_random_edit(rng, EDITS, texts)
        if rel is None:
            continue
        index.analyse(root / rel, texts[rel])
        got = warm(index, root, texts)
        assert got == cold(tmp_path / "cold", texts), (seed, step, rel)
        seen.add(repr(got))
    assert len(seen) > 2  # the edits changed what is reported, more than once


def test_edit_of_a_module_whose_text_the_analysis_read_is_analysed(tmp_path: Path) -> None:
    """A field read through an annotation: whether the class's module writes it is decided
    on its text (never parsed when it does not), so an edit that adds the write must be
    analysed though the module names no sink and was not parsed."""
    root = tmp_path / "ws"
    conf = (
        "class Config:\n"
        "    def __init__(self, seq_lens, ratio):\n"
        "        self.size = seq_lens // ratio\n"
    )
    texts = {
        "pkg/__init__.py": "",
        "pkg/builder.py": (
            "import deep_gemm\n\nfrom .conf import Config\n\n\n"
            "def build(cfg: Config, num_sms):\n"
            "    return deep_gemm.get_paged_mqa_logits_metadata(cfg.lens, 64, num_sms)\n"
        ),
        "pkg/conf.py": conf,
    }
    index = indexed(root, texts, ["pkg/builder.py"])
    assert warm(index, root, texts) == cold(tmp_path / "cold", texts)
    texts["pkg/conf.py"] = conf.replace("self.size", "self.lens")
    index.analyse(root / "pkg/conf.py", texts["pkg/conf.py"])
    got = warm(index, root, texts)
    assert got == cold(tmp_path / "cold", texts)
    assert len(got["pkg/builder.py"][0]) == 1  # the field now holds divided lengths


def test_a_step_made_at_module_level_shows_the_same_text_warm_and_cold(tmp_path: Path) -> None:
    """A lambda assigned at module level and reached through an alias gave its sink step
    the module itself, whose text was the file's (a cold check's tree, built from Python's,
    printed it with LibCST's default formatting and lost the parentheses of
    ``(x // 2).clamp(min=1)``). Found by ``devtools/warm_fuzz.py``. The step is now the
    lambda's assignment (``Resolution._global_values``), the same warm and cold."""
    texts = {
        "pkg/__init__.py": "",
        "pkg/m1.py": (
            "from .m3 import calias10\n"
            "lsched4 = lambda context_lens, num_sms: "
            "deep_gemm.get_paged_mqa_logits_metadata(context_lens, 64, num_sms)\n"
            "COUT10 = calias10(SEQ10 // 2, 132)\n"
        ),
        "pkg/m3.py": "calias10 = lsched4\n",
    }
    root = tmp_path / "ws"
    index = indexed(root, texts, sorted(texts))
    texts["pkg/m1.py"] = texts["pkg/m1.py"].replace(
        "\nlsched4", "\ndef halve2(x):\n    return (x // 2).clamp(min=1)\nlsched4"
    )
    texts["pkg/m3.py"] = "from .m1 import lsched4\n" * 2 + texts["pkg/m3.py"]
    for rel in ("pkg/m1.py", "pkg/m3.py"):
        index.analyse(root / rel, texts[rel])
    got = warm(index, root, texts)
    assert got == cold(tmp_path / "cold", texts)
    steps = [s for f in got["pkg/m1.py"][0] for flow in f[9] for s in flow]
    assert any(s[3].startswith("lsched4 = lambda context_lens, num_sms:") for s in steps), steps
    assert not any("(x // 2).clamp(min=1)" in s[3] for s in steps), steps

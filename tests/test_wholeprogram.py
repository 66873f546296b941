"""Whole-program analysis (issue 8) as specifications: multi-file fixture packages.

Each folder under ``tests/fixtures/wholeprogram/`` is a small user project: a package
``pkg/`` whose modules split a length's way to the kernel across files (returned values,
fields, wrappers, the kernel passed around as a value, partials, lambdas, unknown calls),
a ``pyproject.toml`` and ``expected.txt``, the exact output of

    zerolint check --no-cache --color never pkg

run in that folder. ``pkg/__init__.py`` says what the case shows and why that output is
the right one. A new case is a new folder, no test code
(``python -m devtools.update_golden wholeprogram`` writes a first ``expected.txt``: check it
by hand).

The last tests run the analyzer on the real vLLM 0.27.1 tree: its wrapper
``vllm.utils.deep_gemm.get_paged_mqa_logits_metadata`` must be found to forward
``context_lens`` to the kernel, and a caller reaching it through another import path must
be reported.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from tests import golden
from zerolint.cli import main
from zerolint.config import Settings
from zerolint.dataflow import Analyzer
from zerolint.discovery import discover
from zerolint.engine import Engine
from zerolint.model import Finding, Report
from zerolint.project import Project
from zerolint.rules import Rule, rule_by_code

CASES_DIR = Path(__file__).parent / "fixtures" / "wholeprogram"
CASES = sorted(p.name for p in CASES_DIR.iterdir() if p.is_dir())

# docs/hazards/ZL001.md, "The fault": the scheduler faults when B % 32 == 0 and every length is 0.
FAULT_MULTIPLE = 32
WITNESS = re.compile(r"^  witness(?: \(path \d+\))?: (?P<values>.*) -> every context length 0$")
# A path step: "    12: code   note" or "    pkg/other.py:12: code   note".
STEP = re.compile(r"^    (?:(?P<file>[\w/]+\.py):)?(?P<line>\d+): (?P<code>.*?)(?: {3,}.*)?$")
HEADER = re.compile(r"^(?P<file>[\w/]+\.py):\d+:\d+: ZL\d{3} ")


def expected(case: str) -> str:
    return (CASES_DIR / case / "expected.txt").read_text(encoding="utf-8")


CHECK = ["check", "--no-cache", "--color", "never", "pkg"]


@golden.suite("wholeprogram")
def goldens() -> list[golden.Golden]:
    return [
        golden.Golden(
            CASES_DIR / case / "expected.txt",
            lambda case=case: golden.run_cli(CHECK, cwd=CASES_DIR / case)[1],
        )
        for case in CASES
    ]


@pytest.mark.parametrize("case", CASES)
def test_case_prints_its_expected_output(
    case: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(CASES_DIR / case)
    status = main(CHECK)
    out, err = capsys.readouterr()
    golden.assert_matches(CASES_DIR / case / "expected.txt", out)
    assert err == ""
    # A finding of any rule (the empty_batch_* cases select ZL002) makes the exit status 1.
    found = any(HEADER.match(line) for line in expected(case).splitlines())
    assert status == (1 if found else 0)


def test_the_cases_cover_valid_and_invalid_projects() -> None:
    assert len(CASES) >= 12
    invalid = [c for c in CASES if "ZL001" in expected(c)]
    assert invalid and len(invalid) < len(CASES)
    for case in CASES:
        folder = CASES_DIR / case
        assert (folder / "pyproject.toml").is_file(), case
        assert (folder / "pkg" / "__init__.py").read_text(encoding="utf-8").startswith('"""')
        assert len(list((folder / "pkg").rglob("*.py"))) >= 3, f"{case} is not multi-file"


@pytest.mark.parametrize("case", CASES)
def test_every_path_step_quotes_the_line_it_names(case: str) -> None:
    """The expected files were written by hand: each step's file, line and code agree."""
    shown_file = ""
    for text in expected(case).splitlines():
        if header := HEADER.match(text):
            shown_file = header["file"]
        elif step := STEP.match(text):
            path = CASES_DIR / case / (step["file"] or shown_file)
            source = path.read_text(encoding="utf-8").splitlines()[int(step["line"]) - 1]
            assert source.split("  #")[0].strip() == step["code"], text


@pytest.mark.parametrize("case", [c for c in CASES if "witness" in expected(c)])
def test_every_expected_witness_is_a_real_fault(case: str) -> None:
    """Each invalid case divides once by ``compress_ratio``: the witness must make every
    length 0 on a batch the kernel faults on."""
    for text in expected(case).splitlines():
        if found := WITNESS.match(text):
            values = dict(pair.split("=") for pair in found["values"].split(", "))
            batch, seq_len = int(values["B"]), int(values["seq_len"])
            ratio = int(values.get("compress_ratio", 1))
            assert batch >= FAULT_MULTIPLE and batch % FAULT_MULTIPLE == 0
            assert seq_len >= 1 and ratio >= 2 and seq_len // ratio == 0


# --- vLLM 0.27.1: the wrapper in vllm/utils/deep_gemm.py ---------------------------------

SINK = "get_paged_mqa_logits_metadata"
WRAPPER_MODULE = "vllm.utils.deep_gemm"
WRAPPER = SINK  # vLLM's wrapper has the kernel's own name
FORWARD_LINE = 562  # return _get_paged_mqa_logits_metadata_impl(context_lens, block_size, num_sms)
CALLER = "vllm/utils/zl_synthetic_caller.py"
# The caller forwards `seq_lens` (divided) too, so its name joins the pre-filter's names:
# a name that no vLLM file uses keeps the run as fast as the tree alone.
CALLER_TEXT = """\
from vllm.utils import deep_gemm as dgu


def synthetic_decode_schedule(seq_lens, num_sms):
    return dgu.get_paged_mqa_logits_metadata(seq_lens // 4, 64, num_sms)
"""


@pytest.fixture(scope="module")
def vllm_files() -> tuple[Path, list[Path]]:
    from devtools.wheels import vllm_tree

    tree = vllm_tree("0.27.1")
    return tree, discover([tree / "vllm"]).files


def zl001_without(module: str) -> Rule:
    """ZL001 with ``module`` taken off its sink's modules: the analysis has to find out
    by itself that a function there reaches the kernel."""
    rule = rule_by_code("ZL001")
    assert rule is not None
    sinks = tuple(
        dataclasses.replace(s, modules=tuple(m for m in s.modules if m != module))
        for s in rule.sinks
    )
    return dataclasses.replace(rule, sinks=sinks)


def check_with_caller(vllm_files: tuple[Path, list[Path]], rule: Rule) -> Report:
    """Check the tree plus the synthetic caller, which exists only in memory: the shared
    wheel cache is never written."""
    tree, files = vllm_files
    caller = tree / CALLER
    engine = Engine(Settings())
    engine.rules = (rule,)
    return engine.run([*files, caller], overrides={caller: CALLER_TEXT}).report


def caller_findings(report: Report) -> list[Finding]:
    return [f for f in report.findings if f.path.endswith(CALLER)]


@pytest.mark.network
@pytest.mark.parametrize(
    "rule",
    [rule_by_code("ZL001"), zl001_without(WRAPPER_MODULE)],
    ids=["shipped-rule", "wrapper-module-not-configured"],
)
def test_vllm_wrapper_forwards_context_lens_to_the_kernel(
    vllm_files: tuple[Path, list[Path]], rule: Rule
) -> None:
    _, files = vllm_files
    engine = Engine(Settings())
    engine.rules = (rule,)
    project = Project(files)
    analyzer = Analyzer(project, engine.rules)
    engine.analyse(project, analyzer, None, set())
    module = project.module(WRAPPER_MODULE)
    assert module is not None
    summary = analyzer.summary(analyzer.func_key(module, module.functions[WRAPPER]))
    hits = summary.forwards.get("context_lens", [])
    assert hits, f"forwards: {sorted(summary.forwards)}"
    assert {(h.mod.name, h.mod.positions().statement(h.stmt)[0]) for h in hits} == {
        (WRAPPER_MODULE, FORWARD_LINE)
    }
    assert {h.spec.function for h in hits} == {SINK}
    assert set(summary.forwards) == {"context_lens"}  # not block_size, not num_sms
    assert WRAPPER in analyzer.wrapper_names


@pytest.mark.network
def test_vllm_caller_through_another_import_path_is_reported(
    vllm_files: tuple[Path, list[Path]],
) -> None:
    rule = rule_by_code("ZL001")
    assert rule is not None
    [finding] = caller_findings(check_with_caller(vllm_files, rule))
    assert (finding.line, finding.col) == (5, 12)
    assert finding.message.startswith("`seq_lens // 4` can be all zero")
    assert finding.verdict is not None and finding.verdict.status == "unsafe"
    assert finding.verdict.witness == {"B": 32, "seq_len": 1}  # 1 // 4 == 0


@pytest.mark.network
def test_vllm_caller_is_reported_through_the_wrapper_it_calls(
    vllm_files: tuple[Path, list[Path]],
) -> None:
    """With ``vllm.utils.deep_gemm`` not among the rule's modules, the caller is still
    reported, and its path ends at the line where the wrapper calls the kernel."""
    report = check_with_caller(vllm_files, zl001_without(WRAPPER_MODULE))
    [finding] = caller_findings(report)
    assert (finding.line, finding.col) == (5, 12)
    for flow in finding.flows:
        first, last = flow.steps[0], flow.steps[-1]
        assert (first.path.endswith(CALLER), first.line, first.op.kind) == (True, 5, "floordiv")
        assert (last.path.endswith("vllm/utils/deep_gemm.py"), last.line, last.role) == (
            True,
            FORWARD_LINE,
            "sink",
        )
    indexer = [f for f in report.findings if f.path.endswith("mla/indexer.py")]
    assert [f.line for f in indexer] == [951]
    assert len(report.findings) == 2  # the caller and the indexer, nothing else

"""Rerun every GPU claim of the docs on an SM90 machine, with one command.

First, on a machine with network: ``python devtools/prepare_sm90.py`` and
``python devtools/prepare_probe.py``. Then, on the SM90 machine, from the repository root::

    python devtools/gpu_claims.py            # writes docs/*.json and re-renders the pages

It runs ``runtime_guard.verify_sm90`` and ``probe.run`` side by side (four and a half
minutes on an H200), then ``bench/sink_guard_cost.py`` alone (the guards' cost, kept in the
probe report as ``guard_cost``), copies the reports to docs/sm90-report.json and
docs/probe-report.json, and replaces the results sections of docs/sm90-verification.md and
docs/zero-length-probe.md with their renderings. ``pytest tests/test_sm90_report.py tests/test_probe_report.py`` then
checks the result. Exits non-zero when a run failed or a verification section did not pass
(the reports are written all the same, so the failure can be read).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def replace_results(page: Path, begin: str, end: str, rendered: str) -> None:
    text = page.read_text()
    start, stop = text.index(begin), text.index(end) + len(end)
    page.write_text(text[:start] + rendered + text[stop:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parallel", type=int, default=6, help="processes per run")
    parser.add_argument(
        "--guarded",
        action="store_true",
        help="only the probe's guarded kernels and bench/sink_guard_cost.py, merged into the "
        "committed docs/probe-report.json",
    )
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="gpu-claims-"))
    if args.guarded:
        return guarded_only(args, work)
    runs = {
        "sm90": [
            sys.executable,
            "-m",
            "runtime_guard.verify_sm90",
            "--out",
            str(work / "report.json"),
            "--parallel",
            str(args.parallel),
        ],
        "probe": [
            sys.executable,
            "-m",
            "probe.run",
            "--out",
            str(work / "probe-report.json"),
            "--parallel",
            str(args.parallel * 2),
        ],
    }
    processes = {name: subprocess.Popen(command, cwd=ROOT) for name, command in runs.items()}
    codes = {name: process.wait() for name, process in processes.items()}
    # The guards' cost last, alone on the GPU: timings taken beside the other runs would
    # not be the guards' own.
    cost = work / "cost.json"
    codes["cost"] = subprocess.call(
        [sys.executable, "bench/sink_guard_cost.py", "--out", str(cost)], cwd=ROOT
    )
    made = work / "probe-report.json"
    if made.exists() and cost.exists():
        report = json.loads(made.read_text())
        report["guard_cost"] = json.loads(cost.read_text())
        made.write_text(json.dumps(report, indent=1) + "\n")

    sys.path.insert(0, str(ROOT))
    from probe import render as probe_render
    from runtime_guard._sm90 import render as sm90_render

    published = [
        ("report.json", "sm90-report.json", "sm90-verification.md", sm90_render),
        ("probe-report.json", "probe-report.json", "zero-length-probe.md", probe_render),
    ]
    for made, report_name, page_name, renderer in published:
        source = work / made
        if not source.exists():
            print(f"gpu_claims: {made} was not written", file=sys.stderr)
            continue
        (ROOT / "docs" / report_name).write_text(source.read_text())
        report = json.loads(source.read_text())
        replace_results(
            ROOT / "docs" / page_name, renderer.BEGIN, renderer.END, renderer.render(report)
        )
        print(f"gpu_claims: docs/{report_name} and docs/{page_name} updated")
    for name, code in codes.items():
        if code:
            print(f"gpu_claims: {name} exited with {code}", file=sys.stderr)
    return 0 if not any(codes.values()) else 1


def guarded_only(args: argparse.Namespace, work: Path) -> int:
    """The guarded variants (issue #15) and their cost, in one run, into the probe report."""
    sys.path.insert(0, str(ROOT))
    from probe import render as probe_render
    from probe.kernels import KERNELS

    names = ",".join(k.name for k in KERNELS if k.guard)
    made = work / "probe-report.json"
    probe_code = subprocess.call(
        [
            sys.executable,
            "-m",
            "probe.run",
            "--out",
            str(made),
            "--kernels",
            names,
            "--merge",
            str(ROOT / "docs" / "probe-report.json"),
            "--parallel",
            str(args.parallel * 2),
        ],
        cwd=ROOT,
    )
    cost = work / "cost.json"
    cost_code = subprocess.call(
        [sys.executable, "bench/sink_guard_cost.py", "--out", str(cost)], cwd=ROOT
    )
    if not made.exists():
        print("gpu_claims: probe-report.json was not written", file=sys.stderr)
        return 1
    report = json.loads(made.read_text())
    if cost.exists():
        report["guard_cost"] = json.loads(cost.read_text())
    (ROOT / "docs" / "probe-report.json").write_text(json.dumps(report, indent=1) + "\n")
    replace_results(
        ROOT / "docs" / "zero-length-probe.md",
        probe_render.BEGIN,
        probe_render.END,
        probe_render.render(report),
    )
    print("gpu_claims: docs/probe-report.json and docs/zero-length-probe.md updated")
    print(f"gpu_claims: probe exited {probe_code}, cost bench exited {cost_code}")
    return 1 if probe_code or not cost.exists() else 0


if __name__ == "__main__":
    raise SystemExit(main())

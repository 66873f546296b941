"""Verify the guard against the real DeepGEMM kernels on an SM90 GPU (H100, H200).

On a machine with network, first: ``python devtools/prepare_sm90.py`` (writes ``.sm90/``).
Then, on the SM90 machine, from the repository root::

    python -m runtime_guard.verify_sm90 --out report.json

It builds DeepGEMM 2.6.1's SM90 metadata scheduler (the header of the vLLM 0.27.1 wheel) into
a torch extension, launched as DeepGEMM launches it, and checks, each case in a process of
its own where a fault could poison the CUDA context:

1. the seed's table, unguarded and with ``runtime_guard`` in front;
2. compute-sanitizer memcheck on the B=32 all-zero case, unguarded and guarded;
3. vLLM's FULL decode capture sizes, captured in a CUDA graph and replayed;
4. ``runtime_guard.reference`` and the guard against the kernel on random inputs;
5. DeepGEMM 2.5.0's logits with raw, clamped and fused schedules (memcheck on the clamped);
6. the cost of the guard, eager and in graph replay;
7. empty batches (B = 0, next_n 1 and 2) and a B = 1 control on DeepGEMM 2.5.0 and 2.6.1,
   unguarded and guarded, plain and under memcheck (``runtime_guard._sm90.empty``);
8. SGLang 0.5.23's DeepSeek-V4 indexer schedule: its own JIT kernel on zero lengths, and a
   captured decode batch through its Triton metadata kernel into that kernel and into
   DeepGEMM's (``runtime_guard._sm90.sglang``).

"Guarded" is the guard ``install()`` gives DeepGEMM 2.6.1: after one self-check against the
kernel, it computes the clamped schedule with ``runtime_guard.fused``'s single kernel; each
guarded row records which path it took. Cost also measures the plain clamp-then-call guard.

The JSON report holds the environment, the provenance of every piece, the sha256 of
runtime_guard's sources, each section's raw rows, counts and verdict.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import platform
import subprocess
import tempfile
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from runtime_guard._sm90 import cases as C
from runtime_guard._sm90 import tally
from runtime_guard._sm90.runner import Runner, Task, worker_env

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIR = Path(__file__).resolve().parent
SECTIONS = (
    "seed_table",
    "sanitizer",
    "capture",
    "differential",
    "semantics",
    "cost",
    "empty_batch",
    "sglang",
)
MEMCHECK_ENV = {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}  # let memcheck see every allocation
REPORT_SCHEMA = 1

Row = dict[str, Any]


class Harness:
    """Shared state of one run: the built extension, the runner, the work folder."""

    def __init__(
        self,
        args: argparse.Namespace,
        manifest: Row,
        ext_path: Path,
        num_sms: int,
        sanitizer: str | None,
    ) -> None:
        self.args = args
        self.manifest = manifest
        self.num_sms = num_sms
        self.sanitizer = sanitizer
        self.work: Path = args.work
        env = worker_env(REPO_ROOT, DG_JIT_CACHE_DIR=str(self.work / "deep_gemm_jit"))
        self.runner = Runner(REPO_ROOT, ext_path, env)

    def run(self, tasks: list[Task]) -> list[Row]:
        return self.runner.run_all(tasks, self.args.parallel)

    def memcheck(self, task: Task, name: str) -> Row:
        """Run ``task`` under memcheck: how its cases ended, and what the log says."""
        from runtime_guard._sm90 import sanitizer

        assert self.sanitizer is not None
        log = self.work / f"memcheck-{name}.log"
        task.wrapper = sanitizer.memcheck_wrapper(self.sanitizer, log)
        rows = self.runner.run_task(task)
        text = log.read_text(errors="replace") if log.exists() else ""
        failed = [row for row in rows if row["status"] != "ok"]
        return {
            "worker_status": failed[0]["status"] if failed else "ok",
            "worker_error": failed[0].get("error") if failed else None,
            "cases": [row["id"] for row in rows],
            **sanitizer.parse_log(text),
        }


# -- sections ---------------------------------------------------------------------------------


def seed_table(h: Harness) -> Row:
    seeds = C.seed_cases()
    tasks = [
        Task("seed", [{"id": s.name, "batch": s.batch, "fill": s.fill, "guarded": s.guarded}])
        for s in seeds
    ]
    results = h.run(tasks)
    rows = [
        {
            "case": s.name,
            "batch": s.batch,
            "fill": s.fill,
            "guarded": s.guarded,
            "expect_fault": s.expect_fault,
            **_outcome(r),
        }
        for s, r in zip(seeds, results)
    ]
    return {"rows": rows}


def sanitizer_section(h: Harness) -> Row:
    if h.sanitizer is None:
        raise RuntimeError("compute-sanitizer not found on PATH nor under CUDA_HOME/bin")

    def check(guarded: bool) -> Row:
        seed = C.SeedCase(32, 0, guarded)
        case = {"id": seed.name, "batch": 32, "fill": 0, "guarded": guarded}
        task = Task("seed", [case], seconds_per_case=300, env=MEMCHECK_ENV)
        return {
            "case": seed.name,
            "guarded": guarded,
            **h.memcheck(task, "guarded" if guarded else "unguarded"),
        }

    with ThreadPoolExecutor(max_workers=2) as pool:
        rows = list(pool.map(check, (False, True)))
    return {"rows": rows}


def capture(h: Harness) -> Row:
    config = C.ServeConfig()
    sizes = sorted(C.capture_sizes(config), reverse=True)  # vLLM captures largest first
    predicted = {size: C.fault_predicate(C.dummy_decode_lens(size)) for size in sizes}
    options = {"max_size": max(sizes)}

    def case(size: int, guarded: bool) -> Row:
        return {
            "id": f"{size} {'guarded' if guarded else 'unguarded'}",
            "size": size,
            "guarded": guarded,
        }

    tasks = [Task("capture", [case(s, False)], options) for s in sizes if predicted[s]]
    tasks.append(Task("capture", [case(s, False) for s in sizes if not predicted[s]], options))
    tasks.append(Task("capture", [case(s, True) for s in sizes], options))
    by_id = {r["id"]: r for r in h.run(tasks)}
    rows = [
        {
            "size": s,
            "guarded": g,
            "predicted_fault": predicted[s] and not g,
            **_outcome(by_id[case(s, g)["id"]]),
        }
        for g in (False, True)
        for s in sizes
    ]
    return {"config": vars(config), "rows": rows}


def differential(h: Harness) -> Row:
    from runtime_guard import reference

    seed, total = h.args.seed, h.args.diff_cases
    inputs = [C.diff_case(seed, i) for i in range(total)]
    model_fault = [reference.schedule(c.lens, h.num_sms).faults for c in inputs]
    samples = _fault_samples(inputs, model_fault, h.args.fault_samples)

    plain = [
        {"id": c.index, "guarded": True, "unguarded": not model_fault[c.index]} for c in inputs
    ]
    chunk = -(-len(plain) // max(1, h.args.parallel))
    tasks = [
        Task("diff", plain[i : i + chunk], {"seed": seed}, seconds_per_case=2)
        for i in range(0, len(plain), chunk)
    ]
    tasks += [
        Task("diff", [{"id": i, "guarded": False, "unguarded": True}], {"seed": seed})
        for i in samples
    ]
    results = h.run(tasks)
    guarded = {r["id"]: r for r in results[: len(plain)]}
    raw = {r["id"]: r for r in results[len(plain) :]}
    raw.update({i: r for i, r in guarded.items() if not model_fault[i]})

    rows = []
    for c in inputs:
        r = raw.get(c.index)
        rows.append(
            [
                c.index,
                c.batch,
                c.next_n,
                c.pattern,
                C.lens_digest(c.lens),
                model_fault[c.index],
                C.fault_predicate(c.lens),
                r["status"] if r else "not_run",
                r.get("schedule_match") if r else None,
                r.get("digest") if r else None,
                guarded[c.index].get("guarded_match"),
                guarded[c.index].get("guard_path"),
                guarded[c.index].get("guarded_equals_kernel_on_clamped"),
            ]
        )
    return {
        "seed": seed,
        "generator": "runtime_guard._sm90.cases.diff_case(seed, index)",
        "num_sms": h.num_sms,
        "fault_samples": "one process per (batch, next_n) class of predicted faults",
        "columns": list(tally.DIFF_COLUMNS),
        "rows": rows,
        "errors": [r for r in results if r["status"] not in ("ok", "fault")][:20],
    }


def _fault_samples(inputs: list[C.DiffCase], model_fault: list[bool], limit: int) -> list[int]:
    """The first predicted-fault case of each (batch, next_n) class, at most ``limit``."""
    chosen: dict[tuple[int, int], int] = {}
    for c in inputs:
        if model_fault[c.index]:
            chosen.setdefault((c.batch, c.next_n), c.index)
    return sorted(chosen.values())[:limit]


def semantics(h: Harness) -> Row:
    from runtime_guard._sm90.semantics import semantics_batches

    root = str(h.args.pieces / h.manifest["semantics"]["path"])
    batches = semantics_batches()
    rows = h.run([Task("semantics", batches, {"deep_gemm_root": root}, seconds_per_case=600)])
    sanitized = []
    if h.sanitizer is not None:
        task = Task(
            "semantics",
            batches,
            {"deep_gemm_root": root, "clamped_only": True},
            seconds_per_case=600,
            env=MEMCHECK_ENV,
        )
        sanitized.append(
            {
                "case": "every batch, clamped schedule",
                "guarded": True,
                **h.memcheck(task, "semantics-clamped"),
            }
        )
    return {"batches": batches, "rows": rows, "sanitizer": sanitized}


def cost(h: Harness) -> Row:
    from runtime_guard._sm90.cost import cost_batches

    rows = h.run([Task("cost", cost_batches(), seconds_per_case=300)])
    return {"rows": rows}


def empty_batch(h: Harness) -> Row:
    from runtime_guard._sm90.empty import empty_cases

    options = {"deep_gemm_root": str(h.args.pieces / h.manifest["semantics"]["path"])}
    plain = empty_cases()
    rows = h.run([Task("empty", [case], options, seconds_per_case=120) for case in plain])
    sanitized: list[Row] = []
    if h.sanitizer is not None:
        checked = [c for c in plain if c["batch"] == 0]

        def check(case: Row) -> Row:
            task = Task("empty", [case], options, seconds_per_case=300, env=MEMCHECK_ENV)
            name = "empty-" + "".join(ch if ch.isalnum() else "-" for ch in case["id"])
            return {"case": case["id"], "guarded": case["guarded"], **h.memcheck(task, name)}

        with ThreadPoolExecutor(max_workers=max(1, h.args.parallel)) as pool:
            sanitized = list(pool.map(check, checked))
    return {
        "cases": plain,
        "rows": [{**case, **_outcome(row), **_empty_extra(row)} for case, row in zip(plain, rows)],
        "sanitizer": sanitized,
    }


def sglang_section(h: Harness) -> Row:
    """Section 8: SGLang's two schedule kernels, alone and in a captured decode batch."""
    from runtime_guard._sm90 import build
    from runtime_guard._sm90 import sglang as S

    started = time.time()
    include = h.work / "sglang_jit" / "include"
    described = S.write_kernels_header(h.args.pieces, h.manifest, include)
    jit_ext = build.build(
        include,
        h.work / "build-sglang-jit",
        h.num_sms,
        verbose=h.args.verbose,
        sources=S.JIT_SOURCES,
        name=f"rg_sglang_metadata_{h.num_sms}sms",
    )
    sgl = h.manifest["sgl_scheduler"]
    deep_gemm_ext = build.build(
        h.args.pieces / sgl["path"] / "include",
        h.work / "build-sgl-deep-gemm",
        h.num_sms,
        verbose=h.args.verbose,
        name=f"rg_sgl_deep_gemm_metadata_{h.num_sms}sms",
    )
    sizes = S.decode_capture_sizes()
    options = {
        "jit_ext": str(jit_ext),
        "deep_gemm_ext": str(deep_gemm_ext),
        "triton_file": str(h.args.pieces / h.manifest["sglang"]["path"] / S.TRITON_FILE),
        "max_size": max(sizes),
    }
    builds = {
        "jit": {
            **described,
            "sources": [p.relative_to(REPO_ROOT).as_posix() for p in S.JIT_SOURCES],
        },
        "deep_gemm": {
            "wheel": sgl["wheel"],
            "header": sgl["header"],
            "header_sha256": sgl["header_sha256"],
            "sources": [p.relative_to(REPO_ROOT).as_posix() for p in build.SOURCES],
        },
        "flags": build.compile_flags(h.num_sms),
        "seconds": round(time.time() - started, 1),
    }
    plain = S.jit_cases()

    def capture_case(size: int, path: str) -> Row:
        return {"id": f"{size} {path}", "size": size, "path": path}

    faulting = [s for s in sizes if C.fault_predicate([[n] for n in S.capture_lens(s)])]
    tasks = [Task("sglang_jit", plain, options, seconds_per_case=60)]
    tasks += [Task("sglang_capture", [capture_case(s, "deep_gemm")], options) for s in faulting]
    tasks.append(
        Task(
            "sglang_capture",
            [capture_case(s, "deep_gemm") for s in sizes if s not in faulting],
            options,
        )
    )
    tasks.append(Task("sglang_capture", [capture_case(s, "jit") for s in sizes], options))
    by_id = {r["id"]: r for r in h.run(tasks)}
    sanitized: list[Row] = []
    if h.sanitizer is not None:
        checked = {
            "jit": [c for c in plain if c["id"] in S.MEMCHECK_JIT_CASES],
            "deep_gemm": [{"id": "all 0 B=32", "batch": 32, "path": "deep_gemm"}],
        }

        def check(path: str) -> Row:
            task = Task("sglang_jit", checked[path], options, seconds_per_case=300)
            task.env = MEMCHECK_ENV
            return {
                "case": ", ".join(c["id"] for c in checked[path]),
                "path": path,
                **h.memcheck(task, f"sglang-{path}"),
            }

        with ThreadPoolExecutor(max_workers=2) as pool:
            sanitized = list(pool.map(check, ("jit", "deep_gemm")))
    keep = ("status", "error", "stage", "digest", "model_match", "deep_gemm_model_match", "process")
    return {
        "builds": builds,
        "config": {
            "max_bs": S.MAX_BS,
            "page_size": S.PAGE_SIZE,
            "compressed_page_size": S.COMPRESSED_PAGE_SIZE,
            "seq_len_fill_value": S.SEQ_LEN_FILL_VALUE,
        },
        "jit_rows": [
            {
                "case": c["id"],
                "batch": c["batch"],
                **{k: by_id[c["id"]][k] for k in keep if k in by_id[c["id"]]},
            }
            for c in plain
        ],
        "rows": [
            {
                "size": s,
                "path": path,
                "predicted_fault": path == "deep_gemm" and s in faulting,
                **{k: row[k] for k in (*keep, "lens_max") if k in row},
            }
            for path in S.PATHS
            for s in sizes
            for row in (by_id[capture_case(s, path)["id"]],)
        ],
        "sanitizer": sanitized,
    }


def _empty_extra(row: Row) -> Row:
    keep = (
        "shape",
        "dtype",
        "device",
        "same_stream_device",
        "logits_shape",
        "logits_error",
        "context_survives",
    )
    return {k: row[k] for k in keep if k in row}


SECTION_RUNNERS: dict[str, Callable[[Harness], Row]] = {
    "seed_table": seed_table,
    "sanitizer": sanitizer_section,
    "capture": capture,
    "differential": differential,
    "semantics": semantics,
    "cost": cost,
    "empty_batch": empty_batch,
    "sglang": sglang_section,
}


def _outcome(row: Row) -> Row:
    keep = (
        "status",
        "error",
        "schedule_match",
        "model_fault",
        "digest",
        "stage",
        "guard_path",
        "process",
    )
    return {k: row[k] for k in keep if k in row}


# -- environment and provenance -------------------------------------------------------------


def source_hashes() -> dict[str, str]:
    """sha256 of every runtime_guard source file, keyed by its path in the repository."""
    files = sorted(
        p
        for p in PACKAGE_DIR.rglob("*")
        if p.suffix in (".py", ".cu", ".cpp", ".h") and "__pycache__" not in p.parts
    )
    return {
        p.relative_to(REPO_ROOT).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in files
    }


def environment(sanitizer: str | None) -> Row:
    import torch
    from torch.utils.cpp_extension import CUDA_HOME

    from runtime_guard._sm90 import sanitizer as sanitizer_tools

    props = torch.cuda.get_device_properties(0)
    return {
        "gpu": props.name,
        "compute_capability": f"{props.major}.{props.minor}",
        "num_sms": props.multi_processor_count,
        "driver": _command_line(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
        ),
        "cuda_runtime_torch": torch.version.cuda,
        "nvcc": _command_line(
            [str(Path(CUDA_HOME or "/usr/local/cuda") / "bin" / "nvcc"), "--version"], last=True
        ),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "compute_sanitizer": sanitizer_tools.version(sanitizer) if sanitizer else None,
    }


def _command_line(command: list[str], *, last: bool = False) -> str | None:
    try:
        out = subprocess.run(
            command, capture_output=True, text=True, timeout=60, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    return (lines[-1] if last else lines[0]) if lines else None


def missing_api() -> list[str]:
    """The parts of the agreed runtime_guard API this checkout lacks."""
    missing = []
    try:
        import runtime_guard
    except ImportError as error:
        return [f"runtime_guard: {error}"]
    for name in (
        "clamp_context_lens",
        "guard",
        "guard_path",
        "get_paged_mqa_logits_metadata",
        "install",
        "uninstall",
        "is_installed",
    ):
        if not hasattr(runtime_guard, name):
            missing.append(f"runtime_guard.{name}")
    try:
        from runtime_guard import reference
    except ImportError:
        return [*missing, "runtime_guard.reference"]
    if not hasattr(reference, "schedule"):
        missing.append("runtime_guard.reference.schedule")
    return missing


def load_manifest(pieces: Path) -> Row:
    path = pieces / "manifest.json"
    if not path.exists():
        raise SystemExit(
            f"error: {path} not found: run `python devtools/prepare_sm90.py` "
            "on a machine with network first"
        )
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise SystemExit(f"error: {path}: not valid JSON ({error})") from None


def dump_report(report: Row) -> str:
    """Indented JSON, except that a list of scalars (a row, a schedule) stays on one line."""

    def render(value: Any, depth: int) -> str:
        pad, inner = " " * depth, " " * (depth + 1)
        if isinstance(value, dict) and value:
            items = [f"{inner}{json.dumps(k)}: {render(v, depth + 1)}" for k, v in value.items()]
            return "{\n" + ",\n".join(items) + f"\n{pad}}}"
        if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
            items = [f"{inner}{render(v, depth + 1)}" for v in value]
            return "[\n" + ",\n".join(items) + f"\n{pad}]"
        return json.dumps(value)

    return render(report, 0) + "\n"


def write_report(args: argparse.Namespace, report: Row) -> None:
    """Write the report with this machine's folders replaced by neutral names."""
    text = dump_report(report)
    for path, name in ((REPO_ROOT, "."), (args.work, "<work>"), (Path.home(), "~")):
        text = text.replace(str(path), name)
    args.out.write_text(text)


def command_line(args: argparse.Namespace) -> str:
    """The command that made the report, without this machine's paths."""
    return (
        f"python -m runtime_guard.verify_sm90 --out {args.out.name} --sections {args.sections}"
        f" --parallel {args.parallel} --diff-cases {args.diff_cases} --seed {args.seed}"
        f" --fault-samples {args.fault_samples}"
    )


# -- main ------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m runtime_guard.verify_sm90", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", type=Path, required=True, help="where to write the JSON report")
    parser.add_argument(
        "--pieces",
        type=Path,
        default=Path(".sm90"),
        help="what devtools/prepare_sm90.py wrote (default: .sm90)",
    )
    parser.add_argument(
        "--work",
        type=Path,
        default=None,
        help="build and scratch folder (default: a new temporary folder)",
    )
    parser.add_argument(
        "--sections",
        default=",".join(SECTIONS),
        help=f"comma-separated subset of {','.join(SECTIONS)}",
    )
    parser.add_argument("--parallel", type=int, default=8, help="worker processes at once")
    parser.add_argument("--diff-cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0, help="seed of the differential inputs")
    parser.add_argument(
        "--fault-samples",
        type=int,
        default=64,
        help="predicted-fault inputs run on the raw kernel, one process each",
    )
    parser.add_argument("--verbose", action="store_true", help="show the extension build")
    args = parser.parse_args(argv)
    unknown = set(args.sections.split(",")) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.pieces = args.pieces.resolve()
    args.work = (args.work or Path(tempfile.mkdtemp(prefix="rg-sm90-"))).resolve()
    manifest = load_manifest(args.pieces)
    started = time.time()

    import torch

    from runtime_guard._sm90 import build
    from runtime_guard._sm90 import sanitizer as sanitizer_tools

    if not torch.cuda.is_available():
        raise SystemExit("error: no CUDA device visible to torch")
    major, _ = torch.cuda.get_device_capability(0)
    if major != 9:
        raise SystemExit(f"error: this checks the SM90 kernel; the GPU is sm_{major}x")
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    from torch.utils.cpp_extension import CUDA_HOME

    sanitizer = sanitizer_tools.find_sanitizer(CUDA_HOME)
    report: Row = {
        "schema": REPORT_SCHEMA,
        "command": command_line(args),
        "started_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "environment": environment(sanitizer),
        "pieces": manifest,
        "runtime_guard_sources": source_hashes(),
        "missing_api": missing_api(),
    }
    include = args.pieces / manifest["scheduler"]["path"] / "include"
    build_started = time.time()
    ext_path = build.build(include, args.work / "build", num_sms, verbose=args.verbose)
    report["extension"] = {
        "sources": [p.relative_to(REPO_ROOT).as_posix() for p in build.SOURCES],
        "header": manifest["scheduler"]["header"],
        "header_sha256": manifest["scheduler"]["header_sha256"],
        "flags": build.compile_flags(num_sms),
        "launch": {
            "grid": 1,
            "block": 32,
            "dynamic_smem_bytes": "align(B, 32) * 4",
            "split_kv": 256,
            "num_sms": num_sms,
            "kIsVarlen": False,
            "is_context_lens_2d": True,
            "block_kv": C.BLOCK_KV,
            "pdl": False,
        },
        "build_seconds": round(time.time() - build_started, 1),
    }
    harness = Harness(args, manifest, ext_path, num_sms, sanitizer)
    for name in args.sections.split(","):
        section_started = time.time()
        print(f"[verify_sm90] {name} ...", flush=True)
        try:
            section = SECTION_RUNNERS[name](harness)
            section["counts"] = tally.counts_of(name, section)
            section["passed"] = tally.passed_of(name, section["counts"])
            report[name] = section
        except Exception:  # noqa: BLE001 - a broken section is reported, the others still run
            report[name] = {"passed": False, "error": traceback.format_exc()[-3000:]}
        report[name]["seconds"] = round(time.time() - section_started, 1)
        write_report(args, report)  # a run cut short keeps what it finished
        print(
            f"[verify_sm90] {name}: passed={report[name]['passed']} "
            f"counts={json.dumps(report[name].get('counts'))}",
            flush=True,
        )
    report["verdict"] = {name: report[name]["passed"] for name in args.sections.split(",")}
    report["wall_seconds"] = round(time.time() - started, 1)
    report["process_transcripts"] = [
        t
        for t in harness.runner.transcripts
        if t["ended"] != "exit" or t["returncode"] not in (0, 3)
    ]
    write_report(args, report)
    print(
        f"[verify_sm90] wrote {args.out} in {report['wall_seconds']} s; "
        f"verdict {json.dumps(report['verdict'])}",
        flush=True,
    )
    return 0 if all(report["verdict"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())

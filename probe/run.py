"""Run every declared kernel on every edge case, each in its own process, plain and under
compute-sanitizer memcheck, and write the JSON report.

On an SM90 machine, from the repository root, after ``python devtools/prepare_sm90.py`` and
``python devtools/prepare_probe.py`` on a machine with network::

    python -m probe.run --out probe-report.json

then ``python -m probe.render probe-report.json`` for the docs page.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from probe import predicates
from probe.cases import edge_cases
from probe.kernels import BY_NAME, KERNELS, NOT_RUN, Kernel
from probe.worker import EXIT_FAULT, MARKER

REPO_ROOT = Path(__file__).resolve().parent.parent
CSRC = Path(__file__).resolve().parent / "csrc"
REPORT_SCHEMA = 1
MODES = ("plain", "memcheck")

Row = dict[str, Any]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m probe.run", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="where to write the JSON report")
    parser.add_argument("--sm90-pieces", type=Path, default=Path(".sm90"))
    parser.add_argument("--probe-pieces", type=Path, default=Path(".probe"))
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (default: temp)")
    parser.add_argument("--kernels", default=",".join(k.name for k in KERNELS))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument(
        "--cases", default=None, help="comma-separated case names (default: every edge case)"
    )
    parser.add_argument(
        "--merge",
        type=Path,
        default=None,
        help="an earlier report: keep its other kernels, replace those run now (in declared order)",
    )
    parser.add_argument("--parallel", type=int, default=8, help="processes at once")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per plain case")
    parser.add_argument(
        "--memcheck-timeout", type=float, default=300, help="seconds per case under memcheck"
    )
    args = parser.parse_args(argv)
    unknown = set(args.kernels.split(",")) - set(BY_NAME)
    if unknown:
        parser.error(f"unknown kernels: {', '.join(sorted(unknown))}")
    return args


def build_extensions(args: argparse.Namespace, num_sms: int) -> dict[str, str | None]:
    """The two standalone scheduler builds; a failed build is recorded, not fatal."""
    from runtime_guard._sm90 import build

    built: dict[str, str | None] = {"ext_261": None, "ext_281": None}
    errors: dict[str, str] = {}
    jobs = {
        "ext_261": (args.sm90_pieces / "dg_2_6_1" / "include", build.SOURCES, None),
        "ext_281": (
            args.probe_pieces / "dg_2_8_1" / "include",
            (CSRC / "sm90_281.cpp", CSRC / "sm90_281_launch.cu"),
            f"probe_sm90_281_{num_sms}sms",
        ),
    }
    for key, (include, sources, name) in jobs.items():
        try:
            path = build.build(include, args.work / key, num_sms, sources=sources, name=name)
            built[key] = str(path)
        except Exception as error:  # noqa: BLE001 - that kernel's cases then say why
            errors[key] = str(error)[-2000:]
    built_errors = {"build_errors": errors} if errors else {}
    return {**built, **built_errors}


class Probe:
    def __init__(self, args: argparse.Namespace, env: Row, sanitizer: str | None) -> None:
        self.args = args
        self.env = env
        self.sanitizer = sanitizer
        self.lock = threading.Lock()
        self.done = 0
        self.process_env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                filter(None, (str(REPO_ROOT), os.environ.get("PYTHONPATH")))
            ),
            "PYTHONUNBUFFERED": "1",
            "DG_JIT_CACHE_DIR": str(args.work / "deep_gemm_jit"),
            "TRITON_CACHE_DIR": str(args.work / "triton"),
        }

    def run_one(self, kernel: Kernel, case_name: str, mode: str) -> Row:
        payload = json.dumps({"kernel": kernel.name, "case": case_name, "env": self.env})
        command = [sys.executable, "-m", "probe.worker"]
        env = dict(self.process_env)
        timeout = self.args.timeout
        log = None
        if mode == "memcheck":
            from runtime_guard._sm90.sanitizer import memcheck_wrapper

            assert self.sanitizer is not None
            slug = "".join(ch if ch.isalnum() else "-" for ch in f"{kernel.name}-{case_name}")
            log = self.args.work / "memcheck" / f"{slug}.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            command = [*memcheck_wrapper(self.sanitizer, log), *command]
            # Graph capture needs torch's caching allocator (its private pool); the guarded
            # variants capture, so they keep it and memcheck sees torch's blocks, not each
            # tensor. The unguarded kernels run uncached: each tensor its own allocation.
            if not kernel.guard:
                env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
            timeout = self.args.memcheck_timeout
        started = time.perf_counter()
        process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=env,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            stdout, stderr = process.communicate(payload, timeout=timeout)
            ended = "exit" if process.returncode in (0, EXIT_FAULT) else "crash"
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            stdout, stderr = process.communicate()
            ended = "timeout"
        lines = [json.loads(x[len(MARKER) :]) for x in stdout.splitlines() if x.startswith(MARKER)]
        result: Row = {
            "ended": ended,
            "returncode": process.returncode,
            "seconds": round(time.perf_counter() - started, 1),
            "row": lines[-1] if lines else None,
        }
        if result["row"] is None or ended != "exit":
            result["stderr_tail"] = stderr[-1200:]
        if log is not None:
            from runtime_guard._sm90.sanitizer import parse_log

            result["allocator"] = "caching" if kernel.guard else "uncached"
            parsed = parse_log(log.read_text(errors="replace") if log.exists() else "")
            result["sanitizer_errors"] = parsed["errors"]
            result["memory_errors"] = sum(
                n for kind, n in parsed["printed_error_kinds"].items() if kind.startswith("Invalid")
            )
            result["first_error"] = parsed["first_error"][:4]
        result["outcome"] = predicates.outcome(result)
        if result["row"] is not None:
            result["nonfinite_rows"] = predicates.nonfinite(result["row"])
        with self.lock:
            self.done += 1
            print(
                f"[probe] {self.done} {kernel.name} | {case_name} | {mode}: "
                f"{result['outcome']} ({result['seconds']} s)",
                flush=True,
            )
        return result


def environment(sanitizer: str | None) -> Row:
    from runtime_guard.verify_sm90 import environment as sm90_environment

    env = sm90_environment(sanitizer)
    try:
        import triton

        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = None
    return env


def load_manifest(folder: Path, script: str) -> Row:
    path = folder / "manifest.json"
    if not path.exists():
        raise SystemExit(f"error: {path} not found: run `python {script}` first")
    return json.loads(path.read_text())


def merge(earlier: Row, now: Row) -> Row:
    """``earlier`` with the kernels of ``now`` in place of its own of the same name, every
    kernel in declared order; ``now``'s command, start, environment and wall time recorded
    under ``runs`` beside the earlier run's."""
    order = [k.name for k in KERNELS]
    kernels = {k["name"]: k for k in earlier["kernels"]}
    ran_now = [k["name"] for k in now["kernels"]]
    if now["modes"] != earlier["modes"]:
        raise SystemExit(f"error: --merge: modes {now['modes']} differ from {earlier['modes']}")
    runs = earlier.get("runs") or [
        {key: earlier[key] for key in ("command", "started_utc", "environment", "wall_seconds")}
    ]
    for kernel in now["kernels"]:
        kernel["run"] = len(runs)  # the index of this run in ``runs`` below
        kernels[kernel["name"]] = kernel
    merged = dict(earlier)
    merged["kernels"] = [kernels[name] for name in order if name in kernels]
    merged["runs"] = [
        *runs,
        {
            **{key: now[key] for key in ("command", "started_utc", "environment", "wall_seconds")},
            "kernels": ran_now,
        },
    ]
    return merged


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.sm90_pieces, args.probe_pieces = args.sm90_pieces.resolve(), args.probe_pieces.resolve()
    args.work = (args.work or Path(tempfile.mkdtemp(prefix="probe-"))).resolve()
    manifests = {
        "sm90": load_manifest(args.sm90_pieces, "devtools/prepare_sm90.py"),
        "probe": load_manifest(args.probe_pieces, "devtools/prepare_probe.py"),
    }
    started = time.time()
    import torch
    from torch.utils.cpp_extension import CUDA_HOME

    from probe import standins
    from runtime_guard._sm90.sanitizer import find_sanitizer

    if not torch.cuda.is_available():
        raise SystemExit("error: no CUDA device visible to torch")
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    sanitizer = find_sanitizer(CUDA_HOME)
    modes = [m for m in args.modes.split(",") if m != "memcheck" or sanitizer]
    vllm_dir = args.probe_pieces / manifests["probe"]["vllm"]["path"]
    env: Row = {
        "standins": str(standins.build(vllm_dir, args.work / "standins")),
        "deep_gemm_root": str(args.sm90_pieces / manifests["sm90"]["semantics"]["path"]),
    }
    kernels = [BY_NAME[name] for name in args.kernels.split(",")]
    build_started = time.time()
    needs_build = any(k.impl in ("Scheduler261", "Scheduler281") for k in kernels)
    built = build_extensions(args, num_sms) if needs_build else {"ext_261": None, "ext_281": None}
    build_seconds = round(time.time() - build_started, 1)
    env.update({k: v for k, v in built.items() if k.startswith("ext_")})
    probe = Probe(args, env, sanitizer)

    chosen = set(args.cases.split(",")) if args.cases else None
    plan = {
        k.name: [c.name for c in edge_cases(k.next_n) if chosen is None or c.name in chosen]
        for k in kernels
    }
    results: dict[tuple[str, str, str], Row] = {}
    # Warm the JIT caches (DeepGEMM, Triton) with one plain control per kernel, then the rest.
    warm = [
        (k, next((c for c in plan[k.name] if c.startswith("control")), plan[k.name][0]), "plain")
        for k in kernels
    ]
    rest = [
        (k, c, m) for m in modes for k in kernels for c in plan[k.name] if (k, c, m) not in warm
    ]
    with ThreadPoolExecutor(max_workers=max(1, args.parallel)) as pool:
        for batch in (warm, rest):
            for key, result in zip(batch, pool.map(lambda t: probe.run_one(*t), batch)):
                results[(key[0].name, key[1], key[2])] = result

    report: Row = {
        "schema": REPORT_SCHEMA,
        "command": f"python -m probe.run --out {args.out.name} --parallel {args.parallel} "
        f"--timeout {args.timeout:g} --memcheck-timeout {args.memcheck_timeout:g}"
        + (f" --cases '{args.cases}'" if args.cases else "")
        + (f" --kernels {args.kernels}" if len(kernels) < len(KERNELS) else ""),
        "started_utc": datetime.datetime.fromtimestamp(started, datetime.timezone.utc).isoformat(
            timespec="seconds"
        ),
        "environment": environment(sanitizer),
        "pieces": manifests,
        "build": {
            "seconds": build_seconds,
            "errors": built.get("build_errors", {}),
        },
        "modes": modes,
        "kernels": [],
        "not_run": [{"kernel": k, "why": why} for k, why in NOT_RUN],
    }
    for kernel in kernels:
        folder, role = kernel.piece.split(":")
        piece = manifests[folder][role]
        rows = []
        for case in edge_cases(kernel.next_n):
            if case.name not in plan[kernel.name]:
                continue
            entry: Row = {"case": case.name, **case.as_dict()}
            for mode in modes:
                entry[mode] = results[(kernel.name, case.name, mode)]
            rows.append(entry)
        report["kernels"].append(
            {
                "name": kernel.name,
                "title": kernel.title,
                "source": kernel.source,
                "wheel": piece["wheel"],
                "wheel_sha256": piece["wheel_sha256"],
                "load": kernel.load,
                "inputs": kernel.inputs,
                "outputs": kernel.outputs,
                "reference": kernel.reference,
                "next_n": list(kernel.next_n),
                "cases": rows,
                "predicates": predicates.kernel_predicates(kernel.next_n, rows),
            }
        )
    report["wall_seconds"] = round(time.time() - started, 1)
    wall_seconds = report["wall_seconds"]
    if args.merge is not None:
        report = merge(json.loads(args.merge.read_text()), report)
    text = json.dumps(report, indent=1) + "\n"
    for path, name in (
        (REPO_ROOT, "."),
        (args.work, "<work>"),
        (Path(sys.prefix), "<python>"),
        (Path.home(), "~"),
    ):
        text = text.replace(str(path), name)
    args.out.write_text(text)
    print(f"[probe] wrote {args.out} in {wall_seconds} s", flush=True)
    for kernel in report["kernels"]:
        print(f"[probe] {kernel['name']}: {kernel['predicates']['summary']}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

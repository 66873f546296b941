"""Run worker tasks in fresh processes, in parallel, surviving faults.

A CUDA fault poisons its process's context, so a task is a list of cases run by one
process until it ends; whatever cases it did not report are started again in a new
process. A case that kills its process without reporting (or runs past its deadline) is
recorded as ``crash`` / ``timeout`` and skipped on the restart.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime_guard._sm90.worker import EXIT_FAULT, MARKER

Row = dict[str, Any]


@dataclass
class Task:
    kind: str
    cases: list[Row]
    options: Row = field(default_factory=dict)
    seconds_per_case: float = 30.0
    wrapper: Sequence[str] = ()  # e.g. ("compute-sanitizer", "--tool", "memcheck")
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Runner:
    repo_root: Path
    ext_path: Path | None
    env: dict[str, str]
    startup_seconds: float = 120.0
    transcripts: list[Row] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def run_all(self, tasks: Sequence[Task], parallel: int) -> list[Row]:
        """Every case of every task, each reported once, in task order."""
        with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
            results = list(pool.map(self.run_task, tasks))
        return [row for rows in results for row in rows]

    def run_task(self, task: Task) -> list[Row]:
        """Run ``task`` until every case has a row, restarting after each fault."""
        rows: dict[Any, Row] = {}
        pending = list(task.cases)
        restarts = 0
        while pending:
            reported, transcript = self._run_process(task, pending)
            rows.update({row["id"]: {**row, "process": restarts} for row in reported})
            remaining = [case for case in pending if case["id"] not in rows]
            if remaining and not any(row["status"] == "fault" for row in reported):
                # Died or timed out without naming a case: blame the next one, or every
                # remaining one when nothing ran at all (a broken start would repeat).
                blamed = remaining if not reported else remaining[:1]
                for case in blamed:
                    rows[case["id"]] = {
                        "id": case["id"],
                        "status": transcript["ended"],
                        "error": transcript["stderr_tail"][-600:],
                        "process": restarts,
                    }
                remaining = remaining[len(blamed) :]
            pending = remaining
            restarts += 1
        return [rows[case["id"]] for case in task.cases]

    def _run_process(self, task: Task, cases: list[Row]) -> tuple[list[Row], Row]:
        payload = json.dumps(
            {
                "kind": task.kind,
                "ext": str(self.ext_path) if self.ext_path else None,
                "options": task.options,
                "cases": cases,
            }
        )
        command = [*task.wrapper, sys.executable, "-m", "runtime_guard._sm90.worker"]
        deadline = self.startup_seconds + task.seconds_per_case * len(cases)
        process = subprocess.Popen(
            command,
            cwd=self.repo_root,
            env={**self.env, **task.env},
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            stdout, stderr = process.communicate(payload, timeout=deadline)
            ended = "exit" if process.returncode in (0, EXIT_FAULT) else "crash"
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
            ended = "timeout"
        reported = [
            json.loads(line[len(MARKER) :])
            for line in stdout.splitlines()
            if line.startswith(MARKER)
        ]
        transcript = {
            "kind": task.kind,
            "cases": len(cases),
            "reported": len(reported),
            "returncode": process.returncode,
            "ended": ended,
            "wrapper": list(task.wrapper),
            "stdout_other": "\n".join(
                line for line in stdout.splitlines() if not line.startswith(MARKER)
            )[-4000:],
            "stderr_tail": stderr[-4000:],
        }
        with self._lock:
            self.transcripts.append(transcript)
        return reported, transcript


def worker_env(repo_root: Path, **variables: str) -> dict[str, str]:
    """The environment of a worker: this one, with the repository first on PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(repo_root), env.get("PYTHONPATH"))))
    env["PYTHONUNBUFFERED"] = "1"
    env.update(variables)
    return env

"""One case of one kernel, in a process of its own: ``python -m probe.worker`` with
``{"kernel", "case", "next_n_values", "env"}`` as JSON on stdin.

Prints one ``@@probe {...}`` line. A CUDA error poisons the context: the line says
``fault`` and the process exits at once with EXIT_FAULT.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

MARKER = "@@probe "
EXIT_FAULT = 3


def emit(row: dict[str, Any]) -> None:
    sys.stdout.write(MARKER + json.dumps(row) + "\n")
    sys.stdout.flush()


def is_cuda_error(error: BaseException) -> bool:
    return type(error).__name__ == "AcceleratorError" or "CUDA error" in str(error)


def first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}"[:400]


def main() -> int:
    task = json.load(sys.stdin)
    started = time.perf_counter()
    from probe import impl
    from probe.cases import case_named
    from probe.kernels import BY_NAME

    kernel = BY_NAME[task["kernel"]]
    case = case_named(task["case"], kernel.next_n)
    env = impl.Env(**{k: Path(v) if v else None for k, v in task["env"].items()})
    try:
        if kernel.guard:
            from probe import guarded

            runner = getattr(guarded, kernel.impl)(env)
        else:
            runner = getattr(impl, kernel.impl)(env)
        row = {"status": "ran", **runner.run(case)}
    except Exception as error:  # noqa: BLE001 - every failure is an outcome
        fault = is_cuda_error(error)
        emit(
            {
                "status": "fault" if fault else "rejected",
                "error": first_line(error),
                "traceback": "" if fault else traceback.format_exc(limit=3)[-1200:],
                "seconds": round(time.perf_counter() - started, 2),
            }
        )
        if fault:
            os._exit(EXIT_FAULT)
        return 0
    emit({**row, "seconds": round(time.perf_counter() - started, 2)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

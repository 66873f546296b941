"""What importing runtime_guard costs a serving process: no torch, libcst or z3, and nothing
beyond the standard library.

bench/guard_import.py measures the wall-clock cost against its 50 ms budget; a timed test
here would only be as steady as the machine running it.
"""

from __future__ import annotations

import json
import subprocess
import sys


def run_python(code: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *flags, "-c", code], capture_output=True, text=True, check=True
    )


def test_import_and_install_load_no_torch_libcst_or_z3() -> None:
    done = run_python(
        "import json, sys, runtime_guard; runtime_guard.install(); "
        "print(json.dumps([m for m in ('torch', 'libcst', 'z3') if m in sys.modules]))"
    )
    assert json.loads(done.stdout) == []


def test_reference_model_loads_without_torch() -> None:
    done = run_python(
        "import sys, runtime_guard; print(runtime_guard.reference.faults([0] * 32), "
        "'torch' in sys.modules)"
    )
    assert done.stdout.split() == ["True", "False"]


def test_import_loads_only_the_standard_library() -> None:
    """What makes the import cheap, checked without a clock (a timed test is only as steady
    as the machine): nothing outside the standard library and runtime_guard itself is
    loaded. The time budget is bench/guard_import.py's."""
    done = run_python(
        "import json, sys; before = set(sys.modules); import runtime_guard; "
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    loaded = json.loads(done.stdout)
    assert "runtime_guard" in loaded
    outside = [
        m
        for m in loaded
        if m.split(".")[0] not in sys.stdlib_module_names and m.split(".")[0] != "runtime_guard"
    ]
    assert outside == []

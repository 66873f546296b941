"""The SGLang switch: ``ZEROLINT_GUARD_SGLANG=1`` guards every Python process of the
environment at start-up, as vLLM's plugin does for vLLM.

SGLang has no general plugin system, so zerolint's wheel installs ``zerolint_guard.pth``
into site-packages. Python runs its one line at every interpreter start; the line reads
only ``os.environ`` (already imported by ``site``) and imports this module when
``ZEROLINT_GUARD_SGLANG`` is set, so a process without it pays nothing. ``activate()`` then
calls ``runtime_guard.install()``, whose import hook guards DeepGEMM (``deep_gemm``, the
``sgl-deep-gemm`` package SGLang imports) when SGLang loads it, in the server and in every
worker process it spawns (they inherit the environment). ``ZEROLINT_GUARD=0`` and
``ZEROLINT_GUARD_OFF`` still apply.
"""

from __future__ import annotations

import os

from runtime_guard.patch import OFF_VALUES

ENV_VAR = "ZEROLINT_GUARD_SGLANG"
PTH_NAME = "zerolint_guard.pth"
PTH_LINE = (
    'import os; os.environ.get("ZEROLINT_GUARD_SGLANG") and '
    '__import__("runtime_guard.sglang_hook", fromlist=["activate"]).activate()\n'
)
"""The line of ``zerolint_guard.pth`` (kept equal to the file by a test)."""


def requested() -> bool:
    """Whether ``ZEROLINT_GUARD_SGLANG`` asks for the guard: set, and not one of
    ``runtime_guard.patch.OFF_VALUES``."""
    value = os.environ.get(ENV_VAR, "").strip().lower()
    return bool(value) and value not in OFF_VALUES


def activate() -> bool:
    """Call ``runtime_guard.install()`` when ``requested()``; never raises (it runs from a
    .pth file, where an exception would print a traceback at every start). Returns whether
    the guard is installed."""
    if not requested():
        return False
    try:
        from runtime_guard.patch import install

        return install()
    except Exception:  # a failing guard must not stop the interpreter
        import logging

        logging.getLogger("runtime_guard").exception(
            "runtime_guard: %s is set but the guard could not be installed", ENV_VAR
        )
        return False

"""The vLLM general plugin: guard DeepGEMM and every other sink in every vLLM process.

vLLM calls every ``vllm.general_plugins`` entry point in each process it starts (API
server, engine core, workers, data-parallel ranks), before it loads a model.
"""

from __future__ import annotations

import logging

from runtime_guard.patch import install


def register() -> None:
    """Install the guard unless ``ZEROLINT_GUARD=0``; never raise into vLLM's startup."""
    try:
        install()
    except Exception:  # a failing guard must not stop the server
        logging.getLogger("runtime_guard").exception(
            "runtime_guard: could not install the DeepGEMM guard; serving unguarded"
        )

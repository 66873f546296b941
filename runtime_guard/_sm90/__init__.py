"""The SM90 verification's parts (``python -m runtime_guard.verify_sm90``): GPU-only tooling.

Nothing here is imported by ``runtime_guard`` itself; serving code never loads it.
"""

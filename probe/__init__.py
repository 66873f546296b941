"""The zero-length probe: run a GPU kernel on the edge cases of its per-row lengths.

``python -m probe.run --out docs/probe-report.json`` (on an SM90 GPU, after
``python devtools/prepare_sm90.py`` and ``python devtools/prepare_probe.py``) runs every
declared kernel (``probe.kernels``) on every case (``probe.cases``), each case in a fresh
process, plain and under ``compute-sanitizer --tool memcheck``, with a time limit, and
writes a JSON report that ``python -m probe.render`` turns into docs/zero-length-probe.md.

Not part of ``runtime_guard``: serving code never imports it.
"""

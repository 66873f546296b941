"""How fast does `zerolint server` answer an edit, against `ruff server` in the same run.

Tree: the ``vllm/`` package of the vLLM 0.33.0 wheel from PyPI (3,231 files), unpacked into
a scratch copy (``--tree sglang==0.5.23``: SGLang's ``sglang/``, 4,719 files; with
``--namespace-packages``, a ``pyproject.toml`` there sets ``namespace-packages`` to the
package, as the README's "Configuration" says SGLang needs). A real server process is
started in it with a real LSP client over stdio (``devtools/lsp_client.py``); the client
opens the file that calls the kernel (``vllm/v1/attention/backends/mla/indexer.py``,
``sglang/srt/layers/attention/deepseek_v4_backend.py``) and waits for its first
diagnostics: the server has then indexed the tree. Then it sends
``--edits`` didChange notifications, each inserting or removing a comment line in the
middle of the file (so every line below moves and every path is rebuilt), and times each
from the notification to the diagnostics of that version. ``ruff server`` gets the same
edits of the same file in the same rounds.

Prints the median and worst latency of each server, the ratio zerolint/ruff, the time to
the first diagnostics (indexing), and zerolint's resident memory after indexing and at the
end. Target (issue 17): median under 200 ms. Each edit is sent once the diagnostics of the
last one are in, more than the debounce (50 ms by default, ``--debounce-ms``) after it: the
server analyses such an edit at once, so the debounce is not in these times. A collection
of the analyses' garbage forced after a few edits without a pause is (the worst times).

    python bench/lsp_latency.py [--edits 20] [--vllm 0.33.0] [--debounce-ms 50]
    python bench/lsp_latency.py --tree sglang==0.5.23 [--namespace-packages]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.lsp_client import Client
from devtools.wheels import HOOK_FILE, serving_tree

TARGET_S = 0.200


def rss_mb(pid: int | None, field: str = "VmRSS") -> float:
    """The process's resident memory (Linux ``/proc``), in MB; 0 where unknown."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


def edited(text: str, i: int) -> str:
    """The i-th edit: a comment line in the middle of the file, on every other edit."""
    if i % 2:
        return text
    lines = text.splitlines(keepends=True)
    middle = len(lines) // 2
    return "".join(lines[:middle] + [f"# edit {i}\n"] + lines[middle:])


async def session(
    tree: Path, edited_file: str, command: list[str] | None, args: tuple[str, ...], edits: int
) -> dict[str, float | list[float]]:
    client = Client(tree, *args, command=command)
    path = tree / edited_file
    text = path.read_text()
    start = time.perf_counter()
    await client.start(answer_timeout=None if command is None else 10)
    uri = client.open(path)
    await client.wait_for(lambda: any(u == uri for _, u, _, _ in client.published), 600)
    first = time.perf_counter() - start
    memory = rss_mb(client.pid)
    times = []
    try:
        for i in range(edits):
            sent = time.perf_counter()
            client.change(uri, edited(text, i + 1))
            version = client.versions[uri]
            await client.wait_for(
                lambda v=version: any(u == uri and pv == v for _, u, pv, _ in client.published),
                120,
            )
            arrived = next(t for t, u, pv, _ in client.published if u == uri and pv == version)
            times.append(arrived - sent)
        findings = len(client.diagnostics.get(uri, []))
        end_memory = rss_mb(client.pid)
        peak = rss_mb(client.pid, "VmHWM")
    finally:
        await client.stop()
    return {
        "times": times,
        "first": first,
        "memory": memory,
        "end_memory": end_memory,
        "peak": peak,
        "findings": findings,
    }


def ruff_command() -> list[str] | None:
    here = Path(sys.executable).parent / "ruff"
    found = str(here) if here.exists() else shutil.which("ruff")
    return [found, "server"] if found else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--vllm", default="0.33.0", help="the vLLM release whose tree is used")
    parser.add_argument(
        "--tree", default=None, help="a serving wheel instead: vllm==X or sglang==X"
    )
    parser.add_argument(
        "--namespace-packages",
        action="store_true",
        help="set `namespace-packages` to the package in the tree's pyproject.toml",
    )
    parser.add_argument("--debounce-ms", type=int, default=50)
    args = parser.parse_args()

    requirement = args.tree or f"vllm=={args.vllm}"
    source, package = serving_tree(requirement)
    edited_file = HOOK_FILE[package]
    scratch = Path(tempfile.mkdtemp(prefix="zerolint-lsp-bench-"))
    tree = scratch / "tree"
    shutil.copytree(source / package, tree / package)
    if args.namespace_packages:
        setting = f'[tool.zerolint]\nnamespace-packages = ["{package}"]\n'
        (tree / "pyproject.toml").write_text(setting)
    files = sum(1 for _ in tree.rglob("*.py"))
    shown = requirement + (" (namespace-packages)" if args.namespace_packages else "")
    print(f"{shown} tree: {files} files; editing {edited_file} {args.edits} times")
    try:
        zl = asyncio.run(
            session(tree, edited_file, None, ("--debounce-ms", str(args.debounce_ms)), args.edits)
        )
        report_zerolint(zl, args.debounce_ms)
        ruff = ruff_command()
        # pygls cannot validate ruff's notebook selector in its initialize result; the
        # session goes on without that result, and the error it logs is not ours to show.
        logging.getLogger("pygls").setLevel(logging.CRITICAL)
        peer = asyncio.run(session(tree, edited_file, ruff, (), args.edits)) if ruff else None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    z = statistics.median(zl["times"])  # type: ignore[arg-type]
    if peer is not None:
        r = statistics.median(peer["times"])  # type: ignore[arg-type]
        print(
            f"ruff server: didChange -> diagnostics: median {r * 1000:.0f} ms; "
            f"memory {peer['memory']:.0f} MB"
        )
        print(f"ratio zerolint/ruff (median latency): {z / r:.1f}")
    else:
        print("ruff is not installed: no peer measured (pip install ruff)")
    ok = z < TARGET_S
    print("target met (median < 200 ms)" if ok else "target NOT met (median < 200 ms)")
    return 0 if ok else 1


def report_zerolint(zl: dict, debounce_ms: int) -> None:
    times = zl["times"]
    print(f"zerolint server (debounce {debounce_ms} ms):")
    print(
        f"  didChange -> diagnostics: median {statistics.median(times) * 1000:.0f} ms, "
        f"worst {max(times) * 1000:.0f} ms"
    )
    print(
        f"  first diagnostics (indexing the tree): {zl['first']:.2f} s; "
        f"{zl['findings']} findings in the file"
    )
    print(
        f"  memory after indexing: {zl['memory']:.0f} MB; after the edits: "
        f"{zl['end_memory']:.0f} MB (peak {zl['peak']:.0f} MB)",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())

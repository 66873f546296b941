"""``zerolint check`` runs with the cyclic collector off and ends its process at once
(``cli.entry``): the collector would only walk, once more, everything the check built,
after its output is written. Other commands keep it: ``audit`` checks several trees in one
process, and the language server lives on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.test_cli_check import unclamped, write

# The console script's code path, with every start of a collection from then on
# reported on stderr.
PROGRAM = """\
import gc, sys
from zerolint.cli import entry
gc.callbacks.append(
    lambda phase, info: phase == "start"
    and sys.stderr.write(f"collection of generation {info['generation']}\\n")
)
sys.argv = ["zerolint", *sys.argv[1:]]
entry()
"""


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROGRAM, *args], check=False, cwd=cwd, capture_output=True, text=True
    )


def test_a_check_runs_no_collection(tmp_path: Path) -> None:
    write(tmp_path, {"pkg/__init__.py": "", "pkg/indexer.py": unclamped()})
    done = run("check", "--no-cache", "pkg", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "ZL001" in done.stdout
    assert "collection of generation" not in done.stderr


def test_the_server_keeps_the_collector(tmp_path: Path) -> None:
    # The server's module, as `zerolint server` runs it, up to where it starts serving.
    program = PROGRAM.replace(
        "from zerolint.cli import entry\n",
        "from zerolint.cli import entry\n"
        "import zerolint.server_lsp as lsp\n"
        "lsp.serve = lambda debounce: print('collector', gc.isenabled()) or 0\n",
    )
    done = subprocess.run(
        [sys.executable, "-c", program, "server"],
        check=False,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "collector True"

"""``zerolint server``: the language server, over stdin/stdout, for editors.

pygls and lsprotocol are the optional ``server`` extra (installed from a clone); this
module only checks they are there before importing the server (``zerolint.server_lsp``),
so ``zerolint --help`` never pays for them. Editor set-up: docs/editors.md.
"""

from __future__ import annotations

import argparse
import importlib.util


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stdio",
        action="store_true",
        help="talk LSP over stdin/stdout (the default and only transport; for clients that pass it)",
    )
    parser.add_argument(
        "--debounce-ms",
        type=int,
        default=50,
        metavar="MS",
        help="wait this long after an edit before checking, so fast typing is checked once "
        "(default: 50)",
    )


def run(args: argparse.Namespace) -> int:
    from zerolint.cli import UsageError

    if args.debounce_ms < 0:
        raise UsageError(f"--debounce-ms must be 0 or more, not {args.debounce_ms}")
    missing = [m for m in ("pygls", "lsprotocol") if importlib.util.find_spec(m) is None]
    if missing:
        raise UsageError(
            f"zerolint server needs {' and '.join(missing)}: install zerolint with its "
            "server extra (pip install '/path/to/zerolint[server]')"
        )
    from zerolint.server_lsp import serve

    return serve(debounce=args.debounce_ms / 1000)

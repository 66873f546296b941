"""The ``zerolint`` command line: ``check``, ``rule``, ``rules``, ``capture``, ``audit``,
``server``.

Exit codes follow the linters people know: 0 clean, 1 findings (or a hazard), 2 usage or
internal error. Subcommands other than ``check`` live in their own modules and are
imported only when asked for, so ``zerolint check`` never pays for them.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2

# name -> (module, help); each module has add_arguments(parser) and run(args) -> int.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "check": ("zerolint.check", "check Python files for zero-able lengths reaching kernels"),
    "rule": ("zerolint.ruledoc", "print the documentation of a rule"),
    "rules": ("zerolint.ruledoc", "list the rules"),
    "capture": ("zerolint.capture", "which CUDA-graph capture sizes of a vLLM config fault"),
    "audit": ("zerolint.audit", "is this installed serving stack exposed, and is it protected"),
    "server": ("zerolint.server", "run the language server over stdio (for editors)"),
}


class UsageError(Exception):
    """Bad arguments or configuration: exit 2 with one line, no traceback."""


def build_parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """The parser; only the chosen subcommand's module is imported for its options."""
    from zerolint import __version__

    parser = argparse.ArgumentParser(
        prog="zerolint",
        description="Find zero-length inputs on their way to GPU kernels.",
    )
    parser.add_argument("--version", action="version", version=f"zerolint {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(_module=module, _command=name)
        p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
        if name == chosen:
            _add_arguments(module, name, p)
    return parser


def _add_arguments(module: str, name: str, parser: argparse.ArgumentParser) -> None:
    mod = importlib.import_module(module)
    adder: Callable[..., None] = mod.add_arguments
    if adder.__code__.co_argcount >= 2:
        adder(parser, name)
    else:
        adder(parser)


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._subparsers._group_actions if parser._subparsers else ():
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            return action.choices[name]
    return parser


def _chosen(argv: Sequence[str]) -> str | None:
    for token in argv:
        if not token.startswith("-"):
            return token if token in SUBCOMMANDS else None
    return None


# Options whose value is itself a command line (`--vllm-args '--enforce-eager'`): the next
# argument is their value even when it starts with "-", which argparse would refuse.
RAW_VALUE_OPTIONS = ("--vllm-args",)


def _join_raw_values(argv: list[str]) -> list[str]:
    out: list[str] = []
    tokens = iter(argv)
    for token in tokens:
        if token == "--":
            out.append(token)
            out.extend(tokens)
            break
        if token in RAW_VALUE_OPTIONS:
            value = next(tokens, None)
            out.append(token if value is None else f"{token}={value}")
            continue
        out.append(token)
    return out


def _dash_named_paths(argv: list[str], options: argparse.ArgumentParser) -> list[int]:
    """The arguments before any ``--`` that start with "-", are none of ``options``'
    option strings (alone or as ``--option=value``) and name a file or folder that
    exists: paths. pre-commit appends the staged files' names to the hook's arguments as
    they are, so a staged ``-q.py`` arrives as ``-q.py``, which argparse would take for
    ``-q`` (``ruff check -q.py`` is refused too); named so, the file is checked. An option
    named like a file stays an option, and so does an option's value (argparse refuses one
    that starts with "-"): ``./-q.py`` or ``-- -q.py`` name such a file. Their places in
    ``argv``."""
    actions = options._option_string_actions
    found: list[int] = []
    takes_value = False
    for i, token in enumerate(argv):
        if token == "--":
            break
        if (
            not takes_value
            and token.startswith("-")
            and token != "-"
            and token.split("=", 1)[0] not in actions
            and os.path.lexists(token)
        ):
            found.append(i)
        action = actions.get(token)
        takes_value = action is not None and action.nargs != 0
    return found


def main(argv: Sequence[str] | None = None) -> int:
    argv = _join_raw_values(list(sys.argv[1:] if argv is None else argv))
    chosen = _chosen(argv)
    parser = build_parser(chosen)
    named: list[str] = []
    if chosen == "check":
        places = set(_dash_named_paths(argv, _subparser(parser, chosen)))
        named = [argv[i] for i in sorted(places)]
        argv = [token for i, token in enumerate(argv) if i not in places]
    args, extra = parser.parse_known_args(argv)
    if named:
        args.paths = [*args.paths, *named]
    if extra and isinstance(getattr(args, "paths", None), list):
        # Paths after an option (`check a.py --select ZL001 b.py`), as Ruff takes them:
        # argparse gives a list of positionals its first run only.
        paths = [e for e in extra if e == "-" or not e.startswith("-")]
        if len(paths) == len(extra):
            args.paths += paths
            extra = []
    if extra:
        # The subcommand's own usage, as `ruff check --bogus` shows check's.
        command = getattr(args, "_command", None)
        owner = _subparser(parser, command) if command else parser
        owner.error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    mod = importlib.import_module(args._module)
    try:
        return int(mod.run(args))
    except UsageError as exc:
        from zerolint.formats import printable  # a file name's controls, made visible

        print(f"zerolint: error: {printable(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("zerolint: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_CLEAN
    except Exception as exc:  # one line unless --debug: users see no traceback
        if getattr(args, "debug", False):
            raise
        print(
            f"zerolint: internal error: {type(exc).__name__}: {exc} (rerun with --debug)",
            file=sys.stderr,
        )
        return EXIT_ERROR


def entry() -> NoReturn:
    """The ``zerolint`` program (its console script and ``python -m zerolint``): ``main()``,
    then the output flushed and the process ended at once. A normal exit would first free
    everything a check built, node by node, and run the cyclic collector over it: a tenth
    of a cold check of vLLM, for memory the system takes back anyway. Nothing is pending by
    then: the prescan's child has been waited for, the cache written, files fixed. Under a
    profiler or a tracer (cProfile, coverage), which write what they saw at exit, the
    program exits the usual way. Output that cannot be written (a full disk) is an error,
    exit 2; a reader that went away (``| head``) is not.

    ``zerolint check`` runs with the cyclic collector off to the end: what a check builds
    lives until that exit, and turned back on at its end (as ``check.run`` does for
    callers that go on) the collector would walk all of it once more, a tenth of a cold
    check of vLLM spent between the last line of output and the exit. Other commands keep
    it: ``audit`` checks several trees in one process, the server lives on."""
    if _chosen(sys.argv[1:]) == "check":
        gc.disable()
    status = main()
    if _observed():
        sys.exit(status)
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # started with that descriptor closed
            continue
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):  # a reader gone, a stream already closed
            pass
        except OSError as exc:
            if stream is sys.stdout and sys.stderr is not None:
                with contextlib.suppress(OSError, ValueError):
                    print(f"zerolint: error: cannot write the output: {exc}", file=sys.stderr)
                    sys.stderr.flush()
            status = EXIT_ERROR
    os._exit(status)


def _observed() -> bool:
    """Whether a profiler or tracer runs: set with sys.setprofile / sys.settrace, or (from
    Python 3.12, where cProfile and coverage use it) registered with sys.monitoring."""
    if sys.getprofile() is not None or sys.gettrace() is not None:
        return True
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is None:
        return False
    return any(monitoring.get_tool(tool) is not None for tool in range(6))

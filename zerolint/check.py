"""``zerolint check``: lint files, print findings, optionally fix them.

Imports stay light here: a warm run served from the cache, or a run over files that never
mention a sink, does not import LibCST or Z3 at all.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import gc
import hashlib
import os
import re
import sys
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from zerolint.cache import (
    FileLookup,
    ResultCache,
    diagnostic_from_dict,
    diagnostic_to_dict,
    finding_from_dict,
    finding_to_dict,
    read_regular,
    relocated,
)
from zerolint.codes import LIMIT, NOT_CHECKED, UNUSED
from zerolint.config import ConfigError, Settings
from zerolint.discovery import NOT_FOUND, Discovered, discover
from zerolint.model import Diagnostic, Finding, Report
from zerolint.paths import display_path, module_names, rules_dir

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
# Sets of files whose results the cache keeps per file (the tree, one file, a folder...).
KEEP_UNIVERSES = 4


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        default=[],  # "." (in _run): --stdin-filename alone reads stdin
        metavar="PATH",
        help="files or folders to check (default: .); - reads one file from stdin",
    )
    parser.add_argument(
        "--format",
        "--output-format",
        dest="format",
        default="text",
        # Ruff's name for its default format, which text is (docs/ruff.md).
        type=lambda name: "text" if name == "full" else name,
        # formats.FORMATS, written out: the formats are imported only when a report is
        # printed, not to build the parser (tests/test_formats.py holds the two the same).
        choices=("text", "concise", "json", "sarif", "github"),
        help="output format; full, Ruff's name for its default, is text",
    )
    parser.add_argument(
        "-o", "--output-file", type=Path, default=None, help="write the output to this file"
    )
    parser.add_argument(
        "--select",
        action="append",
        default=None,
        metavar="CODES",
        help="comma-separated rule codes or prefixes to run, or ALL (repeatable: merged)",
    )
    parser.add_argument(
        "--extend-select",
        action="append",
        default=None,
        metavar="CODES",
        help="comma-separated rule codes to run as well as the selected ones (repeatable)",
    )
    parser.add_argument(
        "--ignore",
        action="append",
        default=None,
        metavar="CODES",
        help="comma-separated rule codes to skip (repeatable)",
    )
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
    parser.add_argument(
        "--show-proved", action="store_true", help="also list the paths the SMT judge proved safe"
    )
    parser.add_argument("--statistics", action="store_true", help="show counts per rule")
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print findings only: no summary line, no progress bar",
    )
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    parser.add_argument(
        "--fix", action="store_true", help="clamp the lengths at each sink: torch.clamp(x, min=1)"
    )
    parser.add_argument(
        "--diff",
        action="store_true",
        help="with or without --fix: print the fixes as a diff, write nothing",
    )
    parser.add_argument(
        "--config",
        type=Path,
        action="append",  # given twice is an error (SettingsFor), not the last one silently
        default=None,
        help="the configuration file for every checked file (pyproject.toml, zerolint.toml)",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=None,
        metavar="GLOBS",
        help="comma-separated globs to exclude, instead of the configuration's exclude",
    )
    parser.add_argument(
        "--extend-exclude",
        action="append",
        default=None,
        metavar="GLOBS",
        help="comma-separated globs to exclude, besides the configuration's",
    )
    parser.add_argument(
        "--no-respect-gitignore",
        dest="respect_gitignore",
        action="store_false",
        default=None,
        help="also check files that .gitignore, .git/info/exclude or git's global excludes name",
    )
    parser.add_argument(
        "--stdin-filename",
        default=None,
        metavar="PATH",
        help="with -: the name of the file read from stdin (for messages and configuration)",
    )
    parser.add_argument(
        "--no-whole-program", action="store_true", help="do not follow lengths across modules"
    )
    parser.add_argument(
        "--force-exclude",
        action="store_true",
        help="apply exclude to files named on the command line (pre-commit)",
    )
    parser.add_argument(
        "--touching",
        action="store_true",
        help="check the whole project (the current folder; in a git work tree, the files git "
        "tracks) and the named files, and report only the findings whose path passes through "
        "one of the named files (the pre-commit hook's default)",
    )
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the text output (default: on a terminal, unless NO_COLOR)",
    )
    parser.add_argument(
        "--timings", action="store_true", help="print how long each phase took to stderr"
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=0,
        metavar="N",
        help="processes reading the tree: 1 reads it in this one, 0 (default) decides by cores",
    )


def codes(text: str | Sequence[str] | None) -> frozenset[str]:
    """Rule selectors from ``--select A,B --select C`` (upper-cased, merged)."""
    if not text:
        return frozenset()
    parts = [text] if isinstance(text, str) else list(text)
    return frozenset(c.strip().upper() for p in parts for c in p.split(",") if c.strip())


def _from_here(globs: Sequence[str]) -> tuple[str, ...]:
    """Globs given on the command line, relative to the current folder (as Ruff's), where
    a configuration's are relative to its own folder: one with a ``/`` is made absolute."""
    here = os.getcwd()
    return tuple(
        os.path.join(here, g) if "/" in g.rstrip("/") and not os.path.isabs(g) else g for g in globs
    )


def _globs(values: Sequence[str] | None) -> tuple[str, ...]:
    return tuple(g.strip() for v in values or () for g in v.split(",") if g.strip())


def known_codes(settings: Settings | None = None) -> set[str]:
    """Every code a selector may name: the rules' (with those of the configuration's
    ``rule-files`` and extra sinks) and the ZL9xx diagnostics'."""
    from zerolint.codes import CODES
    from zerolint.rules import load_rules

    rules = load_rules() if settings is None else settings.all_rules()
    return {r.code for r in rules} | {c.code for c in CODES}


@functools.cache
def shipped_codes() -> frozenset[str]:
    """The shipped rules' codes, from their files' names, and the ZL9xx codes."""
    from zerolint.codes import CODES

    return frozenset(p.stem for p in rules_dir().glob("*.toml")) | {c.code for c in CODES}


@functools.cache
def shipped_defaults() -> dict[str, bool]:
    """Each shipped rule's code (its file's name) and whether it runs by default: a rule
    file says ``default = false`` to be opt-in (tests/test_rules_data.py holds this to
    what loading the rules gives), read without loading them."""
    pattern = re.compile(r"^default\s*=\s*false\s*(#.*)?$", re.MULTILINE)
    return {
        p.stem: not pattern.search(p.read_text(encoding="utf-8"))
        for p in sorted(rules_dir().glob("*.toml"))
    }


def check_selectors(
    selectors: Iterable[str], where: str = "", settings: Settings | None = None
) -> None:
    """A UsageError for a selector that matches no rule (``ALL`` matches all)."""
    from zerolint.config import SELECT_ALL

    named = sorted(code for code in selectors if code != SELECT_ALL)
    if not named:
        return
    # A shipped rule's code is its file's name (tests/test_rules_data.py), and the ZL9xx codes
    # are known without a rule: only a selector that names neither needs the rules read.
    cheap = shipped_codes()
    if all(any(k.startswith(code) for k in cheap) for code in named):
        return
    known = known_codes(settings)
    for code in named:
        if not any(k.startswith(code) for k in known):
            from zerolint.cli import UsageError

            raise UsageError(f"{where}unknown rule selector: {code}")


def runs_nothing(settings: Settings) -> bool:
    """Whether ``settings`` run no rule and report no ZL9xx code that ``select`` or
    ``extend-select`` names as such (``--select ZL902`` runs no rule, on purpose)."""
    if not settings.rule_files and any(
        settings.enabled(code, opt_in=not default) for code, default in shipped_defaults().items()
    ):
        return False  # a shipped rule runs: known without reading the rules (a warm run)
    if settings.rules():
        return False
    from zerolint.codes import CODES, OPT_IN
    from zerolint.config import matches

    named = {s for s in settings.select | settings.extend_select if s.startswith("ZL9")}
    return not any(
        matches(c.code, named) and settings.enabled(c.code, opt_in=c.code in OPT_IN) for c in CODES
    )


def ignores_every_rule(source: Path | None) -> str:
    """What is said of an ``ignore`` that turns off every selected rule (``runs_nothing``):
    the configuration file's (``source``), or the command line's (None)."""
    if source is None:
        where = "--ignore"
    else:
        table = "[tool.zerolint] " if source.name == "pyproject.toml" else ""
        where = f"{source}: {table}ignore:"
    return (
        f"{where} turns off every selected rule, so every check would pass "
        "(select others, or ignore less)"
    )


class SettingsFor:
    """The settings of each folder: the nearest configuration (or ``--config``) with the
    command line's options on top, made once per configuration file."""

    def __init__(self, args: argparse.Namespace) -> None:
        from zerolint.cli import UsageError
        from zerolint.config import Resolver

        if isinstance(args.config, list):  # --config given (action="append")
            if len(args.config) > 1:  # as Ruff: one configuration file
                given = ", ".join(str(c) for c in args.config)
                raise UsageError(f"--config names one configuration file, not {given}")
            args.config = args.config[0]
        if args.config is not None and not args.config.is_file():
            raise UsageError(f"{args.config}: no such configuration file")
        if args.select is not None and not codes(args.select) and not codes(args.extend_select):
            # As Ruff: `--select=` is no selection; every check would pass.
            raise UsageError("--select selects no rule (give codes, or ALL)")
        self.args = args
        try:
            self.resolver = Resolver(args.config)
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
        self._made: dict[int, Settings] = {}
        self._by_folder: dict[str, Settings] = {}  # a folder as named -> its settings
        check_selectors(
            codes(args.select) | codes(args.extend_select) | codes(args.ignore),
            settings=self._here(),
        )

    def _here(self) -> Settings | None:
        """The settings of the current folder, whose rule files a selector may name."""
        try:
            return self.resolver.for_dir(Path.cwd())
        except ConfigError:
            return None  # reported, with its file, when a checked folder needs it

    def __call__(self, folder: str | os.PathLike[str]) -> Settings:
        name = os.fspath(folder)
        made = self._by_folder.get(name)
        if made is not None:  # asked once per file: nothing more than this on the way
            return made
        try:
            base = self.resolver.for_dir(Path(name))
        except ConfigError as exc:
            from zerolint.cli import UsageError

            raise UsageError(str(exc)) from None
        made = self._made.get(id(base))
        if made is None:
            made = self._made[id(base)] = self._with_options(base)
        self._by_folder[name] = made
        return made

    def _with_options(self, base: Settings) -> Settings:
        args = self.args
        settings = dataclasses.replace(base)
        if base.source is not None:
            check_selectors(
                base.select | base.extend_select | base.ignore, f"{base.source}: ", base
            )
            for _, per_file in base.per_file_ignores:
                check_selectors(per_file, f"{base.source}: per-file-ignores: ", base)
        if args.select is not None:  # as in Ruff: the configuration's selection is replaced
            settings.select = codes(args.select)
            settings.extend_select = frozenset()
        if args.extend_select is not None:
            settings.extend_select = settings.extend_select | codes(args.extend_select)
        if args.ignore is not None:
            settings.ignore = settings.ignore | codes(args.ignore)
        if args.exclude is not None:
            settings.exclude = _from_here(_globs(args.exclude))
        if args.extend_exclude is not None:
            settings.exclude = tuple(settings.exclude) + _from_here(_globs(args.extend_exclude))
        if args.respect_gitignore is not None:
            settings.respect_gitignore = args.respect_gitignore
        if args.no_whole_program:
            settings.whole_program = False
        whole_run = args.ignore is not None or args.config is not None or base is self._here()
        if settings.ignore and whole_run and runs_nothing(settings):
            from zerolint.cli import UsageError

            # As an empty selection (`--select=`, `select = []`): every check would pass.
            # per-file-ignores stay out of it: a file may rightly ignore every rule, and so
            # may a folder's own configuration (a vendored tree's `ignore = ["ALL"]`), as
            # in Ruff; only the command line's or the run's own configuration is refused.
            if args.ignore is None and base.source is not None:
                raise UsageError(ignores_every_rule(base.source))
            raise UsageError(ignores_every_rule(None))
        return settings

    def exclude_for(self, folder: Path) -> tuple[Sequence[str], Path | None, bool]:
        s = self(folder)
        return s.exclude, s.root, s.respect_gitignore


def run(args: argparse.Namespace) -> int:
    # One short pass whose data lives to the end: the cyclic collector would walk the
    # LibCST trees again and again (a fifth of a cold check of vLLM) and free nothing.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run(args)
    finally:
        if collecting:
            gc.enable()


def _run(args: argparse.Namespace) -> int:
    from zerolint.cli import UsageError

    if args.jobs < 0:
        raise UsageError(f"--jobs must be 0 or more, not {args.jobs}")
    if args.statistics:
        from zerolint.formats import STATISTICS_FORMATS

        if args.format not in STATISTICS_FORMATS:  # refused before the check, not after
            raise UsageError(
                f"--statistics prints as {', '.join(STATISTICS_FORMATS)}, not {args.format}"
            )
    if args.diff and args.output_file is not None:
        # The report is the diff, on stdout; a file named for it would be left unwritten.
        raise UsageError("--diff prints the fix on stdout; --output-file is for the report")
    settings_at = SettingsFor(args)
    if args.stdin_filename is not None and not args.paths:
        args.paths = ["-"]  # as Ruff: the name is for the text read from stdin
    if "-" in args.paths:
        if len(args.paths) > 1:
            raise UsageError("- (stdin) cannot be combined with other paths")
        if args.fix:
            raise UsageError("--fix writes files, not stdin (use --diff)")
        if args.touching:
            raise UsageError("--touching names files, not stdin")
        report, read = lint_stdin(args, settings_at)
        if args.diff:
            name = args.stdin_filename or "-"
            settings = settings_at(Path(os.path.abspath(name)).parent)
            changed, failed = _stdin_diff(report, settings, name, read)
            failed += _without_fix(report, lambda _: settings)
            return finish_diff(report, args, changed, failed)
        return finish(report, args, settings_at, stdin_text=read.text if read else None)
    if args.stdin_filename is not None:
        raise UsageError("--stdin-filename names the text read from stdin: give - or no path")
    paths = [Path(p) for p in args.paths or ["."]]
    touched: set[str] | None = None
    touched_missing: list[Diagnostic] = []
    named: list[Path] = []
    if args.touching:
        touched, touched_missing, named = touched_files(
            paths, settings_at, force_exclude=args.force_exclude
        )
        # The project as a commit holds it, and the files named (spelt as named: relative
        # ones merge with the walk's without working out absolute paths; found once, not
        # looked for again). In a git work tree the walk leaves out what git does not
        # track: a scratch file is in no commit, and a path through it is not the commit's
        # (pre-commit has set the tracked files' unstaged changes aside). A walk takes only
        # *.py and *.pyi and skips build/, venv/ and the like, where a file pre-commit
        # passes (a script named by its shebang, a tracked build/gen.py) is checked as when
        # named without --touching.
        paths = [Path(".")]
    show_progress = _progress_wanted(args)
    fixing = args.fix or args.diff
    timings: dict[str, float] = {}
    # The digests --fix compares before it edits (the files' lookups: a stat of each).
    analysed: dict[str, str] | None = {} if fixing else None
    run = Run(
        paths,
        settings_at,
        force_exclude=args.force_exclude,
        known=named,
        tracked_only=touched is not None,
    )
    report = run.lint(
        use_cache=not args.no_cache and not fixing,
        progress=show_progress,
        timings=timings,
        jobs=args.jobs,
        analysed=analysed,
    )
    if args.timings:
        print_timings(timings)
    if touched is not None:
        only_touching(report, touched)
    if fixing:
        settings_for = lambda shown: settings_at(Path(os.path.abspath(shown)).parent)
        fixed, failed = apply_fixes(report, settings_for, diff_only=args.diff, analysed=analysed)
        if args.diff:
            failed += _without_fix(report, settings_for)
            missing = [*touched_missing, *run.missing]
            return finish_diff(report, args, bool(fixed), failed, missing=missing)
        if fixed:
            report = run.lint(use_cache=False, progress=False)
            if touched is not None:
                only_touching(report, touched)
            report.fixed = sum(fixed.values())
            if not args.quiet:
                from zerolint.formats import plural, printable

                for shown, count in sorted(fixed.items()):
                    print(
                        f"zerolint: fixed {plural(count, 'error')} in {printable(shown)}",
                        file=sys.stderr,
                    )
        report.diagnostics += failed
        refused(report, failed)
        report.sort()
    # Each finding is marked fixable or not by the analysis (``Engine.mark_fixable``),
    # whose marks the cache keeps: a warm run plans nothing, nor imports LibCST.
    return finish(report, args, settings_at, missing=[*touched_missing, *run.missing])


def finish(
    report: Report,
    args: argparse.Namespace,
    settings_at: SettingsFor,
    missing: Sequence[Diagnostic] = (),
    stdin_text: str | None = None,
) -> int:
    """Print ``report`` and return the exit status. ``stdin_text``: the text read from
    stdin, where that is what was checked."""
    report.missing = list(missing)  # the summary then claims no clean run
    if not args.quiet:  # as Ruff's -q, which prints the findings and nothing else
        warn_invalid_suppressions(report, stdin_text)
    print_report(report, args)
    # As Ruff does: a file that could not be checked fails the run like a finding, since it
    # may hold an unclamped call.
    return _exit_status(report, args, missing, bool(report.findings or report.diagnostics))


def warn_invalid_suppressions(report: Report, stdin_text: str | None = None) -> None:
    """As Ruff: a warning on stderr for each suppression comment that is invalid (one
    ``suppression.read_noqa`` refuses: `# noqa:`, `# noqa: ZL001: why`) where it left a
    finding in the report (``suppression.invalid_directives``). Only the files of the
    findings are read, on a warm run as on a cold one; ``stdin_text`` is the text of a file
    read from stdin."""
    if not report.findings:
        return
    from zerolint.formats import printable
    from zerolint.suppression import invalid_directives, invalid_reason, may_hold_invalid

    def decoded(data: bytes) -> str:  # as the analysis decoded it (PEP 263), without LibCST
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError:
            import io
            import tokenize

            return data.decode(tokenize.detect_encoding(io.BytesIO(data).readline)[0])

    by_path: dict[str, list[Finding]] = {}
    for finding in report.findings:
        by_path.setdefault(finding.path, []).append(finding)
    for shown, findings in sorted(by_path.items()):
        try:
            if stdin_text is not None:
                text = stdin_text
            else:
                data = Path(shown).read_bytes()
                if not may_hold_invalid(data):
                    continue  # no suppression comment that can be invalid: nothing to decode
                text = decoded(data)
        except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
            continue
        for line, directive in invalid_directives(text, findings):
            print(
                f"zerolint: warning: invalid `{directive}` directive at {printable(shown)}:{line}: "
                + invalid_reason(directive),
                file=sys.stderr,
            )


def _exit_status(
    report: Report, args: argparse.Namespace, missing: Sequence[Diagnostic], failing: bool
) -> int:
    """2 where a path named on the command line is not there (a usage error, each said on
    stderr), or no file could be checked, unless ``--exit-zero`` (0 whatever was found, as
    Ruff's: the same file beside a readable one gave 0 already); 1 where the run is
    ``failing``, unless ``--exit-zero``; else 0."""
    if missing:
        from zerolint.formats import printable

    for d in missing:
        print(f"zerolint: error: path not found: {printable(d.path)}", file=sys.stderr)
    if missing or (report.files_checked <= 0 and report.diagnostics and not args.exit_zero):
        return EXIT_ERROR
    if failing and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _without_fix(report: Report, settings_for: Callable[[str], Settings]) -> list[Diagnostic]:
    """A ZL910 for each finding of a rule without a fix (ZL002, ZL004): ``--fix`` leaves it
    in the report, and ``--diff``, whose stdout holds the diff alone, names it on stderr."""
    return [
        Diagnostic("ZL910", f.path, f"not fixed: {f.code} has no fix", f.line, f.col)
        for f in report.findings
        if f.code not in settings_for(f.path).codes_with_fix()
    ]


def finish_diff(
    report: Report,
    args: argparse.Namespace,
    changed: bool,
    failed: Sequence[Diagnostic],
    missing: Sequence[Diagnostic] = (),
) -> int:
    """The end of a ``--diff`` run, whose stdout holds the diff alone: what could not be
    checked or fixed goes to stderr, one line each, and fails the run as in ``finish``, as
    does a diff (as ``--fix`` would leave one to write)."""
    from zerolint.formats import RenderOptions
    from zerolint.formats.text import diagnostic_line

    for d in [*report.diagnostics, *failed]:
        print(diagnostic_line(d, RenderOptions()), file=sys.stderr)
    return _exit_status(report, args, missing, bool(changed or failed or report.diagnostics))


class Run:
    """One ``check`` over ``paths``: discovery with each folder's configuration, then one
    analysis per configuration (files under different configurations are separate
    projects, as in Ruff), then what each file's configuration says about the report."""

    def __init__(
        self,
        paths: Sequence[Path],
        settings_at: SettingsFor,
        *,
        force_exclude: bool,
        known: Sequence[Path] = (),
        tracked_only: bool = False,
    ):
        self.paths = list(paths)
        self.known = list(known)  # files a discovery found already (``discover``)
        self.tracked_only = tracked_only
        self.settings_at = settings_at
        self.force_exclude = force_exclude
        self.missing: list[Diagnostic] = []
        self.unused_wanted = False
        # Files the prescan's child found no suppression comment in: ZL920 skips them.
        self.quiet_files: set[Path] = set()

    def lint(
        self,
        *,
        use_cache: bool,
        progress: bool = False,
        timings: dict[str, float] | None = None,
        jobs: int = 0,
        analysed: dict[str, str] | None = None,
    ) -> Report:
        timings = {} if timings is None else timings
        clock = time.perf_counter()
        found = discover(
            self.paths,
            force_exclude=self.force_exclude,
            exclude_for=self.settings_at.exclude_for,
            listed=self.settings_at.resolver.listed,
            known=self.known,
            tracked_only=self.tracked_only,
        )
        discovered = time.perf_counter() - clock
        self.missing = not_found(found)
        diagnostics = [d for d in found.diagnostics if d not in self.missing]
        warn_empty_folders(self.paths, found.files)  # ``known`` holds files only
        groups: dict[int, tuple[Settings, list[Path]]] = {}
        for path in found.files:
            settings = self.settings_at(os.path.dirname(path))
            groups.setdefault(id(settings), (settings, []))[1].append(path)
        report = Report(diagnostics=diagnostics)
        self.unused_wanted = False
        self.quiet_files = set()
        for settings, files in groups.values():
            # ZL920 needs the findings each comment hid, which the cache does not keep.
            wanted = settings.enabled(UNUSED, opt_in=True)
            self.unused_wanted |= wanted
            part = lint(
                files,
                settings,
                discovered=True,
                use_cache=use_cache and not wanted,
                progress=progress,
                timings=timings,
                jobs=jobs,
                analysed=analysed,
                quiet_files=self.quiet_files if wanted else None,
            )
            report.findings += part.findings
            report.proved += part.proved
            report.diagnostics += part.diagnostics
            report.suppressed += part.suppressed
            report.files_checked += part.files_checked
        timings["discover"] = discovered
        self.apply_settings(report, found.files)
        report.sort()
        return report

    def apply_settings(self, report: Report, files: Sequence[Path]) -> None:
        """Drop what each file's configuration does not report (per-file-ignores, ignored
        or unselected ZL9xx codes); add unused suppressions (ZL920) where selected."""
        from zerolint.codes import OPT_IN
        from zerolint.config import matches

        def keep(code: str, path: str) -> bool:
            settings = self.settings_at(Path(os.path.abspath(path)).parent)
            if not settings.enabled(code, opt_in=code in OPT_IN):
                return False
            return not matches(code, settings.ignored_in(path))

        report.findings = [f for f in report.findings if keep(f.code, f.path)]
        report.proved = [f for f in report.proved if keep(f.code, f.path)]
        report.diagnostics = [d for d in report.diagnostics if keep(d.code, d.path)]
        if self.unused_wanted:
            report.findings += unused_suppressions(files, report, keep, self.quiet_files)


def unused_suppressions(
    files: Sequence[Path], report: Report, keep: Any, quiet: Collection[Path] = ()
) -> list[Any]:
    """ZL920 for each suppression comment in ``files`` that hid none of the findings;
    ``quiet`` files are known to hold none (``suppression.file_may_hold_ours`` said so of
    the bytes the prescan's child read) and are not read again."""
    from zerolint.formats import display_path
    from zerolint.suppression import may_hold_ours, text_of, unused

    hidden: dict[str, list] = {}
    for f in report.suppressed:
        hidden.setdefault(os.path.normpath(os.path.abspath(f.path)), []).append(f)
    out = []
    for path in files:
        if path in quiet:
            continue
        try:
            data = path.read_bytes()
            if not may_hold_ours(data):
                continue
            text = text_of(data)
        except (OSError, UnicodeDecodeError):
            continue
        shown = display_path(str(path))
        if not keep(UNUSED, shown):
            continue
        out += unused(shown, text, hidden.get(os.path.normpath(os.path.abspath(path)), ()))
    return out


def warn_empty_folders(paths: Sequence[Path], files: Sequence[Path]) -> None:
    """As Ruff: a folder named on the command line that holds no Python file to check.
    A path that cannot be looked at (unreadable, a name too long) is not a folder here:
    discovery has said why it was not checked."""
    folders = [p for p in paths if os.path.isdir(p) and os.access(p, os.R_OK | os.X_OK)]
    if not folders:
        return
    # The files' folders, absolute: one per folder rather than one per file.
    found = {os.path.join(os.path.abspath(d), "") for d in {os.path.dirname(f) for f in files}}
    for folder in folders:
        base = os.path.join(os.path.abspath(folder), "")
        if not any(f.startswith(base) for f in found):
            from zerolint.formats import printable

            shown = printable(str(folder))
            print(f"zerolint: warning: no Python files found under {shown}", file=sys.stderr)


COUNTS = ("parsed", "ahead", "candidates", "interpreted", "kept", "replayed", "tainted")
"""The entries of --timings that are counts, not seconds."""


def print_timings(timings: dict[str, float]) -> None:
    """--timings: the phases on one line, then each parsed file's parse and analysis (its
    functions interpreted, without the parses and callees they led into), slowest first."""
    from zerolint.formats import printable

    phases = {k: v for k, v in timings.items() if ":" not in k}
    shown = " ".join(
        f"{k}={v:.3f}s" if k not in COUNTS else f"{k}={v:.0f}" for k, v in phases.items()
    )
    print(f"zerolint: timings: {shown}", file=sys.stderr)
    files = [k.partition(":")[2] for k in timings if k.startswith("parse:")]
    cost = {f: (timings[f"parse:{f}"], timings.get(f"analyse:{f}", 0.0)) for f in files}
    for f in sorted(files, key=lambda f: (-sum(cost[f]), f)):
        parse, analyse = cost[f]
        shown = printable(f)
        print(
            f"zerolint: parsed {shown} parse={parse:.4f}s analyse={analyse:.4f}s", file=sys.stderr
        )


def touched_files(
    paths: Sequence[Path], settings_at: SettingsFor, *, force_exclude: bool
) -> tuple[set[str], list[Diagnostic], list[Path]]:
    """The named files --touching reports on, as real paths (a file named through a link,
    or a link to a folder, is the file the project's walk reaches); those named that are
    not there (an error, as for any path named); and the files, spelt as named."""
    found = discover(paths, force_exclude=force_exclude, exclude_for=settings_at.exclude_for)
    touched = {os.path.realpath(f) for f in found.files}
    return touched, not_found(found), found.files


def not_found(found: Discovered) -> list[Diagnostic]:
    """The paths named on the command line that are not there (``discover`` says so)."""
    return [d for d in found.diagnostics if d.message == NOT_FOUND]


def only_touching(report: Report, touched: set[str]) -> None:
    """Keep the findings with a step (or the sink) in one of the ``touched`` files, and the
    diagnostics about them: what a commit of those files changes. Also every diagnostic
    that says a path was cut where the analysis could not go on, since the cut-off part
    of a path may run through a ``touched`` file: a limit reached at a sink call (ZL930),
    and a file the analysis tried to parse that could not be (``Diagnostic.analysed``)."""

    real: dict[str, bool] = {}

    def touches(path: str) -> bool:
        known = real.get(path)
        if known is None:
            known = real[path] = os.path.realpath(path) in touched
        return known

    def finding_touches(f: Any) -> bool:
        return touches(f.path) or any(touches(step.path) for flow in f.flows for step in flow.steps)

    report.findings = [f for f in report.findings if finding_touches(f)]
    report.proved = [f for f in report.proved if finding_touches(f)]
    report.diagnostics = [
        d for d in report.diagnostics if d.code == LIMIT or d.analysed or touches(d.path)
    ]


def lint_stdin(args: argparse.Namespace, settings_at: SettingsFor) -> tuple[Report, Read | None]:
    """Check the source read from stdin as the file ``--stdin-filename`` (default ``-``):
    that name's configuration applies, and with --force-exclude its exclude too. Also
    returns what was read (None where it cannot be read as Python source), for
    ``--diff``."""
    from zerolint.discovery import is_excluded
    from zerolint.engine import Engine

    name = args.stdin_filename or "-"
    path = Path(name)
    settings = settings_at(Path(os.path.abspath(path)).parent)
    data = sys.stdin.buffer.read()
    if args.force_exclude and is_excluded(path, settings.exclude, settings.root):
        return Report(), None
    run = Run([path], settings_at, force_exclude=False)
    from zerolint.project import BadInput, read_source

    try:  # as a file is read: a BOM, a `coding:` line (PEP 263), else UTF-8
        text = read_source(path, lambda: name, read=lambda _: data)
    except BadInput as exc:
        report = Report(diagnostics=[exc.diagnostic])
        run.apply_settings(report, [])  # --ignore ZL903, as for a file
        return report, None
    outcome = Engine(settings).run([path], overrides={path: text}, fixable=True)
    report = outcome.report
    report.fix_with = "--diff"  # --fix writes files: text read from stdin takes --diff
    run.apply_settings(report, [])
    if settings.enabled("ZL920", opt_in=True):
        from zerolint.suppression import unused

        report.findings += unused(name, text, report.suppressed)
    report.sort()
    return report, Read(text, data)


class Read(NamedTuple):
    """Source read from stdin: its text, and its bytes (their BOM and encoding)."""

    text: str
    data: bytes


def _stdin_diff(
    report: Report, settings: Settings, name: str, read: Read | None
) -> tuple[bool, list[Diagnostic]]:
    """--diff on stdin: the fix as a diff on stdout, nothing written; whether there was
    one, and a diagnostic for each finding it could not fix (as ``apply_fixes``). The
    diff is in the text's own encoding, its BOM kept, so that it applies to its bytes as
    a file's ``--diff`` does."""
    import codecs
    import io
    import tokenize

    from zerolint.fix import FixError, encoded_diff, targets_from_findings
    from zerolint.fix import apply_fixes as fix_source

    if read is None:  # not read as Python source: nothing to fix
        return False, []
    text = read.text
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(read.data).readline)
    except SyntaxError:  # a BOM and a `coding:` line that say otherwise: read as UTF-8
        encoding = "utf-8-sig" if read.data.startswith(codecs.BOM_UTF8) else "utf-8"
    targets = targets_from_findings(
        [f for f in report.findings if f.sink], settings.sinks(), settings.rules()
    )
    changed = False
    failed: list[Diagnostic] = []
    for shown, items in targets.items():
        try:
            fixed = fix_source(text, items)
        except FixError as exc:
            failed.append(Diagnostic("ZL910", shown, f"not fixed: {exc.reason}"))
            continue
        failed += not_fixed(shown, fixed.skipped)
        if fixed.changed:
            changed = True
            write_diff(*encoded_diff(text, fixed.fixed, shown, encoding))
    return changed, failed


def _progress_wanted(args: argparse.Namespace) -> bool:
    from zerolint.progress import progress_wanted

    return progress_wanted(quiet=args.quiet)


def print_report(report: Report, args: argparse.Namespace) -> None:
    from zerolint import formats

    to_file = getattr(args, "output_file", None)
    if args.color == "never" or to_file is not None:  # a report file: never, as Ruff's
        color = False
    elif args.color == "always":
        color = True
    else:
        color = args.format in formats.COLOR_FORMATS and formats.use_color(sys.stdout)
    text = formats.render(
        report,
        args.format,
        color=color,
        show_proved=args.show_proved,
        statistics=args.statistics,
        quiet=args.quiet,
        rules=rule_meta() if formats.reads_rules(args.format, args.statistics) else None,
    )
    if to_file is not None:
        from zerolint.atomic import atomic_write_text
        from zerolint.cli import UsageError

        try:
            if _is_stream(to_file):  # a FIFO, /dev/stdout: written into, never replaced
                # Appended: /dev/stdout may lead to a file the shell opened to append to.
                with open(to_file, "a", encoding="utf-8", errors="surrogateescape") as out:
                    out.write(text)
                return
            to_file.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(to_file, text)
        except FileExistsError:  # a file where its folder would be
            raise UsageError(f"{to_file}: cannot write the report: a parent is a file") from None
        except OSError as exc:
            raise UsageError(f"{to_file}: cannot write the report: {exc.strerror or exc}") from None
        return
    try:
        sys.stdout.write(text)
    except UnicodeEncodeError:
        # A file name that is not UTF-8 (its bytes held as surrogates): its bytes as they
        # are, as `ls` prints them; text the terminal's encoding cannot hold (an ASCII
        # terminal, code in another script): as escapes, never an error that loses the
        # report.
        sys.stdout.flush()
        encoding = sys.stdout.encoding or "utf-8"
        try:
            data = text.encode(encoding, "surrogateescape")
        except UnicodeEncodeError:
            data = text.encode(encoding, "backslashreplace")
        sys.stdout.buffer.write(data)
    sys.stdout.flush()


def _is_stream(path: Path) -> bool:
    """Whether ``path`` is one to write into rather than replace: there and no regular
    file (followed through links), or a name for an open file (``/dev/stdout``, or
    ``/proc/self/fd/1``, which leads to whatever the shell redirected it to)."""
    import stat

    absolute = os.path.abspath(path)
    if absolute.startswith(("/dev/", "/proc/")):
        return True
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def rule_meta() -> dict[str, Any]:
    from zerolint.formats import code_metadata, rule_metadata
    from zerolint.rules import load_rules

    return {**rule_metadata(load_rules()), **code_metadata()}


# ---------------------------------------------------------------------------- linting


# The libraries a result depends on, by import name and distribution name: LibCST's node
# classes are the analysis's tree (and the fix planner's), Z3 finds the witnesses.
DEPENDENCIES = (("libcst", "libcst"), ("z3", "z3-solver"))


def cache_fingerprint(
    settings: Settings,
    package: Path | None = None,
    dependencies: Sequence[tuple[str, str]] = DEPENDENCIES,
) -> str:
    """What cached results depend on besides the files: the settings, the rules, the
    analyzer's own code in ``package`` (default: zerolint's folder), so that an edited
    checkout never reuses results of the old code, and the Python and the libraries that
    run it (``runtime_stamp``), so that an upgrade of either does not either."""
    from zerolint import __version__

    digest = hashlib.sha256()
    package = package or Path(__file__).resolve().parent
    sources = sorted(rules_dir().glob("ZL*.toml")) + sorted(package.rglob("*.py"))
    for path in sources:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    digest.update(runtime_stamp(dependencies).encode())
    return f"{__version__}:{settings.fingerprint()}:{digest.hexdigest()[:16]}"


def runtime_stamp(dependencies: Sequence[tuple[str, str]] = DEPENDENCIES) -> str:
    """The Python running the check (its implementation and version: Python's parser
    reads the files) and each dependency's version, without importing it: the version in
    its installed ``NAME-VERSION.dist-info`` folder beside the package, as pip and uv
    write it. A package with no such folder (a source checkout on ``sys.path``) is known
    by its folder and its ``__init__.py``'s time and size instead. Versions, not times,
    where they exist, so that a cache restored onto a fresh install of the same versions
    (a CI job's) is still used."""
    import importlib.util

    version = ".".join(map(str, sys.version_info[:3]))
    parts = [f"{sys.implementation.name} {version}"]
    listed: dict[str, list[str]] = {}
    for module, dist in dependencies:
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):  # a module in sys.modules without a spec
            spec = None
        origin = spec.origin if spec is not None else None
        if spec is None or origin is None or not os.path.isfile(origin):
            parts.append(f"{module} {'absent' if spec is None else spec.name}")
            continue
        folder = os.path.dirname(origin)
        if spec.submodule_search_locations is not None:  # a package: its folder's folder
            folder = os.path.dirname(folder)
        if folder not in listed:
            try:
                names = os.listdir(folder)
            except OSError:
                names = []
            listed[folder] = [n[: -len(".dist-info")] for n in names if n.endswith(".dist-info")]
        found = sorted(
            installed
            for name, _, installed in (n.rpartition("-") for n in listed[folder])
            if _normalised(name) == _normalised(dist)
        )
        if found:
            parts.append(f"{module} {' '.join(found)}")
        else:
            stat = os.stat(origin)
            parts.append(f"{module} {origin} {stat.st_mtime_ns} {stat.st_size}")
    return "; ".join(parts)


def _normalised(dist: str) -> str:
    """A distribution's name as its ``.dist-info`` folder may spell it (PEP 503, 427)."""
    return dist.lower().replace("-", "_").replace(".", "_")


def lint(
    paths: Sequence[Path],
    settings: Settings,
    *,
    use_cache: bool,
    force_exclude: bool = False,
    progress: bool = False,
    timings: dict[str, float] | None = None,
    jobs: int = 0,
    analysed: dict[str, str] | None = None,
    discovered: bool = False,
    quiet_files: set[Path] | None = None,
) -> Report:
    """Check ``paths``: from the cache when every file is unchanged, else by analysis.

    ``timings``, when given, receives the seconds each phase took; ``analysed`` the digest
    of the bytes analysed of each file read (by shown path), which ``--fix`` compares
    before it edits. ``discovered``: ``paths`` are the files a discovery just found (in its
    order, each a regular file, excludes applied), not to be looked for again.
    ``quiet_files``, when given (ZL920 is on), receives the files the prescan's child found
    no suppression comment in."""
    timings = {} if timings is None else timings
    clock = time.perf_counter()
    if discovered:
        found = Discovered(files=list(paths))
    else:
        found = discover(paths, settings.exclude, settings.root, force_exclude=force_exclude)
    timings["discover"] = time.perf_counter() - clock
    root = settings.root or Path.cwd()
    cache = (
        ResultCache(root, cache_fingerprint(settings)) if use_cache else ResultCache.disabled(root)
    )
    # What a file's findings depend on besides the files they were traced through: which
    # other files the run can follow into, and under which module names (an excluded
    # helper, a removed __init__.py, a single file checked after the whole tree).
    universe = universe_key(found.files, cache, settings.namespace_roots()) if cache.enabled else ""
    lookups: dict[Path, FileLookup] = {}
    warm = cache.enabled  # not merely asked for: without a key, or refused, nothing is looked up
    negatives: set[Path] = set()
    # Without a cache, a lookup only stats the file: needed for --fix's digests alone.
    looked_up = found.files if cache.enabled or analysed is not None else ()
    # A file of the set that could not be read: what this run finds is not what the set
    # gives (a path through it is cut), so none of it is stored as the set's results.
    unread: set[Path] = set()
    for path in looked_up:
        try:
            lk = cache.lookup(path)
        except OSError:
            warm = False
            unread.add(path)
            continue
        lookups[path] = lk
        # A result was made with this bucket's rules and settings (its fingerprint), so
        # for the same sink names. "m": whether the file was a candidate in the set of files
        # it was last checked with; one that was not names no sink, and the analysis skips
        # it until wrappers are found. Whether it is one in this set is another matter (a
        # call of a wrapper counts only where the wrapper's file is checked too): what this
        # set of files gives, a candidate's or not, is "u"[universe] (store_results).
        result = lk.result if lk.hit else None
        if not isinstance(result, dict):
            warm = False
            continue
        if not result.get("m"):
            negatives.add(path)
        if not isinstance(result.get("u"), dict) or universe not in result["u"]:
            warm = False
    timings["cache"] = time.perf_counter() - clock - timings["discover"]
    if warm:
        timings["cached"] = 1.0
        cached = report_from_cache(found.files, lookups, found.diagnostics, cache, universe)
        if cached is not None:
            cache.save()  # keeps the file stats learned on this run: no hashing next time
            return cached
    if cache.enabled:
        # The prescan child and the analyser read these bytes, the ones just hashed.
        for path in found.files:
            if path in lookups and path not in negatives:
                with contextlib.suppress(OSError):
                    lookups[path].content()
    report, outcome = analyse(
        found.files,
        found.diagnostics,
        settings,
        negatives,
        progress,
        lookups,
        timings,
        jobs,
        quiet_files,
        unread,
    )
    if cache.enabled and not unread:
        store_results(outcome, lookups, cache, universe)
    if analysed is not None:
        for path, shown in outcome.display.items():
            lk = lookups.get(path)
            if lk is not None and lk.was_read:
                analysed[shown] = lk.digest()
    return report


def universe_key(files: Sequence[Path], cache: ResultCache, namespaces: Sequence[str] = ()) -> str:
    """A digest of the run's files and their module names."""
    key_of = cache.key_of
    names = module_names(list(files), namespaces)
    # In the files' order (discovery's, by path as spelt): where two files have one module
    # name, the first is the one imports reach, so the order is part of what the set
    # gives. No path holds the NUL that ends it.
    lines = [f"{key_of(p)}\0{n}\n" for p, n in names.items()]
    # A file name that is not UTF-8 holds the bytes it has on disk as surrogates.
    text = "".join(lines).encode("utf-8", "surrogateescape")
    return hashlib.blake2b(text, digest_size=16).hexdigest()


def reader_for(lookups: dict[Path, FileLookup], unread: set[Path] | None = None):
    """Reads a file through its lookup (once, and what was hashed), else from disk; adds
    a file it cannot read to ``unread``."""

    def read(path: Path) -> bytes:
        lk = lookups.get(path)
        try:
            return lk.take() if lk is not None else read_regular(path)[0]
        except OSError:
            if unread is not None:
                unread.add(path)
            raise

    return read


def report_from_cache(
    files: Sequence[Path],
    lookups: dict,
    diagnostics: list[Diagnostic],
    cache: ResultCache,
    universe: str,
) -> Report | None:
    """The report stored for unchanged files; None if an entry cannot be read back.

    Entries name files as the cache does (by root); they are shown as this run names them,
    relative to the current folder."""
    # A file is shown as this run names it; worked out only for the files a result names.
    by_key = {lookups[path].key: path for path in files}
    shown: dict[str, str] = {}

    def show(key: str) -> str:
        if key not in shown:
            path = by_key.get(key)
            shown[key] = display_path(path if path is not None else cache.root / key)
        return shown[key]

    report = Report(diagnostics=list(diagnostics), files_checked=len(files))
    # Each file once: discovery merges a file named twice or spelt two ways.
    try:
        for path in files:
            lk = lookups[path]
            result = lk.result["u"][universe]
            found, proved = result.get("f", ()), result.get("p", ())
            diagnostics = result.get("d", ())
            if found == [] and proved == [] and diagnostics == []:
                continue  # most files: nothing to show (and no comprehension to run)
            if any(d.get("code") in NOT_CHECKED for d in diagnostics):
                report.files_checked -= 1
            report.findings += [finding_from_dict(relocated(f, show)) for f in found]
            report.proved += [finding_from_dict(relocated(f, show)) for f in proved]
            report.diagnostics += [diagnostic_from_dict(relocated(d, show)) for d in diagnostics]
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    report.sort()
    return report


def analyse(
    files: Sequence[Path],
    diagnostics: list[Diagnostic],
    settings: Settings,
    negatives: set[Path],
    progress: bool,
    lookups: dict,
    timings: dict[str, float],
    jobs: int = 0,
    quiet_files: set[Path] | None = None,
    unread: set[Path] | None = None,
) -> tuple[Report, Any]:
    """Analyse ``files``; each one that cannot be read is added to ``unread``."""
    from zerolint.prescan import STAR_IMPORT, prescan
    from zerolint.progress import Progress

    def import_analyzer() -> None:
        import zerolint.engine  # noqa: F401 - LibCST: imported only when something is analysed

    clock = time.perf_counter()
    pending = [f for f in files if f not in negatives]
    read = reader_for(lookups, unread)

    def peek(path: Path) -> bytes:  # what the child scans: what the cache hashed, if it did
        lk = lookups.get(path)
        return lk.peek() if lk is not None else read_regular(path)[0]

    def import_z3() -> None:  # files name a sink: paths to judge, likely
        from zerolint.smt import import_z3_meanwhile

        import_z3_meanwhile()

    made: list[Any] = []  # the engine and its project, made once the analyzer is imported

    def engine_and_project() -> tuple[Any, Any]:
        if not made:
            from zerolint.engine import Engine

            engine = Engine(settings)
            project = engine.project_for(files, read)
            made.extend((engine, project, engine.first_candidate(project)))
        return made[0], made[1]

    def parse_ahead(path: Path) -> None:  # while the child reads on: a file it will parse
        _, project = engine_and_project()
        if made[2](path):
            project.parse_ahead(path)

    scan = prescan(
        pending,
        settings.sink_names(),
        import_analyzer,
        jobs=jobs,
        read=peek,
        on_hit=import_z3,
        each_hit=parse_ahead,
        suppressions=quiet_files is not None,
        also=(STAR_IMPORT,),
    )
    skip = set(negatives)
    if scan is not None:
        skip |= set(pending) - scan.hits - scan.bad
    timings["prescan"] = time.perf_counter() - clock
    if scan is not None:  # its two sides, side by side: the longer one is the prescan
        timings["imports"] = scan.meanwhile_seconds
        timings["scan"] = scan.scan_seconds
    engine, project = engine_and_project()
    try:
        with Progress(len(files), enabled=progress) as bar:
            outcome = engine.run(
                files,
                skip=skip,
                on_file=lambda done, total: bar.advance(),
                read=read,
                project=project,
                scan=scan,
                fixable=True,
            )
        if scan is not None and quiet_files is not None:
            maybe = scan.may_suppress()  # the child worked it out while this one analysed
            if maybe is not None:
                quiet_files |= scan.covered() - maybe
    finally:
        if scan is not None:
            scan.close()
    timings.update(engine.stats)
    report = outcome.report
    report.diagnostics = list(diagnostics) + report.diagnostics
    report.sort()
    return report, outcome


def store_results(outcome: Any, lookups: dict, cache: ResultCache, universe: str) -> None:
    # Stored paths are the cache's keys (by root), not the paths shown from this folder.
    def as_key(shown: str) -> str:
        return cache.key_of(Path(shown))

    by_display: dict[str, dict[str, list]] = {}
    for f in outcome.report.findings:
        by_display.setdefault(f.path, {"f": [], "p": [], "d": []})["f"].append(
            relocated(finding_to_dict(f), as_key)
        )
    for f in outcome.report.proved:
        by_display.setdefault(f.path, {"f": [], "p": [], "d": []})["p"].append(
            relocated(finding_to_dict(f), as_key)
        )
    for d in outcome.report.diagnostics:
        by_display.setdefault(d.path, {"f": [], "p": [], "d": []})["d"].append(
            relocated(diagnostic_to_dict(d), as_key)
        )
    deps = []
    for path in outcome.parsed:
        lk = lookups.get(path)
        if lk is not None:
            deps.append((path, lk.digest()))
    for path, lk in lookups.items():
        shown = outcome.display.get(path)
        entry = (
            by_display.get(shown, {"f": [], "p": [], "d": []})
            if shown
            else {"f": [], "p": [], "d": []}
        )
        # A file with a diagnostic, such as one that could not be decoded (ZL903, ZL904),
        # may be no candidate, but only a run that reads it again says what is wrong with
        # it: taken as one, it is not skipped unread next time.
        mention = path in outcome.candidates or bool(entry["d"])
        # Results for other sets of files (the whole tree, one file from pre-commit) stay
        # beside this one while the file and what they were traced through hold. A file
        # that is no candidate here is kept per set of files too: it may be one in another
        # set (it calls a wrapper whose file is not checked here), and with these bytes that
        # is known only where that set was checked since they were written.
        before = lk.result if isinstance(lk.result, dict) else {}
        others = before.get("u") if isinstance(before.get("u"), dict) else {}
        others = {u: r for u, r in others.items() if u != universe}
        kept = dict(list(others.items())[-(KEEP_UNIVERSES - 1) :]) if KEEP_UNIVERSES > 1 else {}
        result = {"m": int(mention), "u": {**kept, universe: entry}}
        kept_deps = list(lk.deps) if kept else []
        try:
            cache.store(lk, result, (deps if mention else []) + kept_deps)
        except OSError:
            continue
    cache.save()


# ---------------------------------------------------------------------------- fixing


def refused(report: Report, failed: Sequence[Diagnostic]) -> None:
    """What ``--fix`` tried and left (it said why: ZL910, or ZL902 for a file it could not
    write) is no longer marked fixable: ``[*]`` promises what a run of ``--fix`` does."""
    files = {d.path for d in failed if not d.line}
    calls = {(d.path, d.line, d.col) for d in failed if d.line}
    for finding in report.findings:
        if finding.path in files or (finding.path, finding.line, finding.col) in calls:
            finding.fixable = False


def not_fixed(shown: str, skipped: Iterable[tuple[Any, str]]) -> list[Diagnostic]:
    """A ZL910 for each target of ``shown`` a fix left as it was, at its call, with why."""
    return [
        Diagnostic("ZL910", shown, f"not fixed: {reason}", target.line, target.col + 1)
        for target, reason in skipped
    ]


def write_diff(diff: str, encoding: str) -> None:
    """Write one file's ``diff`` to stdout: its lines in the file's ``encoding`` (a diff of
    a latin-1 file applies to its bytes only so), its ``---``/``+++`` lines, which name
    the file, as the file system spells the name; as text where stdout takes no bytes."""
    out = getattr(sys.stdout, "buffer", None)
    if out is None:
        sys.stdout.write(diff)
        return
    names, body = "", diff
    if diff.startswith("--- "):
        old, new, body = diff.split("\n", 2)
        names = f"{old}\n{new}\n"
    sys.stdout.flush()
    out.write(os.fsencode(names) + body.encode(encoding, "surrogateescape"))
    out.flush()


def apply_fixes(
    report: Report,
    settings_for: Callable[[str], Settings],
    *,
    diff_only: bool,
    analysed: dict[str, str] | None = None,
) -> tuple[dict[str, int], list[Diagnostic]]:
    """Clamp the lengths at every reported sink: how many were fixed (or would be) in each
    file that changed (or would), and a diagnostic for each that could not be.

    ``settings_for(shown)`` is the configuration of the file shown as ``shown``: its
    rules' fixes, and the re-check of the fixed text. A file named twice (two spellings,
    a symlink, a hard link) is fixed once, under one name, and a finding both names report
    is fixed and counted once. ``analysed`` maps a shown path
    to the digest of the bytes its findings came from: a file whose bytes differ now is
    not edited (its positions may name other code)."""
    from zerolint.engine import Engine
    from zerolint.fix import FixError, fix_file, targets_from_findings

    sinks = [f for f in report.findings if f.sink]
    file_of: dict[str, str] = {}  # a finding's path -> its file's, by device and inode
    names: dict[str, list[str]] = {}
    same: dict[tuple[int, int], str] = {}  # a file's device and inode: its hard links
    for finding in sinks:
        if finding.path not in file_of:
            try:
                st = os.stat(finding.path)
                real = same.setdefault((st.st_dev, st.st_ino), os.path.realpath(finding.path))
            except OSError:
                real = os.path.realpath(finding.path)  # fix_file says what is wrong with it
            file_of[finding.path] = real
            names.setdefault(real, []).append(finding.path)
    # A file is fixed, and reported, once, by one name: its own where a link names it too
    # (a fix is written to the file a link points to), else the first.
    shown_as = {
        file: min(spelt, key=lambda n: (os.path.realpath(n) != os.path.abspath(n), n))
        for file, spelt in names.items()
    }
    by_file: dict[str, list[Finding]] = {}
    kept: dict[tuple[Any, ...], str] = {}
    # A finding seen through two names of a file is one finding, fixed and counted once.
    for finding in sinks:
        file = file_of[finding.path]
        key = (file, finding.code, finding.line, finding.col, finding.argument, finding.sink)
        if kept.setdefault(key, finding.path) == finding.path:
            by_file.setdefault(file, []).append(finding)
    fixed: dict[str, int] = {}
    failed: list[Diagnostic] = []
    for file, findings in sorted(by_file.items(), key=lambda item: shown_as[item[0]]):
        shown = shown_as[file]
        real = os.path.realpath(shown)  # as the re-check's findings name it
        settings = settings_for(shown)
        found = targets_from_findings(findings, settings.sinks(), settings.rules())
        targets = [t for spelling in sorted(found) for t in found[spelling]]
        if not targets:
            continue
        # The re-check looks at the rules with a fix: an unfixable finding of another rule
        # at the same call (ZL002 beside ZL001) stays, and must not refuse the fix.
        fixing = settings.codes_with_fix()
        path = Path(shown)
        # The files the paths came through: re-checked alone, the fixed file would lose a
        # finding whose division is in a helper, whether the fix clamped it or not.
        through = {s.path for f in findings for flow in f.flows for s in flow.steps}
        others = [Path(p) for p in sorted(through) if os.path.realpath(p) != real]

        def verify(
            text: str,
            path: Path = path,
            settings: Settings = settings,
            fixing: frozenset[str] = fixing,
            others: list[Path] = others,
            real: str = real,
        ) -> set[tuple[int, int]]:
            # Where findings are left in the file: none may be at a call the fix edited.
            # Others (of a file's per-file-ignores, or not touching --touching's files)
            # were not asked to be fixed and may stay.
            again = Engine(settings).check([path, *others], overrides={path: text})
            return {
                (f.line, f.col - 1)
                for f in again.findings
                if f.code in fixing and os.path.realpath(f.path) == real
            }

        try:
            result = fix_file(
                path,
                targets,
                diff_only=diff_only,
                verify=verify,
                expected_digest=(analysed or {}).get(shown),
            )
        except FixError as exc:
            failed.append(Diagnostic("ZL910", shown, f"not fixed: {exc.reason}"))
            continue
        except OSError as exc:
            failed.append(Diagnostic("ZL902", shown, f"cannot fix: {exc.strerror or exc}"))
            continue
        failed += not_fixed(shown, result.skipped)
        if result.changed:
            fixed[shown] = len(result.applied)
            if diff_only:
                write_diff(result.diff, result.encoding)
    return fixed, failed


__all__ = ["add_arguments", "lint", "run"]

"""``zerolint check``: lint files, print findings, optionally fix them.

Imports stay light here: a warm run served from the cache, or a run over files that never
mention a sink, does not import LibCST or Z3 at all.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import hashlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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
from zerolint.config import ConfigError, Settings, load_settings
from zerolint.discovery import discover
from zerolint.model import Diagnostic, Report
from zerolint.paths import display_path, module_names

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
# Sets of files whose results the cache keeps per file (the tree, one file, a folder...).
KEEP_UNIVERSES = 4


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        default=["."],
        metavar="PATH",
        help="files or folders to check (default: .)",
    )
    parser.add_argument(
        "--format",
        "--output-format",
        dest="format",
        default="text",
        choices=("text", "json", "sarif", "github"),
        help="output format",
    )
    parser.add_argument("--select", default=None, help="comma-separated rule codes to run")
    parser.add_argument("--ignore", default=None, help="comma-separated rule codes to skip")
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
        "--config", type=Path, default=None, help="pyproject.toml to read [tool.zerolint] from"
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


def codes(text: str | None) -> frozenset[str]:
    if not text:
        return frozenset()
    return frozenset(c.strip().upper() for c in text.split(",") if c.strip())


def settings_for(args: argparse.Namespace, paths: Sequence[Path]) -> Settings:
    from zerolint.cli import UsageError

    if args.config is not None and not args.config.is_file():
        raise UsageError(f"{args.config}: no such configuration file")
    try:
        settings = load_settings(paths, args.config)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    if args.select is not None:
        settings.select = codes(args.select)
    if args.ignore is not None:
        settings.ignore = settings.ignore | codes(args.ignore)
    if args.no_whole_program:
        settings.whole_program = False
    from zerolint.rules import load_rules

    known = {r.code for r in load_rules()}
    for code in settings.select | settings.ignore:
        if not any(k.startswith(code) for k in known):
            raise UsageError(f"unknown rule selector: {code}")
    return settings


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
    paths = [Path(p) for p in args.paths]
    settings = settings_for(args, paths)
    show_progress = _progress_wanted(args)
    fixing = args.fix or args.diff
    timings: dict[str, float] = {}
    analysed: dict[str, str] = {}
    report = lint(
        paths,
        settings,
        use_cache=not args.no_cache and not fixing,
        force_exclude=args.force_exclude,
        progress=show_progress,
        timings=timings,
        jobs=args.jobs,
        analysed=analysed,
    )
    if args.timings:
        shown = " ".join(
            f"{k}={v:.3f}s" if k not in ("parsed", "candidates") else f"{k}={v:.0f}"
            for k, v in timings.items()
        )
        print(f"zerolint: timings: {shown}", file=sys.stderr)
    if fixing:
        fixed, failed = apply_fixes(report, settings, diff_only=args.diff, analysed=analysed)
        if args.diff:
            from zerolint.formats import RenderOptions
            from zerolint.formats.text import diagnostic_line

            for d in failed:  # stdout holds the diff
                print(diagnostic_line(d, RenderOptions()), file=sys.stderr)
            # As --fix would: a finding it cannot fix fails the run, and so does a diff.
            return EXIT_FINDINGS if (fixed or failed) and not args.exit_zero else EXIT_CLEAN
        if fixed:
            report = lint(
                paths, settings, use_cache=False, force_exclude=args.force_exclude, progress=False
            )
            report.fixed = sum(fixed.values())
            if not args.quiet:
                from zerolint.formats import plural

                for shown, count in sorted(fixed.items()):
                    print(f"zerolint: fixed {plural(count, 'error')} in {shown}", file=sys.stderr)
        report.diagnostics += failed
        report.sort()
    if report.findings and (args.format == "json" or args.statistics or fixing):
        mark_fixable(report, settings)
    print_report(report, args)
    if report.files_checked <= 0 and report.diagnostics:
        return EXIT_ERROR
    # As Ruff does: a file that could not be checked fails the run like a finding, since it
    # may hold an unclamped call.
    if (report.findings or report.diagnostics) and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _progress_wanted(args: argparse.Namespace) -> bool:
    from zerolint.progress import progress_wanted

    return progress_wanted(quiet=args.quiet)


def print_report(report: Report, args: argparse.Namespace) -> None:
    from zerolint import formats

    if args.color == "always":
        color = True
    elif args.color == "never":
        color = False
    else:
        color = args.format == "text" and formats.use_color(sys.stdout)
    text = formats.render(
        report,
        args.format,
        color=color,
        show_proved=args.show_proved,
        statistics=args.statistics,
        quiet=args.quiet,
        rules=rule_meta(),
    )
    sys.stdout.write(text)
    sys.stdout.flush()


def rule_meta() -> dict[str, Any]:
    from zerolint.formats import rule_metadata
    from zerolint.rules import load_rules

    return rule_metadata(load_rules())


# ---------------------------------------------------------------------------- linting


def names_key(settings: Settings) -> str:
    return hashlib.sha256("\n".join(sorted(settings.sink_names())).encode()).hexdigest()[:12]


def cache_fingerprint(settings: Settings, package: Path | None = None) -> str:
    """What cached results depend on besides the files: the settings, the rules, and the
    analyzer's own code in ``package`` (default: zerolint's folder), so that an edited
    checkout never reuses results of the old code."""
    from zerolint import __version__
    from zerolint.rules import rules_dir

    digest = hashlib.sha256()
    package = package or Path(__file__).resolve().parent
    sources = sorted(rules_dir().glob("ZL*.toml")) + sorted(package.rglob("*.py"))
    for path in sources:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return f"{__version__}:{settings.fingerprint()}:{digest.hexdigest()[:16]}"


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
) -> Report:
    """Check ``paths``: from the cache when every file is unchanged, else by analysis.

    ``timings``, when given, receives the seconds each phase took; ``analysed`` the digest
    of the bytes analysed of each file read (by shown path), which ``--fix`` compares
    before it edits."""
    timings = {} if timings is None else timings
    clock = time.perf_counter()
    found = discover(paths, settings.exclude, settings.root, force_exclude=force_exclude)
    timings["discover"] = time.perf_counter() - clock
    root = settings.root or Path.cwd()
    cache = (
        ResultCache(root, cache_fingerprint(settings)) if use_cache else ResultCache.disabled(root)
    )
    key = names_key(settings)
    # What a file's findings depend on besides the files they were traced through: which
    # other files the run can follow into, and under which module names (an excluded
    # helper, a removed __init__.py, a single file checked after the whole tree).
    universe = universe_key(found.files, cache) if cache.enabled else ""
    lookups: dict[Path, FileLookup] = {}
    warm = use_cache
    negatives: set[Path] = set()
    for path in found.files:
        try:
            lk = cache.lookup(path)
        except OSError:
            warm = False
            continue
        lookups[path] = lk
        result = lk.result if lk.hit else None
        if not isinstance(result, dict) or result.get("n") != key:
            warm = False
        elif not result.get("m"):
            negatives.add(path)
        elif not isinstance(result.get("u"), dict) or universe not in result["u"]:
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
    for lk in lookups.values():  # the results of other runs' file sets are kept below
        if isinstance(lk.result, dict) and lk.result.get("n") != key:
            lk.result = None
    report, outcome = analyse(
        found.files,
        found.diagnostics,
        settings,
        negatives,
        progress,
        lookups,
        timings,
        jobs,
    )
    if cache.enabled:
        store_results(outcome, lookups, cache, key, universe)
    if analysed is not None:
        for path, shown in outcome.display.items():
            lk = lookups.get(path)
            if lk is not None and lk.was_read:
                analysed[shown] = lk.digest()
    return report


def universe_key(files: Sequence[Path], cache: ResultCache) -> str:
    """A digest of the run's files and their module names."""
    digest = hashlib.blake2b(digest_size=16)
    for path, name in sorted((cache.key_of(p), n) for p, n in module_names(list(files)).items()):
        digest.update(f"{path}\0{name}\n".encode())
    return digest.hexdigest()


def reader_for(lookups: dict[Path, FileLookup]):
    """Reads a file through its lookup (once, and what was hashed), else from disk."""

    def read(path: Path) -> bytes:
        lk = lookups.get(path)
        return lk.take() if lk is not None else read_regular(path)[0]

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
    shown = {cache.key_of(path): display_path(path) for path in files}

    def show(key: str) -> str:
        return shown.get(key) or display_path(cache.root / key)

    report = Report(diagnostics=list(diagnostics), files_checked=len(files))
    try:
        for path in files:
            result = lookups[path].result
            if result.get("m"):
                result = result["u"][universe]
            report.findings += [finding_from_dict(relocated(f, show)) for f in result.get("f", [])]
            report.proved += [finding_from_dict(relocated(f, show)) for f in result.get("p", [])]
            report.diagnostics += [
                diagnostic_from_dict(relocated(d, show)) for d in result.get("d", [])
            ]
            if result.get("d"):
                report.files_checked -= 1
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
) -> tuple[Report, Any]:
    from zerolint.prescan import prescan
    from zerolint.progress import Progress

    def import_analyzer() -> None:
        import zerolint.engine  # noqa: F401 - LibCST: imported only when something is analysed

    clock = time.perf_counter()
    pending = [f for f in files if f not in negatives]
    read = reader_for(lookups)
    scanned = prescan(pending, settings.sink_names(), import_analyzer, jobs=jobs, read=read)
    skip = set(negatives)
    if scanned is not None:
        hits, unreadable = scanned
        skip |= set(pending) - hits - unreadable
    timings["prescan"] = time.perf_counter() - clock
    from zerolint.engine import Engine

    engine = Engine(settings)
    with Progress(len(files), enabled=progress) as bar:
        outcome = engine.run(files, skip=skip, on_file=lambda done, total: bar.advance(), read=read)
    timings.update(engine.stats)
    report = outcome.report
    report.diagnostics = list(diagnostics) + report.diagnostics
    report.sort()
    return report, outcome


def store_results(outcome: Any, lookups: dict, cache: ResultCache, key: str, universe: str) -> None:
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
        mention = path in outcome.candidates
        if not mention:
            result: dict[str, Any] = {"n": key, "m": 0, **entry}
            kept_deps: list = []
        else:
            # Results for other sets of files (the whole tree, one file from pre-commit)
            # stay beside this one while the file and what they were traced through hold.
            before = lk.result if isinstance(lk.result, dict) and lk.result.get("m") else {}
            others = before.get("u") if isinstance(before.get("u"), dict) else {}
            others = {u: r for u, r in others.items() if u != universe}
            kept = dict(list(others.items())[-(KEEP_UNIVERSES - 1) :]) if KEEP_UNIVERSES > 1 else {}
            result = {"n": key, "m": 1, "u": {**kept, universe: entry}}
            kept_deps = list(lk.deps) if kept else []
        try:
            cache.store(lk, result, deps + kept_deps if mention else ())
        except OSError:
            continue
    cache.save()


# ---------------------------------------------------------------------------- fixing


def mark_fixable(report: Report, settings: Settings) -> None:
    """Set ``fixable`` on each finding: whether ``--fix`` would clamp it (planned, not
    written), so that ``[*]`` and ``"fixable": true`` are never promised in vain."""
    from zerolint.fix import FixError, plan_file, targets_from_findings

    by_path: dict[str, list] = {}
    for finding in report.findings:
        by_path.setdefault(finding.path, []).append(finding)
    for shown, findings in by_path.items():
        targets = targets_from_findings(findings, settings.sinks())[shown]
        try:
            applied = set(plan_file(Path(shown), targets).applied)
        except (FixError, OSError, UnicodeDecodeError):
            applied = set()
        for finding, target in zip(findings, targets, strict=True):
            finding.fixable = target in applied


def apply_fixes(
    report: Report,
    settings: Settings,
    *,
    diff_only: bool,
    analysed: dict[str, str] | None = None,
) -> tuple[dict[str, int], list[Diagnostic]]:
    """Clamp the lengths at every reported sink: how many were fixed (or would be) in each
    file that changed (or would), and a diagnostic for each that could not be.

    ``analysed`` maps a shown path to the digest of the bytes its findings came from: a
    file whose bytes differ now is not edited (its positions may name other code)."""
    from zerolint.engine import Engine
    from zerolint.fix import FixError, fix_file, targets_from_findings

    by_path = targets_from_findings(report.findings, settings.sinks())
    fixed: dict[str, int] = {}
    failed: list[Diagnostic] = []
    for shown, targets in sorted(by_path.items()):
        path = Path(shown)

        def verify(text: str, path: Path = path) -> int:
            again = Engine(settings).check([path], overrides={path: text})
            return len(again.findings)  # at most the targets left unfixed

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
        for target, reason in result.skipped:
            failed.append(
                Diagnostic("ZL910", shown, f"not fixed: {reason}", target.line, target.col + 1)
            )
        if result.changed:
            fixed[shown] = len(result.applied)
            if diff_only:
                sys.stdout.write(result.diff)
    return fixed, failed


__all__ = ["add_arguments", "lint", "run"]

"""Run the rules over a set of paths: discover, pre-filter, analyse, judge, suppress, sort.

The pre-filter is what makes zerolint fast on large trees: a file whose text mentions no
sink (and no wrapper of one) cannot call one, so it is read but never parsed. Files that
do mention one are parsed and analysed, and the modules their paths lead into are parsed
when a path needs them.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from zerolint import model
from zerolint.codes import LIMIT
from zerolint.config import Settings, load_settings
from zerolint.dataflow import (
    LIVE_KINDS,
    MAX_DEPTH,
    MAX_PARSES,
    Analyzer,
    RawStep,
    SinkHit,
    Trace,
    Val,
)
from zerolint.dataflow.branches import consistent, in_program_order
from zerolint.dataflow.callee import callee_note
from zerolint.discovery import discover
from zerolint.hazards import Predicate
from zerolint.model import (
    IDENTITY,
    ROW_VALUES,
    SOME_ROW,
    Diagnostic,
    Finding,
    Flow,
    Op,
    OpKind,
    Report,
    Step,
    Verdict,
)
from zerolint.prescan import STAR_IMPORT, Scan
from zerolint.project import ModuleInfo, Project, resolve_relative
from zerolint.rules import Rule, SinkSpec

# Ops that can start zero-able rows: divisions and fills, and padding writes for the rules
# whose [sources] name them ("[n:]=").
SOURCE_KINDS = LIVE_KINDS | {OpKind.PAD_ZERO, OpKind.SUB, OpKind.ADD}  # LIVE_KINDS has ROWS


@dataclass(slots=True)
class Outcome:
    """A run's report plus what the cache needs: which files were candidates or parsed."""

    report: Report
    display: dict[Path, str]
    parsed: list[Path] = field(default_factory=list)
    candidates: set[Path] = field(default_factory=set)
    # The names a file had to mention to be a candidate: the sinks and their wrappers.
    names: set[str] = field(default_factory=set)
    # The run's analyzer, where its summaries are to be replayed in the next (replay_from).
    analyzer: Analyzer | None = None


def mention_pattern(names: Iterable[str]) -> re.Pattern[str]:
    """A name used as code: not inside `backticks` (docs) and not on a comment line."""
    alternatives = "|".join(sorted(map(re.escape, names)))
    return re.compile(
        r"^(?![ \t]*#)[^\n]*?(?<![`\w])(?:" + alternatives + r")(?![`\w])", re.MULTILINE
    )


def mentions(text: str, names: Iterable[str], pattern: re.Pattern[str]) -> bool:
    """Whether ``text`` may use one of ``names``: ``pattern.search`` of each line (ended by
    ``\\n``, ``\\r\\n`` or ``\\r``, as Python ends them) that holds a name. The pattern
    never matches across lines, and run over a whole file it tries every alternative at
    every character (a second per large tree once wrappers with common names join the
    names)."""
    tried: set[int] = set()
    for name in names:
        at = text.find(name)
        while at != -1:
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            if start not in tried:
                tried.add(start)
                stop = len(text) if end == -1 else end
                if text.find("\r", start, stop) == -1:
                    if pattern.search(text, start, stop) is not None:
                        return True
                # A lone \r ends a line for Python too (a file saved with old Mac line
                # ends is one line here): each of its lines is looked at on its own, or a
                # comment on the first would hide the rest.
                elif any(pattern.search(line) for line in text[start:stop].split("\r")):
                    return True
            if end == -1:
                break
            at = text.find(name, end)  # the next line that holds the name
    return False


def reaches_wrapper(
    modname: str, text: str, qualified: list[tuple[str, re.Pattern[str], frozenset[str]]]
) -> bool:
    """Whether a module may call one of the module-level wrappers in ``qualified``, each
    (name, its mention pattern, the modules that define or re-export it): it mentions the
    name and one of those modules, by its last component (every import of ``pkg.wrap``
    spells ``wrap``), or it is in the same package (``from . import build``)."""
    package = modname.rpartition(".")[0]
    for name, pattern, homes in qualified:
        if not mentions(text, (name,), pattern):  # the lines that hold the name, not all
            continue
        for home in homes:
            if modname == home or package and package in (home, home.rpartition(".")[0]):
                return True
            last = home.rpartition(".")[2]
            if last in text and re.search(rf"\b{re.escape(last)}\b", text):
                return True
    return False


def reexported(
    homes: Mapping[str, Iterable[str]], modules: Iterable[ModuleInfo]
) -> dict[str, frozenset[str]]:
    """``homes`` plus the parsed modules that import a wrapper from one of its homes, under
    the name they import it as (``pkg/__init__.py``: ``from .wrap import build as make``)."""
    out = {n: set(h) for n, h in homes.items()}
    changed = True
    while changed:  # a chain of re-exports: pkg.wrap -> pkg -> app
        changed = False
        for mod in modules:
            for local, qual in mod.import_pairs():
                home, _, name = qual.rpartition(".")
                if home in out.get(name, ()) and mod.name not in out.setdefault(local, set()):
                    out[local].add(mod.name)
                    changed = True
    return {n: frozenset(h) for n, h in out.items()}


# `from m import *` (relative or not) on a line of its own: the module it re-exports. The
# files are those that hold STAR_IMPORT (the prescan's child finds them as it reads).
_STAR_IMPORT = re.compile(
    r"^[ \t]*from(?:[ \t]+|(?=\.))(\.*)[ \t]*([\w.]*)[ \t]+import \*", re.MULTILINE
)


def star_importers(project: Project) -> list[tuple[str, str]]:
    """(a module, the module it star-imports) for every ``from m import *`` of the tree,
    found in the files' text, which need not be parsed."""
    importers: list[tuple[str, str]] = []
    for path in project.files_containing(STAR_IMPORT):
        name = project.name_of.get(path)
        text = project.text(path)
        if not name or text is None:
            continue
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for found in _STAR_IMPORT.finditer(text):
            level, module = len(found[1]), found[2] or None
            base = resolve_relative(package, level, module) if level else (module or "")
            if base and base != name:
                importers.append((name, base))
    return importers


def star_reexported(
    homes: Mapping[str, frozenset[str]], importers: Sequence[tuple[str, str]]
) -> tuple[dict[str, frozenset[str]], set[str]]:
    """``homes`` plus the modules that re-export a home's names with ``from home import *``
    (``pkg/__init__.py``: ``from .kernels import *``; its callers spell ``from pkg import
    build``), of ``importers`` (``star_importers``); and those modules."""
    out = {n: set(h) for n, h in homes.items()}
    added: set[str] = set()
    changed = bool(importers)
    while changed:  # a chain: pkg.ops.kernels -> pkg.ops -> pkg
        changed = False
        for held in out.values():
            for importer, base in importers:
                if base in held and importer not in held:
                    held.add(importer)
                    added.add(importer)
                    changed = True
    return {n: frozenset(h) for n, h in out.items()}, added


def all_reexported(
    homes: Mapping[str, Iterable[str]],
    modules: Iterable[ModuleInfo],
    importers: Sequence[tuple[str, str]],
) -> tuple[dict[str, frozenset[str]], set[str]]:
    """``reexported`` and ``star_reexported`` taken together until neither adds a home: a
    chain may mix the two (``pkg``: ``from .ops import build``, where ``pkg.ops`` holds
    ``from .wrap import *``). The homes, and the star importers among them."""
    modules = list(modules)
    out = {n: frozenset(h) for n, h in homes.items()}
    added: set[str] = set()
    while True:
        grown, more = star_reexported(reexported(dict(out), modules), importers)
        added |= more
        if grown == out:
            return out, added
        out = grown


class Engine:
    """One run of zerolint over a tree; reusable for several trees with the same settings."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.rules: tuple[Rule, ...] = self.settings.rules()
        self.stats: dict[str, float] = {}
        # ZL930 diagnostics of the current run: sink calls whose paths were cut at MAX_DEPTH.
        self.limits: list[Diagnostic] = []

    def check(
        self,
        paths: Sequence[Path],
        *,
        force_exclude: bool = False,
        overrides: dict[Path, str] | None = None,
    ) -> Report:
        """Check ``paths`` (files or folders); ``overrides`` maps a file to the text to
        analyse instead of its contents (used to re-check a fix before it is written)."""
        found = discover(
            paths, self.settings.exclude, self.settings.root, force_exclude=force_exclude
        )
        report = self.run(found.files, overrides=overrides).report
        report.diagnostics = list(found.diagnostics) + report.diagnostics
        report.sort()
        return report

    def project_for(
        self, files: Sequence[Path], read: Callable[[Path], bytes] | None = None
    ) -> Project:
        """The index of ``files`` that ``run`` makes where it is handed none."""
        return Project(files, read=read, namespaces=self.settings.namespace_roots())

    def first_candidate(self, project: Project) -> Callable[[Path], bool]:
        """Whether a file is one ``analyse`` takes in its first round (it mentions a sink
        name of the rules): every such file is parsed, whatever else is found."""
        names = self.settings.sink_names(self.rules)
        pattern = mention_pattern(names)

        def mentioned(path: Path) -> bool:
            text = project.text(path)
            return text is not None and mentions(text, names, pattern)

        return mentioned

    def run(
        self,
        files: Sequence[Path],
        *,
        skip: set[Path] | None = None,
        on_file: Callable[[int, int], None] | None = None,
        overrides: dict[Path, str] | None = None,
        read: Callable[[Path], bytes] | None = None,
        project: Project | None = None,
        scan: Scan | None = None,
        record: bool = False,
        replay_from: Analyzer | None = None,
        fixable: bool = False,
    ) -> Outcome:
        """Analyse ``files``. Files in ``skip`` are known (from the cache) not to mention any
        sink name, and are not read unless the set of names grows. ``read`` gives a file's
        bytes (the cache passes the bytes it hashed). ``project``, when given, is an index
        of ``files`` kept from an earlier run (the language server's): its texts and parsed
        modules are reused, and only what ``Project.set_text`` changed is read or parsed
        again. ``scan``, when given, is the prescan's child: it holds the files' texts and
        answers the analysis's searches of the whole tree. ``record``, with a project that
        hears the analysis's questions (the language server's), keeps what each summary's
        making asked, and the outcome holds the run's analyzer: the next run passes it as
        ``replay_from``, and its summaries are replayed where the answers are the same
        (``Analyzer.replay``) rather than made again. ``fixable``: mark each finding with
        whether ``--fix`` would clamp it (``mark_fixable``)."""
        if project is None:
            project = self.project_for(files, read)
        if scan is not None:
            project.search_with(scan.containing, scan.covered())
        for path, text in (overrides or {}).items():
            project.set_text(path, text)
        outcome = Outcome(report=Report(files_checked=len(files)), display={})
        if not self.rules:
            return outcome
        analyzer = Analyzer(project, self.rules, whole_program=self.settings.whole_program)
        if record and project.records_reads():
            analyzer.adopt(replay_from)
            outcome.analyzer = analyzer
        clock = time.perf_counter()
        modules, candidates = self.analyse(project, analyzer, on_file, skip or set())
        outcome.names = self.settings.sink_names(self.rules) | analyzer.wrapper_names
        self.stats["index"] = time.perf_counter() - clock
        report = outcome.report
        clock = time.perf_counter()
        self.limits = []
        for mod in modules:
            for finding in self.findings_in(mod, analyzer):
                safe = finding.verdict is not None and finding.verdict.status == "safe"
                (report.proved if safe else report.findings).append(finding)
        report.diagnostics += [
            dataclasses.replace(d, analysed=True) if project.tried(path) else d
            for path, d in project.diagnostics.items()
        ] + self.limits
        self.stats["paths"] = time.perf_counter() - clock
        self.stats["parsed"] = float(len(project.parsed()))
        self.stats["ahead"] = float(project.taken_ahead)  # of them, parsed in the prescan
        for mod in project.parsed():  # where a run's time went, file by file (--timings)
            self.stats[f"parse:{mod.display}"] = project.parse_seconds.get(mod.path, 0.0)
            self.stats[f"analyse:{mod.display}"] = analyzer.seconds.get(mod.path, 0.0)
        self.stats["candidates"] = float(len(candidates))
        # Functions interpreted (a recursion's reruns included), and summaries a later round
        # of the analysis kept rather than made again.
        self.stats["interpreted"] = float(analyzer.interpreted)
        self.stats["kept"] = float(analyzer.kept_summaries)
        if outcome.analyzer is not None:  # the language server's: summaries replayed
            self.stats["replayed"] = float(analyzer.replayed)
            self.stats["tainted"] = float(analyzer.tainted)
            analyzer.keep_for_replay()
        self.suppress(report, project)
        if fixable:
            clock = time.perf_counter()
            self.mark_fixable(report, project)
            self.stats["fixable"] = time.perf_counter() - clock
        report.files_checked = len(files) - len(project.diagnostics)
        report.sort()
        outcome.parsed = [m.path for m in project.parsed()]
        outcome.candidates = candidates
        shown = set(outcome.parsed) | candidates | set(project.diagnostics)
        outcome.display = {p: project.display_of(p) for p in shown}
        return outcome

    # ------------------------------------------------------------------ analysis

    def analyse(
        self,
        project: Project,
        analyzer: Analyzer,
        on_file: Callable[[int, int], None] | None,
        skip: set[Path],
    ) -> tuple[list[ModuleInfo], set[Path]]:
        """Find candidate modules and interpret them, growing the set while new wrappers of a
        sink are discovered (a wrapper's callers mention the wrapper, not the sink)."""
        base_names = self.settings.sink_names(self.rules)
        names = set(base_names)
        # Module-level wrappers: name -> modules defining or re-exporting it (see
        # reaches_wrapper; a bare name like `build` would make every file a candidate).
        homes: dict[str, frozenset[str]] = {}
        modules: dict[Path, ModuleInfo] = {}
        candidates: set[Path] = set()
        total = len(project.files)
        first = True
        stars: list[tuple[str, str]] | None = None
        while True:
            pattern = mention_pattern(names)
            qualified = [(n, mention_pattern([n]), h) for n, h in sorted(homes.items())]
            new: list[Path] = []
            # Every file is read anyway unless the cache or the prescan skips some: then the
            # project's substring searches (remembered, warm in the language server, answered
            # by the prescan's child when it runs) say which to look at, but only where they
            # cost no reading: once wrappers are found, a skipped file must be looked at again.
            # A module-level wrapper's callers name it too (reaches_wrapper), so its name is scanned.
            scanned = names | homes.keys()
            cheap = not skip or project.searches_elsewhere()
            maybe = set().union(*map(project.files_containing, scanned)) if cheap else None
            for i, path in enumerate(project.files):
                if first and on_file is not None:
                    on_file(i + 1, total)  # skipped files were checked by the cache or prescan
                if path in candidates or (path in skip and names == base_names and not homes):
                    continue
                if maybe is not None and path not in maybe:
                    continue
                text = project.text(path)
                if text is not None and (
                    mentions(text, names, pattern)
                    or reaches_wrapper(project.name_of.get(path, ""), text, qualified)
                ):
                    new.append(path)
                    candidates.add(path)
            # Without new modules, a round is still due where a summary was told a name
            # wraps no sink that now does (a call of `ops.meta(...)` is followed only where
            # `meta` is known to): otherwise whether it is followed would depend on the
            # order the functions were interpreted in.
            if not new and (first or not analyzer.told_otherwise()):
                break
            first = False
            for path in new:
                mod = project.module_at(path)
                if mod is not None:
                    modules[path] = mod
                    analyzer.sink_capable.add(mod.name)
            # Summaries made before these modules were known to forward to sinks, or before
            # the wrappers found since were, are stale.
            analyzer.reset_summaries()
            for mod in modules.values():
                for key in analyzer.module_functions(mod):
                    analyzer.summary(key)
            if not self.settings.whole_program:
                break
            grown = names | analyzer.open_wrapper_names
            if analyzer.wrapper_homes and stars is None:
                stars = star_importers(project)  # once a run: the texts do not change
            grown_homes, importers = all_reexported(
                analyzer.wrapper_homes, modules.values(), stars or ()
            )
            # A star importer reaches a sink as its home does: a path may lead through it.
            analyzer.sink_capable |= importers
            if grown == names and grown_homes == homes:
                break
            names, homes = grown, grown_homes
        return [modules[p] for p in sorted(modules)], candidates

    def findings_in(self, mod: ModuleInfo, analyzer: Analyzer) -> list[Finding]:
        """One finding per sink call of ``mod`` and sink declaration (a rule and its
        argument) that zero-able lengths reach, judged."""
        by_call: dict[tuple[int, SinkSpec], list[SinkHit]] = {}
        for key in analyzer.module_functions(mod):
            for hit in analyzer.summary(key).hits:
                if hit.mod is mod:
                    by_call.setdefault((id(hit.call), hit.spec), []).append(hit)
        # The same order on every run: hits come in the order the analysis met the sink's
        # refs, which are compared by identity; and what one finding resolves is cached for
        # the next (a rule's paths then depend on which rule went first).
        codes = [rule.code for rule in self.rules]

        def order(group: tuple[tuple[int, SinkSpec], list[SinkHit]], place: bool) -> tuple:
            (_, spec), hits = group
            hit = hits[0]
            span = (hit.mod.positions().call(hit.stmt, hit.call) or (0, 0, 0, 0)) if place else ()
            rule = self.rule_of(spec)
            return (span, codes.index(rule.code), rule.sinks.index(spec))

        # By statement, then by the call's place where a statement holds several calls,
        # then by rule: a module's positions (a parse) are worked out for the order only
        # where two calls share a statement.
        by_statement: dict[int, list] = {}
        for group in by_call.items():
            hit = group[1][0]
            by_statement.setdefault(hit.mod.statement_order(hit.stmt), []).append(group)
        ordered = []
        for _, groups in sorted(by_statement.items(), key=lambda item: item[0]):
            place = len({id(hits[0].call) for _, hits in groups}) > 1
            ordered += sorted(groups, key=lambda group: order(group, place))
        out = []
        for _, hits in ordered:
            finding = self.finding_for(hits, analyzer)
            if finding is not None:
                out.append(finding)
        return out

    def finding_for(self, hits: list[SinkHit], analyzer: Analyzer) -> Finding | None:
        """Resolve the paths into a sink call in two rounds: first through the modules
        already parsed; only when those paths do not already show the call unsafe, through
        every module they lead into (parsing costs more than everything else)."""
        scope = RuleScope(self.rule_of(hits[0].spec), hits[0].spec)

        def decide(traces: list[Trace], last_round: bool) -> Finding | None:
            # One choice per branch: a trace through both arms of an if is no path.
            live = [
                t for t in dict.fromkeys(traces) if t.concrete and scope.live(t) and consistent(t)
            ]
            func = hits[0].func
            finding = (
                self.make_finding(
                    hits[0],
                    live,
                    scope,
                    lambda t: analyzer.refine(func, t),
                    analyzer.sinks_by_qual,
                )
                if live
                else None
            )
            verdict = finding.verdict if finding is not None else None
            if verdict is not None and verdict.status == "unsafe":
                return finding  # nothing is worse: a path cut off cannot matter
            if not last_round:
                return None
            cut = DEPTH_CUT if analyzer.depth_cut else PARSE_CUT if analyzer.parse_cut else None
            limit = limit_diagnostic(hits[0], cut) if cut is not None else None
            if limit is not None and limit not in self.limits:  # one per call, not per rule
                self.limits.append(limit)
            return finding if verdict is not None else None

        vals = [unresolved_worth_following(hit.val, scope) for hit in hits]
        if not scope.predicate.uses_values or not scope.rule.parse_more:
            # A row count is decided by the selections and guards near the call: follow the
            # paths through the modules parsed already, never parse more for them (the
            # values' rules do, where a clamp or a division can be far away, unless their
            # rule file says `parse-more = false`).
            analyzer.depth_cut = False  # as resolve_in_rounds does: this call's cut only
            return decide([t for v in vals for t in analyzer.resolve(v)], True)
        return analyzer.resolve_in_rounds(vals, decide)

    def make_finding(
        self,
        hit: SinkHit,
        traces: list[Trace],
        scope: RuleScope,
        refine: Refine | None = None,
        sinks_by_qual: Mapping[str, tuple[SinkSpec, ...]] | None = None,
    ) -> Finding:
        """A finding whose paths are judged one by one: the verdict is the worst, and each
        place where lengths became zero-able is shown by its worst path. Where the call's
        name is the kernel only in one arm of an ``if`` (``sinks_by_qual`` says which
        qualified names are the kernel), the message says so (``callee.callee_note``)."""

        rule = scope.rule
        span = (
            hit.mod.positions().call(hit.stmt, hit.call)
            or hit.mod.positions().statement(hit.stmt)
            or (0, 0, 0, 0)
        )
        expr = described(hit, "`{expr}`" in rule.message)
        template = rule.message if expr != LENGTHS else rule.message.replace("`{expr}`", "{expr}")
        message = template.format(
            expr=expr, sink=hit.spec.function, argument=hit.spec.argument_text()
        )
        if sinks_by_qual is not None and type(hit.call.func) is cst.Name:
            kernel = {qual for qual, specs in sinks_by_qual.items() if hit.spec in specs}
            note = callee_note(hit.mod, hit.func.node, hit.stmt, hit.call, kernel)
            if note is not None:
                message += f" ({note})"
        clock = time.perf_counter()
        shown = self.worst_paths(traces, scope, refine)
        self.stats["judge"] = self.stats.get("judge", 0.0) + time.perf_counter() - clock
        finding = Finding(
            code=rule.code,
            path=hit.mod.display,
            line=span[0],
            col=span[1] + 1,
            message=message,
            sink=hit.spec.function,
            argument=hit.spec.keyword or str(hit.spec.position),
            flows=[flow for flow, _, _ in shown],
            end_line=span[2],
            end_col=span[3] + 1,
        )
        worst = max(range(len(shown)), key=lambda i: (SEVERITY[shown[i][2].status], -i))
        finding.verdict = dataclasses.replace(shown[worst][2], flow_index=worst)
        if finding.verdict.status != "safe":
            masked = output_sanitized(hit, scope)
            if masked is not None:
                reason, steps = masked
                finding.flows = [Flow(f.steps + steps) for f in finding.flows]
                finding.verdict = Verdict("safe", reason=reason)
        if finding.verdict.status == "safe":
            finding.verdict = dataclasses.replace(finding.verdict, flow_index=None)
            # --show-proved says why the call is safe; it must not ask for a clamp.
            shown = f"`{expr}`" if expr != LENGTHS else expr
            finding.message = (
                f"{shown} reaching `{hit.spec.function}` ({hit.spec.argument_text()}) "
                "is proved safe"
            )
        return finding

    def worst_paths(
        self, traces: list[Trace], scope: RuleScope, refine: Refine | None = None
    ) -> list[tuple[Flow, Trace, Verdict]]:
        """One judged path per place where the lengths became zero-able: its worst one.

        Within a place, paths are judged in display order (the one that starts there,
        repeats no statement, shows the most code) and judging stops at the first unsafe
        one, since nothing is worse: a large function can carry hundreds of paths.
        A path not proved safe on its own is tried again with the conditions ``refine``
        finds outside the sink's function (a caller's guards, a guard on a field): it is
        proved safe, and shown with them, when every variant is."""
        from zerolint import smt  # z3 is imported only when there is something to prove

        groups: dict[tuple, list[Trace]] = {}
        predicate = scope.predicate
        ratios_of = self.ratios_of(scope.rule)
        hints = scope.rule.options.get("witness-hints")
        facts = tuple(self.settings.option(scope.rule, "facts") or ())
        for t in traces:
            src = scope.key_source(t)
            key = (src.mod.display, src.mod.statement_order(src.stmt)) if src else ("", id(t))
            groups.setdefault(key, []).append(t)
        chosen = []
        for members in groups.values():
            candidates = sorted(
                ((to_flow(t, scope), t) for t in set(members)),
                key=lambda ft: display_rank(*ft, scope),
            )
            best: tuple[Flow, Trace, Verdict] | None = None

            def judge(flow: Flow) -> Verdict:
                return smt.judge_flow(
                    flow, predicate, ratios=ratios_for(flow, ratios_of), hints=hints, facts=facts
                )

            for flow, trace in candidates:
                verdict = judge(flow)
                variants = refine(trace) if refine and verdict.status != "safe" else None
                if variants:
                    proved: list[tuple[Flow, Trace, Verdict]] = []
                    for v in variants:  # stop at the first variant not proved
                        v_flow = to_flow(v, scope)
                        v_verdict = judge(v_flow)
                        if v_verdict.status != "safe":
                            break
                        proved.append((v_flow, v, v_verdict))
                    if len(proved) == len(variants):
                        flow, trace, verdict = proved[0]
                if best is None or SEVERITY[verdict.status] > SEVERITY[best[2].status]:
                    best = (flow, trace, verdict)
                if verdict.status == "unsafe":
                    break
            assert best is not None
            chosen.append(best)
        return sorted(chosen, key=lambda item: flow_key(item[0]))

    def rule_of(self, spec: SinkSpec) -> Rule:
        """The rule a sink declaration belongs to (every sink names its rule)."""
        for rule in self.rules:
            if rule.code == spec.rule:
                return rule
        raise LookupError(f"sink {spec.function} names rule {spec.rule!r}, which is not running")

    # ------------------------------------------------------------------ verdicts

    def ratios_of(self, rule: Rule) -> tuple[int, ...]:
        """The rule's ``compress-ratios``: configured for it, or its rule file's default."""
        return tuple(self.settings.option(rule, "compress-ratios") or ())

    def mark_fixable(self, report: Report, project: Project) -> None:
        """Set ``fixable`` on the findings of sinks: whether ``--fix`` would clamp each,
        planned on the tree the analysis built (``fix.fixable_targets``), so that the
        results cache keeps the answer and no file is parsed again to give it."""
        from zerolint.fix import fixable_targets, targets_from_findings

        with_fix = self.settings.codes_with_fix()
        modules = {m.display: m for m in project.parsed()}
        by_path: dict[str, list[Finding]] = {}
        for finding in report.findings:
            if not finding.sink:
                continue
            if finding.code not in with_fix:
                finding.fixable = False  # a rule without a fix template (ZL002)
            elif finding.path in modules:
                by_path.setdefault(finding.path, []).append(finding)
        sinks, rules = self.settings.sinks(), self.settings.rules()
        for shown, findings in by_path.items():
            mod = modules[shown]
            targets = targets_from_findings(findings, sinks, rules)[shown]
            applied = set(fixable_targets(mod.module, mod.text, targets, mod.positions()))
            for finding, target in zip(findings, targets, strict=True):
                finding.fixable = target in applied

    def suppress(self, report: Report, project: Project) -> None:
        """Drop findings that a suppression comment covers (see ``zerolint.suppression``;
        findings are only ever in parsed modules, whose text is at hand); they are kept in
        ``report.suppressed`` so that unused suppressions can be told apart."""
        if not report.findings:
            return
        from zerolint import suppression

        texts = {m.display: m.text for m in project.parsed()}
        report.findings, report.suppressed = suppression.split(report.findings, texts)


# What ZL930 says was cut, by limit: the nested calls (MAX_DEPTH), the modules (MAX_PARSES).
DEPTH_CUT = f"go through more than {MAX_DEPTH} nested calls; the deeper calls were not followed"
PARSE_CUT = f"lead into more than {MAX_PARSES} modules not parsed yet; the others were not followed"


LENGTHS = "the lengths"
"""What a message calls the lengths where no expression of the code carries them."""


def described(hit: SinkHit, quoted: bool) -> str:
    """The expression a finding's message names: the call's argument, else (a closure's
    free name, a ``**kwargs`` dict) the callee's, with the function it is in. ``quoted``:
    the message puts the expression in backticks, so the function's name gets its own."""
    if hit.arg_node is not None:
        return hit.mod.code(hit.arg_node, (hit.stmt, hit.call))
    if hit.via is None:
        return LENGTHS
    callee, name = hit.via
    inner = described(callee, quoted)
    if inner == LENGTHS:
        return LENGTHS
    return f"{inner}` in `{name}" if quoted else f"{inner} in {name}"


def limit_diagnostic(hit: SinkHit, cut: str) -> Diagnostic:
    """ZL930 at a sink call whose paths a limit cut off (``cut``: which, and what)."""
    span = hit.mod.positions().call(hit.stmt, hit.call) or hit.mod.positions().statement(hit.stmt)
    line, col = (span[0], span[1] + 1) if span else (0, 0)
    return Diagnostic(
        LIMIT,
        hit.mod.display,
        f"paths into `{hit.spec.function}` {cut}, so a finding may be missing",
        line,
        col,
    )


SEVERITY = {"safe": 0, "unknown": 1, "unsafe": 2}
Refine = Callable[[Trace], "list[Trace] | None"]


@dataclass(frozen=True, slots=True)
class RuleScope:
    """What one sink declaration counts: its rule's sources and sanitizers, its hazard.

    A source of another rule does not make a path worth reporting here, and a sanitizer of
    another rule (or one this sink does not accept) changes nothing on the path."""

    rule: Rule
    spec: SinkSpec

    @property
    def predicate(self) -> Predicate:
        return self.rule.predicate_for(self.spec)

    def is_source(self, step: RawStep) -> bool:
        return step.op.kind in SOURCE_KINDS and self.rule.is_source(step.effect)

    def live(self, trace: Trace) -> bool:
        first = trace.steps[0] if trace.steps else None
        if first is not None and first.op.kind == OpKind.ROWS and not self.is_source(first):
            return False  # a row count starts it: only a rule about row counts follows it
        return self.key_source(trace) is not None

    def key_source(self, trace: Trace) -> RawStep | None:
        steps = trace.steps
        for i, step in enumerate(steps):
            if self.is_source(step) and not (
                # A difference that then goes through an operation outside the model says
                # nothing (index arithmetic is full of them): it starts no reported path.
                step.effect is not None
                and step.effect[0] == "subtraction"
                and any(later.op.kind == OpKind.OPAQUE for later in steps[i + 1 :])
            ):
                return step
        return None

    def sanitizes(self, step: RawStep) -> bool:
        return self.rule.counts_sanitizer(step.effect, self.spec)

    def effective_op(self, step: RawStep) -> Op:
        if step.role == "sanitizer" and not self.sanitizes(step):
            return IDENTITY
        return step.op


def output_sanitized(hit: SinkHit, scope: RuleScope) -> tuple[str, tuple[Step, ...]] | None:
    """Why the call is safe whatever reaches it, when its sink accepts ``output_mask`` and
    every output the kernel spoils is masked or discarded after it (dataflow/outputs.py),
    with the masking statements as sanitizer steps; None otherwise."""
    from zerolint.dataflow.outputs import outputs_handled

    forms = scope.rule.output_mask_forms(scope.spec)
    if not forms:
        return None
    handled = outputs_handled(hit.mod.module, hit.func.node, hit.stmt, hit.call, scope.spec, forms)
    if handled is None:
        return None
    steps = []
    for h in handled:
        if h.stmt is None:
            continue
        span = hit.mod.positions().statement(h.stmt)
        line, col = (span[0], span[1] + 1) if span else (0, 0)
        code = hit.mod.code(h.stmt)
        steps.append(Step(hit.mod.display, line, col, code, "sanitizer", IDENTITY, "output mask"))
    reason = "; ".join(h.how for h in handled) + " after the call"
    return reason, tuple(steps)


def ratios_for(flow: Flow, ratios: tuple[int, ...]) -> dict[str, tuple[int, ...]] | None:
    """The rule's ``compress-ratios``, applied to every divisor symbol of the path."""
    if not ratios:
        return None
    symbols = {
        name  # a bounded divisor (``max(r,1)``) takes them through its symbol
        for op in flow.ops
        if op.kind in (OpKind.FLOORDIV, OpKind.TRUNCDIV, OpKind.CEILDIV, OpKind.RSHIFT)
        for name in model.symbol_names(op.arg)
    }
    return {s: ratios for s in symbols} or None


def clamped_at_end(trace: Trace, scope: RuleScope) -> bool:
    """The trace's last value-changing step leaves no row the hazard faults on (a clamp to
    a constant >= 1 that this sink accepts): whatever its origin turns out to hold, the
    path is safe."""
    for step in reversed(trace.steps):
        op = scope.effective_op(step)
        if op.kind in (OpKind.IDENTITY, OpKind.GUARD, OpKind.ROWS):
            continue  # path conditions and row counts change no value
        return scope.predicate.clears(op)
    return False


def selects_rows(trace: Trace) -> bool:
    """A selection on the path decides the row count (the last one is B), and the fresh
    trace that starts at it is judged already, with no more guards than this one."""
    return any(step.op.kind == OpKind.ROWS for step in trace.steps)


def unresolved_worth_following(val: Val, scope: RuleScope) -> Val:
    """Placeholders clamped before the sink need no resolution (it may parse half a tree)."""
    counts_rows = not scope.predicate.uses_values
    kept = [
        t
        for t in val.traces
        if t.concrete or not (clamped_at_end(t, scope) or counts_rows and selects_rows(t))
    ]
    return val if len(kept) == len(val.traces) else Val(kept, val.refs)


def display_rank(flow: Flow, trace: Trace, scope: RuleScope) -> tuple:
    """Smaller is shown first: starts where the lengths became zero-able, repeats no
    statement, shows the most code; then a stable order."""
    src = scope.key_source(trace)
    starts_there = src is not None and trace.steps[0].stmt is src.stmt
    lines = [(s.path, s.line) for s in flow.steps]
    distinct = len(set(lines))
    return (not starts_there, distinct != len(lines), -distinct, len(lines), flow_key(flow))


def flow_key(flow: Flow) -> tuple:
    """A stable order for paths (trace sets are hashed by identity: never rely on them)."""
    return tuple((s.path, s.line, s.col, s.role, s.op.kind, str(s.op.arg)) for s in flow.steps)


# The suffix a name bound again gives its earlier value's symbol (frames.retire_in).
_RENAMED = re.compile(r"@[\w/]+:\d+")


def to_flow(trace: Trace, scope: RuleScope) -> Flow:
    """The path a user sees, with the ops this sink's rule counts (a sanitizer of another
    rule is shown as a plain step)."""
    steps: list[Step] = []
    # A path about a row count starts at a selection (after the caller's guards and call
    # that contexts.py may put before it).
    first = next((s for s in trace.steps if s.op.kind != OpKind.GUARD and s.role != "call"), None)
    rows_path = first is not None and first.op.kind == OpKind.ROWS
    symbols = {
        n for s in trace.steps if s.op.kind != OpKind.GUARD for n in model.symbol_names(s.op.arg)
    }
    for raw in in_program_order(trace.steps):
        op, role, note = raw.op, raw.role, raw.note
        if op.kind == OpKind.GUARD:
            head = str(op.arg).split()[0]
            if head in ROW_VALUES:
                if rows_path or (head == SOME_ROW and not scope.predicate.needs_every_row):
                    # Nothing to a row count; and a condition on some row is left out by
                    # the judge where the fault needs only one (smt: value_guards).
                    continue
            elif not rows_path and head not in symbols:
                continue  # a condition on nothing this path computes with
        if op.kind == OpKind.ROWS and not rows_path:
            continue  # a selection on a path about values, not about row counts
        if "@" in note:
            # A name's earlier value (`n@pkg/mod:12`, frames.retire_in) as the code wrote it.
            note = _RENAMED.sub("", note)
        if role == "sanitizer" and not scope.sanitizes(raw):
            op, role = IDENTITY, "flow"
            note = f"{note} (no sanitizer for {scope.rule.code})" if note else note
        pos = raw.mod.positions()
        if raw.node is not None and type(raw.node) is cst.Call:
            span = pos.call(raw.stmt, raw.node) or pos.shown(raw.stmt)
        else:
            span = pos.shown(raw.stmt)  # the line of the statement's text shown
        line, col = (span[0], span[1] + 1) if span else (0, 0)
        steps.append(
            Step(
                path=raw.mod.display,
                line=line,
                col=col,
                code=raw.mod.code(raw.stmt),
                role=role,
                op=op,
                note=note,
            )
        )  # type: ignore[arg-type]
    return Flow(tuple(steps))


def check_paths(paths: Sequence[str | Path], settings: Settings | None = None) -> Report:
    """Run every selected rule over ``paths`` (files or folders) and return the sorted report.

    Settings default to the nearest ``[tool.zerolint]`` above the paths.
    """
    resolved = [Path(p) for p in paths]
    if settings is None:
        settings = load_settings(resolved)
    return Engine(settings).check(resolved)


__all__ = ["Diagnostic", "Engine", "check_paths"]

"""The language server's warm index: the one layer between the server and the engine.

The server keeps one :class:`Context` per checked tree (a workspace folder, or the folder of
a ``[tool.zerolint]`` inside one; as in ``zerolint check``, a tree holds the files its
configuration applies to, not those of a folder below configured on its own): its files,
their texts (an open editor buffer wins over the file on disk), the modules parsed so far
and the last results, file by file. An edit re-runs the engine over that warm project
(:class:`WarmProject`), so nothing of the tree is read or parsed again except the edited
file, and only the chunks of it that the edit touched (``server_reparse``); and only when
the edit can matter at all: when the file was parsed for the last results, is (or was) a
candidate, or now mentions a sink, a wrapper of one, or a name the analysis searched the
tree for. Otherwise its results are known without analysis (none).

Each run sees the tree as a cold ``zerolint check`` of the same contents does: a module
parsed by an earlier run is not taken as parsed by this one until this run asks for it
(then its kept parse is used). The analysis reads "already parsed" as "follow paths through
it for free", so modules left parsed by earlier runs would change what a run finds.

Everything the server needs from the engine goes through this module (``Engine.run`` with a
kept ``Project``, ``fix.apply_fixes`` for code actions), so the rest of the server does not
depend on the engine's internals.
"""

from __future__ import annotations

import bisect
import gc
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from zerolint.config import ConfigError, Resolver, Settings, find_pyproject, load_settings
from zerolint.discovery import PY_SUFFIXES, SKIP_DIRS, discover, is_excluded
from zerolint.model import Diagnostic, Finding, Report
from zerolint.project import ModuleInfo, Project
from zerolint.server_reparse import Reparser

if TYPE_CHECKING:
    from zerolint.dataflow import Analyzer

T = TypeVar("T")

Log = Callable[[str, str], None]  # (level: "error" | "warning" | "info", message)


@dataclass(slots=True)
class FileResult:
    """What the last analysis said about one file, and the text it analysed."""

    findings: list[Finding] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    text: str | None = None

    def key(self) -> tuple:
        """Equal for results that show the same (to republish only what changed)."""
        return (
            tuple(
                (f.code, f.line, f.col, f.end_line, f.end_col, f.message, tuple(f.flows), f.verdict)
                for f in self.findings
            ),
            tuple(self.diagnostics),
        )


def absolute(display: str) -> Path:
    """The file a finding's or step's path names (the engine shows paths relative to the
    current directory, or absolute outside it)."""
    return Path(os.path.abspath(display))


class WarmProject(Project):
    """A project whose parses outlive a run, while each run parses as a cold run does.

    ``begin_run`` forgets which modules count as parsed (and their syntax-error
    diagnostics); ``module_at`` then gives a module whose text has not changed since it was
    parsed without parsing it again, in the order the run asks for them, so ``parsed()``,
    ``is_parsed`` and ``diagnostics`` are what a fresh ``Project`` would hold at that
    point. Edited buffers are parsed by a ``Reparser``: only the chunks that changed."""

    def __init__(self, files: Iterable[Path], namespaces: Sequence[str] = ()) -> None:
        super().__init__(files, namespaces=namespaces)
        self.cst_parse = Reparser()
        # path -> (the text parsed, its module or None, the diagnostic that parse gave).
        self._kept: dict[Path, tuple[str, ModuleInfo | None, Diagnostic | None]] = {}
        # The files whose text this run read other than by a remembered scan (which the
        # needles of Context.may_matter stand for): an edit of one can change the results.
        self.read: set[Path] = set()
        self._scanning = False
        # The kept parses frozen with the index (the server freezes it out of the cyclic
        # collector's sight), and the text size of those dropped since: a frozen parse
        # that an edit replaced is garbage the collector cannot free until it is unfrozen.
        self.frozen: set[Path] = set()
        self.frozen_garbage = 0
        self._asking = 0  # inside a question: the questions it asks itself are not heard

    def _heard(self, kind: str, arg: object, ask: Callable[[], T]) -> T:
        """``ask()``, told to ``recorder`` as the answer to ``(kind, arg)``; the questions
        asking it asks itself are not (a module's parse reads its text)."""
        self._asking += 1
        try:
            answer = ask()
        finally:
            self._asking -= 1
        if self.recorder is not None and not self._asking:
            self.recorder((kind, arg, answer))
        return answer

    def text(self, path: Path) -> str | None:
        if not self._scanning:
            self.read.add(path)
        return self._heard("text", path, lambda: Project.text(self, path))

    def files_containing(self, needle: str) -> list[Path]:
        scanning, self._scanning = self._scanning, True
        try:
            return self._heard("search", needle, lambda: Project.files_containing(self, needle))
        finally:
            self._scanning = scanning

    def module(self, name: str) -> ModuleInfo | None:
        return self._heard("module", name, lambda: Project.module(self, name))

    def is_parsed(self, name: str) -> bool:
        return self._heard("is_parsed", name, lambda: Project.is_parsed(self, name))

    def parsed(self) -> list[ModuleInfo]:
        return self._heard("parsed", None, lambda: Project.parsed(self))

    def records_reads(self) -> bool:
        return True

    def unchanged(self, mod: ModuleInfo) -> bool:
        kept = self._kept.get(mod.path)
        return kept is not None and kept[1] is mod

    def begin_run(self) -> None:
        self.read = set()
        for path in self._modules:
            kept = self._kept.get(path)
            if kept is not None and kept[2] is not None:
                self.diagnostics.pop(path, None)
        self._modules.clear()
        self._parsed = None

    def module_at(self, path: Path) -> ModuleInfo | None:
        return self._heard("module_at", path, lambda: self._module_at(path))

    def _module_at(self, path: Path) -> ModuleInfo | None:
        if path in self._modules:
            return self._modules[path]
        text = self.text(path)
        kept = self._kept.get(path)
        if text is not None and kept is not None and kept[0] is text:
            self._modules[path] = kept[1]
            self._parsed = None
            if kept[2] is not None:
                self.diagnostics[path] = kept[2]
            return kept[1]
        info = super().module_at(path)
        if text is not None:
            self._kept[path] = (text, info, self.diagnostics.get(path) if info is None else None)
        return info

    def set_text(self, path: Path, text: str | None) -> None:
        kept = self._kept.pop(path, None)
        if kept is not None and path in self.frozen:
            self.frozen.discard(path)
            self.frozen_garbage += len(kept[0])
        super().set_text(path, text)

    def mark_frozen(self) -> None:
        """The kept parses were just frozen (``gc.freeze``) with everything alive."""
        self.frozen = set(self._kept)
        self.frozen_garbage = 0

    def frozen_size(self) -> int:
        """The text size of every frozen parse, kept or replaced: what dropping this
        project leaves frozen."""
        kept = sum(len(self._kept[p][0]) for p in self.frozen if p in self._kept)
        return self.frozen_garbage + kept


class Nearest:
    """The configuration file that applies to each folder, as ``WorkspaceIndex.settings_for``
    finds it: the nearest one above it; None where there is none, or where it cannot be
    read (the defaults apply there)."""

    def __init__(self) -> None:
        self.resolver = Resolver()
        self.known: dict[Path, Path | None] = {}

    def listed(self, folder: str, entries: Sequence[os.DirEntry]) -> None:
        """What a walk found in ``folder`` (the configuration files it holds need not be
        looked for again)."""
        self.resolver.listed(folder, entries)

    def source(self, folder: Path) -> Path | None:
        if folder not in self.known:
            try:
                self.known[folder] = self.resolver.for_dir(folder).source
            except ConfigError:
                self.known[folder] = None
        return self.known[folder]


class Context:
    """One checked tree with its settings, indexed once and re-analysed on edits."""

    def __init__(
        self,
        root: Path,
        settings: Settings,
        overlays: dict[Path, str],
        *,
        alone: bool = False,
        log: Log | None = None,
    ) -> None:
        from zerolint.engine import Engine

        self.root = root
        self.settings = settings
        self.alone = alone  # a file outside the workspace: analysed by itself
        self.engine = Engine(settings)
        if alone:
            self.files = [root]
        else:
            nearest = Nearest()
            walked = discover(
                [root],
                settings.exclude,
                settings.root,
                respect_gitignore=settings.respect_gitignore,
                listed=nearest.listed,
            ).files
            # A folder below with a configuration of its own is another project, as in
            # `zerolint check`: its files are not this tree's, and no path crosses into it.
            found = [p for p in walked if nearest.source(p.parent) == settings.source]
            known = set(found)
            # Open buffers not on disk (new, or deleted while open) belong to the tree too.
            unsaved = [
                p
                for p in overlays
                if p not in known
                and root in p.parents
                and p.suffix in PY_SUFFIXES
                and not is_excluded(p, settings.exclude, settings.root)
                and nearest.source(p.parent) == settings.source
            ]
            self.files = sorted([*found, *unsaved]) if unsaved else found
        self.file_set = set(self.files)
        self.project = WarmProject(self.files, settings.namespace_roots())
        for path, text in overlays.items():
            if path in self.file_set:
                self.project.set_text(path, text)
        self.results: dict[Path, FileResult] = {}
        self.parsed: set[Path] = set()
        self.read: set[Path] = set()
        self.candidates: set[Path] = set()
        self.names: set[str] = set(settings.sink_names())
        self.analysed = False
        # The last run's analyzer: its summaries are replayed by the next (Engine.run);
        # and how many runs were made again without replaying (a tainted replay).
        self.analyzer: Analyzer | None = None
        self.runs_made_again = 0
        self.log = log

    def holds(self, path: Path) -> bool:
        return path in self.file_set

    def run(self) -> set[Path]:
        """Analyse the tree (warm: only what changed is read or parsed); the files whose
        results changed."""
        collecting = gc.isenabled()
        gc.disable()  # as in `zerolint check`: the collector would walk the LibCST trees
        self.project.begin_run()
        try:
            outcome = self.engine.run(
                self.files, project=self.project, record=True, replay_from=self.analyzer
            )
            if outcome.analyzer is not None and outcome.analyzer.tainted:
                # A replay may have changed what a making then found (Analyzer.tainted):
                # the run is made again, every summary made as a cold run makes it.
                self.runs_made_again += 1
                if self.log is not None:
                    self.log(
                        "info",
                        f"zerolint: {self.root}: analysed again without replaying summaries "
                        "(a replay changed what it had asked)",
                    )
                self.project.begin_run()
                outcome = self.engine.run(self.files, project=self.project, record=True)
        finally:
            if collecting:
                gc.enable()
        self.analyzer = outcome.analyzer
        self.parsed = set(outcome.parsed)
        self.read = set(self.project.read)
        self.candidates = set(outcome.candidates)
        self.names = set(outcome.names) or self.names
        self.apply_settings(outcome.report)
        fresh: dict[Path, FileResult] = {}
        for finding in outcome.report.findings:
            fresh.setdefault(absolute(finding.path), FileResult()).findings.append(finding)
        for diagnostic in outcome.report.diagnostics:
            fresh.setdefault(absolute(diagnostic.path), FileResult()).diagnostics.append(diagnostic)
        for path, result in fresh.items():
            result.text = self.project.text(path) if path in self.file_set else None
        changed = {
            p
            for p in set(fresh) | set(self.results)
            if p not in fresh or p not in self.results or fresh[p].key() != self.results[p].key()
        }
        self.results = fresh
        self.analysed = True
        return changed

    def apply_settings(self, report: Report) -> None:
        """Drop what the configuration does not report (per-file-ignores, unselected ZL9xx
        codes), as ``zerolint check`` does."""
        from zerolint.codes import OPT_IN
        from zerolint.config import matches

        def keep(code: str, path: str) -> bool:
            if not self.settings.enabled(code, opt_in=code in OPT_IN):
                return False
            return not matches(code, self.settings.ignored_in(path))

        report.findings = [f for f in report.findings if keep(f.code, f.path)]
        report.diagnostics = [d for d in report.diagnostics if keep(d.code, d.path)]

    def may_matter(self, path: Path, old: str | None, new: str | None) -> bool:
        """Whether an edit of ``path`` from ``old`` to ``new`` can change any result."""
        if not self.analysed or path in self.parsed or path in self.candidates:
            return True
        if path in self.read:  # the analysis looked at its text (a field written there?)
            return True
        needles = list(self.names) + self.project.scanned_for()
        return any(n in text for text in (old, new) if text for n in needles)

    def update(self, path: Path, text: str | None) -> set[Path]:
        """``path`` now holds ``text`` (None: what is on disk); re-analyse if it can matter.
        Returns the files whose results changed."""
        return self.update_many([(path, text)])

    def update_many(self, edits: Iterable[tuple[Path, str | None]]) -> set[Path]:
        """Each ``(path, text)`` as ``update`` takes it, then one analysis if any of them
        can matter (files changed on disk together, as a checkout changes them)."""
        changed: set[Path] = set()
        again = False
        for path, text in edits:
            old = self.project.text(path)
            if text is not None and text == old:
                continue  # opened or saved as it was: the results stand
            self.project.set_text(path, text)
            new = self.project.text(path)
            # No text: a diagnostic instead (a NUL byte, an undecodable file), reported
            # whatever the file mentions, as `zerolint check` reports it.
            if new is None or self.may_matter(path, old, new):
                again = True
            elif path in self.results:
                del self.results[path]
                changed.add(path)
        return changed | self.run() if again else changed

    def result(self, path: Path) -> FileResult:
        found = self.results.get(path)
        if found is None:
            return FileResult(text=self.project.text(path) if path in self.file_set else None)
        return found


class WorkspaceIndex:
    """Every context of a workspace, and the open buffers that override files on disk."""

    def __init__(self, folders: Iterable[Path], log: Log) -> None:
        self.folders = [Path(os.path.abspath(f)) for f in folders]
        self.log = log
        self.overlays: dict[Path, str] = {}
        self.contexts: dict[tuple[Path, Path | None], Context] = {}
        self.said: set[str] = set()  # configuration problems logged since the last reload
        # The text size of the frozen parses of contexts dropped since the last freeze.
        self.dropped_garbage = 0

    # ------------------------------------------------------------------ contexts

    def folder_of(self, path: Path) -> Path | None:
        inside = [f for f in self.folders if f == path or f in path.parents]
        return max(inside, key=lambda f: len(f.parts)) if inside else None

    def spelled(self, path: Path) -> Path:
        """``path`` under the workspace folder that holds it once links are resolved, as
        that folder spells it; as it is where a folder holds it as spelt, or none does."""
        if self.folder_of(path) is not None:
            return path
        real = Path(os.path.realpath(path))
        for folder in sorted(self.folders, key=lambda f: -len(f.parts)):
            resolved = Path(os.path.realpath(folder))
            if real == resolved or resolved in real.parents:
                return folder / real.relative_to(resolved)
        return path

    def settings_for(self, path: Path) -> Settings:
        try:
            source = find_pyproject([path.parent])
            return load_settings([path.parent], source) if source else Settings()
        except ConfigError as exc:
            said = f"zerolint: {exc}; using the default settings"
            if said not in self.said:  # once, not at every file and edit it applies to
                self.said.add(said)
                self.log("error", said)
            return Settings()

    def context_for(self, path: Path) -> Context | None:
        """The context that checks ``path`` (built and indexed on first use), or None when
        the configuration excludes it. A file outside every workspace folder is checked by
        itself; one new to its tree re-indexes the tree."""
        settings = self.settings_for(path)
        folder = self.folder_of(path)
        if folder is None:
            key = (path, None)
            if key not in self.contexts:
                self.log(
                    "warning",
                    f"zerolint: {path} is outside the workspace; checked by itself "
                    "(paths through other modules are not followed)",
                )
                self.contexts[key] = Context(
                    path, settings, self.overlays, alone=True, log=self.log
                )
            return self.contexts[key]
        root = folder
        if settings.root is not None and (
            settings.root == folder or folder in settings.root.parents
        ):
            root = settings.root
        if is_excluded(path, settings.exclude, settings.root):
            return None
        key = (root, settings.source)
        context = self.contexts.get(key)
        if context is not None and path in self.overlays and not context.holds(path):
            self.dropped(context)
            context = None  # a new buffer: module names and imports must see it
        if context is None:
            self.say_if_nothing_runs(settings, folder)
            context = Context(root, settings, self.overlays, log=self.log)
            self.contexts[key] = context
        return context

    def say_if_nothing_runs(self, settings: Settings, folder: Path) -> None:
        """Say (once, until the next reload) that the workspace folder's configuration, the
        one ``zerolint check`` run there reads, ignores every rule it selects: the command
        line refuses it, and every file would be shown clean. A folder below with such a
        configuration of its own (a vendored tree's ``ignore = ["ALL"]``) is left to it,
        as on the command line."""
        from zerolint.check import ignores_every_rule, runs_nothing

        source = settings.source
        if source is None or not settings.ignore:
            return
        if source.parent != folder and source.parent not in folder.parents:
            return  # another project's, below the folder
        said = f"zerolint: {ignores_every_rule(source)}; nothing is reported"
        if said not in self.said and runs_nothing(settings):
            self.said.add(said)
            self.log("warning", said)

    def warm(self) -> None:
        """Index every workspace folder now, so that the first file opened is answered from
        a warm index."""
        for folder in self.folders:
            context = self.context_for(folder / "__init__.py")
            if context is not None and not context.analysed:
                context.run()

    def frozen_garbage(self) -> int:
        """The text size (characters) of the frozen parses that edits replaced, or that
        went with a context dropped, since the last freeze."""
        return self.dropped_garbage + sum(c.project.frozen_garbage for c in self.contexts.values())

    def dropped(self, context: Context) -> None:
        """``context`` is dropped: its frozen parses are garbage the collector cannot free."""
        self.dropped_garbage += context.project.frozen_size()

    def mark_frozen(self) -> None:
        """Everything alive was just frozen: the kept parses of every context with it."""
        self.dropped_garbage = 0
        for context in self.contexts.values():
            context.project.mark_frozen()

    def reload(self) -> None:
        """Forget every context (the configuration changed): each is rebuilt on next use."""
        for context in self.contexts.values():
            self.dropped(context)
        self.contexts.clear()
        self.said.clear()  # a configuration still broken is said again

    def set_folders(self, folders: Iterable[Path]) -> None:
        """The workspace's folders changed: every context is rebuilt on next use (a file
        checked by itself, outside the folders, may now be in one)."""
        self.folders = [Path(os.path.abspath(f)) for f in folders]
        self.reload()

    def forget_tree(self, path: Path) -> None:
        """A file appeared or disappeared on disk: the trees holding it are rebuilt."""
        for key, context in list(self.contexts.items()):
            if context.holds(path) or (not context.alone and context.root in path.parents):
                self.dropped(context)
                del self.contexts[key]

    def folders_changed(self, changes: Iterable[tuple[Path, bool]]) -> bool:
        """Folders created (True) or deleted (False) on disk, a folder renamed being one of
        each: an editor sends one event for the folder, none for the files in it. The trees
        that held a file in a deleted folder, or lay in it, and those above a created folder
        that holds Python files, are rebuilt; whether any was. Any other path (a file that
        is not Python's, a folder no tree looks into) changes nothing."""
        names: dict[int, list[str]] = {}  # each tree's files, as sorted strings

        def holds_in(context: Context, folder: Path) -> bool:
            spelt = names.setdefault(id(context), sorted(map(str, context.files)))
            prefix = os.path.join(folder, "")
            at = bisect.bisect_left(spelt, prefix)
            return at < len(spelt) and spelt[at].startswith(prefix)

        dropped = False
        for folder, created in changes:
            if created and not holds_python(folder):
                continue
            for key, context in list(self.contexts.items()):
                if created:
                    gone = not context.alone and context.root in folder.parents
                else:
                    gone = (
                        context.root == folder
                        or folder in context.root.parents
                        or holds_in(context, folder)
                    )
                if gone:
                    self.dropped(context)
                    del self.contexts[key]
                    dropped = True
        return dropped

    # ------------------------------------------------------------------ edits

    def analyse(self, path: Path, text: str | None) -> tuple[Context | None, set[Path]]:
        """Record ``text`` as the buffer of ``path`` (None: closed, use the disk) and bring
        the results of its tree up to date: the context and the files whose results changed."""
        if text is None:
            self.overlays.pop(path, None)
        else:  # a BOM the client kept is not code, as it is not in a file read from disk
            text = self.overlays[path] = text.removeprefix("\ufeff")
        context = self.context_for(path)
        if context is None:
            return None, {path}
        if not context.holds(path):  # closed, and not on disk: nothing left to check
            return context, {path}
        if not context.analysed:
            context.project.set_text(path, text)
            return context, context.run() | {path}
        return context, context.update(path, text) | {path}

    def disk_changed(self, paths: Iterable[Path]) -> set[Path]:
        """Files changed on disk (not open in the editor): each tree holding some re-reads
        them and is analysed once."""
        paths = [p for p in paths if p not in self.overlays]
        changed: set[Path] = set()
        for context in list(self.contexts.values()):
            held = [(p, None) for p in paths if context.holds(p)]
            if held:
                changed |= context.update_many(held)
        return changed

    def contexts_holding(self, path: Path) -> list[Context]:
        return [c for c in self.contexts.values() if c.holds(path)]


def holds_python(folder: Path) -> bool:
    """Whether ``folder`` holds a Python file where a walk of the tree looks for them (not
    in a cache, a virtual environment, a VCS folder: ``discovery``'s ``SKIP_DIRS``)."""

    def skipped(path: str) -> bool:
        name = os.path.basename(path)
        return (
            name in SKIP_DIRS
            or name.endswith(".egg-info")
            or os.path.exists(os.path.join(path, "pyvenv.cfg"))
        )

    if not folder.is_dir() or skipped(str(folder)):
        return False
    for dirpath, dirnames, filenames in os.walk(folder):
        if any(name.endswith(PY_SUFFIXES) for name in filenames):
            return True
        dirnames[:] = [d for d in dirnames if not skipped(os.path.join(dirpath, d))]
    return False


def fix_edit(text: str, finding: Finding, settings: Settings) -> str | None:
    """The text after the rule's fix of ``finding`` (the edit `zerolint check --fix` makes),
    or None when the fix does not apply (already clamped, not a call) or does not compile."""
    from zerolint.fix import FixError, apply_fixes, targets_from_findings

    targets = targets_from_findings([finding], settings.sinks()).get(finding.path, [])
    try:
        fixed = apply_fixes(text, targets)
    except FixError:
        return None
    if not fixed.changed:
        return None
    try:
        compile(fixed.fixed, finding.path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    return fixed.fixed


def fix_all(text: str, findings: list[Finding], settings: Settings) -> str | None:
    """The text after fixing every finding of one file at once (``source.fixAll``)."""
    from zerolint.fix import FixError, apply_fixes, targets_from_findings

    targets = [t for ts in targets_from_findings(findings, settings.sinks()).values() for t in ts]
    try:
        fixed = apply_fixes(text, targets)
    except FixError:
        return None
    return fixed.fixed if fixed.changed else None


def suppression_edit(text: str, first: int, last: int, code: str) -> tuple[int, str, str] | None:
    """Where ``# noqa: CODE`` can go on the lines ``first`` to ``last`` (from 1: a finding's
    call, any of whose lines a comment suppresses it from): the line's index, and the line
    (without its line break) as it is and with the comment: added to a ``# noqa:``
    comment's list, or a comment of its own. Lines are
    numbered as ``zerolint.suppression`` reads them, from Python's tokens: a line that ends
    inside a string, or with a backslash, holds no comment. None where no line of the call
    can take one, or the text does not tokenize."""
    import io
    import tokenize

    from zerolint.suppression import NOQA, read_noqa, universal

    ends: set[int] = set()  # lines that end with a token of their own: a comment fits there
    comments: dict[int, tokenize.TokenInfo] = {}
    text = universal(text)  # lines as the editor and Python's parser count them
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.NEWLINE, tokenize.NL):
                ends.add(tok.start[0])
            elif tok.type == tokenize.COMMENT:
                comments[tok.start[0]] = tok
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    lines = text.split("\n")
    for number in range(first, max(first, last) + 1):
        if number not in ends or number > len(lines):
            continue
        body = lines[number - 1]
        comment = comments.get(number)
        m = NOQA.search(comment.string) if comment is not None else None
        if comment is not None and m is not None:
            read = read_noqa(comment.string[m.end() :])
            at = comment.start[1] + m.end() + read.end
            if read.valid and read.codes:  # a list of codes: the code joins it
                return number - 1, body, body[:at] + f", {code}" + body[at:]
            if not read.valid:
                # Invalid (it suppresses nothing): the directive, to the end of the word
                # where reading failed ("ZL-001", "ZL004:"), is written again with the codes
                # read before it and the code, since a second noqa after it would not count.
                start = comment.start[1] + m.start()
                end = at + len(re.match(r"[^\s#]*", body[at:])[0])
                codes = ", ".join(dict.fromkeys([*(read.codes or ()), code]))
                return number - 1, body, body[:start] + f"# noqa: {codes}" + body[end:]
        return number - 1, body, body.rstrip() + f"  # noqa: {code}"
    return None

"""The ``--fix`` codemod: clamp the lengths a sink receives, at the sink.

Each finding's argument is wrapped in its rule's ``fix`` template (``{arg}`` stands for the
argument): for ZL001, ``get_paged_mqa_logits_metadata(seq_lens, ...)`` becomes
``get_paged_mqa_logits_metadata(torch.clamp(seq_lens, min=1), ...)``, the fix the seed
report suggests (docs/hazards/ZL001.md). Only the scheduler input is clamped; the schedule
is a work-distribution hint and the logits kernel keeps reading the true lengths. A
template's module (``torch``, or any other) is resolved at the call: an alias or a
``from torch import clamp`` is used, and an ``import`` is added when nothing binds it.

The rewrite is a LibCST transform, so comments and formatting survive; it changes the one
argument, plus one ``import torch`` line when the module has no usable torch name. An
argument that is already clamped to at least 1 is left alone, so a second run changes
nothing.
"""

from __future__ import annotations

import difflib
import io
import os
import sys
import tokenize
import warnings
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import libcst as cst
from libcst.helpers import get_full_name_for_node

from zerolint.atomic import rewrite_keeping_identity
from zerolint.fix_scopes import MODULE, Binding, ModuleFacts, Scope, ident, running
from zerolint.model import Finding
from zerolint.positions import PositionIndex
from zerolint.rules import Rule, SinkSpec, load_rules

# Calls that already keep every length >= their bound: torch.clamp(x, min=1), x.clamp(1) ...
_CLAMP_NAMES = frozenset({"clamp", "clamp_", "clamp_min", "clamp_min_", "clip", "clip_"})
# Of those, the out-of-place functions that ``from torch import ...`` may give us to call.
_CLAMP_FUNCTIONS = frozenset({"clamp", "clip"})
_TORCH = "torch"
CLAMP_TEMPLATE = "torch.clamp({arg}, min=1)"
"""The codemod's own clamp, which it also recognizes as already applied in any spelling."""
_ARG = "__zerolint_fix_argument__"


@dataclass(frozen=True, slots=True)
class FixTarget:
    """One sink call to fix and the argument that carries the lengths.

    ``line``/``col`` are where the call expression starts, as LibCST's PositionProvider
    reports it (line 1-based, column 0-based, in characters). ``argument`` is a
    positional index (0 for ``get_paged_mqa_logits_metadata``) or a parameter name
    (``"context_lens"``); for a name, ``position`` says where that parameter sits, for
    calls that pass it positionally. ``end_line``/``end_col`` (exclusive, 0 when unknown)
    pick between calls that start at the same place, such as ``make()(lens)``. ``sink``,
    when given, is the function the call must name (directly, or through a name bound to
    it), else it is not fixed. ``sink_line``, when given, is the line of the statement in
    which the paths reach the sink (their last step): the call must be in it, not a call
    of a wrapper whose sink is elsewhere in the file; ``sink_elsewhere`` names the file in
    which the paths reach it when that is another (then the call is a wrapper's: no fix).
    """

    line: int
    col: int
    argument: int | str
    end_line: int = 0
    end_col: int = 0
    position: int | None = None
    template: str = CLAMP_TEMPLATE
    """The rule's ``fix``: an expression in which ``{arg}`` is the argument."""
    sink: str | None = None
    sink_line: int = 0
    sink_elsewhere: str = ""
    # Sinks of this name take the argument at different positions (``extra-sinks`` of
    # several modules): ``position`` is None, and only a keyword names it.
    positions_differ: bool = False


@dataclass(frozen=True, slots=True)
class SourceFix:
    """What ``apply_fixes`` did to one source text."""

    source: str
    fixed: str
    applied: tuple[FixTarget, ...] = ()
    # Targets left as they were, each with the reason ("already clamped", "no call at ...").
    skipped: tuple[tuple[FixTarget, str], ...] = ()
    # The fixed tree and the calls edited in it, for ``fixed_calls``.
    tree: cst.Module | None = field(default=None, compare=False, repr=False)
    edited: tuple[cst.Call, ...] = field(default=(), compare=False, repr=False)
    # Each skipped target's call as it is in the fixed tree (None: no call found), for
    # ``skipped_now``.
    left: tuple[cst.Call | None, ...] = field(default=(), compare=False, repr=False)
    # The fixed tree's facts once worked out (``_facts``): one entry at most.
    _where: list[ModuleFacts] = field(default_factory=list, compare=False, repr=False)

    @property
    def changed(self) -> bool:
        return self.fixed != self.source

    def skipped_now(self) -> tuple[tuple[FixTarget, str], ...]:
        """``skipped``, each target where its call is in ``fixed`` (an import added above
        moves it down, a clamp before it on its line to the right)."""
        if self.tree is None or not any(c is not None for c in self.left):
            return self.skipped
        facts = self._facts()
        out = []
        for (target, why), call in zip(self.skipped, self.left):
            start = None if call is None else facts.call_start(call)
            if start is not None:
                target = replace(target, line=start[0], col=start[1])
            out.append((target, why))
        return tuple(out)

    def fixed_calls(self) -> tuple[tuple[int, int], ...]:
        """Where each call edited starts in ``fixed`` (line, 0-based column, as a
        target's): a re-check's finding there was not fixed. Worked out when asked (only
        ``fix_file``'s check does), which the language server's code actions need not
        pay."""
        if self.tree is None or not self.edited:
            return ()
        facts = self._facts()
        return tuple(facts.call_start(c, exact=True) or (0, 0) for c in self.edited)

    def _facts(self) -> ModuleFacts:
        """The fixed tree's facts, worked out once for ``fixed_calls`` and ``skipped_now``
        (``fix_file`` asks both)."""
        assert self.tree is not None
        if not self._where:
            self._where.append(ModuleFacts(self.tree, self.fixed))
        return self._where[0]


@dataclass(frozen=True, slots=True)
class FixResult:
    """What ``fix_file`` did to one file."""

    path: Path
    changed: bool
    written: bool
    diff: str
    applied: tuple[FixTarget, ...] = ()
    skipped: tuple[tuple[FixTarget, str], ...] = ()
    # The file's encoding, which ``diff`` is to be written in to apply to its bytes (a BOM,
    # where the file has one, is in ``diff``'s text).
    encoding: str = "utf-8"


class FixError(Exception):
    """A file that could not be fixed; ``str()`` is one line naming the file and why."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        super().__init__(f"{os.fspath(path)}: {reason}")
        self.path = os.fspath(path)
        self.reason = reason


def targets_from_findings(
    findings: Iterable[Finding],
    sinks: Iterable[SinkSpec] | None = None,
    rules: Iterable[Rule] | None = None,
) -> dict[str, list[FixTarget]]:
    """Group the findings' sink calls by file, as fix targets.

    A finding's columns are 1-based, as users and SARIF see them (``end_col`` one past the
    call's last character); a target's are LibCST's 0-based ones. A finding that names
    its argument by keyword gets the position of that parameter from ``sinks`` (default:
    the shipped rules' sinks; pass the run's, with any ``extra-sinks``).
    """
    specs = list(sinks) if sinks is not None else [s for r in load_rules() for s in r.sinks]
    templates = {r.code: r.fix for r in (load_rules() if rules is None else rules) if r.fix}
    by_path: dict[str, list[FixTarget]] = defaultdict(list)
    for finding in findings:
        template = templates.get(finding.code)
        if template is None:
            continue  # a rule without a fix template: nothing to write
        name = finding.argument
        argument: int | str = int(name) if name.isdigit() else name
        # Sinks of one name in several modules may take the argument at other positions
        # (`extra-sinks`): then only a call that names it by keyword can be fixed.
        positions = {s.position for s in specs if s.function == finding.sink and s.keyword == name}
        differ = len(positions) > 1
        position = positions.pop() if len(positions) == 1 else None
        end_col = max(finding.end_col - 1, 0) if finding.end_line else 0
        sink_line, elsewhere = 0, ""
        last = finding.flows[0].steps[-1] if finding.flows and finding.flows[0].steps else None
        if last is not None and last.role == "sink":
            if last.path == finding.path:
                sink_line = last.line
            else:
                elsewhere = last.path
        by_path[finding.path].append(
            FixTarget(
                finding.line,
                finding.col - 1,
                argument,
                finding.end_line,
                end_col,
                position,
                template=template,
                sink=finding.sink or None,
                sink_line=sink_line,
                sink_elsewhere=elsewhere,
                positions_differ=differ,
            )
        )
    return dict(by_path)


def fixable_targets(
    module: cst.Module,
    source: str,
    targets: Sequence[FixTarget],
    index: PositionIndex | None = None,
) -> list[FixTarget]:
    """The targets ``--fix`` would clamp in ``source``, planned on ``module``: LibCST's
    tree of it or ``cst_build``'s (the analysis's, whose ``index`` says where its
    statements are), with the same answer. Nothing is edited or checked again: as a plan,
    it is what ``[*]`` and ``"fixable"`` promise."""
    return _Planner(ModuleFacts(module, source, index), module).plan(targets).applied


def carry_over(source: str, rendered: str, fixed: str) -> str:
    """The edit from ``rendered`` (LibCST's text of ``source``'s tree) to ``fixed`` (its
    text of the edited tree), made in ``source``: its lines LibCST writes otherwise stay
    as they are, and a line edited keeps the line break ``source`` ends it with (LibCST
    drops a lone carriage return ending the file). ``FixError`` where the edit changes a
    line LibCST writes otherwise."""
    src = source.splitlines(keepends=True)
    base = rendered.splitlines(keepends=True)
    new = fixed.splitlines(keepends=True)
    same: dict[int, int] = {}  # a line of ``rendered`` -> the same line of ``source``
    matcher = difflib.SequenceMatcher(None, _bodies(base), _bodies(src), autojunk=False)
    for i, j, size in matcher.get_matching_blocks():
        same.update((i + k, j + k) for k in range(size))
    out: list[str] = []
    done = 0  # the lines of ``source`` already out
    edits = difflib.SequenceMatcher(None, base, new, autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in edits:
        if tag == "equal":
            continue
        chunk = new[j1:j2]
        if i1 < i2:  # lines replaced or deleted: each must be in ``source`` as it is
            start = same.get(i1, -1)
            if any(same.get(i) != start + (i - i1) for i in range(i1, i2)):
                raise FixError("<source>", _REWRITTEN)
            end = start + (i2 - i1)
            theirs, ours = _ending(base[i2 - 1]), _ending(src[end - 1])
            if chunk and theirs != ours and _ending(chunk[-1]) == theirs:
                chunk[-1] = chunk[-1][: len(chunk[-1]) - len(theirs)] + ours
        elif i1 in same:  # lines inserted: before a line that is there as it is
            start = end = same[i1]
        elif i1 - 1 in same or i1 == 0:  # or after one (or at the start)
            start = end = same[i1 - 1] + 1 if i1 else 0
        else:
            raise FixError("<source>", _REWRITTEN)
        if start < done:
            raise FixError("<source>", _REWRITTEN)
        out += src[done:start]
        out += chunk
        done = end
    out += src[done:]
    return "".join(out)


def _ending(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :]


def _bodies(lines: list[str]) -> list[str]:
    return [line.rstrip("\r\n") for line in lines]


_REWRITTEN = "LibCST writes the lines the fix changes otherwise than the file has them"


def fix_source(source: str, targets: Sequence[FixTarget]) -> str:
    """Return ``source`` with every target's lengths argument clamped to at least 1."""
    return apply_fixes(source, targets).fixed


def apply_fixes(source: str, targets: Sequence[FixTarget]) -> SourceFix:
    """Like ``fix_source``, also saying which targets were applied or skipped and why.

    Raises ``FixError`` (path ``<source>``) when the source does not parse.
    """
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        raise FixError("<source>", f"cannot parse: {exc.message} (line {exc.raw_line})") from exc
    plan = _Planner(ModuleFacts(module, source), module).plan(targets)
    if not plan.edits:
        return SourceFix(source, source, (), tuple(plan.skipped), left=tuple(plan.left))
    clamp, fixed_module, fixed = _edited(module, plan, plan.edits)
    rendered = module.code
    if rendered != source:
        # LibCST writes some lines otherwise than it read them (a form feed before a
        # statement, `except A :`, an indented comment ending the file): an edit must
        # change nothing else, so the lines it changed go into the file's own text.
        try:
            fixed = carry_over(source, rendered, fixed)
        except FixError:
            # An edit of a line LibCST writes otherwise cannot be: leave out those edits
            # alone, each skipped where its call is, not the file's every fix.
            lone = [c for c in plan.edits if not _carried(module, source, rendered, plan, c)]
            if not lone:
                raise
            plan.drop(lone, _REWRITTEN)
            if not plan.edits:
                return SourceFix(source, source, (), tuple(plan.skipped), left=tuple(plan.left))
            clamp, fixed_module, fixed = _edited(module, plan, plan.edits)
            fixed = carry_over(source, rendered, fixed)
    return SourceFix(
        source,
        fixed,
        tuple(plan.applied),
        tuple(plan.skipped),
        fixed_module,
        tuple(clamp.made),
        tuple(None if c is None else clamp.now.get(c) for c in plan.left),
    )


def _edited(
    module: cst.Module, plan: _Plan, edits: dict[cst.Call, list[_Edit]]
) -> tuple[_ClampArguments, cst.Module, str]:
    """``module`` with ``edits`` made and the imports they need added, and its text."""
    clamp = _ClampArguments(edits, [c for c in plan.left if c is not None])
    fixed_module = module.visit(clamp)
    needed = {m for c in edits for m in plan.imported_by.get(c, ())}
    for name in sorted(needed):
        fixed_module = insert_import(fixed_module, name, before=clamp.made)
    return clamp, fixed_module, fixed_module.code


def _carried(module: cst.Module, source: str, rendered: str, plan: _Plan, call: cst.Call) -> bool:
    """Whether the edit of ``call`` alone can be made in ``source``'s own text."""
    try:
        carry_over(source, rendered, _edited(module, plan, {call: plan.edits[call]})[2])
    except FixError:
        return False
    return True


def fix_file(
    path: str | os.PathLike[str],
    targets: Sequence[FixTarget],
    *,
    diff_only: bool = False,
    verify: Callable[[str], bool | int | set[tuple[int, int]]] | None = None,
    expected_digest: str | None = None,
) -> FixResult:
    """Fix ``targets`` in the file at ``path``; write it back unless ``diff_only``.

    The fixed text must compile and, when ``verify`` is given, pass
    ``verify(fixed_text)`` (the analyzer re-checking it): True; or the number of
    findings left in it, which must not exceed the targets that were skipped (those stay
    as they were); or where the findings left start (line, 0-based column), none of
    which may be a call the fix edited (``SourceFix.fixed_calls``; findings elsewhere,
    which the run did not report or ask to fix, may stay). Otherwise ``FixError`` is
    raised and the file is not touched. When ``expected_digest`` is given
    (``zerolint.cache.content_digest`` of the bytes the targets were found in), a file
    whose bytes differ is not touched either: its positions may now name other code. A
    file without write permission, or read-only for everyone, is not rewritten. The
    write keeps the file's owner, group, mode, hard links, encoding and line endings,
    and is atomic unless the file has other links (see
    ``zerolint.atomic.rewrite_keeping_identity``). ``diff`` is a unified diff (empty
    when nothing changed).
    """
    from zerolint.cache import content_digest, read_regular

    path = Path(path)
    raw, _ = read_regular(path)
    if expected_digest is not None and content_digest(raw) != expected_digest:
        raise FixError(path, CHANGED)
    encoding = _source_encoding(raw, path)
    source = raw.decode(encoding)
    try:
        outcome = apply_fixes(source, targets)
    except FixError as exc:
        raise FixError(path, exc.reason) from exc
    if not outcome.changed:
        return FixResult(path, False, False, "", outcome.applied, outcome.skipped)
    _require_compiles(outcome.fixed, path)
    if verify is not None:
        verdict = verify(outcome.fixed)
        if isinstance(verdict, set):
            unfixed = bool(verdict & set(outcome.fixed_calls()))
        elif isinstance(verdict, bool):
            unfixed = not verdict
        else:
            unfixed = verdict > len(outcome.skipped)
        if unfixed:
            raise FixError(path, "the fixed source still has findings; file left unchanged")
    skipped = outcome.skipped
    if not diff_only:
        _require_writable(path)
        if read_regular(path)[0] != raw:  # saved again while the fix was being checked
            raise FixError(path, CHANGED)
        rewrite_keeping_identity(path, outcome.fixed.encode(encoding))
        skipped = outcome.skipped_now()  # what was left, shown where it is now
    diff, written = encoded_diff(source, outcome.fixed, str(path), encoding)
    return FixResult(path, True, not diff_only, diff, outcome.applied, skipped, written)


def encoded_diff(before: str, after: str, name: str, encoding: str) -> tuple[str, str]:
    """``unified_diff`` of a source decoded as ``encoding`` (``tokenize.detect_encoding``'s
    answer), and the encoding to write the diff in to apply to the source's bytes: a BOM,
    which decoding took off the first line, goes back into the diff's text, in UTF-8."""
    bom = "\ufeff" if encoding == "utf-8-sig" else ""
    return unified_diff(bom + before, bom + after, name), "utf-8" if bom else encoding


CHANGED = "changed since it was checked; file left unchanged (run zerolint again)"


def _require_writable(path: Path) -> None:
    # An atomic replace needs only the folder's permission: ask about the file itself.
    # Root may write anything, so a file read-only for everyone is refused as well.
    if not os.access(path, os.W_OK) or not path.stat().st_mode & 0o222:
        raise FixError(path, "no permission to write the file; file left unchanged")


def unified_diff(before: str, after: str, name: str) -> str:
    """A ``diff -u`` style patch from ``before`` to ``after``, both labelled ``name``."""
    lines = difflib.unified_diff(
        _patch_lines(before), _patch_lines(after), fromfile=name, tofile=name
    )
    # A last line without a newline would run into the next hunk line.
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def _patch_lines(text: str) -> list[str]:
    r"""``text``'s lines as ``patch`` counts them: ended by ``\n`` alone (a ``\r\n`` line
    keeps its ``\r``), not by the form feeds and other separators ``str.splitlines``
    also breaks at."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]


def insert_import_torch(module: cst.Module) -> cst.Module:
    """Add ``import torch`` where an isort-style layout would put it (``insert_import``)."""
    return insert_import(module, _TORCH)


def insert_import(
    module: cst.Module, name: str, before: Collection[cst.CSTNode] = ()
) -> cst.Module:
    """Add ``import name`` where an isort-style layout would put it.

    Among the module's leading imports (after the docstring and ``__future__`` imports),
    in sorted position among the imports outside the standard library (plain imports
    before ``from`` imports, third- and first-party alike, since which is which depends on
    the project); where that is the start of a group, at the end of the group before it
    if that one is also outside the standard library. With only standard-library imports
    it becomes a group after them; with no imports, it goes after the docstring or first.
    The leading imports run on past the module's other one-line statements
    (``os.environ["X"] = "1"``, ``sys.path.insert(...)``, often written to be run
    before a library is imported) up to its first ``def``, class or other block, or the
    first statement that holds one of the nodes ``before`` (the calls that use the name).
    """
    body = list(module.body)
    start = 1 if body and _is_docstring(body[0]) else 0
    block = _leading_import_indexes(body, start, before)
    others = [i for i in block if _import_section(body[i]) == "other"]
    alias = cst.ImportAlias(cst.parse_expression(name))  # type: ignore[arg-type]
    new_line = cst.SimpleStatementLine([cst.Import([alias])])
    if others:
        index, new_line = _place_among_others(body, others, new_line, name)
    elif block:
        index = block[-1] + 1
        new_line = new_line.with_changes(leading_lines=[cst.EmptyLine()])
    elif start:
        index = start
        new_line = new_line.with_changes(leading_lines=[cst.EmptyLine()])
    else:
        index = 0
        if body and not _starts_with_blank(body[0]):
            body[0] = body[0].with_changes(leading_lines=[cst.EmptyLine(), *body[0].leading_lines])
    body.insert(index, new_line)
    return module.with_changes(body=body)


# --- finding the calls and deciding each edit ------------------------------------------


@dataclass(frozen=True, slots=True)
class _Edit:
    index: int  # into the call's ``args``
    callee: str  # "torch.clamp", "t.clamp" or a name bound by ``from torch import clamp``
    template: cst.Call  # the rule's fix, its argument a placeholder name


@dataclass(slots=True)
class _Plan:
    edits: dict[cst.Call, list[_Edit]] = field(default_factory=lambda: defaultdict(list))
    applied: list[FixTarget] = field(default_factory=list)
    skipped: list[tuple[FixTarget, str]] = field(default_factory=list)
    left: list[cst.Call | None] = field(default_factory=list)  # each skipped one's call
    imports: set[str] = field(default_factory=set)
    calls: list[cst.Call] = field(default_factory=list)  # each applied one's call
    imported_by: dict[cst.Call, set[str]] = field(default_factory=dict)

    def drop(self, dropped: Collection[cst.Call], why: str) -> None:
        """Leave the edits of ``dropped`` out: their targets skipped with ``why``, and
        only the imports the edits kept need."""
        kept = [(t, c) for t, c in zip(self.applied, self.calls, strict=True) if c not in dropped]
        for target, call in zip(self.applied, self.calls, strict=True):
            if call in dropped:
                self.skipped.append((target, why))
                self.left.append(call)
        self.applied, self.calls = [t for t, _ in kept], [c for _, c in kept]
        self.edits = {c: e for c, e in self.edits.items() if c not in dropped}
        self.imports = {m for c in self.edits for m in self.imported_by.get(c, ())}


class _Unfixable(Exception):
    """Why one target cannot be fixed; it is skipped with this reason."""


class _Planner:
    def __init__(self, facts: ModuleFacts, module: cst.Module) -> None:
        self._facts = facts
        self._module = module
        self._parents = facts.parents
        self._scopes = facts.scopes
        # The names torch imports bind anywhere in the module: ``import torch [as t]``,
        # ``import torch.x``; and ``from torch import clamp [as c]`` (bound -> imported).
        self._torch_modules: set[str] = set()
        self._torch_clamps: dict[str, str] = {}
        for node in facts.imports:
            if isinstance(node, cst.Import):
                for alias in node.names:
                    bound = _bound_name(alias)
                    if bound is not None and _alias_binds(alias, bound, _TORCH):
                        self._torch_modules.add(bound)
            elif not (
                node.relative
                or node.module is None
                or isinstance(node.names, cst.ImportStar)
                or _full_name(node.module) != _TORCH
            ):
                for alias in node.names:
                    bound = _bound_name(alias)
                    imported = _full_name(alias.name)
                    if bound is not None and imported in _CLAMP_NAMES:
                        self._torch_clamps[bound] = imported

    def plan(self, targets: Sequence[FixTarget]) -> _Plan:
        plan = _Plan()
        for target in targets:
            call: cst.Call | None = None
            try:
                template, head = _parse_template(target.template)
                call = self._call_for(target)
                self._require_the_sink(call, target)
                index = _argument_index(call, target)
                if head == f"{_TORCH}.clamp":
                    if self._is_clamped(call.args[index].value):
                        raise _Unfixable("already clamped")
                    callee, needs_import = self._clamp_callee(call)
                    module = _TORCH
                else:
                    if _calls(call.args[index].value, head):
                        raise _Unfixable(f"already wrapped in {head}()")
                    callee, needs_import = head, self._needs_import(call, head)
                    module = head.partition(".")[0]
            except _Unfixable as why:
                plan.skipped.append((target, str(why)))
                plan.left.append(call)
                continue
            same = [edit for edit in plan.edits[call] if edit.index == index]
            if same:
                # Two findings on one argument (two rules, or a file named twice): the
                # one edit fixes both where their fixes are the same.
                if same[0].template.deep_equals(template):
                    plan.applied.append(target)
                    plan.calls.append(call)
                else:
                    plan.skipped.append((target, "another rule's fix already wraps it"))
                    plan.left.append(call)
                continue
            edit = _Edit(index, callee, template)
            plan.edits[call].append(edit)
            plan.applied.append(target)
            plan.calls.append(call)
            if needs_import:
                plan.imports.add(module)
                plan.imported_by.setdefault(call, set()).add(module)
        plan.edits = {call: edits for call, edits in plan.edits.items() if edits}
        return plan

    def _call_for(self, target: FixTarget) -> cst.Call:
        found = self._facts.calls_at(target.line, target.col)
        if not found:  # the position as the finding shows it (its column from 1)
            raise _Unfixable(f"no call starts at {target.line}:{target.col + 1}")
        # Calls are listed outermost first: ``make()(lens)`` starts where ``make()`` does.
        call = found[0][0]
        if target.end_line:
            for candidate, where in found:
                if where[2:] == (target.end_line, target.end_col):
                    call = candidate
                    break
        return call

    def _require_the_sink(self, call: cst.Call, target: FixTarget) -> None:
        """Raise ``_Unfixable`` unless ``call`` is the sink's (not a wrapper's)."""
        # Where the call is, the diagnostic says (after a fix that moved it, where it is
        # now): the reasons name no position.
        shown = self._module.code_for_node(call.func)
        if target.sink and not self._names(call, target.sink):
            raise _Unfixable(f"this call is `{shown}`, not the sink")
        # A call of a wrapper: the paths go on into it and reach the sink there, whose
        # arguments are not this call's.
        if target.sink_elsewhere or (
            target.sink_line and not self._in_statement(call, target.sink_line)
        ):
            where = f" (in {target.sink_elsewhere})" if target.sink_elsewhere else ""
            raise _Unfixable(
                f"this call is `{shown}`, which reaches the sink inside it{where}; "
                "clamp the lengths there"
            )

    def _in_statement(self, node: cst.CSTNode, line: int) -> bool:
        """Whether ``line`` is a line of the statement ``node`` is in: where a path's step
        at it is (its first line, or the element's in a comprehension; a decorator's line
        for a call in a def's or a class's decorator)."""
        found = self._facts.statement_of(node)
        where = None if found is None else self._facts.statement_lines(found)
        if where is None:
            return True  # no statement to tell by: the re-check decides
        return where[0] <= line <= where[2]

    def _names(self, call: cst.Call, sink: str) -> bool:
        """Whether ``call`` calls ``sink``: by its name, or through a name whose binding
        (an import alias, an assignment) mentions it. A computed callee (``make()(x)``)
        cannot be told apart and is taken as the analyser found it."""
        wanted = sink.rsplit(".", 1)[-1]
        func = call.func
        if isinstance(func, cst.Attribute):
            return ident(func.attr.value) == wanted
        if not isinstance(func, cst.Name):
            return True
        if ident(func.value) == wanted:
            return True
        scope = self._scopes.get(call)
        if scope is None:
            return False
        for assignment in scope[func.value]:
            node = getattr(assignment, "node", None)
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                continue  # a wrapper of the sink: its arguments are its own, not the sink's
            statement = None if node is None else self._facts.statement_of(node)
            if statement is not None and wanted in self._facts.statement_text(statement):
                return True
        return False

    def _is_clamped(self, value: cst.BaseExpression) -> bool:
        if not isinstance(value, cst.Call):
            return False
        func = value.func
        if isinstance(func, cst.Name):
            is_function = ident(func.value) in self._torch_clamps
            return is_function and _min_at_least_one(value.args, 1)
        if not isinstance(func, cst.Attribute) or ident(func.attr.value) not in _CLAMP_NAMES:
            return False
        owner = func.value
        if isinstance(owner, cst.Name) and ident(owner.value) in self._torch_modules | {_TORCH}:
            return _min_at_least_one(value.args, 1)  # torch.clamp(x, min=1)
        return _min_at_least_one(value.args, 0)  # x.clamp(min=1)

    def _needs_import(self, call: cst.Call, head: str) -> bool:
        """Whether the template's module must be imported for the call to see it: as for
        ``torch`` (``_clamp_callee``), its name must be bound at the call to that module
        alone, on every path, else it is imported at the top (or the fix refused). A
        template that calls a method of the argument (``{arg}.clamp(min=1)``) needs none."""
        scope = self._scopes.get(call)
        if scope is None:
            raise _Unfixable("no scope information for the call")
        module, dot, _ = head.partition(".")
        if module == _ARG:
            return False
        if not dot:
            if not scope[module]:
                raise _Unfixable(f"`{module}` is not defined at the call")
            return False
        return self._module_at(scope, module, call)

    def _module_at(self, scope: Scope, module: str, call: cst.Call) -> bool:
        """Whether ``module`` must be imported for ``call`` to use it; raises
        ``_Unfixable`` where its name is (or may be) something else there."""

        def imports(binding: Binding, name: str, *, runtime: bool = True) -> bool:
            if module == _TORCH:  # the module itself, not whatever is imported as `torch`
                return self._is_module_import(binding, name, module, runtime=runtime)
            # A rule's own template names what the project imports (`import torch as th`
            # for `th.clamp`): any import of the name, at run time.
            return binding.is_import and not (runtime and self._typing_only(binding.node))

        if self._bound_at(scope, module, imports, call):
            return False
        visible, later = self._visible(scope, module, call)
        if later and running(scope).kind != MODULE:
            # Bound in the call's function only after it: a local name, unbound at the call
            # (UnboundLocalError), whatever the module imports.
            raise _Unfixable(f"`{module}` is bound in this function only after the call")
        if not all(imports(a, module, runtime=False) for a in visible):
            raise _Unfixable(f"`{module}` names something else at the call")
        if any(a.scope.kind != MODULE for a in visible):
            # A local name (of this function or one around it) bound on some paths only
            # (`if x: import torch`): a module's import would not reach the call.
            raise _Unfixable(f"`{module}` may be unbound at the call")
        # Unbound, or bound only by typing-time imports, after the call at the module's top
        # level, or on some paths (under an `if`, in another function under `global`): a
        # module-level import at the top serves.
        return True

    def _clamp_callee(self, call: cst.Call) -> tuple[str, bool]:
        """The text to call for the clamp at this call site, and whether to import torch."""
        scope = self._scopes.get(call)
        if scope is None:
            raise _Unfixable("no scope information for the call")
        for name in sorted(self._torch_modules, key=lambda n: (n != _TORCH, n)):
            if self._bound_at(scope, name, self._is_torch_module_import, call):
                return f"{name}.clamp", False
        for name, imported in sorted(self._torch_clamps.items()):
            if imported in _CLAMP_FUNCTIONS and self._bound_at(
                scope, name, self._is_torch_clamp_import, call
            ):
                return name, False
        return f"{_TORCH}.clamp", self._module_at(scope, _TORCH, call)

    def _bound_at(
        self,
        scope: Scope,
        name: str,
        is_import: Callable[[Binding, str], bool],
        call: cst.Call,
    ) -> bool:
        """Whether ``name`` is bound where ``call`` runs, and every binding of it visible
        there passes ``is_import``."""
        assignments, _ = self._visible(scope, name, call)  # none where bound only later
        return (
            bool(assignments)
            and all(is_import(a, name) for a in assignments)
            and any(self._certain(a, call) for a in assignments)
        )

    def _certain(self, binding: Binding, call: cst.Call) -> bool:
        """Whether ``binding`` has been made whenever ``call`` runs: a parameter; a
        statement before the call in a block around it (or on its line, before it:
        ``import torch; f(x)``); or, for a call in a function defined after it or a name of
        the module or of a function around the call's, a statement of its own scope's
        body, not inside an ``if``, a loop, a ``try`` or a ``with`` (and not an import
        under ``global`` in some other function)."""
        node = binding.node
        if node is None or isinstance(node, cst.Param):
            return True
        small = self._facts.statement_of(node)
        line = self._parents.get(small) if isinstance(small, cst.BaseSmallStatement) else small
        block = self._parents.get(line) if line is not None else None
        if small is None or line is None or block is None:
            return False
        current: cst.CSTNode | None = call
        while current is not None:
            parent = self._parents.get(current)
            if parent is line and line is not small:
                order = [id(s) for s in getattr(line, "body", ())]
                return order.index(id(small)) < order.index(id(current))
            if parent is block:
                if isinstance(current, cst.FunctionDef):
                    break  # the call runs when the function is called: after the block
                return self._facts.rank[line] < self._facts.rank[current]
            current = parent
        owner = binding.scope.node
        if isinstance(owner, cst.Module):
            return block is owner
        return isinstance(owner, cst.FunctionDef) and block is owner.body

    def _visible(self, scope: Scope, name: str, call: cst.Call) -> tuple[list[Binding], bool]:
        """The bindings of ``name`` that ``call`` can see, and whether the scope the call
        runs in binds it only after the call (then none of them is bound when it runs)."""
        found = scope[name]
        runs_in = running(scope)
        own = [a for a in found if a.scope is scope or a.scope is runs_in]
        # Own bindings are an import statement, a parameter, a ``def`` or an assigned
        # name: none starts where the call does, so source order tells which comes first.
        at = self._facts.rank[call]
        if own and all(self._facts.order(a) > at for a in own):
            return [], True
        return found, False

    def _is_torch_module_import(
        self, assignment: Binding, name: str, *, runtime: bool = True
    ) -> bool:
        return self._is_module_import(assignment, name, _TORCH, runtime=runtime)

    def _is_module_import(
        self, assignment: Binding, name: str, module: str, *, runtime: bool = True
    ) -> bool:
        """Whether ``assignment`` binds ``name`` to ``module`` (``import torch [as t]``,
        ``import torch.cuda``), at run time (not under ``if TYPE_CHECKING:``) if asked."""
        if not assignment.is_import:
            return False
        node = assignment.node
        if not isinstance(node, cst.Import) or (runtime and self._typing_only(node)):
            return False
        return any(
            _bound_name(alias) == name and _alias_binds(alias, name, module) for alias in node.names
        )

    def _is_torch_clamp_import(self, assignment: Binding, name: str) -> bool:
        if not assignment.is_import:
            return False
        node = assignment.node
        if not isinstance(node, cst.ImportFrom) or self._typing_only(node) or node.relative:
            return False
        if node.module is None or _full_name(node.module) != _TORCH:
            return False
        return isinstance(node.names, Sequence) and any(
            _bound_name(alias) == name and _full_name(alias.name) in _CLAMP_FUNCTIONS
            for alias in node.names
        )

    def _typing_only(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` sits under ``if TYPE_CHECKING:`` (bound for type checkers only)."""
        current: cst.CSTNode | None = self._parents.get(node)
        while current is not None:
            if isinstance(current, cst.If):
                test = _full_name(current.test)
                if test is not None and test.split(".")[-1] == "TYPE_CHECKING":
                    return True
            current = self._parents.get(current)
        return False


def _argument_index(call: cst.Call, target: FixTarget) -> int:
    """Where in ``call.args`` the target's argument is, binding it as Python would."""
    which = target.argument
    if isinstance(which, str):
        for index, arg in enumerate(call.args):
            if arg.keyword is not None and ident(arg.keyword.value) == which:
                return index
        if target.positions_differ:
            raise _Unfixable(
                f"the call has no `{which}=` argument, and the sinks named "
                f"`{target.sink}` take it at different positions"
            )
        if target.position is None:
            raise _Unfixable(f"the call has no `{which}=` argument")
        which = target.position
    positional = [i for i, arg in enumerate(call.args) if arg.keyword is None]
    if which >= len(positional) or any(call.args[i].star for i in positional[: which + 1]):
        raise _Unfixable(f"the call has no plain positional argument {which}")
    return positional[which]


def _min_at_least_one(args: Sequence[cst.Arg], position: int) -> bool:
    """Whether ``min=`` (or the ``position``-th positional argument) is an int >= 1."""
    bound: cst.BaseExpression | None = None
    positional = [arg for arg in args if arg.keyword is None and not arg.star]
    for arg in args:
        if arg.keyword is not None and ident(arg.keyword.value) == "min":
            bound = arg.value
    if bound is None and len(positional) > position:
        bound = positional[position].value
    return isinstance(bound, cst.Integer) and bound.evaluated_value >= 1


class _ClampArguments(cst.CSTTransformer):
    """Wraps the chosen arguments of the chosen calls; calls are matched by identity."""

    def __init__(self, edits: dict[cst.Call, list[_Edit]], left: Iterable[cst.Call]) -> None:
        self._edits = edits
        self.made: list[cst.Call] = []  # the calls edited, as they are in the new tree
        self._left = set(left)
        self.now: dict[cst.Call, cst.Call] = {}  # each of ``left`` as it is in the new tree

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if original_node in self._left:
            self.now[original_node] = updated_node
        edits = self._edits.get(original_node)
        if not edits:
            return updated_node
        args = list(updated_node.args)
        for edit in edits:
            arg = args[edit.index]
            args[edit.index] = arg.with_changes(value=_rendered(edit, arg.value))
        made = updated_node.with_changes(args=args)
        self.made.append(made)
        return made


def _parse_template(text: str) -> tuple[cst.Call, str]:
    """The rule's fix as a call whose argument is a placeholder, and the callee's name."""
    try:
        parsed = cst.parse_expression(text.replace("{arg}", _ARG))
    except cst.ParserSyntaxError as exc:
        raise _Unfixable(f"the rule's fix template does not parse: {text!r}") from exc
    head = _full_name(parsed.func) if isinstance(parsed, cst.Call) else None
    if not isinstance(parsed, cst.Call) or head is None or _ARG not in text.replace("{arg}", _ARG):
        raise _Unfixable(f"the rule's fix template is not a call of {{arg}}: {text!r}")
    return parsed, head


def _calls(value: cst.BaseExpression, head: str) -> bool:
    return isinstance(value, cst.Call) and _full_name(value.func) == head


# Expressions that need no parentheses as an operand, an attribute's owner or a callee.
_ATOMS = (
    cst.Name,
    cst.Attribute,
    cst.Call,
    cst.Subscript,
    cst.Integer,
    cst.Float,
    cst.Imaginary,
    cst.SimpleString,
    cst.ConcatenatedString,
    cst.FormattedString,
    cst.List,
    cst.Tuple,
    cst.Set,
    cst.Dict,
    cst.ListComp,
    cst.SetComp,
    cst.DictComp,
    cst.Ellipsis,
)


def _grouped(value: cst.BaseExpression) -> cst.BaseExpression:
    """``value`` in parentheses unless it is an atom or has them: ``(a // b).clamp()``,
    not ``a // b.clamp()``."""
    if isinstance(value, _ATOMS) or value.lpar:
        return value
    return value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _placeholder(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Name) and node.value == _ARG


class _Fill(cst.CSTTransformer):
    """The template with the argument in the placeholder's place, in parentheses where
    the template uses it as an operand (a method's owner, a callee, a subscript's value,
    an operator's side), and a bare generator expression in them as an argument (which
    only a sole argument may be)."""

    def __init__(self, value: cst.BaseExpression) -> None:
        self._value = value

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self._value if original_node.value == _ARG else updated_node

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        value = updated_node.value
        if _placeholder(original_node.value) and isinstance(value, cst.GeneratorExp):
            return updated_node.with_changes(value=_grouped(value))
        return updated_node

    def on_leave(
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]:
        updated = super().on_leave(original_node, updated_node)
        operands = _OPERAND_FIELDS.get(type(original_node), ())
        changes = {
            name: _grouped(getattr(updated, name))
            for name in operands
            if _placeholder(getattr(original_node, name))
        }
        return (
            updated.with_changes(**changes)
            if changes and isinstance(updated, cst.CSTNode)
            else updated
        )


_OPERAND_FIELDS: dict[type, tuple[str, ...]] = {
    cst.Attribute: ("value",),
    cst.Subscript: ("value",),
    cst.Call: ("func",),
    cst.BinaryOperation: ("left", "right"),
    cst.UnaryOperation: ("expression",),
    cst.BooleanOperation: ("left", "right"),
    cst.Comparison: ("left",),
    cst.Await: ("expression",),
}


def _rendered(edit: _Edit, value: cst.BaseExpression) -> cst.BaseExpression:
    callee = cst.parse_expression(edit.callee)
    call = edit.template.with_changes(func=callee)
    return cst.ensure_type(call.visit(_Fill(value)), cst.Call)


# --- imports ---------------------------------------------------------------------------


def _bound_name(alias: cst.ImportAlias) -> str | None:
    if alias.asname is not None:
        name = alias.asname.name
        return ident(name.value) if isinstance(name, cst.Name) else None
    full = _full_name(alias.name)
    return full.split(".")[0] if full else None


def _alias_binds(alias: cst.ImportAlias, bound: str, module: str) -> bool:
    full = _full_name(alias.name) or ""
    if alias.asname is not None:
        return full == module
    return full.split(".")[0] == module == bound  # ``import torch.cuda`` binds ``torch``


def _full_name(node: cst.CSTNode) -> str | None:
    """``get_full_name_for_node``, each name as Python reads it (``ident``)."""
    full = get_full_name_for_node(node)
    return None if full is None else ident(full)


def _is_docstring(statement: cst.BaseStatement) -> bool:
    """Whether the line starts with a string: the module's docstring, even where other
    statements follow it on its line (``'Doc.'; import sys``)."""
    if not isinstance(statement, cst.SimpleStatementLine) or not statement.body:
        return False
    small = statement.body[0]
    return isinstance(small, cst.Expr) and isinstance(
        small.value, (cst.SimpleString, cst.ConcatenatedString)
    )


def _leading_import_indexes(
    body: Sequence[cst.BaseStatement], start: int, before: Collection[cst.CSTNode] = ()
) -> list[int]:
    """The indexes of the import lines among the one-line statements from ``start`` up to
    the first block statement or the first statement holding a node of ``before``."""
    indexes = []
    stop = {id(node) for node in before}
    for index in range(start, len(body)):
        statement = body[index]
        if not isinstance(statement, cst.SimpleStatementLine) or _holds(statement, stop):
            break
        if all(isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body):
            indexes.append(index)
    return indexes


def _holds(node: cst.CSTNode, ids: set[int]) -> bool:
    """Whether ``node`` or a node under it is one of ``ids``."""
    stack = [node]
    while stack and ids:
        current = stack.pop()
        if id(current) in ids:
            return True
        stack.extend(current.children)
    return False


def _import_section(statement: cst.BaseStatement) -> str:
    """``future``, ``stdlib`` or ``other`` (third-party and first-party alike)."""
    top = _sort_key(statement)[1].split(".")[0]
    if top == "__future__":
        return "future"
    if top in sys.stdlib_module_names:
        return "stdlib"
    return "other"


def _sort_key(statement: cst.BaseStatement) -> tuple[int, str]:
    """isort's default order within a section: plain imports first, then ``from`` imports."""
    assert isinstance(statement, cst.SimpleStatementLine)
    small = statement.body[0]
    if isinstance(small, cst.Import):
        return 0, (_full_name(small.names[0].name) or "").lower()
    assert isinstance(small, cst.ImportFrom)
    if small.relative:
        return 1, "." * len(small.relative)  # local imports sort last
    module = _full_name(small.module) if small.module else ""
    return 1, (module or "").lower()


def _place_among_others(
    body: list[cst.BaseStatement],
    others: list[int],
    new_line: cst.SimpleStatementLine,
    name: str = _TORCH,
) -> tuple[int, cst.SimpleStatementLine]:
    key = (0, name.lower())
    after = [i for i in others if _sort_key(body[i]) > key]
    if not after:
        return others[-1] + 1, new_line
    index = after[0]
    statement = body[index]
    if not _starts_with_blank(statement) or index - 1 in others:
        # Inside a group, or at the end of the group before (which keeps its blank lines).
        return index, new_line
    # First of its group: the blank lines separating the groups move above torch, the
    # statement keeps its own comments.
    lines = list(statement.leading_lines)
    blanks = 0
    while blanks < len(lines) and lines[blanks].comment is None:
        blanks += 1
    body[index] = statement.with_changes(leading_lines=lines[blanks:])
    return index, new_line.with_changes(leading_lines=lines[:blanks])


def _starts_with_blank(statement: cst.BaseStatement) -> bool:
    lines = getattr(statement, "leading_lines", ())
    return bool(lines) and lines[0].comment is None


def _source_encoding(raw: bytes, path: Path) -> str:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as exc:
        raise FixError(path, f"cannot read: {exc}") from exc
    return encoding


def _require_compiles(text: str, path: Path) -> None:
    try:
        with warnings.catch_warnings():  # the user's code's warnings are not ours to print
            warnings.simplefilter("ignore")
            compile(text, str(path), "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        raise FixError(path, f"the fixed source does not compile ({exc}); file left unchanged")

"""The analyzer: interprets functions into summaries and collects the values reaching sinks.

Its concerns live in one module each (statements, expressions, calls, torch_model,
resolution); this module holds the entry points, the summaries and their recursion.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import libcst as cst

from zerolint.dataflow.calls import Calls
from zerolint.dataflow.contexts import CallerContext, Contexts
from zerolint.dataflow.expressions import Expressions
from zerolint.dataflow.frames import (
    CAPABLE,
    CYCLE,
    MAX_DEPTH,
    PARSED,
    RECURSION,
    WRAPPER,
    DepNode,
    Frame,
    FuncKey,
    ParamObject,
    Summary,
)
from zerolint.dataflow.resolution import Resolution
from zerolint.dataflow.signatures import LibEffect, library_for
from zerolint.dataflow.statements import Statements, exit_state
from zerolint.dataflow.syntax import dotted, scope_names, statements, string_value
from zerolint.dataflow.torch_model import TorchModel
from zerolint.dataflow.values import (
    EMPTY,
    ClassRef,
    FuncRef,
    InstRef,
    LazyRef,
    ParamOrigin,
    Ref,
    SinkRef,
    Trace,
    Val,
    holds_sink,
    join_all,
)
from zerolint.project import ClassInfo, ModuleInfo, Project
from zerolint.rules import Rule, SinkSpec

RECURSION_ROUNDS = 3
# A field's values made in a run: the class, whether parsing was allowed, the values, the
# making's node and what it asked (``Analyzer.replay_field``).
FieldMaking = tuple[ClassInfo, bool, "list[Val]", DepNode, "list[tuple]"]
# Cached answers a replay asks for again: a class's bases and the modules naming a text
# (lists of shared objects, compared), and a field's values, whose making is replayed as a
# summary's is. A making that used any other cached answer (an origin's, a call's
# contexts) is not replayed.
REPLAYED_CACHES = frozenset({"mro", "mention", "field"})
T = TypeVar("T")


class Analyzer(Statements, Expressions, Calls, TorchModel, Resolution, Contexts):
    """Interprets functions into summaries and collects the values reaching sinks."""

    def __init__(
        self,
        project: Project,
        rules: Sequence[Rule],
        *,
        whole_program: bool = True,
    ) -> None:
        self.project = project
        self.rules = tuple(rules)
        specs = [s for r in self.rules for s in r.sinks]
        # One function may be a sink of several rules, or for several arguments.
        by_name: dict[str, list[SinkSpec]] = {}
        by_qual: dict[str, list[SinkSpec]] = {}
        for s in specs:
            by_name.setdefault(s.function, []).append(s)
            for q in s.qualnames():
                by_qual.setdefault(q, []).append(s)
        # A bare name (a parameter, a field, an import from a module nobody can see) is a
        # sink only of the declarations that allow it: `modules-only` ones count only when
        # reached through their modules (another library's kernel may share the name).
        self.sinks_by_name = {
            k: tuple(x for x in v if not x.modules_only)
            for k, v in by_name.items()
            if any(not x.modules_only for x in v)
        }
        self.sinks_by_qual = {k: tuple(v) for k, v in by_qual.items()}
        # A qualified name that clamps its own input for every rule sinking that function.
        self.guarded_quals = frozenset(
            q
            for s in specs
            for q in s.guarded_qualnames()
            if all(q in o.guarded_qualnames() for o in by_name[s.function])
        )
        # The analysis recognizes every rule's names; which rule a source or a sanitizer
        # counts for is decided at each sink (RawStep.effect).
        merged: dict[str, set[str]] = {}
        for r in self.rules:
            for table in (r.sources, r.sanitizers):
                for k, v in table.items():
                    merged.setdefault(k, set()).update(v)
        self.names = {k: frozenset(v) for k, v in merged.items()}
        # The torch / numpy signature table, with the names the rules declare.
        self.library = library_for(self.names)
        # The methods a call reads as a tensor's before looking at the receiver. Not a
        # container's (`append`, `get`): an object of the project may have a method of that
        # name, and a call nothing else resolves falls back to the table anyway (Calls.call).
        self.tensor_methods = frozenset(
            m
            for m, sig in self.library.methods.items()
            if sig.effect not in (LibEffect.COLLECT, LibEffect.MAPPING)
        ) | self.names.get("empty_rows_methods", frozenset())
        self.whole_program = whole_program
        # Seconds spent interpreting each module's functions, its callees' and any parse
        # left out (--timings); the open interpretations' nested seconds, innermost last.
        self.seconds: dict[Path, float] = {}
        self._nested: list[float] = []
        project.on_parse = self._count_nested
        self.summaries: dict[FuncKey, Summary] = {}
        self._provisional: dict[FuncKey, Summary] = {}
        self._mention_cache: dict[tuple[str, bool], list[ModuleInfo]] = {}
        # Whether a class statement names a class among its bases (by the class's name):
        # Resolution._subclassed_elsewhere, on text that a run does not change.
        self._subclassed_cache: dict[str, bool] = {}
        self._recursion_seen = False
        self._rerun: list[FuncKey] = []
        # The summaries of a round of remaking (``summary``) not made again yet, and
        # whether the remaking in progress read one of them (``_read_before_remade``).
        self._remaking: set[FuncKey] = set()
        self._stale_read = False
        # Fields whose values were made from a partial summary: made again with the
        # summaries made again after the recursion (``summary``).
        self._partial_fields: list[tuple[int, str]] = []
        self.allow_parse = False
        self._field_cache: dict[tuple[int, str], list[Val]] = {}
        # Fields whose values are being made: how many summaries were being made then.
        self._field_open: dict[tuple[int, str], int] = {}
        # Globals whose values are being made: how many summaries were being made then.
        self._globals_open: dict[tuple[int, str], int] = {}
        self._mro_cache: dict[int, list[ClassInfo]] = {}
        # TorchModel.field_views' answers, by class (the class kept, to tell ids apart).
        self._field_views: dict[int, tuple[ClassInfo, dict[str, frozenset[str]]]] = {}
        # How many finally blocks run for their try's ways out are being run now.
        self._exit_finallies = 0
        self._origin_cache: dict[int, list[Trace]] = {}
        # A RenamedOrigin's resolution, renamed, by its id with the origin itself (which
        # keeps the id from being given to another): (origin, traces).
        self._renamed_cache: dict[int, tuple[object, list[Trace]]] = {}
        # Set when resolving stopped at MAX_DEPTH (not at a recursion): paths may be
        # missing, and the engine says so. _cut_origins: cached resolutions that stopped.
        self.depth_cut = False
        self._cut_origins: set[int] = set()
        # While paths into one sink call may parse modules: how many modules may have been
        # asked for when they stop (None: no limit), and whether one was refused
        # (``may_parse``).
        self.parse_limit: int | None = None
        self.parse_cut = False
        # How many times a module was not parsed because it may not be now (``may_parse``).
        self.parse_refusals = 0
        self._keys: dict[int, FuncKey] = {}
        self._closures: dict[int, tuple[str, ...]] = {}  # closure_names' answers
        self._swallowing: dict[int, bool] = {}  # generator_swallows' answers, by def node
        self._local_defs: dict[int, dict[str, list[cst.FunctionDef]]] = {}  # local_defs'
        self._scopes: dict[int, tuple[frozenset[str], frozenset[str]]] = {}  # scope_names'
        self._module_of: dict[str, str | None] = {}  # project_module_of's answers
        # Expressions.overriders: a class's subclasses once n modules were parsed.
        self._subclasses_parsed: dict[tuple[int, int], tuple[list[ClassInfo], tuple, int]] = {}
        # Expressions.overriders' answers, by class, count of modules parsed and name.
        self._overriders: dict[tuple[int, int, str], list[ClassInfo]] = {}
        # module_constant's answers: whether no star import may bind (module, name) again
        self._star_kept: dict[tuple[str, str], bool] = {}
        self._hands_on: dict[int, bool] = {}  # _calls_another_init's, by __init__ node
        self._in_progress: set[FuncKey] = set()
        # Origins being resolved (by id): how many summaries were being made then.
        self._resolving: dict[int, int] = {}
        # Modules whose functions may forward to a sink: analysed eagerly when called.
        self.sink_capable: set[str] = set()
        self.wrapper_names: set[str] = set()
        # The prefilter's view of wrapper_names. A module-level name (function or global)
        # is reached only through an import of its module: name -> the modules that define
        # or re-export it. A method or a field is reached through any object: bare names.
        self.wrapper_homes: dict[str, set[str]] = {}
        self.open_wrapper_names: set[str] = set()
        # Conditions from outside a sink's function (contexts.py): each function's call
        # sites with the guards that held there, what each construction wrote into its
        # fields, and the classes of the objects that field guards test.
        self.call_sites: dict[FuncKey, dict[tuple[int, int], CallerContext]] = {}
        self.constructions: dict[int, tuple[tuple[str, ...], dict[str, int | str]]] = {}
        self.guard_classes: dict[tuple[int, str], frozenset[str]] = {}
        self.closed_cache: dict[FuncKey, list[CallerContext] | None] = {}
        # What each summary and cached answer was made from (DepNode), and the nodes of
        # the summaries and answers being made, innermost last.
        self.summary_deps: dict[FuncKey, DepNode] = {}
        self.cache_deps: dict[tuple, DepNode] = {}
        self._making: list[DepNode] = []
        self.kept_summaries = 0
        self.interpreted = 0
        # Summaries kept from the last run (the language server's): each is installed when
        # first asked for if its making, replayed, asks the same questions and gets the
        # same answers (``replay``). ``recording``: makings log their events for that.
        self.recording = False
        self._quiet = 0  # inside a question whose answer alone is recorded (``asking``)
        # Each function's makings in this run, in order (a later round, a rerun after a
        # recursion), with what each asked: the next run replays its n-th making of a
        # function as this run's n-th (``replay``). ``stored``: the last run's.
        self.made: dict[FuncKey, list[tuple[Summary, DepNode, list[tuple] | None]]] = {}
        self.stored: dict[FuncKey, list[tuple[Summary, DepNode, list[tuple] | None]]] = {}
        self._makings: dict[FuncKey, int] = {}
        self._resolving_now: list[list[int]] = []  # see _replay_events
        self._asked: tuple | None = None  # see _replays
        self.replayed = 0
        # A replay that failed after what it did changed an answer it had got: the making
        # that follows may not go as a cold run's would (``_replay_events``).
        self.tainted = False
        # A field's values made in this run, each with its class and making (a run may make
        # them more than once: each round, and each round of resolution); the last run's.
        self.made_fields: dict[tuple[int, str], list[FieldMaking]] = {}
        self.stored_fields: dict[tuple[int, str], list[FieldMaking]] = {}
        # The ids of the kept summaries and field values no replay can install (``doomed``):
        # for a function's making, and for a field's.
        self._doomed: set[int] = set()
        self._doomed_fields: set[int] = set()
        # The eval_ and exec_ methods, looked up once per node type, not by name at every node.
        self.evaluators = {}
        self.executors = {}

    # ------------------------------------------------------------------ entry points

    def func_key(
        self, mod: ModuleInfo, node: cst.FunctionDef | None, cls: ClassInfo | None = None
    ) -> FuncKey:
        ident = id(node) if node is not None else id(mod)
        key = self._keys.get(ident)
        if key is None:
            key = FuncKey(mod, node, cls)
            self._keys[ident] = key
        return key

    def module_functions(self, mod: ModuleInfo) -> Iterator[FuncKey]:
        yield self.func_key(mod, None)
        for fn in mod.functions.values():
            yield self.func_key(mod, fn)
        for ci in mod.classes.values():
            for m in ci.methods.values():
                yield self.func_key(mod, m, ci)
        for fn in mod.nested:
            yield self.func_key(mod, fn)

    def summary(self, key: FuncKey) -> Summary:
        """What ``key`` does to lengths. Recursive functions (directly or across modules)
        first see each other's partial summaries, then are interpreted again until their
        summaries stop changing (a few rounds: enough for wrappers calling each other)."""
        found = self.summaries.get(key)
        if found is not None:
            if self._making:  # uses(), inlined: the commonest call of a run
                top = self._making[-1]
                node = self.summary_deps.get(key)
                if node is not None and node is not top:
                    top.edges.add(node)
                if top.read is not None:  # a summary's making
                    if self._remaking and key in self._remaking:
                        self._read_before_remade(top.read, key)
                    top.read.add(key)
                if top.events is not None and not self._quiet:
                    top.events.append(("summary", key, found))
            if self._rerun and self._in_progress and self.to_make_again(key):
                # Made from a partial summary and to be made again: what is made from it
                # now is made again after it, as if it had met the recursion itself.
                self._recursion_seen = True
            return found
        cycle = key in self._in_progress
        if cycle or len(self._in_progress) > MAX_DEPTH * 4:
            self._recursion_seen = True
            partial = self._provisional.get(key)
            if self._making:
                top = self._making[-1]
                node = self.summary_deps.get(key) if cycle else None
                if node is not None:
                    # Read while being made: an edge to that making, which the next round
                    # of the index follows as any other (CYCLE). The reader is made again
                    # after the recursion anyway, reading the summary made; the edge is
                    # what holds where the rounds of remaking run out first.
                    top.tokens.add(CYCLE)
                    if node is not top:
                        top.edges.add(node)
                else:  # a depth limit: where it is met depends on the order
                    top.tokens.add(RECURSION)
                if top.read is not None:  # a summary's making: read while being made
                    top.read.add(key)
                if self.recording:
                    self.record(("recursion", key, partial))
            return partial or Summary(key)
        outer_seen, self._recursion_seen = self._recursion_seen, False
        self._summarise(key)
        if self._recursion_seen:
            self._rerun.append(key)
        self._recursion_seen = self._recursion_seen or outer_seen
        if not self._in_progress:
            for _ in range(RECURSION_ROUNDS):
                again, self._rerun = self._rerun, []
                if not again:
                    break
                for field_key in self._partial_fields:
                    self._field_cache.pop(field_key, None)
                self._partial_fields = []
                self._remaking = set(again)
                for k in self._remake_order(again):
                    self._remaking.discard(k)
                    self.summaries.pop(k, None)
                    self._stale_read = False
                    self._summarise(k)
                    if self._stale_read:
                        self._rerun.append(k)
            self._rerun = []
            self._partial_fields = []
            self._recursion_seen = False
        self.uses(self.summary_deps.get(key))
        made = self.summaries[key]
        if self.recording:
            self.record(("summary", key, made))
        return made

    def _remake_order(self, again: list[FuncKey]) -> list[FuncKey]:
        """The order a round makes ``again`` in: each summary after those of ``again`` an
        earlier making of it read (``DepNode.read``), so that it reads them made again; the
        functions of one recursion, which read each other, in the order they were first
        finished (``again``'s), as before. Tarjan's strongly connected components, which
        come out each after those it reads."""
        position = {k: i for i, k in enumerate(again)}

        def reads(k: FuncKey) -> Iterator[FuncKey]:
            node = self.summary_deps.get(k)
            found = [r for r in (node.read or ()) if r in position] if node is not None else []
            return iter(sorted(found, key=position.__getitem__))

        index: dict[FuncKey, int] = {}
        low: dict[FuncKey, int] = {}
        stack: list[FuncKey] = []
        on_stack: set[FuncKey] = set()
        out: list[FuncKey] = []
        for root in again:
            if root in index:
                continue
            index[root] = low[root] = len(index)
            stack.append(root)
            on_stack.add(root)
            work = [(root, reads(root))]
            while work:
                k, todo = work[-1]
                for r in todo:
                    if r not in index:
                        index[r] = low[r] = len(index)
                        stack.append(r)
                        on_stack.add(r)
                        work.append((r, reads(r)))
                        break
                    if r in on_stack:
                        low[k] = min(low[k], index[r])
                else:
                    work.pop()
                    if work:
                        parent = work[-1][0]
                        low[parent] = min(low[parent], low[k])
                    if low[k] == index[k]:
                        component = []
                        while True:
                            m = stack.pop()
                            on_stack.discard(m)
                            component.append(m)
                            if m is k:
                                break
                        out += sorted(component, key=position.__getitem__)
        return out

    def _read_before_remade(self, read: set[FuncKey], key: FuncKey) -> None:
        """A summary being made reads ``key``'s, which this round of remaking has yet to
        make again, so made from a partial one. Where an earlier making of it read that
        summary too (``read``: a recursion, read while being made, or once made), the two
        are of one recursion (``_remake_order`` puts a summary after those it read
        otherwise), and it reads what it read then, as in the first round. Where none did
        (a call first not followed, of a function then not known to reach a sink), the
        summary being made is made again in the next round, after ``key``'s. Only a
        summary's making is so marked: a cached answer's (a field's values, from every
        method of its class) is made afresh each time, so each of its reads would look
        new, and a class's methods would be made again round after round (on SGLang, 1,676
        interpretations instead of 1,205)."""
        if key not in read:
            self._recursion_seen = True
            self._stale_read = True

    def _summarise(self, key: FuncKey) -> Summary:
        if self.recording:
            nth = self._makings.get(key, 0)
            self._makings[key] = nth + 1
            if self.stored:
                replayed = self.replay(key, nth)
                if replayed is not None:
                    return replayed
        self.interpreted += 1
        self._in_progress.add(key)
        node = self.summary_deps.get(key)
        if node is None:  # a rerun adds to what the first interpretation used
            node = self.summary_deps[key] = DepNode()
            node.read = set()
        if self.recording:
            node.events = []  # this making's
        node.open = True
        self._making.append(node)
        # Interpreting a body never parses modules that cannot reach a sink; only paths
        # being resolved do (allow_parse), and only for what they need.
        allow, self.allow_parse = self.allow_parse, False
        start = time.perf_counter()
        self._nested.append(0.0)
        try:
            summary = self._interpret(key)
        finally:
            self._making.pop().open = False
            self._in_progress.discard(key)
            self.allow_parse = allow
            elapsed = time.perf_counter() - start
            own = elapsed - self._nested.pop()
            self.seconds[key.mod.path] = self.seconds.get(key.mod.path, 0.0) + own
            self._count_nested(elapsed)
        self.summaries[key] = summary
        self._provisional[key] = summary
        self.note_providers(summary)
        if self.recording:
            self.made.setdefault(key, []).append((summary, node, node.events))
        return summary

    def _count_nested(self, seconds: float) -> None:
        """``seconds`` went to a parse or a callee's interpretation: not the caller's own."""
        if self._nested:
            self._nested[-1] += seconds

    def note_providers(self, summary: Summary) -> None:
        """Names through which other files can reach a sink without naming it: wrappers
        (forward a parameter to it), resolvers (return it), fields and globals (hold it)."""
        key = summary.key
        found = []  # (name, whether it is a module-level name of key.mod)
        if key.node is not None and self.provides(summary):
            found.append((key.node.name.value, key.cls is None))
        for table, module_level in (
            (summary.field_writes, False),
            (summary.class_attrs, False),
            (summary.global_writes, True),
        ):
            for name, val in table.items():
                if holds_sink(val):
                    found.append((name, module_level))
        for n, module_level in found:
            # A private module global (`_impl`) is used where it is defined, not imported:
            # no other file needs reading for it.
            if n.startswith("_") and (key.node is None or n in key.mod.declared_globals):
                continue
            self.wrapper_names.add(n)
            if module_level:
                self.wrapper_homes.setdefault(n, set()).add(key.mod.name)
            else:
                self.open_wrapper_names.add(n)

    def forget_resolutions(self) -> None:
        """Drop what was resolved without parsing, before resolving again with parsing."""
        self._field_cache.clear()
        self._origin_cache.clear()
        self._renamed_cache.clear()
        self._cut_origins.clear()
        self._mro_cache.clear()

    # ------------------------------------------------------------------ dependencies

    def note(self, token: object) -> None:
        """The summary or answer being made got an answer that may change in this run: a
        module's name (an answer given while it was neither parsed nor known to reach a
        sink) or one of the tokens of ``DepNode``."""
        if self._making:
            self._making[-1].tokens.add(token)
            if token == RECURSION:
                # Met a limit, or a value being resolved (``Resolution``): a replay would
                # not ask where it was met. (A summary being made is: ``summary``.)
                self._making[-1].events = None

    def cut_since(self, opened: int) -> None:
        """A value asked for while it is being worked out was answered with what it holds
        so far, where ``opened`` summaries were being made when its working out began. If
        a summary begun since is being made, that summary is made without the rest, which
        a run asking in another order would not do: it is made again once the outermost
        summary is (``summary``), as one made from a partial summary is."""
        if len(self._in_progress) > opened:
            self._recursion_seen = True

    def note_parsed(
        self, cls: ClassInfo, count: int, found: list[ClassInfo], ids: tuple | None = None
    ) -> None:
        """The summary or answer being made listed the subclasses of ``cls`` in the
        ``count`` modules parsed then, and ``found`` them (``ids``: theirs, if known)."""
        if self._making:
            found_ids = tuple(map(id, found)) if ids is None else ids
            self._making[-1].tokens.add((PARSED, count, cls, found_ids))

    def uses(self, node: DepNode | None) -> None:
        """The summary or answer being made used ``node``'s summary or answer."""
        if self._making and node is not None and node is not self._making[-1]:
            self._making[-1].edges.add(node)

    def made_from(self, cache: str, key: object, make: Callable[[], T]) -> T:
        """``make()``, the answer to cache as ``(cache, key)``, recording what it is made
        from; the summary or answer being made depends on it."""
        node = self.cache_deps[(cache, key)] = DepNode(
            [] if self.recording and cache == "field" else None
        )
        self.uses(node)
        if cache not in REPLAYED_CACHES:
            self.unreplayable()
        node.open = True
        self._making.append(node)
        try:
            return make()
        finally:
            self._making.pop().open = False

    def cached(self, cache: str, key: object) -> None:
        """A cached answer was reused (while it is still being made: a recursion)."""
        if not self._making:
            return
        if cache not in REPLAYED_CACHES:
            self.unreplayable()
        node = self.cache_deps.get((cache, key))
        if node is not None:
            top = self._making[-1]
            if node.open:
                top.tokens.add(CYCLE)
            if node is not top:
                top.edges.add(node)

    def wraps_sink(self, name: str) -> bool:
        """Whether ``name`` is known to wrap a sink (so far in this run)."""
        answer = name in self.wrapper_names
        if self.recording:
            self.record(("wrapper", name, answer))
        return answer

    def reaches_sink(self, modname: str) -> bool:
        """Whether ``modname`` is known to reach a sink (so far in this run)."""
        answer = modname in self.sink_capable
        if self.recording:
            self.record(("capable", modname, answer))
        return answer

    def making_now(self, key: FuncKey) -> bool:
        """Whether ``key``'s summary is being made (its making asked for this)."""
        answer = key in self._in_progress
        if self.recording:
            self.record(("in_progress", key, answer))
        return answer

    def to_make_again(self, key: FuncKey) -> bool:
        """Whether ``key``'s summary is to be made again after a recursion."""
        answer = key in self._rerun
        if self.recording:
            self.record(("rerun", key, answer))
        return answer

    def note_wrapper(self, name: str) -> None:
        """The summary or answer being made was told ``name`` wraps no sink (so far)."""
        if self._making and name not in self.wrapper_names:
            self._making[-1].tokens.add((WRAPPER, name))

    def note_capable(self, modname: str) -> None:
        """The summary or answer being made was told ``modname`` reaches no sink (so far)."""
        if self._making and modname not in self.sink_capable:
            self._making[-1].tokens.add((CAPABLE, modname))

    def _changed(self, token: object) -> bool:
        if token == RECURSION:
            # Its value depended on how deep the question came, or on where a value being
            # resolved was met (a limit): asked again, it may be answered otherwise.
            return True
        if token == CYCLE:
            # A summary or answer still being made: what it became is an edge (``summary``).
            return False
        if isinstance(token, tuple):
            if token[0] == CAPABLE:
                return token[1] in self.sink_capable
            if token[0] == WRAPPER:
                return token[1] in self.wrapper_names
            _, count, cls, found = token
            parsed = self.project.parsed()
            return len(parsed) != count and tuple(map(id, self.subclasses_in(cls, parsed))) != found
        assert isinstance(token, str)
        return token in self.sink_capable or self.project.is_parsed(token)

    def told_otherwise(self) -> bool:
        """Whether a summary kept was made from an answer that has changed since, a
        recursion aside (``_changed``): a name found to wrap a sink since, a module
        parsed or found to reach one."""
        return any(
            t != RECURSION and self._changed(t) for node in self._reachable() for t in node.tokens
        )

    def _reachable(self) -> Iterator[DepNode]:
        """Each node the summaries' nodes reach (themselves included), once."""
        seen: set[DepNode] = set()
        todo = list(self.summary_deps.values())
        while todo:
            node = todo.pop()
            if node not in seen:
                seen.add(node)
                yield node
                todo += node.edges

    def _stale_nodes(self) -> set[DepNode]:
        """The nodes that reach a token that changed."""
        users: dict[DepNode, list[DepNode]] = {}
        seen = list(self._reachable())
        for node in seen:
            for used in node.edges:
                users.setdefault(used, []).append(node)
        stale: set[DepNode] = set()
        todo = [n for n in seen if any(self._changed(t) for t in n.tokens)]
        while todo:
            node = todo.pop()
            if node not in stale:
                stale.add(node)
                todo += users.get(node, ())
        return stale

    # ------------------------------------------------------------------ replay

    def record(self, event: tuple) -> None:
        """The making in progress asked a question another run may answer otherwise, or
        recorded something for others: its replay must do the same (``replay``)."""
        if self._making and not self._quiet:
            events = self._making[-1].events
            if events is not None:
                events.append(event)

    def asking(self, kind: str, arg: object, ask: Callable[[], T]) -> T:
        """``ask()``'s answer, recorded as the answer to ``(kind, arg)`` without the
        questions asking it asked: a replay asks it again and compares the answers, and
        what asking does (a parse) is then done only where a cold run would do it."""
        if not self.recording:
            return ask()
        self._quiet += 1
        try:
            answer = ask()
        finally:
            self._quiet -= 1
        self.record((kind, arg, answer))
        return answer

    def unreplayable(self) -> None:
        """The making in progress used an answer that ``replay`` cannot check."""
        if self._making:
            self._making[-1].events = None

    def field_made(self, cls: ClassInfo, attr: str, vals: list[Val]) -> None:
        """``vals`` were just made as ``cls``'s values of ``attr``: kept for the next run."""
        node = self.cache_deps.get(("field", (id(cls), attr)))
        if node is not None and node.events is not None:
            making = (cls, self.allow_parse, vals, node, node.events)
            self.made_fields.setdefault((id(cls), attr), []).append(making)

    def replay_field(self, cls: ClassInfo, attr: str) -> list[Val] | None:
        """The values of ``cls``'s ``attr`` as the last run made them, if that making
        replays (``replay``); else None. Its n-th making (with parsing allowed, or not) is
        tried for this run's n-th, once."""
        kept = self.stored_fields.get((id(cls), attr), [])
        nth = next(
            (i for i, m in enumerate(kept) if m[0] is cls and m[1] is self.allow_parse), None
        )
        if nth is None:
            return None
        _, _, vals, node, events = kept.pop(nth)
        if id(vals) in self._doomed_fields:
            return None
        scratch = DepNode()
        self._making.append(scratch)
        try:
            replayed = self._replay_events(events)
        finally:
            self._making.pop()
        if not replayed:
            return None
        installed = self.cache_deps[("field", (id(cls), attr))] = self.installed(node, scratch)
        self.uses(installed)
        self.made_fields.setdefault((id(cls), attr), []).append(
            (cls, self.allow_parse, vals, installed, events)
        )
        return vals

    @staticmethod
    def installed(node: DepNode, scratch: DepNode) -> DepNode:
        """The node a replayed making is installed with: the tokens its making noted (the
        same answers note the same tokens), and what its replay used in this run."""
        fresh = DepNode()
        fresh.tokens = set(node.tokens)
        fresh.edges = scratch.edges
        fresh.read = scratch.read
        return fresh

    def adopt(self, previous: Analyzer | None) -> None:
        """Record this run's makings (``record``) and take ``previous``'s summaries, of the
        modules an edit left as they were, to be replayed when first asked for. The
        language server's warm index passes the last run's analyzer, of the same
        project."""
        self.recording = True
        self.project.recorder = self.record
        if previous is None:
            return
        unchanged = self.project.unchanged
        self._keys = {i: k for i, k in previous._keys.items() if unchanged(k.mod)}
        self.stored = {k: v for k, v in previous.made.items() if unchanged(k.mod)}
        for where, made in previous.made_fields.items():
            kept = [m for m in made if unchanged(m[0].module)]
            if kept:
                self.stored_fields[where] = kept
        self._doomed, self._doomed_fields = self.doomed()

    def doomed(self) -> tuple[set[int], set[int]]:
        """The ids of the kept summaries and field values whose makings are sure not to
        replay: each asked for a summary of a module parsed again, or for a summary or a
        field's values of such a making (asked again, it gets a new one: ``_replays``).
        Such a making is not replayed at all (``replay``, ``replay_field``): it is made
        from the state a cold run's making starts from. Replayed up to that question, it
        would ask the questions before it twice; asked again, the subclasses of a field's
        class may list more parsed modules, which taints the run (``_replay_events``).
        The second set, for the makings of fields, also holds the makings that asked for
        what a making that cannot be replayed (``events`` None) made; a function's making
        that did is still replayed up to there, as before."""
        unchanged = self.project.unchanged
        makings = [(id(m[0]), m[2]) for made in self.stored.values() for m in made]
        makings += [(id(m[2]), m[4]) for made in self.stored_fields.values() for m in made]
        edited: set[int] = set()
        users: dict[int, list[int]] = {}
        for made, events in makings:
            for event in events or ():
                kind = event[0]
                if kind == "summary" and not unchanged(event[1].mod):
                    edited.add(made)
                    break
                if kind in ("summary", "field"):
                    users.setdefault(id(event[-1]), []).append(made)

        def with_users(doomed: set[int]) -> set[int]:
            todo = list(doomed)
            while todo:
                for user in users.get(todo.pop(), ()):
                    if user not in doomed:
                        doomed.add(user)
                        todo.append(user)
            return doomed

        by_edit = with_users(edited)
        unreplayable = {made for made, events in makings if events is None}
        return by_edit, with_users(by_edit | unreplayable)

    def keep_for_replay(self) -> None:
        """The run is over: keep what the next run replays (each making, with what it
        asked, and the keys of functions), not this run's caches and contexts; the
        project's questions are no longer heard."""
        self.project.recorder = None
        self.stored = {}
        self.stored_fields = {}
        self._doomed = self._doomed_fields = set()
        self.forget_resolutions()
        self._mention_cache.clear()
        self.cache_deps.clear()
        self.closed_cache.clear()
        self._provisional.clear()
        self.call_sites.clear()
        self.constructions.clear()
        self.guard_classes.clear()

    def replay(self, key: FuncKey, nth: int) -> Summary | None:
        """Install the kept summary of ``key`` if its making, asked again now, would go as
        it went: each question it asked (a module, a text, a search, whether a module
        reaches a sink, a summary, ...) gets the same answer now, in the same order. The
        questions are asked for real, so what they do (a parse, a callee's making) is done
        when a cold run would do it; what the making recorded for others (call sites,
        constructions, field guards) is recorded again in its place. If an answer differs,
        None: the function is interpreted, as a cold run would (``_replay_events``)."""
        makings = self.stored.get(key)
        if makings is None or nth >= len(makings):
            return None
        summary, node, events = makings[nth]
        if events is None or id(summary) in self._doomed:
            return None
        self._in_progress.add(key)
        # What the replayed questions record is not this summary's: a scratch node. It
        # starts from what this run's earlier makings of ``key`` read, as a making again
        # does (``_summarise`` keeps its node): a read of theirs is not a first one
        # (``_read_before_remade``).
        scratch = DepNode()
        prior = self.summary_deps.get(key)
        scratch.read = set(prior.read or ()) if prior is not None else set()
        self._making.append(scratch)
        allow, self.allow_parse = self.allow_parse, False
        try:
            if not self._replay_events(events):
                return None
        finally:
            self._making.pop()
            self._in_progress.discard(key)
            self.allow_parse = allow
        installed = self.summary_deps[key] = self.installed(node, scratch)
        self.summaries[key] = summary
        self._provisional[key] = summary
        self.note_providers(summary)
        self.made.setdefault(key, []).append((summary, installed, events))
        self.replayed += 1
        return summary

    def _replay_events(self, events: list[tuple]) -> bool:
        """Replay ``events`` (``_replays``) up to the first whose answer differs: False
        there. The making then starts over from the first question, after what the replay
        did so far (a cold run's making did the same, in the same order, before it asked
        that question). It goes as the cold one did if each question asked before gets the
        same answer again, and the differing question the answer it just got (asking it may
        have parsed a module, which changes what it finds); where one does not (a module
        parsed, a name found to wrap a sink, after it was asked about), the run is
        ``tainted``, and its caller runs again without replaying."""
        # The values the replayed making is resolving (as it resolved them), and so what a
        # summary made meanwhile sees being resolved: undone where the replay stops.
        self._resolving_now.append([])
        try:
            for i, event in enumerate(events):
                if not self._replays(event):
                    asked = self._asked  # what the differing question got, if asking did
                    self._stop_resolving(self._resolving_now[-1])
                    checks = events[:i] if asked is None else [*events[:i], asked]
                    if not all(self._still(e) for e in checks):
                        self.tainted = True
                    return False
            return True
        finally:
            self._stop_resolving(self._resolving_now.pop())

    def _stop_resolving(self, origins: list[int]) -> None:
        for origin in origins:
            self._resolving.pop(origin, None)

    def _still(self, event: tuple) -> bool:
        """Whether ``event``'s question, asked again, gets the answer it got (it was asked
        during a replay a moment ago): without doing anything that asking may do."""
        kind, arg, answer = event[0], event[1], event[-1]
        if kind == "summary":
            return self.summaries.get(arg) is answer
        if kind == "field_open":
            return (id(arg[0]), arg[1]) in self._field_open
        if kind == "recursion":
            busy = arg in self._in_progress or len(self._in_progress) > MAX_DEPTH * 4
            return busy and self._provisional.get(arg) is answer
        if kind == "field":
            return self._field_cache.get((id(arg[0]), arg[1])) is answer
        if kind == "mro":
            return self._mro_cache.get(id(arg[0])) == answer
        if kind == "mention":
            return self._mention_cache.get(arg) == answer
        if kind == "bind":
            if arg.bound:
                return arg.callee is answer[1] and (arg.callee is not None) is answer[0]
            # Left unbound: its module was not to be parsed (Calls.bind_site). Still not?
            modname = self.project_module_of(arg.lazy or "")
            return (
                answer == (False, None)
                and modname is not None
                and modname not in self.sink_capable
                and not self.project.is_parsed(modname)
            )
        if kind in ("subclasses", "subclasses_parsed"):
            found: list[ClassInfo] = []
            parsed = self.project.parsed()
            for mod in parsed:
                for c in mod.classes.values():
                    if c is arg:
                        continue
                    bases = self._mro_cache.get(id(c))
                    if bases is None:
                        return False  # a class whose bases nobody asked for yet
                    if arg in bases:
                        found.append(c)
            if kind == "subclasses_parsed":  # whichever modules are parsed: the classes
                return list(map(id, found)) == list(map(id, answer[0]))
            return (found, len(parsed)) == answer
        if kind in ("module", "module_at"):
            return self.project.registered(arg) is answer
        if kind == "resolving":
            return id(arg) not in self._resolving
        if kind in ("lazy_site", "call", "built", "guard", "resolved"):
            return True  # a record, not a question
        return self._replays(event)  # the other questions do nothing

    def _replays(self, event: tuple) -> bool:
        """Ask ``event``'s question again (or record its record again): the same answer?
        A question whose asking does something (a parse, a making) leaves what it got in
        ``_asked``, for ``_replay_events`` to check when it differs."""
        kind, arg, answer = event[0], event[1], event[-1]
        self._asked = None
        if kind == "summary":
            # A function of a module parsed again is never asked for: it is not there.
            if not self.project.unchanged(arg.mod):
                return False
            live: object = self.summary(arg)
            self._asked = (kind, arg, live)
            return live is answer
        if kind == "field":
            live = self.field_values(*arg)
            self._asked = (kind, arg, live)
            return live is answer
        if kind == "field_open":  # what a field read while it is made does
            if not self._still(event):
                return False
            self.cut_since(self._field_open[(id(arg[0]), arg[1])])
            return True
        if kind == "recursion":  # a summary being made was asked for: its partial one
            if self._still(event):
                self.summary(arg)  # what a recursion does: the rerun to come
                return True
            return False
        if kind == "bind":
            live = (self.bind_site(arg), arg.callee)
            self._asked = (kind, arg, live)
            return live[0] is answer[0] and live[1] is answer[1]
        if kind == "subclasses":
            live = self._subclasses(arg)
            self._asked = (kind, arg, live)
            return live == answer
        if kind == "subclasses_parsed":  # Expressions.overriders: no module parsed for it
            live = self.parsed_subclasses(arg)
            self._asked = (kind, arg, live)
            return list(map(id, live[0])) == list(map(id, answer[0]))
        if kind == "in_progress":
            return (arg in self._in_progress) is answer
        if kind == "resolving":  # not being resolved: it is now (Resolution.resolve_refs)
            if id(arg) in self._resolving:
                return False
            self._resolving[id(arg)] = len(self._in_progress)
            self._resolving_now[-1].append(id(arg))
            return True
        if kind == "resolved":
            self._resolving.pop(id(arg), None)
            return True
        if kind == "rerun":
            return (arg in self._rerun) is answer
        if kind == "capable":
            return (arg in self.sink_capable) is answer
        if kind == "wrapper":
            return (arg in self.wrapper_names) is answer
        if kind in ("module", "module_at"):
            live = self.project.module(arg) if kind == "module" else self.project.module_at(arg)
            self._asked = (kind, arg, live)
            return live is answer
        if kind == "is_parsed":
            return self.project.is_parsed(arg) is answer
        if kind in ("text", "search", "parsed"):  # equal, if not the same object
            now = (
                self.project.text(arg)
                if kind == "text"
                else self.project.files_containing(arg)
                if kind == "search"
                else self.project.parsed()
            )
            return now == answer
        if kind == "mro":
            live = self.mro(*arg)
            self._asked = (kind, arg, live)
            return live == answer
        if kind == "mention":  # asked where parsing was allowed, or not: so must it be
            if arg[1] is not self.allow_parse:
                return False
            live = self.modules_mentioning(arg[0])
            self._asked = (kind, arg, live)
            return live == answer
        if kind == "lazy_site":  # made unbound; a later resolution bound it
            arg.bound, arg.callee, arg.args, arg.operands = False, None, {}, {}
            return True
        if kind == "call":
            self.call_sites.setdefault(arg, {})[event[2]] = answer
            return True
        if kind == "built":
            self.constructions[arg] = answer
            return True
        if kind == "guard":
            self.guard_classes.setdefault(arg, answer)
            return True
        raise AssertionError(f"unknown event {kind}")

    def reset_summaries(self) -> None:
        """Before another round over more modules: drop every summary whose making could
        now go otherwise (DepNode); keep the others, which interpreting them again now
        would give back."""
        stale = self._stale_nodes()
        for key in list(self.summaries):
            node = self.summary_deps.get(key)
            if node is None or node in stale or key in self._rerun:
                del self.summaries[key]
                self.summary_deps.pop(key, None)
        self.kept_summaries += len(self.summaries)
        # The modules mentioning a text are remembered for the whole run, and so is what
        # those answers were made from.
        self.cache_deps = {k: v for k, v in self.cache_deps.items() if k[0] == "mention"}
        self.closed_cache.clear()
        self._provisional.clear()
        self._field_cache.clear()
        self._partial_fields = []
        self._mro_cache.clear()
        self._origin_cache.clear()
        self._renamed_cache.clear()
        self._cut_origins.clear()

    # ------------------------------------------------------------------ interpretation

    def _interpret(self, key: FuncKey) -> Summary:
        summary = Summary(key)
        frame = Frame(key, summary)
        if key.node is None:
            body: Sequence[cst.CSTNode] = key.mod.module.body
        else:
            for p in key.params():
                name = p.name.value
                frame.state[name] = Val(
                    [Trace(ParamOrigin(key, name), ())], self._param_refs(key, p)
                )
                # Writes through this name reach the caller's object until it is rebound.
                frame.aliases[name] = frozenset({ParamObject(name)})
            # A closure's names are parameters too: the enclosing function's call binds
            # them to what they hold there (``Calls.call_function``).
            for name in self.closure_names(key):
                frame.state[name] = Val(
                    [Trace(ParamOrigin(key, name), ())], self._closure_refs(key, name)
                )
            body = key.node.body.body  # indented lines, or a one-line body's statements
        initial = dict(frame.state)
        self.exec_block(frame, body)
        if key.node is None:
            self.class_level_providers(key.mod, summary)
            if key.mod.import_arms and not frame.dead:
                # A name two arms bind holds what the module's last binding of it leaves on
                # each path (the arms joined), not every binding made on the way (`from
                # .fast import f`, then `def f` that clamps and calls it).
                for name in key.mod.import_arms:
                    held = frame.state.get(name)
                    if held is not None:
                        summary.global_writes[name] = held
        if not frame.dead:
            frame.exits.append(exit_state(frame))
        for left in frame.exits:
            for k, val in left.items():
                if k in frame.nonlocals_declared:
                    continue
                attr = k.split(".", 1)[1]
                summary.field_writes[attr] = summary.field_writes.get(attr, EMPTY).join(val)
        for name in frame.nonlocals_declared:
            written = [
                s[name]
                for s in frame.exits
                if s.get(name, initial.get(name)) is not initial.get(name)
            ]
            if written:
                every = len(written) == len(frame.exits)
                summary.nonlocal_writes[name] = (join_all(written), every)
        summary.returns = join_all(frame.returns)
        elems = [v.elements for v in frame.returns]
        if elems and all(e is not None for e in elems) and len({len(e) for e in elems}) == 1:  # type: ignore[arg-type]
            summary.return_elements = tuple(
                join_all(e[i] for e in elems)
                for i in range(len(elems[0]))  # type: ignore[index]
            )
        for hit in summary.hits:
            # By name, not in the traces' (hash) order: the same forwards on every run.
            names = [
                t.origin.name
                for t in hit.val.traces
                if isinstance(t.origin, ParamOrigin) and t.origin.func is key
            ]
            for name in sorted(names):
                summary.forwards.setdefault(name, []).append(hit)
        return summary

    def class_level_providers(self, mod: ModuleInfo, summary: Summary) -> None:
        """The class-level names of ``mod``'s classes that hold a sink, a lambda calling
        one, or a function forwarding to one: a call of the name through any object may
        reach a sink, as a method wrapper's does."""
        for ci in mod.classes.values():
            for attr in ci.assigned:
                val = Val((), self.class_level_refs(ci, attr, None))
                if holds_sink(val) or any(
                    isinstance(r, FuncRef)
                    and r.key.node is not None
                    and self.provides(self.summary(r.key))
                    for r in val.refs
                ):
                    summary.class_attrs[attr] = val

    def provides(self, summary: Summary) -> bool:
        """Whether a function's summary makes it a wrapper: it forwards a parameter to a
        sink (not a closure's name, nor a variable further out a function beside it
        wrote: only the enclosing function can give those), or returns one."""
        params = {p.name.value for p in summary.key.params()}
        return any(hits for name, hits in summary.forwards.items() if name in params) or holds_sink(
            summary.returns
        )

    def closure_names(self, key: FuncKey) -> tuple[str, ...]:
        """The names a function defined inside another reads from the functions it is
        defined in (a closure's), in order; none for any other function."""
        node = key.node
        if node is None:
            return ()
        found = self._closures.get(id(node))
        if found is None:
            found = ()
            outer = self.enclosing(key)
            if outer is not None and outer.node is not None:
                binds, _ = scope_names(outer.node, self._scopes)
                visible = binds | set(self.closure_names(outer))
                found = tuple(sorted(scope_names(node, self._scopes)[1] & visible))
            self._closures[id(node)] = found
        return found

    def enclosing(self, key: FuncKey) -> FuncKey | None:
        """The function ``key``'s function is defined in (a method's with its class); None
        for a module-level function, a method or the module's top level."""
        encl = key.mod.enclosing.get(id(key.node))
        return self.func_key(key.mod, *encl) if encl is not None else None

    def encloses(self, frame: Frame, key: FuncKey) -> bool:
        """Whether ``frame`` runs the function ``key`` is defined in, where the names of
        ``key``'s closure hold what ``key`` reads."""
        outer = self.enclosing(key)
        return outer is not None and frame.key.node is outer.node

    def _closure_refs(self, key: FuncKey, name: str) -> list[Ref]:
        """What a closure's name is known to refer to: the enclosing function's parameter's
        (``self``), followed outwards."""
        outer = self.enclosing(key)
        if outer is None:
            return []
        for p in outer.params():
            if p.name.value == name:
                return self._param_refs(outer, p)
        if name in self.closure_names(outer):
            return self._closure_refs(outer, name)
        # A function defined there (a sibling's `clear()`): a call of it is followed.
        return [FuncRef(self.func_key(key.mod, d)) for d in self.local_defs(outer).get(name, ())]

    def local_defs(self, key: FuncKey) -> dict[str, list[cst.FunctionDef]]:
        """The functions ``key``'s function defines in its body (in its blocks too, not
        in a class or function inside it), by name."""
        node = key.node
        if node is None:
            return {}
        found = self._local_defs.get(id(node))
        if found is None:
            found = {}
            for top in node.body.body:
                for stmt in statements(top):
                    if type(stmt) is cst.FunctionDef:
                        found.setdefault(stmt.name.value, []).append(stmt)
            self._local_defs[id(node)] = found
        return found

    def same_variable(self, frame: Frame, key: FuncKey, name: str) -> bool:
        """Whether ``name``, a name of ``key``'s closure (read there, or declared
        ``nonlocal``), is the same variable where ``frame`` runs: ``frame`` runs the
        function ``key`` is defined in, or one defined inside that (a sibling of ``key``,
        or deeper) where no function from ``frame``'s out to there binds ``name`` as its
        own."""
        outer = self.enclosing(key)
        if outer is None or outer.node is None or key.mod is not frame.mod:
            return False
        f: FuncKey | None = frame.key
        while f is not None and f.node is not None:
            if f.node is outer.node:
                return True
            if name in scope_names(f.node, self._scopes)[0]:
                return False
            f = self.enclosing(f)
        return False

    def _param_refs(self, key: FuncKey, p: cst.Param) -> list[Ref]:
        name = p.name.value
        refs: list[Ref] = []
        refs += [SinkRef(spec) for spec in self.sinks_by_name.get(name, ())]
        if key.is_method and key.params() and key.params()[0] is p and key.cls is not None:
            refs.append(ClassRef(key.cls) if key.is_classmethod else InstRef(key.cls, open=True))
        elif p.annotation is not None:
            ann = p.annotation.annotation
            if type(ann) is cst.SimpleString:
                ann_name = string_value(ann)
            else:
                ann_name = dotted(ann)
            if ann_name:
                for ref in self.resolved(self.lookup_dotted(key.mod, ann_name)):
                    if isinstance(ref, ClassRef):
                        refs.append(InstRef(ref.cls))
                    elif isinstance(ref, LazyRef):
                        refs.append(InstRef(ref.qual))
        return refs

"""What ``--fix`` asks about a module's names and nodes, in one walk of its tree.

The codemod decides each edit from four facts: a node's parent, which scope a call runs
in, which bindings of a name that scope sees, and where a call or a statement is. LibCST's
metadata providers answer all four, each with a visit of every node of the module
(whitespace and commas included): on vLLM 0.33.0's 3,000-line `rocm_aiter_mla.py` the
scopes, parents and positions took about 1.2 s, eight times the parse. Here one walk over
the fields that can hold code (``positions.content_fields``) records the parents, the
scopes and their bindings, and a rank in source order; positions come from Python's own
parser, paired with LibCST's statements (``positions.PositionIndex``), as the analysis
finds them.

The scopes follow LibCST's ``ScopeProvider`` (``tests/test_fix_scopes.py`` holds them to it
on real modules): the same bindings for a name (an import statement, an assigned name, a
parameter, a ``def`` or ``class``), recorded in the same scope (``global`` and ``nonlocal``
redirect them; a comprehension's targets stay in the comprehension), looked up the same
way (a class's names are not seen from the functions inside it; builtins last). Three
bindings LibCST does not record are recorded as Python's compiler makes them
(``tests/test_fix_scopes.py`` holds them to ``symtable``): a name deleted with ``del``, a
walrus target in a comprehension (bound in the function around it), and a ``case``
pattern's capture. Each makes the name local to its function: ``torch`` deleted, assigned
by a walrus or captured anywhere in a function is unbound at a call before that. A call's scope is the one its code runs in as LibCST gives it:
a decorator, a parameter's default and a comprehension's first iterable belong to the
scope around.
"""

from __future__ import annotations

import builtins
import unicodedata
import warnings
from dataclasses import dataclass, field

import libcst as cst

from zerolint.positions import (
    PositionIndex,
    Span,
    content_fields,
    exact_positions,
    index_of,
    is_node_type,
    statement_calls,
    statements_in_order,
)

MODULE, FUNCTION, CLASS, COMPREHENSION, ANNOTATION, BUILTIN = (
    "module",
    "function",
    "class",
    "comprehension",
    "annotation",
    "builtins",
)


@dataclass(eq=False, slots=True)
class Binding:
    """One binding of a name: ``node`` is the import statement, the assigned ``Name``, the
    ``Param``, the ``FunctionDef`` or ``ClassDef`` (None for a builtin)."""

    name: str
    scope: Scope
    node: cst.CSTNode | None
    is_import: bool = False


@dataclass(eq=False, slots=True)
class Scope:
    kind: str
    parent: Scope | None
    node: cst.CSTNode | None  # the Module, FunctionDef, Lambda, ClassDef or comprehension
    names: dict[str, list[Binding]] = field(default_factory=dict)
    # ``global``/``nonlocal`` names: the scope their bindings and lookups go to.
    overwrites: dict[str, Scope] = field(default_factory=dict)

    @property
    def module(self) -> Scope:
        scope = self
        while scope.kind != MODULE and scope.parent is not None:
            scope = scope.parent
        return scope

    def __getitem__(self, name: str) -> list[Binding]:
        """The bindings of ``name`` that code in this scope sees (all of them, wherever in
        the scope they are: whether one is bound yet at a call, the caller decides)."""
        return self._lookup(ident(name), self)

    def _lookup(self, name: str, start: Scope) -> list[Binding]:
        if self.kind == BUILTIN:
            return [Binding(name, self, None)] if hasattr(builtins, name) else []
        if name in self.overwrites:
            return self._visible_parent(start, self.overwrites[name])._lookup(name, start)
        found = self.names.get(name)
        if found:
            return found
        assert self.parent is not None
        return self._visible_parent(start, self.parent)._lookup(name, start)

    @staticmethod
    def _visible_parent(start: Scope, scope: Scope) -> Scope:
        # A class's names are seen from its body only (and from its type parameters').
        while scope.kind == CLASS and not (start.parent is scope and start.kind == ANNOTATION):
            assert scope.parent is not None
            scope = scope.parent
        return scope

    def bind(self, name: str, node: cst.CSTNode, *, is_import: bool = False) -> None:
        name = ident(name)
        target: Scope = self
        while name in target.overwrites:
            target = self._visible_parent(target, target.overwrites[name])
        target.names.setdefault(name, []).append(Binding(name, target, node, is_import))

    def declare(self, name: str, *, nonlocal_: bool) -> None:
        if self.kind == MODULE:
            return  # ``global x`` at the top level changes nothing
        assert self.parent is not None
        self.overwrites[ident(name)] = self.parent if nonlocal_ else self.module


def ident(name: str) -> str:
    """A name as Python reads it: ``ｔｏｒｃｈ`` (fullwidth letters) is ``torch`` (NFKC, as
    for every identifier); LibCST keeps the spelling, and the analysis's tree has Python's."""
    return name if name.isascii() else unicodedata.normalize("NFKC", name)


def running(scope: Scope) -> Scope:
    """The scope whose code runs a call in ``scope``: a comprehension runs where it is
    written, inside the function (or module) around it."""
    while scope.kind == COMPREHENSION and scope.parent is not None:
        scope = scope.parent
    return scope


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)
_TYPE_PARAMETERS = tuple(
    getattr(cst, name) for name in ("TypeVar", "TypeVarTuple", "ParamSpec") if hasattr(cst, name)
)
_TYPE_ALIAS = getattr(cst, "TypeAlias", None)
# Statements and expressions whose ``target`` is bound (``del`` too: it makes the name
# local to its function, as Python's compiler reads it), their other fields read.
_TARGET_FIRST = (cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.For, cst.Del)
# Patterns that capture: the field holding the name bound.
_CAPTURES: dict[type, str] = {cst.MatchAs: "name", cst.MatchStar: "name", cst.MatchMapping: "rest"}
_Entry = tuple[cst.CSTNode, "cst.CSTNode | None", "Scope", bool, "Scope | None"]


class ModuleFacts:
    """Parents, scopes and source order of one LibCST module, and its calls' positions."""

    def __init__(self, module: cst.Module, source: str, index: PositionIndex | None = None) -> None:
        """``module`` is LibCST's tree of ``source`` or ``cst_build``'s (which has no
        formatting: nothing here reads any); ``index``, where the caller has one, is where
        its statements and calls are."""
        self.module = module
        self.source = source
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self.rank: dict[cst.CSTNode, int] = {}  # each node's place in a walk in source order
        self.scopes: dict[cst.Call, Scope] = {}  # the scope each call runs in
        self.imports: list[cst.Import | cst.ImportFrom] = []
        builtin = Scope(BUILTIN, None, None)
        self.globals = Scope(MODULE, builtin, module)
        self.opened: list[Scope] = [self.globals]  # every scope, in the walk's order
        self._walk()
        self._index = index
        self._spans: list[tuple[Span, cst.CSTNode]] | None = None
        self._exact: dict[int, Span] | None = None

    # --- the walk ---------------------------------------------------------------------

    def _walk(self) -> None:
        parents, rank, scopes = self.parents, self.rank, self.scopes
        # (node, parent, scope, whether a Name here is assigned to, and for a
        # comprehension's first ``for`` the comprehension's scope)
        stack: list[_Entry] = [(self.module, None, self.globals, False, None)]
        while stack:
            node, parent, scope, store, inner = stack.pop()
            if parent is not None:
                parents[node] = parent
            rank[node] = len(rank)
            kind = type(node)
            if kind is cst.Name:
                if store:
                    scope.bind(node.value, node)  # type: ignore[attr-defined]
                continue
            if kind is cst.Call:
                scopes[node] = scope  # type: ignore[index]
            stack.extend(reversed(self._children(node, kind, scope, store, inner)))

    def _open(self, kind: str, parent: Scope, node: cst.CSTNode) -> Scope:
        scope = Scope(kind, parent, node)
        self.opened.append(scope)
        return scope

    def _children(
        self, node: cst.CSTNode, kind: type, scope: Scope, store: bool, inner: Scope | None
    ) -> list[_Entry]:
        """``node``'s children in source order, each with its scope and whether a name in
        it is assigned to; records the bindings and declarations ``node`` makes."""
        out: list[_Entry] = []

        def add(value: object, in_scope: Scope, assigned: bool = False) -> None:
            if type(value) is tuple or type(value) is list:
                for item in value:  # type: ignore[attr-defined]
                    if is_node_type(type(item)):
                        out.append((item, node, in_scope, assigned, None))
            elif is_node_type(type(value)):
                out.append((value, node, in_scope, assigned, None))  # type: ignore[arg-type]

        if kind is cst.FunctionDef or kind is cst.ClassDef:
            assert isinstance(node, (cst.FunctionDef, cst.ClassDef))
            scope.bind(node.name.value, node)
            outer = scope
            if node.type_parameters is not None:
                outer = self._open(ANNOTATION, scope, node)
            # A function's decorators run in its type parameters' scope, a class's outside.
            add(node.decorators, outer if kind is cst.FunctionDef else scope)
            add(node.name, scope)
            add(node.type_parameters, outer)
            if isinstance(node, cst.FunctionDef):
                body = self._open(FUNCTION, outer, node)
                add(node.params, body)
                add(node.returns, outer)
            else:
                body = self._open(CLASS, outer, node)
                add(node.bases, outer)
                add(node.keywords, outer)
            add(node.body, body)
        elif kind is cst.Lambda:
            assert isinstance(node, cst.Lambda)
            body = self._open(FUNCTION, scope, node)
            add(node.params, body)
            add(node.body, body)
        elif kind is cst.Param:
            assert isinstance(node, cst.Param)
            scope.bind(node.name.value, node)
            around = scope.parent if scope.parent is not None else scope
            add(node.name, scope)
            add(node.annotation, around)
            add(node.default, around)
        elif kind in _COMPREHENSIONS:
            own = self._open(COMPREHENSION, scope, node)
            for name in content_fields(kind):
                if name == "for_in":
                    # The first ``for``: its iterable runs in the scope around.
                    out.append((getattr(node, name), node, scope, False, own))
                else:
                    add(getattr(node, name), own)
        elif kind is cst.CompFor:
            assert isinstance(node, cst.CompFor)
            own = inner if inner is not None else scope
            add(node.target, own, True)
            add(node.iter, scope)
            add(node.ifs, own)
            add(node.inner_for_in, own)
        elif kind is cst.AssignTarget or kind is cst.AsName:
            for name in content_fields(kind):
                add(getattr(node, name), scope, name in ("target", "name"))
        elif kind in _TARGET_FIRST:
            # A walrus in a comprehension binds in the function around it (PEP 572).
            target = running(scope) if kind is cst.NamedExpr else scope
            for name in content_fields(kind):
                if name == "target":
                    add(node.target, target, True)  # type: ignore[attr-defined]
                else:
                    add(getattr(node, name), scope)
        elif kind in _CAPTURES:
            # A `case` pattern's capture names bind in the scope of the `match`.
            for name in content_fields(kind):
                add(getattr(node, name), scope, name == _CAPTURES[kind])
        elif kind is cst.Import or kind is cst.ImportFrom:
            assert isinstance(node, (cst.Import, cst.ImportFrom))
            self.imports.append(node)
            if not isinstance(node.names, cst.ImportStar):
                for alias in node.names:
                    named = alias.asname.name if alias.asname is not None else alias.name
                    for bound in _dotted_names(named):  # type: ignore[arg-type]
                        scope.bind(bound, node, is_import=True)
            # The names inside are not walked: the statement is the binding.
        elif kind is cst.Global or kind is cst.Nonlocal:
            for item in node.names:  # type: ignore[attr-defined]
                scope.declare(item.name.value, nonlocal_=kind is cst.Nonlocal)
        elif _TYPE_ALIAS is not None and kind is _TYPE_ALIAS:
            scope.bind(node.name.value, node)  # type: ignore[attr-defined]
            own = self._open(ANNOTATION, scope, node)
            add(node.name, scope)  # type: ignore[attr-defined]
            add(node.type_parameters, own)  # type: ignore[attr-defined]
            add(node.value, own)  # type: ignore[attr-defined]
        elif kind in _TYPE_PARAMETERS:
            scope.bind(node.name.value, node)  # type: ignore[attr-defined]
            for name in content_fields(kind):
                add(getattr(node, name), scope)
        else:
            # An attribute's or a subscript's own value is read, not assigned to.
            keep = store and kind is not cst.Attribute and kind is not cst.Subscript
            for name in content_fields(kind):
                add(getattr(node, name), scope, keep)
        return out

    def order(self, binding: Binding) -> int:
        """Where ``binding`` is in source order, to compare with a call's ``rank``: a
        ``def`` or ``class`` where its name is (after its decorators, as LibCST places it)."""
        node = binding.node
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            node = node.name
        return self.rank[node] if node is not None else -1

    # --- positions --------------------------------------------------------------------

    @property
    def index(self) -> PositionIndex:
        """Where statements and calls are (Python's parser, paired with LibCST's)."""
        if self._index is None:
            with warnings.catch_warnings():  # the user's code's warnings are not ours
                warnings.simplefilter("ignore")
                self._index = index_of(self.module, self.source)
        return self._index

    def statement_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The statement ``node`` is in (a small statement, or a compound one's header)."""
        found: cst.CSTNode | None = node
        while found is not None and not isinstance(
            found, (cst.BaseSmallStatement, cst.BaseCompoundStatement)
        ):
            found = self.parents.get(found)
        return found

    def statement_span(self, statement: cst.CSTNode) -> Span | None:
        return self.index.statement(statement)

    def statement_text(self, statement: cst.CSTNode) -> str:
        """The statement's source (a compound statement's with its body)."""
        index = self.index
        found = index.stmts.get(id(statement))
        if found is None:
            return self.module.code_for_node(statement)
        return index.source.cut(*index.source.span(found))

    def statement_lines(self, statement: cst.CSTNode) -> Span | None:
        """The statement's span, from its first decorator where it has any: a def's or a
        class's decorators, whose calls are its own, lie above its line."""
        return self.index.shown(statement)

    def calls_at(self, line: int, col: int) -> list[tuple[cst.Call, Span]]:
        """The calls that start at ``line``:``col`` (0-based), outermost first."""
        if self._spans is None:
            self._spans = []
            for statement in statements_in_order(self.module):
                span = self.statement_lines(statement)
                if span is not None:
                    self._spans.append((span, statement))
        found: list[tuple[cst.Call, Span]] = []
        for (first, _, last, _), statement in self._spans:
            if not first <= line <= last:
                continue
            for call in statement_calls(statement):
                where = self.index.placed_call(statement, call)
                if where is not None and where[:2] == (line, col):
                    found.append((call, where))
        return found

    def call_start(self, call: cst.Call, *, exact: bool = False) -> tuple[int, int] | None:
        """Where ``call`` starts (line, 0-based column); None where Python's parser and
        LibCST do not pair it (a call in a decorator, say), unless ``exact`` asks for
        LibCST's positions of the module then."""
        statement = self.statement_of(call)
        where = None if statement is None else self.index.placed_call(statement, call)
        if where is None and exact:
            if self._exact is None:
                self._exact = exact_positions(self.module)
            where = self._exact.get(id(call))
        return None if where is None else where[:2]


def _dotted_names(node: cst.BaseExpression) -> list[str]:
    """The names ``import a.b.c`` binds as LibCST records them: ``a.b.c``, ``a.b``, ``a``."""
    if isinstance(node, cst.Name):
        return [node.value]
    if isinstance(node, cst.Attribute) and isinstance(node.value, (cst.Name, cst.Attribute)):
        inner = _dotted_names(node.value)
        return [f"{inner[0]}.{node.attr.value}", *inner] if inner else []
    return []

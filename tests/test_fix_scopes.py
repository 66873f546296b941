"""``fix_scopes.ModuleFacts`` against LibCST's own metadata providers, on real modules.

``--fix`` decides each edit from a call's scope, the bindings of a name it sees, the
parents of nodes and where calls are. ``ModuleFacts`` works them out in one walk instead
of LibCST's ``ScopeProvider``, ``ParentNodeProvider`` and ``PositionProvider``; this file
holds it to them, fact by fact, on a module written to hold every kind of scope and
binding, on standard-library modules and on this project's own, and on vLLM's attention
backends (the files ``--fix`` edits in practice).
"""

from __future__ import annotations

import ast
import inspect
import symtable
import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import (
    BuiltinScope,
    ClassScope,
    ComprehensionScope,
    FunctionScope,
    GlobalScope,
    ImportAssignment,
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
    ScopeProvider,
)
from libcst.metadata.scope_provider import AnnotationScope

import zerolint
from zerolint.cst_build import build_module
from zerolint.fix import FixError, FixTarget, apply_fixes, carry_over, fixable_targets
from zerolint.fix_scopes import (
    ANNOTATION,
    BUILTIN,
    CLASS,
    COMPREHENSION,
    FUNCTION,
    MODULE,
    ModuleFacts,
    Scope,
)
from zerolint.positions import build_index, statement_calls

EVERY_SCOPE = textwrap.dedent(
    '''
    """Every kind of scope and binding --fix may meet."""
    from __future__ import annotations

    import os.path
    import torch as t, numpy
    from typing import TYPE_CHECKING
    from torch import clamp as c

    if TYPE_CHECKING:
        import torch
    else:
        torch = None

    counter = 0
    a, (b, *rest) = f(1), g(2)
    x: int = h(3)
    y: int
    counter += k(4)
    del y
    holder.attr, cells[index(1)] = f(5), 6


    def deco(fn):
        return fn


    @deco
    @deco2(lambda q=defaults(1): q)
    def outer(p, /, r=make(p0), *args, s: ann(5) = 6, **kw) -> ret(7):
        global counter
        counter = step(counter)
        v = 1

        def inner():
            nonlocal v
            v = bump(v)
            return [v for v in source(v) if pred(v)]

        class Local(base(v), metaclass=meta(v)):
            v = 2
            w = [v for _ in range(3)]

            def method(self, v=v):
                return v, use(w)

        with open(p) as (fa, fb), ctx() as fc:
            pass
        for i, (j, *ks) in pairs(r):
            call(i, j, ks)
        try:
            risky()
        except (ValueError, KeyError) as err:
            handle(err)
        if (n := size(p)) > 0:
            call(n)
        total = sum(m for m in items(p) for z in m if z)
        table = {key(e): val(e) for e in entries(p)}
        walrus = [(seen := f2(e)) for e in entries(p)]
        lam = lambda u, d=dflt(u0): work(u, d)
        match p:
            case [first, *others]:
                act(first, others)
            case {"k": value, **extra}:
                act(value, extra)
            case Point(x=px) as whole:
                act(px, whole)
            case _:
                pass
        return inner, Local, lam, seen, walrus, total, table


    class Shadow:
        torch = "not torch"

        def uses(self):
            return torch.clamp(size(self), min=1)

        items = [torch for torch in range(3)]


    def late():
        x = torch.clamp(a, min=1)
        import torch

        return x


    def with_global_import():
        global late_torch
        import torch as late_torch

        return late_torch


    def shadowed_global():
        counter = "local"

        def reads():
            global counter
            return use(counter)  # the module's, not the local one around

        return reads


    def python_binds_what_libcst_does_not(lens, items, subject):
        first = schedule(lens)
        del lens
        last = [(torch := wrap(m)) for m in items(first)]
        match subject:
            case {"k": captured, **others}:
                use(captured, others)
            case [*tail]:
                use(tail)
        return last


    def comprehension_in_default(z=[w for w in ws(1)]):
        return [q(v) for v in (yield_from(z))]
    '''
)

PY312 = textwrap.dedent(
    """
    type Alias[T] = list[T]


    class Box[T: bound(1)](Base[T]):
        def get[U](self, u: U) -> T:
            return conv(u)


    @deco(1)
    def generic[V](v: V) -> V:
        return id_(v)
    """
)

# Real modules: the standard library's and this project's (the fixes' own code).
STDLIB = ["argparse", "dataclasses", "functools", "inspect", "typing", "enum"]
OWN = ["fix.py", "fix_scopes.py", "check.py", "project.py"]


def corpus() -> list[tuple[str, str]]:
    out = [("every_scope", EVERY_SCOPE)]
    if sys.version_info >= (3, 12):
        out.append(("py312", PY312))
    for name in STDLIB:
        module = __import__(name)
        out.append((name, Path(inspect.getfile(module)).read_text()))
    own = Path(zerolint.__file__).parent
    out += [(name, (own / name).read_text()) for name in OWN]
    return out


def _kind(scope: object) -> str:
    for cls, kind in (
        (GlobalScope, MODULE),
        (BuiltinScope, BUILTIN),
        (ClassScope, CLASS),
        (ComprehensionScope, COMPREHENSION),
        (AnnotationScope, ANNOTATION),
        (FunctionScope, FUNCTION),
    ):
        if isinstance(scope, cls):
            return kind
    raise AssertionError(f"unknown scope {scope!r}")


def _scope_key(scope: object, module: cst.Module) -> tuple[str, int]:
    """A scope as (kind, id of the node that opens it), from either implementation."""
    if isinstance(scope, Scope):
        node = scope.node
        return scope.kind, id(node) if node is not None else 0
    kind = _kind(scope)
    if kind == MODULE:
        return kind, id(module)
    if kind == BUILTIN:
        return kind, 0
    return kind, id(scope.node)  # type: ignore[attr-defined]


def _binding_keys(found: object, module: cst.Module) -> set[tuple]:
    return {
        (
            id(getattr(b, "node", None)) if getattr(b, "node", None) is not None else 0,
            _scope_key(b.scope, module),  # type: ignore[attr-defined]
            isinstance(b, ImportAssignment) if not hasattr(b, "is_import") else b.is_import,
        )
        for b in found  # type: ignore[attr-defined]
    }


def _at(where: object) -> tuple[int, int]:
    start = where.start  # type: ignore[attr-defined]
    return start.line, start.column


class _PythonOnly(cst.CSTVisitor):
    """The names bound where Python's compiler binds them and LibCST's ScopeProvider
    records nothing: ``del``'s targets, a walrus target in a comprehension, a ``case``
    pattern's captures (``test_function_locals_are_pythons`` holds those to Python)."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.depth = 0

    def _targets(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.Name):
            self.names.add(node.value)
        elif isinstance(node, (cst.Tuple, cst.List)):
            for element in node.elements:
                self._targets(element.value)

    def visit_Del(self, node: cst.Del) -> None:
        self._targets(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        if self.depth:
            self._targets(node.target)

    def _enter(self, node: cst.CSTNode) -> None:
        self.depth += 1

    def _leave(self, node: cst.CSTNode) -> None:
        self.depth -= 1

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _enter
    leave_ListComp = leave_SetComp = leave_DictComp = leave_GeneratorExp = _leave

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        if node.name is not None:
            self.names.add(node.name.value)

    def visit_MatchStar(self, node: cst.MatchStar) -> None:
        if node.name is not None:
            self.names.add(node.name.value)

    def visit_MatchMapping(self, node: cst.MatchMapping) -> None:
        if node.rest is not None:
            self.names.add(node.rest.value)


def python_only_names(module: cst.Module) -> set[str]:
    visitor = _PythonOnly()
    module.visit(visitor)
    return visitor.names


def compare(source: str) -> dict[str, int]:
    """Compare every fact; return counts of what was compared (so a test can see that the
    comparison was not empty)."""
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    scopes = wrapper.resolve(ScopeProvider)
    parents = wrapper.resolve(ParentNodeProvider)
    positions = wrapper.resolve(PositionProvider)
    facts = ModuleFacts(module, source)
    counts = {"parents": 0, "calls": 0, "lookups": 0, "orders": 0, "positions": 0}

    for node, parent in facts.parents.items():
        assert parents[node] is parent, f"parent of {node!r}"
        counts["parents"] += 1

    theirs = {n: s for n, s in scopes.items() if isinstance(n, cst.Call) and s is not None}
    assert set(map(id, theirs)) == set(map(id, facts.scopes)), "calls with a scope"
    # Every name bound anywhere, and a few that are not: each call's view of each.
    names = {"torch", "t", "c", "len", "print", "no_such_name"}
    for scope in {s for s in scopes.values() if s is not None}:
        names |= {a.name for a in scope.assignments}
    for own in facts.scopes.values():  # and every name bound here, where LibCST binds none
        while own is not None:
            names |= set(own.names)
            own = own.parent
    # Where LibCST records no binding and Python does: compared with Python, below.
    names -= python_only_names(module)
    for call, their_scope in theirs.items():
        mine = facts.scopes[call]
        assert _scope_key(mine, module) == _scope_key(their_scope, module), (
            f"scope of the call at {positions[call].start}"
        )
        counts["calls"] += 1
        for name in names:
            want = _binding_keys(their_scope[name], module)
            got = _binding_keys(mine[name], module)
            assert got == want, f"`{name}` seen from the call at {positions[call].start}"
            counts["lookups"] += 1
            # Source order stands in for positions when a binding is compared with a call.
            for binding in mine[name]:
                node = binding.node
                if node is None or node not in positions:
                    continue
                after = _at(positions[node]) > _at(positions[call])
                assert (facts.order(binding) > facts.rank[call]) == after, (
                    f"`{name}` bound at {positions[node].start}, call at {positions[call].start}"
                )
                counts["orders"] += 1

    # Where a call is: the same start as LibCST's, wherever Python's parser pairs it.
    for call in theirs:
        where = positions[call]
        start = facts.call_start(call)
        if start is None:
            statement = call
            while not isinstance(statement, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                statement = parents[statement]
            assert not any(c is call for c in statement_calls(statement)), (
                f"the call at {where.start} is not placed"
            )
            continue
        assert start == (where.start.line, where.start.column)
        found = facts.calls_at(*start)
        assert any(c is call for c, _ in found), f"calls_at{start}"
        assert [c for c, _ in found] == sorted(
            (c for c, _ in found), key=lambda c: facts.rank[c]
        ), "outermost first"
        counts["positions"] += 1
    return counts


@pytest.mark.parametrize(("name", "source"), corpus(), ids=[n for n, _ in corpus()])
def test_module_facts_match_libcst(name: str, source: str) -> None:
    counts = compare(source)
    least = 3 if name == "py312" else 20  # the type-parameter module is short
    assert counts["calls"] > least and counts["lookups"] > 5 * least
    assert counts["orders"] > least // 2 and counts["positions"] > least // 2


def _function_locals(table: symtable.SymbolTable) -> dict[tuple[str, int], set[str]]:
    """Python's own answer: each function's local names, by (name, line of its ``def``)."""
    found: dict[tuple[str, int], set[str]] = {}
    for child in table.get_children():
        if str(getattr(child.get_type(), "value", child.get_type())) == "function":
            locals_ = {s.get_name() for s in child.get_symbols() if s.is_local()}
            found[(child.get_name(), child.get_lineno())] = locals_
        found.update(_function_locals(child))
    return found


@pytest.mark.parametrize(("name", "source"), corpus(), ids=[n for n, _ in corpus()])
def test_function_locals_are_pythons(name: str, source: str) -> None:
    """Every ``def``'s own bindings are the names Python's compiler makes local to it
    (``symtable``): ``del``, a walrus in a comprehension and a ``case`` capture included,
    which LibCST leaves out. A comprehension's own targets are left out on both sides
    (Python 3.12 inlines comprehensions into the function)."""
    module = cst.parse_module(source)
    facts = ModuleFacts(module, source)
    python = _function_locals(symtable.symtable(source, name, "exec"))
    compared = 0
    for scope in facts.opened:
        node = scope.node
        if scope.kind != FUNCTION or not isinstance(node, cst.FunctionDef):
            continue
        if node.type_parameters is not None:
            continue  # its own annotation scope in Python's table
        span = facts.statement_span(node)
        assert span is not None
        theirs = python[(node.name.value, span[0])]
        comprehensions = {
            n
            for inner in facts.opened
            if inner.kind == COMPREHENSION and _inside(inner, scope)
            for n in inner.names
        }
        mine = {n for n in scope.names if "." not in n} - comprehensions
        assert mine == theirs - comprehensions, f"{node.name.value} at line {span[0]}"
        compared += 1
    assert compared >= (0 if name == "py312" else 5)  # its functions all have type parameters


def _inside(scope: Scope, function: Scope) -> bool:
    """Whether ``scope`` is a comprehension whose code runs in ``function``."""
    while scope.kind == COMPREHENSION and scope.parent is not None:
        scope = scope.parent
    return scope is function


@pytest.mark.parametrize(
    "later",
    [
        "    del torch\n",
        "    seen = [(torch := m) for m in range(2)]\n",
        "    match out:\n        case [torch]:\n            pass\n",
    ],
    ids=["del", "walrus", "capture"],
)
def test_torch_made_local_below_the_call_is_refused(later: str) -> None:
    """Python makes `torch` local to the function, so it is unbound at the call above: a
    clamp there would raise UnboundLocalError (the module's `import torch` is not seen)."""
    source = (
        "import torch\nfrom deep_gemm import get_paged_mqa_logits_metadata\n\n\n"
        "def build(seq_lens, num_sms):\n"
        "    out = get_paged_mqa_logits_metadata(seq_lens // 4, 64, num_sms)\n"
        + later
        + "    return out\n"
    )
    fixed = apply_fixes(source, [FixTarget(6, 10, 0)])
    assert fixed.applied == ()
    assert fixed.skipped[0][1] == "`torch` is bound in this function only after the call"


def test_every_scope_source_reaches_the_cases_it_was_written_for() -> None:
    """The crafted module's tricky spots are compared, not silently left out: a call in a
    decorator, a default, a comprehension's first iterable and a class body each has the
    scope Python runs it in."""
    module = cst.parse_module(EVERY_SCOPE)
    facts = ModuleFacts(module, EVERY_SCOPE)

    def scope_of(callee: str) -> Scope:
        for call, scope in facts.scopes.items():
            if isinstance(call.func, cst.Name) and call.func.value == callee:
                return scope
        raise AssertionError(callee)

    assert scope_of("deco2").kind == MODULE  # a decorator: the scope around
    assert scope_of("make").kind == MODULE  # a default
    assert scope_of("defaults").kind == MODULE  # a lambda's default, inside a decorator
    assert scope_of("source").kind == FUNCTION  # a comprehension's first iterable
    assert scope_of("pred").kind == COMPREHENSION
    assert scope_of("base").kind == FUNCTION  # a class's bases
    assert scope_of("use").kind == FUNCTION  # a method's body
    uses = scope_of("size")  # in Shadow.uses: the class's `torch` is not seen
    assert [b.node for b in uses["torch"]] != [] and all(
        b.scope.kind == MODULE for b in uses["torch"]
    )
    # `global counter` sends the assignment to the module's bindings.
    step = scope_of("step")
    assert {b.scope.kind for b in step["counter"]} == {MODULE}
    assert len(step["counter"]) == 3  # counter = 0, counter += ..., and the global one


@pytest.mark.network
def test_module_facts_match_libcst_on_vllm_attention_backends() -> None:
    from devtools.wheels import vllm_tree

    backends = vllm_tree("0.27.1") / "vllm/v1/attention/backends/mla"
    files = sorted(backends.glob("*.py"))
    assert len(files) > 5
    for path in files[:8]:
        compare(path.read_text())


def plan_on_both_trees(source: str) -> tuple[list[FixTarget], list[FixTarget], int]:
    """Every call with an argument as a fix target: what ``--fix`` would clamp, planned on
    LibCST's tree and on the analysis's (``cst_build``'s), and how many targets there
    were."""
    parsed = cst.parse_module(source)
    facts = ModuleFacts(parsed, source)
    targets = []
    for n, call in enumerate(sorted(facts.scopes, key=facts.rank.__getitem__)):
        start = facts.call_start(call)
        if start is None or not call.args:
            continue
        func = call.func
        name = func.value if isinstance(func, cst.Name) else None
        if isinstance(func, cst.Attribute):
            name = func.attr.value
        # The callee as the sink or another function, the first argument or the second.
        sink = (None, name, name, "get_paged_mqa_logits_metadata")[n % 4]
        targets.append(FixTarget(start[0], start[1], int(n % 4 == 2), sink=sink))
    tree = ast.parse(source)
    # Where cst_build does not build a file (a `match` statement inside a function), the
    # analysis parses it with LibCST: a second parse, no tree of its own.
    built = build_module(source, tree) or cst.parse_module(source)
    index = build_index(built, tree, source)
    on_parsed = fixable_targets(parsed, source, targets)
    on_built = fixable_targets(built, source, targets, index)
    return on_parsed, on_built, len(targets)


# Python reads identifiers in NFKC: LibCST's tree keeps `ｔｏｒｃｈ`, the analysis's says
# `torch` (the plans must agree all the same).
FULLWIDTH = """\
import torch
from deep_gemm import get_paged_mqa_logits_metadata as ｇｅｔ


def hidden(lens, ｔｏｒｃｈ=None):
    return ｇｅｔ(lens // 4, 64, 132)


def seen(lens):
    return get_paged_mqa_logits_metadata(ｌｅｎｓ := lens // 4, 64, 132), ｌｅｎｓ
"""


@pytest.mark.parametrize(
    ("name", "source"),
    [*corpus(), ("fullwidth", FULLWIDTH)],
    ids=[*(n for n, _ in corpus()), "fullwidth"],
)
def test_a_plan_is_the_same_on_the_analysis_tree(name: str, source: str) -> None:
    """``Engine.mark_fixable`` plans on the tree the analysis built, ``--fix`` on LibCST's:
    ``[*]`` promises what ``--fix`` does only if the two plans agree."""
    on_parsed, on_built, total = plan_on_both_trees(source)
    assert on_parsed == on_built
    assert 0 < len(on_parsed) < total  # some clamped, some refused: both were decided


def test_a_module_python_cannot_read_is_placed_by_libcst() -> None:
    """LibCST reads `type` statements on any Python; Python before 3.12 does not. Then
    nothing pairs, and the calls are placed by LibCST's own positions: the fix is the same."""
    source = (
        "import torch\nfrom deep_gemm import get_paged_mqa_logits_metadata\n\n"
        "type Lens = list[int]\n\n\n"
        "def build(seq_lens, num_sms):\n"
        "    return get_paged_mqa_logits_metadata(seq_lens // 4, 64, num_sms)\n"
    )
    target = FixTarget(8, 11, 0, sink="get_paged_mqa_logits_metadata")
    fixed = apply_fixes(source, [target])
    assert fixed.applied == (target,)
    assert "metadata(torch.clamp(seq_lens // 4, min=1), 64" in fixed.fixed
    assert fixed.fixed_calls() == ((8, 11),)
    facts = ModuleFacts(cst.parse_module(source), source)
    assert (facts.index.exact is not None) == (sys.version_info < (3, 12))


@pytest.mark.parametrize(
    "tail",
    [
        "# a Windows folder: C:\\tmp\\\n",  # a backslash ends the last line
        "x = 1\r",  # a lone carriage return ends it
        "\x0cdef later():\n    pass\n",  # a form feed before a statement
        "try:\n    pass\nexcept ValueError :\n    pass\n",  # a space before except's colon
        "BUILDERS = [build]\n\n    # BUILDERS.append(other)\n",  # an indented comment last
    ],
)
def test_what_libcst_does_not_write_back_is_kept_and_the_call_fixed(tail: str) -> None:
    """LibCST writes these lines otherwise than it reads them: the fix is made in the
    file's own text, which keeps them, and the plan on the analysis's tree agrees."""
    head = "import torch\nfrom deep_gemm import get_paged_mqa_logits_metadata\n\n\n"
    call = "    return get_paged_mqa_logits_metadata(seq_lens // 4, 64, num_sms)\n"
    source = head + "def build(seq_lens, num_sms):\n" + call + tail
    assert cst.parse_module(source).code != source
    target = FixTarget(6, 11, 0)
    fixed = apply_fixes(source, [target])
    assert fixed.applied == (target,)
    clamped = call.replace("(seq_lens // 4,", "(torch.clamp(seq_lens // 4, min=1),")
    assert fixed.fixed == source.replace(call, clamped)
    assert fixed.fixed_calls() == ((6, 11),)
    tree = ast.parse(source)
    built = build_module(source, tree)
    assert built is not None
    index = build_index(built, tree, source)
    assert fixable_targets(built, source, [target], index) == [target]


def test_an_edit_is_made_in_the_files_own_lines_or_refused() -> None:
    """``carry_over``: where LibCST writes a line otherwise (here the first, which loses
    its space), an edit elsewhere keeps it, an edit of it is refused, and lines the edit
    adds go in beside the file's own."""
    source = "a = 1 \nb = f(x)\n"
    rendered = "a = 1\nb = f(x)\n"
    assert carry_over(source, rendered, "a = 1\nb = f(g(x))\n") == "a = 1 \nb = f(g(x))\n"
    assert carry_over(source, rendered, "a = 1\nimport g\nb = f(x)\n") == (
        "a = 1 \nimport g\nb = f(x)\n"
    )
    with pytest.raises(FixError, match="LibCST writes the lines the fix changes otherwise"):
        carry_over(source, rendered, "a = 2\nb = f(x)\n")
    # Two lines edited, the second of which LibCST writes otherwise (its spaces lost).
    source, rendered = "x = f(a,\n      b)  \nz = 1\n", "x = f(a,\n      b)\nz = 1\n"
    assert carry_over(source, rendered, "x = f(g(a),\n      b)\nz = 1\n") == (
        "x = f(g(a),\n      b)  \nz = 1\n"
    )
    with pytest.raises(FixError, match="LibCST writes the lines the fix changes otherwise"):
        carry_over(source, rendered, "x = f(g(a),\n      g(b))\nz = 1\n")
    # A lone carriage return ending the file, which LibCST drops, stays on the line edited.
    assert carry_over("a\rb = f(x)\r", "a\rb = f(x)", "a\rb = f(g(x))") == "a\rb = f(g(x))\r"

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
from zerolint.fix import FixTarget, fixable_targets
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
    assert counts["calls"] > 20 and counts["lookups"] > 100 and counts["orders"] > 10
    assert counts["positions"] > 20


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

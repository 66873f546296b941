"""``Trace.extend`` is ``Trace(origin, head.steps + steps)``, computed from the head.
Resolving puts a callee's resolved paths in front of each use of them; ``extend`` folds
the hash on from the head's and takes its ``live`` flag instead of walking every step
again. The traces it makes must be the traces the constructor makes: equal, with the same
hash (sets and dicts of traces rely on it) and the same ``live`` (which traces are kept
when there are too many, and which paths are judged).
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from zerolint.dataflow.frames import FuncKey
from zerolint.dataflow.values import ParamOrigin, RawStep, Trace
from zerolint.model import Op, OpKind
from zerolint.project import ModuleInfo, Project

SOURCE = """\
def build(seq_lens, ratio):
    lens = seq_lens // ratio
    lens = lens.clamp(min=1)
    out = lens >> 1
    return out
"""
ROLES = ("flow", "source", "return", "sink")
OPS = (
    Op(OpKind.IDENTITY),
    Op(OpKind.FLOORDIV, "ratio"),
    Op(OpKind.CLAMP_MIN, 1),
    Op(OpKind.RSHIFT, 1),
    Op(OpKind.ADD, -1),
    Op(OpKind.FILL_ZERO),
)


def _module() -> ModuleInfo:
    path = Path("builder.py").absolute()  # never read: the project holds the text
    project = Project([path])
    project.set_text(path, SOURCE)
    mod = project.module_at(path)
    assert mod is not None
    return mod


MOD = _module()
FUNC = MOD.module.body[0]
STEPS = [
    RawStep(MOD, stmt, None, role, op)
    for stmt in FUNC.body.body  # type: ignore[attr-defined]
    for role in ROLES
    for op in OPS
]
ORIGINS = (None, ParamOrigin(FuncKey(MOD, FUNC), "seq_lens"))  # type: ignore[arg-type]
step_lists = st.lists(st.sampled_from(STEPS), max_size=6).map(tuple)


@settings(max_examples=300, deadline=None)
@given(step_lists, step_lists, st.sampled_from(ORIGINS), st.sampled_from(ORIGINS), st.booleans())
def test_extend_makes_the_trace_the_constructor_makes(
    head_steps: tuple[RawStep, ...],
    more: tuple[RawStep, ...],
    head_origin: object,
    origin: object,
    grown: bool,
) -> None:
    head = Trace(head_origin, head_steps)  # type: ignore[arg-type]
    if grown:  # a head made step by step with then(), as the interpretation makes them
        head = Trace(head_origin, ())  # type: ignore[arg-type]
        for step in head_steps:
            head = head.then(step)
    made = head.extend(origin, more)  # type: ignore[arg-type]
    whole = Trace(origin, head.steps + more)  # type: ignore[arg-type]
    assert made == whole
    assert hash(made) == hash(whole)
    assert made.live == whole.live
    assert made.steps == whole.steps and made.origin is whole.origin

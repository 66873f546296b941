"""The torch / numpy knowledge is one table of signatures, bound as Python binds a call.

Each row maps a name to an effect from a closed set; a rule's declared names join the
table with the effect of their key; a name in no row stays opaque.
"""

from __future__ import annotations

import libcst as cst
import pytest

from zerolint.dataflow.signatures import (
    TRUNCATION_FUNCTIONS,
    TRUNCATION_METHODS,
    LibEffect,
    Signature,
    bind,
    library_for,
)
from zerolint.dataflow.values import EMPTY
from zerolint.rules import BUILT_IN_FORMS, rule_by_code


def args_of(call: str) -> list[tuple[cst.Arg, object]]:
    node = cst.parse_expression(call)
    assert isinstance(node, cst.Call)
    return [(a, EMPTY) for a in node.args]


def bound_text(call: str, params: tuple[str, ...], keywords: tuple[str, ...] = ()) -> dict:
    out = bind(args_of(call), params, keywords)
    return {name: cst.Module([]).code_for_node(arg.value) for name, (arg, _) in out.items()}


@pytest.mark.parametrize(
    ("call", "params", "keywords", "expected"),
    [
        ("f(x, 1, 8)", ("input", "min", "max"), (), {"input": "x", "min": "1", "max": "8"}),
        ("f(x, max=8)", ("input", "min", "max"), (), {"input": "x", "max": "8"}),
        ("f(input=x, min=1)", ("input", "min", "max"), (), {"input": "x", "min": "1"}),
        ("f(x, 4, 'floor')", ("input", "other"), ("rounding_mode",), {"input": "x", "other": "4"}),
        (
            "f(x, 4, rounding_mode='floor')",
            ("input", "other"),
            ("rounding_mode",),
            {"input": "x", "other": "4", "rounding_mode": "'floor'"},
        ),
        ("f(*xs, other=4)", ("input", "other"), (), {"other": "4"}),
        ("f(x, bogus=1)", ("input",), (), {"input": "x"}),
    ],
)
def test_bind_is_python_binding(call: str, params, keywords, expected: dict) -> None:
    assert bound_text(call, params, keywords) == expected


def test_the_shipped_rule_names_rows_of_the_vocabulary() -> None:
    """Every name ZL001 lists is a row of the table with the effect of its key (no name of
    the shipped rule needs the rule to teach the analysis what it does)."""
    rule = rule_by_code("ZL001")
    assert rule is not None
    bare = library_for({})
    effects = {
        "floor_division": LibEffect.FLOOR_DIVISION,
        "floor_division_methods": LibEffect.FLOOR_DIVISION,
        "zero_alloc": LibEffect.ZERO_FILL,
        "zero_alloc_methods": LibEffect.ZERO_FILL,
        "full": LibEffect.FILL,
        "full_methods": LibEffect.FILL,
        "clamp": LibEffect.CLAMP,
        "clamp_methods": LibEffect.CLAMP,
        "ceil_division": LibEffect.CEIL_DIVISION,
    }
    builtin = BUILT_IN_FORMS  # "//", ">>", "[0]": forms the analysis names itself
    # Truncations are floor divisions only of a true division: rows of their own.
    truncations = {
        "floor_division": TRUNCATION_FUNCTIONS,
        "floor_division_methods": TRUNCATION_METHODS,
    }
    for key, effect in effects.items():
        table = bare.methods if key.endswith("_methods") else bare.functions
        for name in rule.sources.get(key, rule.sanitizers.get(key, ())):
            if name in builtin:
                continue
            sig = bare.function(name) if table is bare.functions else table.get(name)
            expected = LibEffect.TRUNCATION if name in truncations.get(key, ()) else effect
            assert sig is not None and sig.effect is expected, (key, name)


def test_a_truncation_a_rule_lists_as_a_floor_division_keeps_its_row() -> None:
    """`(a / b).to(torch.int32)` is a floor division, `x.to(device)` a view: a rule listing
    `to` among its floor divisions must not turn every `.to()` into one."""
    library = library_for(
        {"floor_division_methods": ["to", "int"], "floor_division": ["torch.floor", "mylib.fdiv"]}
    )
    assert library.methods["to"].effect is LibEffect.TRUNCATION
    assert library.methods["int"].effect is LibEffect.TRUNCATION
    assert library.function("torch.floor").effect is LibEffect.TRUNCATION
    assert library.function("mylib.fdiv").effect is LibEffect.FLOOR_DIVISION


def test_a_rules_declared_names_join_the_table_with_their_keys_effect() -> None:
    library = library_for(
        {"zero_alloc": ["mylib.zeros"], "at_least_one": ["mylib.ensure", "torch.clamp"]}
    )
    assert library.function("mylib.zeros") == Signature(LibEffect.ZERO_FILL)
    assert library.function("mylib.ensure").effect is LibEffect.AT_LEAST_ONE
    # A function whose result is >= 1 whatever it is given wins over its row.
    assert library.function("torch.clamp").effect is LibEffect.AT_LEAST_ONE
    assert library.function("vllm.utils.cdiv").effect is LibEffect.CEIL_DIVISION
    assert library.function("mylib.unknown") is None
    assert library.methods["clamp_"].params == ("min", "max")

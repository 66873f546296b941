"""Rules as data: each rule is a TOML declaration (plus Markdown docs) validated on load.

A rule pairs sinks (functions and the argument that carries the lengths) with the
sources that make lengths zero-able, the sanitizers that make them safe again, a hazard
predicate (``zerolint/hazards.py``) and its wording: the analysis and the judge know no
rule. Sources and sanitizers are scoped to their rule: a source of one rule never reaches
another rule's sink. Shipped rules live in ``rules/``; a project adds its own with
``rule-files`` in ``[tool.zerolint]`` (docs/architecture.md, "How to add a rule").

Every key is checked: an unknown key or a value of the wrong type is a ``RuleError`` whose
message is one line naming the file and the key.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from zerolint.hazards import Predicate, PredicateError, predicate_from_table
from zerolint.paths import rules_dir

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


class RuleError(ValueError):
    """A rule declaration that cannot be used: one line naming the file and the key."""


# The vocabulary a rule's [sources] and [sanitizers] may use: each key is a kind of effect
# the analysis recognizes (docs/architecture.md). Names are qualified functions, method
# names (the *_methods keys), or the built-in forms the analysis gives a name of its own:
# "//" and ">>" (operators and their augmented forms), the truncations "int" /
# "math.floor" / "torch.floor" ... around a true division and the methods "int" / "to" ...
# called on one (signatures.TRUNCATION_FUNCTIONS, TRUNCATION_METHODS), "[]=" (a subscript
# assignment of 0), "zero_" and "fill_" (in-place fills with 0), "where" / "masked_fill" /
# "masked_fill_" / "torch.where" / "[]=" (masks that set zero rows to a constant >= 1).
SOURCE_KEYS = frozenset(
    {
        "floor_division",
        "floor_division_methods",
        "zero_alloc",
        "zero_alloc_methods",
        "full",
        "full_methods",
        "zero_fill",
        "zero_fill_methods",
        "mask_zero",
        "mask_zero_methods",
        "subtraction",
        # Values that can have no rows: "[:]" (x[:n], x[a:b]), "[mask]" (a comparison as
        # the index), torch.empty((0, ...)) and index_select (function or method).
        "empty_rows",
        "empty_rows_methods",
    }
)
SANITIZER_KEYS = frozenset(
    {
        "clamp",
        "clamp_methods",
        "ceil_division",
        "at_least_one",
        "mask",
        # After the sink call, in the same function, the rows of the call's declared
        # `outputs` whose length is 0 are set to a constant (or the output is discarded):
        # "[]=" (out[lens == 0] = c), "masked_fill" / "masked_fill_", "torch.where", "where".
        # The check is zerolint/dataflow/outputs.py; docs/architecture.md says what counts.
        "output_mask",
    }
)
OUTPUT_MASK_FORMS = frozenset({"[]=", "masked_fill", "masked_fill_", "torch.where", "where"})
# The names above that are not Python names ("*" is `x * mask`, "-" is `a - b`, "+" is
# `x + k` of a negative k), by the key each is recognized under (the effect the analysis
# names it by; under any other key it would match nothing): every other name in [sources]
# and [sanitizers] is a dotted identifier.
FORMS_BY_KEY: dict[str, frozenset[str]] = {
    "floor_division": frozenset({"//", ">>"}),
    "zero_fill": frozenset({"[]=", "[n:]="}),
    "zero_alloc": frozenset({"[0]"}),  # torch.tensor([0] * n), a list of zeros made a tensor
    "mask_zero": frozenset({"*"}),
    "subtraction": frozenset({"-", "+"}),
    "empty_rows": frozenset({"[:]", "[mask]"}),
    "mask": frozenset({"[]="}),
    "output_mask": frozenset({"[]="}),
}
BUILT_IN_FORMS = frozenset().union(*FORMS_BY_KEY.values())
OUTPUT_FILLS = frozenset({"finite", "-inf"})
OPTION_KEYS: dict[str, Callable[[Any], bool]] = {
    # Values a divisor symbol may take (default: any >= 2).
    "compress-ratios": lambda v: (
        isinstance(v, list)
        and all(isinstance(r, int) and not isinstance(r, bool) and r >= 1 for r in v)
    ),
    # Values a witness shows for a symbol of this short name when the fault allows them.
    "witness-hints": lambda v: (
        isinstance(v, dict)
        and all(
            isinstance(k, str) and isinstance(x, int) and not isinstance(x, bool)
            for k, x in v.items()
        )
    ),
}
# Facts about the program's symbols, "a >= b" by short name (vLLM: a step has at least as
# many decode tokens as decode requests); the judge assumes them where both appear.
OPTION_KEYS["facts"] = lambda v: (
    isinstance(v, list)
    and all(
        isinstance(f, str) and len(f.split()) == 3 and f.split()[1] in (">=", ">", "<=", "<", "==")
        for f in v
    )
)
OPTION_TYPES = {
    "facts": 'a list of "a >= b" strings',
    "compress-ratios": "a list of integers >= 1",
    "witness-hints": "a table of integers",
}


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """One output of a sink whose rows a zero length spoils: an argument the kernel writes
    into (``position`` / ``keyword``) or an element of its result (``result``: the index in
    the returned tuple, -1 for the whole result); ``fill`` is what a masked row must hold:
    "finite" (any finite constant: 0 is an empty attention row's output) or "-inf" (an
    empty row's log-sum-exp, what a merge of partial results expects)."""

    position: int | None = None
    keyword: str | None = None
    result: int | None = None
    fill: str = "finite"

    def text(self) -> str:
        if self.result is not None:
            return "the result" if self.result < 0 else f"result {self.result}"
        return f"`{self.keyword}`" if self.keyword else f"argument {self.position}"


@dataclass(frozen=True, slots=True)
class SinkSpec:
    """A kernel function and the argument that carries the lengths, for one rule."""

    function: str
    modules: tuple[str, ...] = ()
    position: int | None = 0
    keyword: str | None = None
    guarded: tuple[str, ...] = ()
    """Modules whose function of this name clamps its own input: calling it is no sink."""
    rule: str = ""
    """The code of the rule this sink belongs to."""
    sanitizers: tuple[str, ...] | None = None
    """The sanitizer keys that count at this sink (None: every one of its rule's)."""
    predicate: Predicate | None = None
    """This sink's hazard, when it differs from its rule's."""
    fixed_in: tuple[str, ...] = ()
    """Kernel versions that no longer fault (documentation)."""
    outputs: tuple[OutputSpec, ...] = ()
    """The outputs an ``output_mask`` sanitizer must mask (every one of them)."""
    modules_only: bool = False
    """A sink only when reached through ``modules`` (an import, a qualified name, a wrapper
    of it), never by its bare name alone (a parameter, a field, an unseen module's
    function of that name): for names other libraries give their own kernels."""
    measured: tuple[tuple[str, str], ...] = ()
    """(build, probe kernel): the zero-length probe's measurements of this sink's kernel
    (``kernels[].name`` in docs/probe-report.json) that back its predicate, by build."""

    def qualnames(self) -> tuple[str, ...]:
        return tuple(f"{m}.{self.function}" for m in self.modules)

    def guarded_qualnames(self) -> tuple[str, ...]:
        return tuple(f"{m}.{self.function}" for m in self.guarded)

    def argument_text(self) -> str:
        return f"`{self.keyword}`" if self.keyword else f"argument {self.position}"


@dataclass(frozen=True, slots=True)
class Example:
    code: str
    valid: bool


@dataclass(frozen=True, slots=True)
class Rule:
    code: str
    name: str
    summary: str
    message: str
    fix: str
    kernel: str
    sinks: tuple[SinkSpec, ...]
    predicate: Predicate
    sources: dict[str, tuple[str, ...]] = field(default_factory=dict)
    sanitizers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    examples: tuple[Example, ...] = ()
    doc: str = ""
    fixed_in: tuple[str, ...] = ()
    path: Path | None = None
    # Whether a run with no `select` applies it; an opt-in rule (false) runs only when a
    # selector names it (its code, a prefix, or ALL), as Ruff ships its preview rules.
    default: bool = True
    # Whether paths into its sinks are followed into modules the run has not parsed (true:
    # ZL001's precision) or only through those it parses anyway (false: cheaper; the
    # row-count rules always work so).
    parse_more: bool = True

    def names(self, table: str, key: str) -> frozenset[str]:
        group = self.sources if table == "sources" else self.sanitizers
        return frozenset(group.get(key, ()))

    def is_source(self, effect: tuple[str, str] | None) -> bool:
        """Whether a step with this effect (key, name) starts zero-able lengths here."""
        return effect is not None and effect[1] in self.sources.get(effect[0], ())

    def counts_sanitizer(self, effect: tuple[str, str] | None, spec: SinkSpec) -> bool:
        """Whether a sanitizer step with this effect makes lengths safe at ``spec``."""
        if effect is None:
            return False
        key, name = effect
        if spec.sanitizers is not None and key not in spec.sanitizers:
            return False
        return name in self.sanitizers.get(key, ())

    def predicate_for(self, spec: SinkSpec) -> Predicate:
        return spec.predicate or self.predicate

    def output_mask_forms(self, spec: SinkSpec) -> frozenset[str]:
        """The output-mask forms that count at ``spec`` (none: it accepts no output mask)."""
        if spec.sanitizers is not None and "output_mask" not in spec.sanitizers:
            return frozenset()
        return frozenset(self.sanitizers.get("output_mask", ())) if spec.outputs else frozenset()


# ---------------------------------------------------------------- validation


class _Table:
    """One TOML table being read: every key taken is checked, the rest are unknown."""

    def __init__(self, data: Mapping[str, Any], where: str, origin: str) -> None:
        self.data, self.where, self.origin = data, where, origin
        self.taken: set[str] = set()

    def fail(self, key: str, problem: str) -> RuleError:
        name = f"{self.where}.{key}" if self.where else key
        return RuleError(f"{self.origin}: {name}: {problem}")

    def get(self, key: str, check: Callable[[Any], bool], what: str, default: Any = None) -> Any:
        self.taken.add(key)
        if key not in self.data:
            return default
        value = self.data[key]
        if not check(value):
            raise self.fail(key, f"must be {what}")
        return value

    def required(self, key: str, check: Callable[[Any], bool], what: str) -> Any:
        if key not in self.data:
            raise self.fail(key, "is required")
        return self.get(key, check, what)

    def done(self) -> None:
        unknown = sorted(set(self.data) - self.taken)
        if unknown:
            raise self.fail(unknown[0], "unknown key")


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_strs(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def is_dotted(v: Any) -> bool:
    """A Python name, or names joined by dots: ``plan``, ``mylib.ops.plan``."""
    return isinstance(v, str) and all(part.isidentifier() for part in v.split("."))


def _is_dotted_or_list(v: Any) -> bool:
    return is_dotted(v) or (isinstance(v, list) and all(map(is_dotted, v)))


def _is_effect_names(v: Any) -> bool:
    return isinstance(v, list) and all(x in BUILT_IN_FORMS or is_dotted(x) for x in v)


def _is_table(v: Any) -> bool:
    return isinstance(v, dict)


def _is_index(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _strs(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def _predicate(table: _Table, key: str, value: Any) -> Predicate:
    if isinstance(value, str):
        value = {"kind": value}
    try:
        return predicate_from_table(value)
    except PredicateError as exc:
        sub, _, problem = str(exc).partition(": ")
        raise table.fail(f"{key}.{sub}", problem) from None


def sink_from_table(
    data: Mapping[str, Any],
    *,
    rule: str = "",
    origin: str = "",
    where: str = "sinks",
    extra: frozenset[str] = frozenset(),
    sanitizer_keys: frozenset[str] | None = None,
) -> SinkSpec:
    """A SinkSpec from a TOML table (a rule file's ``[[sinks]]`` or ``extra-sinks``).

    ``extra`` names keys the caller reads itself; anything else unknown is a RuleError.
    """
    t = _Table(data, where, origin)
    t.taken |= extra
    dotted = "a dotted name such as `mylib.ops.plan`"
    function = t.get("function", is_dotted, dotted) or t.get("name", is_dotted, dotted)
    if not function:
        raise t.fail("function", "is required (the sink function's name)")
    module_names = "a dotted module name or a list of them"
    modules = _strs(t.get("modules", _is_dotted_or_list, module_names))
    modules += _strs(t.get("module", _is_dotted_or_list, "a dotted module name"))
    guarded = _strs(t.get("guarded", _is_dotted_or_list, module_names))
    keyword = t.get("keyword", _is_str, "a string")
    position = t.get("position", _is_index, "an integer >= 0", 0 if keyword is None else None)
    sanitizers = t.get("sanitizers", _is_strs, "a list of sanitizer keys")
    if sanitizers is not None and sanitizer_keys is not None:
        for key in sanitizers:
            if key not in sanitizer_keys:
                raise t.fail("sanitizers", f"{key!r} is not a sanitizer key of the rule")
    raw_predicate = t.get("predicate", lambda v: _is_str(v) or _is_table(v), "a predicate")
    predicate = None if raw_predicate is None else _predicate(t, "predicate", raw_predicate)
    fixed_in = _strs(t.get("fixed-in", _is_strs, "a list of versions"))
    outputs = tuple(
        _output(o, origin, f"{where}.outputs[{i}]")
        for i, o in enumerate(
            t.get(
                "outputs",
                lambda v: isinstance(v, list) and all(map(_is_table, v)),
                "an array of tables",
                [],
            )
        )
    )
    modules_only = t.get("modules-only", lambda v: isinstance(v, bool), "true or false", False)
    measured = t.get(
        "measured",
        lambda v: _is_table(v) and all(map(_is_str, v.values())),
        "a table of build = probe kernel name",
        {},
    )
    t.done()
    return SinkSpec(
        function=function.rsplit(".", 1)[-1],
        modules=modules + ((function.rsplit(".", 1)[0],) if "." in function else ()),
        position=position,
        keyword=keyword,
        guarded=guarded,
        rule=rule,
        sanitizers=None if sanitizers is None else tuple(sanitizers),
        predicate=predicate,
        fixed_in=fixed_in,
        outputs=outputs,
        modules_only=modules_only,
        measured=tuple(sorted(measured.items())),
    )


def _output(data: Mapping[str, Any], origin: str, where: str) -> OutputSpec:
    t = _Table(data, where, origin)
    position = t.get("position", _is_index, "an integer >= 0")
    keyword = t.get("keyword", _is_str, "a string")
    result = t.get(
        "result",
        lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= -1,
        "an integer >= -1 (-1: the whole result)",
    )
    fill = t.get("fill", lambda v: v in OUTPUT_FILLS, "one of " + ", ".join(sorted(OUTPUT_FILLS)))
    t.done()
    if (result is None) == (position is None and keyword is None):
        raise t.fail("result", "give either `result` or an argument (`position` / `keyword`)")
    return OutputSpec(position, keyword, result, fill or "finite")


def _names_table(t: _Table, key: str, allowed: frozenset[str]) -> dict[str, tuple[str, ...]]:
    raw = t.get(key, _is_table, "a table", {})
    out: dict[str, tuple[str, ...]] = {}
    sub = _Table(raw, key, t.origin)
    for name in sorted(raw):
        if name not in allowed:
            raise sub.fail(name, f"unknown key (known: {', '.join(sorted(allowed))})")
        out[name] = tuple(
            sub.get(
                name,
                _is_effect_names,
                "a list of dotted names or built-in forms ("
                + ", ".join(f'"{f}"' for f in sorted(BUILT_IN_FORMS))
                + ")",
            )
        )
        forms = FORMS_BY_KEY.get(name, frozenset())
        for form in out[name]:
            if form in BUILT_IN_FORMS and form not in forms:
                known = ", ".join(f'"{f}"' for f in sorted(forms)) if forms else "none"
                raise sub.fail(name, f'"{form}" is not one of its built-in forms ({known})')
    return out


def _options(t: _Table) -> dict[str, Any]:
    raw = t.get("options", _is_table, "a table", {})
    sub = _Table(raw, "options", t.origin)
    out = {}
    for key in sorted(raw):
        check = OPTION_KEYS.get(key)
        if check is None:
            raise sub.fail(key, f"unknown option (known: {', '.join(sorted(OPTION_KEYS))})")
        out[key] = sub.get(key, check, OPTION_TYPES[key])
    return out


def rule_from_data(data: Mapping[str, Any], origin: str, doc: str = "") -> Rule:
    """A Rule from a parsed rule file; RuleError names ``origin`` and the key."""
    t = _Table(data, "", origin)
    code = t.required(
        "code",
        # As selectors and noqa comments spell codes: capitals, then digits (`ALL` selects
        # every rule, so no rule may be called that).
        lambda v: _is_str(v) and re.fullmatch(r"[A-Z]+[0-9]+", v) is not None,
        "a rule code such as ZL001 (capital letters, then digits)",
    )
    kernel_raw = t.get("kernel", _is_table, "a table", {})
    kt = _Table(kernel_raw, "kernel", origin)
    kernel = kt.get("name", _is_str, "a string", "")
    fixed_in = _strs(kt.get("fixed-in", _is_strs, "a list of versions"))
    kt.done()
    predicate_raw = t.required(
        "predicate", lambda v: _is_str(v) or _is_table(v), "a predicate table"
    )
    predicate = _predicate(t, "predicate", predicate_raw)
    sources = _names_table(t, "sources", SOURCE_KEYS)
    sanitizers = _names_table(t, "sanitizers", SANITIZER_KEYS)
    for form in sanitizers.get("output_mask", ()):
        if form not in OUTPUT_MASK_FORMS:
            raise RuleError(
                f"{origin}: sanitizers.output_mask: unknown form {form!r}"
                f" (known: {', '.join(sorted(OUTPUT_MASK_FORMS))})"
            )
    sinks_raw = t.get(
        "sinks", lambda v: isinstance(v, list) and all(map(_is_table, v)), "an array of tables", []
    )
    sinks = tuple(
        sink_from_table(
            s, rule=code, origin=origin, where=f"sinks[{i}]", sanitizer_keys=frozenset(sanitizers)
        )
        for i, s in enumerate(sinks_raw)
    )
    for i, spec in enumerate(sinks):
        accepts = spec.sanitizers is None or "output_mask" in spec.sanitizers
        if "output_mask" in sanitizers and accepts and not spec.outputs:
            raise RuleError(
                f"{origin}: sinks[{i}].outputs: is required where the sink accepts output_mask"
            )
    examples = []
    for i, e in enumerate(
        t.get(
            "examples",
            lambda v: isinstance(v, list) and all(map(_is_table, v)),
            "an array of tables",
            [],
        )
    ):
        et = _Table(e, f"examples[{i}]", origin)
        examples.append(
            Example(
                code=et.required("code", _is_str, "a string").lstrip("\n"),
                valid=et.required("valid", lambda v: isinstance(v, bool), "true or false"),
            )
        )
        et.done()
    rule = Rule(
        code=code,
        name=t.required("name", _is_str, "a string"),
        summary=t.required("summary", _is_str, "a string"),
        message=t.required("message", _is_str, "a string"),
        fix=t.get("fix", _is_str, "a string", ""),
        kernel=kernel,
        sinks=sinks,
        predicate=predicate,
        sources=sources,
        sanitizers=sanitizers,
        options=_options(t),
        examples=tuple(examples),
        doc=doc,
        fixed_in=fixed_in,
        default=t.get("default", lambda v: isinstance(v, bool), "true or false", True),
        parse_more=t.get("parse-more", lambda v: isinstance(v, bool), "true or false", True),
    )
    t.done()
    _check_message(rule, origin)
    return rule


def _check_message(rule: Rule, origin: str) -> None:
    for key, text in (("message", rule.message), ("fix", rule.fix)):
        try:
            text.format(expr="x", sink="f", argument="argument 0", arg="x")
        except (KeyError, IndexError, ValueError) as exc:
            raise RuleError(f"{origin}: {key}: bad placeholder {exc}") from None


def load_rule_file(path: Path) -> Rule:
    """Parse and validate one rule file (its ``.md`` beside it is the documentation)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleError(f"{path}: cannot read rule file: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise RuleError(f"{path}: not valid TOML: {exc}") from None
    doc_path = path.with_suffix(".md")
    doc = doc_path.read_text(encoding="utf-8") if doc_path.exists() else ""
    return replace(rule_from_data(data, str(path), doc), path=path)


@cache
def load_rules() -> tuple[Rule, ...]:
    """Every rule shipped with zerolint, sorted by code."""
    found = sorted(rules_dir().glob("*.toml"))
    return tuple(sorted((load_rule_file(p) for p in found), key=lambda r: r.code))


def rule_by_code(code: str, rules: tuple[Rule, ...] | None = None) -> Rule | None:
    for rule in load_rules() if rules is None else rules:
        if rule.code == code.upper():
            return rule
    return None

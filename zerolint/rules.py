"""Load the rules shipped in ``rules/``: each rule is a TOML declaration plus Markdown docs.

Sinks, sources and sanitizers are data so that users can point the same engine at
another kernel from ``[tool.zerolint]`` without writing Python.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


@dataclass(frozen=True, slots=True)
class SinkSpec:
    """A kernel-metadata function and the argument that carries the lengths."""

    function: str
    modules: tuple[str, ...] = ()
    position: int | None = 0
    keyword: str | None = None
    guarded: tuple[str, ...] = ()
    """Modules whose function of this name clamps its own input: calling it is no sink."""

    def qualnames(self) -> tuple[str, ...]:
        return tuple(f"{m}.{self.function}" for m in self.modules)

    def guarded_qualnames(self) -> tuple[str, ...]:
        return tuple(f"{m}.{self.function}" for m in self.guarded)


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
    batch_multiple: int
    kernel: str
    sinks: tuple[SinkSpec, ...]
    sources: dict[str, tuple[str, ...]] = field(default_factory=dict)
    sanitizers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    examples: tuple[Example, ...] = ()
    doc: str = ""

    def names(self, table: str, key: str) -> frozenset[str]:
        group = self.sources if table == "sources" else self.sanitizers
        return frozenset(group.get(key, ()))


def rules_dir() -> Path:
    """The folder holding the rule files: inside the wheel, or ``rules/`` in a checkout."""
    packaged = Path(__file__).with_name("rules")
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "rules"


def _parse_rule(path: Path) -> Rule:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    doc_path = path.with_suffix(".md")
    kernel = data.get("kernel", {})
    return Rule(
        code=data["code"],
        name=data["name"],
        summary=data["summary"],
        message=data["message"],
        fix=data.get("fix", ""),
        batch_multiple=int(kernel.get("batch_multiple", 32)),
        kernel=kernel.get("name", ""),
        sinks=tuple(sink_from_table(s) for s in data.get("sinks", ())),
        sources={k: tuple(v) for k, v in data.get("sources", {}).items()},
        sanitizers={k: tuple(v) for k, v in data.get("sanitizers", {}).items()},
        examples=tuple(
            Example(code=e["code"].lstrip("\n"), valid=bool(e["valid"]))
            for e in data.get("examples", ())
        ),
        doc=doc_path.read_text(encoding="utf-8") if doc_path.exists() else "",
    )


def sink_from_table(table: dict) -> SinkSpec:
    """Build a SinkSpec from a TOML table (rule file or ``[tool.zerolint] extra-sinks``)."""
    function = table.get("function") or table.get("name")
    if not function or not isinstance(function, str):
        raise ValueError("a sink needs a `function` name")
    modules = table.get("modules", table.get("module", ()))
    if isinstance(modules, str):
        modules = (modules,)
    guarded = table.get("guarded", ())
    if isinstance(guarded, str):
        guarded = (guarded,)
    position = table.get("position", 0 if "keyword" not in table else None)
    return SinkSpec(
        function=function.rsplit(".", 1)[-1],
        modules=tuple(modules) + ((function.rsplit(".", 1)[0],) if "." in function else ()),
        position=None if position is None else int(position),
        keyword=table.get("keyword"),
        guarded=tuple(guarded),
    )


@cache
def load_rules() -> tuple[Rule, ...]:
    """Every rule shipped with zerolint, sorted by code."""
    found = sorted(rules_dir().glob("ZL*.toml"))
    return tuple(_parse_rule(p) for p in found)


def rule_by_code(code: str) -> Rule | None:
    for rule in load_rules():
        if rule.code == code.upper():
            return rule
    return None

"""``[tool.zerolint]`` in pyproject.toml, found by walking up from the checked paths.

Keys (all optional)::

    [tool.zerolint]
    select = ["ZL001"]            # rule codes to run (default: all)
    ignore = []                   # rule codes to skip
    exclude = ["tests/fixtures"]  # globs, relative to the pyproject.toml folder
    compress-ratios = [4]         # alias of [tool.zerolint.options.ZL001] compress-ratios
    whole-program = true          # follow lengths across modules of the checked tree
    # A sink of the rule it names (default: "ZL001"); a new code with `based-on` makes a
    # user rule with that rule's sources and sanitizers (and its own `predicate`).
    extra-sinks = [{ function = "mylib.plan_kernel", position = 0, keyword = "lens" }]
    extra-sanitizers = ["mylib.ensure_positive"]   # calls whose result is >= 1, every rule
    rule-files = ["lint/ACME001.toml"]             # whole rules of this project

    [tool.zerolint.options.ZL001] # a rule's options (its rule file lists them)
    compress-ratios = [4]
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zerolint.rules import (
    OPTION_KEYS,
    OPTION_TYPES,
    Rule,
    RuleError,
    SinkSpec,
    load_rule_file,
    load_rules,
    sink_from_table,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class ConfigError(Exception):
    """A pyproject.toml that cannot be used: the message names the file and the problem."""


KNOWN_KEYS = {
    "select",
    "ignore",
    "exclude",
    "extend-exclude",
    "compress-ratios",
    "whole-program",
    "extra-sinks",
    "extra-sanitizers",
    "rule-files",
    "options",
}
# What `extra-sinks` names a rule by; the default keeps configurations written before
# sinks named their rule working.
DEFAULT_SINK_RULE = "ZL001"
_SINK_RULE_KEYS = frozenset({"rule", "based-on", "message"})


@dataclass(slots=True)
class Settings:
    select: frozenset[str] = frozenset()
    ignore: frozenset[str] = frozenset()
    exclude: tuple[str, ...] = ()
    compress_ratios: tuple[int, ...] = ()
    whole_program: bool = True
    extra_sinks: tuple[SinkSpec, ...] = ()
    extra_sanitizers: tuple[str, ...] = ()
    root: Path | None = None
    source: Path | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    loaded: tuple[Rule, ...] | None = None
    """Every rule known to this configuration (shipped, rule files, extra-sinks), with its
    extra sinks and sanitizers; None: the shipped rules and the fields above."""

    def all_rules(self) -> tuple[Rule, ...]:
        if self.loaded is not None:
            return self.loaded
        return extend_rules(load_rules(), self.extra_sinks, self.extra_sanitizers)

    def option(self, rule: Rule, key: str) -> Any:
        """A rule option: from [tool.zerolint.options.CODE], the top-level alias
        (``compress-ratios``), or the rule file's default."""
        configured = self.options.get(rule.code, {})
        if key in configured:
            return configured[key]
        if key == "compress-ratios" and key in rule.options and self.compress_ratios:
            return self.compress_ratios
        return rule.options.get(key)

    def rules(self) -> tuple[Rule, ...]:
        """The rules this run applies, after select/ignore."""
        chosen = []
        for rule in self.all_rules():
            if self.select and not any(rule.code.startswith(s) for s in self.select):
                continue
            if any(rule.code.startswith(i) for i in self.ignore):
                continue
            chosen.append(rule)
        return tuple(chosen)

    def sinks(self, rules: Sequence[Rule] | None = None) -> tuple[SinkSpec, ...]:
        """The sink declarations a run looks for: its rules' (default: the selected ones)
        and ``extra-sinks``."""
        chosen = self.rules() if rules is None else rules
        return tuple(s for r in chosen for s in r.sinks)

    def sink_names(self, rules: Sequence[Rule] | None = None) -> set[str]:
        return {s.function for s in self.sinks(rules)}

    def fingerprint(self) -> str:
        """A hash of everything in the configuration that changes results (for the cache)."""
        payload = json.dumps(
            {
                "select": sorted(self.select),
                "ignore": sorted(self.ignore),
                "ratios": list(self.compress_ratios),
                "whole": self.whole_program,
                "sinks": [repr(s) for s in self.extra_sinks],
                "sanitizers": list(self.extra_sanitizers),
                "options": self.options,
                "rules": [repr(r) for r in self.loaded or ()],
            },
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


def find_pyproject(paths: Sequence[Path]) -> Path | None:
    """The nearest pyproject.toml with a ``[tool.zerolint]`` table above the checked paths."""
    # abspath, not resolve(): a symlink loop named on the command line must reach
    # discovery, which reports it as a file that cannot be read.
    start = _common_dir([Path(os.path.abspath(p)) for p in paths] or [Path.cwd()])
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
                raise ConfigError(f"{candidate}: cannot read configuration: {exc}") from None
            if "zerolint" in data.get("tool", {}):
                return candidate
    return None


def _common_dir(paths: Sequence[Path]) -> Path:
    dirs = [p if p.is_dir() else p.parent for p in paths]
    common = dirs[0]
    for d in dirs[1:]:
        while common not in (d, *d.parents):
            common = common.parent
    return common


def load_settings(paths: Sequence[Path], config: Path | None = None) -> Settings:
    """Settings for checking ``paths``: from ``config`` if given, else the nearest pyproject."""
    source = config if config is not None else find_pyproject(paths)
    if source is None:
        return Settings()
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{source}: cannot read configuration: {exc}") from None
    table = data.get("tool", {}).get("zerolint", {})
    return settings_from_table(table, source)


def settings_from_table(table: dict[str, Any], source: Path) -> Settings:
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(f"{source}: unknown key in [tool.zerolint]: {unknown[0]}")

    def strings(key: str) -> tuple[str, ...]:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{source}: [tool.zerolint] {key} must be a list of strings")
        return tuple(value)

    ratios = table.get("compress-ratios", [])
    if not isinstance(ratios, list) or not all(isinstance(r, int) and r >= 1 for r in ratios):
        raise ConfigError(f"{source}: [tool.zerolint] compress-ratios must be positive integers")
    known = list(load_rules())
    for entry in strings("rule-files"):
        path = source.parent / entry
        try:
            rule = load_rule_file(path)
        except RuleError as exc:
            raise ConfigError(str(exc)) from None
        if any(r.code == rule.code for r in known):
            raise ConfigError(
                f"{source}: [tool.zerolint] rule-files: {entry} redefines {rule.code}"
            )
        known.append(rule)
    sanitizers = strings("extra-sanitizers")
    sinks, user_rules = _extra_sinks(table.get("extra-sinks", []), known, source)
    whole = table.get("whole-program", True)
    if not isinstance(whole, bool):
        raise ConfigError(f"{source}: [tool.zerolint] whole-program must be true or false")
    options = _rule_options(table.get("options", {}), [*known, *user_rules], source)
    return Settings(
        select=frozenset(strings("select")),
        ignore=frozenset(strings("ignore")),
        exclude=strings("exclude") + strings("extend-exclude"),
        compress_ratios=tuple(ratios),
        whole_program=whole,
        extra_sinks=tuple(sinks),
        extra_sanitizers=sanitizers,
        root=source.parent,
        source=source,
        raw=table,
        options=options,
        loaded=extend_rules((*known, *user_rules), tuple(sinks), sanitizers),
    )


def extend_rules(
    rules: Sequence[Rule], sinks: Sequence[SinkSpec], sanitizers: Sequence[str]
) -> tuple[Rule, ...]:
    """``rules`` with each extra sink added to the rule it names, and the extra sanitizers
    (calls whose result is >= 1) added to every rule."""
    out = []
    for rule in rules:
        mine = tuple(s for s in sinks if s.rule == rule.code)
        if mine or sanitizers:
            at_least_one = rule.sanitizers.get("at_least_one", ()) + tuple(sanitizers)
            rule = dataclasses.replace(
                rule,
                sinks=rule.sinks + mine,
                sanitizers={**rule.sanitizers, "at_least_one": at_least_one}
                if sanitizers
                else rule.sanitizers,
            )
        out.append(rule)
    return tuple(sorted(out, key=lambda r: r.code))


def _extra_sinks(
    entries: Any, known: list[Rule], source: Path
) -> tuple[list[SinkSpec], list[Rule]]:
    """The extra sinks, each for the rule it names; a new code makes a user rule from the
    rule named by ``based-on`` (its sources, sanitizers and wording)."""
    where = f"{source}: [tool.zerolint] extra-sinks"
    if not isinstance(entries, list):
        raise ConfigError(f"{where} must be an array of tables")
    sinks: list[SinkSpec] = []
    made: list[Rule] = []
    for entry in entries:
        if not isinstance(entry, dict):
            raise ConfigError(f"{where} entries must be tables")
        code = entry.get("rule", DEFAULT_SINK_RULE)
        if not isinstance(code, str) or not code.isalnum():
            raise ConfigError(f"{where}: rule must be a rule code")
        rule = next((r for r in [*known, *made] if r.code == code), None)
        try:
            spec = sink_from_table(entry, rule=code, origin=where, where="", extra=_SINK_RULE_KEYS)
        except RuleError as exc:
            raise ConfigError(str(exc)) from None
        if rule is None:
            rule = _user_rule(entry, code, spec, known, where)
            made.append(rule)
        elif "based-on" in entry or "message" in entry:
            raise ConfigError(
                f"{where}: {code} is a rule already; based-on and message make new ones"
            )
        sinks.append(spec)
    return sinks, made


def _user_rule(
    entry: dict[str, Any], code: str, spec: SinkSpec, known: list[Rule], where: str
) -> Rule:
    base_code = entry.get("based-on")
    base = next((r for r in known if r.code == base_code), None)
    if base is None:
        raise ConfigError(
            f"{where}: rule {code} is not a known rule; give `based-on` (a rule whose sources "
            "and sanitizers it takes) or add a rule file"
        )
    message = entry.get("message", base.message)
    if not isinstance(message, str):
        raise ConfigError(f"{where}: message must be a string")
    return dataclasses.replace(
        base,
        code=code,
        name=f"{code.lower()}-user-rule",
        summary=f"Lengths reach `{spec.function}` (a rule of this project, based on {base.code})",
        message=message,
        sinks=(),
        predicate=spec.predicate or base.predicate,
        examples=(),
        doc="",
        path=None,
    )


def _rule_options(table: Any, rules: Sequence[Rule], source: Path) -> dict[str, dict[str, Any]]:
    where = f"{source}: [tool.zerolint.options]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table of rule codes")
    out: dict[str, dict[str, Any]] = {}
    for code, values in table.items():
        rule = next((r for r in rules if r.code == code), None)
        if rule is None:
            raise ConfigError(f"{where}: unknown rule {code}")
        if not isinstance(values, dict):
            raise ConfigError(f"{where}: {code} must be a table")
        for key, value in values.items():
            if key not in rule.options:
                raise ConfigError(f"{where}: {code} has no option {key}")
            if not OPTION_KEYS[key](value):
                raise ConfigError(f"{where}: {code}.{key} must be {OPTION_TYPES[key]}")
        out[code] = dict(values)
    return out

"""``[tool.zerolint]`` in pyproject.toml, found by walking up from the checked paths.

Keys (all optional)::

    [tool.zerolint]
    select = ["ZL001"]            # rule codes to run (default: all)
    ignore = []                   # rule codes to skip
    exclude = ["tests/fixtures"]  # globs, relative to the pyproject.toml folder
    compress-ratios = [4]         # values a divisor symbol may take (default: any >= 2)
    whole-program = true          # follow lengths across modules of the checked tree
    extra-sinks = [{ function = "mylib.plan_kernel", position = 0, keyword = "lens" }]
    extra-sanitizers = ["mylib.ensure_positive"]   # calls whose result is >= 1
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zerolint.rules import Rule, SinkSpec, load_rules, sink_from_table

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
}


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

    def rules(self) -> tuple[Rule, ...]:
        """The rules this run applies, after select/ignore."""
        chosen = []
        for rule in load_rules():
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
        return tuple(s for r in chosen for s in r.sinks) + self.extra_sinks

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
    sinks = []
    for entry in table.get("extra-sinks", []):
        if not isinstance(entry, dict):
            raise ConfigError(f"{source}: [tool.zerolint] extra-sinks entries must be tables")
        try:
            sinks.append(sink_from_table(entry))
        except ValueError as exc:
            raise ConfigError(f"{source}: [tool.zerolint] extra-sinks: {exc}") from None
    whole = table.get("whole-program", True)
    if not isinstance(whole, bool):
        raise ConfigError(f"{source}: [tool.zerolint] whole-program must be true or false")
    return Settings(
        select=frozenset(strings("select")),
        ignore=frozenset(strings("ignore")),
        exclude=strings("exclude") + strings("extend-exclude"),
        compress_ratios=tuple(ratios),
        whole_program=whole,
        extra_sinks=tuple(sinks),
        extra_sanitizers=strings("extra-sanitizers"),
        root=source.parent,
        source=source,
        raw=table,
    )

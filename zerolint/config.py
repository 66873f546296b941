"""zerolint's configuration: where it is found, what it may hold, and how it is checked.

As in Ruff, each file is checked with the nearest configuration above it: in each folder,
``.zerolint.toml``, then ``zerolint.toml`` (both with top-level keys), then a
``pyproject.toml`` holding a ``[tool.zerolint]`` table. ``--config FILE`` names one for all
files. Keys (all optional)::

    select = ["ZL001"]            # rule codes (or prefixes, or "ALL") to run (default: the
                                  # rules not marked opt-in)
    extend-select = ["ZL002"]     # more codes, added to select's (or to the default rules)
    ignore = []                   # rule codes to skip (wins over select and extend-select)
    exclude = ["tests/fixtures"]  # globs, relative to the configuration's folder
    extend-exclude = []           # more globs, added to exclude
    per-file-ignores = { "tests/*" = ["ZL001"] }   # globs -> codes not reported there
    respect-gitignore = true      # skip files git ignores
    compress-ratios = [4]         # alias of [options.ZL001] compress-ratios
    whole-program = true          # follow lengths across modules of the checked tree
    namespace-packages = ["sglang/srt"]   # folders (and those in them) that are packages
                                          # without an __init__.py, as in Ruff
    # A sink of the rule it names (default: "ZL001"); a new code with `based-on` makes a
    # user rule with that rule's sources and sanitizers (and its own `predicate`).
    extra-sinks = [{ function = "mylib.plan_kernel", position = 0, keyword = "lens" }]
    extra-sanitizers = ["mylib.ensure_positive"]   # calls whose result is >= 1, every rule
    rule-files = ["lint/ACME001.toml"]             # whole rules of this project
    options = { ZL001 = { compress-ratios = [4] } } # a rule's options (its file lists them)

Every key is declared once in :data:`SCHEMA` (its validator turns the TOML value into what
:class:`Settings` holds, or raises :class:`Invalid` with the problem); a value of the wrong
shape is a one-line :class:`ConfigError` naming the file and the key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zerolint.paths import absolute, current_folder

if TYPE_CHECKING:
    from zerolint.rules import Rule, SinkSpec

# The rules (``zerolint.rules``, with ``zerolint.hazards`` and a TOML parser) are imported
# where they are used: a warm run of a tree without a configuration file reads none.


class ConfigError(Exception):
    """A configuration that cannot be used: the message names the file and the problem."""


class Invalid(ValueError):
    """A value of the wrong shape; the caller adds the file and the key."""


# Names a configuration file may have, in the order they win within one folder.
CONFIG_NAMES = (".zerolint.toml", "zerolint.toml", "pyproject.toml")
SELECT_ALL = "ALL"
_CODE = re.compile(r"^[A-Z]+[0-9]*$")


# ------------------------------------------------------------------ value validators


def _list_of(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise Invalid(f"must be a list of {what}, not {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    """How a TOML value is called in an error message."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


def rule_codes(value: Any) -> frozenset[str]:
    """Rule selectors: codes or prefixes (``ZL001``, ``ZL0``, ``zl001``) or ``ALL``."""
    codes = set()
    for item in _list_of(value, "rule codes"):
        if not isinstance(item, str):
            raise Invalid(f"must be a list of rule codes, not {_kind(item)} ({item!r})")
        code = item.strip().upper()
        if not code:  # "" would be a prefix of every code and turn every rule off
            raise Invalid('an empty string "" is not a rule code')
        if code != SELECT_ALL and not _CODE.match(code):
            raise Invalid(f"{item!r} is not a rule code (like ZL001)")
        codes.add(code)
    return frozenset(codes)


def _strings(what: str) -> Callable[[Any], tuple[str, ...]]:
    def check(value: Any) -> tuple[str, ...]:
        items = _list_of(value, what)
        for item in items:
            if not isinstance(item, str):
                raise Invalid(f"must be a list of {what}, not {_kind(item)} ({item!r})")
            if not item.strip():
                raise Invalid(f'an empty string "" is not one of the {what}')
        return tuple(items)

    return check


def _function_names(value: Any) -> tuple[str, ...]:
    from zerolint.rules import is_dotted

    names = _strings("function names")(value)
    for name in names:
        if not is_dotted(name):
            raise Invalid(f"{name!r} is not a function name such as `mylib.ensure_positive`")
    return names


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Invalid(f"must be true or false, not {_kind(value)}")
    return value


def _ratios(value: Any) -> tuple[int, ...]:
    for item in _list_of(value, "positive integers"):
        if isinstance(item, bool) or not isinstance(item, int) or item < 1:
            raise Invalid(f"must be a list of positive integers, not {item!r}")
    return tuple(value)


def _per_file_ignores(value: Any) -> tuple[tuple[str, frozenset[str]], ...]:
    if not isinstance(value, dict):
        raise Invalid(
            f'must be a table of globs to rule codes, like {{ "tests/*" = ["ZL001"] }}'
            f", not {_kind(value)}"
        )
    out = []
    for glob, codes in value.items():
        if not glob.strip():
            raise Invalid('an empty glob "" matches nothing')
        try:
            out.append((glob, rule_codes(codes)))
        except Invalid as exc:
            raise Invalid(f"{glob!r} {exc}") from None
    return tuple(out)


def _optional_names(value: Any) -> tuple[str, ...]:
    """A module name or a list of them."""
    if isinstance(value, str):
        value = [value]
    items = _list_of(value, "module names")
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise Invalid(f"must be a module name or a list of them, not {item!r}")
    return tuple(items)


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Invalid(f"must be a non-empty string, not {value!r}")
    return value


def _position(value: Any) -> int:
    # TOML gives 1.9 as a float and "1" as a string: neither is a position; bool is an int.
    if isinstance(value, bool) or not isinstance(value, int):
        raise Invalid(f"must be an argument index (0, 1, ...), not {_kind(value)} ({value!r})")
    if value < 0:
        raise Invalid(f"must be an argument index (0, 1, ...), not {value}")
    return value


# An extra sink's fields, in one place: field -> validator. Rule files declare sinks with
# the same fields (zerolint.rules.sink_from_table builds them).
SINK_FIELDS: dict[str, Callable[[Any], Any]] = {
    "function": _name,
    "name": _name,
    "module": _optional_names,
    "modules": _optional_names,
    "position": _position,
    "keyword": _name,
    "guarded": _optional_names,
    # The rule the sink belongs to (default: DEFAULT_SINK_RULE); for a new code, the rule
    # whose sources, sanitizers and wording it takes, and its message and predicate.
    "rule": _name,
    "based-on": _name,
    "message": _name,
    "predicate": lambda v: v,  # checked by zerolint.rules (a kind, or a table)
    "sanitizers": lambda v: v,  # checked by zerolint.rules (sanitizer keys)
}
# What `extra-sinks` names a rule by when it does not say: configurations written before
# sinks named their rule keep working.
DEFAULT_SINK_RULE = "ZL001"
_RULE_FIELDS = frozenset({"rule", "based-on", "message"})


def sink_entry(entry: Any) -> SinkSpec:
    """One ``extra-sinks`` table, checked field by field, as a SinkSpec."""
    if not isinstance(entry, dict):
        raise Invalid(
            'entries must be tables like { function = "mylib.plan", position = 0 }, '
            f"not {_kind(entry)} ({entry!r})"
        )
    for key, value in entry.items():
        if key not in SINK_FIELDS:
            raise Invalid(f"unknown field {key!r}{_did_you_mean(key, SINK_FIELDS)}")
        try:
            SINK_FIELDS[key](value)
        except Invalid as exc:
            raise Invalid(f"{key} {exc}") from None
    if "function" not in entry and "name" not in entry:
        raise Invalid('an entry needs a `function` (like "mylib.plan_kernel")')
    from zerolint.rules import RuleError, sink_from_table

    code = entry.get("rule", DEFAULT_SINK_RULE)
    if not _CODE.match(code.upper()):
        raise Invalid(f"rule {code!r} is not a rule code (like ZL001)")
    try:
        return sink_from_table(entry, rule=code.upper(), where="", extra=_RULE_FIELDS)
    except RuleError as exc:
        raise Invalid(str(exc).removeprefix(": ")) from None


def _sinks(value: Any) -> tuple[SinkSpec, ...]:
    out = []
    for number, entry in enumerate(_list_of(value, "tables"), 1):
        try:
            out.append(sink_entry(entry))
        except Invalid as exc:
            raise Invalid(f"entry {number}: {exc}") from None
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Key:
    """A configuration key: the Settings field it fills and how its value is checked."""

    attribute: str
    validate: Callable[[Any], Any]


# key -> (Settings field, validator). To add a key: a line here and a field in Settings.
SCHEMA: dict[str, Key] = {
    "select": Key("select", rule_codes),
    "extend-select": Key("extend_select", rule_codes),
    "ignore": Key("ignore", rule_codes),
    "exclude": Key("exclude", _strings("globs")),
    "extend-exclude": Key("extend_exclude", _strings("globs")),
    "per-file-ignores": Key("per_file_ignores", _per_file_ignores),
    "respect-gitignore": Key("respect_gitignore", _boolean),
    "compress-ratios": Key("compress_ratios", _ratios),
    "whole-program": Key("whole_program", _boolean),
    "namespace-packages": Key("namespace_packages", _strings("folders")),
    "extra-sinks": Key("extra_sinks", _sinks),
    "extra-sanitizers": Key("extra_sanitizers", _function_names),
    "rule-files": Key("rule_files", _strings("rule files")),
    "options": Key("options", lambda v: _table_of_tables(v, "rule codes to option tables")),
}


def _table_of_tables(value: Any, what: str) -> dict[str, dict[str, Any]]:
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise Invalid(f"must be a table of {what}, like {{ ZL001 = {{ compress-ratios = [4] }} }}")
    return value


def _did_you_mean(word: str, known: Mapping[str, Any] | Sequence[str]) -> str:
    import difflib  # only here: a valid configuration does not import it

    close = difflib.get_close_matches(word, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


# ------------------------------------------------------------------ settings


@dataclass(slots=True)
class Settings:
    select: frozenset[str] = frozenset()
    extend_select: frozenset[str] = frozenset()
    ignore: frozenset[str] = frozenset()
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    respect_gitignore: bool = True
    compress_ratios: tuple[int, ...] = ()
    whole_program: bool = True
    namespace_packages: tuple[str, ...] = ()
    extra_sinks: tuple[SinkSpec, ...] = ()
    extra_sanitizers: tuple[str, ...] = ()
    rule_files: tuple[str, ...] = ()
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    root: Path | None = None
    source: Path | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    loaded: tuple[Rule, ...] | None = None
    """Every rule known to this configuration (shipped, rule files, user rules of
    extra-sinks), each with its extra sinks and sanitizers; None: the shipped rules and the
    fields above."""

    def __post_init__(self) -> None:
        # extend-exclude simply adds to exclude: one list for discovery to apply.
        if self.extend_exclude:
            self.exclude = tuple(self.exclude) + tuple(self.extend_exclude)
            self.extend_exclude = ()

    def all_rules(self) -> tuple[Rule, ...]:
        if self.loaded is not None:
            return self.loaded
        from zerolint.rules import load_rules

        return extend_rules(load_rules(), self.extra_sinks, self.extra_sanitizers)

    def option(self, rule: Rule, key: str) -> Any:
        """A rule option: from ``options.CODE``, the top-level alias (``compress-ratios``),
        or the rule file's default."""
        configured = self.options.get(rule.code, {})
        if key in configured:
            return configured[key]
        if key == "compress-ratios" and key in rule.options and self.compress_ratios:
            return self.compress_ratios
        return rule.options.get(key)

    def rules(self) -> tuple[Rule, ...]:
        """The rules this run applies, after select/ignore; a rule whose file says
        ``default = false`` only when ``select`` or ``extend-select`` names it."""
        return tuple(
            rule for rule in self.all_rules() if self.enabled(rule.code, opt_in=not rule.default)
        )

    def codes_with_fix(self) -> frozenset[str]:
        """The codes of ``rules()`` whose rule has a fix (``--fix`` can clamp its findings)."""
        return frozenset(rule.code for rule in self.rules() if rule.fix)

    def enabled(self, code: str, *, opt_in: bool = False) -> bool:
        """Whether findings or diagnostics of ``code`` are reported.

        A code runs unless ``ignore`` matches it, when ``select`` is empty or matches it,
        or when ``extend-select`` matches it. ZL9xx diagnostics (files that could not be
        checked) are shown unless ignored, or unless ``select`` names some ZL9 code and not
        this one; an ``opt_in`` code runs only when ``select`` or ``extend-select`` names it
        (or ``ALL``)."""
        if matches(code, self.ignore):
            return False
        if matches(code, self.extend_select):
            return True
        if opt_in:
            return matches(code, self.select)
        if code.startswith("ZL9"):
            named = {s for s in self.select if s.startswith("ZL9") or "ZL9".startswith(s)}
            return not named or matches(code, named)
        return not self.select or matches(code, self.select)

    def ignored_in(self, path: str | os.PathLike[str]) -> frozenset[str]:
        """Codes that ``per-file-ignores`` turns off for ``path`` (its globs are relative to
        this configuration's folder, as ``exclude``'s: see ``discovery.is_excluded``)."""
        if not self.per_file_ignores:
            return frozenset()
        from zerolint.discovery import is_excluded

        out: set[str] = set()
        for glob, codes in self.per_file_ignores:
            if is_excluded(Path(path), [glob], self.root):
                out |= codes
        return frozenset(out)

    def namespace_roots(self) -> tuple[str, ...]:
        """The ``namespace-packages`` folders, absolute (relative ones from the
        configuration's folder), normalised."""
        base = os.fspath(self.root) if self.root is not None else None
        return tuple(
            sorted(
                {absolute(os.path.join(base, p) if base else p) for p in self.namespace_packages}
            )
        )

    def sinks(self, rules: Sequence[Rule] | None = None) -> tuple[SinkSpec, ...]:
        """The sink declarations a run looks for: its rules' (default: the selected ones),
        ``extra-sinks`` among them (each extends the rule it names)."""
        chosen = self.rules() if rules is None else rules
        return tuple(s for r in chosen for s in r.sinks)

    def sink_names(self, rules: Sequence[Rule] | None = None) -> set[str]:
        return {s.function for s in self.sinks(rules)}

    def fingerprint(self) -> str:
        """A hash of everything in the configuration that changes results (for the cache)."""
        payload = json.dumps(
            {
                "select": sorted(self.select),
                "extend_select": sorted(self.extend_select),
                "ignore": sorted(self.ignore),
                "ratios": list(self.compress_ratios),
                "whole": self.whole_program,
                "namespaces": list(self.namespace_roots()),
                "sinks": [repr(s) for s in self.extra_sinks],
                "sanitizers": list(self.extra_sanitizers),
                "exclude": list(self.exclude),
                "per_file": [(g, sorted(c)) for g, c in self.per_file_ignores],
                "gitignore": self.respect_gitignore,
                "options": self.options,
                "rules": [repr(r) for r in self.loaded or ()],
            },
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


def matches(code: str, selectors: frozenset[str] | set[str]) -> bool:
    """Whether one of the ``selectors`` (codes, prefixes, ``ALL``) names ``code``."""
    return any(s == SELECT_ALL or code.startswith(s) for s in selectors)


# ------------------------------------------------------------------ reading files


def _read_toml(path: Path) -> tuple[dict[str, Any], str]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise ConfigError(f"{path}: cannot read configuration: {reason}") from None
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: cannot read configuration: {exc}") from None


def _mentions_zerolint(path: Path) -> bool:
    """Whether ``path`` says ``zerolint``: a file that cannot be read may, so it is an
    error (its settings would be dropped without a word), as a ``zerolint.toml`` is; one
    that is gone since it was listed is not there."""
    try:
        return b"zerolint" in path.read_bytes()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read configuration: {exc.strerror or exc}") from None


def table_in(path: Path, *, required: bool) -> tuple[dict[str, Any], str] | None:
    """The zerolint settings ``path`` holds and how its keys are named in messages
    (``[tool.zerolint] `` or nothing), or None when it holds none.

    A ``pyproject.toml`` is only read when it could hold zerolint settings (it mentions
    zerolint), so that someone else's broken one in a parent folder stops nothing; any
    other file holds top-level keys, and a ``tool`` table there is refused. ``required``
    (``--config``) refuses a file that holds no zerolint settings."""
    pyproject = path.name == "pyproject.toml"
    if pyproject and not required and not _mentions_zerolint(path):
        return None
    data, _ = _read_toml(path)
    if not pyproject:  # zerolint.toml (or any other name): top-level keys
        if required and not data:
            raise ConfigError(f"{path}: holds no zerolint settings")
        if "tool" in data:
            # As Ruff refuses [tool.ruff] in ruff.toml: read as a pyproject.toml, the file's
            # top-level keys would be dropped without a word.
            raise ConfigError(
                f"{path}: unknown key in configuration: tool ([tool.*] tables belong in "
                f"pyproject.toml; in {path.name} zerolint's settings are top-level keys)"
            )
        return data, ""
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: `tool` must be a table, not {_kind(tool)}")
    if "zerolint" not in tool:
        if required:
            raise ConfigError(f"{path}: holds no zerolint settings (no [tool.zerolint] table)")
        return None
    table = tool["zerolint"]
    if not isinstance(table, dict):
        shape = "an array of tables" if isinstance(table, list) else _kind(table)
        raise ConfigError(f"{path}: [tool.zerolint] must be a table, not {shape}")
    return table, "[tool.zerolint] "


def settings_from_table(table: dict[str, Any], source: Path, prefix: str | None = None) -> Settings:
    """Settings from a configuration table, every key checked against :data:`SCHEMA`;
    ``prefix`` names the table in messages (default: by the file's name)."""
    if prefix is None:
        prefix = "[tool.zerolint] " if source.name == "pyproject.toml" else ""
    values: dict[str, Any] = {}
    for key, value in table.items():
        spec = SCHEMA.get(key)
        if spec is None:
            where = prefix.strip() or "configuration"
            raise ConfigError(
                f"{source}: unknown key in {where}: {key}{_did_you_mean(key, SCHEMA)}"
            )
        try:
            values[spec.attribute] = spec.validate(value)
        except Invalid as exc:
            raise ConfigError(f"{source}: {prefix}{key}: {exc}") from None
    if "select" in values and not values["select"] and not values.get("extend_select"):
        # An empty selection would run no rule, and every check would pass.
        raise ConfigError(
            f"{source}: {prefix}select: selects no rule (leave it out for the default rules, "
            "or say which)"
        )
    from zerolint.rules import RuleError, load_rule_file, load_rules

    settings = Settings(**values, root=source.parent, source=source, raw=table)
    known = list(load_rules())
    for entry in settings.rule_files:
        try:
            rule = load_rule_file(source.parent / entry)
        except RuleError as exc:
            raise ConfigError(str(exc)) from None
        if any(r.code == rule.code for r in known):
            raise ConfigError(f"{source}: {prefix}rule-files: {entry} redefines {rule.code}")
        known.append(rule)
    where = f"{source}: {prefix}extra-sinks"
    made = _user_rules(table.get("extra-sinks", []), settings.extra_sinks, known, where)
    settings.options = _rule_options(
        settings.options, [*known, *made], f"{source}: {prefix}options"
    )
    settings.loaded = extend_rules((*known, *made), settings.extra_sinks, settings.extra_sanitizers)
    return settings


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


def _user_rules(
    entries: list[dict[str, Any]], specs: Sequence[SinkSpec], known: list[Rule], where: str
) -> list[Rule]:
    """The rules extra sinks make: a code that no rule has, from the rule named by
    ``based-on`` (its sources, sanitizers and wording)."""
    made: list[Rule] = []
    for number, (entry, spec) in enumerate(zip(entries, specs), 1):
        rule = next((r for r in [*known, *made] if r.code == spec.rule), None)
        if rule is not None:
            if "based-on" in entry or "message" in entry:
                raise ConfigError(
                    f"{where}: entry {number}: {spec.rule} is a rule already; "
                    "based-on and message make new ones"
                )
            continue
        base = next((r for r in known if r.code == str(entry.get("based-on", "")).upper()), None)
        if base is None:
            raise ConfigError(
                f"{where}: entry {number}: rule {spec.rule} is not a known rule; give "
                "`based-on` (a rule whose sources and sanitizers it takes) or add a rule file"
            )
        made.append(
            dataclasses.replace(
                base,
                code=spec.rule,
                name=f"{spec.rule.lower()}-user-rule",
                summary=f"Lengths reach `{spec.function}` (a rule of this project, "
                f"based on {base.code})",
                message=entry.get("message", base.message),
                sinks=(),
                predicate=spec.predicate or base.predicate,
                examples=(),
                doc="",
                path=None,
            )
        )
    return made


def _rule_options(
    table: dict[str, dict[str, Any]], rules: Sequence[Rule], where: str
) -> dict[str, dict[str, Any]]:
    from zerolint.rules import OPTION_KEYS, OPTION_TYPES

    for code, values in table.items():
        rule = next((r for r in rules if r.code == code), None)
        if rule is None:
            raise ConfigError(f"{where}: unknown rule {code}")
        for key, value in values.items():
            if key not in rule.options:
                raise ConfigError(f"{where}: {code} has no option {key}")
            if not OPTION_KEYS[key](value):
                raise ConfigError(f"{where}: {code}.{key} must be {OPTION_TYPES[key]}")
    return dict(table)


def load_file(path: Path) -> Settings:
    """Settings from the configuration file ``path`` (``--config``): it must hold some."""
    found = table_in(path, required=True)
    assert found is not None
    return settings_from_table(found[0], path, found[1])


class Resolver:
    """The configuration that applies to each folder: the nearest one above it (Ruff's
    hierarchical configuration), each file read once per run."""

    def __init__(self, config: Path | None = None) -> None:
        self.fixed = load_file(config) if config is not None else None
        self._by_dir: dict[str, Settings] = {}
        self._default = Settings()
        # Folder -> the configuration files a walk saw in it (``listed``), else looked for.
        self._listed: dict[str, tuple[str, ...]] = {}
        self._cwd = current_folder()

    def listed(self, folder: str, entries: Sequence[os.DirEntry]) -> None:
        """What a walk found in ``folder``: then ``for_dir`` knows which configuration
        files it holds without looking for each (three stats in every folder of a tree)."""
        if self.fixed is None:
            self._listed[absolute(folder, self._cwd)] = tuple(
                e.name for e in entries if e.name in CONFIG_NAMES and _is_file(e)
            )

    def for_dir(self, folder: Path) -> Settings:
        """Settings for files in ``folder``."""
        if self.fixed is not None:
            return self.fixed
        # abspath, not resolve(): a symlink loop named on the command line must reach
        # discovery, which reports it as a file that cannot be read.
        start = absolute(folder, self._cwd)
        walked = []
        current = start
        found: Settings | None = None
        while True:
            cached = self._by_dir.get(current)
            if cached is not None:
                found = cached
                break
            walked.append(current)
            found = self._config_in(current)
            if found is not None:
                break
            parent = os.path.dirname(current)
            if parent == current:
                found = self._default
                break
            current = parent
        for folder_seen in walked:
            self._by_dir[folder_seen] = found
        return found

    def for_path(self, path: Path) -> Settings:
        """Settings for the file or folder ``path``."""
        return self.for_dir(path if path.is_dir() else path.parent)

    def _config_in(self, folder: str) -> Settings | None:
        present = self._listed.get(folder)
        for name in CONFIG_NAMES:
            if present is not None and name not in present:
                continue
            where = os.path.join(folder, name)
            if present is None and not os.path.isfile(where):  # no Path made for each
                continue
            candidate = Path(where)
            found = table_in(candidate, required=False)
            if found is not None:
                return settings_from_table(found[0], candidate, found[1])
        return None


def _is_file(entry: os.DirEntry) -> bool:
    """``os.path.isfile`` of a listed entry: a regular file, or a link to one."""
    try:
        return entry.is_file()
    except OSError:
        return False


def find_config(paths: Sequence[Path]) -> Path | None:
    """The configuration file that applies to the common folder of ``paths``."""
    start = _common_dir([Path(os.path.abspath(p)) for p in paths] or [Path.cwd()])
    return Resolver().for_dir(start).source


# Kept for callers of the first API: the nearest configuration above the paths.
find_pyproject = find_config


def _common_dir(paths: Sequence[Path]) -> Path:
    dirs = [p if p.is_dir() else p.parent for p in paths]
    common = dirs[0]
    for d in dirs[1:]:
        while common not in (d, *d.parents):
            common = common.parent
    return common


def load_settings(paths: Sequence[Path], config: Path | None = None) -> Settings:
    """Settings for checking ``paths`` as one project: from ``config`` if given, else the
    configuration nearest their common folder."""
    if config is not None:
        return load_file(config)
    start = _common_dir([Path(os.path.abspath(p)) for p in paths] or [Path.cwd()])
    return Resolver().for_dir(start)

"""``zerolint rule CODE`` and ``zerolint rules``: the rules' documentation, from ``rules/``
and from the rule files of the project in the current folder (``rule-files``), and the
ZL9xx codes' from ``zerolint.codes``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from zerolint.rules import Rule, rule_by_code


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    if name == "rule":
        parser.add_argument("code", help="a rule code, e.g. ZL001")
    parser.add_argument(  # --output-format: Ruff's name (`ruff rule --output-format json`)
        "--format", "--output-format", dest="format", choices=("text", "json"), default="text"
    )


def run(args: argparse.Namespace) -> int:
    from zerolint.cli import UsageError
    from zerolint.codes import CODES, code_by_name

    rules = _known_rules()
    if args._command == "rules":
        if args.format == "json":
            data = [
                {
                    "code": r.code,
                    "name": r.name,
                    "summary": r.summary,
                    "fixable": bool(r.fix),
                    "opt_in": not r.default,
                }
                for r in rules
            ]
            data += [
                {
                    "code": c.code,
                    "name": c.name,
                    "summary": c.summary,
                    "fixable": False,
                    "opt_in": c.opt_in,
                }
                for c in CODES
            ]
            print(json.dumps(data, indent=2))
        else:
            for r in rules:
                print(f"{r.code}  {r.name}  {r.summary}")
            for c in CODES:
                print(f"{c.code}  {c.name}  {c.summary}")
        return 0
    rule = rule_by_code(args.code, rules)
    if rule is None:
        code = code_by_name(args.code)
        if code is None:
            raise UsageError(f"unknown rule: {args.code} (see `zerolint rules`)")
        if args.format == "json":
            print(
                json.dumps(
                    {
                        "code": code.code,
                        "name": code.name,
                        "summary": code.summary,
                        "documentation": code.doc,
                    },
                    indent=2,
                )
            )
        else:
            sys.stdout.write(code.doc)
        return 0
    if args.format == "json":
        print(
            json.dumps(
                {
                    "code": rule.code,
                    "name": rule.name,
                    "summary": rule.summary,
                    "documentation": rule.doc,
                },
                indent=2,
            )
        )
    else:
        doc = rule.doc or f"# {rule.code}: {rule.name}\n\n{rule.summary}\n"
        sys.stdout.write(doc if doc.endswith("\n") else doc + "\n")
    return 0


def _known_rules() -> tuple[Rule, ...]:
    """The shipped rules and those the project here adds."""
    from zerolint.config import ConfigError, Settings, load_settings

    try:
        return load_settings([Path.cwd()]).all_rules()
    except ConfigError as exc:
        # The shipped rules' documentation does not depend on the project's settings: a
        # broken configuration here is said, and they are shown.
        print(f"zerolint: warning: {exc}; showing the shipped rules only", file=sys.stderr)
        return Settings().all_rules()

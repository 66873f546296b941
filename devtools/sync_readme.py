"""Copy each rule's documentation (rules/ZLxxx.md) into README.md between its markers,
the table of ZL9xx codes (zerolint/codes.py) between ``<!-- codes start -->`` and
``<!-- codes end -->``, and the table of every shipped rule (rules/*.toml) between
``<!-- rules start -->`` and ``<!-- rules end -->``.

python devtools/sync_readme.py          # rewrite README.md
python devtools/sync_readme.py --check  # exit 1 when README.md is out of date
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKERS = re.compile(
    r"(<!-- rule:(?P<code>ZL\d+) start[^>]*-->\n)(?P<body>.*?)(<!-- rule:(?P=code) end -->)",
    re.DOTALL,
)


def rendered(readme: str) -> str:
    def body(match: re.Match[str]) -> str:
        doc = (ROOT / "rules" / f"{match['code']}.md").read_text(encoding="utf-8")
        # The rule's own title becomes a level-3 heading under "The rule".
        doc = re.sub(r"^# ", "### ", doc, count=1)
        doc = re.sub(r"^## ", "#### ", doc, flags=re.MULTILINE)
        return match.group(1) + doc.rstrip("\n") + "\n" + match.group(4)

    return RULES_MARKERS.sub(rules_table, CODES_MARKERS.sub(codes_table, MARKERS.sub(body, readme)))


CODES_MARKERS = re.compile(r"(<!-- codes start -->\n)(.*?)(<!-- codes end -->)", re.DOTALL)


def codes_table(match: re.Match[str]) -> str:
    sys.path.insert(0, str(ROOT))
    from zerolint.codes import CODES

    rows = ["| Code | Name | Meaning |", "| --- | --- | --- |"]
    rows += [f"| `{c.code}` | {c.name} | {c.summary} |" for c in CODES]
    return match.group(1) + "\n".join(rows) + "\n" + match.group(3)


RULES_MARKERS = re.compile(r"(<!-- rules start -->\n)(.*?)(<!-- rules end -->)", re.DOTALL)


def rules_table(match: re.Match[str]) -> str:
    """Every shipped rule: code, name, whether a run with no `select` applies it, summary."""
    sys.path.insert(0, str(ROOT))
    from zerolint.rules import load_rules

    rows = ["| Code | Name | Default | What it finds |", "| --- | --- | --- | --- |"]
    rows += [
        f"| `{r.code}` | {r.name} | {'on' if r.default else 'opt-in'} | {r.summary} |"
        for r in load_rules()
    ]
    return match.group(1) + "\n".join(rows) + "\n" + match.group(3)


def main() -> int:
    path = ROOT / "README.md"
    current = path.read_text(encoding="utf-8")
    wanted = rendered(current)
    if "--check" in sys.argv:
        if wanted != current:
            print("README.md is out of date: run python devtools/sync_readme.py")
            return 1
        return 0
    path.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

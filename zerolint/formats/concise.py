"""Ruff's ``concise`` format: one ``path:line:col: CODE message`` line per finding and
per file that could not be checked, then the summary line (``text`` adds each finding's
paths and verdict, as Ruff's ``full``)."""

from __future__ import annotations

from zerolint.formats import RenderOptions
from zerolint.formats.text import render_concise
from zerolint.model import Report


def render(report: Report, options: RenderOptions) -> str:
    return render_concise(report, options)

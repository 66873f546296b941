"""What a recognizer says about a header: a status, a reason, and the lines it rests on."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

HeaderStatus = Literal["guarded", "unguarded", "unknown"]


@dataclass(frozen=True, slots=True)
class Evidence:
    """One line of the header that the verdict rests on."""

    line: int
    kind: str  # read | index | search | bound | zero-total
    code: str
    note: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"line": self.line, "kind": self.kind, "code": self.code, "note": self.note}


@dataclass(frozen=True, slots=True)
class HeaderCheck:
    """What the header says about the all-zero case, with the lines that say it."""

    path: str
    status: HeaderStatus
    reason: str
    function: str | None = None
    array: str | None = None
    result: str | None = None
    limit: str | None = None
    hazards: tuple[Evidence, ...] = ()
    guards: tuple[Evidence, ...] = ()
    search: Evidence | None = None

    @property
    def guarded(self) -> bool:
        return self.status == "guarded"

    def location(self) -> str:
        """``file:line`` of the deciding line: the unguarded read, else the first guard."""
        lines = self.hazards or self.guards
        name = Path(self.path).name
        return f"{name}:{lines[0].line}" if lines else name

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "status": self.status,
            "reason": self.reason,
            "function": self.function,
            "array": self.array,
            "result": self.result,
            "limit": self.limit,
            "search": self.search.to_dict() if self.search else None,
            "hazards": [e.to_dict() for e in self.hazards],
            "guards": [e.to_dict() for e in self.guards],
        }


class HeaderError(Exception):
    """A header file that cannot be read."""

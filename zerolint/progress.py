"""A one-line progress bar on stderr for long runs, like the ones people know from pip.

It draws only on a terminal and only once a run has lasted ``delay`` seconds (a quick run
never flashes a bar), redraws at most every ``interval`` seconds, and erases its line when
closed, so what is printed afterwards starts on a clean line. Anywhere else it writes
nothing at all.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO, final

_BAR_WIDTH = 30
# Narrower than this, the bar says nothing; only the label and counter are shown.
_MIN_BAR_WIDTH = 5


def progress_wanted(stream: TextIO | None = None, *, quiet: bool = False) -> bool:
    """Whether a progress bar belongs on ``stream`` (default stderr): not --quiet, a
    terminal, and not ``TERM=dumb``."""
    stream = sys.stderr if stream is None else stream
    if quiet or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


@final
class Progress:
    """Counts finished items out of ``total`` and shows them as a bar on ``stream``.

    Use as a context manager (or call :meth:`close`); :meth:`advance` is cheap when no
    redraw is due. With ``enabled=False`` every method does nothing.
    """

    def __init__(
        self,
        total: int,
        *,
        enabled: bool,
        stream: TextIO | None = None,
        label: str = "Checking",
        delay: float = 0.5,
        interval: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = max(total, 0)
        self.done = 0
        self.enabled = enabled and self.total > 0
        self._stream = sys.stderr if stream is None else stream
        self._label = label
        self._delay = delay
        self._interval = interval
        self._clock = clock
        self._started = clock()
        self._last_draw: float | None = None
        self._drawn_width = 0

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def advance(self, count: int = 1) -> None:
        """Record ``count`` more finished items; redraw if a redraw is due."""
        self.done = min(self.done + count, self.total)
        if not self.enabled:
            return
        now = self._clock()
        if now - self._started < self._delay:
            return
        if self._last_draw is not None and now - self._last_draw < self._interval:
            return
        self._last_draw = now
        self._draw(self.line())

    def line(self) -> str:
        """The bar as it would be drawn now, fitted to the terminal's width."""
        counter = f"{self.done}/{self.total}"
        columns = _terminal_columns(self._stream)
        # 5 = " [", "] " and one spare column, so the cursor never wraps to a new line.
        room = columns - len(self._label) - len(counter) - 5
        width = max(min(_BAR_WIDTH, room), 0)
        filled = width * self.done // self.total if self.total else 0
        bar = f" [{'#' * filled}{'-' * (width - filled)}]" if width >= _MIN_BAR_WIDTH else ""
        return f"{self._label}{bar} {counter}"

    def close(self) -> None:
        """Erase the bar, if one was drawn; later calls do nothing."""
        if self.enabled and self._drawn_width:
            self._stream.write("\r" + " " * self._drawn_width + "\r")
            self._stream.flush()
        self._drawn_width = 0
        self.enabled = False

    def _draw(self, text: str) -> None:
        # Plain spaces, not an erase-line escape code, cover what a longer line left behind.
        padding = " " * max(self._drawn_width - len(text), 0)
        self._stream.write("\r" + text + padding)
        self._stream.flush()
        self._drawn_width = max(self._drawn_width, len(text))


def _terminal_columns(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return shutil.get_terminal_size().columns

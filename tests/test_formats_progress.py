"""The progress bar: only on a terminal, only for long runs, throttled, erased at the end."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import struct
import termios
from collections.abc import Iterator

import pytest

from zerolint.progress import Progress, progress_wanted


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def terminal() -> Iterator[io.TextIOWrapper]:
    """A real pseudo-terminal 60 columns wide, as stderr is when a person runs zerolint."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 60, 0, 0))
    with open(follower, "w", closefd=True) as stream:
        yield stream
    os.close(leader)


def test_wanted_on_a_terminal_unless_quiet(terminal, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TERM", raising=False)
    assert progress_wanted(terminal)
    assert not progress_wanted(terminal, quiet=True)
    monkeypatch.setenv("TERM", "dumb")
    assert not progress_wanted(terminal)


def test_not_wanted_on_a_pipe_or_a_file() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    with open(write_end, "w") as pipe:
        assert not progress_wanted(pipe)
    assert not progress_wanted(io.StringIO())


def test_disabled_bar_writes_nothing() -> None:
    stream, clock = io.StringIO(), Clock()
    with Progress(100, enabled=False, stream=stream, clock=clock) as bar:
        for _ in range(100):
            clock.now += 1
            bar.advance()
    assert stream.getvalue() == ""
    assert bar.done == 100


def test_a_quick_run_never_shows_a_bar() -> None:
    stream, clock = io.StringIO(), Clock()
    with Progress(100, enabled=True, stream=stream, clock=clock, delay=0.5) as bar:
        for _ in range(100):
            clock.now += 0.004
            bar.advance()
    assert stream.getvalue() == ""


def test_redraws_are_throttled_and_the_line_is_erased_at_the_end() -> None:
    stream, clock = io.StringIO(), Clock()
    bar = Progress(1000, enabled=True, stream=stream, clock=clock, delay=0.5, interval=0.1)
    clock.now += 1.0
    for _ in range(500):  # 500 items within 0.05 s: one redraw
        clock.now += 0.0001
        bar.advance()
    clock.now += 0.2
    bar.advance()  # the next redraw is due
    written = stream.getvalue()
    frames = written.split("\r")
    assert frames[0] == ""
    assert [frame.split()[0] for frame in frames[1:]] == ["Checking", "Checking"]
    assert [frame.split()[-1] for frame in frames[1:]] == ["1/1000", "501/1000"]
    bar.close()
    erased = stream.getvalue()[len(written) :]
    assert erased == "\r" + " " * len(frames[2]) + "\r"
    bar.close()
    bar.advance()
    assert stream.getvalue()[len(written) :] == erased  # nothing after close


def test_the_bar_fits_the_terminal(terminal) -> None:
    bar = Progress(2283, enabled=True, stream=terminal)
    bar.done = 1141
    line = bar.line()
    assert len(line) <= 60
    assert line == f"Checking [{'#' * 14}{'-' * 16}] 1141/2283"


def test_a_narrow_terminal_keeps_only_the_counter() -> None:
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 20, 0, 0))
    with open(follower, "w", closefd=True) as narrow:
        bar = Progress(2283, enabled=True, stream=narrow)
        bar.advance(7)
        assert bar.line() == "Checking 7/2283"
    os.close(leader)

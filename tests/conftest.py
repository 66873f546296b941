"""Fixtures shared by the command-line tests, and session-wide checks for the test run."""

from __future__ import annotations

import os

import pytest

from tests import golden
from tests.test_cli_check import check  # noqa: F401 - the `check` fixture, for every module


def pytest_configure(config: pytest.Config) -> None:
    # The old update mode rewrote golden files and then passed against them: refuse it loudly
    # rather than run green while ignoring what the user asked for.
    if os.environ.get(golden.RETIRED_ENV):
        raise pytest.UsageError(
            f"{golden.RETIRED_ENV} is no longer read: a test run never rewrites golden files. "
            f"Run `{golden.UPDATE_COMMAND}` (it exits 1 when it changed a file), review the "
            "diff, then run the tests."
        )


@pytest.fixture(autouse=True)
def _outside_a_github_workflow(monkeypatch: pytest.MonkeyPatch) -> None:
    """The GitHub format's paths are from the checkout where GITHUB_WORKSPACE is set (in a
    workflow): the tests, their subprocesses included, run as outside one, wherever they
    run, unless a test sets it."""
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)

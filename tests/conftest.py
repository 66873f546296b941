"""Fixtures shared by the command-line tests."""

from tests.test_cli_check import check  # noqa: F401 - the `check` fixture, for every module

"""`zerolint server` where it answered otherwise than `zerolint check` for the same file
contents, each with the real server process and a real LSP client: a file or folder whose
name holds a percent-encoded sequence (`a%2C.py`), a folder with a configuration of its
own (another project, which no path crosses into), a folder deleted, renamed or moved in
(one event, for the folder), a stub file changed on disk, a buffer with a NUL character,
positions in UTF-8 in a file that declares another encoding; and a request before
`initialize`, answered as the protocol says.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from devtools.lsp_client import Client
from tests import test_server
from tests.test_server import (
    BUILDER,
    CLAMPED_BUILDER,
    CLAMPED_HELPER,
    HELPER,
    PYPROJECT,
    is_clean,
    is_zl001,
    run_client,
    run_session,
)

workspace = test_server.workspace  # the fixture: a small project


def test_a_name_with_a_percent_escape_is_not_decoded_twice(workspace: Path, tmp_path: Path) -> None:
    """pygls keys the open documents by the URI decoded once: a path made of that key is
    decoded again, and `a%2C.py` (the URI `a%252C.py`) read as `a,.py`. The file got no
    diagnostics, and in a folder so named an edit of the helper's buffer did not reach the
    builder open beside it."""
    root = tmp_path / "ws%2C"
    shutil.copytree(workspace, root)
    odd = root / "pkg" / "a%2C.py"
    odd.write_text(BUILDER)
    builder = root / "pkg" / "builder.py"

    async def scenario(client: Client) -> None:
        b = client.open(builder)
        a = client.open(odd)
        assert "%252C" in a
        await client.diagnostics_for(a, is_zl001)
        await client.diagnostics_for(b, is_zl001)
        helper = client.open(root / "pkg" / "utils.py")
        client.change(helper, CLAMPED_HELPER)  # unsaved: the buffer counts, not the disk
        await client.diagnostics_for(b, is_clean)
        await client.diagnostics_for(a, is_clean)

    run_session(root, scenario)


def cli_findings(check, root: Path) -> list[tuple[str, str, int]]:
    """(file, code, line) of what `zerolint check .` run in ``root`` finds."""
    out = json.loads(check("--output-format", "json", "--exit-zero", ".", cwd=root)[1])
    return sorted((Path(f["path"]).name, f["code"], f["line"]) for f in out["findings"])


def shown(diagnostics: list[lsp.Diagnostic], name: str) -> list[tuple[str, str, int]]:
    return sorted((name, str(d.code), d.range.start.line + 1) for d in diagnostics)


def test_a_folder_with_its_own_configuration_is_another_project(workspace: Path, check) -> None:
    """`zerolint check` keeps the files under different configurations apart (as Ruff
    does): no path crosses from the builder into a helper under a folder configured on
    its own. The server's tree of the workspace folder held every file below it, and
    followed the path; once the nested configuration is gone, it is one project again."""
    sub = workspace / "pkg" / "sub"
    sub.mkdir()
    (sub / "__init__.py").write_text("")
    (sub / "utils.py").write_text(HELPER)
    nested = sub / "pyproject.toml"
    nested.write_text('[tool.zerolint]\nselect = ["ZL001"]\n')
    builder = workspace / "pkg" / "builder.py"
    builder.write_text(BUILDER.replace("from .utils", "from .sub.utils"))
    (workspace / "pkg" / "utils.py").unlink()
    apart = cli_findings(check, workspace)
    assert apart == []
    nested.unlink()
    together = cli_findings(check, workspace)
    assert together == [("builder.py", "ZL001", 8)]
    nested.write_text('[tool.zerolint]\nselect = ["ZL001"]\n')

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        first = await client.diagnostics_for(uri, lambda d: True)
        assert shown(first, "builder.py") == apart
        helper = client.open(sub / "utils.py")  # its own project: checked, clean
        assert await client.diagnostics_for(helper, lambda d: True) == []
        nested.unlink()
        client.watched(nested, lsp.FileChangeType.Deleted)
        after = await client.diagnostics_for(uri, is_zl001)
        assert shown(after, "builder.py") == together

    run_session(workspace, scenario)


def glob_regex(glob: str) -> re.Pattern[str]:
    """An LSP glob pattern (`**/*.py`, `**/{a,b}`) as a regular expression over a path
    relative to the workspace, `/`-separated."""
    out = ""
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif glob.startswith("**", i):
            out, i = out + ".*", i + 2
        elif glob[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif glob[i] == "?":
            out, i = out + "[^/]", i + 1
        elif glob[i] == "{":
            end = glob.index("}", i)
            out += "(?:" + "|".join(map(re.escape, glob[i + 1 : end].split(","))) + ")"
            i = end + 1
        else:
            out, i = out + re.escape(glob[i]), i + 1
    return re.compile(out + r"\Z")


# A watcher's `kind` bits (WatchKind), by the event (FileChangeType); none given: all.
KIND_BITS = {
    lsp.FileChangeType.Created: 1,
    lsp.FileChangeType.Changed: 2,
    lsp.FileChangeType.Deleted: 4,
}


def matching_watchers(client: Client, path: Path, kind: lsp.FileChangeType) -> int:
    """How many of the watchers the server registered match ``path`` and ``kind``: how
    many times VS Code reports the change (a watcher of its own for each, their events
    sent together)."""
    relative = path.relative_to(client.root).as_posix()
    return sum(
        1
        for registration in client.registrations
        if registration.method == "workspace/didChangeWatchedFiles"
        for watcher in registration.register_options["watchers"]
        if glob_regex(watcher["globPattern"]).match(relative)
        and watcher.get("kind", 7) & KIND_BITS[kind]
    )


def sent(client: Client, path: Path, kind: lsp.FileChangeType) -> bool:
    """Send the event of ``path`` (``kind``) as VS Code would: once for each watcher the
    server registered that matches its path and kind, in one notification. Whether it was
    sent."""
    times = matching_watchers(client, path, kind)
    if times:
        client.watched_all([(path, kind)] * times)
    return times > 0


def test_a_folder_deleted_renamed_or_moved_in_is_one_event_the_server_follows(
    workspace: Path, tmp_path: Path
) -> None:
    """An editor (VS Code) sends one event for a folder deleted, renamed or moved in, none
    for the files in it, and only where a watcher's glob matches the folder: the server
    dropped it (not a Python file), and went on following the path into the deleted
    helper."""
    sub = workspace / "pkg" / "sub"
    sub.mkdir()
    (sub / "__init__.py").write_text("")
    (sub / "utils.py").write_text(HELPER)
    builder = workspace / "pkg" / "builder.py"
    via = BUILDER.replace("from .utils", "from .sub.utils")
    builder.write_text(via)
    (workspace / "pkg" / "utils.py").unlink()
    kept = tmp_path / "kept"
    shutil.copytree(sub, kept)

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        await client.diagnostics_for(uri, is_zl001)
        await client.wait_for(lambda: client.registrations != [], 10)
        shutil.rmtree(sub)
        assert sent(client, sub, lsp.FileChangeType.Deleted)
        await client.diagnostics_for(uri, is_clean)  # as `zerolint check` says now
        # Moved in under another name: the edit that imports it finds the path again.
        moved = workspace / "pkg" / "sub2"
        shutil.move(kept, moved)
        assert sent(client, moved, lsp.FileChangeType.Created)
        client.change(uri, via.replace(".sub.utils", ".sub2.utils"))
        await client.diagnostics_for(uri, is_zl001)
        # Renamed: gone under the name imported.
        moved.rename(workspace / "pkg" / "sub3")
        assert sent(client, moved, lsp.FileChangeType.Deleted)
        assert sent(client, workspace / "pkg" / "sub3", lsp.FileChangeType.Created)
        await client.diagnostics_for(uri, is_clean)

    run_session(workspace, scenario)


def test_a_stub_changed_on_disk_is_watched(workspace: Path) -> None:
    """`.pyi` files are analysed (a helper's stub) as `.py` ones are: the server asks the
    editor to watch them too, and reads a changed one again."""
    helper = workspace / "pkg" / "utils.py"
    stub = helper.with_suffix(".pyi")
    helper.rename(stub)
    builder = workspace / "pkg" / "builder.py"

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        await client.diagnostics_for(uri, is_zl001)
        await client.wait_for(lambda: client.registrations != [], 10)
        stub.write_text(CLAMPED_HELPER)
        assert sent(client, stub, lsp.FileChangeType.Changed)
        await client.diagnostics_for(uri, is_clean)
        stub.unlink()
        assert sent(client, stub, lsp.FileChangeType.Deleted)
        await client.diagnostics_for(uri, is_clean)
        stub.write_text(HELPER)
        assert sent(client, stub, lsp.FileChangeType.Created)
        await client.diagnostics_for(uri, is_zl001)

    run_session(workspace, scenario)


def test_a_buffer_with_a_nul_character_is_zl904_as_on_the_command_line(
    workspace: Path, check
) -> None:
    """`zerolint check` refuses a file with a NUL byte as no Python source (ZL904), whether
    or not it mentions a kernel; the server parsed such a buffer (ZL901, Python's parser's
    words), and not at all where the file cannot reach a kernel."""
    helper = workspace / "pkg" / "utils.py"
    init = workspace / "pkg" / "__init__.py"
    helper_nul = HELPER.replace("\n", "\n\x00", 1)
    init_nul = "X = 1\n\x00\n"
    helper.write_text(helper_nul)
    init.write_text(init_nul)
    out = json.loads(check("--output-format", "json", "--exit-zero", ".", cwd=workspace)[1])
    cli = sorted((d["path"], d["code"], d["line"], d["message"]) for d in out["diagnostics"])
    assert [c[1] for c in cli] == ["ZL904", "ZL904"]
    assert out["findings"] == []
    helper.write_text(HELPER)
    init.write_text("")

    async def scenario(client: Client) -> None:
        builder = client.open(workspace / "pkg" / "builder.py")
        await client.diagnostics_for(builder, is_zl001)
        served = []
        for path, text in ((helper, helper_nul), (init, init_nul)):
            uri = client.open(path, path.read_text())
            await client.diagnostics_for(uri, lambda d: True)
            client.change(uri, text)
            [d] = await client.diagnostics_for(uri, lambda d: d != [])
            name = path.relative_to(workspace).as_posix()
            served.append((name, d.code, d.range.start.line, d.message))
        assert sorted(served) == cli
        await client.diagnostics_for(builder, is_clean)  # the helper is no source now

    run_session(workspace, scenario)


def test_positions_in_utf8_in_a_file_that_declares_latin1(workspace: Path) -> None:
    """A step in a file not open is placed in the client's units from the file's text on
    disk, which the server decoded as UTF-8 only: a file that declares its encoding (PEP
    263, as the analysis reads it) was not decoded at all, and its positions were left
    in characters, wrong for a client that counts UTF-8 bytes."""
    helper = workspace / "pkg" / "utils.py"
    line = '    x = "\u00e9\u00e9\u00e9"; y = seq_lens // compress_ratio\n'
    text = HELPER.replace("    return seq_lens // compress_ratio\n", line + "    return y\n")
    helper.write_bytes(("# -*- coding: latin-1 -*-\n" + text).encode("latin-1"))
    client = Client(workspace, "--debounce-ms", "20", position_encodings=["utf-8"])

    async def scenario(client: Client) -> None:
        result = client.initialize_result
        assert result is not None and result.capabilities.position_encoding == "utf-8"
        uri = client.open(workspace / "pkg" / "builder.py")
        [diag] = await client.diagnostics_for(uri, is_zl001)
        [step] = [r for r in diag.related_information or [] if "floor division" in r.message]
        assert step.location.uri == helper.as_uri()
        assert step.location.range.start.line == 1 + text.splitlines().index(line.rstrip())
        before = line[: line.index("y = seq_lens")]  # the statement, as the CLI shows it
        assert step.location.range.start.character == len(before.encode("utf-8"))

    run_client(client, scenario)


def test_a_request_before_initialize_is_answered_server_not_initialized(workspace: Path) -> None:
    """As the protocol says: a request before `initialize` is answered with the error
    ServerNotInitialized (-32002), a notification then is dropped; pygls ran the request
    without a workspace, and the server answered it (`[]`) after logging an internal
    error."""
    builder = workspace / "pkg" / "builder.py"
    client = Client(workspace, "--debounce-ms", "20")

    async def main() -> None:
        await client.launch()
        try:
            anywhere = lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0))
            with pytest.raises(JsonRpcException, match="before initialize") as error:
                await asyncio.wait_for(
                    client.lsp.text_document_code_action_async(
                        lsp.CodeActionParams(
                            text_document=lsp.TextDocumentIdentifier(uri=builder.as_uri()),
                            range=anywhere,
                            context=lsp.CodeActionContext(diagnostics=[]),
                        )
                    ),
                    20,
                )
            assert error.value.code == -32002  # ServerNotInitialized
            client.open(builder)  # dropped: not open once initialized
            await client.initialize()
            # Answered now (the builder is not open: no action), whatever pygls keeps.
            actions = client.lsp.text_document_code_action_async(
                lsp.CodeActionParams(
                    text_document=lsp.TextDocumentIdentifier(uri=builder.as_uri()),
                    range=anywhere,
                    context=lsp.CodeActionContext(diagnostics=[]),
                )
            )
            assert list(await asyncio.wait_for(actions, 20)) == []
            uri = client.open(workspace / "pkg" / "utils.py")
            await client.diagnostics_for(uri, is_clean)
            assert builder.as_uri() not in client.diagnostics
            assert not [m for m in client.logs if "internal error" in m], client.logs
        except BaseException:
            await client.kill()
            raise
        assert await client.stop() == 0

    asyncio.run(main())


def test_each_change_on_disk_reaches_the_server_once(workspace: Path) -> None:
    """VS Code reports a change once for each watcher whose glob and kinds match it. The
    server watched `**/*` for creations and deletions (folders) besides every kind of
    change of `**/*.py`, `**/*.pyi`, the configurations and the rule files: a Python file,
    a configuration or a rule file created or deleted was reported twice, and handled
    twice (a tree dropped twice; a file deleted while open said twice). Each change now
    matches one watcher; and an event a client reports twice in one notification (one that
    ignores the watchers' kinds) is handled once."""
    rule = test_server.RULE_FILE.read_text().replace('code = "ZT002"', 'code = "ACME001"')
    (workspace / "lint").mkdir()
    (workspace / "lint" / "ACME.toml").write_text(rule)
    config = workspace / "pyproject.toml"
    config.write_text(PYPROJECT + 'rule-files = ["lint/ACME.toml"]\n')
    builder = workspace / "pkg" / "builder.py"
    kinds = list(KIND_BITS)
    every_kind = {
        "pkg/new.py": kinds,
        "pkg/new.pyi": kinds,
        "pyproject.toml": kinds,
        "pkg/sub/.zerolint.toml": kinds,
        "lint/ACME.toml": kinds,
        ".gitignore": kinds,
        ".git/info/exclude": kinds,
        "pkg/sub": [lsp.FileChangeType.Created, lsp.FileChangeType.Deleted],  # a folder
        "README.md": [lsp.FileChangeType.Created, lsp.FileChangeType.Deleted],
    }

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        await client.diagnostics_for(uri, is_zl001)
        rules = "**/ACME.toml"  # registered once the configuration naming it is read
        await client.wait_for(
            lambda: any(
                w["globPattern"] == rules
                for r in client.registrations
                for w in r.register_options["watchers"]
            ),
            10,
        )
        reported = {
            (name, kind.name): matching_watchers(client, workspace / name, kind)
            for name, watched in every_kind.items()
            for kind in kinds
            if kind in watched
        }
        assert set(reported.values()) == {1}, reported
        builder.unlink()
        client.watched_all([(builder, lsp.FileChangeType.Deleted)] * 2)
        client.change(uri, CLAMPED_BUILDER)  # its diagnostics come after the warnings
        await client.diagnostics_for(uri, is_clean)
        said = [m for m in client.logs if "was deleted while open" in m]
        assert len(said) == 1, said

    run_session(workspace, scenario)


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="git says what it ignores")
def test_a_gitignore_edit_changes_what_is_checked_as_on_the_command_line(
    workspace: Path, check
) -> None:
    """Files git ignores are not checked (`respect-gitignore`, on by default), by
    `zerolint check` as by the server; but the server did not watch `.gitignore`: an edit
    of it left the trees as they were, the helper it now ignores still followed until the
    server restarted. A `.gitignore` (or `.git/info/exclude`) created, changed or saved
    now rebuilds the trees, as a fresh `zerolint check` reads them."""
    git(workspace, "init", "-q")
    ignore = workspace / ".gitignore"
    exclude = workspace / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    exclude.write_text("")
    followed = cli_findings(check, workspace)
    assert followed == [("builder.py", "ZL001", 8)]
    ignore.write_text("pkg/utils.py\n")
    assert cli_findings(check, workspace) == []
    ignore.unlink()
    builder = workspace / "pkg" / "builder.py"

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        first = await client.diagnostics_for(uri, is_zl001)
        assert shown(first, "builder.py") == followed
        await client.wait_for(lambda: client.registrations != [], 10)
        ignore.write_text("pkg/utils.py\n")
        assert sent(client, ignore, lsp.FileChangeType.Created)
        await client.diagnostics_for(uri, is_clean)
        ignore.write_text("# nothing\n")
        assert sent(client, ignore, lsp.FileChangeType.Changed)
        await client.diagnostics_for(uri, is_zl001)
        exclude.write_text("/pkg/utils.py\n")
        assert sent(client, exclude, lsp.FileChangeType.Changed)
        await client.diagnostics_for(uri, is_clean)
        exclude.write_text("")
        client.save(client.open(exclude, ""))  # saved in the editor
        await client.diagnostics_for(uri, is_zl001)
        # A cache's own `.gitignore` (pytest writes one as it makes its folder) is of a
        # folder no walk enters: no tree is rebuilt for it.
        said = f"configuration reloaded ({ignore} changed)"
        before = sum(said in m for m in client.logs)
        cache = workspace / ".pytest_cache" / ".gitignore"
        cache.parent.mkdir()
        cache.write_text("*\n")
        assert sent(client, cache, lsp.FileChangeType.Created)
        # Then one that does: its reload is said after any the cache's had made.
        assert sent(client, ignore, lsp.FileChangeType.Changed)
        await client.wait_for(lambda: sum(said in m for m in client.logs) == before + 1)
        assert not [m for m in client.logs if ".pytest_cache" in m], client.logs

    run_session(workspace, scenario)


def test_a_configuration_that_ignores_every_rule_is_said_as_on_the_command_line(
    workspace: Path, check
) -> None:
    """`zerolint check` refuses a configuration whose `ignore` turns off every rule it
    selects (every check would pass); the server took it silently and showed every file
    clean. It says the command line's words in the log, once (a tree built again, as for
    a new buffer, does not say it again), and again after a reload that leaves it so. A
    folder below with such a configuration of its own (a vendored tree) is left to it,
    as on the command line."""
    config = workspace / "pyproject.toml"
    config.write_text(PYPROJECT + 'ignore = ["ALL"]\n')
    vendored = workspace / "pkg" / "vendored"
    vendored.mkdir()
    (vendored / "pyproject.toml").write_text('[tool.zerolint]\nignore = ["ALL"]\n')
    (vendored / "lib.py").write_text(BUILDER.replace("from .utils", "from ..utils"))
    code, _, err = check(".", cwd=workspace)
    assert code == 2
    words = err.strip().removeprefix("zerolint: error: ")
    assert words.startswith(f"{config}: [tool.zerolint] ignore: turns off every selected rule")
    config.write_text(PYPROJECT)
    assert cli_findings(check, workspace) == [("builder.py", "ZL001", 8)]  # not vendored's
    config.write_text(PYPROJECT + 'ignore = ["ALL"]\n')
    builder = workspace / "pkg" / "builder.py"
    expected = f"zerolint: {words}; nothing is reported"

    def said() -> list[str]:
        return [m for m in client.logs if "turns off every selected rule" in m]

    async def scenario(client: Client) -> None:
        await client.log_matching("turns off every selected rule")
        assert said() == [expected]
        uri = client.open(builder)
        assert await client.diagnostics_for(uri, lambda d: True) == []
        lib = client.open(vendored / "lib.py")
        await client.diagnostics_for(lib, lambda d: True)
        new = client.open(workspace / "pkg" / "new.py", BUILDER)  # a new buffer: tree rebuilt
        await client.diagnostics_for(new, lambda d: True)
        client.change(uri, BUILDER + "\n")
        assert await client.diagnostics_for(uri, lambda d: True) == []
        config.write_text(PYPROJECT)
        client.watched(config, lsp.FileChangeType.Changed)
        await client.diagnostics_for(uri, is_zl001)
        assert said() == [expected]
        config.write_text(PYPROJECT + 'ignore = ["ALL"]\n')
        client.watched(config, lsp.FileChangeType.Changed)
        await client.diagnostics_for(uri, is_clean)
        assert said() == [expected] * 2

    client = Client(workspace, "--debounce-ms", "20")
    run_client(client, scenario)


def test_a_second_initialize_is_answered_invalid_request(workspace: Path) -> None:
    """As the protocol says, `initialize` may be sent only once: a second one is answered
    with InvalidRequest (-32600). pygls initialised again: a new workspace, without the
    documents open, whose edits were then ignored as of documents never opened."""
    builder = workspace / "pkg" / "builder.py"

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        await client.diagnostics_for(uri, is_zl001)
        again = client.lsp.initialize_async(
            lsp.InitializeParams(
                process_id=None,
                root_uri=(workspace / "pkg").as_uri(),
                capabilities=lsp.ClientCapabilities(),
            )
        )
        with pytest.raises(JsonRpcException, match="only once") as error:
            await asyncio.wait_for(again, 20)
        assert error.value.code == -32600  # InvalidRequest
        client.change(uri, CLAMPED_BUILDER)  # still open, in the same workspace
        await client.diagnostics_for(uri, is_clean)
        assert not [m for m in client.logs if "not open" in m], client.logs

    run_session(workspace, scenario)

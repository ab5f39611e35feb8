"""Archivers: which invocations write or delete files, run a command, or only list, judged
under a rule for the archiver (``shell._archive_options``).

Under a world rule ``commandPrefix = [PROGRAM]`` ALLOW, ``tar -cf /dev/null --remove-files F``
would delete ``F``, ``tar -xf - -C DIR`` write anywhere and ``tar -M`` spawn a shell at its
volume prompt; ``zip``, ``unzip``, ``cpio``, ``7z`` and ``ar`` write the same way. A command we
cannot read is hidden code (``unknown``: no rule for the program allows it, not even one with
``allowRedirection``), a write is asked about unless the rule says ``allowRedirection``, and a
listing (``tar -tf``, ``unzip -l``, ``7z l``, ``ar t``) stays allowed. The end-to-end tests run
the lines in bash to show the effect is real.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from shell_rule_helpers import decide, first

from agentworld.approval.grants import find_covering_grant, grant_for
from agentworld.policy.rules import PolicyDecision
from agentworld.shell.commands import analyze

ALLOW = PolicyDecision.ALLOW
ASK = PolicyDecision.ASK_USER
DENY = PolicyDecision.DENY


HIDDEN_CODE = [
    # tar: programs, the multi-volume prompt (`!` spawns a shell), remote archives
    "tar -M -L 10 -cf out.tar big",
    "tar --multi-volume -tf a.tar",
    "tar --tape-length=10 -cf out.tar big",
    "tar -tML 10 -f a.tar",
    "tar -tf a.tar -I ./evil",
    "tar xIf ./evil a.tar",
    "tar -f host:a.tar -t",
    "tar -tf user@host:/a.tar",
    "tar --file=host:a.tar -x",
    # zip -TT / --unzip-command; cpio, ar, ranlib
    "zip -TT 'sh -c id' a.zip f",
    "zip --unzip-command=x -T a.zip f",
    "cpio -i -F host:a.cpio",
    "cpio -i --rsh-command=x -F a.cpio",
    "ar --plugin ./x.so t lib.a",
    "ar @opts lib.a",
    "ranlib --plugin ./x.so lib.a",
]


@pytest.mark.parametrize("line", HIDDEN_CODE)
def test_an_option_that_runs_a_command_is_hidden_code(line: str) -> None:
    assert first(line)[0] == "unknown"
    assert analyze(line).keys is None  # and no grant may cover it


@pytest.mark.parametrize("line", HIDDEN_CODE)
def test_hidden_code_is_never_allowed_by_a_rule_for_the_archiver(line: str) -> None:
    assert decide(line) is ASK
    assert decide(line, redirection=True) is ASK
    assert decide(line, non_interactive=True) is DENY


WRITES = [
    # tar: extract, create into a file, append, update, concatenate, delete, remove files
    "tar -cf /dev/null --remove-files important.txt",
    "tar -cf - --remove-files x",
    "tar -cf - --remove x",
    "tar -xf -",
    "tar -xf a.tar",
    "gtar -xf a.tar",
    "tar -xzf a.tgz",
    "tar xzf a.tgz",
    "tar --extract -f a.tar",
    "tar --ext -f a.tar",
    "tar --get -f a.tar",
    "tar --checkpoint=10 -xf a.tar",
    "tar cvf out.tar dir",
    "tar -cf out.tar dir",
    "tar -czf out.tgz dir",
    "tar --create --file=out.tar dir",
    "tar --create --file out.tar dir",
    "tar --create --fil=out.tar dir",
    "tar -rf a.tar x",
    "tar --append -f a.tar x",
    "tar -uf a.tar x",
    "tar -Af a.tar b.tar",
    "tar --catenate -f a.tar b.tar",
    "tar --concatenate -f a.tar b.tar",
    "tar --delete -f a.tar x",
    "tar -g snap -cf - dir",
    "tar --listed-incremental=snap -cf - dir",
    "tar --index-file=idx -tvf a.tar",
    "tar --volno-file=v -tf a.tar",
    "tar -tf a.tar --remove-files",
    # zip, unzip, cpio, 7z, ar, ranlib
    "zip a.zip f",
    "zip -r a.zip dir",
    "zip -m a.zip f",
    "zip -d a.zip f",
    "zip -T a.zip f",
    "unzip a.zip",
    "unzip a.zip -d /tmp/anywhere",
    "unzip -o a.zip",
    "unzip -q a.zip",
    "unzip --l a.zip",
    "unzip -q a.zip -x -l",
    "unzip a.zip -l",
    "unzip -l- a.zip",
    "cpio -i < a.cpio",
    "cpio -id < a.cpio",
    "cpio --extract < a.cpio",
    "cpio -o -F out.cpio",
    "cpio -o -O out.cpio",
    "cpio -o --file=out.cpio",
    "cpio -p dest",
    "cpio -pd dest",
    "cpio -A -F a.cpio",
    "7z x a.7z",
    "7z e a.7z",
    "7z a a.7z f",
    "7z u a.7z f",
    "7z d a.7z f",
    "7z rn a.7z a b",
    "7za x a.7z",
    "7z x a.7z -- -so",
    "ar x lib.a",
    "ar rcs lib.a x.o",
    "ar q lib.a x.o",
    "ar d lib.a x.o",
    "ar m lib.a x.o",
    "ar ts lib.a",
    "ar -M",
    "ar --output=dir x lib.a",
    "ranlib lib.a",
]


@pytest.mark.parametrize("line", WRITES)
def test_an_invocation_that_writes_files_counts_as_a_redirection(line: str) -> None:
    assert first(line) == ("clear", True)


@pytest.mark.parametrize("line", WRITES)
def test_a_write_is_asked_about_unless_the_rule_allows_redirection(line: str) -> None:
    assert decide(line) is ASK
    assert decide(line, redirection=True) is ALLOW

@pytest.mark.parametrize("line", ["tar -xf - -C /tmp/anywhere", "tar xvf a.tar -C dir", "tar -C d -x"])
def test_an_extraction_into_another_directory_writes_and_is_not_allowed(line: str) -> None:
    # `-C DIR` also moves the part (shell.directories), which may make it `unknown` as well
    assert analyze(line).parts[0].redirects_output
    assert decide(line) is ASK


ORDINARY = [
    "tar -tf a.tar",
    "tar -tzf a.tgz",
    "tar tf a.tar",
    "tar tvf a.tar",
    "tar -tvf a.tar member",
    "tar --list -f a.tar",
    "tar --list --file=a.tar",
    "tar -df a.tar",
    "tar --diff -f a.tar",
    "tar --checkpoint=10 -tf a.tar",
    "tar -xOf a.tar member",
    "tar xOf a.tar member",
    "tar -x --to-stdout -f a.tar",
    "tar -cf - dir",
    "tar czf - dir",
    "tar -c dir",
    "tar -cf /dev/null dir",
    "tar -tf ./a:b.tar",
    "tar --force-local -tf c:a.tar",
    "tar --version",
    "7z l a.7z",
    "7z t a.7z",
    "7za l a.7z",
    "7z x -so a.7z",
    "ar t lib.a",
    "ar -t lib.a",
    "ar tv lib.a",
    "ar p lib.a x.o",
    "ranlib --version",
    "unzip -l a.zip",
    "unzip -lv a.zip",
    "unzip -t a.zip",
    "unzip -p a.zip f",
    "unzip -c a.zip f",
    "unzip -Z -1 a.zip",
    "unzip -v",
    "zip -h",
    "cpio -it < a.cpio",
    "cpio -t < a.cpio",
    "cpio -i --list < a.cpio",
    "cpio -i --to-stdout < a.cpio",
    "cpio -o < list",
]


@pytest.mark.parametrize("line", ORDINARY)
def test_a_listing_or_a_read_stays_clear_and_allowed(line: str) -> None:
    assert first(line) == ("clear", False)
    assert decide(line) is ALLOW


@pytest.mark.parametrize(
    ("approved", "later"),
    [
        ("tar -tf a.tar", "tar -cf /dev/null --remove-files important.txt"),
        ("tar -tf a.tar", "tar -xf - -C /tmp/anywhere"),
        ("unzip -l a.zip", "unzip a.zip -d /tmp/anywhere"),
    ],
)
def test_a_session_grant_of_a_listing_covers_no_write(approved: str, later: str) -> None:
    grant = grant_for(
        "session", world="w", tool_name="shell_cmd", arguments={"command": approved},
        agent="Alice", chat_id="c1", approval_id="a1",
    )  # fmt: skip
    assert grant is not None
    assert (
        find_covering_grant([grant], "shell_cmd", {"command": later}, agent="Alice", chat_id="c1")
        is None
    )


# -- end to end: the effect happens in bash, and the engine refuses the line ---------------


def _bash(line: str, cwd: Path, stdin: bytes = b"") -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "SHELL": "/bin/sh"}
    subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", line], cwd=cwd, input=stdin, env=env,
        capture_output=True, timeout=30, check=False,
    )  # fmt: skip


@pytest.mark.skipif(shutil.which("tar") is None, reason="tar is not installed")
def test_tar_remove_files_deletes_a_file_and_is_asked_about(tmp_path: Path) -> None:
    (tmp_path / "important.txt").write_text("keep me")
    line = "tar -cf /dev/null --remove-files important.txt"
    _bash(line, tmp_path)
    assert not (tmp_path / "important.txt").exists()
    assert decide(line) is ASK


@pytest.mark.skipif(shutil.which("tar") is None, reason="tar is not installed")
def test_tar_extracting_from_stdin_writes_anywhere_and_is_asked_about(tmp_path: Path) -> None:
    payload, dest = tmp_path / "payload", tmp_path / "dest"
    payload.write_text("#!/bin/sh\nid\n")
    payload.chmod(0o755)
    dest.mkdir()
    with tarfile.open(tmp_path / "p.tar", "w") as archive:
        archive.add(payload, arcname="payload")
    line = f"tar -xf - -C {dest}"
    _bash(line, tmp_path, stdin=(tmp_path / "p.tar").read_bytes())
    assert (dest / "payload").exists()
    assert decide(line) is ASK


@pytest.mark.skipif(shutil.which("tar") is None, reason="tar is not installed")
def test_tar_multi_volume_prompt_spawns_a_shell_and_is_refused(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"x" * 40000)
    # `!` at the volume prompt runs `sh -i`; tar's stdio buffer takes the first 4 KiB.
    stdin = b"!\n" + b"\n" * 5000 + b"touch SPAWNED\nexit\nq\n"
    line = "tar -M -L 10 -cf out.tar big"
    _bash(line, tmp_path, stdin=stdin)
    assert (tmp_path / "SPAWNED").exists()
    assert decide(line, redirection=True) is ASK

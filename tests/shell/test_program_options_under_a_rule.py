"""Programs that run commands or write files through their options, judged under a rule for the
program (``shell.program_options``, ``shell._more_program_options``,
``shell._archive_options``).

Under a world rule ``commandPrefix = [PROGRAM]`` ALLOW, each of these would do what it says:
``fdfind -x sh -c CMD`` runs ``CMD``; ``man -C FILE`` runs the programs the file names;
``git -C DIR`` runs git with another repository's configuration; ``tar -cf /dev/null
--remove-files F`` deletes ``F`` and ``tar -xf - -C DIR`` writes anywhere. A command we cannot
read is hidden code (``unknown``: no rule for the program allows it, not even one with
``allowRedirection``), and a write is asked about unless the rule says ``allowRedirection``.
The end-to-end tests run each line in bash to show the effect is real.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from agentworld.approval.grants import find_covering_grant, grant_for
from agentworld.policy.engine import PolicyEngine
from agentworld.policy.loader import load_policy_text
from agentworld.policy.rules import PolicyDecision, Tier
from agentworld.shell.commands import analyze

ALLOW = PolicyDecision.ALLOW
ASK = PolicyDecision.ASK_USER
DENY = PolicyDecision.DENY


def _first(line: str) -> tuple[str, bool]:
    part = analyze(line).parts[0]
    return part.opacity, part.redirects_output


def _engine(line: str, *, redirection: bool = False) -> PolicyEngine:
    """A world whose only rule allows the line's program (``commandPrefix = [PROGRAM]``)."""
    program = line.split()[0]
    text = f"""
[[rule]]
toolName = "shell_cmd"
commandPrefix = ["{program}"]
decision = "allow"
allowRedirection = {str(redirection).lower()}
priority = 100
"""
    loaded = load_policy_text(text, source="world.toml", tier=Tier.USER)
    assert loaded.errors == []
    return PolicyEngine(loaded.rules)


def _decide(line: str, *, redirection: bool = False, **kw: Any) -> PolicyDecision:
    return _engine(line, redirection=redirection).evaluate("shell_cmd", {"command": line}, **kw).decision


HIDDEN_CODE = [
    # fd / fdfind: -x/--exec, -X/--exec-batch run a command per file, as find -exec does
    "fdfind -1 . -x sh -c 'id > /tmp/P'",
    "fdfind -x rm",
    "fdfind -X rm",
    "fdfind --exec rm",
    "fdfind --exec-batch=rm",
    "fd -e py -x sh -c 'touch P'",
    "fd -tf -x rm",
    "fd -Hx rm",
    # ack, bat: a pager is a program; --ackrc is a file of options (--pager among them)
    "ack --pager=cmd foo",
    "ack --pager cmd foo",
    "ack --pag=cmd foo",
    "ack -pager=cmd foo",
    "ack --PAGER=cmd foo",
    "ack --ackrc=evil foo",
    "bat --pager=cmd f",
    "bat --pager 'sh -c id' f",
    "batcat --pager=x f",
    # cloc: --extract-with, --vcs=CMD, option files and what may load one
    "cloc --extract-with=cmd a.tgz",
    "cloc --extract-with cmd a.tgz",
    "cloc -extract_with=cmd a.tgz",
    "cloc --extr=cmd a.tgz",
    "cloc --vcs='sh -c id'",
    "cloc --config evil.txt .",
    "cloc --list-file=files.txt",
    "cloc --exclude-list-file=.clocignore .",
    "cloc --read-lang-def=defs.txt .",
    # ip: netns/vrf exec, batch files
    "ip netns exec ns sh -c id",
    "ip net e ns sh",
    "ip -all netns exec id",
    "ip -n x netns exec ns id",
    "ip vrf exec blue id",
    "ip -b cmds",
    "ip -batch cmds",
    "ip --batch cmds",
    "ip -ba -",
    "ip -force -batch cmds",
    # tcpdump -z CMD runs CMD on each rotated file
    "tcpdump -z cmd -w f -C 1",
    "tcpdump -w f -G 60 -z ./post",
    "tcpdump -nz cmd -w f",
    # rg --hostname-bin (as --pre) runs a program
    "rg --hostname-bin=./x foo",
    "rg --hostname-bin ./x foo",
    # ldd may execute the program it is handed
    "ldd ./bin",
    "ldd /usr/bin/ls",
    "ldd -v ./bin",
    # man: -C names programs in a configuration, -M pages elsewhere, -P/-H/--browser programs
    "man -C evil.conf ls",
    "man --config-file=evil.conf ls",
    "man --conf=evil ls",
    "man -M /tmp/m ls",
    "man -M/tmp/m ls",
    "man --manpath=/tmp/m ls",
    "man -P cat ls",
    "man -H ls",
    "man -Hfirefox ls",
    "man --html=x ls",
    "man --browser=x ls",
    # info replays keystrokes or binds keys from files we do not read
    "info --restore=keys ls",
    "info --init-file=keys ls",
    # git in another repository, or another git
    "git -C ../other status",
    "git -C /tmp/evil log",
    "git -C . status",
    "git -Cx status",
    "git --exec-path=/tmp/x status",
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
    # openssl: engines, providers, configurations; stdin commands
    "openssl",
    "openssl engine dynamic -pre SO_PATH:./x.so",
    "openssl x509 -engine x -in c.pem",
    "openssl req -config evil.cnf -new",
    "openssl genpkey -provider-path /tmp -provider evil -algorithm x",
    "openssl dgst -keyform engine -engine x f",
    # sdiff/diff3 --diff-program, systemctl edit (an editor)
    "sdiff --diff-program=./evil a b",
    "diff3 --diff-program=./evil a b c",
    "systemctl edit foo",
    "systemctl --user edit foo",
]


@pytest.mark.parametrize("line", HIDDEN_CODE)
def test_an_option_that_runs_a_command_is_hidden_code(line: str) -> None:
    assert _first(line)[0] == "unknown"
    assert analyze(line).keys is None  # and no grant may cover it


@pytest.mark.parametrize("line", HIDDEN_CODE)
def test_hidden_code_is_never_allowed_by_a_rule_for_the_program(line: str) -> None:
    assert _decide(line) is ASK
    assert _decide(line, redirection=True) is ASK
    assert _decide(line, non_interactive=True) is DENY


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
    # converters and tools that write
    "iconv -f utf8 -t ascii -o out file",
    "iconv -f utf8 -t ascii --output=out file",
    "iconv -f utf8 -t ascii --out out file",
    "iconv -c -oout file",
    "info -o out ls",
    "info --output=out ls",
    "info --dribble=keys ls",
    "openssl rand -out f 8",
    "openssl rand -writerand f",
    "openssl req -new -newkey rsa:2048 -nodes -keyout k.pem -out r.csr",
    "openssl enc -d -aes256 -in a -out=b",
    "openssl s_client -connect h:443 -keylogfile k",
    "openssl x509 -req -in r.csr -CA ca.pem -CAkey k.pem -CAcreateserial",
    "openssl ca -in r.csr",
    "mktemp",
    "mktemp -d",
    "mktemp -p /tmp/u",
    "mktemp -t x.XXXX",
    "mktemp -- -uXXXX",
    "tcpdump -w f",
    "tcpdump -i eth0 -w /tmp/cap.pcap",
    "tcpdump -nw f",
    "cloc --out=r.txt .",
    "cloc --report-file r.txt .",
    "cloc --sql=f .",
    "cloc --strip-comments=nc .",
    "cloc --counted=c.txt .",
    "bat cache --build",
    "bat --generate-config-file",
    "journalctl --cursor-file=f",
    "journalctl --vacuum-size=1M",
    # git writing a path the line names, or content from outside the repository
    "git apply x.patch",
    "git apply --stat --apply x.patch",
    "git apply --unsafe-paths --directory=/ x.patch",
    "git apply -- --check",
    "git format-patch -- --stdout",
    "git bundle create /tmp/b.bundle HEAD",
    "git clone https://example.org/r.git d",
    "git clone -q https://example.org/r.git",
    "git init newdir",
    "git init --bare",
    "git worktree add ../wt",
    "git worktree move a b",
    "git archive -o /tmp/a.tar HEAD",
    "git archive --output=/tmp/a.tar HEAD",
    "git format-patch HEAD~1",
    "git format-patch -o out HEAD~1",
]


@pytest.mark.parametrize("line", WRITES)
def test_an_invocation_that_writes_files_counts_as_a_redirection(line: str) -> None:
    assert _first(line) == ("clear", True)


@pytest.mark.parametrize("line", WRITES)
def test_a_write_is_asked_about_unless_the_rule_allows_redirection(line: str) -> None:
    assert _decide(line) is ASK
    assert _decide(line, redirection=True) is ALLOW


@pytest.mark.parametrize("line", ["tar -xf - -C /tmp/anywhere", "tar xvf a.tar -C dir", "tar -C d -x"])
def test_an_extraction_into_another_directory_writes_and_is_not_allowed(line: str) -> None:
    # `-C DIR` also moves the part (shell.directories), which may make it `unknown` as well
    assert analyze(line).parts[0].redirects_output
    assert _decide(line) is ASK


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
    "fd -e py",
    "fdfind foo",
    "fd -tx",
    "fd -H -E .git foo src",
    "fdfind -l foo",
    "ack -i foo",
    "ack --nopager foo",
    "bat -p f",
    "batcat f",
    "cloc .",
    "cloc --by-file --json src",
    "cloc --vcs=git",
    "cloc -v .",
    "cloc --force-lang=Python,x .",
    "cloc --diff a b",
    "cloc --sql=- .",
    "ip addr",
    "ip -br a",
    "ip -brief link show",
    "ip -j route",
    "ip netns list",
    "ip route get 1.1.1.1",
    "tcpdump -nn -i any port 80",
    "tcpdump -r f.pcap",
    "tcpdump -w - -i eth0",
    "tcpdump -iwlan0 -n",
    "rg foo",
    "ldd --version",
    "man ls",
    "man 3 printf",
    "man -k printf",
    "man -L C ls",
    "man -LC ls",
    "man -a intro",
    "info ls",
    "info -o - ls",
    "info -f ./x.info",
    "git status",
    "git log -n 3",
    "git --no-pager log",
    "git --namespace=x log",
    "git init",
    "git apply --check x.patch",
    "git apply --stat x.patch",
    "git bundle verify b.bundle",
    "git worktree list",
    "git archive HEAD",
    "git format-patch --stdout HEAD~1",
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
    "openssl version",
    "openssl rand -hex 8",
    "openssl x509 -in c.pem -noout -text",
    "openssl dgst -sha256 f",
    "openssl s_client -connect h:443",
    "iconv -f utf8 -t ascii file",
    "iconv -futf8 -tascii file",
    "iconv -f koi8-r -t utf8 file",
    "iconv -l",
    "mktemp -u",
    "mktemp --dry-run",
    "sdiff a b",
    "diff3 a b c",
    "systemctl status foo",
    "journalctl -u foo --cursor=abc",
    "journalctl -n 20 --no-pager",
]


@pytest.mark.parametrize("line", ORDINARY)
def test_ordinary_uses_stay_clear_and_allowed(line: str) -> None:
    assert _first(line) == ("clear", False)
    assert _decide(line) is ALLOW


@pytest.mark.parametrize(
    ("approved", "later"),
    [
        ("fdfind foo", "fdfind -1 . -x sh -c 'id > P'"),
        ("git status", "git -C ../other status"),
        ("man ls", "man -C evil.conf ls"),
        ("tar -tf a.tar", "tar -cf /dev/null --remove-files important.txt"),
        ("tar -tf a.tar", "tar -xf - -C /tmp/anywhere"),
        ("unzip -l a.zip", "unzip a.zip -d /tmp/anywhere"),
        ("ip addr", "ip netns exec ns sh"),
    ],
)
def test_a_session_grant_of_a_harmless_use_covers_neither_code_nor_writes(
    approved: str, later: str
) -> None:
    grant = grant_for(
        "session", world="w", tool_name="shell_cmd", arguments={"command": approved},
        agent="Alice", chat_id="c1", approval_id="a1",
    )  # fmt: skip
    assert grant is not None
    assert (
        find_covering_grant([grant], "shell_cmd", {"command": later}, agent="Alice", chat_id="c1")
        is None
    )


@pytest.mark.parametrize("line", ["find . | xargs tar -cf out.tar", "echo x | xargs fdfind"])
def test_words_fed_by_xargs_to_these_programs_may_be_options(line: str) -> None:
    assert [p.opacity for p in analyze(line).parts][-1] == "unknown"


# -- end to end: the effect happens in bash, and the engine refuses the line ---------------


def _bash(line: str, cwd: Path, stdin: bytes = b"") -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "SHELL": "/bin/sh"}
    subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", line], cwd=cwd, input=stdin, env=env,
        capture_output=True, timeout=30, check=False,
    )  # fmt: skip


@pytest.mark.skipif(shutil.which("fdfind") is None, reason="fd-find is not installed")
def test_fdfind_exec_runs_a_command_and_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    line = "fdfind -1 . -x sh -c 'id > PWNED'"
    _bash(line, tmp_path)
    assert (tmp_path / "PWNED").exists()
    assert _decide(line) is ASK
    assert _decide(line, redirection=True) is ASK


@pytest.mark.skipif(shutil.which("tar") is None, reason="tar is not installed")
def test_tar_remove_files_deletes_a_file_and_is_asked_about(tmp_path: Path) -> None:
    (tmp_path / "important.txt").write_text("keep me")
    line = "tar -cf /dev/null --remove-files important.txt"
    _bash(line, tmp_path)
    assert not (tmp_path / "important.txt").exists()
    assert _decide(line) is ASK


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
    assert _decide(line) is ASK


@pytest.mark.skipif(shutil.which("tar") is None, reason="tar is not installed")
def test_tar_multi_volume_prompt_spawns_a_shell_and_is_refused(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"x" * 40000)
    # `!` at the volume prompt runs `sh -i`; tar's stdio buffer takes the first 4 KiB.
    stdin = b"!\n" + b"\n" * 5000 + b"touch SPAWNED\nexit\nq\n"
    line = "tar -M -L 10 -cf out.tar big"
    _bash(line, tmp_path, stdin=stdin)
    assert (tmp_path / "SPAWNED").exists()
    assert _decide(line, redirection=True) is ASK


@pytest.mark.parametrize("line", ["ps eww -p 1", "ps auxe", "ps e", "ps -p 1 ewww"])
def test_ps_printing_environments_is_not_allowed_by_a_rule_for_ps(line: str) -> None:
    assert analyze(line).parts[0].opacity == "unknown"


@pytest.mark.parametrize("line", ["ps aux", "ps -ef", "ps -e -o pid,comm", "ps -p 1"])
def test_ps_listing_processes_stays_clear(line: str) -> None:
    assert analyze(line).parts[0].opacity == "clear"

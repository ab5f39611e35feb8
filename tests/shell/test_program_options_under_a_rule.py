"""Programs that run commands or write files through their options, judged under a rule for the
program (``shell.program_options``, ``shell._more_program_options``).

Under a world rule ``commandPrefix = [PROGRAM]`` ALLOW, each of these would do what it says:
``fdfind -x sh -c CMD`` runs ``CMD``; ``man -C FILE`` runs the programs the file names;
``git -C DIR`` runs git with another repository's configuration; ``iconv -o F`` and ``openssl
rand -out F`` write files. A command we cannot read is hidden code (``unknown``: no rule for
the program allows it, not even one with ``allowRedirection``), and a write is asked about
unless the rule says ``allowRedirection``. Archivers have a file of their own
(``test_archivers_under_a_rule.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
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
    assert first(line)[0] == "unknown"
    assert analyze(line).keys is None  # and no grant may cover it


@pytest.mark.parametrize("line", HIDDEN_CODE)
def test_hidden_code_is_never_allowed_by_a_rule_for_the_program(line: str) -> None:
    assert decide(line) is ASK
    assert decide(line, redirection=True) is ASK
    assert decide(line, non_interactive=True) is DENY


WRITES = [
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
    assert first(line) == ("clear", True)


@pytest.mark.parametrize("line", WRITES)
def test_a_write_is_asked_about_unless_the_rule_allows_redirection(line: str) -> None:
    assert decide(line) is ASK
    assert decide(line, redirection=True) is ALLOW



ORDINARY = [
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
    assert first(line) == ("clear", False)
    assert decide(line) is ALLOW


@pytest.mark.parametrize(
    ("approved", "later"),
    [
        ("fdfind foo", "fdfind -1 . -x sh -c 'id > P'"),
        ("git status", "git -C ../other status"),
        ("man ls", "man -C evil.conf ls"),
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
    assert decide(line) is ASK
    assert decide(line, redirection=True) is ASK


@pytest.mark.parametrize("line", ["ps eww -p 1", "ps auxe", "ps e", "ps -p 1 ewww"])
def test_ps_printing_environments_is_not_allowed_by_a_rule_for_ps(line: str) -> None:
    assert analyze(line).parts[0].opacity == "unknown"


@pytest.mark.parametrize("line", ["ps aux", "ps -ef", "ps -e -o pid,comm", "ps -p 1"])
def test_ps_listing_processes_stays_clear(line: str) -> None:
    assert analyze(line).parts[0].opacity == "clear"

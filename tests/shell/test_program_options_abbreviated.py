"""Abbreviated long options, and more options that write files or change the system
(``shell.program_options``).

GNU ``getopt_long`` (and git, and curl) take any unique prefix of a long option, so
``sed --expr='1e …'``, ``tar --to-com=…``, ``sort --out=…`` must be read like their full
spellings. Also ``git reflog --output``, ``git archive -o``, ``shuf -o``, ``sdiff -o`` write
files, and ``date -s`` / ``hostname NAME`` change the system.
"""

from __future__ import annotations

import pytest
from shell_rule_helpers import first


@pytest.mark.parametrize(
    "line",
    [
        "sed --expr='1e /usr/bin/to?ch P' -e p",
        "sed --e='1e touch P' f",
        "sed --expression '1e touch P' f",
        "sed --fil=x.sed f",
        "sed --f x.sed f",
        "tar --to-com='/usr/bin/to?ch P' -xf a.tar",
        "tar --use-comp=sh -xf a.tar",
        "tar --checkpoint-act=exec=sh -cf a.tar d",
        "tar --info-s=x -cf a.tar d",
        "sort --compress-prog=sh f",
        "git grep --open-files='touch P;' hello",
        "git grep --open hello",
        "git log --ext-d",
        "git --exec-p=/tmp log",
        "zip -T --unzip-c=sh a.zip f",
        "zip -qTT sh a.zip f",
        "curl --conf FILE",
        "curl --con=FILE",
        "man --pag=sh ls",
        "rsync --rsh=sh a b",
        "rsync --rs=sh a b",
        "date -s 2020-01-01",
        "date --set=2020-01-01",
        "date --se 2020-01-01",
        "date 010100002030",
        "date -u 0101000030",
        "hostname evil",
        "hostname -F /etc/name",
        "hostname --file=/etc/name",
        "hostname -b",
        "domainname evil",
    ],
)
def test_an_abbreviated_option_that_runs_code_or_changes_the_system_is_unknown(line: str) -> None:
    assert first(line)[0] == "unknown"


@pytest.mark.parametrize(
    "line",
    [
        "sort --out=../OUTSIDE f",
        "sort --o=x f",
        "sed --in-pl s/a/b/ f",
        "sed --in=.bak s/a/b/ f",
        "curl --remote-name-a http://x",
        "curl --out x http://x",
        "git log --out=x",
        "git reflog --output=../OUTSIDE",
        "git shortlog --output=x",
        "git stash list --output=x",
        "git stash show --output=x",
        "git archive -o x.tar HEAD",
        "git archive --output=x.tar HEAD",
        "git archive --out=x.tar HEAD",
        "git format-patch --output-d=out HEAD~1",
        "shuf -o x f",
        "shuf --output=x f",
        "shuf --out=x f",
        "sdiff -o merged a b",
        "sdiff --output=merged a b",
    ],
)
def test_an_option_that_writes_a_file_counts_as_a_redirection(line: str) -> None:
    assert first(line) == ("clear", True)


@pytest.mark.parametrize(
    "line",
    [
        "sed -n 1,5p file",
        "sed --expression=p f",
        "sed --quiet -e p f",
        "sort file",
        "sort -n --reverse f",
        "tar --checkpoint=10 -tf a.tar",
        "tar -tf a.tar",
        "git status",
        "git log --oneline",
        "git diff --output-indicator-new=+ HEAD",
        "git reflog",
        "git archive HEAD",
        "git grep -n hello",
        "shuf f",
        "sdiff a b",
        "date",
        "date +%s",
        "date -u",
        "date -d tomorrow +%F",
        "date --date=tomorrow",
        "date --date tomorrow",
        "date -R",
        "hostname",
        "hostname -f",
        "hostname -I",
        "curl -s http://x",
    ],
)
def test_ordinary_invocations_stay_clear(line: str) -> None:
    assert first(line) == ("clear", False)

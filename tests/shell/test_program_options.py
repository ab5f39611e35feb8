"""Options that make an allowed program run commands or write files (``shell.program_options``).

Found black-box: with ``git`` allowed and ``rm`` denied, ``git -c alias.x='!rm -f victim' x``
was ALLOWed and deleted the file; ``sed -n '1e rm …'`` too; ``sort -o``/``sed -i``/``git log
--output`` wrote files under a rule without ``allowRedirection``. Each such invocation must
now be read as running a command we cannot see (``unknown``) or as writing a file.
"""

from __future__ import annotations

import pytest

from agentworld.shell.commands import analyze
from agentworld.shell.program_options import plain_sed_script


def _first(line: str) -> tuple[str, bool]:
    part = analyze(line).parts[0]
    return part.opacity, part.redirects_output


@pytest.mark.parametrize(
    "line",
    [
        "git -c alias.x='!rm -f victim' x",
        "git -c core.pager='rm -f victim' log",
        "git -c core.fsmonitor='rm x' status",
        "git --config-env=core.pager=X log",
        "git --exec-path=/tmp/evil status",
        "git grep -O'rm -f victim' hello",
        "git grep --open-files-in-pager=rm hello",
        "git rebase -x 'rm x' HEAD~1",
        "git fetch --upload-pack='rm x' origin",
        "git clone -u 'rm x' repo",
        "git submodule foreach 'rm x'",
        "git bisect run rm x",
        "git config -e",
        "git $X status",
        "sed -n '1e rm -f victim' file.txt",
        "sed 's/.*/rm x/e' file.txt",
        "sed -n 'w out.txt' file.txt",
        "sed 's/a/b/w out.txt' file.txt",
        "sed -f script.sed file.txt",
        "sed -e 'r /etc/passwd' file.txt",
        "sed \"$SCRIPT\" file.txt",
        "man -P 'rm x' ls",
        "man --pager='rm x' ls",
        "rg --pre ./evil pattern",
        "sort --compress-program=./evil big.txt",
        "sort *",
        "tar --to-command='rm x' -xf a.tar",
        "tar -I ./evil -xf a.tar",
        "tar xIf ./evil a.tar",
        "tar --checkpoint-action=exec='rm x' -cf a.tar d",
        "zip -TT 'rm x' a.zip f",
        "rsync -e 'sh -c x' a host:b",
        "curl -K settings.txt",
        "sudo git -c alias.x='!id' x",
        "xargs git",  # the input becomes git's words: `-c alias.x=!rm x`
        "xargs -0 sort",
    ],
)
def test_an_option_that_runs_a_command_is_read_as_unknown(line: str) -> None:
    analysis = analyze(line)
    (program,) = [p for p in analysis.parts if p.root not in ("sudo", "xargs")]  # X is a part too
    assert program.opacity == "unknown"
    assert analysis.keys is None  # and no grant may cover it


@pytest.mark.parametrize(
    "line",
    [
        "sed -i s/a/b/ file.txt",
        "sed --in-place=.bak s/a/b/ file.txt",
        "sed -ni 's/a/b/p' file.txt",
        "sort -o out.txt in.txt",
        "sort -no out.txt in.txt",
        "sort --output=out.txt in.txt",
        "git log --output=out.txt",
        "git diff --output=out.txt",
        "git format-patch -o patches HEAD~2",
        "git config alias.x '!rm x'",
        "uniq in.txt out.txt",
        "xxd -r in.hex out.bin",
        "curl -o page.html http://example.test/",
        "curl -O http://example.test/file",
    ],
)
def test_an_option_that_writes_a_file_counts_as_a_redirection(line: str) -> None:
    opacity, writes = _first(line)
    assert opacity == "clear"
    assert writes


@pytest.mark.parametrize(
    "line",
    [
        "git status --short",
        "git log --oneline -5",
        "git diff HEAD~1",
        "git grep -n needle",
        "git push -u origin main",
        "git config user.name",
        "sed 's/a/b/g' file.txt",
        "sed -n '/start/,/end/p' file.txt",
        "sed -ne 's/x/y/p' -e '3q' file.txt",
        "sed -E 's|a/b|c|g;$!N' file.txt",
        "sort -n file.txt",
        "uniq file.txt",
        "man ls",
        "rg -n needle src",
        "tar -tzf a.tgz",  # listing; extracting writes (test_round4_programs)
        "curl http://example.test/",
    ],
)
def test_the_same_programs_without_such_options_stay_clear(line: str) -> None:
    assert _first(line) == ("clear", False)


@pytest.mark.parametrize(
    ("script", "plain"),
    [
        ("s/a/b/g", True),
        ("s|a/b|c|gI2", True),
        ("s/a\\/b/c/", True),
        ("1,/^$/{s/a/b/;p}", True),
        ("$!N; /x/I,+3d", True),
        ("y/abc/xyz/", True),
        ("3q", True),
        ("1e rm x", False),
        ("s/a/b/e", False),
        ("s/a/b/w out", False),
        ("s/a/b/ w out", False),
        ("w out", False),
        ("r /etc/passwd", False),
        ("a text", False),
        ("#n", False),
        ("s/a/b", False),
        (":loop", False),
    ],
)
def test_plain_sed_scripts_are_the_ones_that_neither_run_nor_write(script: str, plain: bool) -> None:
    assert plain_sed_script(script) is plain

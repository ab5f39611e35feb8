"""How a program's words are read as options, the way ``getopt``/``getopt_long`` read them.

Shared by :mod:`~agentworld.shell.program_options` (git, sed …),
:mod:`~agentworld.shell._more_program_options` (less, ssh, curl, wget …) and
:mod:`~agentworld.shell._archive_options` (tar, zip …): one reading of option words, so an
abbreviation or a glued value counts the same for every program. Perl programs (ack, cloc)
read theirs with ``Getopt::Long``, which takes ``-name`` as well: :func:`perl_values`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from agentworld.shell.words import Word


@dataclass(frozen=True, slots=True)
class OptionEffects:
    runs_hidden_code: bool = False
    writes_files: bool = False


NONE = OptionEffects()
HIDDEN = OptionEffects(runs_hidden_code=True)
WRITES = OptionEffects(writes_files=True)
SINKS = frozenset({"-", "/dev/null", "/dev/stdout", "/dev/stderr"})
"""Output files that write nothing anyone reads later (``-`` is standard output)."""
Effects = Callable[[Sequence[Word]], OptionEffects]


def flags(
    words: Sequence[Word], long: tuple[str, ...], short: str = "", *, exact: tuple[str, ...] = ()
) -> bool:
    """Whether an option word is one of ``long`` (``--x`` or ``--x=v``, or any abbreviation:
    ``getopt_long`` takes ``--out`` for ``--output``) or a short cluster with a letter of
    ``short`` anywhere in it (``-o``, ``-no``; a value glued on, as in ``-tX``, is read as
    letters too: it can only make the answer yes). ``--`` ends them. ``exact``: spellings of
    other options that are also prefixes of ``long`` (``tar --checkpoint``), which the
    program takes as themselves."""
    for word in words:
        value = word.value
        if value == "--":
            return False
        if value.startswith("--"):
            if value.partition("=")[0] not in exact and abbreviates(value.partition("=")[0], long):
                return True
        elif value.startswith("-") and any(letter in short for letter in value[1:]):
            return True
    return False


def abbreviates(option: str, spellings: Sequence[str]) -> bool:
    """Whether ``option`` (``--out``) is one of ``spellings`` or a prefix of one, as GNU
    ``getopt_long``, git and curl read it. A prefix of several is an error to the program;
    reading it as the worst of them is safe."""
    return len(option) > 2 and any(s.startswith(option) for s in spellings)


def positional(words: Sequence[Word], valued: str = "") -> list[Word]:
    """The non-option words (``valued``: short options that take the next word)."""
    found: list[Word] = []
    skip = False
    ended = False
    for word in words:
        if skip:
            skip = False
        elif ended or not word.value.startswith("-") or word.value == "-":
            found.append(word)
        elif word.value == "--":
            ended = True
        elif len(word.value) == 2 and word.value[1] in valued:
            skip = True
    return found


def short_options(words: Sequence[Word], valued: str) -> Iterator[tuple[str, str | None]]:
    """Each short option letter given, with its value for a letter of ``valued``, as
    ``getopt`` reads clusters: ``-o X``, ``-oX``, ``-vo X`` all give ``("o", "X")`` (``-vo``
    gives ``("v", None)`` first). ``--`` ends the options; long options are not looked at."""
    i = 0
    while i < len(words):
        value = words[i].value
        if value == "--":
            return
        if value.startswith("-") and not value.startswith("--") and value != "-":
            for j, letter in enumerate(value[1:], start=2):
                if letter not in valued:
                    yield letter, None
                    continue
                glued = value[j:]
                if not glued and i + 1 < len(words):
                    i += 1
                    glued = words[i].value
                yield letter, glued
                break
        i += 1


def long_values(words: Sequence[Word], spellings: tuple[str, ...]) -> Iterator[str]:
    """The values of the long options ``spellings`` (or their abbreviations), given as
    ``--name=VALUE`` or ``--name VALUE``."""
    for i, word in enumerate(words):
        if word.value == "--":
            return
        name, eq, given = word.value.partition("=")
        if name.startswith("--") and abbreviates(name, spellings):
            if eq:
                yield given
            elif i + 1 < len(words):
                yield words[i + 1].value


def spelled(words: Sequence[Word]) -> frozenset[str]:
    """The option words before ``--`` exactly as written: an option that *prevents* a write
    (``--stdout``, ``--check``, ``-so``) counts only so, since after ``--`` it is a file name
    and an abbreviation of it may be another option."""
    found: set[str] = set()
    for word in words:
        if word.value == "--":
            break
        found.add(word.value)
    return frozenset(found)


def perl_values(
    words: Sequence[Word], spellings: tuple[str, ...], *, exact: tuple[str, ...] = ()
) -> Iterator[str | None]:
    """The values of the options ``spellings`` as Perl's ``Getopt::Long`` reads them by
    default (``ack``, ``cloc``): ``--name`` or ``-name``, in any case, ``_`` for ``-``,
    abbreviated, the value after ``=`` or in the next word (None when there is none).
    ``exact``: other options that are also prefixes of ``spellings`` (``cloc --diff``),
    which the program takes as themselves."""
    for i, word in enumerate(words):
        value = word.value
        if value == "--":
            return
        if not value.startswith("-") or value == "-":
            continue
        name, eq, given = value[2 if value.startswith("--") else 1 :].partition("=")
        option = "--" + name.lower().replace("_", "-")
        if option not in exact and abbreviates(option, spellings):
            yield given if eq else (words[i + 1].value if i + 1 < len(words) else None)


def perl_flags(
    words: Sequence[Word], spellings: tuple[str, ...], *, exact: tuple[str, ...] = ()
) -> bool:
    """Whether one of the ``Getopt::Long`` options ``spellings`` is given (see
    :func:`perl_values`)."""
    return any(True for _ in perl_values(words, spellings, exact=exact))


def table(
    long: tuple[str, ...],
    short: str = "",
    writes_long: tuple[str, ...] = (),
    writes_short: str = "",
    *,
    exact: tuple[str, ...] = (),
) -> Effects:
    """A program whose options ``long``/``short`` run a command, and ``writes_*`` write files."""

    def effects(args: Sequence[Word]) -> OptionEffects:
        if flags(args, long, short, exact=exact):
            return HIDDEN
        return OptionEffects(writes_files=flags(args, writes_long, writes_short, exact=exact))

    return effects

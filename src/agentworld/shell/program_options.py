"""Options that turn a harmless-looking program into one that runs commands or writes files.

``git status`` only reads, but ``git -c alias.x='!rm -rf ~' x`` runs ``rm``; ``sort f``
prints, but ``sort -o f2 f`` writes ``f2``. A rule (or an "approve always" grant) for the
program was written with the first kind in mind, so :func:`option_effects` says, for the
programs known to have such options, whether this invocation

* runs a command we cannot read (``unknown``: no rule for the program may allow it, and a
  DENY rule "could match" it) — ``git -c``/``--upload-pack``/``rebase -x``, ``sed`` scripts
  with ``e``, ``man -P``/``-C``, ``rg --pre``, ``sort --compress-program``, ``tar
  --to-command``, ``zip -TT``, ``rsync -e``, ``git clone -c``/``--template``, ``git
  --git-dir``/``-C`` (another repository's configuration), ``git remote-ext``, ``openssl
  -engine`` …;
* writes files the way an output redirection does (a person is asked unless the rule says
  ``allowRedirection``) — ``sed -i``, ``sort -o``, ``git log --output``, ``git apply``,
  ``uniq IN OUT``, ``iconv -o``, ``openssl -out``, ``mktemp`` ….

A word only known at run time counts as the worst case: ``git $X`` may be ``git -c …``,
and a glob may expand to a file named ``-ofile``. The ``sed``
script reader accepts a plain subset (addresses, ``s``/``y`` and the one-letter commands);
anything else in a script is ``unknown``, never guessed at. Pagers, network clients,
splitters, compressors and programs handed a command (``less``, ``ssh``, ``curl``, ``split``,
``gzip``, ``fd -x``, ``ip netns exec`` …) are read in
:mod:`~agentworld.shell._more_program_options`, archivers (``tar``, ``zip``, ``unzip``, ``7z``
…) in :mod:`~agentworld.shell._archive_options`, all with the same option reading
(:mod:`~agentworld.shell._option_reading`).

These tables are frozen. No list of options is ever complete; a person's approval is bounded
by the sandbox (``tools/sandbox.py``: the working directory the only writable place, no
network, no process outliving the call), not by this list. A newly found way to make a program
run or write something is contained there, not added here.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentworld.shell._archive_options import ARCHIVERS
from agentworld.shell._more_program_options import MORE_PROGRAMS
from agentworld.shell._option_reading import (
    HIDDEN,
    NONE,
    WRITES,
    Effects,
    OptionEffects,
    abbreviates,
    flags,
    long_values,
    positional,
    short_options,
    spelled,
    table,
)
from agentworld.shell._test_runner_options import TEST_RUNNERS
from agentworld.shell.words import Word

__all__ = ["OptionEffects", "abbreviates", "has_options_to_read", "option_effects", "plain_sed_script"]


# -- git --------------------------------------------------------------------------------

_GIT_GLOBAL_VALUED = frozenset({"--namespace", "--super-prefix", "--list-cmds"})
# Global options that hand git a program, configuration or another repository (whose own
# configuration may set core.fsmonitor, hooks, a pager …); `-c`/`-C` are read apart.
_GIT_GLOBAL_CODE = ("--config-env", "--exec-path", "--git-dir", "--work-tree")
_GIT_CODE_OPTIONS = ("--upload-pack", "--receive-pack", "--exec", "--open-files-in-pager", "--extcmd", "--ext-diff", "--textconv", "--config-env", "--exec-path", "--separate-git-dir", "--sendmail-cmd", "--to-cmd", "--cc-cmd", "--header-cmd", "--smtp-server", "--edit-description", "--show-signature")
# `branch --edit-description` opens an editor (core.editor), as `config --edit` does;
# `log --show-signature` and the `%G…` placeholders of a format run gpg.program.
_GIT_RUNS = frozenset({"filter-branch", "filter-repo", "daemon", "instaweb", "web--browse", "credential", "mergetool", "difftool", "help", "send-email", "p4", "svn", "cvsimport", "cvsserver", "cvsexportcommit", "archimport", "quiltimport", "hook", "shell", "credential-cache", "credential-store", "credential-cache--daemon", "fsmonitor--daemon", "submodule--helper", "env--helper", "difftool--helper"})
_GIT_BUILTINS = frozenset(
    ["add", "am", "annotate", "apply", "archive", "bisect", "blame", "branch", "bugreport", "bundle", "cat-file", "check-attr", "check-ignore", "check-mailmap", "check-ref-format", "checkout", "checkout-index", "cherry", "cherry-pick", "clean", "clone", "column", "commit", "commit-graph", "commit-tree", "config", "count-objects", "describe", "diagnose", "diff", "diff-files", "diff-index", "diff-tree", "fast-export", "fast-import", "fetch", "fetch-pack", "fmt-merge-msg", "for-each-ref", "for-each-repo", "format-patch", "fsck", "fsck-objects", "gc", "get-tar-commit-id", "grep", "hash-object", "http-backend", "imap-send", "index-pack", "init", "init-db", "interpret-trailers", "log", "ls-files", "ls-remote", "ls-tree", "mailinfo", "mailsplit", "maintenance", "merge", "merge-base", "merge-file", "merge-index", "merge-tree", "mktag", "mktree", "multi-pack-index", "mv", "name-rev", "notes", "pack-objects", "pack-redundant", "pack-refs", "patch-id", "prune", "prune-packed", "pull", "push", "range-diff", "read-tree", "rebase", "receive-pack", "reflog", "remote", "repack", "replace", "request-pull", "rerere", "reset", "restore", "rev-list", "rev-parse", "revert", "rm", "send-pack", "shortlog", "show", "show-branch", "show-index", "show-ref", "sparse-checkout", "stage", "stash", "status", "stripspace", "submodule", "switch", "symbolic-ref", "tag", "unpack-file", "unpack-objects", "update-index", "update-ref", "update-server-info", "upload-archive", "upload-pack", "var", "verify-commit", "verify-pack", "verify-tag", "version", "whatchanged", "worktree", "write-tree"]
)
"""git's own commands (2.39's ``git --list-cmds=main``, less those in ``_GIT_RUNS``). Any other
word is an alias from a configuration file — ``alias.st = !touch x`` in the repository's
``.git/config`` runs a shell command — or a ``git-NAME`` program found on ``PATH``: what it
runs cannot be read from the line, and an approval of ``git status`` must not cover it."""
# Subcommands whose own `-c NAME=VALUE`/`--config` set configuration for the new repository
# (`git clone -c protocol.ext.allow=always 'ext::sh -c …'`), and whose `--template` copies
# hooks into it.
_GIT_CONFIGURING = frozenset({"clone", "submodule", "init"})
_GIT_EDITING = frozenset({"commit", "merge", "add", "tag", "cherry-pick", "pull", "revert", "notes"})
_GIT_SIGNING = frozenset({"commit", "merge", "pull", "rebase", "cherry-pick", "revert", "am", "commit-tree"})


def _git(args: Sequence[Word]) -> OptionEffects:
    i = 0
    while i < len(args) and args[i].value.startswith("-"):
        value = args[i].value
        if value.startswith(("-c", "-C")) or abbreviates(value.partition("=")[0], _GIT_GLOBAL_CODE):
            # configuration on the command line (aliases, pagers, hooks, filters), or `-C DIR`:
            # another repository, whose .git/config (core.fsmonitor …) we never saw
            return HIDDEN
        i += 2 if value in _GIT_GLOBAL_VALUED else 1
    if i >= len(args):
        return NONE
    sub, rest = args[i].value, args[i + 1 :]
    if sub in _GIT_RUNS or sub.startswith("remote-") or (sub == "submodule" and any(w.value == "foreach" for w in rest)):
        return HIDDEN  # `git remote-ext URL CMD` runs CMD, as every remote helper may
    if sub not in _GIT_BUILTINS:
        return HIDDEN  # an alias (`!cmd` in a config file) or a git-NAME program on PATH
    if sub in _GIT_CONFIGURING and flags(rest, ("--config", "--template"), "c"):
        return HIDDEN
    if sub == "bisect" and rest[:1] and rest[0].value in ("run", "view", "visualize"):
        return HIDDEN  # `bisect view git -c alias.x=!cmd x`: its words are a command
    if sub == "merge-index" or (sub == "maintenance" and positional(rest)[:1] and positional(rest)[0].value != "run"):
        return HIDDEN  # runs the program it names; `maintenance start` installs a timer
    if sub in ("push", "fetch", "pull", "ls-remote") and _local_repository(positional(rest)[:1]):
        return HIDDEN  # another repository on this machine: its hooks and configuration
    if sub == "archive" and flags(rest, ("--remote",)):
        return HIDDEN
    if sub in ("verify-commit", "verify-tag") or (
        flags(rest, ("--verify", "--sign", "--local-user"), "vsu") if sub == "tag"
        else sub in _GIT_SIGNING and flags(rest, ("--gpg-sign", "--verify-signatures"), "S")
    ):
        return HIDDEN  # gpg.program runs (from a configuration we may not have seen)
    if flags(rest, _GIT_CODE_OPTIONS, "O" if sub == "grep" else "") or any(
        "%G" in w.value or "%(signature" in w.value for w in rest
    ):
        return HIDDEN
    if (sub in _GIT_EDITING and flags(rest, (), "e")) or (
        sub == "rebase" and flags(rest, ("--interactive", "--edit-todo"), "i")
    ):
        return HIDDEN  # opens an editor (core.editor, sequence.editor)
    if sub == "push" and flags(rest, ("--signed",)):
        return HIDDEN  # gpg.program
    if sub in ("rebase", "fetch", "pull", "clone", "ls-remote", "archive", "push") and flags(
        rest, (), "xu" if sub != "push" else ""
    ):
        return HIDDEN  # rebase -x CMD; fetch/clone/ls-remote -u CMD (the upload pack)
    if sub == "config" and flags(rest, ("--edit",), "e"):
        return HIDDEN  # opens an editor
    if sub == "config" and (len(positional(rest)) >= 2 or flags(rest, ("--add", "--unset", "--unset-all", "--replace-all", "--rename-section", "--remove-section"))):
        return OptionEffects(writes_files=True)  # an alias set here runs later
    # Every command that takes diff or log options takes `--output` (log, reflog, shortlog,
    # stash list/show …); format-patch and archive also spell it `-o`.
    if flags(rest, ("--output", "--output-directory"), "o" if sub in ("format-patch", "archive") else ""):
        return OptionEffects(writes_files=True)
    return OptionEffects(writes_files=_git_writes_elsewhere(sub, rest))


def _local_repository(operands: Sequence[Word]) -> bool:
    """Whether a remote operand names a repository on this machine (a path or ``file:``)."""
    return any(w.value.startswith(("/", ".", "~", "file:")) for w in operands)


def _git_writes_elsewhere(sub: str, rest: Sequence[Word]) -> bool:
    """What a rule for git allows is git's work on the repository it runs in (``checkout``,
    ``commit``, ``reset``). These write a path the line names, or content from outside the
    repository: ``apply`` (a patch, as ``patch`` does, unless only ``--check``ed or
    summarised), ``clone``, ``init DIR``/``--bare``, ``bundle create``, ``worktree add``/
    ``move``, and ``format-patch`` (its ``NNNN-*.patch`` files, unless ``--stdout``). An
    option that prevents the write counts only spelled exactly."""
    words = spelled(rest)
    operands = positional(rest)
    action = operands[0].value if operands else ""
    if sub == "apply":
        summary = bool(words & {"--stat", "--numstat", "--summary"}) and not flags(rest, ("--apply",))
        return not ("--check" in words or summary)
    if sub in ("init", "init-db"):
        return bool(operands) or flags(rest, ("--bare",))
    if sub == "merge-file":
        return not ({"-p", "--stdout"} & words)
    return (
        sub in ("mailinfo", "mailsplit")
        or (sub == "interpret-trailers" and flags(rest, ("--in-place",)))
        or (sub == "checkout-index" and flags(rest, ("--prefix",)))
        or (sub == "fast-import" and flags(rest, ("--export-marks", "--import-marks-if-exists")))
        or sub == "clone"
        or (sub == "bundle" and action == "create")
        or (sub == "worktree" and action in ("add", "move"))
        or (sub == "format-patch" and "--stdout" not in words)
    )


# -- sed --------------------------------------------------------------------------------

_SED_ONE_LETTER = frozenset("=dDgGhHnNpPxzF{}")
_SED_NUMBERED = frozenset("qQlL")


def plain_sed_script(script: str) -> bool:
    """Whether ``script`` is made only of addresses, ``s``/``y`` (flags without ``e`` or
    ``w``), braces and the one-letter commands that neither run nor write anything (``p``,
    ``d``, ``q`` …). Anything else — ``e``, ``w``, ``r``, ``a``/``i``/``c`` text, labels,
    comments — is not read, so it is not plain."""
    i, end = 0, len(script)
    while True:
        i = _skip(script, i, " \t\n;")
        if i >= end:
            return True
        i = _address(script, i)
        if 0 <= i < end and script[i] == ",":
            i = _address(script, _skip(script, i + 1, " \t"), second=True)
        if i < 0:
            return False
        i = _skip(script, i, " \t")
        if i < end and script[i] == "!":
            i = _skip(script, i + 1, " \t")
        if i >= end:
            return False
        command = script[i]
        i += 1
        if command == "{":
            continue  # a block opens: its first command may follow at once
        if command in _SED_NUMBERED:
            i = _skip(script, _skip(script, i, " \t"), "0123456789")
        elif command in ("s", "y"):
            i = _delimited(script, i, parts=2)
            if i < 0:
                return False
            if command == "s":
                flags_end = _skip(script, i, "gpiImM0123456789")
                i = flags_end
        elif command not in _SED_ONE_LETTER:
            return False
        i = _skip(script, i, " \t")
        if i < end and script[i] not in ";\n}":
            return False  # `s/a/b/e`, `s/a/b/w f`: a flag or argument we do not allow


def _skip(text: str, i: int, chars: str) -> int:
    while i < len(text) and text[i] in chars:
        i += 1
    return i


def _delimited(text: str, i: int, *, parts: int) -> int:
    """The index after ``parts`` sections closed by the delimiter at ``text[i]``; -1 if
    they are not closed."""
    if i >= len(text) or text[i] in "\\\n":
        return -1
    delimiter = text[i]
    i += 1
    for _ in range(parts):
        while i < len(text) and text[i] != delimiter:
            i += 2 if text[i] == "\\" else 1
        if i >= len(text):
            return -1
        i += 1
    return i


def _address(text: str, i: int, *, second: bool = False) -> int:
    """The index after an address at ``text[i]`` (the same index when there is none; -1 when
    it is malformed): ``12``, ``1~2``, ``$``, ``/re/I``, ``\\%re%``; a second one may be
    ``+N`` or ``~N``."""
    if i >= len(text):
        return i
    first = text[i]
    if first.isdigit() or (second and first in "+~"):
        return _skip(text, _skip(text, i + 1, "0123456789~"), "0123456789")
    if first == "$":
        return i + 1
    if first == "/":
        i = _delimited(text, i, parts=1)
    elif first == "\\":
        i = _delimited(text, i + 1, parts=1)
    else:
        return -1 if second else i
    return i if i < 0 else _skip(text, i, "IM")


def _sed(args: Sequence[Word]) -> OptionEffects:
    scripts: list[Word] = []
    free: list[Word] = []
    writes = False
    i = 0
    while i < len(args):
        word = args[i]
        value = word.value
        nxt = args[i + 1] if i + 1 < len(args) else Word("", "", False, 0, 0)
        if value == "--":
            free += args[i + 1 :]
            break
        if value.startswith("--"):
            name, eq, given = value.partition("=")
            if abbreviates(name, ("--file",)):
                return HIDDEN  # the script is in a file we do not read
            if abbreviates(name, ("--expression",)):
                scripts.append(Word(word.text, given, word.literal, word.start, word.end) if eq else nxt)
                i += 0 if eq else 1
            elif abbreviates(name, ("--line-length",)) and not eq:
                i += 1
            writes = writes or abbreviates(name, ("--in-place",))
        elif value.startswith("-") and value != "-":
            for j, letter in enumerate(value[1:], start=2):
                if letter == "f":
                    return HIDDEN
                if letter == "i":
                    writes = True
                    break  # the rest is the backup suffix
                if letter in "el":
                    rest = value[j:]
                    if letter == "e":
                        scripts.append(Word(word.text, rest, word.literal, word.start, word.end) if rest else nxt)
                    i += 0 if rest else 1
                    break
        else:
            free.append(word)
        i += 1
    if not scripts:
        scripts = free[:1]
    if not scripts or any(not w.literal or not plain_sed_script(w.value) for w in scripts):
        return HIDDEN
    return OptionEffects(writes_files=writes)


# -- the others --------------------------------------------------------------------------


def _two_files(args: Sequence[Word], valued: str) -> OptionEffects:
    """``uniq IN OUT``, ``xxd IN OUT``: a second file operand is written."""
    return OptionEffects(writes_files=len(positional(args, valued)) >= 2)


def _date(args: Sequence[Word]) -> OptionEffects:
    """``date -s``/``--set`` and ``date MMDDhhmm`` set the system clock: a change to the
    system no rule for ``date`` was written for, so it is hidden."""
    if flags(args, ("--set",), "s"):
        return HIDDEN
    valued = ("--date", "--file", "--reference")
    i = 0
    while i < len(args):
        value = args[i].value
        if value == "--":
            return HIDDEN if any(not w.value.startswith("+") for w in args[i + 1 :]) else NONE
        if value.startswith("--"):
            i += 2 if "=" not in value and abbreviates(value, valued) else 1
        elif value.startswith("-") and value != "-":
            i += 2 if value[-1] in "dfr" and not any(c in "I" for c in value) else 1
        elif not value.startswith("+"):
            return HIDDEN  # an operand that is not +FORMAT is a date to set
        else:
            i += 1
    return NONE


def _man(args: Sequence[Word]) -> OptionEffects:
    """``-P``/``--pager`` and ``-H``/``--html`` name a program to run; ``-C``/``--config-file``
    reads a configuration that names programs (``DEFINE pager …``);
    ``-M``/``--manpath`` finds pages, and their preprocessors, where we did not look."""
    letters = {letter for letter, _ in short_options(args, "CLmMSsePrREp")}
    if letters & set("PHCM") or flags(args, ("--pager", "--html", "--browser", "--config-file", "--manpath")):
        return HIDDEN
    return NONE


def _info(args: Sequence[Word]) -> OptionEffects:
    """``-o FILE``/``--output`` (``-`` is standard output) and ``--dribble`` write;
    ``--restore`` replays keystrokes and ``--init-file`` binds keys we did not read."""
    if flags(args, ("--restore", "--init-file")):
        return HIDDEN
    outputs = [v for letter, v in short_options(args, "kdnfovx") if letter == "o"]
    outputs += long_values(args, ("--output",))
    return OptionEffects(writes_files=flags(args, ("--dribble",)) or any(v != "-" for v in outputs))


# openssl options that write a file (each command spells its own; none is abbreviated).
_OPENSSL_WRITES = frozenset(
    [
        "out", "keyout", "certout", "certsout", "cacertsout", "chainout", "extracertsout",
        "outdir", "reqout", "respout", "rspout", "sess_out", "keylogfile", "msgfile", "writerand",
        "CAcreateserial", "CAserial", "srpvfile", "updatedb", "signer",
    ]
)


def _openssl(args: Sequence[Word]) -> OptionEffects:
    """``-engine``/``-provider``/``-provider-path``/``-config`` load code or a configuration
    that may load it; ``openssl`` alone reads commands from standard input. ``-out``,
    ``-keyout``, ``-writerand`` … write; ``ca`` and ``srp`` keep databases of their own."""
    names = [w.value.lstrip("-").partition("=")[0] for w in args if w.value.startswith("-")]
    if not args or args[0].value == "engine" or any(
        "engine" in n or n in ("provider", "provider-path", "config", "ssl_config", "modulesdir") for n in names
    ):
        return HIDDEN
    return OptionEffects(writes_files=args[0].value in ("ca", "srp") or any(n in _OPENSSL_WRITES for n in names))


def _mktemp(args: Sequence[Word]) -> OptionEffects:
    """``mktemp`` creates the file (or, ``-d``, the directory) it names, unless ``-u``."""
    if any(letter == "u" for letter, _ in short_options(args, "p")) or {"--dry-run", "--help", "--version"} & spelled(args):
        return NONE
    return WRITES


def _hostname(args: Sequence[Word]) -> OptionEffects:
    """``hostname NAME``, ``-F FILE``, ``-b``: setting the host's name changes the system."""
    if positional(args) or flags(args, ("--file", "--boot"), "Fb"):
        return HIDDEN
    return NONE


_PROGRAMS: dict[str, Effects] = {
    "git": _git,
    "sed": _sed,
    "gsed": _sed,
    "man": _man,
    "info": _info,
    "rg": table(("--pre", "--hostname-bin")),
    "sort": table(("--compress-program",), "", ("--output",), "o"),
    "rsync": table(("--rsh", "--rsync-path"), "e"),
    "shuf": table((), "", ("--output",), "o"),
    "sdiff": table(("--diff-program",), "", ("--output",), "o"),
    "diff3": table(("--diff-program",)),
    "iconv": lambda args: OptionEffects(
        writes_files=flags(args, ("--output",)) or any(letter == "o" for letter, _ in short_options(args, "fto"))
    ),
    "openssl": _openssl,
    "mktemp": _mktemp,
    "date": _date,
    **dict.fromkeys(("hostname", "domainname", "nisdomainname", "ypdomainname"), _hostname),
    "uniq": lambda args: _two_files(args, "fsw"),
    "xxd": lambda args: _two_files(args, "cgloOs"),
    **MORE_PROGRAMS,
    **ARCHIVERS,
    **TEST_RUNNERS,
}


def has_options_to_read(name: str) -> bool:
    """Whether ``name`` is a program whose options this module reads: arguments it is handed
    unseen (``xargs git``: the input becomes its words) may be such options."""
    return name in _PROGRAMS


def option_effects(name: str, words: Sequence[Word]) -> OptionEffects | None:
    """What the options of ``words`` (the program's own name first) make it do; None for a
    program this module knows nothing about. A word only known at run time counts as
    hidden code."""
    effects = _PROGRAMS.get(name)
    if effects is None:
        return None
    args = words[1:]
    if any(not w.literal for w in args):
        return HIDDEN  # `git $X`, `sort *`: an expansion (a file named `-o…`) may be an option
    return effects(args)

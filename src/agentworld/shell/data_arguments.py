"""Programs whose arguments are data, never a command they run (SPEC P4).

A DENY rule for ``rm`` must keep denying ``sudo rm x`` and asking about ``ssh host 'rm x'``
or a wrapper we do not know (``ionice rm x``): a program may run its arguments. But
``echo "rm -rf /"``, ``git commit -m "rm old files"`` and ``grep "rm -rf" f`` run no ``rm``:
their arguments are text to print, a message, a pattern. :func:`takes_data_arguments` names
the programs for which that holds whenever the analysis reads the part as ``clear`` (the
options of theirs that run something — ``git -c``, ``sed e``, ``rg --pre`` … — already make a
part ``unknown`` in :mod:`~agentworld.shell.program_options`). Wrappers (``sudo``, ``env``,
``xargs``, ``find -exec``, ``bash -c`` …) never appear here: the command they run is a part of
its own, decided on its own (``find``'s ``-exec`` commands too). A program with an option
that runs a command and no table to read it (``install --strip-program``, ``ag --pager``) is
not listed.
"""

from __future__ import annotations

from agentworld.shell.split import CommandPart

DATA_ARGUMENTS = frozenset(
    # printing and tests
    ["echo", "printf", "true", "false", ":", "test", "[", "pwd", "cd", "pushd", "popd", "dirs", "type", "which", "whereis", "basename", "dirname", "realpath", "readlink", "date", "whoami", "id", "uname", "hostname", "seq", "yes", "sleep", "printenv", "locale", "nproc", "arch", "tty", "groups", "logname", "users", "cal", "factor", "expr"]
    # reading and searching
    + ["cat", "tac", "head", "tail", "wc", "nl", "ls", "dir", "vdir", "tree", "file", "stat", "du", "df", "grep", "egrep", "fgrep", "rg", "ack", "find", "diff", "cmp", "comm", "sort", "uniq", "cut", "tr", "column", "fold", "fmt", "paste", "join", "rev", "od", "hexdump", "xxd", "base64", "base32", "strings", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "sum", "jq", "yq", "less", "bat", "batcat", "fd", "fdfind", "locate", "cloc", "tokei", "numfmt", "expand", "unexpand", "split", "csplit", "look", "iconv", "sed"]
    # files and version control (what they do to files is asked about as writes, not here)
    + ["git", "touch", "mkdir", "rmdir", "cp", "mv", "ln", "chmod", "chown", "chgrp", "tee", "truncate", "mktemp", "tar", "zip", "unzip", "gzip", "gunzip", "zcat", "xz", "unxz", "bzip2", "bunzip2", "zstd", "unzstd", "patch", "curl", "wget", "gh"]
)


def takes_data_arguments(part: CommandPart) -> bool:
    """Whether every argument of ``part`` is data to its program: a ``clear`` part whose
    program (by its literal name, without a directory) is one of :data:`DATA_ARGUMENTS`."""
    return part.opacity == "clear" and bool(part.argv) and part.is_literal(0) and part.root in DATA_ARGUMENTS

"""How a ``commandRegex`` matches one command of a shell line (SPEC P4).

An ALLOW rule's regex is matched at the start of the command as written, the way gemini-cli
anchors it (``"command":"REGEX``), and never sees a comment. A DENY or ASK rule's regex sees
more, since denying or asking about more is safe: the words and redirect targets after quote
removal, the program without its directory, paths spelled plainly, and a match anywhere --
except a phrase inside a quoted argument of a program whose arguments are data, which runs
nothing (:mod:`agentworld.shell.data_arguments`).
"""

from __future__ import annotations

from collections.abc import Sequence

from agentworld.policy.rules import CompiledPattern
from agentworld.shell.data_arguments import takes_data_arguments
from agentworld.shell.directories import normal_paths
from agentworld.shell.split import CommandPart


def matches_regex(part: CommandPart, pattern: CompiledPattern) -> bool:
    """Whether ``pattern`` matches at the start of the part's source text (``commandRegex``,
    P4), as gemini-cli anchors it: ``git (status|log).*`` matches ``git status -s`` but not
    ``rm -rf ~ # git status`` (the comment is not part of the command) nor ``xgit status``.
    End the pattern with ``$`` to match the whole command."""
    return pattern.match(part.text) is not None


_MAX_RETRIES = 16


def wary_regex_hit(part: CommandPart, regex: CompiledPattern) -> bool:
    """Whether a DENY or ASK ``commandRegex`` matches the part.

    It matches at the start of the command as written, or of its words and redirect targets
    after quote removal (``rm '-rf' x`` is ``rm -rf x``; ``cat < ~/.a''ws/c`` reads
    ``~/.aws/c``), the program without its directory, paths spelled plainly -- or anywhere in
    those (a regex for a path, ``/etc/shadow``, or an option, ``push --force``), except, for a
    program whose arguments are data (``echo``, ``git``, ``grep`` …: ``data_arguments``),
    where the match reaches into an argument holding blanks: a quoted text, message or
    pattern (``echo "rm -rf /"``, ``git commit -m "rm old files"``) runs nothing."""
    words = [part.root or "", *part.argv[1:]] if part.argv else []
    variants = [(*words, *part.redirect_targets)]
    variants.append(tuple(normal_paths(w) for w in variants[0]))
    anchored = (part.text, normal_paths(part.text), " ".join(part.argv), *(" ".join(v) for v in variants))
    if any(regex.match(text) is not None for text in anchored):
        return True
    if not takes_data_arguments(part):
        return any(regex.search(text) is not None for text in anchored)
    return any(_hit_outside_phrases(regex, variant, len(words)) for variant in variants)


def _hit_outside_phrases(regex: CompiledPattern, words: Sequence[str], arguments: int) -> bool:
    r"""Whether ``regex`` is found in ``words`` joined by blanks, other than as a phrase of an
    argument holding blanks: a match that reaches into such an argument (one of the first
    ``arguments`` words, the program's name aside) and spans a blank or starts where it
    starts (``rm -rf`` or ``rm`` in ``"rm old files"``). A name inside it still counts: a
    path regex ``\.aws/c`` in ``cat "/a b/../.aws/c"``. After too many tries, yes (fail
    closed)."""
    text = " ".join(words)
    phrases, pos = [], 0
    for i, word in enumerate(words):
        if 0 < i < arguments and any(c.isspace() for c in word):
            phrases.append((pos, pos + len(word)))
        pos += len(word) + 1
    start = 0
    for _ in range(_MAX_RETRIES):
        found = regex.search(text, start)
        if found is None:
            return False
        a, b = found.start(), found.end()
        spans_blank = any(c.isspace() for c in text[a:b])
        if not any(a < e and s < max(b, a + 1) and (spans_blank or a == s) for s, e in phrases):
            return True
        start = a + 1
        if start > len(text):
            return False
    return True

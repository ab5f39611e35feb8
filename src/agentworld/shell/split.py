"""Split a shell command line into every simple command a shell would run (SPEC §2.7 P4).

Approving ``ls`` must never approve ``ls && rm -rf ~``, so the policy engine
evaluates each part of a line on its own. The line is parsed with the
tree-sitter bash grammar (lists, pipelines, ``$(..)``, backticks, subshells,
groups, control flow, functions, here-docs, process substitution) and every
command in the tree becomes a part. Around the grammar this module:

* unwraps wrappers: the scripts of ``bash -c``/``sh -c``/``eval``/``env -S``
  are parsed again, and ``sudo``, ``env``, ``xargs``, ``exec``, ``nohup``,
  ``timeout``, ``command``, ``nice``, ``time``, ``find -exec`` ... also yield
  the command they run as a part of its own;
* corrects the grammar where it reads a line differently from bash (found by
  running bash on fuzzed lines): line continuations are joined first, a line
  break folded into a simple command becomes the ``;`` it is to bash, a
  trailing redirect goes to the last command of a list, and skipped text,
  words read as comments or a ``$(`` left as text are refused;
* refuses what it cannot read with confidence — syntax errors, control
  characters, more than ``MAX_LENGTH`` characters, ``MAX_NESTING`` levels or
  ``MAX_PARTS`` commands — with :class:`UnparseableCommand` (the policy asks).

Only an operator that opens a file for writing (``>``, ``>>``, ``>|``, ``&>``,
``&>>``, ``>&file``) sets ``redirects_output``: duplicating or closing a
descriptor (``2>&1``, ``>&-``), input (``<``, here-docs) and the sinks
``/dev/null``, ``/dev/stdout``, ``/dev/stderr`` do not. A redirection of a
group or loop marks every part inside it.

Reading single nodes (words, redirects) is in ``_split_nodes``; finding where a
wrapper's command starts in its words, in ``_split_wrappers``.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from agentworld.errors import AgentWorldError
from agentworld.shell._split_nodes import (
    extra_destinations,
    group_words,
    node_text,
    node_word,
    redirect_targets,
    redirects_of,
    writes_file,
)
from agentworld.shell._split_wrappers import (
    SHELLS,
    WRAPPERS,
    find_commands,
    shell_script,
    skip_options,
)

MAX_LENGTH = 10_000
MAX_NESTING = 20
MAX_PARTS = 1_000
MAX_REPAIRS = 50

_NESTING = {"command_substitution", "process_substitution", "subshell", "compound_statement"}
_OTHER_COMMANDS = {"declaration_command", "unset_command", "test_command"}
# Nodes whose parts bash keeps on one line, and leaves that may span lines.
_SIMPLE = {
    "command",
    "declaration_command",
    "unset_command",
    "file_redirect",
    "herestring_redirect",
}
_SIMPLE |= {"command_name", "concatenation", "variable_assignment"}
_MULTILINE_LEAVES = {
    "raw_string",
    "ansi_c_string",
    "string_content",
    "heredoc_body",
    "heredoc_content",
}
_OPAQUE = {"string", "heredoc_body"}  # literal text between their children is content
_ASSIGNMENT_HOSTS = {"command", "declaration_command", "variable_assignments"}
_SUBSTITUTION_START = re.compile(r"\$\(|`")
_DYNAMIC = re.compile(r"[$`]")
_EXPANDING = re.compile(r"[*?\[{]|^~")  # globs, brace and tilde expansion
_COMMENT_START = re.compile(r"(?:^|[\s;&|()<>])#")
# Bash removes backslash-newline before it splits words; tree-sitter can misplace a line break
# next to one (`ls<NL>\<NL>rm` reads as `ls rm`), so continuations are joined first.
_CONTINUATION = re.compile(rb"(?<!\\)((?:\\\\)*)\\\n")
# Bash treats these as word characters; tree-sitter as blanks (`ls\rrm` is one word to bash).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class UnparseableCommand(AgentWorldError, ValueError):
    """The line cannot be split into commands with confidence; the policy asks a person."""


Opacity = Literal["clear", "runs_code", "unknown"]
"""How well a part is known: see :mod:`agentworld.shell.commands`."""


@dataclass(frozen=True)
class CommandPart:
    """One simple command a shell would run.

    ``argv`` holds the words after quote removal, without the leading
    ``VAR=value`` assignments (kept apart in ``assignments``); expansions such
    as ``$HOME`` or ``$(..)`` stay as their source text. A bare assignment
    (``PATH=/tmp``) is a part with an empty ``argv``, which no prefix matches.
    ``literal`` says, word by word, whether the value is known before the line
    runs (empty: judged from the text); ``key`` is what a grant records for
    it (None: no grant may cover it). ``moved``: the part runs after the line changed
    directory (``cd /etc && cat shadow``, ``env -C DIR``) and names files by relative paths,
    so which files it opens is only known at run time. ``redirect_targets``: the values of
    its redirections' targets, those of enclosing groups included (``{ cat; } < FILE``),
    which its text may not show: files it opens that no word names.
    """

    argv: tuple[str, ...]
    text: str
    redirects_output: bool
    assignments: tuple[str, ...] = ()
    literal: tuple[bool, ...] = ()
    opacity: Opacity = "clear"
    key: str | None = None
    moved: bool = False
    redirect_targets: tuple[str, ...] = ()

    @property
    def root(self) -> str:
        """The command's name without its directory (``/usr/bin/git`` -> ``git``)."""
        return posixpath.basename(self.argv[0]) if self.argv else ""

    def is_literal(self, index: int) -> bool:
        """Whether word ``index`` is exactly one word whose value is known before the line runs."""
        if self.literal:
            return self.literal[index]
        return _DYNAMIC.search(self.argv[index]) is None and not _EXPANDING.search(self.argv[index])

    @property
    def fully_literal(self) -> bool:
        """Whether every word is known before the line runs: no glob, expansion or ``~``
        whose value a pattern could not see."""
        return all(self.is_literal(i) for i in range(len(self.argv)))


@dataclass(frozen=True)
class ParsedCommand:
    """Every simple command of a line, in source order (wrapped commands right after their wrapper)."""

    parts: tuple[CommandPart, ...]

    @property
    def roots(self) -> tuple[str, ...]:
        """The distinct non-empty root commands, in order of first appearance."""
        return tuple(dict.fromkeys(p.root for p in self.parts if p.root))

    @property
    def has_redirection(self) -> bool:
        """Whether any part writes its output to a file."""
        return any(p.redirects_output for p in self.parts)


def command_line(command: str, parameters: Sequence[str] | None) -> str:
    """The full line the shell runs: the command, then each parameter as one quoted word."""
    if not parameters:
        return command
    return " ".join([command, *(shlex.quote(p) for p in parameters)])


def parse_command(line: str) -> ParsedCommand:
    """Split ``line`` into its simple commands; raise :class:`UnparseableCommand` when unsure."""
    if not line.strip():
        raise UnparseableCommand("empty command")
    if len(line) > MAX_LENGTH:
        raise UnparseableCommand(f"command longer than {MAX_LENGTH} characters")
    parts = _parse(line, depth=0, redirected=False)
    if not parts:
        raise UnparseableCommand("no command to run")
    return ParsedCommand(tuple(parts))


@cache
def prefix_words(prefix: str) -> tuple[str, ...]:
    """Rules are few and evaluated often: split each prefix once."""
    return tuple(shlex.split(prefix))


# --- parsing -----------------------------------------------------------------


@cache
def _language() -> Language:
    return Language(tree_sitter_bash.language())


def _parse(line: str, *, depth: int, redirected: bool) -> list[CommandPart]:
    if depth > MAX_NESTING:
        raise UnparseableCommand(f"nested deeper than {MAX_NESTING} levels")
    if _CONTROL.search(line):
        raise UnparseableCommand("command contains a control character")
    try:
        src = line.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UnparseableCommand("command is not valid text") from exc
    if _CONTINUATION.search(src):
        # Inside comments and quoted here-docs bash keeps the backslash-newline; don't guess.
        if _COMMENT_START.search(line) or "<<" in line:
            raise UnparseableCommand("line continuation next to a comment or here-doc")
        src = _join_continuations(src)
    src, root = _tree(src)
    parts: list[CommandPart] = []
    owners: dict[int, Node] = {}  # node id -> the redirected_statement whose redirects it takes
    # An explicit stack, not recursion: a long `a && b && ...` chain nests deeply.
    stack: list[tuple[Node, bool, int]] = [(root, redirected, depth)]
    while stack:
        node, red, level = stack.pop()
        if node.type in _NESTING:
            level += 1
            if level > MAX_NESTING:
                raise UnparseableCommand(f"nested deeper than {MAX_NESTING} levels")
        stmt = owners.get(node.id)
        red = red or (stmt is not None and any(map(writes_file, redirects_of(stmt))))
        if node.type == "redirected_statement":
            target = node.child_by_field_name("body")
            # The grammar reads `a && b >f x` as `(a && b) >f x`; bash gives `>f x` to b alone.
            while target is not None and target.type in ("list", "pipeline", "negated_command"):
                target = [c for c in target.named_children if c.type != "comment"][-1]
            if target is not None:
                owners[target.id] = node
            else:  # `> file` truncates a file; `>f cmd` may read as one redirect
                extra = [d for r in redirects_of(node) for d in extra_destinations(r)]
                words, spans = group_words(extra)
                writes = red or any(map(writes_file, redirects_of(node)))
                part = CommandPart(tuple(words), node_text(node), writes)
                parts += [part, *_unwrap(src, part.argv, spans, writes, level)]
        elif node.type == "command":
            parts.extend(_command_parts(src, node, stmt, red, level))
        elif node.type in _OTHER_COMMANDS:
            parts.append(
                CommandPart(tuple(node_word(c) for c in node.children), node_text(node), red)
            )
        elif node.type in ("variable_assignment", "variable_assignments") and (
            node.parent is None or node.parent.type not in _ASSIGNMENT_HOSTS
        ):
            pieces = node.named_children if node.type == "variable_assignments" else [node]
            parts.append(CommandPart((), node_text(node), red, tuple(node_text(c) for c in pieces)))
        stack.extend((child, red, level) for child in reversed(node.children))
        if len(parts) > MAX_PARTS:  # bounds the work re-parsing nested `bash -c "$(..)"` can do
            raise UnparseableCommand(f"more than {MAX_PARTS} commands")
    return parts


def _join_continuations(src: bytes) -> bytes:
    """Remove each backslash-newline as bash does, except inside ``'..'`` and ``$'..'``."""
    root = Parser(_language()).parse(src).root_node
    if root.has_error:
        raise UnparseableCommand("shell syntax error")
    quoted: list[tuple[int, int]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in ("raw_string", "ansi_c_string"):
            quoted.append((node.start_byte, node.end_byte))
        stack.extend(node.children)

    def join(m: re.Match[bytes]) -> bytes:
        inside = any(a <= m.end() - 2 < b for a, b in quoted)
        return m[0] if inside else m[1]

    return _CONTINUATION.sub(join, src)


def _tree(src: bytes) -> tuple[bytes, Node]:
    """Parse ``src``, turning each newline that tree-sitter folded into a simple command into
    the ``;`` it is to bash (the grammar reads ``a | b | c<NL>d && e`` as ``c d``)."""
    for _ in range(MAX_REPAIRS):
        root = Parser(_language()).parse(src).root_node
        if root.has_error:
            raise UnparseableCommand("shell syntax error")
        pos = _misread(src, root)
        if pos is None:
            return src, root
        if b"#" in src[src.rfind(b"\n", 0, pos) + 1 : pos]:  # a `;` there could be a comment's
            raise UnparseableCommand("misread line break after a comment")
        src = src[:pos] + b";" + src[pos + 1 :]
    raise UnparseableCommand("too many misread line breaks")


def _misread(src: bytes, root: Node) -> int | None:
    """Check the tree against how bash reads ``src``: return where a line break sits inside a
    simple command (bash never allows one there), or raise if the grammar skipped text other
    than blanks (it drops an escaped blank: ``a \\ b``) or misread a literal."""
    covered: list[tuple[int, int]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        _check_literal(src, node)
        if node.type in _SIMPLE:
            for a, b in zip(node.children, node.children[1:], strict=False):
                if (i := src.find(b"\n", a.end_byte, b.start_byte)) >= 0:
                    return i
        if node.child_count == 0 or node.type in _OPAQUE:
            covered.append((node.start_byte, node.end_byte))
        if node.child_count == 0 and node.type not in _MULTILINE_LEAVES:
            text = src[node.start_byte : node.end_byte]
            if text.lstrip(b" \t").startswith(b"\n"):
                return node.start_byte + text.index(b"\n")
            if b"\n" in text:
                raise UnparseableCommand("line break inside a word")
        stack.extend(node.children)
    pos = 0
    for start, end in sorted(covered):
        if src[pos:start].strip(b" \t\n"):
            raise UnparseableCommand("text the parser skipped")
        pos = max(pos, end)
    if src[pos:].strip(b" \t\n"):
        raise UnparseableCommand("text the parser skipped")
    return None


def _check_literal(src: bytes, node: Node) -> None:
    """Refuse text the grammar read differently from bash: a ``$(`` or backtick left inside
    literal text (some here-docs), or a ``#`` taken for a comment in the middle of a word."""
    if node.type == "comment":
        if node.start_byte and src[node.start_byte - 1] not in b" \t\n;&|()<>":
            raise UnparseableCommand("'#' inside a word read as a comment")
        return
    if node.type == "heredoc_body":
        siblings = node.parent.children if node.parent else []
        start = next((c for c in siblings if c.type == "heredoc_start"), None)
        if node.named_child_count or (start and any(q in node_text(start) for q in "'\"\\")):
            return
    elif node.type not in ("word", "string_content", "heredoc_content"):
        return
    if _SUBSTITUTION_START.search(re.sub(r"\\.", "", node_text(node, strip=False), flags=re.S)):
        raise UnparseableCommand("command substitution the parser did not recognise")


def _command_parts(
    src: bytes, cmd: Node, stmt: Node | None, red: bool, level: int
) -> list[CommandPart]:
    items: list[Node] = []
    assignments: list[str] = []
    redirects: list[Node] = []
    for i, child in enumerate(cmd.children):
        field = cmd.field_name_for_child(i)
        if child.type == "variable_assignment":
            assignments.append(node_text(child))
        elif field in ("name", "argument"):
            items.append(child)
        elif field == "redirect":
            red = red or writes_file(child)
            items.extend(extra_destinations(child))
            redirects.append(child)
        elif child.is_named and child.type != "comment":
            raise UnparseableCommand(f"unexpected {child.type} in a command")
    end = cmd.end_byte
    if stmt is not None:
        items.extend(d for r in redirects_of(stmt) for d in extra_destinations(r))
        redirects.extend(redirects_of(stmt))
        end = stmt.end_byte
    words, spans = group_words(items)
    text = src[cmd.start_byte : end].decode("utf-8", "replace").strip()
    part = CommandPart(tuple(words), text, red, tuple(assignments), redirect_targets=redirect_targets(redirects))
    return [part, *_unwrap(src, part.argv, spans, red, level)]


# --- wrappers ----------------------------------------------------------------


def _unwrap(
    src: bytes, argv: tuple[str, ...], spans: list[tuple[int, int]], red: bool, level: int
) -> list[CommandPart]:
    """The commands that a wrapper such as ``sudo`` or ``bash -c`` runs, as parts of their own."""
    name = posixpath.basename(argv[0]) if argv else ""
    if name in SHELLS:
        script = shell_script(argv)
        return [] if script is None else _parse(script, depth=level + 1, redirected=red)
    if name == "eval":
        return _parse(" ".join(argv[1:]), depth=level + 1, redirected=red)
    if name == "find":
        ranges = find_commands(argv)
        return [p for a, b in ranges for p in _inner(src, argv[a:b], spans[a:b], red, level)]
    if name not in WRAPPERS:
        return []
    start, split_string = skip_options(name, argv)
    if split_string is not None:  # env -S 'cmd args': the string is split into words and run
        rest = " ".join(shlex.quote(a) for a in argv[start:])
        return _parse(f"{split_string} {rest}", depth=level + 1, redirected=red)
    return _inner(src, argv[start:], spans[start:], red, level)


def _inner(
    src: bytes, argv: tuple[str, ...], spans: list[tuple[int, int]], red: bool, level: int
) -> list[CommandPart]:
    if not argv:
        return []
    if level + 1 > MAX_NESTING:
        raise UnparseableCommand(f"nested deeper than {MAX_NESTING} levels")
    text = src[spans[0][0] : spans[-1][1]].decode("utf-8", "replace").strip()
    return [CommandPart(argv, text, red), *_unwrap(src, argv, spans, red, level + 1)]

"""What single nodes of the tree-sitter bash tree mean (for :mod:`~agentworld.shell.split`).

The split walks the tree; these functions read its nodes: the words they stand for
after quote removal (expansions such as ``$HOME`` or ``$(..)`` keep their source
text, since their value is only known when the line runs), and whether a
redirection opens a file for writing.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tree_sitter import Node

_ANSI_C = re.compile(
    r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|.)", re.S
)
_ANSI_C_SIMPLE = dict(zip("abeEfnrtv\\'\"?", "\a\b\x1b\x1b\f\n\r\t\v\\'\"?", strict=True))
_HARMLESS_SINKS = {"/dev/null", "/dev/stdout", "/dev/stderr"}


def node_text(node: Node, *, strip: bool = True) -> str:
    """The source text of ``node``."""
    text = (node.text or b"").decode("utf-8", "replace")
    return text.strip() if strip else text


def node_word(node: Node) -> str:
    """The word a node stands for after quote removal; expansions keep their source text."""
    text = node_text(node, strip=False)
    match node.type:
        case "word":
            return re.sub(r"\\(.)", r"\1", text, flags=re.S)
        case "raw_string":
            return text[1:-1]
        case "ansi_c_string":
            return _ANSI_C.sub(_ansi_c_escape, text[2:-1])
        case "string":
            return _join(node, _unescape_dquoted, inner=True)
        case "$":  # `$"text"` is a translated "text"; the grammar gives the `$` a node of its own
            nxt = node.next_sibling
            if nxt is not None and nxt.type == "string" and nxt.start_byte == node.end_byte:
                return text[:-1]
        case "command_name" | "concatenation":
            return _join(node, lambda s: s, inner=False)
    return text


def _join(node: Node, literal: Callable[[str], str], *, inner: bool) -> str:
    """Concatenate a node's pieces; text between child nodes counts as literal text."""
    text, base = node.text or b"", node.start_byte
    children = list(node.children)
    pos, end = 0, len(text)
    if inner:  # drop the quotes of "..."
        pos, end, children = 1, end - 1, children[1:-1]
    out: list[str] = []
    for child in children:
        out.append(literal(text[pos : child.start_byte - base].decode("utf-8", "replace")))
        is_content = inner and child.type == "string_content"
        out.append(literal(node_text(child, strip=False)) if is_content else node_word(child))
        pos = child.end_byte - base
    out.append(literal(text[pos:end].decode("utf-8", "replace")))
    return "".join(out)


def _unescape_dquoted(text: str) -> str:
    return re.sub(r'\\([$`"\\])', r"\1", text)


def _ansi_c_escape(m: re.Match[str]) -> str:
    esc = m[1]
    if esc[0] in "xuU" and len(esc) > 1:
        return chr(min(int(esc[1:], 16), 0x10FFFF))
    if esc[0] in "01234567":
        return chr(int(esc, 8))
    return _ANSI_C_SIMPLE.get(esc, "\\" + esc)


def group_words(items: list[Node]) -> tuple[list[str], list[tuple[int, int]]]:
    """Join nodes that touch (no blank between them) into words."""
    words: list[str] = []
    spans: list[tuple[int, int]] = []
    prev: Node | None = None
    for node in items:
        piece = node_word(node)
        if prev is not None and node.start_byte == prev.end_byte:
            words[-1] += piece
            spans[-1] = (spans[-1][0], node.end_byte)
        else:
            words.append(piece)
            spans.append((node.start_byte, node.end_byte))
        prev = node
    return words, spans


def redirects_of(stmt: Node) -> list[Node]:
    """The redirections of a ``redirected_statement``."""
    return list(stmt.children_by_field_name("redirect"))


def extra_destinations(redirect: Node) -> list[Node]:
    # tree-sitter hangs the words after `cmd >file` on the redirect; the shell passes them to cmd.
    if redirect.type != "file_redirect":
        return []
    return list(redirect.children_by_field_name("destination"))[1:]


def redirect_targets(redirects: list[Node]) -> tuple[str, ...]:
    """The files ``redirects`` name, after quote removal (``< ~/.a''ws/x`` is ``~/.aws/x``):
    a DENY pattern must see them as it sees words."""
    targets: list[str] = []
    for redirect in redirects:
        dests = list(redirect.children_by_field_name("destination"))
        if redirect.type == "file_redirect" and dests:
            targets.append(node_word(dests[0]))
    return tuple(targets)


def writes_file(redirect: Node) -> bool:
    """Whether a redirection opens a file for writing (``2>&1``, ``<`` and ``/dev/null`` do not)."""
    if redirect.type != "file_redirect":
        return False  # here-docs and here-strings feed input
    op = next((node_text(c) for c in redirect.children if not c.is_named), "")
    if (op.startswith("<") and op != "<>") or op.endswith("&-"):
        return False
    dests = redirect.children_by_field_name("destination")
    if not dests:
        return True
    target = node_word(dests[0])
    if op.endswith("&") and (target.isdigit() or target == "-"):
        return False  # descriptor duplication such as 2>&1
    return target not in _HARMLESS_SINKS

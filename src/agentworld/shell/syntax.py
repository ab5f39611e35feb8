"""A strict reader for the part of bash the policy fully understands (SPEC P4; fail closed).

The policy may ALLOW a shell line only when it knows every command the line will
run. This module reads a deliberately small subset of bash, character by
character, with bash's own rules for that subset, and refuses everything else
with :class:`NotUnderstood` — the policy then asks a person (or denies). The
subset:

* lists and pipelines: ``;`` ``&`` ``&&`` ``||`` ``|`` ``|&`` and newlines;
  subshells ``( .. )``, groups ``{ ..; }``; comments;
* simple commands: ``NAME=value`` prefixes, words, and redirections
  (``<`` ``>`` ``>>`` ``>|`` ``<>`` ``&>`` ``&>>`` ``n>&m`` ``n>&-`` ``<<<``);
* words made of plain characters, ``\\x`` escapes, ``'..'``, ``"..."``,
  ``$NAME``/``${NAME}``/``$1``/``$?``-style parameters, and ``$( .. )`` and
  backticks without backslashes, whose commands are read the same way, recursively.

Refused, among others: backticks holding backslashes, ``$((..))``/``$[..]`` arithmetic, any other
``${..}`` form, ``$'..'``/``$".."`` (their decoding is not modelled here), here-
documents, process substitution, ``{fd}>`` redirections, reserved words at the
start of a command (``if``, ``for``, ``[[``, ``!``, ``time`` …), function
definitions, ``((``, control characters and syntax errors.

Each :class:`Word` knows whether its value is *literal* — exactly one word
whose text is known before the line runs. Parameters, command substitutions,
unquoted glob characters, brace expansion and a leading ``~`` make a word
non-literal: its value is only known at run time, so no rule may rely on it.
``dialect="posix"`` reads scripts handed to ``sh -c`` (dash here), refusing the
bash-only syntax that dash reads differently (``&>``, ``|&``, ``<<<``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from agentworld.errors import AgentWorldError
from agentworld.shell.words import Redirect, SimpleCommand, Word

Dialect = Literal["bash", "posix"]

MAX_LENGTH = 10_000
MAX_DEPTH = 20
MAX_COMMANDS = 1_000

RESERVED_WORDS = frozenset(
    ["if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do", "done", "in", "function", "time", "coproc", "{", "}", "[[", "]]", "!"]
)
_BLANKS = " \t"
_METACHARACTERS = frozenset(" \t\n|&;()<>")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=")
_SPECIAL_PARAMETERS = frozenset("@*#?$!-0123456789")
_GLOB = frozenset("*?[")
# Characters after a `$` that bash leaves as a literal `$` (anything else is refused).
_LITERAL_AFTER_DOLLAR = frozenset(" \t\n|&;()<>/.,:%+=~^") | {""}
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class NotUnderstood(AgentWorldError, ValueError):
    """The line uses syntax outside the understood subset; no rule may ALLOW it."""


@dataclass
class _Reader:
    src: str
    dialect: Dialect
    pos: int = 0
    commands: list[SimpleCommand] = field(default_factory=list)

    # -- characters ----------------------------------------------------------

    def peek(self, offset: int = 0) -> str:
        i = self.pos + offset
        return self.src[i] if i < len(self.src) else ""

    def startswith(self, text: str) -> bool:
        return self.src.startswith(text, self.pos)

    def refuse(self, why: str) -> NotUnderstood:
        return NotUnderstood(f"{why} (at character {self.pos + 1})")

    def skip_continuations(self) -> None:
        """Bash drops backslash-newline pairs outside quotes before it reads further."""
        while self.startswith("\\\n"):
            self.pos += 2

    def skip_blanks(self, *, newlines: bool = False) -> None:
        while True:
            self.skip_continuations()
            ch = self.peek()
            if ch in _BLANKS and ch or ch == "\n" and newlines:
                self.pos += 1
            elif ch == "#":  # a comment: only at the start of a word, which is where we are
                while self.peek() not in ("\n", ""):
                    self.pos += 1
            else:
                return

    # -- lists ---------------------------------------------------------------

    def read_list(self, *, closing: str | None, depth: int, redirects: tuple[Redirect, ...]) -> None:
        """Commands separated by operators, up to ``closing`` (``)``) or the end of the text."""
        if depth > MAX_DEPTH:
            raise self.refuse(f"nested deeper than {MAX_DEPTH} levels")
        seen = False
        while True:
            self.skip_blanks(newlines=True)
            if self.peek() == "" or self.at_closing(closing):
                break
            self.read_pipeline(depth=depth, redirects=redirects)
            seen = True
            self.skip_blanks()
            if self.startswith("&&") or self.startswith("||"):
                self.pos += 2
                self.skip_blanks(newlines=True)
                if self.peek() == "" or self.at_closing(closing):
                    raise self.refuse("a command must follow '&&' or '||'")
                continue
            if self.startswith(";;") or self.startswith(";&"):
                raise self.refuse("case terminators outside case")
            ch = self.peek()
            if ch in (";", "&", "\n"):
                self.pos += 1
            elif ch != "" and not self.at_closing(closing):
                raise self.refuse(f"unexpected {ch!r}")
        if closing is not None and not self.at_closing(closing):
            raise self.refuse(f"missing {closing!r}")
        if not seen:
            raise self.refuse("no command")

    def at_closing(self, closing: str | None) -> bool:
        """``)`` closes wherever it stands; ``}`` only as a whole word where a command starts."""
        if closing is None or self.peek() != closing:
            return False
        return closing == ")" or self.peek(1) in _METACHARACTERS or self.peek(1) == ""

    def read_pipeline(self, *, depth: int, redirects: tuple[Redirect, ...]) -> None:
        while True:
            self.read_command(depth=depth, redirects=redirects)
            self.skip_blanks()
            if self.startswith("||") or not self.startswith("|"):
                return
            if self.startswith("|&"):
                if self.dialect == "posix":
                    raise self.refuse("'|&' reads differently in sh")
                self.pos += 2
            else:
                self.pos += 1
            self.skip_blanks(newlines=True)

    # -- commands ------------------------------------------------------------

    def read_command(self, *, depth: int, redirects: tuple[Redirect, ...]) -> None:
        self.skip_blanks()
        if self.peek() == "(":
            if self.peek(1) == "(":
                raise self.refuse("arithmetic command '((' is not read")
            self.read_group("(", ")", depth=depth, redirects=redirects)
            return
        if self.peek() == "{" and self.peek(1) in (" ", "\t", "\n"):
            self.read_group("{", "}", depth=depth, redirects=redirects)
            return
        start = end = self.pos
        assignments: list[Word] = []
        words: list[Word] = []
        own: list[Redirect] = []
        while True:
            end = self.pos  # the text ends before the blanks and any comment after it
            self.skip_blanks()
            ch = self.peek()
            if ch in ("", "\n", ";", "|", ")") or self.startswith("&&") or (
                ch == "&" and self.peek(1) != ">"
            ):
                break
            if ch == "(":
                raise self.refuse("'(' inside a command (function definition or pattern)")
            redirect = self.read_redirect()
            if redirect is not None:
                own.append(redirect)
                continue
            word = self.read_word(depth=depth)
            named_fd = word.text.startswith("{") and word.text.endswith("}")
            if self.peek() in ("<", ">") and named_fd:
                raise self.refuse("'{name}>' redirections are not read")
            if self.peek() in ("<", ">") and word.text.isdigit():
                redirect = self.read_redirect(fd=word.text)
                assert redirect is not None
                own.append(redirect)
                continue
            if not words and _ASSIGNMENT.match(word.text):
                assignments.append(word)
                continue
            if not words and word.text in RESERVED_WORDS:
                raise self.refuse(f"reserved word {word.text!r}")
            words.append(word)
        if not (assignments or words or own):
            raise self.refuse("empty command")
        text = self.src[start:end].strip()
        self.add(SimpleCommand(tuple(assignments), tuple(words), (*own, *redirects), text, depth))

    def read_group(
        self, opening: str, closing: str, *, depth: int, redirects: tuple[Redirect, ...]
    ) -> None:
        """A subshell ``( .. )`` or a group ``{ ..; }``, and the redirects after it, which
        apply to every command inside."""
        self.pos += len(opening)
        inner = _Reader(self.src, self.dialect, self.pos)
        inner.read_list(closing=closing, depth=depth + 1, redirects=())
        if closing == "}" and self.src[: inner.pos].rstrip(" \t")[-1:] not in (";", "\n", "&"):
            raise self.refuse("'}' must follow ';', '&' or a newline")
        self.pos = inner.pos + 1
        after: list[Redirect] = []
        while True:
            self.skip_blanks()
            fd = ""
            while self.peek(len(fd)).isdigit():
                fd += self.peek(len(fd))
            if fd and self.peek(len(fd)) in ("<", ">"):
                self.pos += len(fd)
            elif fd:
                raise self.refuse(f"a word after {closing!r}")
            redirect = self.read_redirect(fd=fd)
            if redirect is None:
                break
            after.append(redirect)
        ch = self.peek()
        if ch not in ("", "\n", ";", "&", "|", ")"):
            raise self.refuse(f"a word after {closing!r}")
        outer = (*after, *redirects)
        for command in inner.commands:
            self.add(
                SimpleCommand(
                    command.assignments, command.words, (*command.redirects, *outer),
                    command.text, command.depth,
                )
            )

    def add(self, command: SimpleCommand) -> None:
        self.commands.append(command)
        if len(self.commands) > MAX_COMMANDS:
            raise self.refuse(f"more than {MAX_COMMANDS} commands")

    def read_redirect(self, *, fd: str = "") -> Redirect | None:
        """A redirection operator and its target word, or None when none starts here."""
        ops = ["&>>", "&>", ">>", ">|", ">&", "<&", "<>", "<<<", "<<", "<", ">"]
        op = next((o for o in ops if self.startswith(o)), None)
        if op is None:
            return None
        if op == "<<":
            raise self.refuse("here-documents are not read")
        if op in ("&>", "&>>", "<<<") and self.dialect == "posix":
            raise self.refuse(f"{op!r} reads differently in sh")
        if op in ("<", ">") and self.peek(1) == "(":
            raise self.refuse("process substitution is not read")
        self.pos += len(op)
        self.skip_blanks()
        if self.peek() in _METACHARACTERS or self.peek() == "":
            raise self.refuse(f"{op!r} without a target")
        return Redirect(op, self.read_word(depth=0, nested_depth=None), fd)

    # -- words ---------------------------------------------------------------

    def read_word(self, *, depth: int, nested_depth: int | None = -1) -> Word:
        """One word, up to the next unquoted metacharacter."""
        if nested_depth == -1:
            nested_depth = depth
        start = self.pos
        value: list[str] = []
        literal = True
        if self.peek() == "~":
            literal = False  # tilde expansion
        brace_open = False
        while True:
            self.skip_continuations()
            ch = self.peek()
            if ch == "" or ch in _METACHARACTERS:
                break
            if ch == "\\":
                nxt = self.peek(1)
                if nxt == "":
                    raise self.refuse("a trailing backslash")
                value.append(nxt)
                self.pos += 2
            elif ch == "'":
                end = self.src.find("'", self.pos + 1)
                if end < 0:
                    raise self.refuse("unterminated single quote")
                value.append(self.src[self.pos + 1 : end])
                self.pos = end + 1
            elif ch == '"':
                literal = self.read_double_quoted(value, nested_depth) and literal
            elif ch in ("$", "`"):
                self.read_expansion(value, nested_depth, quoted=False)
                literal = False
            else:
                if ch in _GLOB:
                    literal = False
                elif ch == "{":
                    brace_open = True
                elif ch == "}" and brace_open:
                    literal = False  # brace expansion: {a,b} is two words
                value.append(ch)
                self.pos += 1
        if self.pos == start:
            raise self.refuse("expected a word")
        if self.src[start : self.pos] == "[":
            literal = True  # no `]` to close it: not a pattern, bash never expands it (`[ -d x ]`)
        return Word(self.src[start : self.pos], "".join(value), literal, start, self.pos)

    def read_double_quoted(self, value: list[str], depth: int | None) -> bool:
        """Append the value of ``"..."``; return whether it is literal."""
        self.pos += 1
        literal = True
        while True:
            ch = self.peek()
            if ch == "":
                raise self.refuse("unterminated double quote")
            if ch == '"':
                self.pos += 1
                return literal
            if ch == "\\":
                nxt = self.peek(1)
                if nxt == "\n":
                    self.pos += 2
                    continue
                if nxt in ('$', '`', '"', "\\"):
                    value.append(nxt)
                    self.pos += 2
                    continue
                value.append(ch)
                self.pos += 1
            elif ch in ("$", "`"):
                self.read_expansion(value, depth, quoted=True)
                literal = False
            else:
                value.append(ch)
                self.pos += 1

    def read_expansion(self, value: list[str], depth: int | None, *, quoted: bool) -> None:
        """A ``$`` or backtick expansion at the reader's position. A bare word and a
        double-quoted string read the same expansions, which make either non-literal; only
        ``quoted`` changes what may appear inside them."""
        if self.peek() == "$":
            self.read_dollar(value, depth, quoted=quoted)
        else:
            self.read_backticks(value, depth, quoted=quoted)

    def read_backticks(self, value: list[str], depth: int | None, *, quoted: bool) -> None:
        """`` `cmd` `` without backslashes (their escaping rules are where parsers go wrong)."""
        end = self.src.find("`", self.pos + 1)
        body = self.src[self.pos + 1 : end]
        if end < 0 or "\\" in body or (quoted and '"' in body):
            raise self.refuse("backticks with escapes or quotes are not read; use $( .. )")
        if depth is None:
            raise self.refuse("command substitution in a redirection target")
        inner = _Reader(body, self.dialect)
        inner.read_list(closing=None, depth=depth + 1, redirects=())
        for command in inner.commands:
            self.add(command)
        value.append(self.src[self.pos : end + 1])
        self.pos = end + 1

    def read_dollar(self, value: list[str], depth: int | None, *, quoted: bool) -> None:
        """A parameter or a command substitution starting at ``$``."""
        start = self.pos
        nxt = self.peek(1)
        if nxt == "(":
            if self.peek(2) == "(":
                raise self.refuse("arithmetic expansion '$((' is not read")
            if depth is None:
                raise self.refuse("command substitution in a redirection target")
            inner = _Reader(self.src, self.dialect, self.pos + 2)
            inner.read_list(closing=")", depth=depth + 1, redirects=())
            for command in inner.commands:
                self.add(command)
            self.pos = inner.pos + 1
        elif nxt == "{":
            match = _NAME.match(self.src, self.pos + 2)
            end = match.end() if match else self.pos + 2
            if match is None and self.peek(2) in _SPECIAL_PARAMETERS and self.peek(2):
                end = self.pos + 3
            if end == self.pos + 2 or self.src[end : end + 1] != "}":
                raise self.refuse("only ${NAME} is read among the ${..} forms")
            self.pos = end + 1
        elif _NAME.match(nxt):
            match = _NAME.match(self.src, self.pos + 1)
            assert match is not None
            self.pos = match.end()
        elif nxt and nxt in _SPECIAL_PARAMETERS:
            self.pos += 2
        elif nxt in _LITERAL_AFTER_DOLLAR or (quoted and nxt == '"'):
            value.append("$")
            self.pos += 1
            return
        else:
            raise self.refuse(f"'${nxt}' is not read")
        value.append(self.src[start : self.pos])


def read_commands(line: str, *, dialect: Dialect = "bash", depth: int = 0) -> list[SimpleCommand]:
    """Every simple command of ``line`` in source order; raise :class:`NotUnderstood` when the
    line leaves the understood subset."""
    if len(line) > MAX_LENGTH:
        raise NotUnderstood(f"command longer than {MAX_LENGTH} characters")
    if _CONTROL.search(line):
        raise NotUnderstood("the command contains a control character")
    reader = _Reader(line, dialect)
    reader.read_list(closing=None, depth=depth, redirects=())
    return reader.commands

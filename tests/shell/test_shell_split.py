"""Example tests for splitting shell command lines (SPEC §2.7 P4): every part a shell would run."""

from __future__ import annotations

import re

import pytest

from agentworld.policy.command_regex import matches_regex
from agentworld.shell.commands import Match, analyze, prefix_match
from agentworld.shell.split import (
    MAX_LENGTH,
    CommandPart,
    ParsedCommand,
    UnparseableCommand,
    command_line,
    parse_command,
    prefix_words,
)
from agentworld.tools.builtin import shell as shell_tool


def roots(line: str) -> tuple[str, ...]:
    return parse_command(line).roots


def argvs(line: str) -> list[tuple[str, ...]]:
    return [p.argv for p in parse_command(line).parts]


def matches_prefix(part: CommandPart, prefix: str, *, deny: bool = False) -> bool:
    return prefix_match(part, prefix_words(prefix), by_basename=deny) == "yes"


def part(line: str) -> CommandPart:
    parsed = parse_command(line)
    assert len(parsed.parts) == 1, parsed.parts
    return parsed.parts[0]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("ls && rm -rf ~", ("ls", "rm")),
        ("ls; rm x", ("ls", "rm")),
        ("ls;rm x", ("ls", "rm")),
        ("ls || rm x", ("ls", "rm")),
        ("ls | xargs rm", ("ls", "xargs", "rm")),
        ("ls |& rm x", ("ls", "rm")),
        ("ls & rm x", ("ls", "rm")),
        ("ls\nrm x", ("ls", "rm")),
        ("ls && \\\nrm x", ("ls", "rm")),
        ("echo $(rm -rf /)", ("echo", "rm")),
        ('echo "$(rm -rf /)"', ("echo", "rm")),
        ("echo `rm x`", ("echo", "rm")),
        ("echo ${x:-$(rm x)}", ("echo", "rm")),
        ("echo $((1 + $(rm x)))", ("echo", "rm")),
        ("x=$(rm y)", ("rm",)),
        ("export A=$(rm x)", ("export", "rm")),
        ("(cd /tmp && rm x)", ("cd", "rm")),
        ("{ rm x; }", ("rm",)),
        ("! rm x", ("rm",)),
        ("diff <(ls) >(rm x)", ("diff", "ls", "rm")),
        ("echo hi > >(rm x)", ("echo", "rm")),
        ("echo hi >$(rm x)", ("echo", "rm")),
        ("cat <<< $(rm x)", ("cat", "rm")),
        ("if [ -f x ]; then rm x; fi", ("[", "rm")),
        ("[[ -f x ]] && rm x", ("[[", "rm")),
        ("for f in $(ls); do rm $f; done", ("ls", "rm")),
        ("while true; do rm x; done", ("true", "rm")),
        ("case $x in a) rm x;; esac", ("rm",)),
        ("f() { rm -rf ~; }; f", ("rm", "f")),
        ("ls # ; rm x", ("ls",)),
        ("echo a#b; rm x", ("echo", "rm")),
    ],
)
def test_compound_command_yields_every_root(line: str, expected: tuple[str, ...]) -> None:
    assert roots(line) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("bash -c 'rm -rf ~'", [("bash", "-c", "rm -rf ~"), ("rm", "-rf", "~")]),
        ('sh -c "ls && rm x"', [("sh", "-c", "ls && rm x"), ("ls",), ("rm", "x")]),
        ("zsh -c 'rm x'", [("zsh", "-c", "rm x"), ("rm", "x")]),
        ("bash -lc 'rm x'", [("bash", "-lc", "rm x"), ("rm", "x")]),
        ("bash -o pipefail -c 'rm x'", [("bash", "-o", "pipefail", "-c", "rm x"), ("rm", "x")]),
        ("sudo rm x", [("sudo", "rm", "x"), ("rm", "x")]),
        ("sudo -u root rm x", [("sudo", "-u", "root", "rm", "x"), ("rm", "x")]),
        ("env A=1 rm x", [("env", "A=1", "rm", "x"), ("rm", "x")]),
        ("/usr/bin/env -i rm x", [("/usr/bin/env", "-i", "rm", "x"), ("rm", "x")]),
        ("env -S 'rm -rf' x", [("env", "-S", "rm -rf", "x"), ("rm", "-rf", "x")]),
        ("xargs -0 -n 1 rm", [("xargs", "-0", "-n", "1", "rm"), ("rm",)]),
        ("exec rm x", [("exec", "rm", "x"), ("rm", "x")]),
        ("nohup rm x &", [("nohup", "rm", "x"), ("rm", "x")]),
        ("timeout 5 rm x", [("timeout", "5", "rm", "x"), ("rm", "x")]),
        ("timeout -s KILL 5 rm x", [("timeout", "-s", "KILL", "5", "rm", "x"), ("rm", "x")]),
        ("command rm x", [("command", "rm", "x"), ("rm", "x")]),
        ("time rm x", [("time", "rm", "x"), ("rm", "x")]),
        ("nice -n 5 rm x", [("nice", "-n", "5", "rm", "x"), ("rm", "x")]),
        ("eval 'rm x'", [("eval", "rm x"), ("rm", "x")]),
        ("find . -exec rm {} \\;", [("find", ".", "-exec", "rm", "{}", ";"), ("rm", "{}")]),
    ],
)
def test_wrapper_also_yields_the_wrapped_command(
    line: str, expected: list[tuple[str, ...]]
) -> None:
    assert argvs(line) == expected


def test_wrappers_unwrap_recursively() -> None:
    line = "sudo -u root env -i PATH=/x bash -c 'ls; rm y'"
    assert roots(line) == ("sudo", "env", "bash", "ls", "rm")


def test_wrapper_without_a_command_has_no_inner_part() -> None:
    assert argvs("sudo -s") == [("sudo", "-s")]
    assert argvs("bash script.sh") == [("bash", "script.sh")]
    assert argvs("env") == [("env",)]


def test_inner_part_text_is_its_own_source() -> None:
    parts = parse_command("sudo -u root rm -rf '/tmp/a b'").parts
    assert [p.text for p in parts] == ["sudo -u root rm -rf '/tmp/a b'", "rm -rf '/tmp/a b'"]


@pytest.mark.parametrize(
    ("line", "argv"),
    [
        ('echo "a && b"', ("echo", "a && b")),
        ("echo 'x; y'", ("echo", "x; y")),
        ("echo a\\;b", ("echo", "a;b")),
        ("echo 'a | b' \"c || d\"", ("echo", "a | b", "c || d")),
        ("echo '$(rm x)'", ("echo", "$(rm x)")),
        ('echo "\\$(rm x)"', ("echo", "$(rm x)")),
        ("echo \\`rm x\\`", ("echo", "`rm", "x`")),
        ('echo "a\\"b" \'c\'"d"e', ("echo", 'a"b', "cde")),
        ('l""s -la', ("ls", "-la")),
        ("g\\it log", ("git", "log")),
        ("echo $'\\x72m\\n'", ("echo", "rm\n")),
        ('echo $"hi"', ("echo", "hi")),
        ('echo a$"hi" -f$ $', ("echo", "ahi", "-f$", "$")),
        ("echo a\\\nb", ("echo", "ab")),
        ("echo $HOME ~/x *.py", ("echo", "$HOME", "~/x", "*.py")),
        ("echo 'multi\nline'", ("echo", "multi\nline")),
    ],
)
def test_quotes_are_removed_and_quoted_operators_do_not_split(
    line: str, argv: tuple[str, ...]
) -> None:
    assert part(line).argv == argv


def test_leading_assignments_are_not_part_of_argv() -> None:
    p = part("FOO=1 BAR='a b' rm x")
    assert p.argv == ("rm", "x")
    assert p.root == "rm"
    assert p.assignments == ("FOO=1", "BAR='a b'")


def test_bare_assignment_is_a_part_with_no_root() -> None:
    parsed = parse_command("PATH=/tmp/evil; ls")
    assert [p.argv for p in parsed.parts] == [(), ("ls",)]
    assert parsed.parts[0].assignments == ("PATH=/tmp/evil",)
    assert parsed.roots == ("ls",)
    assert not matches_prefix(parsed.parts[0], "ls")


def test_root_is_the_basename_of_the_command() -> None:
    assert part("/usr/bin/git status").root == "git"
    assert roots("./run.sh && ../bin/rm x") == ("run.sh", "rm")


def test_words_after_a_redirection_still_belong_to_the_command() -> None:
    # tree-sitter attaches `push --force` to the redirect; a deny rule for "git push" must see it.
    p = part("git >/dev/null push --force")
    assert p.argv == ("git", "push", "--force")
    assert matches_prefix(p, "git push")
    assert part(">out echo hi").argv == ("echo", "hi")


@pytest.mark.parametrize(
    ("line", "writes"),
    [
        ("echo hi > file", True),
        ("echo hi >> file", True),
        ("echo hi >| file", True),
        ("echo hi &> file", True),
        ("echo hi &>> file", True),
        ("echo hi 2> err.log", True),
        ("echo hi >& file", True),
        ("exec 3> file", True),
        ("cat < in", False),
        ("cat <<< word", False),
        ("ls 2>&1", False),
        ("ls >&2", False),
        ("ls >&-", False),
        ("ls > /dev/null 2>&1", False),
        ("ls &> /dev/null", False),
        ("ls 2>/dev/stderr", False),
        ("echo hi | tee file", False),
    ],
)
def test_redirects_output_only_for_operators_that_write_a_file(line: str, writes: bool) -> None:
    parsed = parse_command(line)
    assert parsed.parts[0].redirects_output is writes
    assert parsed.has_redirection is writes


def test_here_doc_is_input_and_its_substitutions_are_parts() -> None:
    parsed = parse_command("cat <<EOF\nhello $(rm x)\nEOF")
    assert parsed.roots == ("cat", "rm")
    assert not parsed.has_redirection
    quoted = parse_command("cat <<'EOF'\n$(rm x)\nEOF")
    assert quoted.roots == ("cat",)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # tree-sitter alone reads the first two as one command `ls rm x`.
        ("ls\n\\\nrm x", [("ls",), ("rm", "x")]),
        ("ls>f\n\\\nrm x", [("ls",), ("rm", "x")]),
        ("docker run \\\n  -v a:b \\\n  img", [("docker", "run", "-v", "a:b", "img")]),
        ("echo a\\\\\nrm x", [("echo", "a\\"), ("rm", "x")]),
        ('echo "a\\\nb"', [("echo", "ab")]),
    ],
)
def test_line_continuations_are_joined_as_bash_does(
    line: str, expected: list[tuple[str, ...]]
) -> None:
    assert argvs(line) == expected


def test_newline_folded_into_a_command_by_the_grammar_still_separates() -> None:
    # tree-sitter alone reads this as `wc -l rm -rf ~` followed by `echo ok`.
    line = "cat x | grep y | wc -l\nrm -rf ~ && echo ok"
    assert argvs(line) == [
        ("cat", "x"),
        ("grep", "y"),
        ("wc", "-l"),
        ("rm", "-rf", "~"),
        ("echo", "ok"),
    ]
    # and this as `ls` with the argument `\nrm` (a backslash before a command skips aliases).
    assert argvs("ls\n\\rm x") == [("ls",), ("rm", "x")]


def test_command_on_the_here_doc_line_is_a_part() -> None:
    assert roots("cat <<EOF && rm x\nbody\nEOF\nls") == ("cat", "rm", "ls")


def test_redirected_group_marks_every_part_inside() -> None:
    parsed = parse_command("{ ls; echo; } > out && pwd")
    assert [(p.root, p.redirects_output) for p in parsed.parts] == [
        ("ls", True),
        ("echo", True),
        ("pwd", False),
    ]


def test_trailing_redirect_belongs_to_the_last_command_only() -> None:
    # tree-sitter hangs `> f y` on the whole list; bash gives it (and the word y) to the last command.
    parsed = parse_command("ls && cat x > f y")
    assert [(p.argv, p.redirects_output) for p in parsed.parts] == [
        (("ls",), False),
        (("cat", "x", "y"), True),
    ]
    assert [(p.argv, p.redirects_output) for p in parse_command("a | b >f y").parts] == [
        (("a",), False),
        (("b", "y"), True),
    ]


def test_redirect_alone_truncates_a_file_and_is_a_part() -> None:
    parsed = parse_command("> important.txt")
    assert parsed.parts == (CommandPart((), "> important.txt", True),)
    assert parsed.roots == ()


def test_command_after_leading_redirects_is_seen() -> None:
    # tree-sitter reads `aa` as a second target of `>f`; bash runs it.
    parsed = parse_command("\n>fbb\t>f\t aa&>f")
    assert parsed.roots == ("aa",)
    assert parsed.parts[0].redirects_output


def test_wrapped_command_inherits_redirection() -> None:
    parsed = parse_command("sudo tee x > /etc/passwd")
    assert [p.redirects_output for p in parsed.parts] == [True, True]


@pytest.mark.parametrize(
    "line",
    [
        "",
        "   \n ",
        "# just a comment",
        "echo 'unbalanced",
        'echo "unbalanced',
        "echo $(ls",
        "ls &&",
        "ls)",
        "if true; then ls",
        "ls\x00rm",
        # bash reads `\r` as part of a word; tree-sitter as a blank, and `\\\r\n` as a continuation.
        "ls \\\r\nrm -rf ~",
        "ls\rrm",
        "ls\vrm",
        # a continuation is kept inside a comment or a quoted here-doc; these are refused.
        "true # c \\\nrm x",
        "cat <<'E'\nfoo\\\nE\nrm x\nE",
        "echo \ud800",
        # tree-sitter drops an escaped blank at the start of a word; bash keeps it in the word,
        # and here the `#` after it is not a comment, so bash runs `cc`.
        "aa \\ find",
        # tree-sitter makes `cc` the name of the command before the comment.
        ">f>f# #&&'a b'\n cc",
        "'a b'\\ #;cc",
        # tree-sitter leaves this `$(..)` inside a plain here-doc body; refuse rather than miss it.
        "cat <<EOF\n\t$(rm x)\nEOF",
        # the grammar gives up on a quote inside `$(..)` inside quotes, which bash accepts.
        'echo "$(echo ")"; rm x")"',
        "sh -c 'ls; (rm'",
        "x" * (MAX_LENGTH + 1),
        "echo " + "$(" * 25 + "ls" + ")" * 25,
        "sudo " * 30 + "ls",
        "; ".join(["ls"] * 1500),
    ],
)
def test_unparseable_lines_raise(line: str) -> None:
    with pytest.raises(UnparseableCommand):
        parse_command(line)


def test_unparseable_is_a_value_error() -> None:
    assert issubclass(UnparseableCommand, ValueError)


def test_moderate_nesting_is_fine() -> None:
    assert roots("echo " + "$(" * 10 + "rm x" + ")" * 10)[-1] == "rm"


def test_roots_are_unique_and_in_order() -> None:
    assert roots("git status; ls; git log | ls") == ("git", "ls")


@pytest.mark.parametrize(
    ("line", "prefix", "allow", "deny"),
    [
        ("git log --oneline", "git log", "yes", "yes"),
        ("git  log", "git log", "yes", "yes"),
        ("git log", "git log", "yes", "yes"),
        ("git logout", "git log", "no", "no"),
        ("git", "git log", "no", "no"),
        ("git status", "git", "yes", "yes"),
        ("gitk", "git", "no", "no"),
        # A rule for `git` means the git found on PATH: a path-qualified name matches only a
        # rule naming that path, except that a DENY rule also catches it by its basename.
        ("/usr/bin/git log -p", "git log", "no", "yes"),
        ("./git log -p", "git log", "no", "yes"),
        ("/usr/bin/git log -p", "/usr/bin/git log", "yes", "yes"),
        ("git log -p", "/usr/bin/git log", "no", "no"),
        ("/opt/git log -p", "/usr/bin/git log", "no", "no"),
        ("'git' \"log\" x", "git log", "yes", "yes"),
        ("rm -rf /tmp/a", "rm -rf /tmp/a", "yes", "yes"),
        ("rm -rf /tmp/ab", "rm -rf /tmp/a", "no", "no"),
        ("echo 'a b' c", "echo 'a b'", "yes", "yes"),
        ("echo a b c", "echo 'a b'", "no", "no"),
        ("ls", "", "no", "no"),
        # Words known only at run time decide nothing: "maybe".
        ("$CMD log", "git log", "maybe", "maybe"),
        ("$(echo /tmp/evil)/ls -la", "ls", "maybe", "maybe"),
        ("git$x log", "git log", "maybe", "maybe"),
        ("git log$x", "git log", "maybe", "maybe"),
        ("git $X", "git push", "maybe", "maybe"),
        ("g*t push", "git push", "maybe", "maybe"),
        ("{git,x} push", "git push", "maybe", "maybe"),
    ],
)
def test_prefixes_compare_whole_words_and_exact_names(
    line: str, prefix: str, allow: Match, deny: Match
) -> None:
    outer = analyze(line).parts[-1]  # substitutions inside it come first
    assert prefix_match(outer, prefix_words(prefix), by_basename=False) == allow
    assert prefix_match(outer, prefix_words(prefix), by_basename=True) == deny


def test_an_unbalanced_prefix_is_refused() -> None:
    with pytest.raises(ValueError):
        prefix_words("ls 'x")


def test_approving_ls_does_not_approve_the_rest() -> None:
    parsed = parse_command("ls && rm -rf ~")
    assert [matches_prefix(p, "ls") for p in parsed.parts] == [True, False]


def test_matches_regex_is_anchored_at_the_start_of_each_part() -> None:
    rm_part, ls_part = parse_command("rm -rf /tmp/x; ls -la").parts
    assert matches_regex(rm_part, re.compile(r"rm -rf\b"))
    assert not matches_regex(rm_part, re.compile(r"-rf\b"))  # not at the start
    assert not matches_regex(ls_part, re.compile(r"rm"))
    assert matches_regex(ls_part, re.compile(r"^ls -la$"))
    assert matches_regex(ls_part, re.compile(r"ls"))


@pytest.mark.parametrize(
    ("command", "parameters"),
    [
        ("ls", None),
        ("ls", []),
        ("ls", ["-la", "a b", "it's", "$(rm x)", ""]),
        ("git log", ["--format=%H %s"]),
    ],
)
def test_command_line_matches_the_shell_tool(command: str, parameters: list[str] | None) -> None:
    assert command_line(command, parameters) == shell_tool.command_line(command, parameters)


def test_parameters_never_become_commands() -> None:
    line = command_line("echo", ["a; rm -rf ~", "$(rm x)", "`rm y`", "b && c"])
    parsed = parse_command(line)
    assert parsed.roots == ("echo",)
    assert parsed.parts[0].argv == ("echo", "a; rm -rf ~", "$(rm x)", "`rm y`", "b && c")


def test_parsed_command_is_plain_data() -> None:
    a = parse_command("ls -la")
    assert a == ParsedCommand((CommandPart(("ls", "-la"), "ls -la", False),))
    assert hash(a) == hash(parse_command("ls -la"))

"""Wrappers whose command we cannot name (``shell.commands`` with ``shell._wrapper_options``).

``printf '\\x74ouch P' | xargs env`` runs ``touch P`` under a policy allowing only
``printf``, ``xargs`` and ``env``: xargs hands its input to ``env``, which runs it. And ``env
--unse ls rm x`` runs ``rm x``, not ``ls``: GNU ``getopt_long`` takes ``--unse`` for
``--unset``. A wrapper fed by input with no command of its own, and a wrapper option not
known by its exact spelling, leave the command ``unknown``;
``sudo -s CMD`` runs CMD through a shell, so it is ``unknown`` too.
"""

from __future__ import annotations

import pytest

from agentworld.shell.commands import analyze


def _opacities(line: str) -> list[tuple[str, str]]:
    return [(p.text, p.opacity) for p in analyze(line).parts]


@pytest.mark.parametrize(
    ("line", "wrapped"),
    [
        ("printf '\\x74ouch P' | xargs xargs", "xargs"),
        ("printf '\\x74ouch P' | xargs env", "env"),
        ("echo rm -rf / | xargs xargs", "xargs"),
        ("echo touch ../PWNED | xargs xargs", "xargs"),
        ("xargs -a cmds.txt env", "env"),
        ("xargs timeout 5", "timeout 5"),
        ("xargs timeout", "timeout"),
        ("xargs nice", "nice"),
        ("xargs nice -n 5", "nice -n 5"),
        ("xargs command", "command"),
        ("xargs time", "time"),
        ("xargs stdbuf -o0", "stdbuf -o0"),
        ("xargs sudo", "sudo"),
        ("xargs sudo -u", "sudo -u"),
        ("xargs env -i", "env -i"),
        ("xargs env A=1", "env A=1"),
        ("xargs nohup", "nohup"),
        ("xargs setsid", "setsid"),
        ("xargs flock lockfile", "flock lockfile"),
        ("xargs find .", "find ."),
        ("xargs sh", "sh"),
        ("xargs bash -c", "bash -c"),
        ("xargs su", "su"),
        ("xargs -0 env", "env"),
        ("xargs -n1 nice", "nice"),
        ("xargs nice xargs", "xargs"),
        ("xargs env xargs", "xargs"),
        ("xargs sudo -u root env", "env"),
        ("xargs date", "date"),
        ("xargs hostname", "hostname"),
        ("xargs shuf", "shuf"),
    ],
)
def test_a_wrapper_fed_by_xargs_runs_a_command_we_cannot_see(line: str, wrapped: str) -> None:
    parts = analyze(line).parts
    inner = next(p for p in parts if p.text == wrapped)
    assert inner.opacity == "unknown"
    assert analyze(line).keys is None  # no grant may cover it


@pytest.mark.parametrize(
    "line",
    [
        "echo hello | xargs echo",
        "find . -name '*.py' | xargs wc -l",
        "xargs env ls",
        "xargs nice ls -la",
        "xargs timeout 5 cat",
        "xargs sh -c 'echo \"$@\"' sh",
        "xargs",
        "ls | xargs -0 -n1 grep -l TODO",
    ],
)
def test_xargs_with_a_named_command_stays_clear(line: str) -> None:
    assert all(opacity == "clear" for _, opacity in _opacities(line))
    assert analyze(line).keys is not None


@pytest.mark.parametrize(
    "line",
    [
        "env --unse ls /usr/bin/to?ch P",
        "env --unse ls rm -rf ~/important",
        "echo P | xargs --process ls /usr/bin/to?ch",
        "env --split='t${x}ouch P'",
        "env --split-str='touch P'",
        "env --ch DIR touch P",
        "xargs --arg FILE touch",
        "xargs --max-a 1 touch",
        "xargs --process-slot-var=PATH ls",
        "timeout --sig KILL 5 touch P",
        "nice --adj 5 touch P",
        "stdbuf --out L touch P",
        "sudo --us root touch P",
        "ionice --cla 2 touch P",
        "chrt --sched-run 5 1 touch P",
        "flock --time 1 lock touch P",
        "setsid --wai touch P",
        "nohup --x touch P",
        "command --x touch P",
        "env -X touch P",
        "sudo -e /etc/passwd",
        "sudo --edit /etc/passwd",
        "nice time --out=f touch P",
        "valgrind --tool=memcheck touch P",
        "strace -o '|sh' ls",
    ],
)
def test_a_wrapper_option_not_known_by_its_exact_spelling_hides_the_command(line: str) -> None:
    parts = analyze(line).parts
    assert parts[-1].opacity == "unknown"
    # No guessed command: `env --unse ls rm x` must not list `ls rm x` as what runs.
    assert not any(p.root in ("ls", "touch", "rm", "sh") for p in parts)


@pytest.mark.parametrize(
    ("line", "runs"),
    [
        ("env --unset=X ls -la", "ls -la"),
        ("env --unset X ls", "ls"),
        ("env -u X ls", "ls"),
        ("env -uX ls", "ls"),
        ("env - ls", "ls"),
        ("env --chdir=/tmp ls", "ls"),
        ("env --ignore-environment ls", "ls"),
        ("timeout --signal=KILL 5 ls", "ls"),
        ("timeout -k 1 5 ls", "ls"),
        ("timeout --preserve-status 5 ls", "ls"),
        ("nice -n 5 ls", "ls"),
        ("nice -5 ls", "ls"),
        ("nice --adjustment=5 ls", "ls"),
        ("stdbuf -oL ls", "ls"),
        ("sudo -u root ls", "ls"),
        ("sudo -k ls", "ls"),
        ("sudo --user=root ls", "ls"),
        ("sudo -E ls", "ls"),
        ("ionice -c 3 ls", "ls"),
        ("chrt -b 0 ls", "ls"),
        ("taskset -c 1 ls", "ls"),
        ("xargs --max-args=1 ls", "ls"),
        ("xargs -r -0 ls", "ls"),
        ("xargs -e ls", "ls"),
        ("xargs -l ls", "ls"),
        ("nohup ls", "ls"),
        ("command -p ls", "ls"),
        ("setsid -f ls", "ls"),
        ("flock -n lock ls", "ls"),
        ("faketime -f +1d ls", "ls"),
    ],
)
def test_wrapper_options_spelled_exactly_still_name_the_command(line: str, runs: str) -> None:
    parts = analyze(line).parts
    assert [(p.text, p.opacity) for p in parts][-1] == (runs, "clear")
    assert all(p.opacity == "clear" for p in parts)


@pytest.mark.parametrize(
    "line",
    [
        "sudo -s touch P",
        "sudo -i touch P",
        "sudo --shell touch P",
        "sudo --login touch P",
        "sudo -is touch P",
        "sudo -u root -s ls",
        "sudo -s",
        "doas -s touch P",
    ],
)
def test_sudo_running_its_command_through_a_shell_is_unknown(line: str) -> None:
    parts = analyze(line).parts
    assert [p.opacity for p in parts] == ["unknown"]


@pytest.mark.parametrize("line", ["sudo -l", "sudo -l ls", "sudo -v", "sudo -K", "env --help ls", "doas -C conf ls"])
def test_wrapper_options_that_run_nothing_name_no_command(line: str) -> None:
    assert [p.opacity for p in analyze(line).parts] == ["clear"]


def test_time_writing_its_report_to_a_file_counts_as_a_redirection() -> None:
    part = analyze("env time -o report.txt ls").parts[1]
    assert part.argv[0] == "time" and part.redirects_output

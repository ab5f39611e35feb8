"""Test runners: a rule for ``pytest`` or ``npm test`` means "run this project's tests".

Running the tests runs the project's code, and a person who writes such a rule accepts that.
What they did not accept is the options: ``pytest --basetemp=/root/.ssh`` empties that
directory, ``--junitxml=~/.bashrc`` overwrites a file anywhere, ``-p mod`` imports a module,
``--pastebin=all`` sends the output away, a test file outside the working directory runs
code nobody reviewed; ``npm test --script-shell=/tmp/x`` picks the program that runs the
script, and any ``--name=value`` of npm is configuration. So the options are read against a
list of those that only choose which tests run and how the report looks; any other option
(or an abbreviation: argparse and npm accept them) is hidden code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agentworld.shell._option_reading import HIDDEN, NONE, OptionEffects
from agentworld.shell.words import Word

_PYTEST_FLAGS = frozenset(
    ["-q", "--quiet", "-v", "--verbose", "-x", "--exitfirst", "-s", "-l", "--showlocals", "--lf", "--last-failed", "--ff", "--failed-first", "--nf", "--new-first", "--sw", "--stepwise", "--sw-skip", "--stepwise-skip", "--co", "--collect-only", "--strict-markers", "--strict-config", "--disable-warnings", "--disable-pytest-warnings", "--no-header", "--no-summary", "--runxfail", "--full-trace", "--setup-show", "--setup-plan", "--setup-only", "--fixtures", "--fixtures-per-test", "--markers", "--version", "-V", "-h", "--help", "--doctest-modules", "--cache-show", "--cache-clear", "--noconftest"]
)
_PYTEST_VALUED = frozenset(
    ["-k", "-m", "-n", "--numprocesses", "--maxprocesses", "--dist", "--tb", "--maxfail", "--durations", "--durations-min", "--color", "--code-highlight", "--capture", "--deselect", "--ignore", "--ignore-glob", "--timeout", "--log-level", "--log-cli-level", "--count", "--reruns", "-W"]
) - {"-W"}  # `-W error::pkg.Category` imports `pkg`
_PYTEST_CLUSTER = frozenset("qvxslV")


def pytest_effects(args: Sequence[Word]) -> OptionEffects:
    """``pytest`` with only options that pick tests and shape the report, and test paths in
    the working directory; anything else is hidden code."""
    i = 0
    while i < len(args):
        value = args[i].value
        i += 1
        if value == "--":
            return HIDDEN if any(not _inside(w.value) for w in args[i:]) else NONE
        if value.startswith("@"):
            return HIDDEN  # `@args.txt`: options read from a file
        if not value.startswith("-") or value == "-":
            if not _inside(value):
                return HIDDEN  # `pytest /tmp/evil_test.py`: code outside the working directory
            continue
        name, eq, given = value.partition("=")
        if value in _PYTEST_FLAGS:
            continue
        if name in _PYTEST_VALUED:
            i += 0 if eq else 1
            continue
        if value.startswith("-p"):  # `-p no:NAME` turns a plugin off; `-p NAME` imports one
            plugin = value[2:] or (args[i].value if i < len(args) else "")
            i += 0 if value[2:] else 1
            if not plugin.startswith("no:"):
                return HIDDEN
            continue
        if value.startswith(("-k", "-m", "-n", "-r")) and not value.startswith("--"):
            continue  # the value glued on: `-kfoo`, `-n4`, `-rA`
        if value[1] != "-" and set(value[1:]) <= _PYTEST_CLUSTER:
            continue  # `-qx`, `-vv`
        return HIDDEN  # --basetemp, --junitxml, -o, -c, --rootdir, --pastebin, -p mod …
    return NONE


def _inside(path: str) -> bool:
    """Whether a test path stays in the working directory (no ``/``, ``~`` or ``..`` start)."""
    file = path.partition("::")[0]
    return not file.startswith(("/", "~")) and ".." not in file.split("/")


_NPM_FLAGS = frozenset({"-s", "--silent", "-q", "--quiet", "--if-present"})
_NPM_SCRIPTS = frozenset({"run", "run-script", "rum", "urn", "test", "t", "tst", "start", "stop", "restart"})


def npm_effects(args: Sequence[Word]) -> OptionEffects:
    """npm (pnpm, yarn) running a script of the project: no option but the quiet ones, and
    no arguments handed on to the script (they reach a program we do not see)."""
    if any(w.value.startswith("-") and w.value not in _NPM_FLAGS for w in args):
        return HIDDEN  # `--script-shell=/tmp/x`, `--node-options`, `--userconfig`, `--` …
    words = [w.value for w in args if not w.value.startswith("-")]
    if "env" in words[:2]:
        return HIDDEN  # `npm run env`: the built-in script prints the environment, keys too
    if words and words[0] in _NPM_SCRIPTS:
        named = 2 if words[0] in ("run", "run-script", "rum", "urn") else 1
        if len(words) > named:
            return HIDDEN  # `npm run test --basetemp …`: arguments for the script's program
    return NONE


TEST_RUNNERS: dict[str, Callable[[Sequence[Word]], OptionEffects]] = {
    "pytest": pytest_effects,
    "py.test": pytest_effects,
    "npm": npm_effects,
    "pnpm": npm_effects,
    "yarn": npm_effects,
}

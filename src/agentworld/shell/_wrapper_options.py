"""The options of wrappers (``sudo``, ``env``, ``xargs``, ``timeout`` …), spelled out in full.

A wrapper's options decide where the command it runs starts: ``env -u ls rm x`` runs
``rm x``, and so does ``env --unse ls rm x``, because GNU ``getopt_long`` accepts any
unique prefix of a long option. Guessing at an option we do not know — whether it takes a
value, whether it is an abbreviation — is how a line comes to run something other than
what it shows, so :func:`read_options` knows each wrapper's options by their exact
spelling and calls anything else (an abbreviation, an option of a newer version) unknown.

An option table is a string of ``SPELLING[:|::][/EFFECT]`` entries: ``:`` takes a value
(glued or the next word), ``::`` takes an optional value (glued, or after ``=``); the
effect says what the option does to the command that follows — ``stop`` (none runs:
``--help``, ``sudo -l``), ``shell`` (it runs through a shell: ``sudo -s``), ``hidden``
(it runs something we cannot read: ``env -S``, ``xargs -I``), ``cd`` (it runs in another
directory), ``write`` (the wrapper writes a file: ``time -o``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agentworld.shell.words import Word

Effect = Literal["", "stop", "shell", "hidden", "cd", "write"]
Arity = Literal["none", "required", "optional"]


@dataclass(frozen=True, slots=True)
class _Option:
    arity: Arity
    effect: Effect


@dataclass(frozen=True, slots=True)
class _Wrapper:
    options: dict[str, _Option]
    positional: int
    """Arguments between the options and the command (``timeout 5 CMD``, ``chroot DIR CMD``)."""
    numeric: bool = False
    """Whether ``-N`` is an option (``nice -5 CMD``)."""


@dataclass(frozen=True, slots=True)
class WrapperCall:
    """How a wrapper's words read: where its command starts, or why none can be named.

    ``kind`` is ``command`` (the words from ``start`` on, after ``assignments``, are what
    runs; there may be none), ``none`` (nothing runs: ``sudo -l``), ``shell`` (the command
    runs through a shell: ``sudo -s touch x``) or ``unknown`` (an option we do not know, or
    one that makes what runs unreadable)."""

    kind: Literal["command", "none", "shell", "unknown"]
    start: int = 0
    assignments: tuple[str, ...] = ()
    writes: bool = False
    changes_directory: bool = False


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[|\+?=)")
_TAKES_ASSIGNMENTS = frozenset({"env", "sudo", "doas"})
_HELP = "--help/stop --version/stop"
_UTIL_HELP = "-h/stop -V/stop --help/stop --version/stop"
_WRAPPERS: dict[str, _Wrapper] = {}
_EFFECTS: dict[str, Effect] = {e: e for e in ("", "stop", "shell", "hidden", "cd", "write")}


def _table(spec: str) -> dict[str, _Option]:
    options: dict[str, _Option] = {}
    for entry in spec.split():
        spelling, _, effect = entry.partition("/")
        arity: Arity = "none"
        if spelling.endswith("::"):
            spelling, arity = spelling[:-2], "optional"
        elif spelling.endswith(":"):
            spelling, arity = spelling[:-1], "required"
        options[spelling] = _Option(arity, _EFFECTS[effect])
    return options


def _wrapper(names: str, spec: str = "", *, positional: int = 0, numeric: bool = False) -> None:
    for name in names.split():
        _WRAPPERS[name] = _Wrapper(_table(spec), positional, numeric)


_wrapper(
    "sudo",
    "-A -a: -B -b -C: -c: -D:/cd -E -e/hidden -g: -H -h:: -i/shell -K/stop -k -l/stop -N -n -P "
    "-p: -R:/cd -r: -S -s/shell -T: -t: -U: -u: -V/stop -v/stop --askpass --bell --background "
    "--close-from: --chdir:/cd --preserve-env:: --edit/hidden --group: --set-home --host: "
    "--login/shell --remove-timestamp/stop --reset-timestamp --list/stop --no-update "
    "--non-interactive --preserve-groups --prompt: --chroot:/cd --role: --stdin --shell/shell "
    "--command-timeout: --type: --other-user: --user: --validate/stop --login-class: " + _HELP,
)
_wrapper("doas", "-a: -C:/stop -L/stop -n -s/shell -u:")
_wrapper(
    "env",
    "- -i -0 -v -u: -C:/cd -S:/hidden --ignore-environment --null --debug --unset: --chdir:/cd "
    "--split-string:/hidden --block-signal:: --default-signal:: --ignore-signal:: "
    "--list-signal-handling " + _HELP,
)
_wrapper(
    "xargs",
    "-0 -a: -d: -E: -e:: -I:/hidden -i::/hidden -L: -l:: -n: -o -P: -p -r -s: -t -x --null "
    "--arg-file: --delimiter: --eof:: --replace::/hidden --max-lines: --max-args: --open-tty "
    "--max-procs: --interactive --process-slot-var:/hidden --no-run-if-empty --max-chars: "
    "--show-limits/stop --verbose --exit " + _HELP,
)
_wrapper("exec", "-a: -c -l")
_wrapper("timeout", "-k: -s: -v --preserve-status --foreground --kill-after: --signal: --verbose " + _HELP, positional=1)
_wrapper("nice", "-n: --adjustment: " + _HELP, numeric=True)
_wrapper("stdbuf", "-i: -o: -e: --input: --output: --error: " + _HELP)
_wrapper("chroot", "--userspec: --groups: --skip-chdir " + _HELP, positional=1)
_wrapper("command", "-p -v -V")
_wrapper("nohup", _HELP)
_wrapper("builtin busybox catchsegv torsocks dbus-run-session unbuffer caffeinate sudoedit")
_wrapper("firejail systemd-run valgrind xvfb-run chpst rlwrap tsp")
_wrapper(
    "time",
    "-a -f: -o:/write -p -q -v -V/stop --append --format: --output:/write --portability --quiet "
    "--verbose " + _HELP,
)
_wrapper("setsid", "-c -f -w --ctty --fork --wait " + _UTIL_HELP)
_wrapper(
    "ionice",
    "-c: -n: -p/stop -P/stop -t -u/stop --class: --classdata: --pid/stop --pgid/stop --ignore "
    "--uid/stop " + _UTIL_HELP,
)
_wrapper("taskset", "-a -p/stop -c --all-tasks --pid/stop --cpu-list " + _UTIL_HELP, positional=1)
_wrapper(
    "chrt",
    "-b -d -f -i -o -r -R -T: -P: -D: -a -m/stop -p/stop -v --batch --deadline --fifo --idle "
    "--other --rr --reset-on-fork --sched-runtime: --sched-period: --sched-deadline: --all-tasks "
    "--max/stop --pid/stop --verbose " + _UTIL_HELP,
    positional=1,
)
_wrapper(
    "setpriv",
    "-d/stop --dump/stop --nnp --no-new-privs --reuid: --regid: --ruid: --rgid: --euid: --egid: "
    "--groups: --clear-groups --keep-groups --init-groups --inh-caps: --ambient-caps: "
    "--bounding-set: --securebits: --pdeathsig: --selinux-label: --apparmor-profile: "
    "--landlock-access: --landlock-rule: --reset-env --list-caps/stop " + _UTIL_HELP,
)
_RESOURCES = "core data nice fsize sigpending memlock rss nofile msgqueue rtprio stack cpu nproc as locks rttime"
_wrapper(
    "prlimit",
    "-p:/stop --pid:/stop -o: --output: --noheadings --raw --verbose "
    + " ".join(f"-{c}::" for c in "cdefilmnqrstuvxy")
    + " "
    + " ".join(f"--{r}::" for r in _RESOURCES.split())
    + " "
    + _UTIL_HELP,
)
_wrapper(
    "flock",
    "-s -x -e -u -n -w: -E: -o -F --shared --exclusive --unlock --nonblock --timeout: "
    "--conflict-exit-code: --close --no-fork --verbose " + _UTIL_HELP,
    positional=1,
)
_wrapper(
    "numactl",
    "-a -l -C: -N: -m: -i: -p: -s/stop -H/stop --all --localalloc --physcpubind: --cpunodebind: "
    "--membind: --interleave: --preferred: --show/stop --hardware/stop",
)
_wrapper("cgexec", "-g: --sticky")
_wrapper("proxychains proxychains4", "-f: -q")
_wrapper("faketime", "-f -m --exclude-monotonic --disable-shm --date-prog: " + _HELP, positional=1)
_wrapper(
    "strace ltrace",
    "-e: -o:/hidden -s: -u: -E: -a: -b: -I: -O: -S: -X: -P: -p:/stop -c -C -d -D -f -ff -F -i -k "
    "-n -q -qq -r -t -tt -ttt -T -v -w -x -xx -y -yy -z -Z -h/stop -V/stop",
)
_SETARCH = "-B -F -I -L -R -S -T -X -Z -3 -v --4gb --uname-2.6 --32bit --fdpic-funcptrs " \
    "--short-inode --addr-compat-layout --addr-no-randomize --whole-seconds --sticky-timeouts " \
    "--read-implies-exec --mmap-page-zero --3gb --verbose --list/stop " + _UTIL_HELP
_wrapper("setarch", _SETARCH, positional=1)
_wrapper("linux32 linux64", _SETARCH)
_NAMESPACES = "mount uts ipc net pid user cgroup time"
_wrapper(
    "unshare",
    "-m:: -u:: -i:: -n:: -p:: -U:: -C:: -T:: -f -r -c -R:/cd -w:/cd -S: -G: --fork --map-root-user "
    "--map-current-user --map-auto --map-user: --map-group: --map-users: --map-groups: "
    "--kill-child:: --mount-proc:: --propagation: --setgroups: --keep-caps --root:/cd --wd:/cd "
    "--setuid: --setgid: --monotonic: --boottime: "
    + " ".join(f"--{n}::" for n in _NAMESPACES.split())
    + " "
    + _UTIL_HELP,
)
_wrapper(
    "nsenter",
    "-a -t: -m:: -u:: -i:: -n:: -p:: -C:: -U:: -T:: -S: -G: -r::/cd -w::/cd -W:/cd -F -Z --all "
    "--target: --setuid: --setgid: --preserve-credentials --root::/cd --wd::/cd --wdns:/cd "
    "--no-fork --follow-context "
    + " ".join(f"--{n}::" for n in _NAMESPACES.split())
    + " "
    + _UTIL_HELP,
)


def is_wrapper(name: str) -> bool:
    """Whether ``name`` runs the command in its arguments (after options this module reads)."""
    return name in _WRAPPERS


def read_options(name: str, words: Sequence[Word]) -> WrapperCall:
    """Where the command of wrapper ``name`` starts in ``words`` (its own name first)."""
    wrapper = _WRAPPERS[name]
    options = wrapper.options
    i = 1
    effects: list[Effect] = []
    while i < len(words) and words[i].value.startswith("-") and (words[i].value != "-" or "-" in options):
        word = words[i]
        if not word.literal:
            return WrapperCall("unknown")
        tok = word.value
        i += 1
        if tok == "--":
            break
        if tok == "-" or (wrapper.numeric and re.fullmatch(r"-[0-9]+", tok)):
            continue
        if tok.startswith("--"):
            spelling, eq, _ = tok.partition("=")
            option = options.get(spelling)  # exact spellings only: never an abbreviation
            if option is None or (eq and option.arity == "none"):
                return WrapperCall("unknown")
            if option.arity == "required" and not eq:
                i += 1
            effects.append(option.effect)
            continue
        for j, letter in enumerate(tok[1:], start=2):
            option = options.get(f"-{letter}")
            if option is None:
                return WrapperCall("unknown")
            effects.append(option.effect)
            if option.arity != "none":
                if option.arity == "required" and j == len(tok):
                    i += 1
                break  # the rest of the word is the option's value
    # Worst first: what runs unreadably, then through a shell, before "nothing runs".
    if "hidden" in effects:
        return WrapperCall("unknown")
    if "shell" in effects:
        return WrapperCall("shell")
    if "stop" in effects:
        return WrapperCall("none")
    writes, moved = "write" in effects, "cd" in effects
    assignments: list[str] = []
    while name in _TAKES_ASSIGNMENTS and i < len(words) and _ASSIGNMENT.match(words[i].value):
        assignments.append(words[i].value)
        i += 1
    start = i + wrapper.positional
    if any(not w.literal for w in words[1 : start + 1]):
        # `timeout {5,sh,-c,id}`, `chrt $(echo 1 rm x)`, `timeout -k {1,rm,x} 5`: an option's
        # value, a positional argument or the command's name that may be several words, or
        # an option: where the command starts is not known before the line runs.
        return WrapperCall("unknown")
    return WrapperCall("command", start, tuple(assignments), writes, moved)

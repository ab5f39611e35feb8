"""Containment for what a person approved (SPEC C1, C2): bubblewrap around a tool's process.

The policy engine decides what to ask; the sandbox is what makes a wrong "allow" harmless. A
contained process sees the system read-only, can write only in the world's working directory
(plus a private ``/tmp``), sees nothing of ``$HOME`` but that directory, reaches no network
unless the world allows it, and lives in its own PID namespace: when the command's first
process ends, the namespace's init ends and the kernel kills everything left in it, so no
background job or daemon outlives the call.

We write none of the containment ourselves: bubblewrap (Debian's ``bubblewrap``) makes the
namespaces and mounts. This module only decides whether it can be used here
(``sandbox_status``) and spells its command line (``sandboxed_argv``).

World settings: ``sandbox`` ``auto`` (on where it works, else off with a visible warning),
``on`` (shell tools refuse to run without it), ``off``; ``network`` ``deny`` | ``allow``.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentworld.models.domain import NetworkMode, SandboxMode
from agentworld.tools.confinement import working_root

BWRAP_CANDIDATES: tuple[str, ...] = ("/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap")
"""Where bubblewrap is looked for, in order; never on the caller's ``PATH``."""
BWRAP_VARIABLE = "AGENTWORLD_BWRAP"
"""An absolute path that replaces the lookup (a bubblewrap elsewhere, or a path that does not
exist to run as if none were installed)."""

HIDDEN_DIRECTORIES: tuple[str, ...] = ("/home", "/root", "/run", "/var/run", "/tmp", "/var/tmp")
"""Replaced by empty private directories inside the sandbox: people's homes (keys, shell
profiles), runtime sockets (a socket on a read-only mount can still be connected to), and
the shared temporary directories."""


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    """Whether a world's tool processes run contained, and what they can reach if they do."""

    mode: SandboxMode
    active: bool
    writable: tuple[str, ...]
    """The only places a contained process can write (besides its private ``/tmp``)."""
    network: NetworkMode
    problem: str | None = None
    """Why no sandbox can be made here, when one was wanted (``auto`` or ``on``)."""

    @property
    def refuses(self) -> bool:
        """Shell tools must not run: the world asks for a sandbox and none can be made."""
        return self.mode == "on" and not self.active

    @property
    def warning(self) -> str | None:
        """What to tell a person at every start when commands would run uncontained."""
        if self.active or self.mode == "off":
            return None
        if self.mode == "on":
            return f"no sandbox can be made here ({self.problem}); shell tools will refuse to run"
        return f"no sandbox can be made here ({self.problem}); commands run UNCONTAINED"

    def to_json(self) -> dict[str, Any]:
        """The approval document's ``sandbox`` key (SPEC C1)."""
        return {"active": self.active, "writable": list(self.writable), "network": self.network}

    def describe(self) -> str:
        """One line a person reads in every approval view."""
        if self.active:
            net = "no network" if self.network == "deny" else "network allowed"
            where = ", ".join(self.writable)
            return f"sandboxed: writes only in {where}, {net}"
        if self.mode == "on":
            return f"NOT sandboxed ({self.problem}): shell tools refuse to run"
        why = self.problem or ("sandbox off" if self.mode == "off" else "no sandbox")
        return f"NOT sandboxed ({why}): the command can write anywhere you can, and reach the network"

    def outside(self, reason: str) -> SandboxStatus:
        """This world's status for a tool whose calls never run in the sandbox (a client
        tool, a remote MCP server, a server configured ``"sandbox": false``): not contained,
        and ``reason`` says why."""
        return SandboxStatus("off", False, self.writable, self.network, reason)


def find_bwrap() -> str | None:
    """The absolute path of bubblewrap (``$AGENTWORLD_BWRAP`` when set), or None."""
    chosen = os.environ.get(BWRAP_VARIABLE)
    if chosen:
        usable = os.path.isabs(chosen) and os.path.isfile(chosen) and os.access(chosen, os.X_OK)
        return chosen if usable else None
    for candidate in BWRAP_CANDIDATES:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("bwrap", path="/usr/sbin:/usr/bin:/sbin:/bin")
    return found


@functools.cache
def bubblewrap_problem() -> str | None:
    """Why bubblewrap cannot contain a command on this machine, or None when it can.

    Checked once per process by making a real sandbox (user namespaces may be disabled, or
    the process may lack the rights to make one)."""
    bwrap = find_bwrap()
    if bwrap is None:
        if os.environ.get(BWRAP_VARIABLE):
            return f"no bubblewrap at ${BWRAP_VARIABLE} ({os.environ[BWRAP_VARIABLE]})"
        return "bubblewrap is not installed (Debian: apt-get install bubblewrap)"
    probe = [*_namespace_options(bwrap, network="deny"), "--ro-bind", "/", "/", "--", "/bin/true"]
    try:
        done = subprocess.run(
            probe, stdin=subprocess.DEVNULL, capture_output=True, timeout=10, check=False, env={}
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap cannot start: {exc}"
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip().splitlines()
        return f"bubblewrap cannot make a sandbox here: {reason[-1] if reason else done.returncode}"
    return None


def probed() -> bool:
    """Whether this process has probed bubblewrap already (``sandbox_status`` then does no
    I/O beyond resolving the working directory, and need not leave the event loop)."""
    return bubblewrap_problem.cache_info().currsize > 0


def sandbox_status(
    mode: SandboxMode, network: NetworkMode, working_dir: str | None
) -> SandboxStatus:
    """What a world with these settings gets on this machine (probes bubblewrap once)."""
    writable = (str(working_root(working_dir)),)
    if mode == "off":
        return SandboxStatus(mode, False, writable, network)
    problem = bubblewrap_problem()
    return SandboxStatus(mode, problem is None, writable, network, problem)


def _namespace_options(bwrap: str, *, network: NetworkMode, new_session: bool = True) -> list[str]:
    options = [
        bwrap,
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--cap-drop",
        "ALL",
    ]
    if new_session:
        options.append("--new-session")  # no TIOCSTI into a terminal we might share
    if network == "deny":
        options.append("--unshare-net")
    return options


KeptFiles = tuple[tuple[str, ...], tuple[str, ...]]
"""Files a contained process may not change (``protected``: policy files) and may not see
(``private``: a SQLite database), should they lie where it may write."""


def hidden(path: str, *, home: str | None = None) -> bool:
    """Whether ``path`` lies in a directory the sandbox hides (``HIDDEN_DIRECTORIES``, ``home``)."""
    places = [*HIDDEN_DIRECTORIES, *([home] if home and home != "/" else [])]
    return any(path == place or path.startswith(place.rstrip("/") + "/") for place in places)


def sandboxed_argv(
    argv: Sequence[str],
    *,
    writable: Sequence[str],
    cwd: str,
    network: NetworkMode,
    home: str | None = None,
    readable: Sequence[str] = (),
    protected: Sequence[str] = (),
    private: Sequence[str] = (),
    new_session: bool = True,
) -> list[str]:
    """``argv`` run inside bubblewrap: the system read-only, ``writable`` the only writable
    places, private ``/tmp``, ``home`` (and every home) hidden but for ``readable`` (shown
    read-only: where an MCP server's program is installed), its own PID namespace.
    ``protected`` files stay read-only and ``private`` files empty inside a writable place:
    a command must not rewrite the policy that judges it or the database that records it.

    ``new_session``: the sandbox's processes get a session of their own, away from any terminal
    the caller has. A caller that already starts bubblewrap in a new session without a terminal
    (the shell's guard) passes False: the sandbox then stays in bubblewrap's process group, so
    killing that group ends it even while bubblewrap is still starting (before its
    ``--die-with-parent`` is in force)."""
    bwrap = find_bwrap()
    if bwrap is None:
        raise RuntimeError("bubblewrap is not installed")
    options = [*_namespace_options(bwrap, network=network, new_session=new_session), "--ro-bind", "/", "/"]
    options += ["--dev", "/dev", "--proc", "/proc"]
    hidden = [*HIDDEN_DIRECTORIES]
    if home and home not in hidden and home != "/":
        hidden.append(home)
    for directory in hidden:
        if os.path.isdir(directory) and not os.path.islink(directory):
            options += ["--tmpfs", directory]
    for path in readable:
        if os.path.exists(path):
            options += ["--ro-bind", path, path]
    for path in writable:  # after the hiding: a working directory under /tmp or $HOME comes back
        options += ["--bind", path, path]
    for path in _within(protected, writable):  # after the writable binds, which they narrow
        options += ["--ro-bind", path, path]
    for path in _within(private, writable):
        options += ["--ro-bind", "/dev/null", path]
    options += ["--chdir", cwd, "--", *argv]
    return options


def _within(files: Sequence[str], places: Sequence[str]) -> list[str]:
    """The existing ``files`` (by their real paths) that lie in one of ``places``."""
    found: list[str] = []
    for file in files:
        real = os.path.realpath(file)
        if os.path.isfile(real) and any(real.startswith(p.rstrip("/") + "/") for p in places):
            found.append(real)
    return sorted(set(found))


def server_argv(
    command: str,
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    status: SandboxStatus,
    protected: Sequence[str] = (),
    private: Sequence[str] = (),
) -> list[str]:
    """A stdio MCP server's command line inside a world's sandbox (SPEC C2): the working
    directory the only writable place, the server's directory and program, and the files its
    arguments name (``python /home/me/server.py``), shown read-only where the sandbox would
    hide them (a program installed under a home directory or ``/tmp``); ``protected`` and
    ``private`` files kept from it as from a shell command (``sandboxed_argv``)."""
    home = env.get("HOME", os.environ.get("HOME"))
    start = os.path.expanduser(cwd or status.writable[0])
    found = shutil.which(command, path=env.get("PATH", os.environ.get("PATH")))
    program = found if found and os.sep not in command else os.path.join(start, os.path.expanduser(command))
    places = {*_installed_under(program), *_installed_under(os.path.realpath(program))}
    places |= set(_named_files(args, start))
    directory = os.path.realpath(start)
    readable = sorted(place for place in {*places, directory} if hidden(place, home=home))
    return sandboxed_argv(
        [program, *args],
        writable=status.writable,
        cwd=directory,
        network=status.network,
        home=home,
        readable=readable,
        protected=protected,
        private=private,
    )


def _named_files(args: Sequence[str], start: str) -> list[str]:
    """The existing regular files a server's arguments name (absolute, or relative to where it
    starts): each file alone, never the directory around it."""
    named: list[str] = []
    for arg in args:
        path = os.path.join(start, os.path.expanduser(arg))
        if os.path.isfile(path):
            named += [os.path.abspath(path), os.path.realpath(path)]
    return named


def _installed_under(program: str) -> list[str]:
    """Where a program's installation lies: ``PREFIX`` for ``PREFIX/bin/name`` (an
    interpreter's libraries lie beside its ``bin``), else the program's directory."""
    directory = os.path.dirname(os.path.abspath(program))
    if os.path.basename(directory) == "bin":
        return [os.path.dirname(directory)]
    return [directory]

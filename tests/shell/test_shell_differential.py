"""Differential test of the shell policy against the real shell (SPEC P4: fail closed).

Lines are generated from a grammar that mixes the allowed commands (``echo``, ``ls``,
``cat``) with marker-creating commands hidden in every syntactic position: expansions,
arithmetic, quotes, backticks, here-docs, redirections, wrappers, interpreters, escapes,
line continuations, plus random metacharacters inserted anywhere. Every line the policy
ALLOWs is then run, in a sandbox directory, with the shell tool's real runner: no file may
ever appear. Seeded and bounded for CI; ``AGENTWORLD_FUZZ_LINES=100000`` runs longer.
"""

from __future__ import annotations

import asyncio
import os
import random
from pathlib import Path

import pytest

from agentworld.policy.engine import PolicyEngine
from agentworld.policy.rules import PolicyDecision, PolicyRule
from agentworld.tools.builtin.shell import run_shell
from agentworld.tools.registry import ToolContext

ALLOWED = ("echo", "ls", "cat")
LINES = int(os.environ.get("AGENTWORLD_FUZZ_LINES", "2500"))
SEED = int(os.environ.get("AGENTWORLD_FUZZ_SEED", "20261122"))

HIDDEN = [
    "$(touch M)", "`touch M`", '"$(touch M)"', "${PWD#$(touch M)}", '"${PWD#$(touch M)}"',
    "${X:-$(touch M)}", "$((1+$(touch M)))", '"$((1+$(touch M)))"', "$[$(touch M)]",
    "'$(touch M)'", "\\$(touch M)", "$'\\x24(touch M)'", "<(touch M)", ">(touch M)",
    "&>/dev/null touch M", "|& touch M", "\\\ntouch M", "${IFS}touch${IFS}M", "$(echo touch M)",
    "\\`touch M\\`", '"`echo \\`touch M\\``"', "<<<$(touch M)", "<<EOF\n$(touch M)\nEOF\n",
    "<<'EOF'\ntouch M\nEOF\n", "# x\ntouch M", "#\\\ntouch M", "{touch,M}", "$(printf touch) M",
    "/usr/bin/tou[c]h M", "t\\ouch M", "'touch' M", '"tou"ch M', "$'touch' M", "./touch M",
    "bash -c 'touch M'", "sh -c 'ls &>/dev/null touch M'", "eval touch M", "eval 'touch M'",
    "echo touch M | sh", "echo touch M | bash", "env touch M", "command touch M", "exec touch M",
    "xargs touch M", "find . -maxdepth 0 -exec touch M \\;", "timeout 5 touch M",
    "ionice touch M", "nice touch M", "trap 'touch M' EXIT", "alias ls='touch M'",
    "printf -v 'a[$(touch M)]' 1", "test -v 'a[$(touch M)]'", "a[$(touch M)]=1",
    "X=$(touch M)", "PATH=. ls", "BASH_ENV=M1 ls", "f() { touch M; }; f", "{ touch M; }",
    "if true; then touch M; fi", "for i in 1; do touch M; done", "case x in x) touch M;; esac",
    "[[ -v a[$(touch M)] ]]", "((a[$(touch M)]))", "coproc touch M", "time touch M",
    "! touch M", "(touch M)", "$(ls; touch M)", '"$(ls "$(touch M)")"', "$(case x in x) touch M;; esac)",
    "${!X}", "${X/a/$(touch M)}", "${X@P}", "$(<M)", ">M", ">>M", "2>M", "&>M", ">|M", "<>M",
    ">&M", "> M2 ls", "1>M", "cat >M", "$(echo M) >x", "ls 2>&1 >M", "echo > /dev/tcp/127.0.0.1/1",
]
WORDS = [
    "x", "-l", "-la", "'a b'", '"a $HOME"', "$HOME", "*", "{a,b}", "~", "a.txt", "--", "'",
    '"', "\\", "$", "#", "=", "a=b", "2>&1", ">/dev/null", "2>/dev/null", "<a.txt", "\\ ",
    "'$'", '"\\$"', "$?", "$#", "${HOME}", "$(ls)", "$(echo hi)", '"$(ls -la)"',
]
SEPARATORS = [" ; ", " && ", " || ", " | ", " & ", "\n", ";", "&&", "|", " |& ", " \\\n "]
METACHARACTERS = list("$()`'\"\\{};&|<>\n#~*[]!= \t") + ["$(", "${", "$((", "<<", "&>", "\\\n"]


def _word(rng: random.Random, depth: int) -> str:
    roll = rng.random()
    if roll < 0.25:
        return rng.choice(HIDDEN)
    if roll < 0.3 and depth < 3:
        return f"$({_line(rng, depth + 1)})"
    if roll < 0.35 and depth < 3:
        return f'"$({_line(rng, depth + 1)})"'
    return rng.choice(WORDS)


def _command(rng: random.Random, depth: int) -> str:
    roll = rng.random()
    if roll < 0.1 and depth < 3:
        return f"({_line(rng, depth + 1)})"
    if roll < 0.15 and depth < 3:
        shell = rng.choice(["bash -c", "sh -c", "eval"])
        inner = _line(rng, depth + 1).replace("'", "'\\''")
        return f"{shell} '{inner}'"
    if roll < 0.2:
        return rng.choice(HIDDEN)
    name = rng.choice([*ALLOWED, *ALLOWED, "e'ch'o", "\\ls", '"cat"', "/bin/ls", "ls\\\n"])
    words = [_word(rng, depth) for _ in range(rng.randint(0, 3))]
    return " ".join([name, *words])


def _line(rng: random.Random, depth: int = 0) -> str:
    parts = [_command(rng, depth)]
    for _ in range(rng.randint(0, 2)):
        parts += [rng.choice(SEPARATORS), _command(rng, depth)]
    return "".join(parts)


def _mutate(rng: random.Random, line: str) -> str:
    for _ in range(rng.randint(1, 3)):
        at = rng.randint(0, len(line))
        line = line[:at] + rng.choice(METACHARACTERS) + line[at:]
    return line


def generated_lines(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        line = _line(rng)
        lines.append(_mutate(rng, line) if rng.random() < 0.4 else line)
    return lines


def allow_engine() -> PolicyEngine:
    rule = PolicyRule(PolicyDecision.ALLOW, 2.5, tool_name="shell_cmd", command_prefixes=ALLOWED)
    return PolicyEngine([rule])


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_no_allowed_line_runs_a_hidden_command(tmp_path: Path) -> None:
    engine = allow_engine()
    lines = generated_lines(LINES, SEED)
    allowed = [
        line
        for line in lines
        if engine.evaluate("shell_cmd", {"command": line}).decision is PolicyDecision.ALLOW
    ]
    # The test is only worth something when the generator reaches both sides of the policy.
    assert len(allowed) > LINES // 10, f"only {len(allowed)} of {LINES} lines were allowed"
    assert len(allowed) < LINES - LINES // 10

    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    (sandbox / "a.txt").write_text("hello\n")
    before = _files(sandbox)
    context = ToolContext(world="w", chat_id="c", agent="a", working_dir=str(sandbox))

    async def run_all() -> list[tuple[str, set[str]]]:
        escaped: list[tuple[str, set[str]]] = []
        for line in allowed:
            await run_shell({"command": line, "timeout": 5}, context)
            created = _files(sandbox) - before
            if created:
                escaped.append((line, created))
                for name in created:
                    path = sandbox / name
                    if path.is_file():
                        path.unlink()
        return escaped

    escaped = asyncio.run(run_all())
    assert escaped == [], f"ALLOWed lines ran hidden commands: {escaped[:5]}"


@pytest.mark.parametrize("line", [h for h in HIDDEN if "touch" in h or ">" in h])
def test_each_hidden_shape_alone_is_never_allowed_after_an_allowed_command(line: str) -> None:
    engine = allow_engine()
    for shaped in (f"echo {line}", f"ls; {line}", f"cat a.txt | {line}", f'echo "{line}"'):
        result = engine.evaluate("shell_cmd", {"command": shaped})
        if result.decision is PolicyDecision.ALLOW:
            # Allowed only when the shell really treats the shape as plain text for echo/ls/cat.
            assert not _runs_marker(shaped), shaped


def _runs_marker(line: str) -> bool:
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as root:
        subprocess.run(
            ["bash", "--noprofile", "--norc", "-c", line],
            cwd=root, env={"PATH": "/usr/bin:/bin", "HOME": root},
            stdin=subprocess.DEVNULL, capture_output=True, timeout=5, check=False,
        )
        return bool(os.listdir(root))

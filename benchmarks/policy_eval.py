"""Policy evaluation with 100 rules, one call at a time (SPEC §6: < 20 us per evaluation).

What is measured: ``PolicyEngine.evaluate`` against 100 tier-2 rules loaded from
TOML -- named tools, MCP servers (``srv__*``), ``argsPattern`` rules (two of them
wildcards, so every call with arguments is stringified), ``shell_cmd`` prefix
rules and a catch-all -- for four calls:

* a simple non-shell call, decided by a named rule near the bottom of the list
  (so nearly every rule is looked at);
* a call whose arguments match an ``argsPattern`` rule;
* a one-part shell command;
* a ten-part compound shell command (every part is parsed and decided).

Each call runs ``--n`` times (``--shell-n`` for the shell cases) after a warm-up,
timed one by one with ``time.perf_counter_ns``. For the shell cases, the time of
``analyze`` alone (the strict reader the engine uses), of the tree-sitter split used for
lines the strict reader refuses, and of the bare tree-sitter parse, is printed too,
so one can see how much of a shell evaluation is parsing; ``--profile`` adds a
cProfile of the ten-part case.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time
from collections.abc import Callable
from typing import Any

import tree_sitter_bash
from _harness import percentile
from tree_sitter import Language, Parser

from agentworld.policy.engine import PolicyEngine
from agentworld.policy.loader import load_policy_text
from agentworld.policy.rules import Tier
from agentworld.shell.commands import analyze
from agentworld.shell.split import parse_command

TARGET_US = 20.0
SIMPLE_CALL = ("read_file", {"path": "notes/today.md"})
PATTERN_CALL = ("deploy_3", {"service": "api", "replicas": 3, "env": "prod15"})
ONE_PART = "git log --oneline -n 5"
TEN_PARTS = (
    "git status && ls -la src; echo start | grep s && cat README.md"
    " || echo none; git log -n 1 && pwd; touch out && ls"
)

ALLOWED_PREFIXES = [
    "git log", "git status", "git diff", "git show", "ls", "cat", "echo", "pwd", "grep",
    "touch", "head", "tail", "wc", "find", "python -m pytest", "make test",
]  # fmt: skip
DENIED_PREFIXES = ["rm", "sudo", "curl", "wget", "dd", "mkfs", "chmod -R", "git push"]


def policy_text() -> str:
    """The 100 rules, as a user would write them."""
    tables: list[str] = []

    def add(priority: int, decision: str, **fields: Any) -> None:
        body = [f'decision = "{decision}"', f"priority = {priority}"]
        for key, value in fields.items():
            body.append(f"{key} = {value!r}" if isinstance(value, list) else f"{key} = '{value}'")
        tables.append("[[rule]]\n" + "\n".join(body))

    for i in range(44):  # named tools, none of them the simple call's
        add(900 - i * 10, "allow" if i % 2 else "deny", toolName=f"tool_{i}")
    for i in range(10):  # every tool of one MCP server
        add(600 - i, "ask_user" if i % 3 else "deny", mcpName=f"srv{i}")
    for i in range(18):  # argsPattern rules on named tools
        add(500 - i, "deny", toolName=f"deploy_{i % 6}", argsPattern=f'"env":"prod{i}"')
    add(700, "deny", argsPattern='"path":"/etc/')  # wildcards: every call is stringified
    add(699, "deny", argsPattern=r"\.ssh/")
    for i, prefix in enumerate(DENIED_PREFIXES):
        add(800 - i, "deny", toolName="shell_cmd", commandPrefix=prefix)
    for i, prefix in enumerate(ALLOWED_PREFIXES):
        add(300 - i, "allow", toolName="shell_cmd", commandPrefix=prefix)
    add(1, "allow", toolName="read_file")  # decides the simple call, after 98 other rules
    add(0, "ask_user")  # the catch-all
    return "\n\n".join(tables) + "\n"


def build_engine() -> PolicyEngine:
    loaded = load_policy_text(policy_text(), source="bench.toml", tier=Tier.USER)
    if loaded.errors:
        raise SystemExit("; ".join(str(e) for e in loaded.errors))
    if len(loaded.rules) != 100:
        raise SystemExit(f"expected 100 rules, built {len(loaded.rules)}")
    return PolicyEngine(loaded.rules)


def measure(op: Callable[[], object], *, n: int, warmup: int) -> list[float]:
    """Wall time of each of ``n`` calls, in microseconds."""
    for _ in range(warmup):
        op()
    clock = time.perf_counter_ns
    samples: list[float] = []
    for _ in range(n):
        start = clock()
        op()
        samples.append((clock() - start) / 1000)
    return samples


def line(label: str, samples: list[float], target: str) -> str:
    median, p99 = statistics.median(samples), percentile(samples, 0.99)
    return (
        f"  {label:<38} median {median:8.2f} us   p99 {p99:8.2f} us   {target}   (n={len(samples)})"
    )


def run(args: argparse.Namespace) -> None:
    engine = build_engine()
    ten = parse_command(TEN_PARTS)
    assert len(ten.parts) == 10, ten.parts
    for tool, arguments, expected in (
        (*SIMPLE_CALL, "ALLOW"),
        (*PATTERN_CALL, "DENY"),
        ("shell_cmd", {"command": ONE_PART}, "ALLOW"),
        ("shell_cmd", {"command": TEN_PARTS}, "ALLOW"),
    ):
        decided = engine.evaluate(tool, arguments).decision
        assert decided == expected, (tool, arguments, decided)

    target = f"target < {TARGET_US:.0f} us"
    none = "(no SPEC target)"
    cases: list[tuple[str, Callable[[], object], int, str]] = [
        ("simple non-shell call", lambda: engine.evaluate(*SIMPLE_CALL), args.n, target),
        ("call matching an argsPattern", lambda: engine.evaluate(*PATTERN_CALL), args.n, target),
        (
            "shell, 1 part",
            lambda: engine.evaluate("shell_cmd", {"command": ONE_PART}),
            args.shell_n,
            none,
        ),
        (
            "shell, 10 parts",
            lambda: engine.evaluate("shell_cmd", {"command": TEN_PARTS}),
            args.shell_n,
            none,
        ),
    ]
    results = {label: (measure(op, n=n, warmup=args.warmup), note) for label, op, n, note in cases}

    # Where shell time goes: the whole split, and the tree-sitter parse inside it.
    parser = Parser(Language(tree_sitter_bash.language()))
    breakdown = {
        "analyze (strict reader), 1 part": lambda: analyze(ONE_PART),
        "analyze (strict reader), 10 parts": lambda: analyze(TEN_PARTS),
        "tree-sitter split (refused lines only), 10 parts": lambda: parse_command(TEN_PARTS),
        "tree-sitter parse only, 10 parts": lambda: parser.parse(TEN_PARTS.encode()),
    }
    parsing = {
        label: measure(op, n=args.shell_n, warmup=args.warmup) for label, op in breakdown.items()
    }

    print("Agent World policy evaluation (100 rules)")
    print("=========================================")
    print(
        "  rules: 44 named, 10 MCP server, 20 argsPattern (2 wildcard), "
        "24 shell prefix, 1 read_file, 1 catch-all"
    )
    print(f"  warm-up: {args.warmup} calls per case; timer: time.perf_counter_ns")
    print()
    for label, (samples, note) in results.items():
        print(line(label, samples, note))
    print()
    print("  parsing alone (inside the shell cases above):")
    for label, samples in parsing.items():
        print(line(label, samples, ""))
    print()
    simple = statistics.median(results["simple non-shell call"][0])
    print(f"  simple call vs target: {simple / TARGET_US:.2f}x of the {TARGET_US:.0f} us budget")
    for parts, label, parse_label in (
        (1, "shell, 1 part", "analyze (strict reader), 1 part"),
        (10, "shell, 10 parts", "analyze (strict reader), 10 parts"),
    ):
        total = statistics.median(results[label][0])
        parse = statistics.median(parsing[parse_label])
        print(
            f"  {label}: parsing is {parse:.0f} of {total:.0f} us ({parse / total:.0%}); "
            f"{total / simple:.0f}x a simple call, {total / parts:.0f} us per part"
        )

    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(200):
            engine.evaluate("shell_cmd", {"command": TEN_PARTS})
        profiler.disable()
        print()
        print("  cProfile, 200 evaluations of the 10-part command (top 15 by own time):")
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=20_000, help="calls per non-shell case")
    parser.add_argument("--shell-n", type=int, default=2_000, help="calls per shell case")
    parser.add_argument("--warmup", type=int, default=500, help="unmeasured calls first")
    parser.add_argument("--profile", action="store_true", help="profile the 10-part case")
    run(parser.parse_args())


if __name__ == "__main__":
    main()

"""The package graph stays layered and acyclic (ARCHITECTURE.md: "the layout is the architecture").

Every ``agentworld`` import is read from the source with ``ast`` — module level, inside
functions and under ``TYPE_CHECKING`` alike, since each one is a dependency a reader must
follow — and folded to the package it lands in.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

SRC = Path(__file__).parents[1] / "src" / "agentworld"

# Lower layers never import higher ones; within a layer, imports must not form a cycle.
LAYERS: list[set[str]] = [
    {"errors", "models", "redaction", "process_secrets", "callbacks", "strict_json", "tracing"},
    {"shell", "routing", "approval", "policy"},  # pure cores
    {"providers", "tools", "storage", "events", "testing"},  # I/O behind narrow interfaces
    {"runtime"},
    # the facade and the interfaces; `server` (the HTTP API) is started only by `cli/serve.py`
    {
        "agent_world", "world_catalog", "message_edits", "run_results", "settings_checks", "world_file",
        "world_apply", "world_changes", "temporal_worker",
        "documents",
        "cli", "server", "webui", "__init__", "__main__",
    },
]
LAYER_OF = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def _unit(path: Path) -> str:
    """The package (or top-level module) a source file belongs to."""
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "agentworld" and len(parts) > 1:
                target = parts[1]
                if (SRC / target).is_dir() or (SRC / f"{target}.py").exists():
                    found.add(target)
    return found


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for path in SRC.rglob("*.py"):
        unit = _unit(path)
        graph[unit] |= _imports(path) - {unit}
    return dict(graph)


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_every_package_has_a_layer() -> None:
    assert set(package_graph()) <= set(LAYER_OF), set(package_graph()) - set(LAYER_OF)


def test_no_package_import_cycle() -> None:
    assert _cycle(package_graph()) is None, " -> ".join(_cycle(package_graph()) or [])


@pytest.mark.parametrize("unit", sorted(LAYER_OF))
def test_no_package_imports_a_higher_layer(unit: str) -> None:
    upward = {t for t in package_graph().get(unit, ()) if LAYER_OF.get(t, 0) > LAYER_OF[unit]}
    assert not upward, f"{unit} (layer {LAYER_OF[unit]}) imports {sorted(upward)}"


def test_only_the_serve_command_imports_the_server() -> None:
    importers = {
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if _unit(path) != "server" and "server" in _imports(path)
    }
    assert importers <= {"cli/serve.py"}, importers


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None

"""`agentworld apply`, `export` and `init` (SPEC §7.4): a world as a TOML file.

The plan and its application live in :mod:`agentworld.world_apply`, which the HTTP API uses
too; this module reads the file and prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentworld.cli import output
from agentworld.cli.common import JsonOpt, run

if TYPE_CHECKING:
    from agentworld.agent_world import AgentWorld
    from agentworld.world_apply import Plan


FileArg = Annotated[Path, typer.Argument(metavar="FILE", help="The world file (TOML).")]


def apply(
    file: FileArg,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the plan; change nothing.")] = False,
    prune: Annotated[bool, typer.Option("--prune", help="Delete agents and rules the file does not hold.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Make the world the file describes exist exactly as described; print the changes."""
    from agentworld.world_apply import apply_file, file_key, plan_doc
    from agentworld.world_file import read_world_file

    async def act(aw: AgentWorld) -> tuple[str, Plan]:
        wanted = read_world_file(file)
        return wanted.name, await apply_file(aw, wanted, dry_run=dry_run, prune=prune)

    name, planned = run(act)
    if json_out:
        output.print_json(plan_doc(name, planned, dry_run))
        return
    changes = planned.changes
    if not changes:
        typer.echo("no changes")
    for change in changes:
        keys = change.fields if change.kind == "rule" else [file_key(k) for k in change.fields]
        fields = f" ({', '.join(keys)})" if keys else ""
        typer.echo(f"{change.action} {change.kind} {change.name}{fields}")
    for agent in planned.kept:
        typer.echo(f"kept agent {agent} (not in the file; --prune deletes it)")
    for rule in planned.kept_rules:
        typer.echo(f"kept rule {rule} (not in the file; --prune deletes it)")
    if dry_run and changes:
        typer.echo("dry run: nothing changed")


def export(
    world: Annotated[str, typer.Argument(metavar="WORLD", help="The world to write as a file.")],
    out: Annotated[Path | None, typer.Option("--out", help="Write to this file (default: standard output).")] = None,
) -> None:
    """Write the world file `apply` reads: settings, agents, rules, MCP servers; no secrets."""
    from agentworld.world_apply import export_text

    async def load(aw: AgentWorld) -> str:
        return await export_text(aw, world)

    text = run(load)
    if out is None:
        typer.echo(text, nl=False)
        return
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        output.fail(f"--out: cannot write {out}: {exc.strerror or exc}")
    typer.echo(f"wrote {out}")

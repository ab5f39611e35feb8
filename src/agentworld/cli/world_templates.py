"""`agentworld init` (SPEC §7.4 D2): write a ready world file from a shipped template.

Templates are package data: ``templates/NAME.toml`` and the scripted model replies in
``templates/NAME/``, copied next to each other so the file's relative paths hold.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated

import typer

from agentworld.cli import output


def _templates() -> dict[str, Traversable]:
    root = files("agentworld") / "templates"
    return {item.name.removesuffix(".toml"): item for item in root.iterdir() if item.name.endswith(".toml")}


def _describe(template: Traversable) -> str:
    """The template's first comment line: what it shows."""
    for line in template.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            return line.lstrip("# ").strip()
    return ""


def init(
    template: Annotated[str, typer.Argument(metavar="TEMPLATE", help="The template to write (init --list names them).")] = "release-team",
    directory: Annotated[Path, typer.Option("--dir", help="Where to write the world file (default: the current directory).")] = Path("."),
    list_: Annotated[bool, typer.Option("--list", help="Name the templates.")] = False,
) -> None:
    """Write a ready world file (and its scripted replies) from a template."""
    templates = _templates()
    if list_:
        for name, item in sorted(templates.items()):
            typer.echo(f"{name}\t{_describe(item)}")
        return
    if template not in templates:
        output.fail(f"unknown template {template!r}: choose one of {', '.join(sorted(templates))}", code=2)
    source = templates[template]
    scripts = files("agentworld") / "templates" / template
    writes: list[tuple[Path, str]] = [(directory / source.name, source.read_text(encoding="utf-8"))]
    if scripts.is_dir():
        writes += [(directory / template / item.name, item.read_text(encoding="utf-8")) for item in scripts.iterdir() if item.is_file()]
    existing = [str(path) for path, _ in writes if path.exists()]
    if existing:
        output.fail(f"{', '.join(existing)} already exist{'s' if len(existing) == 1 else ''}: init never overwrites; choose another --dir")
    try:
        for path, text in writes:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    except OSError as exc:
        output.fail(f"cannot write {exc.filename}: {exc.strerror or exc}")
    typer.echo(f"wrote {writes[0][0]}; next: {output.command('apply', str(writes[0][0]))}")

"""What a shell command line will run: the pure core the policy and the shell tool share.

``syntax`` reads, exactly, the part of bash the policy fully understands; ``commands`` turns
a line into the commands it runs (wrappers and scripts unwrapped, each with how sure we are);
``split`` holds those command values and the tree-sitter split used for lines the strict
reader refuses. No I/O, nothing above ``models``/``errors`` imported.

The package itself holds only :data:`SHELL_TOOL`: storing a grant or offering the built-in
tools names the shell tool without reading a shell line, and importing the readers would
slow every process that needs only this name (benchmarks/README.md). Import what you use
from its module (``shell.commands.analyze``, ``shell.split.command_line``).
"""

SHELL_TOOL = "shell_cmd"
"""The one tool that runs shell lines; the policy, grants and approval display single it out."""

"""What a shell command line will run: the pure core the policy and the shell tool share.

``syntax`` reads, exactly, the part of bash the policy fully understands; ``commands`` turns
a line into the commands it runs (wrappers and scripts unwrapped, each with how sure we are);
``split`` holds those command values and the tree-sitter split used for lines the strict
reader refuses. No I/O, nothing above ``models``/``errors`` imported.
"""

SHELL_TOOL = "shell_cmd"
"""The one tool that runs shell lines; the policy, grants and approval display single it out."""

from agentworld.shell.commands import ShellAnalysis, analyze  # noqa: E402
from agentworld.shell.split import CommandPart, command_line  # noqa: E402

__all__ = ["SHELL_TOOL", "CommandPart", "ShellAnalysis", "analyze", "command_line"]

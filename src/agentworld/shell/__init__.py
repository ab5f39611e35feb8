"""What a shell command line will run: the pure core the policy and the shell tool share.

``syntax`` reads, exactly, the part of bash the policy fully understands; ``commands`` turns
a line into the commands it runs (wrappers and scripts unwrapped, each with how sure we are);
``split`` holds those command values and the tree-sitter split used for lines the strict
reader refuses. No I/O, nothing above ``models``/``errors`` imported.
"""

from agentworld.shell.commands import ShellAnalysis, analyze
from agentworld.shell.split import CommandPart, command_line

__all__ = ["CommandPart", "ShellAnalysis", "analyze", "command_line"]

"""Keeping the runtime's own memory and environment out of reach of the tools it starts.

The runtime holds the provider keys: in its memory, and in the environment it was started
with, which ``/proc/<pid>/environ`` shows for as long as it runs (deleting a key from
``os.environ`` changes neither). A tool runs as the same user, so by default it may read
both: ``grep -a sk- /proc/*/environ | base64`` gets past any output masking. Linux lets a
process declare itself not dumpable (``prctl(PR_SET_DUMPABLE, 0)``): its ``/proc/<pid>``
files then belong to root, and another process of the same user can neither read its
``environ``, ``mem`` or ``maps`` nor attach a debugger to it. Children become dumpable
again when they execute a program, so the tools themselves are unaffected.

What this does not cover: a process with ``CAP_SYS_PTRACE`` (root) reads any process; other
processes of the same user (the terminal that exported the key and started the CLI) keep
their own ``environ`` readable; the runtime writes no core dumps. Only
running tools as another user or in a sandbox closes the rest.
"""

from __future__ import annotations

import functools
import sys

PR_SET_DUMPABLE = 4
"""``<linux/prctl.h>``."""
PR_GET_DUMPABLE = 3


@functools.cache
def keep_process_private() -> bool:
    """Make this process not dumpable (once; Linux only), before it starts a tool; true when
    it is so now. Nothing else changes: a platform or libc without ``prctl`` is left as is."""
    if not sys.platform.startswith("linux"):
        return False
    # Here, not at the top: importing ``ctypes`` would slow the first turn of every process,
    # and only a process that starts a tool needs it.
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        return int(libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False

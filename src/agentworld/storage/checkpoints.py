"""WAL checkpoints off the path of a turn.

In WAL mode a commit appends the pages it changed to the log; a checkpoint copies them back
into the database file, and with ``synchronous=NORMAL`` it is the one step that waits for
the disk (fsync). SQLite's automatic checkpoint runs inside whichever commit crosses its
threshold, so now and then one turn paid the disk's wait for the others. Here the worker's
connection has it turned off, and a thread with a connection of its own runs a passive
checkpoint (which never blocks a writer or a reader) after every ``COMMITS_PER_CHECKPOINT``
write commits. When the last connection to the file closes, SQLite checkpoints what is left.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading

COMMITS_PER_CHECKPOINT = 64
"""About 600 pages of log at a turn's ten or so pages a commit: under SQLite's own 1,000."""


class Checkpointer:
    """Runs ``PRAGMA wal_checkpoint(PASSIVE)`` on its own thread when asked."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._wanted = threading.Event()
        self._closing = False
        self._commits = 0
        self._thread: threading.Thread | None = None

    def committed(self) -> None:
        """Count one write commit; every ``COMMITS_PER_CHECKPOINT``th asks for a checkpoint.
        Called by the unit that holds the runner's guard, so one at a time."""
        self._commits += 1
        if self._commits % COMMITS_PER_CHECKPOINT:
            return
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="agentworld-checkpoint", daemon=True
            )
            self._thread.start()
        self._wanted.set()

    def close(self) -> None:
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._closing = True
        self._wanted.set()
        thread.join()

    def _run(self) -> None:
        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        try:
            while True:
                self._wanted.wait()
                self._wanted.clear()
                if self._closing:
                    return
                # Busy or failing: the next request tries again; until then the log only grows.
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        finally:
            conn.close()

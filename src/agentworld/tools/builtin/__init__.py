"""Built-in tools: shell_cmd, read_file, list_files (SPEC T2), write_file, edit_file (F1).

``definitions`` says what the model sees; ``shell``, ``files`` and ``file_writes`` run the
calls. The limits below are in both: in the parameters the model is shown, and in what a run
enforces.
"""

DEFAULT_TIMEOUT = 60.0
"""Seconds a ``shell_cmd`` runs when the call names no ``timeout``."""
MAX_TIMEOUT = 600.0
"""The longest ``timeout`` a ``shell_cmd`` call may ask for."""
MAX_FILE_BYTES = 1024 * 1024
"""The largest file (before or after the change) ``write_file`` / ``edit_file`` read or write:
a change to a bigger one is not something a person can read in a diff."""

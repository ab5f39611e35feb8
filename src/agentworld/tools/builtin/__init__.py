"""Built-in tools: shell_cmd, read_file, list_files (SPEC T2).

``definitions`` says what the model sees; ``shell`` and ``files`` run the calls. The limits
below are in both: in the parameters the model is shown, and in what a run enforces.
"""

DEFAULT_TIMEOUT = 60.0
"""Seconds a ``shell_cmd`` runs when the call names no ``timeout``."""
MAX_TIMEOUT = 600.0
"""The longest ``timeout`` a ``shell_cmd`` call may ask for."""

"""Built-in tools: shell_cmd, read_file, list_files (SPEC T2)."""

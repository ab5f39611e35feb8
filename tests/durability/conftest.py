"""Durable chats run against both backends: every test's ``db_url`` is a SQLite file, then a
database of its own on the session's real PostgreSQL server (``tests/conftest.py``)."""

"""Durable storage: SQLAlchemy async, SQLite by default, PostgreSQL through the same code."""

"""Durable storage: SQLAlchemy, SQLite by default (stdlib driver on a worker thread),
PostgreSQL (asyncpg) through the same code."""

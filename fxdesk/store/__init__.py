"""Persistence: one SQLite database (WAL) behind a single writer, plus cross-process locks."""

from fxdesk.store.db import Store
from fxdesk.store.errors import StoreError

__all__ = ["Store", "StoreError"]

"""Pure domain: entities, enums and reducers. No I/O, no Qt, no peewee."""

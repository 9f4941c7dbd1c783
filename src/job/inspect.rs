//! Read-only jobs: list a location (`ls`), progress from a journal or shard records (`status`), probe a store.

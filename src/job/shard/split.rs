//! Splitting a planned corpus into shards of about equal bytes (`plan --shards N`).

//! One move split across machines: split, ids, progress location, typed state, cost shares.

/// Splitting a corpus into key ranges for `plan --shards N` (the planning side of sharding).
pub mod split;

//! One move split across machines: split, ids, progress location, typed state, cost shares.

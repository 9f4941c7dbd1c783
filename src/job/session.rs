//! One run of a pair: lock, journal, interrupt, runtime, run.

//! The copy and exec jobs.

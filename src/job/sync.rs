//! The sync job.

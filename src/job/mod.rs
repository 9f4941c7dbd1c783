//! The job layer: runs each command against stores and returns a typed outcome; it never prints.
//!
//! `cli/` turns flags into an immutable spec once and presents what comes back; everything in
//! between lives here:
//! - [`session`]: one run of a pair — its lock, journal, interrupt flag, runtime and the run;
//! - [`trust`]: what a store is trusted to check and report, refined by the catalog and by a
//!   saved probe (the one place; a library caller gets the same answers as the binary);
//! - [`copy`] and [`sync`]: the copy/exec and sync jobs on a session;
//! - [`drain`]: complete checkpoints copied to durable storage, each with a durability receipt;
//! - [`stage`]: a dataset (or a node's share of it) onto a fast tier with a ready marker, and
//!   evicted again only where the object store still holds the verified original;
//! - [`shard`]: one move split across machines — the split, shard ids, where progress records
//!   live, a shard's typed state and its share of the plan's cost;
//! - [`pricing`]: a finished run priced and set against its plan;
//! - [`plan`]: evaluate, rank and pick destinations and build the plan file;
//! - [`inspect`]: the read-only jobs (`ls`, `status`, `probe`).
//!
//! Progress and notes go up through an observer ([`Observer`]) the caller supplies.

pub mod copy;
pub mod drain;
mod error;
pub mod inspect;
pub mod ls;
pub mod plan;
pub mod plan_extras;
pub mod plan_tiering;
pub mod preflight;
pub mod pricing;
pub mod session;
pub mod shard;
pub mod stage;
pub mod sync;
pub mod trust;

pub use error::JobError;

/// What a job tells its caller while it runs: each object's event and notes for the user. Every
/// method has a default that ignores it, so a caller implements only what it shows; a job never
/// prints.
pub trait Observer: Send + Sync {
    /// One event of a copy or sync run (an object copied, skipped, failed, would be copied …).
    fn event(&self, _event: &crate::transfer::Event) {}
    /// A note for the user that is not an error (Ctrl-C taken, a shard's shortfall …).
    fn note(&self, _message: &str) {}
    /// The process ends right after this (a second Ctrl-C): the last message, shown with any
    /// progress display cleared for good.
    fn last_words(&self, _message: &str) {}
    /// The run took over a stale lock (its holder is gone): by default a note.
    fn stale_lock(&self, message: &str) {
        self.note(message)
    }
    /// What sync's delete phase decided for one destination-only key (deleted, would be
    /// deleted, kept and why).
    fn delete(&self, _key: &str, _bytes: u64, _fate: &crate::transfer::sync::Fate) {}
}

/// An observer that ignores everything: for library callers that only want the outcome.
#[derive(Debug, Default, Clone, Copy)]
pub struct Quiet;

impl Observer for Quiet {}

/// The async runtime for commands that talk to stores.
pub fn runtime() -> Result<tokio::runtime::Runtime, JobError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| JobError::Failure(format!("cannot start the async runtime: {e}")))
}

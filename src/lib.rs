//! moverctl: plan, price, run and verify large object-storage moves between clouds.
//!
//! Data flows one way: `catalog` (provider prices and limits) and a corpus description feed the
//! pure `plan` module, which produces a plan file; `transfer` runs a move (a plan's or a plain
//! `SRC DST`) and `sync`'s mirror on top of it; `job` runs each command against stores and
//! returns a typed outcome. The command line (the binary's `cli` module, not part of this
//! library) resolves flags once, calls one job and presents what comes back; a program embedding
//! moverctl calls the same jobs (see docs/architecture.md).
//!
//! - `store`: a location opened through object_store, with its [`store::caps::Capabilities`]
//!   (what it checks and reports, read by the executor instead of the store kind), one retry
//!   policy ([`store::retry`]), typed error kinds ([`store::error`]), sorted listings that can
//!   only end where the store's does ([`store::list`], [`store::s3list`]) and the overlap
//!   refusal ([`store::overlap`]).
//! - `transfer`: the decision table ([`transfer::diff::decide`]), one object's verified copy
//!   ([`transfer::copy`], claims of the source in [`transfer::claims`], the typed
//!   [`transfer::verification::Verification`]; into a local folder, [`transfer::local_dest`]:
//!   one preallocated temporary file per object, positional writes, an atomic rename), the run ([`transfer::Run`]), a sync run with
//!   its guarded delete phase ([`transfer::sync::run`]) and a run's price ([`transfer::cost`]).
//! - `job`: the job layer — a session (lock, journal, interrupt, runtime), the trust rules, the
//!   copy/exec, sync, plan and read-only jobs, the shard domain and pricing against a plan; it
//!   never prints (progress and notes go to a [`job::Observer`]). Errors stay typed to the exit
//!   code ([`exit`]).
//! - `plan`: the pure cost and time model ([`plan::model`]), move or stay over a horizon of reads
//!   ([`plan::horizon`]), archive restore tiers ([`plan::restore`]), the table/JSON
//!   ([`plan::render`]) and HTML ([`plan::report`]) outputs, and the plan file ([`plan::file`]).
//! - `journal`: resume state and every SQL statement on it.
//! - `shard`: one move split across machines (key ranges, `--shard K/N|auto`, the plan's split);
//!   progress records of a shard on a store live in [`transfer::progress_store`].

pub mod bwlimit;
pub mod catalog;
pub mod checksum;
pub mod exit;
pub mod inventory;
pub mod job;
pub mod journal;
pub mod json;
pub mod limit;
pub mod lock;
pub mod money;
pub mod plan;
pub mod probe;
pub mod shard;
pub mod store;
pub mod summary;
pub mod tomlfile;
pub mod transfer;
pub mod units;

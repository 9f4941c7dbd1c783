//! moverctl: plan, price, run and verify large object-storage moves between clouds.
//!
//! Data flows one way: `catalog` (provider prices and limits) and a corpus description feed the pure
//! `plan` module, which produces a plan file; the executor (later) reads that file.

pub mod catalog;
pub mod checksum;
pub mod cli;
pub mod journal;
pub mod limit;
pub mod lock;
pub mod money;
pub mod plan;
pub mod probe;
pub mod store;
pub mod tomlfile;
pub mod transfer;
pub mod units;

//! Facts about an opened store: the rules live in [`moverctl::job::trust`] (the one place); the
//! command line uses them from there.

pub use moverctl::job::trust::{
    crc_probe_hint, find_class, provider_of, resolve_storage_class, wire_class,
};

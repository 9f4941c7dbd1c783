//! Facts about an opened store: the rules live in [`crate::job::trust`] (the one place); the
//! command line uses them from there.

pub use crate::job::trust::{
    apply_probe, crc_probe_hint, credentials_hint, find_class, provider_of, region_of,
    resolve_storage_class, unprobed_s3, wire_class,
};

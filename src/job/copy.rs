//! The copy and exec jobs.

pub mod single;

use crate::catalog::Catalog;
use crate::store::Store;
use crate::store::config::Remotes;

/// Opens the pair of `moverctl copy SRC DST`: a local `src` that is one regular file as `cp`
/// reads it ([`single`]), else both locations; both stores' capabilities refined
/// ([`super::trust::refine_caps`]).
pub fn open_pair(
    catalog: &Catalog,
    src: &str,
    dst: &str,
    remotes: &Remotes,
) -> Result<(Store, Store), super::JobError> {
    match single::detect(src, dst, remotes) {
        Some(one) => Ok(super::trust::refined(catalog, one.open(remotes)?)),
        None => super::trust::open_pair(catalog, src, dst, remotes),
    }
}

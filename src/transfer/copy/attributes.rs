//! What a copy writes besides its bytes ([`metadata`]): content headers, user metadata,
//! moverctl's own keys and the storage class.

use super::context::Ctx;
use crate::checksum::{self, META_CRC64, META_SIZE, META_SRC_ETAG};
use crate::store::list::Entry;
use crate::transfer::fidelity::ObjectMeta;
use object_store::{Attribute, Attributes};

/// What a copy writes besides its bytes: the source's content headers and user metadata
/// (`meta`, from an answer the copy already had; a local file's type from its name), the
/// `--metadata-set` / `--no-metadata` policy, then moverctl's own keys and storage class.
pub(in crate::transfer) fn metadata(
    ctx: &Ctx,
    src: &Entry,
    crc: Option<u64>,
    meta: Option<&ObjectMeta>,
) -> Attributes {
    let mut a = Attributes::new();
    if !ctx.dst.caps.keeps_metadata {
        return a;
    }
    let local = ctx.src.is_local().then_some(src.key.as_str());
    crate::transfer::fidelity::write_attributes(
        &ctx.opts.metadata,
        meta,
        local,
        ctx.dst.is_azure(),
        &mut a,
    );
    if let Some(c) = crc {
        a.insert(
            Attribute::Metadata(META_CRC64.into()),
            checksum::crc64_hex(c).into(),
        );
    }
    if let Some(e) = &src.e_tag {
        a.insert(
            Attribute::Metadata(META_SRC_ETAG.into()),
            checksum::etag_norm(e).into(),
        );
    }
    a.insert(
        Attribute::Metadata(META_SIZE.into()),
        src.size.to_string().into(),
    );
    crate::transfer::local_dest::file::source_file_attributes(ctx, src, &mut a);
    if let Some(sc) = &ctx.dst.storage_class {
        a.insert(Attribute::StorageClass, sc.clone().into());
    }
    a
}

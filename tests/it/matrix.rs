//! The verification matrix: every combination of source kind × destination kind × size class ×
//! origin × fault that exists, with one assertion everywhere: an object recorded as done (reported
//! copied or journaled verified) holds exactly its source's bytes, or the run reported it failed
//! and recorded nothing wrong; a clean re-run then ends with every destination object exact.
//!
//! Axes:
//! - store kinds: a local folder, S3 (Garage; sources through the fault proxy), Azure (Azurite),
//!   GCS (fake-gcs-server behind the XML shim), at both ends;
//! - sizes: empty, small (one PUT), large (multipart at the destination; a multipart source in
//!   the same part size), large in another part layout (a multipart source in other parts);
//! - origins: written by moverctl (its CRC64 in metadata), foreign single PUT (an MD5 ETag or MD5
//!   property), foreign multipart (a multipart ETag, a GCS CRC32C), no digest at all (S3 parts of
//!   unequal size, so no layout can be derived; Azure block lists); local files;
//! - faults: a byte flipped on every first read of an object, on every first write, the source's
//!   HEADs failing (a 503 storm on S3, errors elsewhere), none.
//!
//! Cells that cannot exist are printed as such with the reason (an empty object has no multipart
//! origin; a local source is read from the file itself, so no read can be flipped on the way;
//! GCS always keeps a CRC32C). Every run uses the default `--verify auto` (issue 25): an Azure
//! block list is checked range by range (`source-range-md5`), S3 parts of unequal size by their
//! ETag rebuilt over the learned part sizes (`source-parts-etag`), and whatever nothing checked
//! is written `unverified` and never recorded as done, never stamped with a CRC64. Azurite answers Put
//! Block with the CRC64 of the bytes it received (`dest-block-crc64`), so flipped writes into
//! Azure are caught under `--verify auto` like everywhere else. The matrix's coverage is printed and written to
//! `target/verification-matrix.txt`; README's integrity tables say the same.

use super::faults::proxy::{PFault, Proxy};
use super::faults::wrapper::{Fault, Op, Plan, faulty};
use super::faults::{Outcome, data, go};
use super::{Servers, remotes_toml, servers, unique};
use moverctl::catalog::parts::{MIB, PartRule};
use moverctl::journal::{Journal, State};
use moverctl::store::Store;
use moverctl::store::config::Remotes;
use moverctl::transfer::{CopyOptions, Verify};
use object_store::{ObjectStoreExt, PutPayload, WriteMultipart};
use std::fmt::Write as _;
use std::time::Duration;

const PART: u64 = 5 * MIB;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum K {
    Local,
    S3,
    Azure,
    Gcs,
    /// S3 (Garage) as a destination that checks and keeps `x-amz-checksum-crc64nvme` (what a
    /// saved probe of Garage finds): the checksum-only path.
    S3Crc,
    /// [`K::S3Crc`] that also checks the CRC64 as the trailer of an `aws-chunked` body (what the
    /// catalog grants AWS): a local file's parts are sent as they are read.
    S3Trailer,
}

const KINDS: [K; 4] = [K::Local, K::S3, K::Azure, K::Gcs];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Size {
    Empty,
    Small,
    /// Two parts and a few bytes at the destination's part size.
    Large,
    /// A multipart source in 6 MiB parts; 5 MiB parts at the destination.
    OtherLayout,
}

impl Size {
    fn bytes(self) -> u64 {
        match self {
            Size::Empty => 0,
            Size::Small => 100_000,
            Size::Large => 2 * PART + 7,
            Size::OtherLayout => 11 * MIB + 3,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Moverctl,
    Single,
    Multipart,
    NoDigest,
    File,
    /// Written by another tool with `x-amz-checksum-crc64nvme` (S3 keeps a full-object CRC64):
    /// a single PUT and a multipart upload in 5 MiB parts.
    Crc,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum F {
    ReadFlip,
    WriteFlip,
    HeadFails,
    None,
}

const FAULTS: [F; 4] = [F::ReadFlip, F::WriteFlip, F::HeadFails, F::None];

struct Obj {
    key: String,
    size: Size,
    origin: Origin,
}

/// The objects a source of this kind can hold, and the cells that cannot exist.
fn objects(k: K) -> (Vec<Obj>, Vec<String>) {
    use Origin::*;
    use Size::*;
    let mut v = Vec::new();
    let mut na = Vec::new();
    let sizes = [Empty, Small, Large, OtherLayout];
    let origins: &[Origin] = match k {
        K::Local => &[File],
        K::S3 => &[Moverctl, Single, Multipart, NoDigest, Crc],
        _ => &[Moverctl, Single, Multipart, NoDigest],
    };
    for &o in origins {
        for &s in &sizes {
            let why = match (k, o, s) {
                (_, Multipart | NoDigest, Empty | Small) => {
                    Some("a multipart origin needs a large object")
                }
                (K::S3, NoDigest, OtherLayout) => Some("one no-digest layout is enough"),
                (K::S3, Crc, Empty | OtherLayout) => {
                    Some("one single PUT and one multipart upload with a CRC64 are enough")
                }
                (K::Azure, NoDigest, _) => Some(
                    "on Azure the foreign multipart origin (a block list) is the no-digest one",
                ),
                (K::Gcs, NoDigest, _) => Some("GCS keeps a CRC32C of every object"),
                _ => None,
            };
            match why {
                Some(w) => na.push(format!("{k:?} source, {o:?} origin, {s:?}: n/a ({w})")),
                None => v.push(Obj {
                    key: format!("{o:?}-{s:?}").to_lowercase(),
                    size: s,
                    origin: o,
                }),
            }
        }
    }
    if k == K::Local {
        na.push("Local source × ReadFlip: n/a (read from the file itself)".into());
    }
    (v, na)
}

fn options(verify: Verify) -> CopyOptions {
    let mut o = super::copy::options();
    o.part_rule = PartRule {
        threshold: 8 * MIB,
        preferred_part: PART,
    };
    o.verify = verify;
    // As the CLI does by default: a large single-part source whose MD5 an S3 destination checks
    // goes in one streamed PUT (see `streamed`).
    o.stream_single_put = true;
    o
}

/// Whether this object goes in one streamed PUT (`stream_put.rs`): a large single-part source
/// whose listing states its MD5 (S3, GCS), into S3, under a `--verify` other than readback. That
/// PUT bypasses object_store, so its write faults are injected at the proxy instead.
fn streamed(src_kind: K, dst_kind: K, o: &Obj, verify: Verify) -> bool {
    matches!(src_kind, K::S3 | K::Gcs)
        && matches!(dst_kind, K::S3 | K::S3Crc | K::S3Trailer)
        && o.origin == Origin::Single
        && o.size.bytes() > 8 * MIB
        && verify != Verify::Readback
}

/// A store of kind `k` under a fresh prefix: (as the run sees it, direct for seeding/checking).
struct Side {
    run: Store,
    raw: Store,
    /// `/bucket/prefix/` as it appears in the proxy's request paths (S3 sources only).
    proxy_path: Option<String>,
    _dir: Option<tempfile::TempDir>,
}

/// Opens `prefix` (a fresh one when None) on a store of kind `k`; a local folder is created.
fn open(s: &Servers, k: K, prefix: Option<&str>, as_source: bool, proxy: &Proxy) -> Side {
    let direct = Remotes::parse("matrix.toml", &remotes_toml(s)).unwrap();
    let p = prefix.map_or_else(|| unique("matrix"), str::to_string);
    match k {
        K::Local => {
            let dir = tempfile::tempdir().unwrap();
            let st = Store::open(&dir.path().display().to_string(), &direct).unwrap();
            Side {
                run: st.clone(),
                raw: st,
                proxy_path: None,
                _dir: Some(dir),
            }
        }
        K::S3 | K::S3Crc | K::S3Trailer => {
            let bucket = if as_source { &s.bucket_a } else { &s.bucket_b };
            let raw = Store::open(&format!("garage:{bucket}/{p}"), &direct).unwrap();
            let via = Remotes::parse(
                "matrix-proxy.toml",
                &super::proxy_remote_toml(s, &proxy.endpoint()),
            )
            .unwrap();
            let mut run = Store::open(&format!("viaproxy:{bucket}/{p}"), &via).unwrap();
            // The HEAD storm of the HeadFails runs ends in a second, not four minutes.
            run.retry_window = Duration::from_secs(1);
            // What `refine_caps` grants a location whose saved probe saw a wrong CRC64 refused
            // and the right one stored (Garage does both; tests/it/checksum_path.rs probes it).
            run.caps.checks_crc64nvme = matches!(k, K::S3Crc | K::S3Trailer);
            run.caps.trailer_crc64 = k == K::S3Trailer;
            Side {
                run,
                raw,
                proxy_path: Some(format!("/{bucket}/{p}/")),
                _dir: None,
            }
        }
        K::Azure => {
            let c = if as_source {
                &s.az_container
            } else {
                &s.az_container2
            };
            let st = Store::open(&format!("azurite:{c}/{p}"), &direct).unwrap();
            Side {
                run: st.clone(),
                raw: st,
                proxy_path: None,
                _dir: None,
            }
        }
        K::Gcs => {
            let st = Store::open(&format!("gcsxml:{}/{p}", s.gcs_bucket), &direct).unwrap();
            Side {
                run: st.clone(),
                raw: st,
                proxy_path: None,
                _dir: None,
            }
        }
    }
}

/// A foreign multipart upload in parts of `part` bytes (the last one shorter).
async fn put_parts(store: &Store, key: &str, bytes: bytes::Bytes, part: usize) {
    let up = store
        .inner
        .put_multipart(&store.path_of(key).unwrap())
        .await
        .unwrap();
    let mut w = WriteMultipart::new_with_chunk_size(up, part);
    w.put(bytes);
    w.finish().await.unwrap();
}

/// Writes the source objects, each as its origin says.
async fn seed(k: K, side: &Side, objs: &[Obj]) {
    let mine: Vec<&Obj> = objs
        .iter()
        .filter(|o| o.origin == Origin::Moverctl)
        .collect();
    if !mine.is_empty() {
        let dir = tempfile::tempdir().unwrap();
        for o in &mine {
            std::fs::write(dir.path().join(&o.key), data(&o.key, o.size.bytes())).unwrap();
        }
        let local = Store::open(
            &dir.path().display().to_string(),
            &Remotes::parse("none.toml", "").unwrap(),
        )
        .unwrap();
        // The journal lives outside the folder copied: its write-ahead log changes while the
        // run reads it, and a local source that changes during its copy fails as changed.
        let jdir = tempfile::tempdir().unwrap();
        let j = jdir.path().join("seed-journal.sqlite");
        let out = go(&local, &side.raw, &j, options(Verify::Auto)).await;
        assert!(out.report.failed.is_empty(), "{:?}", out.report.failed);
    }
    for o in objs {
        let bytes = data(&o.key, o.size.bytes());
        let path = side.raw.path_of(&o.key).unwrap();
        match o.origin {
            Origin::Moverctl => {}
            Origin::Single | Origin::File => {
                side.raw
                    .inner
                    .put(&path, PutPayload::from(bytes))
                    .await
                    .unwrap();
            }
            Origin::Multipart => {
                let part = match o.size {
                    Size::OtherLayout => 6 * MIB,
                    _ => PART,
                } as usize;
                put_parts(&side.raw, &o.key, bytes, part).await;
            }
            Origin::Crc => {
                let w = side.raw.crc_writer.clone().expect("an S3 store");
                if o.size == Size::Small {
                    w.inner.put(&path, PutPayload::from(bytes)).await.unwrap();
                } else {
                    let up = w.inner.put_multipart(&path).await.unwrap();
                    let mut m = WriteMultipart::new_with_chunk_size(up, PART as usize);
                    m.put(bytes);
                    m.finish().await.unwrap();
                }
            }
            Origin::NoDigest => {
                assert_eq!(k, K::S3);
                // Parts of 5 MiB and 5 MiB + 7: part 1's size implies three parts, the ETag says
                // two, so no layout can be derived and the ETag proves nothing.
                let mp = side.raw.multipart.clone().unwrap();
                let id = mp.create_multipart(&path).await.unwrap();
                let cut = PART as usize;
                let p1 = mp
                    .put_part(&path, &id, 0, PutPayload::from(bytes.slice(..cut)))
                    .await
                    .unwrap();
                let p2 = mp
                    .put_part(&path, &id, 1, PutPayload::from(bytes.slice(cut..)))
                    .await
                    .unwrap();
                mp.complete_multipart(&path, &id, vec![p1, p2])
                    .await
                    .unwrap();
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn plan_faults(
    f: F,
    (src_kind, dst_kind): (K, K),
    objs: &[Obj],
    src_plan: &Plan,
    dst_plan: &Plan,
    (src, dst): (&Side, &Side),
    proxy: &Proxy,
    verify: Verify,
) {
    for o in objs {
        let n = o.size.bytes();
        match f {
            F::ReadFlip if n > 0 => {
                src_plan.add(&o.key, Op::Get, Fault::Flip, n / 2, 1);
            }
            F::WriteFlip if n > 0 && streamed(src_kind, dst_kind, o, verify) => {
                let path = dst.proxy_path.as_deref().unwrap();
                proxy.add(
                    "PUT",
                    &format!("{path}{}", o.key),
                    "",
                    PFault::FlipRequest,
                    1,
                );
            }
            F::WriteFlip if n > 0 => {
                if n > 8 * MIB {
                    dst_plan.add(&o.key, Op::Part(1), Fault::Flip, 1000, 1);
                } else {
                    dst_plan.add(&o.key, Op::Put, Fault::Flip, n / 2, 1);
                }
            }
            F::HeadFails => {
                if src_kind == K::S3 {
                    let path = src.proxy_path.as_deref().unwrap();
                    proxy.add(
                        "HEAD",
                        &format!("{path}{}", o.key),
                        "",
                        PFault::SlowDown,
                        1_000_000,
                    );
                } else {
                    src_plan.add(&o.key, Op::Head, Fault::Unavailable, 0, 1_000_000);
                }
            }
            _ => {}
        }
    }
}

/// One cell's result, for the coverage listing.
fn cell(out: &Outcome, key: &str) -> String {
    match (out.copied.get(key), out.failed.get(key)) {
        (Some(by), _) => format!("exact ({by})"),
        (None, Some(e)) => format!(
            "failed, nothing recorded ({})",
            e.chars().take(70).collect::<String>()
        ),
        (None, None) => match out.unverified.get(key) {
            Some(by) => format!("written, not recorded ({by})"),
            None => "not copied".into(),
        },
    }
}

async fn bytes_of(store: &Store, key: &str) -> Option<bytes::Bytes> {
    super::faults::bytes_at(store, key).await
}

/// The one assertion: whatever is recorded as done holds exactly the source's bytes.
async fn assert_nothing_wrong_recorded(
    src: &Side,
    dst: &Side,
    out: &Outcome,
    objs: &[Obj],
    what: &str,
) {
    let j = Journal::open(&out.journal, &out.src_shown, &out.dst_shown).unwrap();
    let mut bad = Vec::new();
    for o in objs {
        let want = data(&o.key, o.size.bytes());
        assert_eq!(
            bytes_of(&src.raw, &o.key).await.as_ref(),
            Some(&want),
            "{what}: source {}",
            o.key
        );
        let rec = j.get(&o.key).unwrap();
        let recorded = out.copied.contains_key(&o.key)
            || rec.as_ref().is_some_and(|r| r.state == State::Verified);
        if recorded && bytes_of(&dst.raw, &o.key).await.as_ref() != Some(&want) {
            bad.push(format!(
                "{what}: {} ({:?}, {:?}) recorded as done ({}) but the destination holds other bytes",
                o.key, o.origin, o.size, cell(out, &o.key)
            ));
        }
        if out.copied.contains_key(&o.key) && out.failed.contains_key(&o.key) {
            bad.push(format!("{what}: {} reported both copied and failed", o.key));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

async fn source_row(src_kind: K) -> Vec<String> {
    source_row_to(src_kind, &KINDS).await
}

async fn source_row_to(src_kind: K, dst_kinds: &[K]) -> Vec<String> {
    let Some(s) = servers() else {
        return Vec::new();
    };
    let upstream = super::s3_upstream(&s);
    let (objs, na) = objects(src_kind);
    let mut lines: Vec<String> = na;
    let proxy = Proxy::start(upstream).await;
    let src = open(&s, src_kind, None, true, &proxy);
    let src_prefix = src.raw.prefix.trim_end_matches('/').to_string();
    seed(src_kind, &src, &objs).await;
    for &dst_kind in dst_kinds {
        for f in FAULTS {
            if src_kind == K::Local && f == F::ReadFlip {
                continue;
            }
            if dst_kind == K::Local && f == F::WriteFlip {
                // Local destinations are written with positional writes into a temporary file,
                // not through object_store: there is no write answer a fault could alter.
                lines.push(format!(
                    "{src_kind:?} -> Local × WriteFlip: n/a (positional writes; --verify \
                     readback re-reads the file)"
                ));
                continue;
            }
            // A fresh proxy per run (a HEAD storm must not outlive its run); the seeded source
            // is reached through it.
            let proxy = Proxy::start(upstream).await;
            let src_run = match src_kind {
                K::S3 => open(&s, K::S3, Some(&src_prefix), true, &proxy).run,
                _ => src.raw.clone(),
            };
            let dst = open(&s, dst_kind, None, false, &proxy);
            let (sp, dp) = (Plan::new(), Plan::new());
            // Every fault under the default `--verify auto`: whatever it could not check is
            // `unverified` (never recorded as done), so no flipped read is ever recorded.
            let verify = Verify::Auto;
            plan_faults(
                f,
                (src_kind, dst_kind),
                &objs,
                &sp,
                &dp,
                (&src, &dst),
                &proxy,
                verify,
            );
            let dir = tempfile::tempdir().unwrap();
            let j = dir.path().join("j.sqlite");
            let what = format!("{src_kind:?} -> {dst_kind:?}, {f:?} ({verify:?})");
            let out = go(
                &faulty(&src_run, &sp),
                &faulty(&dst.run, &dp),
                &j,
                options(verify),
            )
            .await;
            assert_nothing_wrong_recorded(&src, &dst, &out, &objs, &what).await;
            if dst_kind == K::S3Trailer && f == F::None {
                // The cell tested the streamed form: the multipart objects' parts went with a
                // trailing CRC64 (one header-signed PUT each, no presigned URL).
                let streamed = proxy
                    .log()
                    .into_iter()
                    .filter(|(m, t, h)| {
                        m == "PUT"
                            && t.contains("partNumber=")
                            && !t.contains("X-Amz-Signature")
                            && h.iter().any(|(k, v)| {
                                k.eq_ignore_ascii_case("x-amz-trailer")
                                    && v == "x-amz-checksum-crc64nvme"
                            })
                    })
                    .count();
                assert!(streamed > 0, "{what}: no part was streamed with a trailer");
            }
            // Every planned fault that applies must have fired (else the cell tested nothing).
            match f {
                F::ReadFlip | F::WriteFlip => {
                    let planned = objs.iter().filter(|o| o.size != Size::Empty).count();
                    let at_proxy = proxy
                        .hits()
                        .iter()
                        .filter(|h| h.2 == PFault::FlipRequest)
                        .count();
                    let fired = sp.hits().len() + dp.hits().len() + at_proxy;
                    assert_eq!(fired, planned, "{what}: faults fired {fired} of {planned}");
                    if f == F::WriteFlip && dst_kind == K::Azure {
                        // Azure answers each Put Blob with its MD5 and each Put Block with its
                        // CRC64: every flipped write was caught by an answer, none by size.
                        for (key, by) in &out.copied {
                            assert!(
                                !by.ends_with("+dest-size"),
                                "{what}: {key} verified by {by}"
                            );
                        }
                    }
                    if f == F::WriteFlip {
                        // A streamed PUT's flipped body is refused by the store (its Content-MD5
                        // is the source's): a 400, never taken.
                        for (target, status) in proxy.upstream_statuses() {
                            assert_eq!(status, 400, "{what}: {target} took a flipped body");
                        }
                    }
                }
                F::HeadFails => {
                    // Exactly the large objects whose digests take a HEAD to learn fail (all but
                    // single PUTs on S3 and GCS, whose listed ETag is their MD5), and nothing
                    // else: a HEAD error is never taken for "no digest".
                    let needs_head = |o: &&Obj| {
                        src_kind != K::Local
                            && o.size.bytes() > 8 * MIB
                            && !(matches!(src_kind, K::S3 | K::Gcs) && o.origin == Origin::Single)
                    };
                    let want: Vec<&str> = objs
                        .iter()
                        .filter(needs_head)
                        .map(|o| o.key.as_str())
                        .collect();
                    let mut got: Vec<&str> = out.failed.keys().map(String::as_str).collect();
                    got.sort();
                    let mut want = want;
                    want.sort();
                    assert_eq!(got, want, "{what}: failed objects");
                    if !want.is_empty() {
                        assert!(sp.hits().len() + proxy.hits().len() >= want.len(), "{what}");
                    }
                }
                F::None => {
                    assert!(
                        out.report.failed.is_empty(),
                        "{what}: {:?}",
                        out.report.failed
                    );
                    let mut unverified = 0;
                    for o in &objs {
                        // An Azure block list states no digest: its reads are checked range by
                        // range against the MD5s Azure computes as it serves them, into every
                        // destination (a local folder's own reads too).
                        // An S3 source in parts of unequal size: every part's size is learned
                        // (HEAD partNumber) and its multipart ETag rebuilt over them.
                        let rebuilt = match (src_kind, o.origin) {
                            (K::Azure, Origin::Multipart) => Some("source-range-md5+"),
                            (K::S3, Origin::NoDigest) => Some("source-parts-etag+"),
                            _ => None,
                        };
                        if let Some(want) = rebuilt {
                            let by = &out.copied[&o.key];
                            assert!(by.starts_with(want), "{what}: {} verified by {by}", o.key);
                            continue;
                        }
                        let no_digest = o.origin == Origin::NoDigest;
                        if no_digest {
                            // Nothing checked its bytes: written, labelled, never recorded.
                            let by = &out.unverified[&o.key];
                            assert!(
                                by.starts_with("unverified+"),
                                "{what}: {} verified by {by}",
                                o.key
                            );
                            unverified += 1;
                            let rec = super::faults::record(&out, &o.key).unwrap();
                            assert_eq!(rec.state, State::Failed, "{what}: {}", o.key);
                            assert_eq!(rec.crc64, None, "{what}: {}", o.key);
                            // Never stamped with a CRC64 a later copy would take for the source's.
                            assert_eq!(
                                stamped_crc(&dst.raw, &o.key).await,
                                None,
                                "{what}: {}",
                                o.key
                            );
                            continue;
                        }
                        let by = &out.copied[&o.key];
                        assert!(
                            src_kind == K::Local || !by.starts_with("source-size+"),
                            "{what}: {} verified by {by}",
                            o.key
                        );
                    }
                    // The summary counts them; `source-size` only under `--verify size`.
                    assert_eq!(out.report.unverified.len(), unverified, "{what}");
                    assert_eq!(out.report.no_source_digest, 0, "{what}");
                    for o in objs
                        .iter()
                        .filter(|o| streamed(src_kind, dst_kind, o, verify))
                    {
                        assert_eq!(
                            out.copied[&o.key], "source-md5+dest-md5",
                            "{what}: {} was not copied in one streamed PUT",
                            o.key
                        );
                    }
                    if matches!(dst_kind, K::S3Crc | K::S3Trailer) {
                        // The checksum-only path: every object is proven by the CRC64 the
                        // destination keeps, and no MD5 is computed where the source states a
                        // CRC (its own CRC64, a stored one, a GCS CRC32C) or is a local file.
                        for o in &objs {
                            let by = out
                                .copied
                                .get(&o.key)
                                .or(out.unverified.get(&o.key))
                                .unwrap();
                            let want = if streamed(src_kind, dst_kind, o, verify) {
                                // One streamed PUT with the source's MD5: cheaper still.
                                "source-md5+dest-md5"
                            } else {
                                "+dest-checksum"
                            };
                            assert!(by.ends_with(want), "{what}: {} verified by {by}", o.key);
                        }
                        let crc_only = |o: &Obj| match o.origin {
                            Origin::Crc | Origin::File => true,
                            // moverctl's large S3 uploads on the MD5 path carry no CRC64 (it is
                            // known only when the upload completes): their multipart ETag is the
                            // only proof, as for any foreign one.
                            Origin::Moverctl => src_kind != K::S3,
                            // GCS keeps a CRC32C of every object.
                            Origin::Multipart | Origin::NoDigest | Origin::Single => {
                                src_kind == K::Gcs
                            }
                        };
                        let hashed_nothing = |o: &&Obj| {
                            crc_only(o)
                                && o.size != Size::Small
                                && !streamed(src_kind, dst_kind, o, verify)
                        };
                        for o in objs.iter().filter(hashed_nothing) {
                            let by = out
                                .copied
                                .get(&o.key)
                                .or(out.unverified.get(&o.key))
                                .unwrap();
                            assert!(
                                !by.contains("md5") && !by.contains("etag"),
                                "{what}: {} verified by {by}",
                                o.key
                            );
                        }
                    }
                }
            }
            for o in &objs {
                lines.push(format!(
                    "{src_kind:?} -> {dst_kind:?} | {:?} | {:?} | {f:?} ({verify:?}) | {}",
                    o.size,
                    o.origin,
                    cell(&out, &o.key)
                ));
            }
            // A clean re-run (no faults) ends exact everywhere.
            let clean = Proxy::start(upstream).await;
            let src_clean = match src_kind {
                K::S3 => open(&s, K::S3, Some(&src_prefix), true, &clean).run,
                _ => src.raw.clone(),
            };
            let again = go(&src_clean, &dst.run, &j, options(Verify::Auto)).await;
            assert!(
                again.report.failed.is_empty(),
                "{what}, re-run: {:?}",
                again.report.failed
            );
            for o in &objs {
                assert_eq!(
                    bytes_of(&dst.raw, &o.key).await,
                    Some(data(&o.key, o.size.bytes())),
                    "{what}, re-run: {} not exact",
                    o.key
                );
            }
            // The in-memory test servers keep every byte: a run's copies go once checked.
            wipe(&dst.raw, &objs).await;
        }
    }
    wipe(&src.raw, &objs).await;
    lines
}

/// moverctl's CRC64 in the metadata of `key` (a later copy's source claim), if any.
async fn stamped_crc(store: &Store, key: &str) -> Option<String> {
    if store.local_root.is_some() {
        return None;
    }
    let r = store
        .inner
        .get_opts(
            &store.path_of(key).unwrap(),
            object_store::GetOptions {
                head: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    r.attributes
        .get(&object_store::Attribute::Metadata(
            moverctl::checksum::META_CRC64.into(),
        ))
        .map(|v| v.to_string())
}

async fn wipe(store: &Store, objs: &[Obj]) {
    for o in objs {
        let _ = store.inner.delete(&store.path_of(&o.key).unwrap()).await;
    }
}

fn write_coverage(src_kind: K, lines: &[String]) {
    write_coverage_named(&format!("{src_kind:?}").to_lowercase(), lines);
}

fn write_coverage_named(name: &str, lines: &[String]) {
    let mut text = String::new();
    for l in lines {
        let _ = writeln!(text, "{l}");
    }
    eprintln!(
        "verification matrix, {name} ({} lines):\n{text}",
        lines.len()
    );
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join(format!("verification-matrix-{name}.txt")), text);
}

macro_rules! matrix_row {
    ($name:ident, $kind:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let lines = source_row($kind).await;
            if !lines.is_empty() {
                write_coverage($kind, &lines);
            }
        }
    };
}

matrix_row!(local_sources, K::Local);
matrix_row!(s3_sources, K::S3);
matrix_row!(azure_sources, K::Azure);
matrix_row!(gcs_sources, K::Gcs);

/// The checksum-only path (issue 15): every source kind, size, origin and fault into an S3
/// destination that checks and keeps `x-amz-checksum-crc64nvme`. The same one assertion; with no
/// fault, every object is labelled `+dest-checksum`, and none whose source states a CRC (or is a
/// local file) is labelled with an MD5 or ETag check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checksum_only() {
    let mut lines = Vec::new();
    for k in KINDS {
        lines.extend(source_row_to(k, &[K::S3Crc]).await);
    }
    if !lines.is_empty() {
        write_coverage_named("checksum-only", &lines);
    }
}

/// The checksum-only path with a local file's parts streamed as they are read, their CRC64 in
/// a trailer: local sources (the only ones streamed) of every size and fault into an S3
/// destination that checks it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checksum_only_trailer() {
    let lines = source_row_to(K::Local, &[K::S3Trailer]).await;
    if !lines.is_empty() {
        write_coverage_named("checksum-only-trailer", &lines);
    }
}

/// Faults of the server-side row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SF {
    /// Every object's first copy answer (CopyObject; for a multipart source also one of the part
    /// copies it then falls back to) carries an ETag that is not the source's: a server that
    /// wrote other bytes.
    CopyAnswerWrong,
    /// A byte flipped on the first read of every object: only objects that stream are read.
    ReadFlip,
    /// The source's HEADs answer 503 without end.
    HeadFails,
    None,
}

/// Server-side copies (issue 15): S3 → S3 through one proxy, one service with one key, the run
/// allowed to copy on the server; every size and origin × the faults that exist for it. The same
/// one assertion as the other rows, plus: server-side objects are never read through this
/// machine, a wrong copy answer is never taken for a copy (the object is streamed and verified),
/// and whatever has no proof on the server streams.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_server_side() {
    let Some(s) = servers() else { return };
    let upstream = super::s3_upstream(&s);
    let (objs, _) = objects(K::S3);
    let proxy = Proxy::start(upstream).await;
    let src = open(&s, K::S3, None, true, &proxy);
    let src_prefix = src.raw.prefix.trim_end_matches('/').to_string();
    seed(K::S3, &src, &objs).await;
    // No content ETag to prove a server-side copy by: parts of unequal size.
    let streams = |o: &Obj| o.origin == Origin::NoDigest;
    let with_server_side = |v: Verify| CopyOptions {
        server_side: true,
        ..options(v)
    };
    let mut lines = Vec::new();
    for f in [SF::CopyAnswerWrong, SF::ReadFlip, SF::HeadFails, SF::None] {
        let proxy = Proxy::start(upstream).await;
        let src_run = open(&s, K::S3, Some(&src_prefix), true, &proxy).run;
        let dst = open(&s, K::S3, None, false, &proxy);
        let dst_path = dst.proxy_path.clone().unwrap();
        let sp = Plan::new();
        for o in &objs {
            let n = o.size.bytes();
            match f {
                SF::CopyAnswerWrong if !streams(o) => {
                    if n > 8 * MIB && o.origin == Origin::Crc {
                        // It keeps a full-object CRC64: the copy kept under another ETag is
                        // proven by the CRC64 a HEAD of it states, which is wrong too.
                        proxy.add(
                            "HEAD",
                            &format!("{dst_path}{}", o.key),
                            "",
                            PFault::BogusChecksum,
                            1,
                        );
                    }
                    if n > 8 * MIB && o.origin != Origin::Single {
                        // A multipart source: its one CopyObject (then copied part by part) and
                        // one of its part copies, whichever order they come in.
                        proxy.add(
                            "PUT",
                            &format!("{dst_path}{}", o.key),
                            "partNumber=1",
                            PFault::BogusEtag,
                            1,
                        );
                    }
                    proxy.add(
                        "PUT",
                        &format!("{dst_path}{}", o.key),
                        "",
                        PFault::BogusEtag,
                        1,
                    );
                }
                SF::ReadFlip if n > 0 => {
                    sp.add(&o.key, Op::Get, Fault::Flip, n / 2, 1);
                }
                SF::HeadFails => {
                    let path = src.proxy_path.as_deref().unwrap();
                    proxy.add(
                        "HEAD",
                        &format!("{path}{}", o.key),
                        "",
                        PFault::SlowDown,
                        1_000_000,
                    );
                }
                _ => {}
            }
        }
        let verify = if f == SF::ReadFlip {
            Verify::Strict
        } else {
            Verify::Auto
        };
        let dir = tempfile::tempdir().unwrap();
        let j = dir.path().join("j.sqlite");
        let what = format!("S3 -> S3 server-side, {f:?} ({verify:?})");
        let out = go(
            &faulty(&src_run, &sp),
            &dst.run,
            &j,
            with_server_side(verify),
        )
        .await;
        assert_nothing_wrong_recorded(&src, &dst, &out, &objs, &what).await;
        let on_server = |k: &str| {
            out.copied
                .get(k)
                .is_some_and(|by| by.contains("+dest-copy-"))
        };
        match f {
            SF::CopyAnswerWrong => {
                assert!(proxy.unspent().is_empty(), "{what}: {:?}", proxy.unspent());
                for o in &objs {
                    assert!(
                        !on_server(&o.key),
                        "{what}: {} taken as a server-side copy",
                        o.key
                    );
                    assert!(
                        out.copied.contains_key(&o.key),
                        "{what}: {} not copied",
                        o.key
                    );
                }
            }
            SF::ReadFlip => {
                // Only what streams is read (and then caught, or refused as digest-less).
                let read: Vec<String> = sp.hits().into_iter().map(|h| h.key).collect();
                for o in &objs {
                    let flipped = read.iter().any(|k| k.ends_with(&o.key));
                    assert_eq!(
                        flipped,
                        streams(o) && o.size.bytes() > 0,
                        "{what}: {} read through this machine: {flipped}",
                        o.key
                    );
                    if !streams(o) {
                        assert!(
                            on_server(&o.key),
                            "{what}: {} ({})",
                            o.key,
                            cell(&out, &o.key)
                        );
                    }
                }
            }
            SF::HeadFails => {
                // Single-part objects need no HEAD (their listed ETag is their MD5); every
                // multipart one does (its part size), and fails rather than go unproven.
                let needs_head = |o: &Obj| o.size.bytes() > 8 * MIB && o.origin != Origin::Single;
                for o in &objs {
                    assert_eq!(
                        out.failed.contains_key(&o.key),
                        needs_head(o),
                        "{what}: {} ({})",
                        o.key,
                        cell(&out, &o.key)
                    );
                }
            }
            SF::None => {
                assert!(
                    out.report.failed.is_empty(),
                    "{what}: {:?}",
                    out.report.failed
                );
                let streamed: u64 = objs
                    .iter()
                    .filter(|o| streams(o))
                    .map(|o| o.size.bytes())
                    .sum();
                assert_eq!(out.report.read_bytes, streamed, "{what}: bytes read");
                for o in &objs {
                    assert_eq!(
                        on_server(&o.key),
                        !streams(o),
                        "{what}: {} ({})",
                        o.key,
                        cell(&out, &o.key)
                    );
                }
            }
        }
        for o in &objs {
            lines.push(format!(
                "S3 -> S3 server-side | {:?} | {:?} | {f:?} ({verify:?}) | {}",
                o.size,
                o.origin,
                cell(&out, &o.key)
            ));
        }
        // A clean re-run ends exact everywhere.
        let clean = Proxy::start(upstream).await;
        let src_clean = open(&s, K::S3, Some(&src_prefix), true, &clean).run;
        let dst_clean = open(
            &s,
            K::S3,
            Some(dst.raw.prefix.trim_end_matches('/')),
            false,
            &clean,
        )
        .run;
        let again = go(&src_clean, &dst_clean, &j, with_server_side(Verify::Auto)).await;
        assert!(
            again.report.failed.is_empty(),
            "{what}, re-run: {:?}",
            again.report.failed
        );
        for o in &objs {
            assert_eq!(
                bytes_of(&dst.raw, &o.key).await,
                Some(data(&o.key, o.size.bytes())),
                "{what}, re-run: {} not exact",
                o.key
            );
        }
        wipe(&dst.raw, &objs).await;
    }
    wipe(&src.raw, &objs).await;
    write_coverage_named("s3-server-side", &lines);
}

/// Copies into Azure from the source's URL (issue 15, Put Block From URL): Azure → Azure on
/// Azurite with the run allowed to copy on the server; every size and origin × a byte flipped on
/// the first read of every object (under `--verify strict`) and no fault. The same one assertion
/// as the other rows, plus: an object whose source states an MD5 (Put Blob keeps one) or a CRC64
/// (moverctl's block lists carry it) is copied by the service and proven by the MD5 or CRC64s it
/// answered (never read through this machine), and everything else streams as before (and is
/// caught or refused when a read is flipped).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_from_url() {
    let Some(s) = servers() else { return };
    let upstream = super::s3_upstream(&s);
    let (objs, _) = objects(K::Azure);
    let unused = Proxy::start(upstream).await;
    let src = open(&s, K::Azure, None, true, &unused);
    seed(K::Azure, &src, &objs).await;
    // Put Blob keeps the blob's MD5; moverctl commits its block lists with its CRC64 in their
    // metadata. A foreign block list keeps no digest.
    let by_url =
        |o: &Obj| o.size != Size::Empty && matches!(o.origin, Origin::Single | Origin::Moverctl);
    let want = |o: &Obj| {
        if o.origin == Origin::Moverctl && o.size != Size::Small {
            "source-crc64+dest-copy-block-crc64"
        } else {
            "source-md5+dest-copy-block-md5"
        }
    };
    let mut lines = Vec::new();
    for f in [F::ReadFlip, F::None] {
        let dst = open(&s, K::Azure, None, false, &unused);
        let sp = Plan::new();
        if f == F::ReadFlip {
            for o in objs.iter().filter(|o| o.size.bytes() > 0) {
                sp.add(&o.key, Op::Get, Fault::Flip, o.size.bytes() / 2, 1);
            }
        }
        let verify = if f == F::ReadFlip {
            Verify::Strict
        } else {
            Verify::Auto
        };
        let what = format!("Azure -> Azure from URL, {f:?} ({verify:?})");
        let dir = tempfile::tempdir().unwrap();
        let out = go(
            &faulty(&src.run, &sp),
            &dst.run,
            &dir.path().join("j.sqlite"),
            CopyOptions {
                server_side: true,
                ..options(verify)
            },
        )
        .await;
        assert_nothing_wrong_recorded(&src, &dst, &out, &objs, &what).await;
        let read: Vec<String> = sp.hits().into_iter().map(|h| h.key).collect();
        let mut streamed = 0;
        for o in &objs {
            let from_url = out.copied.get(&o.key).is_some_and(|by| by == want(o));
            assert_eq!(
                from_url,
                by_url(o),
                "{what}: {} ({})",
                o.key,
                cell(&out, &o.key)
            );
            if !by_url(o) {
                streamed += o.size.bytes();
            }
            if f == F::ReadFlip {
                let flipped = read.iter().any(|k| k.ends_with(&o.key));
                assert_eq!(
                    flipped,
                    !by_url(o) && o.size.bytes() > 0,
                    "{what}: {} read through this machine: {flipped}",
                    o.key
                );
            }
            lines.push(format!(
                "Azure -> Azure from URL | {:?} | {:?} | {f:?} ({verify:?}) | {}",
                o.size,
                o.origin,
                cell(&out, &o.key)
            ));
        }
        if f == F::None {
            assert!(
                out.report.failed.is_empty(),
                "{what}: {:?}",
                out.report.failed
            );
            assert_eq!(out.report.read_bytes, streamed, "{what}: bytes read");
        }
        wipe(&dst.raw, &objs).await;
    }
    wipe(&src.raw, &objs).await;
    write_coverage_named("azure-from-url", &lines);
}

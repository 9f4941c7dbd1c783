//! The checks object_store can make on every store kind, and the measurements. Each check turns
//! its own failures into an "unknown" finding; only the very first write is fatal, because
//! without it nothing else can be learned (and a refused credential should say so).

use super::common::{short, test_bytes};
use super::{Ctx, Finding, ProbeError, ProbeOpts, ProbeReport, Status, s3raw};
use crate::store::Kind;
use crate::store::list::{ListError, Listed, list};
use bytes::Bytes;
use futures::StreamExt;
use md5::{Digest, Md5};
use object_store::path::Path;
use object_store::{
    Attribute, AttributeValue, Attributes, GetOptions, GetResultPayload, ObjectStore,
    ObjectStoreExt, PutMode, PutOptions,
};
use std::sync::Arc;
use std::time::Instant;

const MIB: u64 = 1 << 20;
/// The smallest part size S3 accepts for all but the last part.
const S3_MIN_PART: u64 = 5 * MIB;
const METADATA_KEY: &str = "moverctlprobe"; // Azure metadata names must be identifiers: no '-'.

/// Keys whose byte order differs from most naive orders: space, '+', '-', '.', '/', digits,
/// '_', case, and multi-byte UTF-8. No key is also a "folder" of another, so local stores can
/// hold them all.
pub(crate) const LIST_KEYS: [&str; 20] = [
    "0", "9", "A", "Z", "_", "a b", "a+b", "a-b", "a.b", "a/b", "a/c-d", "a0", "a_b", "aa", "b",
    "z", "~", "é", "ü", "日本",
];

pub(crate) async fn run_all(
    ctx: &Ctx<'_>,
    opts: &ProbeOpts,
    report: &mut ProbeReport,
) -> Result<(), ProbeError> {
    report.findings.push(single_part_etag(ctx).await?);
    report.findings.push(user_metadata(ctx).await);
    report.findings.push(conditional_create(ctx).await);
    report.findings.push(listing_sorted(ctx).await);
    multipart(ctx, report).await;
    match (ctx.store.kind, &opts.s3) {
        (Kind::S3, Some(s3)) => s3raw::run(ctx, s3, report).await,
        (Kind::S3, None) => s3raw::not_tested(report, "not tested (no S3 signer was given)"),
        _ => s3raw::not_tested(report, "not tested (S3 only)"),
    }
    latency(ctx, opts, report).await;
    super::rates::request_rates(ctx, report).await;
    throughput(ctx, opts, report).await;
    if let (Kind::S3, Some(s3)) = (ctx.store.kind, &opts.s3) {
        let streams = opts.streams.max(1);
        super::copy_rate::measure(ctx, s3, opts.stream_bytes, streams, report).await;
    }
    Ok(())
}

pub(crate) fn md5_hex(b: &[u8]) -> String {
    hex(&Md5::digest(b))
}

pub(crate) fn hex(b: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

fn unquote(e: &str) -> &str {
    e.trim().trim_matches('"')
}

fn is_unsupported(e: &object_store::Error) -> bool {
    matches!(
        e,
        object_store::Error::NotImplemented { .. } | object_store::Error::NotSupported { .. }
    )
}

async fn single_part_etag(ctx: &Ctx<'_>) -> Result<Finding, ProbeError> {
    const ID: &str = "single_part_etag_md5";
    const Q: &str = "single-part ETag is the MD5";
    let body = test_bytes(ctx.seed, 64 << 10);
    let p = ctx.path("etag/single");
    let put = ctx
        .inner()
        .put(&p, body.clone().into())
        .await
        .map_err(|source| ProbeError::Store {
            location: ctx.store.shown(),
            what: "writing the first test object".into(),
            source,
        })?;
    let etag = match put.e_tag {
        Some(e) => Some(e),
        None => ctx.inner().head(&p).await.ok().and_then(|m| m.e_tag),
    };
    let want = md5_hex(&body);
    Ok(match etag {
        None => Finding::new(ID, Q, Status::Unknown, "the store returned no ETag"),
        Some(e) if unquote(&e).eq_ignore_ascii_case(&want) => Finding::new(
            ID,
            Q,
            Status::Yes,
            "the ETag of a 64 KiB PUT is the hex MD5 of its bytes",
        ),
        Some(e) => Finding::new(
            ID,
            Q,
            Status::No,
            format!("ETag {} is not the MD5 {want}", unquote(&e)),
        ),
    })
}

async fn user_metadata(ctx: &Ctx<'_>) -> Finding {
    const ID: &str = "user_metadata";
    const Q: &str = "user metadata round-trips";
    let value = format!("v{:x}", ctx.seed);
    let mut attrs = Attributes::new();
    attrs.insert(
        Attribute::Metadata(METADATA_KEY.into()),
        AttributeValue::from(value.clone()),
    );
    let p = ctx.path("meta/object");
    match ctx
        .inner()
        .put_opts(&p, Bytes::from_static(b"metadata").into(), attrs.into())
        .await
    {
        Err(e) if is_unsupported(&e) => {
            return Finding::new(
                ID,
                Q,
                Status::No,
                format!("the store takes no user metadata ({})", short(&e)),
            );
        }
        Err(e) => {
            return Finding::new(ID, Q, Status::Unknown, format!("PUT failed: {}", short(&e)));
        }
        Ok(_) => {}
    }
    match ctx
        .inner()
        .get_opts(&p, GetOptions::new().with_head(true))
        .await
    {
        Err(e) => Finding::new(
            ID,
            Q,
            Status::Unknown,
            format!("HEAD failed: {}", short(&e)),
        ),
        Ok(r) => match r.attributes.get(&Attribute::Metadata(METADATA_KEY.into())) {
            Some(v) if v.as_ref() == value => Finding::new(
                ID,
                Q,
                Status::Yes,
                format!("metadata {METADATA_KEY}={value} came back on HEAD"),
            ),
            Some(v) => Finding::new(
                ID,
                Q,
                Status::No,
                format!("wrote {value:?}, read back {:?}", v.as_ref()),
            ),
            None => Finding::new(
                ID,
                Q,
                Status::No,
                "the PUT was accepted but HEAD returned no such metadata",
            ),
        },
    }
}

async fn conditional_create(ctx: &Ctx<'_>) -> Finding {
    const ID: &str = "conditional_create";
    const Q: &str = "conditional create (If-None-Match) honoured";
    let p = ctx.path("create/existing");
    if let Err(e) = ctx
        .inner()
        .put(&p, Bytes::from_static(b"first").into())
        .await
    {
        return Finding::new(ID, Q, Status::Unknown, format!("PUT failed: {}", short(&e)));
    }
    let second = ctx
        .inner()
        .put_opts(
            &p,
            Bytes::from_static(b"second").into(),
            PutOptions::from(PutMode::Create),
        )
        .await;
    match second {
        Err(object_store::Error::AlreadyExists { .. }) => Finding::new(
            ID,
            Q,
            Status::Yes,
            "PutMode::Create on an existing key was refused (AlreadyExists)",
        ),
        Err(object_store::Error::Precondition { .. }) => Finding::new(
            ID,
            Q,
            Status::Yes,
            "PutMode::Create on an existing key was refused (precondition failed)",
        ),
        Err(e) if is_unsupported(&e) => Finding::new(
            ID,
            Q,
            Status::No,
            format!("not available through object_store: {}", short(&e)),
        ),
        Err(e) => Finding::new(
            ID,
            Q,
            Status::Unknown,
            format!("PutMode::Create failed with another error: {}", short(&e)),
        ),
        Ok(_) => {
            let now = match ctx.inner().get(&p).await {
                Ok(r) => r.bytes().await.ok(),
                Err(_) => None,
            };
            let detail = match now.as_deref() {
                Some(b"second") => "not honoured: PutMode::Create overwrote the existing object",
                Some(b"first") => {
                    "PutMode::Create reported success but the existing object was kept"
                }
                _ => "PutMode::Create on an existing key reported success",
            };
            Finding::new(ID, Q, Status::No, detail)
        }
    }
}

async fn listing_sorted(ctx: &Ctx<'_>) -> Finding {
    const ID: &str = "listing_sorted";
    const Q: &str = "listing is in byte order of the key";
    let written = futures::future::join_all(LIST_KEYS.iter().map(|k| async move {
        let p = ctx.path(&format!("list/{k}"));
        ctx.inner()
            .put(&p, Bytes::copy_from_slice(k.as_bytes()).into())
            .await
    }))
    .await;
    if let Some(Err(e)) = written.iter().find(|r| r.is_err()) {
        return Finding::new(
            ID,
            Q,
            Status::Unknown,
            format!("writing the test keys failed: {}", short(e)),
        );
    }
    let mut sub = ctx.store.clone();
    match (&ctx.store.local_root, ctx.store.kind) {
        (Some(root), Kind::Local) => {
            sub.local_root = Some(root.join(ctx.scratch.trim_end_matches('/')).join("list"));
        }
        _ => sub.prefix = format!("{}list/", ctx.scratch),
    }
    let mut got = Vec::new();
    let mut stream = list(&sub);
    while let Some(item) = stream.next().await {
        match item {
            Ok(Listed::Object(e)) => got.push(e.key),
            Ok(Listed::Refused { key, .. }) => got.push(key),
            Err(ListError::Unsorted { prev, key, .. }) => {
                return Finding::new(
                    ID,
                    Q,
                    Status::No,
                    format!("the store listed {key:?} after {prev:?}"),
                );
            }
            Err(e) => {
                return Finding::new(
                    ID,
                    Q,
                    Status::Unknown,
                    format!("listing failed: {}", short(&e)),
                );
            }
        }
    }
    let mut want: Vec<String> = LIST_KEYS.iter().map(|k| k.to_string()).collect();
    want.sort();
    let how = if ctx.store.kind == Kind::Local {
        " (moverctl's own sorted walk; the file system itself lists in directory order)"
    } else {
        ""
    };
    if got == want {
        Finding::new(
            ID,
            Q,
            Status::Yes,
            format!(
                "{} awkward keys came back in byte order{how}",
                LIST_KEYS.len()
            ),
        )
    } else {
        Finding::new(
            ID,
            Q,
            Status::Unknown,
            format!(
                "in order, but the listing returned {} of {} keys",
                got.len(),
                want.len()
            ),
        )
    }
}

/// Multipart ETag stability (two uploads of the same bytes in the same parts) and the smallest
/// part size accepted (a 1 MiB first part).
async fn multipart(ctx: &Ctx<'_>, report: &mut ProbeReport) {
    const STABLE: &str = "multipart_etag_stable";
    const STABLE_Q: &str = "multipart ETag stable for the same parts";
    const MD5S: &str = "multipart_etag_md5_of_md5s";
    const MD5S_Q: &str = "multipart ETag is md5-of-md5s-N";
    let parts = [
        test_bytes(ctx.seed ^ 0x5eed, S3_MIN_PART as usize),
        test_bytes(ctx.seed ^ 0x7a11, 1024),
    ];
    let mut concat = Vec::new();
    for p in &parts {
        concat.extend_from_slice(&Md5::digest(p));
    }
    let expected = format!("{}-{}", md5_hex(&concat), parts.len());
    let a = ctx.multipart(&ctx.path("mpu/first"), &parts).await;
    let b = ctx.multipart(&ctx.path("mpu/second"), &parts).await;
    match (a, b) {
        (Ok(a), Ok(b)) => {
            report.min_part_size_accepted = Some(S3_MIN_PART);
            match (a.e_tag, b.e_tag) {
                (Some(x), Some(y)) => {
                    let (x, y) = (unquote(&x).to_string(), unquote(&y).to_string());
                    report.findings.push(if x == y {
                        Finding::new(
                            STABLE,
                            STABLE_Q,
                            Status::Yes,
                            format!("two uploads in 5 MiB parts both got ETag {x}"),
                        )
                    } else {
                        Finding::new(
                            STABLE,
                            STABLE_Q,
                            Status::No,
                            format!("the same bytes in the same parts got {x} and {y}"),
                        )
                    });
                    report.findings.push(if x.eq_ignore_ascii_case(&expected) {
                        Finding::new(
                            MD5S,
                            MD5S_Q,
                            Status::Yes,
                            format!("ETag {x} = MD5 of the part MD5s, '-2'"),
                        )
                    } else {
                        Finding::new(
                            MD5S,
                            MD5S_Q,
                            Status::No,
                            format!("ETag {x}, md5-of-md5s would be {expected}"),
                        )
                    });
                }
                _ => {
                    for (id, q) in [(STABLE, STABLE_Q), (MD5S, MD5S_Q)] {
                        report.findings.push(Finding::new(
                            id,
                            q,
                            Status::Unknown,
                            "the store returned no ETag for a multipart upload",
                        ));
                    }
                }
            }
        }
        (Err(e), _) | (_, Err(e)) => {
            for (id, q) in [(STABLE, STABLE_Q), (MD5S, MD5S_Q)] {
                report.findings.push(Finding::new(
                    id,
                    q,
                    Status::Unknown,
                    format!("a multipart upload in 5 MiB parts failed: {}", short(&e)),
                ));
            }
        }
    }
    const SMALL: &str = "part_size_1mib";
    const SMALL_Q: &str = "1 MiB multipart parts accepted";
    let small = [
        test_bytes(ctx.seed ^ 0x1111, MIB as usize),
        test_bytes(ctx.seed ^ 0x2222, 1024),
    ];
    let f = match ctx.multipart(&ctx.path("mpu/small-parts"), &small).await {
        Ok(_) => {
            report.min_part_size_accepted = Some(MIB);
            Finding::new(
                SMALL,
                SMALL_Q,
                Status::Yes,
                "a 2-part upload with a 1 MiB first part completed",
            )
        }
        Err(e) => Finding::new(
            SMALL,
            SMALL_Q,
            Status::No,
            format!(
                "a 1 MiB first part was rejected ({}){}",
                short(&e),
                if report.min_part_size_accepted.is_some() {
                    "; 5 MiB parts work"
                } else {
                    ""
                }
            ),
        ),
    };
    report.findings.push(f);
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

async fn latency(ctx: &Ctx<'_>, opts: &ProbeOpts, report: &mut ProbeReport) {
    let n = opts.requests.max(1);
    let body = test_bytes(ctx.seed ^ 0x1a7e, 1024);
    let p = ctx.path("latency/object");
    let mut put = Vec::with_capacity(n);
    let mut head = Vec::with_capacity(n);
    let mut get = Vec::with_capacity(n);
    let res: object_store::Result<()> = async {
        for _ in 0..n {
            let t = Instant::now();
            ctx.inner().put(&p, body.clone().into()).await?;
            put.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        for _ in 0..n {
            let t = Instant::now();
            ctx.inner().head(&p).await?;
            head.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        for _ in 0..n {
            let t = Instant::now();
            ctx.inner().get(&p).await?.bytes().await?;
            get.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        Ok(())
    }
    .await;
    if let Err(e) = res {
        report.findings.push(Finding::new(
            "latency",
            "latency per request",
            Status::Unknown,
            format!("a small request failed: {}", short(&e)),
        ));
    }
    let all: Vec<f64> = put.iter().chain(&head).chain(&get).copied().collect();
    report.latency_ms = median(all).map(round3);
    report.latency_ms_by_request.put = median(put).map(round3);
    report.latency_ms_by_request.head = median(head).map(round3);
    report.latency_ms_by_request.get = median(get).map(round3);
}

/// Read a whole object and count its bytes (local files in 1 MiB reads, not 8 KiB chunks).
async fn read_all(store: Arc<dyn ObjectStore>, p: Path) -> object_store::Result<u64> {
    let r = store.get(&p).await?;
    match r.payload {
        GetResultPayload::File(mut f, _) => tokio::task::spawn_blocking(move || {
            use std::io::Read;
            let mut buf = vec![0u8; MIB as usize];
            let mut n = 0u64;
            loop {
                match f.read(&mut buf) {
                    Ok(0) => return Ok(n),
                    Ok(k) => n += k as u64,
                    Err(e) => {
                        return Err(object_store::Error::Generic {
                            store: "local",
                            source: Box::new(e),
                        });
                    }
                }
            }
        })
        .await
        .map_err(|e| object_store::Error::Generic {
            store: "local",
            source: Box::new(e),
        })?,
        GetResultPayload::Stream(mut s) => {
            let mut n = 0u64;
            while let Some(chunk) = s.next().await {
                n += chunk?.len() as u64;
            }
            Ok(n)
        }
    }
}

/// PUT (then GET) `count` objects of `body` in parallel, one task each; bytes/s of each phase.
async fn transfer(
    ctx: &Ctx<'_>,
    name: &str,
    count: usize,
    body: &Bytes,
) -> object_store::Result<(f64, f64)> {
    let paths: Vec<Path> = (0..count)
        .map(|i| ctx.path(&format!("throughput/{name}-{i}")))
        .collect();
    let total = (body.len() * count) as f64;
    let t = Instant::now();
    let puts: Vec<_> = paths
        .iter()
        .map(|p| {
            let (s, p, b) = (ctx.inner().clone(), p.clone(), body.clone());
            tokio::spawn(async move { s.put(&p, b.into()).await.map(|_| ()) })
        })
        .collect();
    for h in puts {
        h.await.map_err(|e| object_store::Error::Generic {
            store: "probe",
            source: Box::new(e),
        })??;
    }
    let put_rate = total / t.elapsed().as_secs_f64().max(1e-9);
    let t = Instant::now();
    let gets: Vec<_> = paths
        .iter()
        .map(|p| tokio::spawn(read_all(ctx.inner().clone(), p.clone())))
        .collect();
    let mut read = 0u64;
    for h in gets {
        read += h.await.map_err(|e| object_store::Error::Generic {
            store: "probe",
            source: Box::new(e),
        })??;
    }
    let get_rate = read as f64 / t.elapsed().as_secs_f64().max(1e-9);
    if read as f64 != total {
        return Err(object_store::Error::Generic {
            store: "probe",
            source: format!("read back {read} bytes of {total}").into(),
        });
    }
    // The next phase measures its own objects; these need not wait for cleanup.
    for p in &paths {
        let _ = ctx.inner().delete(p).await;
    }
    Ok((put_rate.round(), get_rate.round()))
}

async fn throughput(ctx: &Ctx<'_>, opts: &ProbeOpts, report: &mut ProbeReport) {
    let body = test_bytes(ctx.seed ^ 0x0b0d1e5, opts.stream_bytes as usize);
    match transfer(ctx, "single", 1, &body).await {
        Ok((put, get)) => {
            report.single_stream_bytes_per_sec = Some(put);
            report.single_stream_get_bytes_per_sec = Some(get);
        }
        Err(e) => report.findings.push(Finding::new(
            "throughput_single",
            "throughput, one stream",
            Status::Unknown,
            format!("failed: {}", short(&e)),
        )),
    }
    let cpu_before = super::rates::process_cpu_seconds();
    match transfer(ctx, "multi", opts.streams.max(1), &body).await {
        Ok((put, get)) => {
            report.multi_stream_bytes_per_sec = Some(put);
            report.multi_stream_get_bytes_per_sec = Some(get);
            // Both directions moved these bytes once each.
            let gib = 2.0 * (body.len() * opts.streams.max(1)) as f64 / (1u64 << 30) as f64;
            let transfer = match (cpu_before, super::rates::process_cpu_seconds()) {
                (Some(a), Some(b)) if b > a && gib > 0.0 => {
                    Some(super::rates::round4((b - a) / gib))
                }
                _ => None,
            };
            let hash_copy = super::rates::hash_copy_seconds_per_gib();
            report.client_cpu = Some(super::rates::ClientCpu {
                hash_copy_seconds_per_gib: hash_copy,
                transfer_seconds_per_gib: transfer,
                copy_seconds_per_gib: match (hash_copy, transfer) {
                    (Some(h), Some(t)) => Some(super::rates::round4(h + 2.0 * t)),
                    (h, t) => h.or(t),
                },
                cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            });
        }
        Err(e) => report.findings.push(Finding::new(
            "throughput_multi",
            "throughput, parallel streams",
            Status::Unknown,
            format!("failed: {}", short(&e)),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_even_and_odd() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
    }
}

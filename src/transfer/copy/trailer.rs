//! Parts of a local file sent while they are read, their CRC64 in a trailer.
//!
//! A part sent by URL ([`crate::transfer::crc_url`]) carries its CRC64 in a signed header, so
//! the part is read whole before its first byte goes: 64 MiB read into memory and sent from
//! there a moment later, out of the CPU's caches (local → S3 cost 1.29× the CPU of plain
//! `curl` PUTs of the same files). Here a part of a local file is read in blocks, each hashed
//! on its read thread and handed to the socket at once, while its bytes are still cached; the
//! CRC64 follows the last byte as an `aws-chunked` trailer
//! (`x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER`, the form AWS SDKs send by
//! default), so the store still refuses a part whose bytes differ from what was read. A
//! trailer cannot ride on a presigned URL: the request is signed in its headers (SigV4, by the
//! `aws-sigv4` crate) with the store's credentials, asked of object_store at each attempt (which
//! renews them when they expire); the signed URL object_store makes gives the address, its
//! style and the region, and its signature is dropped.
//!
//! A store that does not take this form (400 NotImplemented, 501, a refusal) gets that part,
//! and the rest of the run's, read whole and sent by URL instead.

use super::context::{CopyError, Ctx, s3_answer_error};
use super::read::{open_local, read_hashed_block};
use crate::checksum::{Digests, Hasher};
use crate::store::CrcWriter;
use crate::store::presign::{self, Reply};
use crate::transfer::crc_url;
use crate::transfer::server_side::Refused;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use bytes::Bytes;
use futures::stream::{self, StreamExt, TryStreamExt};
use object_store::aws::AwsCredential;
use object_store::multipart::PartId;
use object_store::path::Path;
use object_store::signer::{Method, SignedUrlOptions, Signer};
use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The bytes read, hashed and handed to the socket at a time: small enough to stay in the
/// core's cache between the read and the send.
const BLOCK: u64 = 256 << 10;
/// A block read that takes longer (the file is not in the page cache: a disk read) moves the
/// rest of the part's reads to the blocking pool. Reads from the cache run on the runtime's
/// threads: handing each block to a pool thread and back cost 15,000 context switches a GiB
/// and put the client's CPU back above the old path's.
const SLOW_READ: Duration = Duration::from_millis(1);
const TRAILER: &str = "x-amz-checksum-crc64nvme";
const WHAT: &str = "uploading a part";

/// Whether parts of this run go out streamed: the checksum path's writes go by URL (and the
/// store took them), the store checks a trailing CRC64 (the catalog says so, or the remote's
/// `trailing_checksum`) and has not refused this form, and the source is a local folder (read
/// again from the file when an attempt fails).
pub(super) fn applies(ctx: &Ctx, w: &CrcWriter) -> bool {
    crc_url::applies(ctx, w)
        && ctx.dst.caps.trailer_crc64
        && !w.streams_refused.load(Relaxed)
        && ctx.src.is_local()
}

/// What one attempt's body left: the digests of the bytes it sent, or the error that ended it.
#[derive(Default)]
struct Left {
    digests: Option<Digests>,
    failed: Option<CopyError>,
}

type Slot = Arc<Mutex<Left>>;

/// Sends part `idx` (0-based) of upload `id` at `path`: `range` of the local `file`, read and
/// sent block by block, its CRC64 in the trailer. `Ok(None)`: the store does not take this
/// form; the caller reads the part and sends it by URL (so does the rest of the run).
pub(super) async fn put_part(
    ctx: &Ctx,
    w: &CrcWriter,
    (path, id, idx): (&Path, &str, usize),
    file: std::path::PathBuf,
    range: Range<u64>,
) -> Result<Option<(PartId, Digests)>, CopyError> {
    let s3 = ctx.dst.as_s3().expect("checked by applies");
    let shown = file.display().to_string();
    let f = Arc::new(open_local(file).await.map_err(|e| CopyError::Io {
        path: shown.clone(),
        source: e,
    })?);
    let number = (idx + 1).to_string();
    let opts =
        SignedUrlOptions::default().with_query([("partNumber", number.as_str()), ("uploadId", id)]);
    let slot: Slot = Arc::default();
    let tamper = w.tamper.clone().map(|t| (t, path.clone(), idx));
    let (opts, f, slot_ref, shown, tamper, range) = (&opts, &f, &slot, &shown, &tamper, &range);
    let request = || async move {
        *slot_ref.lock().expect("slot lock") = Left::default();
        let store_err = |e| {
            Refused::Copy(CopyError::Store {
                what: WHAT,
                source: e,
            })
        };
        let url = s3
            .signed_url_opts(Method::PUT, path, Duration::from_secs(900), opts)
            .await
            .map_err(store_err)?;
        let cred = s3.credentials().get_credential().await.map_err(store_err)?;
        let body = body(
            f.clone(),
            range.clone(),
            slot_ref.clone(),
            shown,
            tamper.clone(),
        );
        signed_request(url, &cred, range.end - range.start, body)
            .map_err(|why| Refused::Copy(s3_answer_error(WHAT, why, None)))
    };
    let failed = || {
        let failed = slot_ref.lock().expect("slot lock").failed.take();
        failed.map(Refused::Copy)
    };
    let to = presign::PutTo {
        store: &ctx.dst,
        limits: &ctx.limits,
        puts: &ctx.counters.put,
    };
    let gave_up = |msg: String, status| Refused::Copy(s3_answer_error(WHAT, msg, status));
    let judged = presign::send_retried(to, WHAT, request, failed, gave_up, |reply| {
        judge(reply, idx, slot_ref)
    })
    .await;
    match judged {
        Ok((etag, d)) => {
            ctx.counters.read_bytes.fetch_add(d.bytes, Relaxed);
            let sent = B64.encode(d.crc64.to_be_bytes());
            let content_id = crc_url::part_metadata(&etag, &sent);
            Ok(Some((PartId { content_id }, d)))
        }
        Err(Refused::Copy(e)) => Err(e),
        Err(Refused::Off(why)) => {
            if !w.streams_refused.swap(true, Relaxed) {
                tracing::info!(
                    target: "moverctl::copy",
                    store = %ctx.dst.shown(),
                    "the store does not take parts with a trailing checksum ({why}); the rest \
                     of the run reads each part whole and sends it on a presigned URL"
                );
            }
            Ok(None)
        }
    }
}

/// What the store's answer to a streamed part means (as for a part sent by URL): its ETag and
/// the digests of what was sent.
fn judge(reply: Reply, idx: usize, slot: &Slot) -> presign::Verdict<(String, Digests), Refused> {
    use presign::Verdict;
    let d = slot.lock().expect("slot lock").digests;
    let sent = d.map(|d| B64.encode(d.crc64.to_be_bytes()));
    let named = format!("part {}", idx + 1);
    match crc_url::judge(reply, WHAT, &named, sent.as_deref()) {
        Verdict::Done((Some(etag), _)) => Verdict::Done((etag, d.expect("sent whole"))),
        Verdict::Done((None, _)) => Verdict::Fail(Refused::Copy(s3_answer_error(
            WHAT,
            "its answer holds no ETag".into(),
            None,
        ))),
        Verdict::Retry(why, status) => Verdict::Retry(why, status),
        Verdict::Fail(e) => Verdict::Fail(e),
    }
}

/// The PUT of an `aws-chunked` body of `decoded` bytes to `url` (object_store's signed URL,
/// its signature dropped), signed in its headers for a trailing CRC64. The error names what
/// failed, never a credential.
fn signed_request(
    mut url: url::Url,
    cred: &AwsCredential,
    decoded: u64,
    body: reqwest::Body,
) -> Result<reqwest::Request, String> {
    use aws_sigv4::http_request::{
        PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
        UriPathNormalizationMode, sign,
    };
    let region = url
        .query_pairs()
        .find(|(k, _)| k == "X-Amz-Credential")
        .and_then(|(_, v)| v.split('/').nth(2).map(str::to_string))
        .ok_or("the signed address names no region")?;
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(k, _)| !k.starts_with("X-Amz-"))
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    if kept.is_empty() {
        url.set_query(None);
    } else {
        url.query_pairs_mut().clear().extend_pairs(kept);
    }
    let (encoded, decoded) = (encoded_len(decoded).to_string(), decoded.to_string());
    let headers = [
        ("content-encoding", "aws-chunked"),
        ("content-length", encoded.as_str()),
        ("x-amz-decoded-content-length", decoded.as_str()),
        ("x-amz-trailer", TRAILER),
    ];
    let identity = aws_credential_types::Credentials::new(
        &cred.key_id,
        &cred.secret_key,
        cred.token.clone(),
        None,
        "moverctl",
    )
    .into();
    let mut settings = SigningSettings::default();
    // S3 signs the path as sent (no second encoding, no normalizing) and wants the payload's
    // mode in x-amz-content-sha256.
    settings.percent_encoding_mode = PercentEncodingMode::Single;
    settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region(&region)
        .name("s3")
        .time(std::time::SystemTime::now())
        .settings(settings)
        .build()
        .map_err(|_| "the request could not be signed".to_string())?
        .into();
    let signable = SignableRequest::new(
        "PUT",
        url.as_str(),
        headers.iter().copied(),
        SignableBody::StreamingUnsignedPayloadTrailer,
    )
    .map_err(|_| "the request could not be signed".to_string())?;
    let (signed, _) = sign(signable, &params)
        .map_err(|_| "the request could not be signed".to_string())?
        .into_parts();
    let mut r = presign::client().put(url);
    for (k, v) in headers.into_iter().chain(signed.headers()) {
        r = r.header(k, v);
    }
    r.body(body)
        .build()
        .map_err(|_| "the request could not be built".to_string())
}

/// The length of the `aws-chunked` form of `n` bytes sent in [`BLOCK`]s with the trailer.
fn encoded_len(n: u64) -> u64 {
    let mut total = 0;
    let mut left = n;
    while left > 0 {
        let b = left.min(BLOCK);
        total += format!("{b:x}").len() as u64 + 2 + b + 2;
        left -= b;
    }
    // "0\r\n", the trailer "name:base64\r\n" (8 bytes are 12 base64 characters), "\r\n".
    total + 3 + TRAILER.len() as u64 + 1 + 12 + 2 + 2
}

type Tamper = Option<(crate::store::WriteTamper, Path, usize)>;

/// The `aws-chunked` body of `range` of `file`: each block read and hashed (the next one read
/// while this one is sent; on the runtime's threads until a read is slower than [`SLOW_READ`],
/// then on the blocking pool), framed, the CRC64 of all of them in the trailer.
/// The digests go to `slot` before the trailer; a failed read or a short file puts its error
/// there and ends the body with an error (the request fails, and is not retried).
fn body(
    file: Arc<std::fs::File>,
    range: Range<u64>,
    slot: Slot,
    shown: &str,
    tamper: Tamper,
) -> reqwest::Body {
    let at = Where {
        shown,
        slow_after: SLOW_READ,
    };
    reqwest::Body::wrap_stream(frames(file, range, slot, at, tamper))
}

/// How a body names its file, and after how long a read counts as slow.
struct Where<'a> {
    shown: &'a str,
    slow_after: Duration,
}

/// The bytes of [`body`], in the pieces it sends.
fn frames(
    file: Arc<std::fs::File>,
    range: Range<u64>,
    slot: Slot,
    at: Where<'_>,
    tamper: Tamper,
) -> futures::stream::BoxStream<'static, std::io::Result<Bytes>> {
    struct St {
        file: Arc<std::fs::File>,
        range: Range<u64>,
        next: u64,
        pending: Option<tokio::task::JoinHandle<std::io::Result<(Bytes, Hasher, bool)>>>,
        first: bool,
        /// A read was slow: the rest go to the blocking pool.
        slow: bool,
        slow_after: Duration,
        slot: Slot,
        shown: String,
        tamper: Tamper,
    }
    type Read = std::io::Result<(Bytes, Hasher, bool)>;
    fn read(st: &St, h: Hasher) -> tokio::task::JoinHandle<Read> {
        let (file, off, slow_after) = (st.file.clone(), st.next, st.slow_after);
        let n = (st.range.end - off).min(BLOCK) as usize;
        let job = move || {
            let (t, mut h) = (std::time::Instant::now(), h);
            read_hashed_block(&file, off, n, &mut h).map(|b| (b, h, t.elapsed() >= slow_after))
        };
        match st.slow {
            true => tokio::task::spawn_blocking(job),
            false => tokio::task::spawn(async move { job() }),
        }
    }
    let mut st = St {
        next: range.start,
        range,
        file,
        pending: None,
        first: true,
        slow: false,
        slow_after: at.slow_after,
        slot,
        shown: at.shown.to_string(),
        tamper,
    };
    st.pending = Some(read(&st, Hasher::new(false)));
    let frames = stream::try_unfold(st, |mut st| async move {
        let Some(p) = st.pending.take() else {
            return Ok(None);
        };
        let fail = |st: &St, e: CopyError| {
            st.slot.lock().expect("slot lock").failed = Some(e);
            std::io::Error::other("the source could not be read")
        };
        let (mut block, h) = match p.await.map_err(|e| std::io::Error::other(e.to_string())) {
            Ok(Ok((b, h, slow))) => {
                st.slow |= slow;
                (b, h)
            }
            Ok(Err(e)) | Err(e) => {
                let e = CopyError::Io {
                    path: st.shown.clone(),
                    source: e,
                };
                return Err(fail(&st, e));
            }
        };
        if block.is_empty() {
            let e = CopyError::Mismatch(format!(
                "the source returned fewer bytes for {}..{} than listed",
                st.range.start, st.range.end
            ));
            return Err(fail(&st, e));
        }
        if let Some((t, path, idx)) = &st.tamper {
            let n = block.len();
            match t(path, Some(*idx), vec![block]) {
                Ok(v) => block = v.concat().into(),
                Err(msg) => {
                    let e = CopyError::Store {
                        what: WHAT,
                        source: object_store::Error::Generic {
                            store: "S3",
                            source: msg.into(),
                        },
                    };
                    return Err(fail(&st, e));
                }
            }
            debug_assert_eq!(n, block.len(), "a tamper keeps the length");
        }
        let sep = if st.first { "" } else { "\r\n" };
        let head = Bytes::from(format!("{sep}{:x}\r\n", block.len()));
        st.first = false;
        st.next += block.len() as u64;
        if st.next < st.range.end {
            st.pending = Some(read(&st, h));
            return Ok(Some((vec![head, block], st)));
        }
        let d = h.finish();
        let crc = B64.encode(d.crc64.to_be_bytes());
        st.slot.lock().expect("slot lock").digests = Some(d);
        let tail = Bytes::from(format!("\r\n0\r\n{TRAILER}:{crc}\r\n\r\n"));
        Ok(Some((vec![head, block, tail], st)))
    });
    frames
        .map_ok(|v| stream::iter(v.into_iter().map(Ok::<_, std::io::Error>)))
        .try_flatten()
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The body's bytes with their frames taken off, and the text of its tail.
    fn decoded(sent: &[u8]) -> (Vec<u8>, String) {
        let mut data = Vec::new();
        let mut rest = sent;
        loop {
            let nl = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let n = usize::from_str_radix(std::str::from_utf8(&rest[..nl]).unwrap(), 16).unwrap();
            rest = &rest[nl + 2..];
            if n == 0 {
                return (data, String::from_utf8(rest.to_vec()).unwrap());
            }
            data.extend_from_slice(&rest[..n]);
            assert_eq!(&rest[n..n + 2], b"\r\n");
            rest = &rest[n + 2..];
        }
    }

    fn send(f: &Arc<std::fs::File>, range: Range<u64>, slow_after: Duration) -> (Vec<u8>, Left) {
        let slot: Slot = Arc::default();
        let rt = tokio::runtime::Runtime::new().unwrap();
        let sent = rt.block_on(async {
            let at = Where {
                shown: "f",
                slow_after,
            };
            let mut s = frames(f.clone(), range, slot.clone(), at, None);
            let mut all = Vec::new();
            while let Some(c) = s.next().await {
                match c {
                    Ok(c) => all.extend_from_slice(&c),
                    Err(_) => break,
                }
            }
            all
        });
        let left = std::mem::take(&mut *slot.lock().unwrap());
        (sent, left)
    }

    // Read on the runtime's threads or (after a slow read; here every read counts as slow) on
    // the blocking pool, the body is the same: the range's bytes framed, its length announced
    // exactly, the CRC64 of the bytes in the trailer.
    #[test]
    fn the_body_is_the_range_framed_with_its_crc64_in_the_trailer() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let all: Vec<u8> = (0..4 * BLOCK + 100).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&p, &all).unwrap();
        let f = Arc::new(std::fs::File::open(&p).unwrap());
        for (a, b) in [
            (0, 1),
            (5, BLOCK - 1),
            (0, BLOCK),
            (3, BLOCK + 1),
            (17, 4 * BLOCK + 100),
        ] {
            let range = a..b;
            let mut bodies = Vec::new();
            for slow_after in [Duration::MAX, Duration::ZERO] {
                let (sent, left) = send(&f, range.clone(), slow_after);
                assert_eq!(sent.len() as u64, encoded_len(b - a), "{range:?}");
                let (data, tail) = decoded(&sent);
                assert_eq!(data, all[a as usize..b as usize], "{range:?}");
                let d = left.digests.unwrap();
                assert_eq!(d.bytes, b - a);
                assert_eq!(d.crc64, crate::checksum::crc64_of(&data));
                let crc = B64.encode(d.crc64.to_be_bytes());
                assert_eq!(tail, format!("{TRAILER}:{crc}\r\n\r\n"), "{range:?}");
                bodies.push(sent);
            }
            assert_eq!(bodies[0], bodies[1], "{range:?}");
        }
    }

    // A file shorter than the range (cut since it was listed) ends the body with an error, and
    // the error that says why waits in the slot: no trailer is sent for fewer bytes.
    #[test]
    fn a_file_shorter_than_its_range_ends_the_body_with_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![1u8; BLOCK as usize + 10]).unwrap();
        let f = Arc::new(std::fs::File::open(&p).unwrap());
        let (sent, left) = send(&f, 0..2 * BLOCK, Duration::MAX);
        assert!(left.digests.is_none());
        assert!(
            matches!(&left.failed, Some(CopyError::Mismatch(m)) if m.contains("fewer bytes")),
            "{:?}",
            left.failed.as_ref().map(ToString::to_string)
        );
        assert!(!String::from_utf8_lossy(&sent).contains(TRAILER));
    }
}

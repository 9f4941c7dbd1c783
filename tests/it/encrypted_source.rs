//! An S3 source encrypted with SSE-KMS (or SSE-C), whose ETags AWS documents as no MD5 of the
//! data (issue 15): moverctl must not take its listing's ETag for a digest — not to check the
//! bytes read, not to hand it over as `Content-MD5`, not to recompute a multipart ETag — or every
//! object of such a bucket fails. The fault proxy in front of Garage answers the source's GETs
//! and HEADs with `x-amz-server-side-encryption: aws:kms`, as AWS does for such objects. (Garage
//! cannot store an object whose ETag is not its MD5, so the proxy shows the encryption and the
//! test checks that no ETag proof was used: labels, and the requests that went.) An object whose
//! store keeps a CRC64 of it is then proven by that CRC (one HEAD with checksum mode), the others
//! by their size, and `--verify strict` refuses those by name.

use super::faults::data;
use super::faults::proxy::PFault;
use super::stream_put::Setup;
use super::{expect, has_header, text, unique, verified};
use object_store::{ObjectStoreExt, PutPayload, WriteMultipart};

const MIB: u64 = 1 << 20;
/// Single PUT, no stored checksum.
const SMALL: (&str, u64) = ("k/small", 100 << 10);
/// Single PUT with a CRC64/NVME the store keeps.
const CRC: (&str, u64) = ("k/crc", 100 << 10);
/// Single-part, 2.5 parts' size: the streamed PUT's candidate.
const STREAM: (&str, u64) = ("k/stream", 20 * MIB + 5);
/// Written in 5 MiB parts (a multipart ETag).
const MULTI: (&str, u64) = ("k/zmulti", 12 * MIB + 7);
const ALL: [(&str, u64); 4] = [SMALL, CRC, STREAM, MULTI];

/// The stream_put setup (a proxy in front of one Garage) with the four objects seeded.
async fn setup(name: &str) -> Option<Setup> {
    let (t, src) = Setup::new(name).await?;
    let put = |k: &str, size: u64| (src.path_of(k).unwrap(), PutPayload::from(data(k, size)));
    let (p, b) = put(SMALL.0, SMALL.1);
    src.inner.put(&p, b).await.unwrap();
    let (p, b) = put(STREAM.0, STREAM.1);
    src.inner.put(&p, b).await.unwrap();
    let (p, b) = put(CRC.0, CRC.1);
    let w = src.crc_writer.as_ref().expect("an S3 store");
    w.inner.put(&p, b).await.unwrap();
    let upload = src
        .inner
        .put_multipart(&src.path_of(MULTI.0).unwrap())
        .await
        .unwrap();
    let mut w = WriteMultipart::new_with_chunk_size(upload, 5 << 20);
    w.write(&data(MULTI.0, MULTI.1));
    w.finish().await.unwrap();
    Some(t)
}

/// The source's GETs and HEADs answered as for SSE-KMS objects from now on.
fn encrypt(t: &Setup) {
    let at = format!("/{}/{}/", t.bucket_a, t.prefix);
    for m in ["GET", "HEAD"] {
        t.proxy.add(m, &at, "", PFault::SourceKms, u32::MAX);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_kms_sources_etags_are_never_taken_for_digests() {
    let Some(t) = setup("kms-src").await else {
        return;
    };
    // Unencrypted, the same objects are proven by their ETags (the 20 MiB one in one streamed
    // PUT with its ETag as Content-MD5).
    let plain = unique("kms-plain");
    let (o, v) = t.run(&plain, &[]).await;
    expect(&o, 0);
    assert_eq!(verified(&v, "source-md5+dest-md5"), 3, "{}", text(&o));
    assert_eq!(
        verified(&v, "source-parts-etag+dest-multipart-etag"),
        1,
        "{}",
        text(&o)
    );

    encrypt(&t);
    let dst = unique("kms-dst");
    let (o, v) = t.run(&dst, &[]).await;
    // No ETag proved anything: the stored CRC64 proves its object; the rest could be checked by
    // nothing but their size: written (with an MD5 computed here, which the destination
    // checked), but unverified, exit 9.
    expect(&o, 9);
    assert_eq!(v["copied"]["objects"], 4, "{}", text(&o));
    assert_eq!(v["unverified"]["objects"], 3, "{}", text(&o));
    assert_eq!(verified(&v, "source-checksum+dest-md5"), 1, "{}", text(&o));
    assert_eq!(verified(&v, "unverified+dest-md5"), 1, "{}", text(&o));
    assert_eq!(
        verified(&v, "unverified+dest-multipart-etag"),
        2,
        "{}",
        text(&o)
    );
    // The streamed PUT would have sent the ETag as Content-MD5: the object went in parts.
    let writes = t.writes(&dst);
    let stream: Vec<_> = writes
        .iter()
        .filter(|(_, tg, _)| tg.contains(STREAM.0))
        .collect();
    assert!(
        stream
            .iter()
            .all(|(m, tg, _)| m == "POST" || tg.contains("partNumber")),
        "{stream:#?}"
    );
    // Every write's Content-MD5 is the MD5 of what it carried (Garage refuses any other), so the
    // single PUTs carry one: computed here, not the ETag.
    for (k, _) in [SMALL, CRC] {
        let w: Vec<_> = writes.iter().filter(|(_, tg, _)| tg.contains(k)).collect();
        assert_eq!(w.len(), 1, "{k}: {w:#?}");
        assert!(has_header(&w[0].2, "content-md5"), "{k}: {w:#?}");
    }
    t.assert_exact(&dst, &ALL).await;

    // The next run does not copy the same versions again (a copy could be checked no better,
    // and a cron sync would pay the transfer every run), but still counts them: exit 9.
    let (o, v) = t.run(&dst, &[]).await;
    expect(&o, 9);
    assert_eq!(v["copied"]["objects"], 0, "{}", text(&o));
    assert_eq!(v["unverified"]["objects"], 3, "{}", text(&o));
    assert_eq!(v["reasons"]["unverified earlier"], 3, "{}", text(&o));
    assert_eq!(v["requests"]["put"], 0, "{}", text(&o));

    // --verify strict refuses an object whose source states no digest, by name; the one with a
    // stored CRC64 is copied.
    let strict = unique("kms-strict");
    let (o, v) = t.run(&strict, &["--verify", "strict"]).await;
    expect(&o, 3);
    assert_eq!(v["copied"]["objects"], 1, "{}", text(&o));
    assert_eq!(verified(&v, "source-checksum+dest-md5"), 1, "{}", text(&o));
    for (k, _) in [SMALL, STREAM, MULTI] {
        assert!(text(&o).contains(k), "{k} is not named: {}", text(&o));
    }
    t.assert_exact(&strict, &[CRC]).await;

    // --verify size accepts them as checked by size: exit 0, `source-size`, counted.
    let size = unique("kms-size");
    let (o, v) = t.run(&size, &["--verify", "size"]).await;
    expect(&o, 0);
    assert_eq!(v["unverified"]["objects"], 0, "{}", text(&o));
    assert_eq!(v["no_source_digest"], 3, "{}", text(&o));
    assert_eq!(verified(&v, "source-size+dest-md5"), 1, "{}", text(&o));
    t.assert_exact(&size, &ALL).await;
}

//! The checksum-only path (issue 15): a destination whose saved probe saw a wrong
//! `x-amz-checksum-crc64nvme` refused and the right one stored (Garage does both) is written with
//! that header on every single PUT and part, multipart uploads are created with the CRC64NVME
//! algorithm, and each object is proven by the full-object CRC64 the destination keeps
//! (`dest-checksum`); no MD5 goes on the wire where the source states a CRC or is a local file.
//! Checked at a proxy in front of the one Garage: which headers went, that a byte flipped on the
//! way to the store is refused by it (the request had no Content-MD5, so only the CRC64 caught
//! it), that a byte flipped on the way from a source that keeps a CRC64 is caught on the read
//! side, that `--verify md5` and a destination without the probe keep the MD5 path.

use super::faults::data;
use super::faults::proxy::{PFault, Proxy};
use super::{expect, has_header, proxy_remote_toml, remotes, servers, text, unique};
use moverctl::store::Store;
use object_store::{ObjectStoreExt, PutPayload, WriteMultipart};
use serde_json::Value;

const MIB: u64 = 1 << 20;

/// Local files: one small, one multipart at the run's 5 MiB parts.
const FILES: [(&str, u64); 2] = [("f/small.bin", 300_000), ("f/large.bin", 11 * MIB + 5)];
/// S3 objects written by another tool with a CRC64 (S3 keeps it): one PUT, one multipart.
const CRC_SINGLE: (&str, u64) = ("c/single.bin", MIB + 9);
const CRC_MULTI: (&str, u64) = ("c/multi.bin", 12 * MIB + 1);

struct Setup {
    dir: tempfile::TempDir,
    conf: std::path::PathBuf,
    proxy: Proxy,
    bucket_a: String,
    bucket_b: String,
    files: std::path::PathBuf,
    src_prefix: String,
}

async fn setup(name: &str) -> Option<Setup> {
    let s = servers()?;
    let dir = tempfile::tempdir().unwrap();
    let proxy = Proxy::start(super::s3_upstream(&s)).await;
    let conf = dir.path().join("remotes.toml");
    // The same proxy, with parts of local files streamed and their CRC64 in a trailer (the
    // catalog grants that for AWS; Garage checks it too).
    let trailing = proxy_remote_toml(&s, &proxy.endpoint()).replace("viaproxy", "trailing")
        + "trailing_checksum = true\n";
    std::fs::write(&conf, proxy_remote_toml(&s, &proxy.endpoint()) + &trailing).unwrap();
    let files = dir.path().join("files");
    for (k, size) in FILES {
        let p = files.join(k);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, data(k, size)).unwrap();
    }
    let src_prefix = unique(name);
    let src = Store::open(&format!("garage:{}/{src_prefix}", s.bucket_a), &remotes(&s)).unwrap();
    let w = src.crc_writer.clone().unwrap();
    w.inner
        .put(
            &src.path_of(CRC_SINGLE.0).unwrap(),
            PutPayload::from(data(CRC_SINGLE.0, CRC_SINGLE.1)),
        )
        .await
        .unwrap();
    let up = w
        .inner
        .put_multipart(&src.path_of(CRC_MULTI.0).unwrap())
        .await
        .unwrap();
    let mut m = WriteMultipart::new_with_chunk_size(up, 5 * MIB as usize);
    m.put(data(CRC_MULTI.0, CRC_MULTI.1));
    m.finish().await.unwrap();
    Some(Setup {
        dir,
        conf,
        proxy,
        bucket_a: s.bucket_a.clone(),
        bucket_b: s.bucket_b.clone(),
        files,
        src_prefix,
    })
}

impl Setup {
    fn state(&self) -> std::path::PathBuf {
        self.dir.path().join("state")
    }

    fn dst_location(&self, prefix: &str) -> String {
        format!("viaproxy:{}/{prefix}", self.bucket_b)
    }

    /// [`Setup::dst_location`] through the remote that streams parts with a trailing CRC64.
    fn trailing_location(&self, prefix: &str) -> String {
        format!("trailing:{}/{prefix}", self.bucket_b)
    }

    /// `moverctl probe` of a destination location, saved in this test's state folder.
    async fn probe(&self, location: &str) {
        let mut c = super::moverctl();
        c.args(["probe", "--json", "--config"])
            .arg(&self.conf)
            .args(["--size", "1MiB", "--streams", "2", "--requests", "3"])
            .arg(location)
            .env("MOVERCTL_STATE_DIR", self.state());
        let o = tokio::task::spawn_blocking(move || c.output().unwrap())
            .await
            .unwrap();
        expect(&o, 0);
    }

    async fn run(&self, src: &str, dst: &str, extra: &[&str]) -> (std::process::Output, Value) {
        let mut c = super::moverctl();
        c.args(["copy", "--json", "--no-server-side", "--config"])
            .arg(&self.conf)
            .args(["--part-size", "5MiB", "--multipart-threshold", "8MiB"])
            .args(extra)
            .arg(src)
            .arg(dst)
            .env("MOVERCTL_STATE_DIR", self.state());
        let o = tokio::task::spawn_blocking(move || c.output().unwrap())
            .await
            .unwrap();
        expect(&o, 0);
        let v = super::summary(&o);
        (o, v)
    }

    fn s3_source(&self) -> String {
        format!("viaproxy:{}/{}", self.bucket_a, self.src_prefix)
    }

    fn local_source(&self) -> String {
        self.files.display().to_string()
    }

    /// The writes the proxy saw into `prefix` of bucket b, but for the probe's own test objects:
    /// (method, target, headers).
    fn writes_to(&self, prefix: &str) -> Vec<super::faults::proxy::Seen> {
        let at = format!("/{}/{prefix}/", self.bucket_b);
        self.proxy
            .log()
            .into_iter()
            .filter(|(m, t, _)| {
                (m == "PUT" || m == "POST") && t.contains(&at) && !t.contains(".moverctl-probe")
            })
            .collect()
    }
}

fn header<'a>(h: &'a [(String, String)], name: &str) -> Option<&'a str> {
    h.iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn labels(v: &Value) -> Vec<(String, u64)> {
    v["verified_by"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, n)| (k.clone(), n.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default()
}

async fn assert_exact(dst: &str, keys: &[(&str, u64)]) {
    let s = servers().unwrap();
    let d = Store::open(dst, &remotes(&s)).unwrap();
    for (k, size) in keys {
        assert_eq!(
            super::faults::bytes_at(&d, k).await,
            Some(data(k, *size)),
            "{k} is not exact at {dst}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probed_destination_is_written_and_proven_by_crc64_alone() {
    let Some(t) = setup("crc-path").await else {
        return;
    };
    // Local files into a probed destination whose remote streams parts with a trailing CRC64.
    let dst = unique("crc-path-dst");
    t.probe(&t.trailing_location(&dst)).await;
    let (o, v) = t
        .run(&t.local_source(), &t.trailing_location(&dst), &[])
        .await;
    expect(&o, 0);
    assert_eq!(
        labels(&v),
        vec![("source-size+dest-checksum".to_string(), 2)],
        "{}",
        text(&o)
    );
    let writes: Vec<_> = t.writes_to(&dst);
    // One single PUT, one multipart upload: created with CRC64NVME, three parts, completed.
    let creates: Vec<_> = writes
        .iter()
        .filter(|(m, tg, _)| m == "POST" && tg.contains("uploads"))
        .collect();
    assert_eq!(creates.len(), 1, "{writes:#?}");
    assert_eq!(
        header(&creates[0].2, "x-amz-checksum-algorithm"),
        Some("CRC64NVME")
    );
    let puts: Vec<_> = writes.iter().filter(|(m, _, _)| m == "PUT").collect();
    assert_eq!(puts.len(), 1 + 3, "{puts:#?}");
    for (_, target, h) in &puts {
        assert!(
            !has_header(h, "content-md5"),
            "{target} carried an MD5: {h:?}"
        );
    }
    // Each write binds the CRC64 of exactly those bytes of the file (moverctl's, computed as it
    // read them), not a value the S3 client hashed from what it was handed: the single PUT in a
    // header signed into its presigned URL; each part, streamed as it is read, in the trailer
    // of an aws-chunked body whose form is signed into its Authorization header.
    let (small, large) = (data(FILES[0].0, FILES[0].1), data(FILES[1].0, FILES[1].1));
    let tails = t.proxy.put_tails();
    for (_, target, h) in &puts {
        let crc_of = |b: &[u8]| {
            base64::Engine::encode(
                &base64::engine::general_purpose::STANDARD,
                moverctl::checksum::crc64_of(b).to_be_bytes(),
            )
        };
        let Some(rest) = target.split("partNumber=").nth(1) else {
            assert!(target.contains(FILES[0].0), "{target}");
            assert_eq!(
                header(h, "x-amz-checksum-crc64nvme"),
                Some(crc_of(&small).as_str()),
                "{target}"
            );
            let signed = target
                .split("X-Amz-SignedHeaders=")
                .nth(1)
                .and_then(|r| r.split('&').next())
                .unwrap_or_else(|| panic!("not sent on a presigned URL: {target}"));
            assert!(
                signed.contains("x-amz-checksum-crc64nvme"),
                "{target}: the CRC64 is not bound to the signature ({signed})"
            );
            // moverctl's metadata goes with the single PUT (parts take it at creation).
            assert!(signed.contains("x-amz-meta-moverctl"), "{target}: {signed}");
            continue;
        };
        let n: usize = rest.split('&').next().unwrap().parse().unwrap();
        let body = &large[(n - 1) * 5 * MIB as usize..(n * 5 * MIB as usize).min(large.len())];
        assert!(!target.contains("X-Amz-Signature"), "{target}");
        assert_eq!(
            header(h, "x-amz-content-sha256"),
            Some("STREAMING-UNSIGNED-PAYLOAD-TRAILER"),
            "{target}"
        );
        assert_eq!(header(h, "content-encoding"), Some("aws-chunked"));
        assert_eq!(header(h, "x-amz-trailer"), Some("x-amz-checksum-crc64nvme"));
        assert_eq!(
            header(h, "x-amz-decoded-content-length"),
            Some(body.len().to_string().as_str())
        );
        let auth = header(h, "authorization").unwrap_or_default();
        for bound in [
            "x-amz-trailer",
            "x-amz-decoded-content-length",
            "content-encoding",
        ] {
            assert!(auth.contains(bound), "{target}: {bound} not signed: {auth}");
        }
        let tail = &tails.iter().find(|(tg, _)| tg == target).unwrap().1;
        let want = format!("\r\n0\r\nx-amz-checksum-crc64nvme:{}\r\n\r\n", crc_of(body));
        assert!(
            String::from_utf8_lossy(tail).ends_with(&want),
            "{target}: the trailer is not the part's CRC64: {:?}",
            String::from_utf8_lossy(tail)
        );
    }
    assert_exact(&format!("garage:{}/{dst}", t.bucket_b), &FILES).await;

    // Where neither the catalog (onprem) nor the remote says a trailing CRC64 is checked, each
    // part is read whole and goes on a presigned URL that binds its CRC64 in a header.
    let dst1 = unique("crc-path-url");
    t.probe(&t.dst_location(&dst1)).await;
    let (o, v) = t.run(&t.local_source(), &t.dst_location(&dst1), &[]).await;
    expect(&o, 0);
    assert_eq!(
        labels(&v),
        vec![("source-size+dest-checksum".to_string(), 2)],
        "{}",
        text(&o)
    );
    let parts: Vec<_> = t
        .writes_to(&dst1)
        .into_iter()
        .filter(|(m, tg, _)| m == "PUT" && tg.contains("partNumber="))
        .collect();
    assert_eq!(parts.len(), 3, "{parts:#?}");
    for (_, target, h) in &parts {
        let n: usize = target.split("partNumber=").nth(1).unwrap()[..1]
            .parse()
            .unwrap();
        let body = &large[(n - 1) * 5 * MIB as usize..(n * 5 * MIB as usize).min(large.len())];
        let want = base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            moverctl::checksum::crc64_of(body).to_be_bytes(),
        );
        assert_eq!(header(h, "x-amz-checksum-crc64nvme"), Some(want.as_str()));
        assert!(target.contains("X-Amz-Signature="), "{target}");
        assert!(!has_header(h, "x-amz-trailer"), "{target}: {h:?}");
    }
    assert_exact(&format!("garage:{}/{dst1}", t.bucket_b), &FILES).await;

    // S3 objects that keep a CRC64, into another probed prefix: read and written by CRC alone
    // (the single PUT's own MD5 is handed over as Content-MD5, computed by no one here).
    let dst2 = unique("crc-path-s3");
    t.probe(&t.dst_location(&dst2)).await;
    let (o, v) = t.run(&t.s3_source(), &t.dst_location(&dst2), &[]).await;
    expect(&o, 0);
    let mut want = vec![
        ("source-checksum+dest-checksum".to_string(), 1),
        ("source-md5+dest-checksum".to_string(), 1),
    ];
    want.sort();
    assert_eq!(labels(&v), want, "{}", text(&o));
    for (_, target, h) in t.writes_to(&dst2).iter().filter(|(m, _, _)| m == "PUT") {
        assert!(has_header(h, "x-amz-checksum-crc64nvme"), "{target}: {h:?}");
        if target.contains("partNumber") {
            assert!(
                !has_header(h, "content-md5"),
                "{target} carried an MD5: {h:?}"
            );
        }
    }
    assert_exact(
        &format!("garage:{}/{dst2}", t.bucket_b),
        &[CRC_SINGLE, CRC_MULTI],
    )
    .await;

    // --verify md5 keeps the MD5 path: no CRC64 header, MD5 labels.
    let dst3 = unique("crc-path-md5");
    t.probe(&t.dst_location(&dst3)).await;
    let (o, v) = t
        .run(
            &t.local_source(),
            &t.dst_location(&dst3),
            &["--verify", "md5"],
        )
        .await;
    expect(&o, 0);
    assert!(
        labels(&v).iter().all(|(l, _)| !l.contains("dest-checksum")),
        "{v}"
    );
    for (_, target, h) in t.writes_to(&dst3).iter().filter(|(m, _, _)| m == "PUT") {
        assert!(
            !has_header(h, "x-amz-checksum-crc64nvme"),
            "{target}: {h:?}"
        );
        assert!(has_header(h, "content-md5"), "{target}: {h:?}");
    }

    // A destination nobody probed (the catalog's onprem entry lists only Content-MD5): MD5.
    let dst4 = unique("crc-path-unprobed");
    let (o, v) = t.run(&t.local_source(), &t.dst_location(&dst4), &[]).await;
    expect(&o, 0);
    assert!(
        labels(&v).iter().all(|(l, _)| !l.contains("dest-checksum")),
        "{v}"
    );
    for (_, target, h) in t.writes_to(&dst4).iter().filter(|(m, _, _)| m == "PUT") {
        assert!(
            !has_header(h, "x-amz-checksum-crc64nvme"),
            "{target}: {h:?}"
        );
    }
}

// A probe of a folder covers every prefix under it (a bucket probed once), not a sibling.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_of_a_parent_folder_covers_the_prefixes_under_it() {
    let Some(t) = setup("crc-parent").await else {
        return;
    };
    let parent = unique("crc-parent-dst");
    t.probe(&t.dst_location(&parent)).await;
    let child = format!("{parent}/sub/dir");
    let (o, v) = t.run(&t.local_source(), &t.dst_location(&child), &[]).await;
    assert_eq!(
        labels(&v),
        vec![("source-size+dest-checksum".to_string(), 2)],
        "{}",
        text(&o)
    );
    assert_exact(&format!("garage:{}/{child}", t.bucket_b), &FILES).await;
    // A prefix that only starts with the same characters is not under it.
    let sibling = format!("{parent}-sibling");
    let (o, v) = t
        .run(&t.local_source(), &t.dst_location(&sibling), &[])
        .await;
    assert!(
        labels(&v).iter().all(|(l, _)| !l.contains("dest-checksum")),
        "{}",
        text(&o)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_byte_is_caught_either_way_on_the_crc_path() {
    let Some(t) = setup("crc-flip").await else {
        return;
    };
    // Write side: the single PUT and the second part on their way to the store have a byte
    // flipped. Neither carried a Content-MD5: the store refuses them by the CRC64 alone, bound
    // in a signed header (presigned URL), or — parts streamed as they are read — following the
    // body as its trailer (header-signed request).
    for (name, trailing) in [("crc-flip-w", false), ("crc-flip-t", true)] {
        let dst = unique(name);
        let loc = match trailing {
            true => t.trailing_location(&dst),
            false => t.dst_location(&dst),
        };
        t.probe(&loc).await;
        t.proxy.clear();
        let at = format!("/{}/{dst}/", t.bucket_b);
        t.proxy
            .add(
                "PUT",
                &format!("{at}f/small.bin"),
                "",
                PFault::FlipRequest,
                1,
            )
            .add(
                "PUT",
                &format!("{at}f/large.bin"),
                "partNumber=2",
                PFault::FlipRequest,
                1,
            );
        let (o, v) = t.run(&t.local_source(), &loc, &[]).await;
        expect(&o, 0);
        let hits: Vec<_> = t
            .proxy
            .hits()
            .into_iter()
            .filter(|h| h.1.contains(&dst))
            .collect();
        assert_eq!(hits.len(), 2, "{hits:?}");
        let part = hits.iter().find(|h| h.1.contains("partNumber=2")).unwrap();
        assert_eq!(
            part.1.contains("X-Amz-Signature"),
            !trailing,
            "{name}: {part:?}"
        );
        for (target, status) in t.proxy.upstream_statuses() {
            assert_eq!(status, 400, "{target}: the store took a flipped body");
        }
        assert_eq!(v["copied"]["objects"], 2, "{v}");
        assert!(v["retries"].as_u64() >= Some(2), "{v}");
        assert_exact(&format!("garage:{}/{dst}", t.bucket_b), &FILES).await;
    }

    // Read side: the multipart source keeps a CRC64; one byte flipped on its way here is caught
    // (no MD5 is computed for it) and the object read again.
    let dst2 = unique("crc-flip-r");
    t.probe(&t.dst_location(&dst2)).await;
    t.proxy.clear();
    let from = format!("/{}/{}/", t.bucket_a, t.src_prefix);
    t.proxy.add(
        "GET",
        &format!("{from}{}", CRC_MULTI.0),
        "",
        PFault::FlipResponse,
        1,
    );
    let (o, v) = t.run(&t.s3_source(), &t.dst_location(&dst2), &[]).await;
    expect(&o, 0);
    let hits: Vec<_> = t
        .proxy
        .hits()
        .into_iter()
        .filter(|h| h.1.contains(&from))
        .collect();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].0, "GET", "{hits:?}");
    assert!(
        labels(&v).contains(&("source-checksum+dest-checksum".to_string(), 1)),
        "{v}"
    );
    assert!(v["retries"].as_u64() >= Some(1), "{v}");
    assert_exact(
        &format!("garage:{}/{dst2}", t.bucket_b),
        &[CRC_SINGLE, CRC_MULTI],
    )
    .await;
}

// A copy of 1 GiB or more into an S3 store that nothing says checks CRC64 headers (no catalog
// entry, no saved probe) is verified by MD5 and says so, with the probe that would spare it; once
// the folder above it is probed, the next copy (into another prefix under it) takes the
// checksum-only path and says nothing. (A sparse file: Garage stores its zero blocks once.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_copy_verified_by_md5_into_an_unprobed_store_hints_at_the_probe() {
    let Some(s) = servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("remotes.toml");
    std::fs::write(&conf, proxy_remote_toml(&s, &s.s3_endpoint)).unwrap();
    let files = dir.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::File::create(files.join("zeros.bin"))
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let state = dir.path().join("state");
    let copy = |dst: String| {
        let mut c = super::moverctl();
        c.args(["copy", "--config"])
            .arg(&conf)
            .arg(&files)
            .arg(dst)
            .env("MOVERCTL_STATE_DIR", &state);
        c
    };
    let prefix = unique("hint");
    let dst = format!("viaproxy:{}/{prefix}/first", s.bucket_b);
    let mut c = copy(dst.clone());
    let o = tokio::task::spawn_blocking(move || c.output().unwrap())
        .await
        .unwrap();
    expect(&o, 0);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(err.contains("source-size+dest-multipart-etag: 1"), "{err}");
    assert!(
        err.contains("hint: 1 object was written with an MD5")
            && err.contains(&format!("`moverctl probe {dst}/`")),
        "{err}"
    );
    let mut p = super::moverctl();
    p.args(["probe", "--config"])
        .arg(&conf)
        .args(["--size", "1MiB", "--streams", "2", "--requests", "3"])
        .arg(format!("viaproxy:{}/{prefix}", s.bucket_b))
        .env("MOVERCTL_STATE_DIR", &state);
    let o = tokio::task::spawn_blocking(move || p.output().unwrap())
        .await
        .unwrap();
    expect(&o, 0);
    let mut c = copy(format!("viaproxy:{}/{prefix}/second", s.bucket_b));
    let o = tokio::task::spawn_blocking(move || c.output().unwrap())
        .await
        .unwrap();
    expect(&o, 0);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(err.contains("source-size+dest-checksum: 1"), "{err}");
    assert!(!err.contains("hint:"), "{err}");
}

// A byte flipped after moverctl read and hashed a part, before it reached the socket (the fault
// wrapper's in-process flip): the part carries the CRC64 of what was read, so the store refuses
// it (a 400 at the proxy, nothing stored) and the object is copied again, exact. (Were the CRC64
// computed by the S3 client from the bytes it was handed, the store would take the flipped part
// and only the comparison after completion would catch it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_part_changed_after_it_was_read_is_refused_by_the_store() {
    use super::faults::wrapper::{Fault, Op, Plan, faulty};
    let Some(s) = servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (k, size) = FILES[1];
    let p = dir.path().join("files").join(k);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, data(k, size)).unwrap();
    let src = Store::open(
        &dir.path().join("files").display().to_string(),
        &remotes(&s),
    )
    .unwrap();
    let proxy = Proxy::start(super::s3_upstream(&s)).await;
    let via = moverctl::store::config::Remotes::parse(
        "p.toml",
        &proxy_remote_toml(&s, &proxy.endpoint()),
    )
    .unwrap();
    // Both ways a part carries its read-time CRC64: in a signed header (the part read whole
    // first), and as the trailer of a body streamed as it is read.
    for trailer in [false, true] {
        let prefix = unique("crc-tamper");
        let mut dst = Store::open(&format!("viaproxy:{}/{prefix}", s.bucket_b), &via).unwrap();
        // What a saved probe of Garage grants (see the first test).
        dst.caps.checks_crc64nvme = true;
        dst.caps.trailer_crc64 = trailer;
        let plan = Plan::new();
        plan.add(k, Op::Part(1), Fault::Flip, 1000, 1);
        let mut o = super::copy::options();
        o.part_rule = moverctl::catalog::parts::PartRule {
            threshold: 8 * MIB,
            preferred_part: 5 * MIB,
        };
        let j = dir.path().join(format!("j-{trailer}.sqlite"));
        let out = super::faults::go(&src, &faulty(&dst, &plan), &j, o).await;
        assert_eq!(plan.hits().len(), 1, "the flip did not fire");
        assert_eq!(
            out.copied.get(k).map(String::as_str),
            Some("source-size+dest-checksum"),
            "{:?}",
            out.failed
        );
        let refused: Vec<_> = proxy
            .answered()
            .into_iter()
            .filter(|(m, t, st)| {
                m == "PUT" && t.contains(&prefix) && t.contains("partNumber=2") && *st == 400
            })
            .collect();
        assert_eq!(refused.len(), 1, "{:#?}", proxy.answered());
        assert_eq!(
            refused[0].1.contains("X-Amz-Signature="),
            !trailer,
            "{refused:?}"
        );
        assert_exact(&format!("garage:{}/{prefix}", s.bucket_b), &[(k, size)]).await;
    }
}

// A store that does not take parts streamed with a trailing checksum (501 NotImplemented, as an
// S3-compatible without `aws-chunked` bodies answers) gets that part, and the rest of the run's,
// read whole and sent on a presigned URL bound to its CRC64: nothing fails, nothing is lost, the
// fallback is logged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_refuses_streamed_parts_gets_them_on_presigned_urls() {
    let Some(t) = setup("crc-nostream").await else {
        return;
    };
    let dst = unique("crc-nostream-dst");
    t.probe(&t.trailing_location(&dst)).await;
    t.proxy.clear();
    let at = format!("/{}/{dst}/{}", t.bucket_b, FILES[1].0);
    t.proxy
        .add("PUT", &at, "partNumber=", PFault::NotImplemented, 1);
    let (o, v) = t
        .run(&t.local_source(), &t.trailing_location(&dst), &["-v"])
        .await;
    expect(&o, 0);
    let hits = t.proxy.hits();
    assert_eq!(hits.len(), 1, "{hits:?}");
    let refused = &hits[0].1;
    assert!(!refused.contains("X-Amz-Signature"), "{refused}");
    let part = refused
        .split("partNumber=")
        .nth(1)
        .and_then(|r| r.split('&').next())
        .unwrap()
        .to_string();
    let resent: Vec<_> = t
        .writes_to(&dst)
        .into_iter()
        .filter(|(m, tg, _)| m == "PUT" && tg.contains(&format!("partNumber={part}")))
        .skip(1)
        .collect();
    assert_eq!(resent.len(), 1, "{resent:#?}");
    let (_, target, h) = &resent[0];
    assert!(target.contains("X-Amz-Signature="), "{target}");
    assert!(has_header(h, "x-amz-checksum-crc64nvme"), "{target}: {h:?}");
    assert!(!has_header(h, "x-amz-trailer"), "{target}: {h:?}");
    assert!(
        text(&o).contains("trailing checksum"),
        "the fallback is not logged:\n{}",
        text(&o)
    );
    assert_eq!(
        labels(&v),
        vec![("source-size+dest-checksum".to_string(), 2)],
        "{}",
        text(&o)
    );
    assert_exact(&format!("garage:{}/{dst}", t.bucket_b), &FILES).await;
}

// A store that refuses writes on a presigned URL (a bucket policy may deny them: 403) gets that
// write, and the rest of the run's, through the S3 client instead: nothing fails, nothing is
// lost, every object is still proven by its CRC64.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_refuses_presigned_writes_is_written_through_the_client() {
    let Some(t) = setup("crc-nourl").await else {
        return;
    };
    let dst = unique("crc-nourl-dst");
    t.probe(&t.dst_location(&dst)).await;
    t.proxy.clear();
    let at = format!("/{}/{dst}/", t.bucket_b);
    t.proxy
        .add("PUT", &at, "X-Amz-Signature=", PFault::AccessDenied, 1);
    let (o, v) = t
        .run(&t.local_source(), &t.dst_location(&dst), &["-vvv"])
        .await;
    expect(&o, 0);
    // Every request logged, the refusal too: no presigned URL (its key id and signature) and no
    // secret anywhere in the output.
    let all = text(&o);
    for secret in ["X-Amz-Signature", "X-Amz-Credential", "Signature="] {
        assert!(!all.contains(secret), "{secret} printed:\n{all}");
    }
    let key = std::env::var("MOVERCTL_TEST_S3_SECRET").unwrap();
    assert!(!all.contains(&key), "the secret key was printed");
    assert!(
        all.contains("presigned"),
        "the fallback is not logged:\n{all}"
    );
    assert_eq!(t.proxy.hits().len(), 1, "{:?}", t.proxy.hits());
    assert_eq!(
        labels(&v),
        vec![("source-size+dest-checksum".to_string(), 2)],
        "{}",
        text(&o)
    );
    let refused = &t.proxy.hits()[0].1;
    let key = refused.split('?').next().unwrap();
    // The refused write was sent again with the client's own signature (a header, not the URL).
    let again: Vec<_> = t
        .proxy
        .answered()
        .into_iter()
        .filter(|(m, tg, st)| {
            m == "PUT" && tg.starts_with(key) && !tg.contains("X-Amz-Signature=") && *st == 200
        })
        .collect();
    assert!(!again.is_empty(), "{:#?}", t.proxy.answered());
    assert_exact(&format!("garage:{}/{dst}", t.bucket_b), &FILES).await;
}

//! Refusing a source and destination that share objects. A destination equal to the source, inside
//! it or around it is never what was meant, and is destructive: a `sync --delete` from
//! `s3://b/par/child` to `s3://b/par` sees the source's own objects (`child/…` at the
//! destination) as keys the source lacks and deletes them, and the next run deletes the copies;
//! a `copy` into a folder inside its source nests one level deeper on every run.
//!
//! The decision is made on what the locations resolve to, not on how they are written: the store
//! kind, the endpoint each one really talks to (a remote's, else `AWS_ENDPOINT_URL_S3` /
//! `AWS_ENDPOINT_URL`, else AWS itself; compared as normalised URLs, and any
//! `s3[.-]….amazonaws.com` endpoint counts as AWS), the bucket, and the key prefix by whole path
//! segments (`par/` contains `par/child/`, never `parent/`). Local folders are compared by
//! canonical path (symbolic links and `..` resolved); a destination that does not exist yet is
//! resolved through its nearest existing ancestor. In-memory stores share nothing.
//!
//! Hosts are compared as the service they reach, not as text: case, a trailing dot, the default
//! port and IPv4-mapped IPv6 literals (`[::ffff:127.0.0.1]` is `127.0.0.1`) are normalised in
//! the identity itself; when two endpoints still differ as text but name the same bucket and
//! overlapping prefixes, their hosts are resolved (DNS, `/etc/hosts`: `localhost`) and a shared
//! address on the same port and path is the same service. Resolution happens only then, so the
//! identity that keys journals and locks never depends on DNS; a name that does not resolve is
//! taken as a different service (the store cannot be reached through it anyway).

use super::config::Remote;
use super::location::Location;
use super::{OpenError, process_env, remote_endpoint, s3_endpoint_with};
use std::path::{Component, Path, PathBuf};

/// What a location's keys are, once resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Keys under `prefix` (empty, or ending in '/') in `bucket` of `service`: the store kind and
    /// its normalised endpoint, e.g. `s3 http://127.0.0.1:3900` or `s3 aws`.
    Keys {
        service: String,
        bucket: String,
        prefix: String,
        /// The endpoint's parts, for comparing two spellings of one server by address.
        endpoint: Option<Endpoint>,
    },
    /// A local folder, by canonical path.
    Folder(PathBuf),
    /// An in-memory store: each opened one is its own.
    Private,
}

impl Scope {
    /// One string per place, whatever spelling reached it: `s3 http://127.0.0.1:3900 bucket b
    /// prefix train/`, `local /abs/canonical/path`. Journals and locks are keyed by it, so `data`,
    /// `./data` and `/abs/data/` find the same journal and the same lock.
    pub fn identity(&self, shown: &str) -> String {
        match self {
            Scope::Keys {
                service,
                bucket,
                prefix,
                ..
            } => format!("{service} bucket {bucket} prefix {prefix}"),
            Scope::Folder(p) => format!("local {}", p.display()),
            Scope::Private => format!("memory {shown}"),
        }
    }
}

/// The identity of a location (see [`Scope::identity`]), resolving remotes and the endpoint
/// variables of this process.
pub fn identity(loc: &Location, remote: Option<&Remote>) -> Result<String, OpenError> {
    Ok(scope_with_env(loc, remote, &process_env)?.identity(&loc.shown()))
}

/// How a destination's scope relates to its source's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    Same,
    DestinationInsideSource,
    SourceInsideDestination,
}

/// Source and destination overlap; nothing was opened or changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    pub source: String,
    pub destination: String,
    pub relation: Relation,
    /// Where both live, resolved (`bucket b at s3 http://…`, or the canonical folders).
    pub resolved: String,
}

impl std::error::Error for Overlap {}

impl std::fmt::Display for Overlap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (s, d) = (&self.source, &self.destination);
        match self.relation {
            Relation::Same => write!(
                f,
                "source {s} and destination {d} are the same place ({}); refusing to copy or sync a location onto itself",
                self.resolved
            )?,
            Relation::DestinationInsideSource => write!(
                f,
                "destination {d} is inside source {s} ({}); refusing: every run would copy the source into itself one level deeper, and sync --delete would delete source objects",
                self.resolved
            )?,
            Relation::SourceInsideDestination => write!(
                f,
                "source {s} is inside destination {d} ({}); refusing: sync --delete would take the source's own objects for keys the source lacks and delete them",
                self.resolved
            )?,
        }
        write!(
            f,
            ". Choose a destination that neither contains nor is inside the source"
        )
    }
}

/// Refuse `src` → `dst` when they share objects (see the module docs). Reads the endpoint
/// variables of this process; an endpoint carrying a password is refused here too.
pub fn check(
    src: &Location,
    src_remote: Option<&Remote>,
    dst: &Location,
    dst_remote: Option<&Remote>,
) -> Result<(), OpenError> {
    check_with_env(src, src_remote, dst, dst_remote, &process_env)
}

/// [`check`] with the environment read through `env` (tests).
pub fn check_with_env(
    src: &Location,
    src_remote: Option<&Remote>,
    dst: &Location,
    dst_remote: Option<&Remote>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), OpenError> {
    let a = scope_with_env(src, src_remote, env)?;
    let b = scope_with_env(dst, dst_remote, env)?;
    let Some(relation) = relate_with(&a, &b, &resolve) else {
        return Ok(());
    };
    let resolved = match (&a, &b) {
        (
            Scope::Keys {
                service, bucket, ..
            },
            _,
        ) => format!("bucket {bucket} at {service}"),
        (Scope::Folder(x), Scope::Folder(y)) if x == y => format!("folder {}", x.display()),
        (Scope::Folder(x), Scope::Folder(y)) => {
            format!("folders {} and {}", x.display(), y.display())
        }
        _ => String::new(),
    };
    Err(Overlap {
        source: src.shown(),
        destination: dst.shown(),
        relation,
        resolved,
    }
    .into())
}

/// What `loc` resolves to (see [`Scope`]), reading the environment through `env`.
pub fn scope_with_env(
    loc: &Location,
    remote: Option<&Remote>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Scope, OpenError> {
    let shown = loc.shown();
    Ok(match loc {
        Location::S3 { bucket, prefix, .. } => {
            let (service, endpoint) = match s3_endpoint_with(remote, &shown, env)? {
                Some(e) => {
                    let (norm, ep) = normalise_endpoint("s3", &e);
                    if ep.as_ref().is_some_and(|p| is_aws_s3_host(&p.host)) {
                        ("s3 aws".to_string(), None)
                    } else {
                        (format!("s3 {norm}"), ep)
                    }
                }
                None => ("s3 aws".to_string(), None),
            };
            Scope::Keys {
                service,
                bucket: bucket.clone(),
                prefix: prefix.clone(),
                endpoint,
            }
        }
        Location::Gcs { bucket, prefix, .. } => {
            let e = remote_endpoint(remote, &shown)?
                .unwrap_or_else(|| "https://storage.googleapis.com".into());
            let (norm, endpoint) = normalise_endpoint("gcs", &e);
            Scope::Keys {
                service: format!("gcs {norm}"),
                bucket: bucket.clone(),
                prefix: prefix.clone(),
                endpoint,
            }
        }
        Location::Azure {
            container, prefix, ..
        } => {
            let account = remote
                .and_then(|r| r.account.clone())
                .or_else(|| env("AZURE_STORAGE_ACCOUNT_NAME"))
                .or_else(|| env("AZURE_STORAGE_ACCOUNT"))
                .unwrap_or_default();
            let label = format!("azure account {account}");
            let (endpoint, parts) = match remote_endpoint(remote, &shown)? {
                Some(e) => normalise_endpoint(&label, &e),
                None if remote.is_some_and(|r| r.use_emulator) => ("emulator".into(), None),
                None => ("default".into(), None),
            };
            Scope::Keys {
                service: format!("azure {endpoint} account {account}"),
                bucket: container.clone(),
                prefix: prefix.clone(),
                endpoint: parts,
            }
        }
        Location::Local { root } => {
            Scope::Folder(resolve_folder(root).map_err(|e| OpenError::Build {
                location: shown.clone(),
                message: e.to_string(),
            })?)
        }
        Location::Memory { .. } => Scope::Private,
    })
}

/// How `dst` relates to `src`, or None when they share nothing; endpoints that differ as text
/// are compared by the addresses `resolve` gives for their hosts (see the module docs).
pub fn relate_with(src: &Scope, dst: &Scope, resolve: &Resolver) -> Option<Relation> {
    match (src, dst) {
        (
            Scope::Keys {
                service: s1,
                bucket: b1,
                prefix: p1,
                endpoint: e1,
            },
            Scope::Keys {
                service: s2,
                bucket: b2,
                prefix: p2,
                endpoint: e2,
            },
        ) if b1 == b2 && (s1 == s2 || same_server(e1.as_ref(), e2.as_ref(), resolve)) => {
            // Prefixes are empty or end in '/', so a string prefix is a whole-segment prefix.
            if p1 == p2 {
                Some(Relation::Same)
            } else if p2.starts_with(p1.as_str()) {
                Some(Relation::DestinationInsideSource)
            } else if p1.starts_with(p2.as_str()) {
                Some(Relation::SourceInsideDestination)
            } else {
                None
            }
        }
        (Scope::Folder(a), Scope::Folder(b)) => {
            // Path::starts_with compares whole components.
            if a == b {
                Some(Relation::Same)
            } else if b.starts_with(a) {
                Some(Relation::DestinationInsideSource)
            } else if a.starts_with(b) {
                Some(Relation::SourceInsideDestination)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// The parts of an endpoint URL that say which server it reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// What is served there beyond the URL (`s3`, `gcs`, `azure account NAME`).
    label: String,
    /// Lowercased, no trailing dot, an IP literal in its plain form (IPv4-mapped IPv6 as IPv4).
    host: String,
    port: Option<u16>,
    path: String,
}

/// Addresses a host name reaches on a port (empty when it does not resolve).
pub type Resolver = dyn Fn(&str, u16) -> Vec<std::net::IpAddr>;

/// The system's resolver (`getaddrinfo`: DNS and `/etc/hosts`).
fn resolve(host: &str, port: u16) -> Vec<std::net::IpAddr> {
    use std::net::ToSocketAddrs;
    (host, port)
        .to_socket_addrs()
        .map(|a| a.map(|s| s.ip()).collect())
        .unwrap_or_default()
}

/// An IP address in one form: IPv4-mapped IPv6 (`::ffff:a.b.c.d`) as the IPv4 address.
fn plain_ip(ip: std::net::IpAddr) -> std::net::IpAddr {
    match ip {
        std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().map(std::net::IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

/// Two endpoints reach the same server: same label, port and path, and their hosts share an
/// address (IP literals as they are, names through `resolve`).
fn same_server(a: Option<&Endpoint>, b: Option<&Endpoint>, resolve: &Resolver) -> bool {
    let (Some(a), Some(b)) = (a, b) else {
        return false;
    };
    if a.label != b.label || a.port != b.port || a.path != b.path {
        return false;
    }
    if a.host == b.host {
        return true;
    }
    let port = a.port.unwrap_or(0);
    let addrs = |h: &str| -> Vec<std::net::IpAddr> {
        match h.trim_matches(['[', ']']).parse::<std::net::IpAddr>() {
            Ok(ip) => vec![plain_ip(ip)],
            Err(_) => resolve(h, port).into_iter().map(plain_ip).collect(),
        }
    };
    let theirs = addrs(&b.host);
    addrs(&a.host).iter().any(|ip| theirs.contains(ip))
}

/// An endpoint as `scheme://host:port/path` (see [`Endpoint::host`]; default port made
/// explicit, no trailing '/'), and its parts; text that is not a URL is only trimmed and
/// lowercased.
fn normalise_endpoint(label: &str, e: &str) -> (String, Option<Endpoint>) {
    match url::Url::parse(e.trim()) {
        Ok(u) if u.host().is_some() => {
            let host = match u.host() {
                Some(url::Host::Ipv6(v6)) => match v6.to_ipv4_mapped() {
                    Some(v4) => v4.to_string(),
                    None => format!("[{v6}]"),
                },
                Some(url::Host::Ipv4(v4)) => v4.to_string(),
                Some(url::Host::Domain(d)) => d.trim_end_matches('.').to_ascii_lowercase(),
                None => String::new(),
            };
            let port = u.port_or_known_default();
            let path = u.path().trim_end_matches('/').to_string();
            let shown_port = port.map(|p| format!(":{p}")).unwrap_or_default();
            let norm = format!("{}://{host}{shown_port}{path}", u.scheme());
            let parts = Endpoint {
                label: label.to_string(),
                host,
                port,
                path,
            };
            (norm, Some(parts))
        }
        _ => (e.trim().trim_end_matches('/').to_ascii_lowercase(), None),
    }
}

/// `s3.amazonaws.com`, `s3.REGION.amazonaws.com`, `s3-REGION.amazonaws.com`,
/// `s3.dualstack.REGION.amazonaws.com`, `s3-fips.…`: AWS's one global bucket namespace.
fn is_aws_s3_host(host: &str) -> bool {
    host.ends_with(".amazonaws.com") && (host.starts_with("s3.") || host.starts_with("s3-"))
}

/// The canonical path of `p`, which need not exist: its nearest existing ancestor is
/// canonicalised (symbolic links and `..` resolved by the file system) and the rest appended, with
/// `..` in that rest taken lexically (components that do not exist cannot be links).
pub fn resolve_folder(p: &Path) -> std::io::Result<PathBuf> {
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    };
    let parts: Vec<Component> = abs.components().collect();
    for i in (1..=parts.len()).rev() {
        let head: PathBuf = parts[..i].iter().collect();
        let Ok(mut out) = head.canonicalize() else {
            continue;
        };
        for c in &parts[i..] {
            match c {
                Component::ParentDir => {
                    out.pop();
                }
                Component::Normal(n) => out.push(n),
                _ => {}
            }
        }
        return Ok(out);
    }
    Ok(abs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::config::Remotes;

    const REMOTES: &str = r#"
[remotes.garage]
type = "s3"
endpoint = "http://127.0.0.1:3900"
[remotes.garage_again]
type = "s3"
endpoint = "HTTP://127.0.0.1:3900/"
[remotes.garage2]
type = "s3"
endpoint = "http://127.0.0.1:3910"
[remotes.plain]
type = "s3"
[remotes.aws_east]
type = "s3"
endpoint = "https://s3.us-east-1.amazonaws.com"
[remotes.web]
type = "s3"
endpoint = "https://objects.example.com"
[remotes.web443]
type = "s3"
endpoint = "https://objects.example.com:443/"
[remotes.mapped]
type = "s3"
endpoint = "http://[::ffff:127.0.0.1]:3900"
[remotes.lh]
type = "s3"
endpoint = "http://LocalHost.:3900/"
[remotes.lh2]
type = "s3"
endpoint = "http://localhost:3910"
"#;

    fn remotes() -> Remotes {
        Remotes::parse("r.toml", REMOTES).unwrap()
    }

    /// The check with a fixed environment: `endpoint` as AWS_ENDPOINT_URL, if given.
    fn overlap(src: &str, dst: &str, endpoint: Option<&str>) -> Option<Relation> {
        let r = remotes();
        let (s, d) = (
            Location::parse(src, &r).unwrap(),
            Location::parse(dst, &r).unwrap(),
        );
        let env = |k: &str| (k == "AWS_ENDPOINT_URL").then(|| endpoint.map(str::to_string))?;
        let (sr, dr) = (
            crate::store::remote_of(&s, &r),
            crate::store::remote_of(&d, &r),
        );
        match check_with_env(&s, sr, &d, dr, &env) {
            Ok(()) => None,
            Err(OpenError::Overlap(o)) => Some(o.relation),
            Err(e) => panic!("{e}"),
        }
    }

    use Relation::*;

    #[test]
    fn equal_and_nested_prefixes_overlap_both_ways() {
        assert_eq!(overlap("s3://b/par", "s3://b/par/", None), Some(Same));
        assert_eq!(
            overlap("s3://b/par", "s3://b/par/child", None),
            Some(DestinationInsideSource)
        );
        assert_eq!(
            overlap("s3://b/par/child", "s3://b/par", None),
            Some(SourceInsideDestination)
        );
        // A whole bucket contains every prefix in it.
        assert_eq!(
            overlap("s3://b", "s3://b/x/y", None),
            Some(DestinationInsideSource)
        );
        assert_eq!(overlap("gs://b/a", "gs://b/a", None), Some(Same));
        assert_eq!(
            overlap("az://c/a/b", "az://c/a", None),
            Some(SourceInsideDestination)
        );
    }

    #[test]
    fn sibling_prefixes_sharing_a_string_prefix_do_not_overlap() {
        assert_eq!(overlap("s3://b/par", "s3://b/parent", None), None);
        assert_eq!(overlap("s3://b/parent", "s3://b/par", None), None);
        assert_eq!(overlap("s3://b/par/a", "s3://b/par/ab", None), None);
    }

    #[test]
    fn different_buckets_kinds_or_endpoints_do_not_overlap() {
        assert_eq!(overlap("s3://b/x", "s3://c/x", None), None);
        assert_eq!(overlap("s3://b/x", "gs://b/x", None), None);
        assert_eq!(overlap("garage:b/x", "garage2:b/x", None), None);
        assert_eq!(overlap("garage:b/x", "s3://b/x", None), None);
        assert_eq!(overlap("web:b/x", "aws_east:b/x", None), None);
        assert_eq!(overlap("memory://x", "memory://x", None), None);
    }

    #[test]
    fn the_same_store_written_differently_overlaps() {
        // Two remotes naming the same endpoint (case, default port, trailing '/').
        assert_eq!(
            overlap("garage:b/x", "garage_again:b/x/y", None),
            Some(DestinationInsideSource)
        );
        assert_eq!(overlap("web:b/x", "web443:b/x", None), Some(Same));
        // The default endpoint and a remote without one: both AWS, or both the variable's.
        assert_eq!(overlap("s3://b/x", "plain:b/x", None), Some(Same));
        let garage = Some("http://127.0.0.1:3900");
        assert_eq!(overlap("s3://b/x", "plain:b/x", garage), Some(Same));
        assert_eq!(overlap("s3://b/x", "garage:b/x", garage), Some(Same));
        assert_eq!(overlap("s3://b/x", "garage:b/x", None), None);
        // An explicit AWS endpoint is AWS's one bucket namespace.
        assert_eq!(overlap("s3://b/x", "aws_east:b/x", None), Some(Same));
    }

    /// Fails on the main of 2026-12-02, which compared endpoints as text: a remote spelled
    /// `[::ffff:127.0.0.1]` or `localhost` was another service, and `sync` deleted the source.
    #[test]
    fn overlap_spelled_differently_is_the_same_service() {
        assert_eq!(
            overlap("mapped:b/par/child", "garage:b/par", None),
            Some(SourceInsideDestination)
        );
        assert_eq!(
            overlap("lh:b/par/child", "garage:b/par", None),
            Some(SourceInsideDestination),
            "localhost resolves to 127.0.0.1 (case and a trailing dot ignored)"
        );
        assert_eq!(overlap("lh:b/x", "mapped:b/x", None), Some(Same));
        // Another port, or another bucket, is still another place.
        assert_eq!(overlap("lh2:b/x", "garage:b/x", None), None);
        assert_eq!(overlap("lh:b/x", "garage:c/x", None), None);
        // The identity itself folds the mapped form, case and the trailing dot.
        let r = remotes();
        let id = |s: &str| {
            let l = Location::parse(s, &r).unwrap();
            scope_with_env(&l, crate::store::remote_of(&l, &r), &|_| None)
                .unwrap()
                .identity(s)
        };
        assert_eq!(id("mapped:b/x"), id("garage:b/x"));
        assert!(
            id("lh:b/x").contains("http://localhost:3900 "),
            "{}",
            id("lh:b/x")
        );
    }

    #[test]
    fn dns_names_are_compared_by_their_addresses() {
        let (a, _) = normalise_endpoint("s3", "https://s3.internal.example:9000");
        let ep = |e: &str| normalise_endpoint("s3", e).1;
        let keys = |e: &str, p: &str| Scope::Keys {
            service: format!("s3 {e}"),
            bucket: "b".into(),
            prefix: p.into(),
            endpoint: ep(e),
        };
        let fake = |h: &str, _p: u16| -> Vec<std::net::IpAddr> {
            match h {
                "s3.internal.example" | "alias.example" => vec!["10.0.0.5".parse().unwrap()],
                _ => vec![],
            }
        };
        assert_eq!(a, "https://s3.internal.example:9000");
        let x = keys("https://s3.internal.example:9000", "d/");
        for other in [
            "http://10.0.0.5:9000",
            "https://alias.example:9000/",
            "http://[::ffff:10.0.0.5]:9000",
        ] {
            assert_eq!(
                relate_with(&x, &keys(other, "d/sub/"), &fake),
                Some(DestinationInsideSource),
                "{other}"
            );
        }
        for other in [
            "http://10.0.0.6:9000",
            "http://10.0.0.5:9001",
            "https://nowhere.example:9000",
        ] {
            assert_eq!(
                relate_with(&x, &keys(other, "d/sub/"), &fake),
                None,
                "{other}"
            );
        }
    }

    #[test]
    fn local_folders_compare_by_canonical_path() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/sub")).unwrap();
        std::fs::create_dir_all(root.join("b")).unwrap();
        let p = |rel: &str| root.join(rel).display().to_string();
        assert_eq!(overlap(&p("a"), &p("a/sub/../"), None), Some(Same));
        assert_eq!(
            overlap(&p("a"), &p("b/../a/mirror/new"), None),
            Some(DestinationInsideSource),
            "a destination that does not exist yet, through '..'"
        );
        assert_eq!(
            overlap(&p("a/sub"), &p("a"), None),
            Some(SourceInsideDestination)
        );
        assert_eq!(overlap(&p("a"), &p("ab"), None), None);
        assert_eq!(overlap(&p("a"), &p("b"), None), None);
        assert_eq!(overlap(&p("a"), &p("nope/../b/x"), None), None);
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(root.join("a"), root.join("link")).unwrap();
            assert_eq!(overlap(&p("link"), &p("a"), None), Some(Same));
            assert_eq!(
                overlap(&p("a"), &p("link/mirror"), None),
                Some(DestinationInsideSource)
            );
            assert_eq!(
                overlap(&p("link/sub"), &format!("file://{}", p("a")), None),
                Some(SourceInsideDestination)
            );
        }
    }

    #[test]
    fn the_message_names_both_locations() {
        let r = remotes();
        let (s, d) = (
            Location::parse("garage:bkt/par/child", &r).unwrap(),
            Location::parse("garage_again:bkt/par", &r).unwrap(),
        );
        let e = check_with_env(
            &s,
            crate::store::remote_of(&s, &r),
            &d,
            crate::store::remote_of(&d, &r),
            &|_| None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("garage:bkt/par/child/")
                && e.contains("garage_again:bkt/par/")
                && e.contains("http://127.0.0.1:3900"),
            "{e}"
        );
    }

    /// Fails on the main of 2026-12-01, which used AWS_ENDPOINT_URL(_S3) as written.
    #[test]
    fn an_endpoint_variable_with_a_password_is_refused_unechoed() {
        let r = Remotes::default();
        let s = Location::parse("s3://b/x", &r).unwrap();
        let d = Location::parse("s3://c/x", &r).unwrap();
        let env = |k: &str| {
            (k == "AWS_ENDPOINT_URL_S3").then(|| "http://AKIA:hunter2@10.0.0.5:9000".to_string())
        };
        let e = check_with_env(&s, None, &d, None, &env).unwrap_err();
        assert!(matches!(e, OpenError::Refused { .. }), "{e:?}");
        let e = e.to_string();
        assert!(
            e.contains("AWS_ENDPOINT_URL_S3") && e.contains("_env"),
            "{e}"
        );
        assert!(!e.contains("hunter2") && !e.contains("AKIA"), "{e}");
    }
}

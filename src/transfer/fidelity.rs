//! What an object carries besides its bytes, and how it travels between stores: the five
//! content headers (Content-Type, Content-Encoding, Content-Language, Content-Disposition,
//! Cache-Control) and user metadata, on every way of copying (streamed, server-side, from a URL,
//! in parts). README's "Metadata" section has the table; this module is where it is decided.
//!
//! Where the source's properties come from — always an answer the copy gets anyway, never a
//! request of its own where the copy has none:
//! - a streamed copy: the GET of its bytes (a multipart copy reads its first part before it
//!   starts the upload, so the upload is created with them);
//! - a server-side copy of parts, a copy from a URL: the HEAD that learns the source's digests;
//! - a single CopyObject: one HEAD (the copy replaces the metadata to add moverctl's own keys);
//!   if it fails the object is streamed and its GET gives them;
//! - a local file: Content-Type guessed from the file name (`mime_guess`, as aws-cli does),
//!   with the file's mode and mtime in moverctl's keys.
//!
//! Names: S3 (`x-amz-meta-*`) and GCS (`x-goog-meta-*`) keep a user key as HTTP sends it
//! (lower case); Azure metadata names must be C# identifiers, so a key is written there with
//! every character other than a letter, a digit or `_` (and a leading digit) escaped as
//! `_xhhhh_` (its UTF-16 code in lower-case hex, .NET's `XmlConvert.EncodeName` rule; lower case
//! because HTTP clients show header names in lower case), and the `_` of a `_x` as `_x005f_`;
//! a name read from Azure is decoded by the same rule, so `owner-team` is `owner_x002d_team` on
//! Azure and `owner-team` again on S3. moverctl's own keys are identifiers
//! already and look the same everywhere.

use super::copy::context::{CopyError, Ctx, s3_answer_error};
use crate::checksum::{META_CRC64, META_SIZE, META_SRC_ETAG};
use crate::store::http::DigestHeaders;
use object_store::{Attribute, Attributes};

/// The five content headers, in the order README lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Header {
    ContentType,
    ContentEncoding,
    ContentLanguage,
    ContentDisposition,
    CacheControl,
}

impl Header {
    pub const ALL: [Header; 5] = [
        Header::ContentType,
        Header::ContentEncoding,
        Header::ContentLanguage,
        Header::ContentDisposition,
        Header::CacheControl,
    ];

    /// The HTTP header (lower case), as S3 and GCS take and every store answers it.
    pub fn name(self) -> &'static str {
        match self {
            Header::ContentType => "content-type",
            Header::ContentEncoding => "content-encoding",
            Header::ContentLanguage => "content-language",
            Header::ContentDisposition => "content-disposition",
            Header::CacheControl => "cache-control",
        }
    }

    /// The header an Azure Put Block List (or Put Blob) sets the property with.
    pub fn azure_name(self) -> &'static str {
        match self {
            Header::ContentType => "x-ms-blob-content-type",
            Header::ContentEncoding => "x-ms-blob-content-encoding",
            Header::ContentLanguage => "x-ms-blob-content-language",
            Header::ContentDisposition => "x-ms-blob-content-disposition",
            Header::CacheControl => "x-ms-blob-cache-control",
        }
    }

    pub fn attribute(self) -> Attribute {
        match self {
            Header::ContentType => Attribute::ContentType,
            Header::ContentEncoding => Attribute::ContentEncoding,
            Header::ContentLanguage => Attribute::ContentLanguage,
            Header::ContentDisposition => Attribute::ContentDisposition,
            Header::CacheControl => Attribute::CacheControl,
        }
    }

    pub fn of_name(name: &str) -> Option<Header> {
        Header::ALL
            .into_iter()
            .find(|h| h.name().eq_ignore_ascii_case(name))
    }

    fn of_attribute(a: &Attribute) -> Option<Header> {
        Header::ALL.into_iter().find(|h| &h.attribute() == a)
    }
}

/// What a source object carries besides its bytes, names in their portable form (Azure's
/// escaping undone).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectMeta {
    pub headers: Vec<(Header, String)>,
    pub user: Vec<(String, String)>,
    /// S3's `x-amz-tagging-count`: the object has tags (read with GetObjectTagging).
    pub tag_count: u32,
}

impl ObjectMeta {
    /// From object_store's attributes of a GET or HEAD (`azure`: the names are Azure's).
    pub fn of_attributes(
        attrs: &Attributes,
        headers: Option<&DigestHeaders>,
        azure: bool,
    ) -> ObjectMeta {
        let mut m = ObjectMeta::default();
        for (k, v) in attrs {
            if let Some(h) = Header::of_attribute(k) {
                m.headers.push((h, v.to_string()));
            } else if let Attribute::Metadata(name) = k {
                let name = if azure {
                    from_azure(name)
                } else {
                    name.to_string()
                };
                m.user.push((name, v.to_string()));
            }
        }
        m.tag_count = headers.map_or(0, tag_count);
        m.sort();
        m
    }

    /// From the headers of one of moverctl's own requests (a presigned HEAD).
    pub fn of_headers(h: &DigestHeaders) -> ObjectMeta {
        let mut m = ObjectMeta::default();
        for (k, v) in &h.0 {
            let k = k.to_ascii_lowercase();
            if let Some(hd) = Header::of_name(&k) {
                m.headers.push((hd, v.clone()));
            } else if let Some(n) = k
                .strip_prefix("x-amz-meta-")
                .or_else(|| k.strip_prefix("x-goog-meta-"))
            {
                m.user.push((n.to_string(), v.clone()));
            } else if let Some(n) = k.strip_prefix("x-ms-meta-") {
                m.user.push((from_azure(n), v.clone()));
            }
        }
        m.tag_count = tag_count(h);
        m.sort();
        m
    }

    fn sort(&mut self) {
        self.headers.sort();
        self.user.sort();
    }

    pub fn header(&self, h: Header) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| *k == h)
            .map(|(_, v)| v.as_str())
    }
}

fn tag_count(h: &DigestHeaders) -> u32 {
    h.get("x-amz-tagging-count")
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// `--metadata-set K=V` (repeatable) and `--no-metadata`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetadataPolicy {
    /// `--no-metadata`: the source's user metadata is not copied (its content headers and
    /// moverctl's own keys still are).
    pub no_user: bool,
    /// `--metadata-set`: set on every object written, over what the source has.
    pub set: Vec<(Setting, String)>,
}

/// What one `--metadata-set` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Setting {
    Header(Header),
    User(String),
}

impl MetadataPolicy {
    /// Whether the policy changes anything a store would copy by itself.
    pub fn is_default(&self) -> bool {
        *self == MetadataPolicy::default()
    }

    /// Parses one `--metadata-set K=V`: K a content header (`content-type`, any case) or a user
    /// key (letters, digits, `-`, `_`, `.`; kept in lower case, as S3 keeps it); not one of
    /// moverctl's own keys.
    pub fn parse_set(kv: &str) -> Result<(Setting, String), String> {
        let Some((k, v)) = kv.split_once('=') else {
            return Err(format!("--metadata-set {kv:?}: expected KEY=VALUE"));
        };
        let k = k.trim();
        if let Some(h) = Header::of_name(k) {
            return Ok((Setting::Header(h), v.to_string()));
        }
        if k.is_empty()
            || !k
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        {
            return Err(format!(
                "--metadata-set {kv:?}: a key is a content header (content-type, content-encoding, \
                 content-language, content-disposition, cache-control) or a user key of letters, \
                 digits, '-', '_' and '.'"
            ));
        }
        let k = k.to_ascii_lowercase();
        if k.starts_with("moverctl_") {
            return Err(format!(
                "--metadata-set {kv:?}: keys starting with moverctl_ are moverctl's own"
            ));
        }
        if v.bytes().any(|b| b.is_ascii_control()) {
            return Err(format!(
                "--metadata-set {kv:?}: the value has a control character"
            ));
        }
        Ok((Setting::User(k), v.to_string()))
    }
}

/// Keys moverctl derives anew for every copy: a source's values (written for its own source)
/// are not carried over.
fn derived(k: &str) -> bool {
    [META_CRC64, META_SRC_ETAG, META_SIZE]
        .iter()
        .any(|m| k.eq_ignore_ascii_case(m))
}

/// The content headers and user metadata to write at the destination: the source's (`meta`),
/// a Content-Type guessed from `local_name` (a local file) where none is set, then the policy's
/// settings. User keys are named for the destination (`azure`: escaped, see the module
/// comment). moverctl's own derived keys are the caller's to add after.
pub fn write_attributes(
    policy: &MetadataPolicy,
    meta: Option<&ObjectMeta>,
    local_name: Option<&str>,
    azure: bool,
    a: &mut Attributes,
) {
    let name = |k: &str| if azure { to_azure(k) } else { k.to_string() };
    if let Some(m) = meta {
        for (h, v) in &m.headers {
            a.insert(h.attribute(), v.clone().into());
        }
        for (k, v) in &m.user {
            if derived(k) || (policy.no_user && !k.starts_with("moverctl_")) {
                continue;
            }
            a.insert(Attribute::Metadata(name(k).into()), v.clone().into());
        }
    }
    if let Some(file) = local_name
        && a.get(&Attribute::ContentType).is_none()
        && let Some(t) = mime_guess::from_path(file).first()
    {
        a.insert(Attribute::ContentType, t.essence_str().to_string().into());
    }
    for (s, v) in &policy.set {
        match s {
            Setting::Header(h) => a.insert(h.attribute(), v.clone().into()),
            Setting::User(k) => a.insert(Attribute::Metadata(name(k).into()), v.clone().into()),
        };
    }
}

/// A user key as an Azure metadata name (a C# identifier), reversibly (see the module comment).
pub fn to_azure(k: &str) -> String {
    let mut out = String::with_capacity(k.len());
    let chars: Vec<char> = k.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let escape = if c == '_' {
            matches!(chars.get(i + 1), Some('x' | 'X'))
        } else {
            !(c.is_ascii_alphanumeric() && !(i == 0 && c.is_ascii_digit()))
        };
        if escape {
            let mut buf = [0u16; 2];
            for unit in c.encode_utf16(&mut buf) {
                out.push_str(&format!("_x{unit:04x}_"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// An Azure metadata name as the user key it stands for ([`to_azure`] undone).
pub fn from_azure(k: &str) -> String {
    let b = k.as_bytes();
    let mut units: Vec<u16> = Vec::with_capacity(k.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'_'
            && i + 7 <= b.len()
            && matches!(b[i + 1], b'x' | b'X')
            && b[i + 6] == b'_'
            && let Ok(u) = u16::from_str_radix(&k[i + 2..i + 6], 16)
            && k[i + 2..i + 6].bytes().all(|c| c.is_ascii_hexdigit())
        {
            units.push(u);
            i += 7;
            continue;
        }
        let c = k[i..].chars().next().expect("in bounds");
        let mut buf = [0u16; 2];
        units.extend_from_slice(c.encode_utf16(&mut buf));
        i += c.len_utf8();
    }
    String::from_utf16_lossy(&units)
}

/// The source's S3 object tags, where both ends are S3 and the source's answer counted some
/// (`x-amz-tagging-count`): one GetObjectTagging, presigned with the source's credentials. A
/// server-side CopyObject keeps them by itself (its tagging directive is COPY); every other
/// write to S3 sends them as `x-amz-tagging`.
pub(super) async fn source_tags(
    ctx: &Ctx,
    src: &crate::store::list::Entry,
    meta: Option<&ObjectMeta>,
) -> Result<object_store::TagSet, CopyError> {
    use object_store::signer::{Method, SignedUrlOptions, Signer};
    use std::sync::atomic::Ordering::Relaxed;
    let mut tags = object_store::TagSet::default();
    let (Some(s3), Some(m)) = (ctx.src.as_s3(), meta) else {
        return Ok(tags);
    };
    if m.tag_count == 0 || ctx.dst.as_s3().is_none() || !ctx.dst.caps.keeps_metadata {
        return Ok(tags);
    }
    let what = "reading the source's tags (GetObjectTagging)";
    let path = ctx.src.path_of(&src.key).map_err(|e| CopyError::Store {
        what: "source key",
        source: e.into(),
    })?;
    let opts = SignedUrlOptions::default().with_query([("tagging", String::new())]);
    let mut url = s3
        .signed_url_opts(
            Method::GET,
            &path,
            std::time::Duration::from_secs(300),
            &opts,
        )
        .await
        .map_err(|e| CopyError::Store { what, source: e })?;
    if ctx.src.is_anonymous() {
        crate::store::s3list::strip_signature(&mut url);
    }
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    let client = CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(60))
            .build()
            .unwrap_or_default()
    });
    ctx.counters.get.fetch_add(1, Relaxed);
    ctx.limits.take_request().await;
    // A reqwest error would print the presigned URL (a signature): only its kind is kept.
    let resp = client.get(url).send().await.map_err(|e| {
        let msg = if e.is_timeout() {
            "the request timed out"
        } else {
            "the connection failed"
        };
        s3_answer_error(what, msg.into(), None)
    })?;
    let status = resp.status().as_u16();
    let body = resp.text().await.unwrap_or_default();
    if !(200..300).contains(&status) {
        return Err(s3_answer_error(
            what,
            format!("the store answered {status}"),
            Some(status),
        ));
    }
    for (k, v) in parse_tagging(&body) {
        tags.push(&k, &v);
    }
    Ok(tags)
}

/// The `<Tag><Key>…</Key><Value>…</Value></Tag>` pairs of a GetObjectTagging answer.
fn parse_tagging(body: &str) -> Vec<(String, String)> {
    let field = |t: &str, name: &str| -> Option<String> {
        let open = format!("<{name}>");
        let close = format!("</{name}>");
        let start = t.find(&open)? + open.len();
        let end = t[start..].find(&close)? + start;
        Some(unescape(&t[start..end]))
    };
    body.split("<Tag>")
        .skip(1)
        .filter_map(|t| {
            let t = t.split("</Tag>").next()?;
            Some((field(t, "Key")?, field(t, "Value").unwrap_or_default()))
        })
        .collect()
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn azure_names_are_identifiers_and_map_back() {
        for k in [
            "owner-team",
            "owner",
            "moverctl_mtime",
            "a.b",
            "9lives",
            "x_x",
            "_x002d_",
            "under_score",
            "é",
            "",
        ] {
            let a = to_azure(k);
            assert!(
                a.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && !a.starts_with(|c: char| c.is_ascii_digit()),
                "{k} -> {a}"
            );
            assert_eq!(from_azure(&a), k, "{k} -> {a}");
        }
        assert_eq!(to_azure("owner-team"), "owner_x002d_team");
        assert_eq!(to_azure("moverctl_mtime"), "moverctl_mtime");
    }

    #[test]
    fn tagging_answers_parse() {
        let body = "<?xml version=\"1.0\"?><Tagging><TagSet><Tag><Key>a</Key><Value>1 &amp; 2</Value></Tag><Tag><Key>b</Key><Value></Value></Tag></TagSet></Tagging>";
        assert_eq!(
            parse_tagging(body),
            vec![("a".into(), "1 & 2".into()), ("b".into(), String::new())]
        );
    }

    #[test]
    fn settings_parse() {
        assert_eq!(
            MetadataPolicy::parse_set("Content-Type=text/plain").unwrap(),
            (Setting::Header(Header::ContentType), "text/plain".into())
        );
        assert_eq!(
            MetadataPolicy::parse_set("Owner-Team=a=b").unwrap(),
            (Setting::User("owner-team".into()), "a=b".into())
        );
        assert!(MetadataPolicy::parse_set("novalue").is_err());
        assert!(MetadataPolicy::parse_set("bad key=v").is_err());
        assert!(MetadataPolicy::parse_set("moverctl_mtime=1").is_err());
    }

    #[test]
    fn local_files_get_a_type_from_their_name_and_settings_win() {
        let mut a = Attributes::new();
        write_attributes(
            &MetadataPolicy::default(),
            None,
            Some("d/x.json"),
            false,
            &mut a,
        );
        assert_eq!(
            a.get(&Attribute::ContentType).map(|v| v.to_string()),
            Some("application/json".into())
        );
        let policy = MetadataPolicy {
            no_user: true,
            set: vec![
                (Setting::Header(Header::ContentType), "text/x".into()),
                (Setting::User("k-1".into()), "v".into()),
            ],
        };
        let meta = ObjectMeta {
            user: vec![
                ("owner".into(), "a".into()),
                ("moverctl_mtime".into(), "t".into()),
                ("moverctl_src_etag".into(), "old".into()),
            ],
            ..Default::default()
        };
        let mut a = Attributes::new();
        write_attributes(&policy, Some(&meta), Some("x.json"), true, &mut a);
        let got = |k: &str| {
            a.get(&Attribute::Metadata(k.to_string().into()))
                .map(|v| v.to_string())
        };
        assert_eq!(got("owner"), None);
        assert_eq!(got("moverctl_mtime").as_deref(), Some("t"));
        assert_eq!(got("moverctl_src_etag"), None);
        assert_eq!(got("k_x002d_1").as_deref(), Some("v"));
        assert_eq!(
            a.get(&Attribute::ContentType).map(|v| v.to_string()),
            Some("text/x".into())
        );
    }
}

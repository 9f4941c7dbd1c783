//! What the checks (`super::checks`), the request-rate measurements (`super::rates`) and the raw
//! S3 checks (`super::s3raw`) share: incompressible test bytes and an error in one short line.

use bytes::Bytes;

/// Incompressible test bytes from a seed (xorshift64*), so no layer can shortcut the transfer.
pub(crate) fn test_bytes(seed: u64, len: usize) -> Bytes {
    let mut x = seed | 1;
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        v.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    v.truncate(len);
    Bytes::from(v)
}

/// An error in one short line: the S3 error code and message when the text carries them, else
/// the first 160 characters.
pub(crate) fn short(e: &dyn std::fmt::Display) -> String {
    let s: String = e
        .to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let tag = |t: &str| {
        let open = format!("<{t}>");
        let start = s.find(&open)? + open.len();
        let end = s[start..].find(&format!("</{t}>"))? + start;
        Some(s[start..end].to_string())
    };
    if let Some(code) = tag("Code") {
        return match tag("Message") {
            Some(m) => truncate(&format!("{code}: {m}"), 90),
            None => code,
        };
    }
    truncate(&s, 160)
}

/// At most `n` characters, cut at a word boundary when there is one, with '…' when cut.
fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let head: String = s.chars().take(n).collect();
    let cut = match head.rfind(' ') {
        Some(i) if i > n / 2 => &head[..i],
        _ => head.as_str(),
    };
    format!("{}…", cut.trim_end_matches([',', ':', ';']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_errors_keep_the_s3_code() {
        let e = "Client error with status 400 Bad Request: <?xml version=\"1.0\"?>\n<Error><Code>BadDigest</Code><Message>The Content-MD5 you specified did not match</Message></Error>";
        assert_eq!(
            short(&e),
            "BadDigest: The Content-MD5 you specified did not match"
        );
        assert_eq!(short(&"x".repeat(200)).chars().count(), 161);
        let garage = "<Code>InvalidDigest</Code><Message>Invalid digest: Failed to validate checksum for algorithm Sha256: calculated Some(Sha256([108, 1, 2]))</Message>";
        assert_eq!(
            short(&garage),
            "InvalidDigest: Invalid digest: Failed to validate checksum for algorithm Sha256…"
        );
    }

    #[test]
    fn test_bytes_are_deterministic_and_sized() {
        assert_eq!(test_bytes(7, 1001), test_bytes(7, 1001));
        assert_ne!(test_bytes(7, 64), test_bytes(8, 64));
        assert_eq!(test_bytes(7, 13).len(), 13);
    }
}

//! "Did you mean …?" for catalog ids (providers, aliases, regions, classes, fast tiers): the
//! known id closest to what was typed, by edit distance, when it is close enough to be a typo.

/// The known id nearest to `given` (case-insensitive edit distance, or `given` a prefix of it),
/// when it is within about a third of its length; `None` when nothing is that close.
pub fn nearest<'a>(given: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let g = given.trim().to_ascii_lowercase();
    if g.is_empty() {
        return None;
    }
    let mut best: Option<(usize, &'a str)> = None;
    for k in known {
        let kl = k.to_ascii_lowercase();
        let d = if g.len() >= 3 && kl.starts_with(&g) {
            // `backblaze` for `backblaze-b2`: a prefix counts as one edit.
            1
        } else {
            distance(&g, &kl)
        };
        let limit = (k.chars().count().max(g.chars().count()) / 3).max(1);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, k));
        }
    }
    best.map(|(_, k)| k)
}

/// `" (did you mean X?)"` for an error message, or nothing.
pub fn hint<'a>(given: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    nearest(given, known)
        .map(|k| format!(" (did you mean {k}?)"))
        .unwrap_or_default()
}

/// Levenshtein distance over characters; two rows, memory linear in the shorter word.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROVIDERS: &[&str] = &[
        "aws",
        "azure",
        "backblaze-b2",
        "cloudflare-r2",
        "gcp",
        "wasabi",
    ];

    #[test]
    fn typos_find_the_id() {
        let p = || PROVIDERS.iter().copied();
        assert_eq!(nearest("azur", p()), Some("azure"));
        assert_eq!(nearest("AWS", p()), Some("aws"));
        assert_eq!(nearest("wasbi", p()), Some("wasabi"));
        assert_eq!(nearest("backblaze", p()), Some("backblaze-b2"));
        assert_eq!(nearest("cloudflare-r3", p()), Some("cloudflare-r2"));
        assert_eq!(
            nearest("us-est-1", ["us-east-1", "us-east-2", "eu-west-1"]),
            Some("us-east-1")
        );
    }

    #[test]
    fn far_names_find_nothing() {
        let p = || PROVIDERS.iter().copied();
        assert_eq!(nearest("lambda", p()), None);
        assert_eq!(nearest("runpod", p()), None);
        assert_eq!(nearest("", p()), None);
        assert_eq!(hint("lambda", p()), "");
        assert_eq!(hint("azur", p()), " (did you mean azure?)");
    }
}

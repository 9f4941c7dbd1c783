//! Words that agree with their numbers: "1 object", "2 objects", "1 full read a month".

/// `n` and the noun, singular for exactly one: `count(1, "object")` is "1 object",
/// `count(3, "object")` "3 objects". Nouns whose plural is not the singular plus "s" use
/// [`count_as`].
pub fn count(n: u64, noun: &str) -> String {
    count_as(n, noun, &format!("{noun}s"))
}

/// [`count`] with the plural spelled out: `count_as(2, "prefix", "prefixes")`.
pub fn count_as(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The noun alone, agreeing with an amount that need not be whole (`1` is singular, `0.5` and
/// `2.5` plural): "1 full read a month", "2.5 full reads a month".
pub fn noun_dec(d: rust_decimal::Decimal, noun_: &str) -> String {
    noun(
        if d == rust_decimal::Decimal::ONE {
            1
        } else {
            2
        },
        noun_,
    )
}

/// `n`, the noun and "is" / "are": "1 object is", "2 objects are".
pub fn is_are(n: u64, noun_: &str) -> String {
    format!("{} {}", count(n, noun_), if n == 1 { "is" } else { "are" })
}

/// `n`, the noun and "was" / "were": "1 object was", "2 objects were".
pub fn were(n: u64, noun_: &str) -> String {
    format!(
        "{} {}",
        count(n, noun_),
        if n == 1 { "was" } else { "were" }
    )
}

/// The noun alone, agreeing with `n` (for sentences that print the number elsewhere).
pub fn noun(n: u64, noun: &str) -> String {
    if n == 1 {
        noun.to_string()
    } else {
        format!("{noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn singular_for_one_only() {
        assert_eq!(count(1, "object"), "1 object");
        assert_eq!(count(0, "object"), "0 objects");
        assert_eq!(count(2, "full read"), "2 full reads");
        assert_eq!(count_as(1, "prefix", "prefixes"), "1 prefix");
        assert_eq!(count_as(3, "prefix", "prefixes"), "3 prefixes");
        assert_eq!(noun(1, "worker"), "worker");
        assert_eq!(is_are(1, "object"), "1 object is");
        assert_eq!(were(2, "multipart upload"), "2 multipart uploads were");
        assert_eq!(noun(8, "worker"), "workers");
        let d = |s: &str| s.parse::<rust_decimal::Decimal>().unwrap();
        assert_eq!(noun_dec(d("1"), "full read"), "full read");
        assert_eq!(noun_dec(d("1.0"), "full read"), "full read");
        assert_eq!(noun_dec(d("0.5"), "full read"), "full reads");
    }
}

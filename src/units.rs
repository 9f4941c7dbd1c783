//! Human units in and out: byte sizes (`2PB`, `200TiB`), counts (`40M`), rates (`100Gbps`,
//! `200MiB/s`) and durations. Parsing is exact (decimal), and every error says what was expected.

use rust_decimal::Decimal;
use rust_decimal::prelude::*;
use std::str::FromStr;

fn split_number(s: &str) -> (&str, &str) {
    let idx = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_' || c == ','))
        .unwrap_or(s.len());
    (&s[..idx], s[idx..].trim())
}

fn parse_decimal(num: &str, whole: &str, what: &str) -> Result<Decimal, String> {
    let cleaned: String = num.chars().filter(|c| *c != '_' && *c != ',').collect();
    if cleaned.is_empty() {
        return Err(format!("{whole:?} is not {what}: it has no number"));
    }
    Decimal::from_str(&cleaned)
        .map_err(|_| format!("{whole:?} is not {what}: {num:?} is not a number"))
}

fn check_sign(s: &str, what: &str) -> Result<(), String> {
    if s.trim_start().starts_with('-') {
        return Err(format!("{s:?} is negative; {what} must be zero or more"));
    }
    Ok(())
}

/// A size as rclone writes it (`--min-size`, `--bwlimit`): a number with one suffix letter
/// `B K M G T P` (any case, optionally followed by `i` or `iB`), each 1024 times the last, and
/// KiB when there is none (`10M` = 10 MiB, `100` = 100 KiB). SI units with a `B` (`10MB`, `1GB`)
/// keep moverctl's meaning (powers of 1000), as everywhere else in moverctl.
pub fn parse_rclone_size(s: &str) -> Result<u64, String> {
    check_sign(s, "a size")?;
    let t = s.trim();
    let (num, unit) = split_number(t);
    let n = parse_decimal(num, t, "a size")?;
    let u = unit.to_ascii_lowercase();
    let letter = u
        .strip_suffix("ib")
        .or_else(|| u.strip_suffix('i'))
        .unwrap_or(&u);
    let shift = match letter {
        "" => 10,
        "b" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        "p" => 50,
        "kb" | "mb" | "gb" | "tb" | "pb" => return parse_bytes(t),
        _ => {
            return Err(format!(
                "{t:?} is not a size: unknown suffix {unit:?} (rclone's B, K, M, G, T, P are powers \
                 of 1024; a bare number is KiB)"
            ));
        }
    };
    (n * Decimal::from(1u64 << shift))
        .round()
        .to_u64()
        .ok_or_else(|| format!("{t:?} is too large"))
}

/// Parse a byte size: `2PB`, `200TiB`, `1.5 GB`, `512`, `64k` (k, M, G… are decimal; Ki, Mi… binary).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    check_sign(s, "a size")?;
    let t = s.trim();
    let (num, unit) = split_number(t);
    let n = parse_decimal(num, t, "a size")?;
    let u = unit.trim_end_matches(['B', 'b']).trim();
    let mult: u128 = match u.to_ascii_lowercase().as_str() {
        "" => 1,
        "k" => 1_000,
        "m" => 1_000_000,
        "g" => 1_000_000_000,
        "t" => 1_000_000_000_000,
        "p" => 1_000_000_000_000_000,
        "e" => 1_000_000_000_000_000_000,
        "ki" => 1 << 10,
        "mi" => 1 << 20,
        "gi" => 1 << 30,
        "ti" => 1 << 40,
        "pi" => 1 << 50,
        "ei" => 1 << 60,
        _ => {
            return Err(format!(
                "{t:?} is not a size: unknown unit {unit:?} (use B, KB, MB, GB, TB, PB or KiB, MiB, GiB, TiB, PiB)"
            ));
        }
    };
    let v = n * Decimal::from(mult);
    if v.fract() != Decimal::ZERO && mult > 1 {
        // 1.5 KiB = 1536 bytes is fine; 1.0001 B is not a byte count.
        return v
            .round()
            .to_u64()
            .ok_or_else(|| format!("{t:?} is too large"));
    }
    if v.fract() != Decimal::ZERO {
        return Err(format!("{t:?} is not a whole number of bytes"));
    }
    v.to_u64()
        .ok_or_else(|| format!("{t:?} is too large (at most 16 EiB)"))
}

/// Parse a count: `40M`, `1.2k`, `40000000`, `3B` (billion).
pub fn parse_count(s: &str) -> Result<u64, String> {
    check_sign(s, "a count")?;
    let t = s.trim();
    let (num, unit) = split_number(t);
    let n = parse_decimal(num, t, "a count")?;
    let mult: u64 = match unit {
        "" => 1,
        "k" | "K" => 1_000,
        "M" | "m" => 1_000_000,
        "G" | "B" | "bn" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        _ => {
            return Err(format!(
                "{t:?} is not a count: unknown suffix {unit:?} (use k, M or B)"
            ));
        }
    };
    let v = n * Decimal::from(mult);
    if v.fract() != Decimal::ZERO {
        return Err(format!("{t:?} is not a whole number"));
    }
    v.to_u64().ok_or_else(|| format!("{t:?} is too large"))
}

/// Parse a rate and return bytes per second (exact decimal): `100Gbps`, `10Gbit/s`, `1.2GB/s`,
/// `200MiB/s`. Bits when the unit says `bps`/`bit`, bytes when it says `B/s`.
pub fn parse_rate(s: &str) -> Result<Decimal, String> {
    check_sign(s, "a rate")?;
    let t = s.trim();
    let (num, unit) = split_number(t);
    let n = parse_decimal(num, t, "a rate")?;
    let u = unit.trim();
    let (prefix, per_byte) = if let Some(p) = u.strip_suffix("bps") {
        (p, false)
    } else if let Some(p) = u.strip_suffix("bit/s") {
        (p, false)
    } else if let Some(p) = u.strip_suffix("b/s") {
        (p, false)
    } else if let Some(p) = u.strip_suffix("B/s") {
        (p, true)
    } else if let Some(p) = u.strip_suffix("Bps") {
        (p, true)
    } else {
        return Err(format!(
            "{t:?} is not a rate: give a unit such as 100Gbps, 10Gbit/s, 1.2GB/s or 200MiB/s"
        ));
    };
    let mult: u128 = match prefix.trim() {
        "" => 1,
        "k" | "K" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        other => return Err(format!("{t:?} is not a rate: unknown prefix {other:?}")),
    };
    let mut v = n * Decimal::from(mult);
    if !per_byte {
        v /= Decimal::from(8);
    }
    if v.is_zero() {
        return Err(format!("{t:?} is zero; a rate must be above zero"));
    }
    Ok(v)
}

const UNITS_DEC: [&str; 7] = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];

/// `2.00 PB`, `50.0 MB`, `512 B` (decimal units, three significant digits).
pub fn fmt_bytes(b: u64) -> String {
    let mut v = Decimal::from(b);
    let k = Decimal::from(1000);
    let mut i = 0;
    while v >= k && i < UNITS_DEC.len() - 1 {
        v /= k;
        i += 1;
    }
    if i == 0 {
        return format!("{b} B");
    }
    format!("{} {}", three_sig(v), UNITS_DEC[i])
}

fn three_sig(v: Decimal) -> String {
    let dp = if v >= Decimal::from(100) {
        0
    } else if v >= Decimal::from(10) {
        1
    } else {
        2
    };
    format!("{:.*}", dp as usize, v.round_dp(dp))
}

/// `40.0 M`, `1.20 k`, `512`.
pub fn fmt_count(n: u64) -> String {
    let v = Decimal::from(n);
    if n >= 1_000_000_000 {
        format!("{} B", three_sig(v / Decimal::from(1_000_000_000u64)))
    } else if n >= 1_000_000 {
        format!("{} M", three_sig(v / Decimal::from(1_000_000)))
    } else if n >= 10_000 {
        format!("{} k", three_sig(v / Decimal::from(1_000)))
    } else {
        n.to_string()
    }
}

/// Bytes per second as bits: `100 Gbit/s`, `850 Mbit/s`.
pub fn fmt_rate_bits(bytes_per_sec: Decimal) -> String {
    let bits = bytes_per_sec * Decimal::from(8);
    let units = ["bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"];
    let mut v = bits;
    let mut i = 0;
    while v >= Decimal::from(1000) && i < units.len() - 1 {
        v /= Decimal::from(1000);
        i += 1;
    }
    format!("{} {}", three_sig(v).trim_end_matches(".00"), units[i])
}

/// `1 d 20 h`, `3 h 12 min`, `42 s`.
pub fn fmt_duration(secs: Decimal) -> String {
    let s = secs.ceil().to_u64().unwrap_or(u64::MAX);
    let (d, h, m) = (s / 86_400, (s % 86_400) / 3600, (s % 3600) / 60);
    if d > 0 {
        format!("{d} d {h} h")
    } else if h > 0 {
        format!("{h} h {m} min")
    } else if m > 0 {
        format!("{m} min {} s", s % 60)
    } else {
        format!("{s} s")
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn rclone_sizes_are_binary_with_kib_by_default() {
        for (given, want) in [
            ("10M", 10u64 << 20),
            ("10m", 10 << 20),
            ("10Mi", 10 << 20),
            ("10MiB", 10 << 20),
            ("1.5G", 3 << 29),
            ("100", 100 << 10),
            ("100K", 100 << 10),
            ("7B", 7),
            ("10MB", 10_000_000),
        ] {
            assert_eq!(parse_rclone_size(given), Ok(want), "{given}");
        }
        for bad in ["10X", "-1M", "M", ""] {
            assert!(parse_rclone_size(bad).is_err(), "{bad}");
        }
    }
    use super::*;

    #[test]
    fn bytes() {
        assert_eq!(parse_bytes("2PB").unwrap(), 2_000_000_000_000_000);
        assert_eq!(parse_bytes("200TiB").unwrap(), 200 * (1u64 << 40));
        assert_eq!(parse_bytes("1.5 KiB").unwrap(), 1536);
        assert_eq!(parse_bytes("512").unwrap(), 512);
        assert_eq!(parse_bytes("16MB").unwrap(), 16_000_000);
        assert!(parse_bytes("-5GB").unwrap_err().contains("negative"));
        assert!(
            parse_bytes("12 furlongs")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(parse_bytes("GB").unwrap_err().contains("no number"));
        assert!(parse_bytes("1.5").is_err());
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count("40M").unwrap(), 40_000_000);
        assert_eq!(parse_count("1.2k").unwrap(), 1200);
        assert_eq!(parse_count("40,000,000").unwrap(), 40_000_000);
        assert!(parse_count("-1").is_err());
        assert!(parse_count("1.5").is_err());
        assert!(parse_count("3X").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(
            parse_rate("100Gbps").unwrap(),
            Decimal::from(12_500_000_000u64)
        );
        assert_eq!(
            parse_rate("10Gbit/s").unwrap(),
            Decimal::from(1_250_000_000u64)
        );
        assert_eq!(parse_rate("200MiB/s").unwrap(), Decimal::from(200u64 << 20));
        assert!(parse_rate("100").is_err());
        assert!(parse_rate("0Gbps").is_err());
    }

    #[test]
    fn formats() {
        assert_eq!(fmt_bytes(2_000_000_000_000_000), "2.00 PB");
        assert_eq!(fmt_bytes(50_000_000), "50.0 MB");
        assert_eq!(fmt_bytes(512), "512 B");
        assert_eq!(fmt_count(40_000_000), "40.0 M");
        assert_eq!(fmt_duration(Decimal::from(158_400)), "1 d 20 h");
        assert_eq!(
            fmt_rate_bits(Decimal::from(12_500_000_000u64)),
            "100 Gbit/s"
        );
    }
}

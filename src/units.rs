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

/// What a number written without a unit means: bytes (moverctl's flags: `--part-size`,
/// `--bytes`, `probe --size`) or KiB (the flags rclone shares: `--min-size`, `--max-size`,
/// `--bwlimit`, where rclone reads `100` as 100 KiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bare {
    Bytes,
    KiB,
}

/// The one size convention of every flag (see [`SIZE_UNITS`]): the multiplier of a unit, `None`
/// for no unit, or why the unit is refused.
fn size_unit(whole: &str, unit: &str) -> Result<Option<u128>, String> {
    let chars: Vec<char> = unit.chars().collect();
    let Some((&first, rest)) = chars.split_first() else {
        return Ok(None);
    };
    if rest.is_empty() && (first == 'b' || first == 'B') {
        return Ok(Some(1));
    }
    let power = match first.to_ascii_uppercase() {
        'K' => 1,
        'M' => 2,
        'G' => 3,
        'T' => 4,
        'P' => 5,
        'E' => 6,
        _ => {
            return Err(format!(
                "{whole:?} is not a size: unknown unit {unit:?} ({SIZE_UNITS_SHORT})"
            ));
        }
    };
    let binary = |p: u32| Ok(Some(1u128 << (10 * p)));
    let decimal = |p: u32| Ok(Some(10u128.pow(3 * p)));
    let bits = || {
        let n = whole[..whole.len() - unit.len()].trim();
        let p = first.to_ascii_uppercase();
        Err(format!(
            "{whole:?} is ambiguous: a lowercase b means bits (as in 10Gbps); for a size write \
             {n}{p} or {n}{p}iB (powers of 1024) or {n}{p}B (powers of 1000)"
        ))
    };
    match rest {
        [] | ['i' | 'I'] | ['i' | 'I', 'B'] => binary(power),
        ['B'] => decimal(power),
        ['b'] | ['i' | 'I', 'b'] => bits(),
        _ => Err(format!(
            "{whole:?} is not a size: unknown unit {unit:?} ({SIZE_UNITS_SHORT})"
        )),
    }
}

/// The size convention, in one line, for error messages.
const SIZE_UNITS_SHORT: &str = "use 64M or 64MiB = 64 x 1024^2 bytes, 64MB = 64 x 1000^2, 64B = bytes; \
     K M G T P alike";

/// The size convention every size flag of every command follows, as `--help` states it.
pub const SIZE_UNITS: &str = "\
Sizes (every size flag): K, M, G, T, P are powers of 1024, as in rclone (64M = 64 MiB =
67,108,864 bytes; also written 64Mi or 64MiB, any case); spelled out with a B, KB MB GB TB PB
are powers of 1000, as written (64MB = 64,000,000 bytes); B or b alone is bytes. A lowercase b
after a letter (64Mb, 2Pb) means bits and is refused. A bare number is bytes, except in the
flags rclone shares (--min-size, --max-size, --bwlimit), where it is KiB as in rclone. Rates
are a size per second (100MiB/s, 100M/s) or bits (1Gbps, 10Gbit/s: powers of 1000). Output:
progress, summaries, ls and status show powers of 1024 (KiB, MiB/s, GiB), as the flags' letters
mean; plan and providers show corpus sizes in powers of 1000 (TB, PB) as they are quoted, beside
each provider's own billed GB.";

/// Parse a size with the one convention ([`SIZE_UNITS`]): `64M` = `64MiB` = 64 x 2^20,
/// `64MB` = 64 x 10^6, `512B` = 512; a bare number means what `bare` says. Fractions are
/// rounded to a byte when there is a unit (`1.5K` = 1536); a bare fraction of bytes is refused.
pub fn parse_size_in(s: &str, bare: Bare) -> Result<u64, String> {
    check_sign(s, "a size")?;
    let t = s.trim();
    let (num, unit) = split_number(t);
    let n = parse_decimal(num, t, "a size")?;
    let mult = size_unit(t, unit)?.unwrap_or(match bare {
        Bare::Bytes => 1,
        Bare::KiB => 1 << 10,
    });
    let v = n
        .checked_mul(Decimal::from(mult))
        .ok_or_else(|| format!("{t:?} is too large (at most 16 EiB)"))?;
    if v.fract() != Decimal::ZERO && mult == 1 {
        return Err(format!("{t:?} is not a whole number of bytes"));
    }
    v.round()
        .to_u64()
        .ok_or_else(|| format!("{t:?} is too large (at most 16 EiB)"))
}

/// A size whose bare number is bytes (`--part-size`, `--bytes`, `probe --size`, …).
pub fn parse_size(s: &str) -> Result<u64, String> {
    parse_size_in(s, Bare::Bytes)
}

/// A size in a flag rclone shares (`--min-size`, `--max-size`, `--bwlimit`): a bare number is
/// KiB, as rclone reads it; every unit as [`parse_size`].
pub fn parse_rclone_size(s: &str) -> Result<u64, String> {
    parse_size_in(s, Bare::KiB)
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

/// Parse a rate and return bytes per second (exact decimal): a size per second as every size
/// flag writes it (`200MiB/s` = `200M/s` binary, `1.2GB/s` and `1.2GBps` decimal), or bits
/// (`100Gbps`, `10Gbit/s`, `10Mb/s`: k, M, G, T are powers of 1000 as networks count, Ki, Mi…
/// of 1024).
pub fn parse_rate(s: &str) -> Result<Decimal, String> {
    check_sign(s, "a rate")?;
    let t = s.trim();
    let (num, unit) = split_number(t);
    let n = parse_decimal(num, t, "a rate")?;
    let u = unit.trim();
    let bits = ["bps", "bit/s", "b/s"]
        .iter()
        .find_map(|suffix| u.strip_suffix(suffix));
    let v = if let Some(prefix) = bits {
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
        n * Decimal::from(mult) / Decimal::from(8)
    } else {
        let size = u
            .strip_suffix("/s")
            .map(str::to_string)
            .or_else(|| u.strip_suffix("ps").map(str::to_string))
            .filter(|s| !s.trim().is_empty());
        let Some(size) = size else {
            return Err(format!(
                "{t:?} is not a rate: give a unit such as 200MiB/s (or 200M/s), 1.2GB/s, 100Gbps \
                 or 10Gbit/s"
            ));
        };
        let mult = size_unit(t, size.trim())
            .map_err(|e| e.replacen("a size", "a rate", 1))?
            .unwrap_or(1);
        n.checked_mul(Decimal::from(mult))
            .ok_or_else(|| format!("{t:?} is too large"))?
    };
    if v.is_zero() {
        return Err(format!("{t:?} is zero; a rate must be above zero"));
    }
    Ok(v)
}

const UNITS_DEC: [&str; 7] = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
const UNITS_BIN: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/// `64.0 MiB`, `1.78 PiB`, `512 B`: powers of 1024 with three significant digits, the units of
/// progress lines, summaries, ls and status ([`SIZE_UNITS`]); the text parses back to about the
/// same bytes as a flag value (`64.0MiB`).
pub fn fmt_bytes(b: u64) -> String {
    scaled(b, 1024, &UNITS_BIN)
}

/// `2.00 PB`, `50.0 MB`, `512 B`: powers of 1000 with three significant digits, the units of
/// plan's corpus sizes (as corpora are quoted; [`SIZE_UNITS`]).
pub fn fmt_bytes_si(b: u64) -> String {
    scaled(b, 1000, &UNITS_DEC)
}

/// A rate in bytes per second as [`fmt_bytes`]: `100 MiB/s`.
pub fn fmt_rate(bytes_per_sec: u64) -> String {
    format!("{}/s", fmt_bytes(bytes_per_sec))
}

fn scaled(b: u64, step: u64, units: &[&str; 7]) -> String {
    let mut v = Decimal::from(b);
    let k = Decimal::from(step);
    let mut i = 0;
    // A new unit from 1000 on, so that at most three digits stand before the point.
    while v >= Decimal::from(1000) && i < units.len() - 1 {
        v /= k;
        i += 1;
    }
    if i == 0 {
        return format!("{b} B");
    }
    format!("{} {}", three_sig(v), units[i])
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
    use super::*;

    const MIB: u64 = 1 << 20;

    /// One convention for every size flag: the letters are binary as in rclone, KB/MB/… spelled
    /// out are decimal as written, and only the bare number differs (bytes, or KiB in rclone's
    /// own flags).
    #[test]
    fn one_size_convention() {
        for (given, want) in [
            ("64M", 64 * MIB),
            ("64m", 64 * MIB),
            ("64Mi", 64 * MIB),
            ("64MiB", 64 * MIB),
            ("64 MiB", 64 * MIB),
            ("64MIB", 64 * MIB),
            ("64MB", 64_000_000),
            ("1.5G", 3 << 29),
            ("1.5 KiB", 1536),
            ("1kB", 1000),
            ("1KB", 1000),
            ("2PB", 2_000_000_000_000_000),
            ("2P", 2 << 50),
            ("200TiB", 200 << 40),
            ("7B", 7),
            ("7b", 7),
            ("512", 512),
            ("1,000", 1000),
        ] {
            assert_eq!(parse_size(given), Ok(want), "{given}");
            let rclone_want = if given.ends_with(|c: char| c.is_ascii_digit()) {
                want << 10
            } else {
                want
            };
            assert_eq!(parse_rclone_size(given), Ok(rclone_want), "{given}");
        }
    }

    #[test]
    fn bits_and_unknown_units_are_refused_with_the_spelling_to_use() {
        for bits in ["2Pb", "64Mb", "64mb", "64Mib", "10kb"] {
            let e = parse_size(bits).expect_err(bits);
            assert!(e.contains("ambiguous") && e.contains("bits"), "{bits}: {e}");
        }
        let e = parse_size("2Pb").unwrap_err();
        assert!(e.contains("2P or 2PiB") && e.contains("2PB"), "{e}");
        assert!(
            parse_size("12 furlongs")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(parse_size("64X").unwrap_err().contains("64M or 64MiB"));
        assert!(parse_size("-5GB").unwrap_err().contains("negative"));
        assert!(parse_size("GB").unwrap_err().contains("no number"));
        assert!(parse_size("1.5").unwrap_err().contains("whole number"));
        assert!(
            parse_size("99999999999999999EiB")
                .unwrap_err()
                .contains("too large")
        );
        assert_eq!(parse_rclone_size("1.5"), Ok(1536));
        for bad in ["10X", "-1M", "M", ""] {
            assert!(parse_rclone_size(bad).is_err(), "{bad}");
        }
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
        assert_eq!(parse_rate("200M/s").unwrap(), Decimal::from(200u64 << 20));
        assert_eq!(
            parse_rate("1.2GB/s").unwrap(),
            Decimal::from(1_200_000_000u64)
        );
        assert_eq!(
            parse_rate("1.2GBps").unwrap(),
            Decimal::from(1_200_000_000u64)
        );
        assert_eq!(parse_rate("80Mb/s").unwrap(), Decimal::from(10_000_000u64));
        assert_eq!(
            parse_rate("1Tb/s").unwrap(),
            Decimal::from(125_000_000_000u64)
        );
        assert!(parse_rate("64Mb").is_err(), "a rate needs /s, ps or bps");
        assert!(parse_rate("100").is_err());
        assert!(parse_rate("0Gbps").is_err());
    }

    #[test]
    fn formats() {
        assert_eq!(fmt_bytes_si(2_000_000_000_000_000), "2.00 PB");
        assert_eq!(fmt_bytes_si(50_000_000), "50.0 MB");
        assert_eq!(fmt_bytes(512), "512 B");
        assert_eq!(fmt_bytes(64 << 20), "64.0 MiB");
        assert_eq!(fmt_bytes(1000 << 10), "0.98 MiB");
        assert_eq!(fmt_bytes(2_000_000_000_000_000), "1.78 PiB");
        assert_eq!(fmt_rate(100 << 20), "100 MiB/s");
        // What is shown parses back as a flag to the same unit.
        assert_eq!(parse_size("64.0MiB"), Ok(64 << 20));
        assert_eq!(parse_size("2.00PB"), Ok(2_000_000_000_000_000));
        assert_eq!(fmt_count(40_000_000), "40.0 M");
        assert_eq!(fmt_duration(Decimal::from(158_400)), "1 d 20 h");
        assert_eq!(
            fmt_rate_bits(Decimal::from(12_500_000_000u64)),
            "100 Gbit/s"
        );
    }
}

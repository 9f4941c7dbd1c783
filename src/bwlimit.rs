//! `--bwlimit` as rclone writes it, and as moverctl always has.
//!
//! | form | meaning |
//! |---|---|
//! | `200MiB/s`, `1.2GB/s`, `1Gbps` | moverctl's rates: bytes (`B/s`) or bits (`bps`, `bit/s`), SI or binary prefixes |
//! | `10M`, `512K`, `1.5G`, `10Mi`, `10MiB` | rclone's: **binary** bytes per second (`10M` = 10 MiB/s = 10,485,760 B/s); suffixes `B K M G T P`, case-insensitive ([`crate::units::parse_rclone_size`]; `10MB` is 10^7, as elsewhere in moverctl) |
//! | `512` | rclone's default unit: KiB/s (512 KiB/s) |
//! | `off`, `0` | no limit |
//! | `UP:DOWN`, e.g. `10M:off` | upload and download limits (see below) |
//! | `08:00,512K 12:00,10M 23:00,off` | a timetable in local time: from each time on, that rate, until the next entry; before the first entry the last one applies (it wraps around midnight) |
//! | `Mon-08:00,10M Sat-00:00,off` | a weekly timetable; entries without a day apply every day |
//!
//! **Upload and download.** moverctl relays every byte: it downloads it from the source and
//! uploads it to the destination, through one limiter. A local source is not a download, and a
//! local destination is not an upload, so: local → cloud is limited by UP, cloud → local by DOWN,
//! and cloud → cloud (or local → local) by the smaller of the two (`off` on one side leaves the
//! other). A single rate (`10M`) limits every run whatever its ends.

use crate::units::parse_rate;
use rust_decimal::prelude::ToPrimitive;

/// Upload and download limits in bytes per second; `None` is no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub up: Option<u64>,
    pub down: Option<u64>,
}

impl Rate {
    /// The limit that applies to a run that downloads (`reads_remote`) and/or uploads
    /// (`writes_remote`).
    /// Local to local is neither: both limits apply, as between two clouds.
    pub fn effective(&self, reads_remote: bool, writes_remote: bool) -> Option<u64> {
        let (reads_remote, writes_remote) = match (reads_remote, writes_remote) {
            (false, false) => (true, true),
            other => other,
        };
        let down = self.down.filter(|_| reads_remote);
        let up = self.up.filter(|_| writes_remote);
        match (up, down) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BwLimit {
    Fixed(Rate),
    /// Entries by minute of the week (Monday 00:00 = 0), sorted, at least one.
    Table(Vec<(u32, Rate)>),
}

const DAY: u32 = 24 * 60;
const WEEK: u32 = 7 * DAY;
const DAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
const FULL_DAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// The slowest limit taken: 1 KiB/s. Below it a single read of a few KiB waits for seconds, and
/// a value such as `0.0001` (rclone's unit is KiB/s: 0.1 B/s) is a typo, not a plan; it must
/// never round to `0`, which means no limit at all.
pub const MIN_BYTES_PER_SEC: u64 = 1024;

/// One rate: moverctl's `200MiB/s` forms, rclone's `10M` forms, or `off`. A rate that is not
/// written as zero but is below [`MIN_BYTES_PER_SEC`] (including one that rounds to 0) is an
/// error; only `off` and a written zero (`0`, `0.0`, `0M`) turn the limit off.
fn parse_one(s: &str) -> Result<Option<u64>, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("off") || t == "0" {
        return Ok(None);
    }
    let v = if t.ends_with("/s") || t.ends_with("ps") {
        parse_rate(t)?.ceil().to_u64().unwrap_or(u64::MAX)
    } else {
        crate::units::parse_rclone_size(t).map_err(|e| {
            format!(
                "{e}; --bwlimit takes 10M (rclone: MiB/s), 200MiB/s, 1Gbps, off, UP:DOWN or a \
                 timetable such as \"08:00,10M 19:00,off\""
            )
        })?
    };
    let written_zero = t
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .all(|c| c == '0' || c == '.');
    if written_zero {
        return Ok(None);
    }
    if v < MIN_BYTES_PER_SEC {
        return Err(format!(
            "{t:?} is {} after rounding, below the minimum of 1 KiB/s (a bare number is \
             KiB/s, as in rclone: 10M = 10 MiB/s); write off or 0 for no limit",
            crate::units::fmt_bytes(v) + "/s"
        ));
    }
    Ok(Some(v))
}

/// `RATE` or `UP:DOWN`.
fn parse_pair(s: &str) -> Result<Rate, String> {
    match s.split_once(':') {
        Some((up, down)) => Ok(Rate {
            up: parse_one(up)?,
            down: parse_one(down)?,
        }),
        None => {
            let r = parse_one(s)?;
            Ok(Rate { up: r, down: r })
        }
    }
}

/// `HH:MM` or `Day-HH:MM` to the minutes of the week it covers (every day without a day).
fn parse_when(s: &str) -> Result<Vec<u32>, String> {
    let bad = || format!("{s:?} is not a time: use HH:MM or Mon-HH:MM (local time)");
    let (day, hm) = match s.split_once('-') {
        Some((d, hm)) => {
            let d = d.to_ascii_lowercase();
            let i = DAYS
                .iter()
                .zip(FULL_DAYS)
                .position(|(short, full)| d == *short || d == full)
                .ok_or_else(bad)?;
            (Some(i as u32), hm)
        }
        None => (None, s),
    };
    let (h, m) = hm.split_once(':').ok_or_else(bad)?;
    let (h, m): (u32, u32) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    if h > 23 || m > 59 || hm.len() != 5 {
        return Err(bad());
    }
    let at = h * 60 + m;
    Ok(match day {
        Some(d) => vec![d * DAY + at],
        None => (0..7).map(|d| d * DAY + at).collect(),
    })
}

pub fn parse(s: &str) -> Result<BwLimit, String> {
    let t = s.trim();
    if !t.contains(',') {
        let hhmm = t.len() == 5 && t.as_bytes()[2] == b':' && t.replace(':', "").len() == 4;
        if hhmm
            && t.split_once(':')
                .is_some_and(|(a, b)| a.len() == 2 && b.len() == 2)
        {
            return Err(format!(
                "{t:?} looks like a time: a timetable entry is TIME,RATE (\"{t},10M\"); \
                 upload:download limits need a unit (\"10M:off\")"
            ));
        }
        return Ok(BwLimit::Fixed(parse_pair(t)?));
    }
    let mut table: Vec<(u32, Rate)> = Vec::new();
    for entry in t.split_whitespace() {
        let (when, rate) = entry
            .split_once(',')
            .ok_or_else(|| format!("timetable entry {entry:?}: write TIME,RATE, e.g. 08:00,10M"))?;
        let rate = parse_pair(rate).map_err(|e| format!("timetable entry {entry:?}: {e}"))?;
        for at in parse_when(when).map_err(|e| format!("timetable entry {entry:?}: {e}"))? {
            if table.iter().any(|(m, _)| *m == at) {
                return Err(format!(
                    "timetable entry {entry:?}: its time is given twice"
                ));
            }
            table.push((at, rate));
        }
    }
    table.sort_by_key(|(m, _)| *m);
    Ok(BwLimit::Table(table))
}

impl BwLimit {
    /// The rate at `minute` of the week (Monday 00:00 = 0).
    pub fn rate_at(&self, minute: u32) -> Rate {
        match self {
            BwLimit::Fixed(r) => *r,
            BwLimit::Table(t) => t
                .iter()
                .rev()
                .find(|(m, _)| *m <= minute % WEEK)
                .or(t.last())
                .map(|(_, r)| *r)
                .expect("a timetable has an entry"),
        }
    }

    /// The rate now, in local time.
    pub fn rate_now(&self) -> Rate {
        use chrono::{Datelike, Timelike};
        let now = chrono::Local::now();
        let minute = now.weekday().num_days_from_monday() * DAY + now.hour() * 60 + now.minute();
        self.rate_at(minute)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn fixed(s: &str) -> Rate {
        match parse(s).unwrap() {
            BwLimit::Fixed(r) => r,
            t => panic!("{s}: {t:?}"),
        }
    }

    #[test]
    fn rclone_sizes_are_binary_and_a_bare_number_is_kib() {
        let both = |n| Rate {
            up: Some(n),
            down: Some(n),
        };
        assert_eq!(fixed("10M"), both(10 * MIB));
        assert_eq!(fixed("10m"), both(10 * MIB));
        assert_eq!(fixed("10Mi"), both(10 * MIB));
        assert_eq!(fixed("10MiB"), both(10 * MIB));
        assert_eq!(fixed("1.5G"), both(3 << 29));
        assert_eq!(fixed("512K"), both(512 << 10));
        assert_eq!(fixed("512"), both(512 << 10));
        assert_eq!(fixed("1024B"), both(1024));
        // moverctl's own forms are unchanged.
        assert_eq!(fixed("200MiB/s"), both(200 * MIB));
        assert_eq!(fixed("1Gbps"), both(125_000_000));
        assert_eq!(
            fixed("off"),
            Rate {
                up: None,
                down: None
            }
        );
        assert_eq!(fixed("0").up, None);
        for bad in ["10X", "fast", "-1M", "10M:fast", ""] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    /// Fails on the main of 2026-12-02, where `--bwlimit 0.0001` (0.1 B/s) rounded to 0 = off
    /// and the run went at full speed.
    #[test]
    fn a_rate_that_rounds_to_zero_or_below_the_minimum_is_refused() {
        for bad in [
            "0.0001",
            "0.5",
            "0.0001M",
            "100B",
            "0.4B/s",
            "1000B/s",
            "8kbps",
            "10M:0.0001",
        ] {
            let e = parse(bad).expect_err(bad);
            assert!(e.contains("below the minimum of 1 KiB/s"), "{bad}: {e}");
        }
        assert!(parse("08:00,0.0001 19:00,off").is_err());
        for zero in ["0", "0.0", "0M", "off", "OFF"] {
            assert_eq!(fixed(zero).up, None, "{zero}");
        }
        assert_eq!(fixed("1").up, Some(1024), "a bare 1 is 1 KiB/s");
        assert_eq!(fixed("1KiB/s").up, Some(1024));
    }

    #[test]
    fn up_and_down_apply_to_the_side_that_is_remote() {
        let r = fixed("10M:off");
        assert_eq!(
            r.effective(false, true),
            Some(10 * MIB),
            "local -> cloud uploads"
        );
        assert_eq!(r.effective(true, false), None, "cloud -> local downloads");
        assert_eq!(r.effective(true, true), Some(10 * MIB));
        assert_eq!(r.effective(false, false), Some(10 * MIB));
        assert_eq!(fixed("3M").effective(false, false), Some(3 * MIB));
        let r = fixed("10M:4M");
        assert_eq!(r.effective(true, true), Some(4 * MIB));
        assert_eq!(r.effective(true, false), Some(4 * MIB));
        assert_eq!(r.effective(false, true), Some(10 * MIB));
    }

    #[test]
    fn a_timetable_holds_each_rate_until_the_next_entry_and_wraps() {
        let t = parse("08:00,10M 19:00,off").unwrap();
        let at = |day: u32, h: u32, m: u32| t.rate_at(day * DAY + h * 60 + m).up;
        assert_eq!(at(0, 7, 59), None, "before 08:00: the evening's off");
        assert_eq!(at(0, 8, 0), Some(10 * MIB));
        assert_eq!(at(3, 18, 59), Some(10 * MIB));
        assert_eq!(at(6, 19, 0), None);
        let w = parse("Mon-08:00,1M Sat-00:00,off").unwrap();
        assert_eq!(w.rate_at(2 * DAY).up, Some(MIB), "Wednesday");
        assert_eq!(w.rate_at(6 * DAY).up, None, "Sunday");
        assert_eq!(w.rate_at(60).up, None, "Monday 01:00: still the weekend's");
        let ud = parse("08:00,10M:off").unwrap();
        assert_eq!(ud.rate_at(9 * 60).down, None);
        for bad in [
            "8:00,10M",
            "25:00,1M",
            "Moo-08:00,1M",
            "08:00",
            "08:00,1M 08:00,2M",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}

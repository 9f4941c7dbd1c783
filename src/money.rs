//! Exact money. Every amount is a `rust_decimal::Decimal` in US dollars; no `f64` ever holds money.
//! Prices in provider files are written as strings ("0.023") so they are parsed exactly.

use rust_decimal::Decimal;
use rust_decimal::prelude::*;
use serde::{Deserialize, Deserializer};
use std::fmt;
use std::iter::Sum;
use std::ops::{Add, AddAssign, Mul, Sub};
use std::str::FromStr;

/// An amount of US dollars, exact.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Usd(pub Decimal);

impl Usd {
    pub const ZERO: Usd = Usd(Decimal::ZERO);

    pub fn new(d: Decimal) -> Self {
        Usd(d)
    }

    /// Parse "12.34" (no currency sign) exactly.
    pub fn parse(s: &str) -> Result<Self, String> {
        let d = Decimal::from_str(s.trim().trim_start_matches('$').replace(',', "").as_str())
            .map_err(|e| format!("{s:?} is not an amount of dollars ({e})"))?;
        if d.is_sign_negative() && !d.is_zero() {
            return Err(format!("{s:?} is negative; amounts must be zero or more"));
        }
        Ok(Usd(d))
    }

    pub fn decimal(self) -> Decimal {
        self.0
    }

    pub fn is_zero(self) -> bool {
        self.0.is_zero()
    }

    /// Rounded to cents, half away from zero (the way an invoice shows it).
    pub fn cents(self) -> Decimal {
        self.0
            .round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero)
    }

    /// Rounded to micro-dollars for machine-readable output.
    pub fn micros(self) -> Decimal {
        self.0
            .round_dp_with_strategy(6, RoundingStrategy::MidpointAwayFromZero)
            .normalize()
    }

    /// A JSON number with up to six decimals, written from the decimal digits (never via f64).
    pub fn to_json(self) -> serde_json::Value {
        let s = self.micros().to_string();
        serde_json::Value::Number(
            serde_json::Number::from_str(&s).expect("a decimal's digits form a JSON number"),
        )
    }

    /// One rule for every amount shown to people, however it was written (`640.0` and `640`
    /// alike): whole dollars with thousands separators from $1,000 (`$97,018`); below that,
    /// cents with two decimals (`$16.40`, `$0.50`), or none when the amount is whole dollars
    /// (`$640`); below a cent, two significant digits (`$0.0042`).
    pub fn human(self) -> String {
        let v = self.0;
        if v.is_zero() {
            return "$0".to_string();
        }
        if v.abs() >= Decimal::new(1, 2) {
            let c = self.cents();
            return if c.abs() >= Decimal::from(1000) {
                let whole = v.round_dp_with_strategy(0, RoundingStrategy::MidpointAwayFromZero);
                format!("${}", group_thousands(&whole.normalize().to_string()))
            } else if c.fract().is_zero() {
                format!("${}", c.trunc().normalize())
            } else {
                format!("${c:.2}")
            };
        }
        let small = v.round_sf(2).unwrap_or(v).normalize();
        format!("${small}")
    }
}

pub fn group_thousands(digits: &str) -> String {
    let (sign, rest) = match digits.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", digits),
    };
    let (int, frac) = match rest.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (rest, None),
    };
    let mut out = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    match frac {
        Some(f) => format!("{sign}{out}.{f}"),
        None => format!("{sign}{out}"),
    }
}

impl fmt::Display for Usd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.human())
    }
}

impl Add for Usd {
    type Output = Usd;
    fn add(self, o: Usd) -> Usd {
        Usd(self.0 + o.0)
    }
}

impl Sub for Usd {
    type Output = Usd;
    fn sub(self, o: Usd) -> Usd {
        Usd(self.0 - o.0)
    }
}

impl AddAssign for Usd {
    fn add_assign(&mut self, o: Usd) {
        self.0 += o.0;
    }
}

impl Mul<Decimal> for Usd {
    type Output = Usd;
    fn mul(self, q: Decimal) -> Usd {
        Usd(self.0 * q)
    }
}

impl Sum for Usd {
    fn sum<I: Iterator<Item = Usd>>(iter: I) -> Usd {
        iter.fold(Usd::ZERO, |a, b| a + b)
    }
}

/// A non-negative decimal read from a TOML *string*, so that "0.0004" stays exactly 0.0004.
/// Used for every price and quantity in provider files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dec(pub Decimal);

impl Dec {
    pub fn get(self) -> Decimal {
        self.0
    }
}

impl<'de> Deserialize<'de> for Dec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Dec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a decimal written as a string, e.g. \"0.023\"")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Dec, E> {
                let d = Decimal::from_str(s.trim()).map_err(|_| {
                    E::custom(format!(
                        "{s:?} is not a decimal number (write e.g. \"0.023\")"
                    ))
                })?;
                if d.is_sign_negative() && !d.is_zero() {
                    return Err(E::custom(format!(
                        "{s:?} is negative; prices and quantities must be >= 0"
                    )));
                }
                Ok(Dec(d))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Dec, E> {
                if v < 0 {
                    return Err(E::custom(format!(
                        "{v} is negative; prices and quantities must be >= 0"
                    )));
                }
                Ok(Dec(Decimal::from(v)))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Dec, E> {
                Ok(Dec(Decimal::from(v)))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Dec, E> {
                Err(E::custom(format!(
                    "{v} is a floating-point number; write prices as strings (\"{v}\") so they stay exact"
                )))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_formats() {
        assert_eq!(Usd(Decimal::from(97018)).human(), "$97,018");
        assert_eq!(Usd(Decimal::new(1640, 2)).human(), "$16.40");
        assert_eq!(Usd(Decimal::new(42, 4)).human(), "$0.0042");
        assert_eq!(Usd(Decimal::new(12345678, 1)).human(), "$1,234,568");
        assert_eq!(Usd::ZERO.human(), "$0");
    }

    /// Fails on the main of 2026-12-08, which showed `$640.0` (the amount as written) beside
    /// `$4,500`, and `$16.4` for an amount written with one decimal.
    #[test]
    fn one_rule_however_the_amount_was_written() {
        let h = |s: &str| Usd::parse(s).unwrap().human();
        assert_eq!(h("640.0"), "$640");
        assert_eq!(h("640"), "$640");
        assert_eq!(h("640.00000"), "$640");
        assert_eq!(h("4500.0"), "$4,500");
        assert_eq!(h("16.4"), "$16.40");
        assert_eq!(h("0.5"), "$0.50");
        assert_eq!(h("999.999"), "$1,000");
        assert_eq!(h("1234.5"), "$1,235");
        assert_eq!(h("0.00420"), "$0.0042");
    }

    #[test]
    fn json_is_exact_digits() {
        let v = Usd(Decimal::from_str("0.1").unwrap()) + Usd(Decimal::from_str("0.2").unwrap());
        assert_eq!(v.to_json().to_string(), "0.3");
    }

    #[test]
    fn dec_rejects_floats_and_negatives() {
        #[derive(Deserialize)]
        struct T {
            #[allow(dead_code)]
            p: Dec,
        }
        assert!(toml::from_str::<T>("p = 0.09").is_err());
        assert!(toml::from_str::<T>("p = \"-1\"").is_err());
        let ok: T = toml::from_str("p = \"0.09\"").unwrap();
        assert_eq!(ok.p.0, Decimal::from_str("0.09").unwrap());
    }
}

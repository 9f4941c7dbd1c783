//! The data of the planner's issue-29 checks, kept apart from the code that computes them so that
//! `plan::candidate` can hold it without a circle of module references: the exit waiver checked
//! (`plan::waiver`), the options during the move (`plan::during`) and the read bandwidth
//! against the GPUs' need (`plan::feed`).

use crate::money::Usd;
use rust_decimal::Decimal;

/// Hours in the planner's month (30 days).
pub const MONTH_HOURS: u32 = 720;

/// How much of a waiver is credited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaiverStatus {
    /// Every byte fits the window.
    Credited,
    /// Only the bytes copied within the window are credited.
    Partial,
    /// Nothing is credited (the GPUs stay, or the move stays within the provider).
    Refused,
}

impl WaiverStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            WaiverStatus::Credited => "credited",
            WaiverStatus::Partial => "partial",
            WaiverStatus::Refused => "refused",
        }
    }
}

/// The waiver of one move, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaiverCheck {
    pub status: WaiverStatus,
    pub window_days: u32,
    /// `approval`, `start-date` or `unstated`.
    pub window_starts: &'static str,
    pub bytes_total: u64,
    /// Bytes copied within the window (all of them when credited, none when refused).
    pub bytes_in_window: u64,
    /// Egress credited, and egress still charged (`credited + charged` = egress before the waiver).
    pub credited: Usd,
    pub charged: Usd,
    /// Why, in a sentence (also a warning of the candidate).
    pub reason: String,
}

/// One option for the time of the move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum During {
    Idle,
    FromSource,
    Lazy,
}

impl During {
    pub fn as_str(self) -> &'static str {
        match self {
            During::Idle => "idle",
            During::FromSource => "train-from-source",
            During::Lazy => "lazy",
        }
    }

    /// The option in the words of the verdict line.
    pub fn phrase(self, lazy_name: Option<&str>) -> String {
        match self {
            During::Idle => "GPUs idle during the move".to_string(),
            During::FromSource => "training from the source during the move".to_string(),
            During::Lazy => format!(
                "lazy migration{}: training reads through the destination",
                lazy_name.map(|n| format!(" ({n})")).unwrap_or_default()
            ),
        }
    }
}

/// One option priced, or why it is not possible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuringOption {
    pub option: During,
    pub available: bool,
    /// What it costs (zero when not available).
    pub cost: Usd,
    /// How it is priced, or why it is not possible.
    pub note: String,
}

/// The options of one move and the one chosen (the cheapest available).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuringMove {
    pub chosen: During,
    pub options: Vec<DuringOption>,
    /// The destination's name for its lazy migration, when it offers one.
    pub lazy_name: Option<String>,
}

impl DuringMove {
    pub fn phrase(&self) -> String {
        self.chosen.phrase(self.lazy_name.as_deref())
    }
}

/// The flags and probes behind the read-bandwidth check.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeedAssumptions {
    /// `--read-rate`: bytes/s the GPUs consume while they train (`None`: from the reads).
    pub need: Option<Decimal>,
    /// `--train-hours`, hours a month the GPUs train (`None`: the whole month; more than the
    /// planner's 30-day month counts as the whole month, so the default 730 is 720).
    pub train_hours: Option<Decimal>,
    /// `--store-read-rate`: (provider or `None` for every store, bytes/s).
    pub given: Vec<(Option<String>, Decimal)>,
    /// Saved probes' multi-stream GET rates: (provider, bytes/s, the probe's location).
    pub probed: Vec<(String, Decimal, String)>,
}

impl FeedAssumptions {
    /// Training hours a month (at most [`MONTH_HOURS`]).
    pub fn hours(&self) -> Decimal {
        self.train_hours
            .unwrap_or(Decimal::from(MONTH_HOURS))
            .min(Decimal::from(MONTH_HOURS))
    }
}

/// One store against the GPUs' need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feed {
    /// Bytes/s the store gives the GPUs, and from where (`None`: not modelled).
    pub supply: Option<Decimal>,
    pub supply_from: String,
    pub need: Decimal,
    pub need_from: String,
    /// GPU hours a month spent waiting on the store, and their cost a month.
    pub stall_hours_per_month: Decimal,
    pub stall_per_month: Usd,
}

impl Feed {
    /// `Some(true)` when the store keeps up, `Some(false)` when it stalls the GPUs, `None` when
    /// its rate is not known.
    pub fn can_feed(&self) -> Option<bool> {
        if self.need.is_zero() {
            return Some(true);
        }
        self.supply.map(|s| s >= self.need)
    }

    /// A short mark for tables: `ok`, `stalls Nh/mo`, or `rate?`.
    pub fn mark(&self) -> String {
        match self.can_feed() {
            Some(true) => "ok".to_string(),
            Some(false) => format!("stalls {}h/mo", self.stall_hours_per_month.round_dp(0)),
            None => "rate?".to_string(),
        }
    }
}

//! Exit waivers checked against their conditions (`--exit-waiver`, issue 29).
//!
//! A provider's "leaving the cloud" credit (`[exit_waiver]` in its provider file) is credited only
//! as far as its conditions allow:
//!
//! - **must leave**: never when the GPUs stay at the source's provider (`--compute-at` there): the
//!   waiver asks for all data *and workloads* to leave. A move within one provider leaves nothing.
//! - **window**: only the bytes copied within `window_days` of the move's start, at the predicted
//!   rate: the copy runs from the end of any archive restore to the end of the move, evenly, so
//!   `bytes_in_window = bytes x (window - restore) / (move - restore)` (rounded down). The rest is
//!   priced as normal egress, on its own, over the months after the window
//!   (`move_egress(rest, months_of(move - window))`), and the reason is printed.
//! - The notice, the window's start (`window_starts`), the approval and, where published, the share
//!   of the account the credit covers are printed with the conditions; they cannot be checked here.

use super::candidate::{Assumptions, Time};
pub use super::options::{WaiverCheck, WaiverStatus};
use super::price::{months_of, move_egress};
use crate::catalog::{ExitWaiver, Place};
use crate::money::Usd;
use crate::units::{fmt_bytes, fmt_duration};
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;

/// Egress after the waiver's credit, and the check (`None` without `--exit-waiver`, without a
/// waiver in the catalog, or with nothing to credit). Warnings say what was credited and why.
pub fn check(
    src: &Place,
    dst: &Place,
    total_bytes: u64,
    time: &Time,
    egress_before: Usd,
    a: &Assumptions,
    warnings: &mut Vec<String>,
) -> (Usd, Option<WaiverCheck>) {
    if !a.exit_waiver {
        return (egress_before, None);
    }
    let Some(w) = &src.provider.file.exit_waiver else {
        warnings.push(format!(
            "--exit-waiver: {} has no exit waiver in the catalog; egress is charged in full",
            src.provider_id()
        ));
        return (egress_before, None);
    };
    if egress_before.is_zero() {
        return (egress_before, None);
    }
    let refused = |reason: String| WaiverCheck {
        status: WaiverStatus::Refused,
        window_days: w.window_days,
        window_starts: w.window_starts.as_str(),
        bytes_total: total_bytes,
        bytes_in_window: 0,
        credited: Usd::ZERO,
        charged: egress_before,
        reason,
    };
    let stays = a
        .reads
        .as_ref()
        .filter(|r| r.compute.in_catalog && r.compute.provider == src.provider_id());
    let check = if let Some(r) = stays {
        refused(format!(
            "exit waiver refused: the GPUs stay at {} (--compute-at {}), and {}'s waiver requires moving all data and workloads off it; {} of egress is charged",
            src.provider_id(),
            r.compute.given,
            src.provider_id(),
            egress_before
        ))
    } else if src.provider_id() == dst.provider_id() {
        refused(format!(
            "exit waiver refused: a move within {} does not leave it; {} is charged",
            src.provider_id(),
            egress_before
        ))
    } else {
        window(src, dst, w, total_bytes, time, egress_before)
    };
    warnings.push(check.reason.clone());
    if check.status != WaiverStatus::Refused {
        warnings.push(format!(
            "exit waiver of {}: {} (all its conditions: moverctl providers show {})",
            src.provider_id(),
            conditions(w),
            src.provider_id()
        ));
    }
    (check.charged, Some(check))
}

/// The window: the bytes copied within it are credited, the rest priced as normal egress.
fn window(
    src: &Place,
    dst: &Place,
    w: &ExitWaiver,
    total: u64,
    time: &Time,
    egress_before: Usd,
) -> WaiverCheck {
    let window = Decimal::from(w.window_days) * Decimal::from(86_400);
    let copy = time.seconds - time.restore_seconds;
    let starts = match w.window_starts.as_str() {
        "approval" => "from the approval notice",
        "start-date" => "from the planned start date",
        _ => "(its start is not published; counted from the move's start)",
    };
    if time.seconds <= window {
        return WaiverCheck {
            status: WaiverStatus::Credited,
            window_days: w.window_days,
            window_starts: w.window_starts.as_str(),
            bytes_total: total,
            bytes_in_window: total,
            credited: egress_before,
            charged: Usd::ZERO,
            reason: format!(
                "exit waiver: the move takes {} at the predicted rate, within {}'s window of {} days {starts}: {} of egress is assumed credited",
                fmt_duration(time.seconds),
                src.provider_id(),
                w.window_days,
                egress_before
            ),
        };
    }
    let usable = (window - time.restore_seconds).max(Decimal::ZERO);
    let share = if copy > Decimal::ZERO {
        usable / copy
    } else {
        Decimal::ZERO
    };
    let in_window = (Decimal::from(total) * share)
        .floor()
        .to_u64()
        .unwrap_or(0)
        .min(total);
    let rest = total - in_window;
    let (rest_egress, _) = move_egress(src, dst, rest, total, months_of(time.seconds - window));
    let charged = rest_egress.min(egress_before);
    let credited = egress_before - charged;
    WaiverCheck {
        status: WaiverStatus::Partial,
        window_days: w.window_days,
        window_starts: w.window_starts.as_str(),
        bytes_total: total,
        bytes_in_window: in_window,
        credited,
        charged,
        reason: format!(
            "exit waiver only in part: the move takes {} at the predicted rate, longer than {}'s window of {} days {starts}; the {} copied within the window are credited ({}), the other {} are charged as normal egress ({})",
            fmt_duration(time.seconds),
            src.provider_id(),
            w.window_days,
            fmt_bytes(in_window),
            credited,
            fmt_bytes(rest),
            charged
        ),
    }
}

/// The waiver's conditions in one line: what the catalog says must hold.
pub fn conditions(w: &ExitWaiver) -> String {
    let mut c = Vec::new();
    if w.requires_full_exit {
        c.push("move all data and workloads off the provider".to_string());
    }
    c.push(format!(
        "finish within {} days ({})",
        w.window_days,
        match w.window_starts.as_str() {
            "approval" => "counted from the approval notice",
            "start-date" => "counted from the planned start date",
            _ => "the start of the count is not published",
        }
    ));
    c.push(format!("notice: {}", w.notice.trim_end_matches('.')));
    if w.requires_approval {
        c.push("needs the provider's approval first".to_string());
    }
    if w.credit_not_waiver {
        c.push("paid back as a credit, not waived up front".to_string());
    }
    c.push(match &w.credit_covers {
        Some(s) => format!("covers {s}"),
        None => "the share of the account it covers is not published".to_string(),
    });
    if w.premium_tier_only {
        c.push("premium network tier only".to_string());
    }
    if w.storage_egress_only {
        c.push("storage egress only".to_string());
    }
    c.join("; ")
}

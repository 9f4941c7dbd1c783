//! The verdict: one sentence that ends the terminal output, heads the HTML report and is the
//! JSON's `verdict` (issue 29).
//!
//! - A move is cheapest: `move to X (OPTION): saves $Y over N months against staying; break-even
//!   month M` (`breaks even at once` for month 0);
//! - staying is cheapest: `stay at SRC: the cheapest move, to X (OPTION), costs $Y more over N
//!   months`;
//! - no "stay" to compare (no `--compute-at`): `move to X (OPTION): $T over N months; staying is not
//!   compared (give --compute-at and the reads to compare)`.
//!
//! OPTION is what the GPUs do during the move ([`super::during`]). A store that stalls the GPUs,
//! or whose read rate is not known, is named after the sentence.

use super::candidate::{Candidate, Kind};

pub fn verdict(ranked: &[Candidate], months: u32) -> String {
    let Some(best) = ranked.first() else {
        return "no candidate".to_string();
    };
    let stay = ranked.iter().find(|c| c.kind == Kind::Stay);
    let option = |c: &Candidate| {
        c.during
            .as_ref()
            .map_or_else(String::new, |d| format!(" ({})", d.phrase()))
    };
    let mut s = match (best.kind, stay) {
        (Kind::Move, Some(st)) => format!(
            "move to {}{}: saves {} over {} against staying; {}",
            best.destination,
            option(best),
            st.cost.total() - best.cost.total(),
            crate::words::count(months.into(), "month"),
            match best.break_even_month {
                Some(0) => "breaks even at once".to_string(),
                Some(m) => format!("break-even month {m}"),
                None => "never breaks even within the horizon".to_string(),
            }
        ),
        (Kind::Move, None) => format!(
            "move to {}{}: {} over {}; staying is not compared (give --compute-at and the reads to compare)",
            best.destination,
            option(best),
            best.cost.total(),
            crate::words::count(months.into(), "month")
        ),
        (Kind::Stay, _) => match ranked.iter().find(|c| c.kind == Kind::Move) {
            Some(m) => format!(
                "stay at {}: the cheapest move, to {}{}, costs {} more over {}",
                best.resolved,
                m.destination,
                option(m),
                m.cost.total() - best.cost.total(),
                crate::words::count(months.into(), "month")
            ),
            None => format!("stay at {}", best.resolved),
        },
    };
    if let Some(f) = best.feed.as_ref() {
        match f.can_feed() {
            Some(false) => s.push_str(&format!(
                " (its store stalls the GPUs {} hours a month)",
                f.stall_hours_per_month.round_dp(0)
            )),
            None => s.push_str(" (read rate not modelled: give --store-read-rate)"),
            Some(true) => {}
        }
    }
    s
}

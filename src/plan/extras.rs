//! The amounts a move costs besides moving (see [`super::extra_costs`], which prices them) and the
//! flags behind them. Plain data: no reference to the rest of the planner.

use crate::money::Usd;

/// The flags behind the extras and the marks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtraFlags {
    /// `--delete-source`: the source is deleted once the copy is done (its minimum-duration fee
    /// is priced).
    pub delete_source: bool,
    /// `--worker-hourly`: what the copying machines cost an hour, each.
    pub worker_hourly: Usd,
    /// `--accept-policy-risk`: rank policy-risk candidates by their price.
    pub accept_policy_risk: bool,
    /// A later leg of a multi-hop plan: its source is the previous leg's destination, whose
    /// storage the chain already prices over the whole horizon (not priced again while copying).
    pub source_already_stored: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extras {
    pub source_storage: Usd,
    pub source_early_deletion: Usd,
    pub restored_copy: Usd,
    pub worker_compute: Usd,
    pub restore_idle_per_month: Usd,
    pub restore_idle: Usd,
}

impl Extras {
    pub fn one_time(&self) -> Usd {
        self.source_storage + self.source_early_deletion + self.restored_copy + self.worker_compute
    }

    pub fn monthly(&self) -> Usd {
        self.restore_idle_per_month
    }

    pub fn total(&self) -> Usd {
        self.one_time() + self.restore_idle
    }

    /// Each amount to the micro-dollar (the JSON's precision), so items add up to the total.
    pub fn round_micros(&mut self) {
        for u in [
            &mut self.source_storage,
            &mut self.source_early_deletion,
            &mut self.restored_copy,
            &mut self.worker_compute,
            &mut self.restore_idle_per_month,
            &mut self.restore_idle,
        ] {
            *u = Usd(u.micros());
        }
    }

    /// Two sets added, item by item (the legs of a multi-hop plan).
    pub fn add(&self, o: &Extras) -> Extras {
        Extras {
            source_storage: self.source_storage + o.source_storage,
            source_early_deletion: self.source_early_deletion + o.source_early_deletion,
            restored_copy: self.restored_copy + o.restored_copy,
            worker_compute: self.worker_compute + o.worker_compute,
            restore_idle_per_month: self.restore_idle_per_month + o.restore_idle_per_month,
            restore_idle: self.restore_idle + o.restore_idle,
        }
    }

    pub fn items(&self) -> [(&'static str, Usd); 6] {
        [
            ("source_storage", self.source_storage),
            ("source_early_deletion", self.source_early_deletion),
            ("restored_copy", self.restored_copy),
            ("worker_compute", self.worker_compute),
            ("restore_idle_per_month", self.restore_idle_per_month),
            ("restore_idle", self.restore_idle),
        ]
    }
}

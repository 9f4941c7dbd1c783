//! The flags of `plan` for what a move costs besides moving (`--delete-source`,
//! `--worker-hourly`) and for ranking candidates whose price relies on a reasonable-use rule
//! (`--accept-policy-risk`); see `plan::extras` and `plan::marks`. The struct lives here, beside
//! the job, rather than in `src/cli/` (at its line budget); `cli::plan_cmd` flattens it.

use crate::job::JobError;
use crate::money::Usd;
use crate::plan::extras::ExtraFlags;

#[derive(Debug, Clone, Default, clap::Args)]
pub struct ExtrasArgs {
    /// The source is deleted once the copy is done: price its class's minimum storage duration
    /// for the days left (objects assumed written when the move starts: the worst case).
    #[arg(long)]
    pub delete_source: bool,
    /// What one copying machine (worker) costs per hour, in USD: priced for the copy's hours.
    #[arg(long, value_name = "USD", allow_hyphen_values = true)]
    pub worker_hourly: Option<String>,
    /// Rank candidates whose price relies on a reasonable-use rule they exceed (Wasabi's free
    /// egress up to its stored volume a month) by their price, instead of after every priced one.
    #[arg(long)]
    pub accept_policy_risk: bool,
}

impl ExtrasArgs {
    pub fn flags(&self) -> Result<ExtraFlags, JobError> {
        let worker_hourly = match &self.worker_hourly {
            Some(v) => {
                Usd::parse(v).map_err(|e| JobError::Usage(format!("--worker-hourly: {e}")))?
            }
            None => Usd::ZERO,
        };
        Ok(ExtraFlags {
            delete_source: self.delete_source,
            worker_hourly,
            accept_policy_risk: self.accept_policy_risk,
            source_already_stored: false,
        })
    }
}

//! The marks of a candidate (see [`super::marking`], which sets them): "cannot take this
//! corpus", a policy risk, caveats by role. Plain data: no reference to the rest of the planner.

use serde_json::{Value, json};

/// Who a caveat is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Source,
    Destination,
    Compute,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Source => "source",
            Role::Destination => "destination",
            Role::Compute => "compute site",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caveat {
    pub role: Role,
    pub provider: String,
    pub text: String,
}

impl Caveat {
    /// `aws (source): …`, as printed with the warnings.
    pub fn line(&self) -> String {
        match self.role {
            Role::Destination => format!("{}: {}", self.provider, self.text),
            r => format!("{} ({}): {}", self.provider, r.as_str(), self.text),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Marks {
    /// Why the destination cannot take the corpus (the limit and the largest object).
    pub cannot_take: Option<String>,
    /// Why the price relies on a reasonable-use rule that is exceeded.
    pub policy_risk: Option<String>,
    /// `--accept-policy-risk`: ranked by price all the same.
    pub policy_risk_accepted: bool,
    pub caveats: Vec<Caveat>,
}

impl Marks {
    /// Ranking group: 0 priced, 1 a policy risk not accepted, 2 cannot take the corpus.
    pub fn group(&self) -> u8 {
        if self.cannot_take.is_some() {
            2
        } else if self.policy_risk.is_some() && !self.policy_risk_accepted {
            1
        } else {
            0
        }
    }

    /// The marker after the candidate's name in the table: ` [x]`, ` [risk]` or nothing.
    pub fn marker(&self) -> &'static str {
        if self.cannot_take.is_some() {
            " [x]"
        } else if self.policy_risk.is_some() {
            " [risk]"
        } else {
            ""
        }
    }

    pub fn json(&self) -> (Value, Value, Value) {
        let caveats = self
            .caveats
            .iter()
            .map(|c| json!({"role": c.role.as_str(), "provider": c.provider, "text": c.text}))
            .collect::<Vec<_>>();
        let risk = self.policy_risk.as_ref().map_or(
            Value::Null,
            |r| json!({"reason": r, "accepted": self.policy_risk_accepted}),
        );
        (json!(self.cannot_take), risk, Value::Array(caveats))
    }
}

//! A finished run priced and set against its plan.

//! The one integration test binary. Each module covers one part; shared helpers live here.

mod catalog;
mod cli;
mod plan_file;
mod plan_golden;

use moverctl::catalog::{Catalog, Place};
use moverctl::plan::corpus::Corpus;
use moverctl::plan::model::{Assumptions, Candidate, evaluate};
use rust_decimal::Decimal;
use std::str::FromStr;
use std::sync::OnceLock;

pub fn catalog() -> &'static Catalog {
    static C: OnceLock<Catalog> = OnceLock::new();
    C.get_or_init(|| Catalog::embedded().unwrap_or_else(|e| panic!("{e}")))
}

pub fn d(s: &str) -> Decimal {
    Decimal::from_str(s).unwrap()
}

pub const GIB: u64 = 1 << 30;

/// Evaluate one move with default assumptions (tweaked by `f`).
pub fn eval_with(
    from: &str,
    to: &str,
    corpus: &Corpus,
    f: impl FnOnce(&mut Assumptions),
) -> Candidate {
    let c = catalog();
    let src = Place::resolve(c, from).unwrap();
    let dst = Place::resolve(c, to).unwrap();
    let mut a = Assumptions::default();
    f(&mut a);
    evaluate(&src, &dst, corpus, &a)
}

pub fn eval(from: &str, to: &str, bytes: u64, objects: u64) -> Candidate {
    eval_with(from, to, &corpus(bytes, objects), |_| {})
}

pub fn corpus(bytes: u64, objects: u64) -> Corpus {
    Corpus::from_flags(Some(&bytes.to_string()), Some(&objects.to_string()), None).unwrap()
}

pub fn moverctl() -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_moverctl"));
    c.env_remove("MOVERCTL_PROVIDERS");
    c
}

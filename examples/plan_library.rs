//! Using moverctl as a library: price one move without the command line.
//! Run with: cargo run --example plan_library

use moverctl::catalog::{Catalog, Place};
use moverctl::plan::corpus::Corpus;
use moverctl::plan::model::{Assumptions, evaluate};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let catalog = Catalog::embedded()?;
    let from = Place::resolve(&catalog, "gcp:us-central1/standard")?;
    let to = Place::resolve(&catalog, "coreweave")?;
    // 300 TB of checkpoints: 5,000 shards of about 60 GB.
    let corpus = Corpus::from_flags(Some("300TB"), Some("5000"), None)?;
    let plan = evaluate(&from, &to, &corpus, &Assumptions::default());
    for (item, usd) in plan.cost.items() {
        println!("{item:>22}  {usd}");
    }
    println!(
        "{:>22}  {} s ({}-bound)",
        "time",
        plan.time.seconds.round(),
        plan.time.bound.as_str()
    );
    Ok(())
}

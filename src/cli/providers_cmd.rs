//! `moverctl providers` and `moverctl providers show NAME`: the words and documents are in
//! [`moverctl::summary::providers`] and [`moverctl::json::providers`].

use super::{CliError, ProvidersAction, ProvidersArgs};
use moverctl::catalog::Catalog;
use moverctl::{json, summary};

pub fn run(catalog: &Catalog, args: ProvidersArgs) -> Result<(), CliError> {
    let pretty = |v: serde_json::Value| serde_json::to_string_pretty(&v).expect("serializes");
    match args.action {
        None if args.json => println!("{}", pretty(json::providers::list(catalog))),
        None => print!("{}", summary::providers::list(catalog)),
        Some(ProvidersAction::Show { name, json }) => {
            let p = catalog.get(&name)?;
            match json || args.json {
                true => println!("{}", pretty(json::providers::show(p))),
                false => print!("{}", summary::providers::show(p)),
            }
        }
    }
    Ok(())
}

//! The shipped catalog loads, covers what the issue lists, and broken files are reported precisely.

use super::*;
use moverctl::catalog::{Catalog, CatalogError, Place, parse_provider};

const REQUIRED: &[&str] = &[
    "aws",
    "gcp",
    "azure",
    "backblaze-b2",
    "wasabi",
    "cloudflare-r2",
    "coreweave",
    "oci",
    "nebius",
    "tigris",
    "hetzner",
    "idrive-e2",
    "onprem",
];

#[test]
fn every_shipped_provider_loads_and_the_required_ones_exist() {
    let c = catalog();
    for id in REQUIRED {
        assert!(c.get(id).is_ok(), "missing provider {id}");
    }
    for (id, classes) in [
        (
            "aws",
            &[
                "standard",
                "standard-ia",
                "glacier-ir",
                "glacier-flexible",
                "deep-archive",
            ][..],
        ),
        ("gcp", &["standard", "nearline", "coldline", "archive"]),
        ("azure", &["hot", "cool", "cold", "archive"]),
        ("cloudflare-r2", &["standard", "infrequent-access"]),
    ] {
        for class in classes {
            Place::resolve(c, &format!("{id}/{class}")).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    let aws = c.get("aws").unwrap();
    assert!(aws.file.regions.len() >= 3, "several AWS regions");
    for id in ["aws", "gcp", "azure"] {
        assert!(
            c.get(id).unwrap().file.exit_waiver.is_some(),
            "{id} exit waiver"
        );
    }
}

#[test]
fn every_file_in_providers_dir_is_the_embedded_one() {
    // The folder and the binary agree: loading the folder as an override changes nothing.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("providers");
    let from_dir = Catalog::load(Some(&dir)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(from_dir.ids(), catalog().ids());
    for p in from_dir.providers() {
        assert_eq!(
            p.sha256,
            catalog().get(&p.file.id).unwrap().sha256,
            "{}",
            p.file.id
        );
    }
}

#[test]
fn unknown_names_list_the_known_ones() {
    let e = Place::resolve(catalog(), "awz:us-east-1")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("unknown provider \"awz\"") && e.contains("backblaze-b2"),
        "{e}"
    );
    let e = Place::resolve(catalog(), "aws:mars-1")
        .unwrap_err()
        .to_string();
    assert!(e.contains("us-east-1"), "{e}");
    let e = Place::resolve(catalog(), "aws/frozen")
        .unwrap_err()
        .to_string();
    assert!(e.contains("deep-archive"), "{e}");
}

fn onprem_text() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/providers/onprem.toml"
    ))
    .unwrap()
}

fn broken(edit: impl FnOnce(String) -> String) -> CatalogError {
    let text = edit(onprem_text());
    parse_provider("x/onprem.toml", "onprem.toml", &text, "test").unwrap_err()
}

fn invalid(e: CatalogError) -> moverctl::tomlfile::FileError {
    match e {
        CatalogError::Invalid(f) => f,
        other => panic!("expected a located error, got {other}"),
    }
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn a_float_price_names_file_line_and_field() {
    let e = invalid(broken(|t| {
        t.replace("put = { price = \"0\"", "put = { price = 0.5")
    }));
    assert_eq!(e.file, "x/onprem.toml");
    assert_eq!(e.line, line_of(&onprem_text(), "put = { price"));
    assert_eq!(e.field, "classes[0].put.price");
    assert!(e.message.contains("string"), "{e}");
}

#[test]
fn a_missing_source_is_an_error() {
    let e = invalid(broken(|t| {
        t.replacen("source = \"moverctl convention\"\n", "", 1)
    }));
    assert!(e.message.contains("missing field `source`"), "{e}");
    assert_eq!(e.field, "transfer");
}

#[test]
fn tiers_out_of_order_are_located() {
    let e = invalid(broken(|t| {
        t.replace(
            "storage = [{ per_gb_month = \"0\" }]",
            "storage = [{ up_to_gb = \"100\", per_gb_month = \"1\" }, { up_to_gb = \"50\", per_gb_month = \"1\" }, { per_gb_month = \"1\" }]",
        )
    }));
    assert_eq!(e.field, "classes[0].storage[1].up_to_gb");
    assert!(e.message.contains("above the previous"), "{e}");
    assert_eq!(e.line, line_of(&onprem_text(), "storage = ["));
}

#[test]
fn unknown_fields_and_bad_defaults_are_rejected() {
    let e = invalid(broken(|t| {
        t.replace("default_class = \"standard\"", "default_class = \"gold\"")
    }));
    assert_eq!(
        (e.field.as_str(), e.line),
        ("default_class", line_of(&onprem_text(), "default_class"))
    );
    let e = invalid(broken(|t| {
        t.replace("max_parts = 10000", "max_parts = 10000\nmax_partz = 1")
    }));
    assert!(e.message.contains("unknown field `max_partz`"), "{e}");
    let e = invalid(broken(|t| t.replace("id = \"onprem\"", "id = \"other\"")));
    assert!(e.message.contains("file name"), "{e}");
    let e = invalid(broken(|t| {
        t.replace(
            "as_of = 2026-11-29\n\n[egress]",
            "as_of = \"last week\"\n\n[egress]",
        )
    }));
    assert_eq!(e.field, "billing.as_of");
}

#[test]
fn a_providers_folder_overrides_and_extends() {
    let dir = tempfile::tempdir().unwrap();
    let cheap = onprem_text()
        .replace("id = \"onprem\"", "id = \"my-nas\"")
        .replace(
            "storage = [{ per_gb_month = \"0\" }]",
            "storage = [{ per_gb_month = \"0.002\" }]",
        );
    std::fs::write(dir.path().join("my-nas.toml"), cheap).unwrap();
    let c = Catalog::load(Some(dir.path())).unwrap();
    assert!(c.get("my-nas").is_ok() && c.get("aws").is_ok());
    let cand = super::eval_with("aws", "onprem", &corpus(1_000_000_000_000, 10), |_| {});
    assert!(cand.cost.storage_per_month.is_zero());
    let src = Place::resolve(&c, "aws").unwrap();
    let dst = Place::resolve(&c, "my-nas").unwrap();
    let cand = moverctl::plan::model::evaluate(
        &src,
        &dst,
        &corpus(1_000_000_000_000, 10),
        &Default::default(),
    );
    // 1,000 GB x 0.002 = 2
    assert_eq!(cand.cost.storage_per_month, moverctl::money::Usd(d("2")));
}

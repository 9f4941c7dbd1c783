//! `plan --report FILE.html`: the page is self-contained, its charts draw the JSON plan's numbers,
//! and headless Chromium (Debian's `chromium`, installed by scripts/test.sh) renders it without
//! console errors into a non-blank screenshot.

use super::*;
use rust_decimal::Decimal;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const ARGS: &[&str] = &[
    "plan",
    "--from",
    "aws:us-east-1",
    "--to",
    "coreweave,cloudflare-r2,backblaze-b2,wasabi",
    "--bytes",
    "100TiB",
    "--objects",
    "10M",
    "--compute-at",
    "coreweave",
    "--epochs",
    "24",
    "--over-months",
    "12",
    "--gpu-hourly",
    "400",
    "--no-probe",
];

/// The report and the JSON plan of the same command.
fn report_and_json(dir: &Path) -> (String, Value) {
    let file = dir.join("plan.html");
    let o = moverctl()
        .args(ARGS)
        .arg("--report")
        .arg(&file)
        .output()
        .unwrap();
    expect(&o, 0);
    assert!(text(&o).contains("Report written to"), "{}", text(&o));
    let o = moverctl().args(ARGS).arg("--json").output().unwrap();
    expect(&o, 0);
    (
        std::fs::read_to_string(&file).unwrap(),
        serde_json::from_slice(&o.stdout).unwrap(),
    )
}

/// Every element `<TAG ... class="CLASS" ...>` of the page as its attributes.
fn elements(html: &str, tag: &str, class: &str) -> Vec<BTreeMap<String, String>> {
    let mut out = Vec::new();
    let open = format!("<{tag} ");
    let mut rest = html;
    while let Some(i) = rest.find(&open) {
        let after = &rest[i + open.len()..];
        let end = after.find('>').unwrap();
        let attrs = parse_attrs(&after[..end]);
        if attrs.get("class").map(String::as_str) == Some(class) {
            out.push(attrs);
        }
        rest = &after[end..];
    }
    out
}

fn parse_attrs(s: &str) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    let mut rest = s.trim();
    while let Some(eq) = rest.find("=\"") {
        let key = rest[..eq].trim().to_string();
        let after = &rest[eq + 2..];
        let close = after.find('"').unwrap();
        m.insert(key, unescape(&after[..close]));
        rest = after[close + 1..].trim_start();
    }
    m
}

fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

fn dec_of(v: &Value) -> Decimal {
    v.to_string().parse().unwrap()
}

#[test]
fn report_charts_draw_the_json_plans_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let (html, v) = report_and_json(dir.path());
    let cands = v["candidates"].as_array().unwrap();
    assert_eq!(cands.len(), 5, "four moves and stay");

    // Stacked bars: each non-zero item of each candidate is one segment with the JSON amount,
    // its width proportional to it, and the segments add up to the total.
    let segs = elements(&html, "rect", "seg");
    let scale: f64 = html
        .split("data-scale=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(scale > 0.0);
    for c in cands {
        let name = c["destination"].as_str().unwrap();
        let mine: Vec<_> = segs
            .iter()
            .filter(|s| s["data-candidate"] == name)
            .collect();
        assert!(!mine.is_empty(), "no bar for {name}");
        let mut sum = Decimal::ZERO;
        for s in &mine {
            let expected: Decimal = s["data-keys"]
                .split(' ')
                .map(|k| dec_of(&c["cost"][k]))
                .sum();
            let drawn: Decimal = s["data-value"].parse().unwrap();
            assert_eq!(drawn, expected, "{name} {}", s["data-item"]);
            let width: f64 = s["width"].parse().unwrap();
            let want = drawn.to_string().parse::<f64>().unwrap() * scale;
            assert!(
                (width - want).abs() < 0.01,
                "{name}: width {width} for {drawn}"
            );
            sum += drawn;
        }
        assert_eq!(
            sum,
            dec_of(&c["cost"]["total"]),
            "{name}: segments add up to the total"
        );
        // The ranked table row carries the same total.
        let rows = elements(&html, "tr", c["kind"].as_str().unwrap());
        let row = rows.iter().find(|r| r["data-candidate"] == name).unwrap();
        assert_eq!(row["data-total"].parse::<Decimal>().unwrap(), sum);
    }

    // Cumulative lines: one point per month per candidate with the JSON amount, drawn at the
    // height that amount gives on the axis (top 20, plot height 340, scaled to the axis top: the
    // round amount at or above the largest value, its highest tick).
    let max: f64 = html
        .split("data-max=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap()
        .parse()
        .unwrap();
    let pts = elements(&html, "circle", "pt")
        .into_iter()
        .chain(elements(&html, "rect", "pt"))
        .chain(elements(&html, "path", "pt"))
        .collect::<Vec<_>>();
    let lines = elements(&html, "polyline", "series");
    for c in cands {
        let name = c["destination"].as_str().unwrap();
        let cum = c["horizon"]["cumulative"].as_array().unwrap();
        assert_eq!(cum.len(), 13);
        let line = lines.iter().find(|l| l["data-candidate"] == name).unwrap();
        let ys: Vec<f64> = line["points"]
            .split(' ')
            .map(|p| p.split(',').nth(1).unwrap().parse().unwrap())
            .collect();
        assert_eq!(ys.len(), 13, "{name}");
        for (m, want) in cum.iter().enumerate() {
            let p = pts
                .iter()
                .find(|p| p["data-candidate"] == name && p["data-month"] == m.to_string())
                .unwrap_or_else(|| panic!("{name}: no point for month {m}"));
            assert_eq!(p["data-value"].parse::<Decimal>().unwrap(), dec_of(want));
            let y = 20.0 + 340.0 - 340.0 * want.as_f64().unwrap() / max;
            assert!(
                (ys[m] - y).abs() < 0.01,
                "{name} month {m}: y {} vs {y}",
                ys[m]
            );
        }
        // Break-even points are ringed at the JSON's month.
        let rings = elements(&html, "circle", "breakeven");
        match c["break_even_month"].as_u64() {
            Some(m) => assert!(
                rings
                    .iter()
                    .any(|r| r["data-candidate"] == name && r["data-month"] == m.to_string()),
                "{name}: no break-even ring at month {m}"
            ),
            None => assert!(!rings.iter().any(|r| r["data-candidate"] == name)),
        }
    }
    // Break-even months in the table (training from the source during the move, not idling,
    // brings them to month 1 here).
    for c in cands {
        if let Some(m) = c["break_even_month"].as_u64().filter(|m| *m > 0) {
            assert!(
                html.contains(&format!("month {m}")),
                "month {m} in the table"
            );
        }
    }

    // Self-contained: no script, stylesheet link, image, frame, import or external url.
    let lower = html.to_ascii_lowercase();
    for bad in [
        "<script",
        "<link",
        "<img",
        "<iframe",
        " src=",
        "href=",
        "@import",
        "@font-face",
    ] {
        assert!(!lower.contains(bad), "the report contains {bad:?}");
    }
    assert!(
        !lower.replace("url(#p", "").contains("url("),
        "only in-page patterns"
    );
    // Sources and dates, assumptions and warnings are on the page.
    for needle in [
        "Price sources and dates",
        "2025-10-28",
        "wring.co",
        "Assumptions",
        "limit or suspend",
        "GPU idle",
    ] {
        assert!(html.contains(needle), "missing {needle:?}");
    }
}

fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser"] {
        if let Ok(o) = Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            && o.status.success()
        {
            let p = String::from_utf8_lossy(&o.stdout).trim().to_string();
            if !p.is_empty() {
                return Some(PathBuf::from(p));
            }
        }
    }
    None
}

/// Render `page` headless; the screenshot's path and Chromium's stderr.
fn render(bin: &Path, page: &Path, png: &Path, profile: &Path) -> String {
    let o = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1280,2400",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "chromium failed: {err}");
    err
}

fn console_errors(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .collect()
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn report_renders_in_headless_chromium_without_console_errors() {
    let Some(bin) = chromium() else {
        if std::env::var("MOVERCTL_REQUIRE_SERVERS").as_deref() == Ok("1") {
            panic!("chromium is missing; scripts/test.sh installs Debian's chromium package");
        }
        eprintln!("skipped: no chromium (scripts/test.sh installs it)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (_, _) = report_and_json(dir.path());
    let page = dir.path().join("plan.html");
    let profile = tempfile::tempdir().unwrap();

    let shot = dir.path().join("plan.png");
    let err = render(&bin, &page, &shot, profile.path());
    assert!(
        console_errors(&err).is_empty(),
        "console errors: {:?}",
        console_errors(&err)
    );
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(png_size(&png), (1280, 2400));

    // Control pages: an empty page gives the size of a blank screenshot, and a page with a script
    // error shows that console errors are caught.
    let blank = dir.path().join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><html><body></body></html>").unwrap();
    let blank_png = dir.path().join("blank.png");
    render(&bin, &blank, &blank_png, profile.path());
    let blank_len = std::fs::metadata(&blank_png).unwrap().len();
    assert!(
        png.len() as u64 > 5 * blank_len,
        "the report's screenshot ({} bytes) is barely more than a blank page's ({blank_len})",
        png.len()
    );
    let bad = dir.path().join("bad.html");
    std::fs::write(
        &bad,
        "<!DOCTYPE html><html><body><script>throw new Error('boom')</script></body></html>",
    )
    .unwrap();
    let err = render(&bin, &bad, &dir.path().join("bad.png"), profile.path());
    assert!(
        !console_errors(&err).is_empty(),
        "a script error must be seen: {err}"
    );
}

/// `plan --tiering --report`: the page renders headless without console errors and draws more
/// than a blank page.
#[test]
fn tiering_report_renders_in_headless_chromium() {
    let Some(bin) = chromium() else {
        if std::env::var("MOVERCTL_REQUIRE_SERVERS").as_deref() == Ok("1") {
            panic!("chromium is missing; scripts/test.sh installs Debian's chromium package");
        }
        eprintln!("skipped: no chromium (scripts/test.sh installs it)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("tiering.html");
    let o = moverctl()
        .args(["plan", "--tiering", "--no-probe", "--from", "aws:us-east-1"])
        .args(["--dataset", "name=web,size=10TiB,objects=1M,reads=4"])
        .args(["--checkpoint", "size=1TiB,every=1h,keep=4"])
        .args(["--fast-tier", "aws-fsx-lustre-persistent-ssd-125"])
        .args([
            "--object-throughput",
            "4GiB/s,2GiB/s",
            "--gpu-hourly",
            "4500",
        ])
        .arg("--report")
        .arg(&page)
        .output()
        .unwrap();
    expect(&o, 0);
    let profile = tempfile::tempdir().unwrap();
    let shot = dir.path().join("tiering.png");
    let err = render(&bin, &page, &shot, profile.path());
    assert!(
        console_errors(&err).is_empty(),
        "console errors: {:?}",
        console_errors(&err)
    );
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(png_size(&png), (1280, 2400));
    let blank = dir.path().join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><html><body></body></html>").unwrap();
    let blank_png = dir.path().join("blank.png");
    render(&bin, &blank, &blank_png, profile.path());
    let blank_len = std::fs::metadata(&blank_png).unwrap().len();
    assert!(
        png.len() as u64 > 5 * blank_len,
        "the tiering report's screenshot ({} bytes) is barely more than a blank page's ({blank_len})",
        png.len()
    );
}

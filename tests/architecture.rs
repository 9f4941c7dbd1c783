//! The shape of the source tree, checked: the limits docs/architecture.md promises.
//!
//! - no function (method, closure-free `fn` item) over 120 lines in `src/`, none over 80 in the
//!   command-line layer (`src/cli/`);
//! - no source file over 900 lines, and the command-line layer under 3,500 lines in all;
//! - the command-line layer opens no store, journal or lock and blocks on no runtime itself: the
//!   job layer (`src/job/`) does;
//! - no circle of module references touches `src/cli/`, and nothing below `cli/` refers to it;
//! - every other circle of references between modules is listed in `KNOWN_CIRCLES` (none today),
//!   so a new one fails here. References between a module and its own submodules (a parent's
//!   shared types used by its children) are not counted.
//!
//! Sizes are read with `syn` (spans with line numbers), module references from every `crate::`,
//! `super::` and `self::` path outside `#[cfg(test)]` items. `cargo test --test architecture --
//! --nocapture` prints the measures.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::spanned::Spanned;
use syn::visit::Visit;

const MAX_FN_LINES: usize = 120;
const MAX_CLI_FN_LINES: usize = 80;
const MAX_FILE_LINES: usize = 900;
const MAX_CLI_LINES: usize = 3_500;
/// Circles of references between modules that are accepted, each as its sorted member list.
const KNOWN_CIRCLES: &[&[&str]] = &[];

struct SourceFile {
    /// Module path below the crate root, e.g. `transfer::copy` (`""` for lib.rs and main.rs).
    module: String,
    path: PathBuf,
    text: String,
    ast: syn::File,
}

fn src_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

fn module_of(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_string());
    }
    parts.join("::")
}

fn load() -> Vec<SourceFile> {
    let root = src_root();
    let mut paths = Vec::new();
    rust_files(&root, &mut paths);
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let module = module_of(path.strip_prefix(&root).unwrap());
            SourceFile {
                module,
                path,
                text,
                ast,
            }
        })
        .collect()
}

fn rel(path: &Path) -> String {
    path.strip_prefix(src_root()).unwrap().display().to_string()
}

fn in_cli(f: &SourceFile) -> bool {
    f.module == "cli" || f.module.starts_with("cli::")
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta.require_list().is_ok_and(|l| {
                let t = l.tokens.to_string();
                t == "test" || t.starts_with("all(test") || t.starts_with("any(test")
            })
    })
}

/// Every `fn` (free, in an impl or a trait) with its first line and length in lines.
#[derive(Default)]
struct Fns {
    found: Vec<(String, usize, usize)>,
}

impl Fns {
    fn add(&mut self, name: &syn::Ident, span: proc_macro2::Span) {
        let (a, b) = (span.start().line, span.end().line);
        self.found.push((name.to_string(), a, b - a + 1));
    }
}

impl<'a> Visit<'a> for Fns {
    fn visit_item_fn(&mut self, f: &'a syn::ItemFn) {
        self.add(&f.sig.ident, f.span());
        syn::visit::visit_item_fn(self, f);
    }
    fn visit_impl_item_fn(&mut self, f: &'a syn::ImplItemFn) {
        self.add(&f.sig.ident, f.span());
        syn::visit::visit_impl_item_fn(self, f);
    }
    fn visit_trait_item_fn(&mut self, f: &'a syn::TraitItemFn) {
        if f.default.is_some() {
            self.add(&f.sig.ident, f.span());
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

#[test]
fn no_function_is_longer_than_the_limit() {
    let mut over = Vec::new();
    let mut lengths = Vec::new();
    for f in load() {
        let mut v = Fns::default();
        v.visit_file(&f.ast);
        let limit = if in_cli(&f) {
            MAX_CLI_FN_LINES
        } else {
            MAX_FN_LINES
        };
        for (name, line, len) in v.found {
            lengths.push(len);
            if len > limit {
                over.push(format!(
                    "{}:{line} fn {name}: {len} lines (limit {limit})",
                    rel(&f.path)
                ));
            }
        }
    }
    lengths.sort_unstable();
    let p99 = lengths[lengths.len() * 99 / 100];
    println!(
        "{} functions; 99th percentile {p99} lines; {} over the limit",
        lengths.len(),
        over.len()
    );
    for o in &over {
        println!("  {o}");
    }
    assert!(
        over.is_empty(),
        "functions over the limit:\n{}",
        over.join("\n")
    );
}

#[test]
fn no_file_is_longer_than_the_limit_and_the_command_line_layer_stays_thin() {
    let files = load();
    let mut over = Vec::new();
    let mut cli_lines = 0;
    for f in &files {
        let n = f.text.lines().count();
        if in_cli(f) {
            cli_lines += n;
        }
        if n > MAX_FILE_LINES {
            over.push(format!(
                "{}: {n} lines (limit {MAX_FILE_LINES})",
                rel(&f.path)
            ));
        }
    }
    println!(
        "src/cli: {cli_lines} lines (limit {MAX_CLI_LINES}); files over {MAX_FILE_LINES}: {}",
        over.len()
    );
    for o in &over {
        println!("  {o}");
    }
    assert!(
        over.is_empty(),
        "files over the limit:\n{}",
        over.join("\n")
    );
    assert!(
        cli_lines < MAX_CLI_LINES,
        "src/cli has {cli_lines} lines, limit {MAX_CLI_LINES}"
    );
}

#[test]
fn the_command_line_layer_runs_no_job_itself() {
    // What only the job layer does: block on the runtime, open stores, the journal and the lock,
    // refine what a store is trusted with.
    let forbidden = [
        "block_on",
        "Store::open",
        "RunLock",
        "Journal::open",
        "refine_caps",
    ];
    let mut found = Vec::new();
    for f in load().iter().filter(|f| in_cli(f)) {
        for (i, line) in f.text.lines().enumerate() {
            for w in forbidden {
                if line.contains(w) {
                    found.push(format!("{}:{}: {w}: {}", rel(&f.path), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "the command-line layer does the job layer's work:\n{}",
        found.join("\n")
    );
}

/// The modules a file refers to, by `crate::`, `super::` and `self::` paths and by names of
/// its own child modules, outside `#[cfg(test)]` items.
struct Refs<'a> {
    here: Vec<String>,
    children: BTreeSet<String>,
    modules: &'a BTreeSet<String>,
    out: BTreeSet<String>,
}

impl Refs<'_> {
    fn resolve(&mut self, segs: &[String]) {
        let Some(first) = segs.first() else { return };
        let mut abs: Vec<String> = match first.as_str() {
            "crate" | "moverctl" => segs[1..].to_vec(),
            "super" => {
                let mut base = self.here.clone();
                let mut rest = segs;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
                base.extend(rest.iter().cloned());
                base
            }
            "self" => self.here.iter().chain(&segs[1..]).cloned().collect(),
            s if self.children.contains(s) => self.here.iter().chain(segs).cloned().collect(),
            _ => return,
        };
        // The longest prefix that is a module of this crate.
        while !abs.is_empty() {
            let m = abs.join("::");
            if self.modules.contains(&m) {
                self.out.insert(m);
                return;
            }
            abs.pop();
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, t: &syn::UseTree) {
        match t {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                prefix.push(n.ident.to_string());
                let p = prefix.clone();
                self.resolve(&p);
                prefix.pop();
            }
            syn::UseTree::Rename(r) => {
                prefix.push(r.ident.to_string());
                let p = prefix.clone();
                self.resolve(&p);
                prefix.pop();
            }
            syn::UseTree::Glob(_) => {
                let p = prefix.clone();
                self.resolve(&p);
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }
}

impl<'a> Visit<'a> for Refs<'_> {
    fn visit_item(&mut self, i: &'a syn::Item) {
        let attrs: &[syn::Attribute] = match i {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(m) => &m.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Const(c) => &c.attrs,
            _ => &[],
        };
        if !is_cfg_test(attrs) {
            syn::visit::visit_item(self, i);
        }
    }
    fn visit_item_use(&mut self, u: &'a syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &u.tree);
    }
    fn visit_path(&mut self, p: &'a syn::Path) {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        self.resolve(&segs);
        syn::visit::visit_path(self, p);
    }
    fn visit_macro(&mut self, m: &'a syn::Macro) {
        // Paths inside macro calls (format!, matches!, ...): parse the tokens as expressions
        // where they are; a macro whose arguments are not expressions is skipped.
        let parser = syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
        if let Ok(args) = m.parse_body_with(parser) {
            for e in &args {
                self.visit_expr(e);
            }
        }
        syn::visit::visit_macro(self, m);
    }
}

/// Module → the modules it refers to (the library's modules; main.rs is the binary).
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let files = load();
    let modules: BTreeSet<String> = files.iter().map(|f| f.module.clone()).collect();
    let mut graph = BTreeMap::new();
    for f in &files {
        if f.module.is_empty() {
            continue;
        }
        let here: Vec<String> = f.module.split("::").map(str::to_string).collect();
        let children = modules
            .iter()
            .filter_map(|m| m.strip_prefix(&format!("{}::", f.module)))
            .filter(|rest| !rest.contains("::"))
            .map(str::to_string)
            .collect();
        let mut r = Refs {
            here,
            children,
            modules: &modules,
            out: BTreeSet::new(),
        };
        r.visit_file(&f.ast);
        r.out.remove(&f.module);
        r.out.remove("");
        // A module and its own submodules refer to each other by design (a parent declares
        // the shared types and dispatches, its children use them): those edges are not circles.
        let related =
            |a: &str, b: &str| a.starts_with(&format!("{b}::")) || b.starts_with(&format!("{a}::"));
        r.out.retain(|m| !related(m, &f.module));
        graph.insert(f.module.clone(), r.out);
    }
    graph
}

/// Strongly connected components of more than one module (Tarjan's algorithm).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'g> {
        g: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on: BTreeSet<&'g str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    impl<'g> T<'g> {
        fn visit(&mut self, v: &'g str) {
            self.index.insert(v, self.next);
            self.low.insert(v, self.next);
            self.next += 1;
            self.stack.push(v);
            self.on.insert(v);
            for w in self.g.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.g.contains_key(w) {
                    continue;
                }
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.on.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut comp = Vec::new();
                loop {
                    let w = self.stack.pop().unwrap();
                    self.on.remove(w);
                    comp.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    self.out.push(comp);
                }
            }
        }
    }
    let mut t = T {
        g: graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.out
}

#[test]
fn no_circle_of_module_references_beyond_the_known_ones() {
    let graph = module_graph();
    let found = circles(&graph);
    for c in &found {
        println!("circle: {}", c.join(" <-> "));
    }
    let known: BTreeSet<Vec<String>> = KNOWN_CIRCLES
        .iter()
        .map(|c| c.iter().map(|s| s.to_string()).collect())
        .collect();
    let touching_cli: Vec<_> = found
        .iter()
        .filter(|c| c.iter().any(|m| m == "cli" || m.starts_with("cli::")))
        .collect();
    assert!(
        touching_cli.is_empty(),
        "circles through the command-line layer: {touching_cli:?}"
    );
    let new: Vec<_> = found.iter().filter(|c| !known.contains(*c)).collect();
    assert!(
        new.is_empty(),
        "circles of module references not in KNOWN_CIRCLES: {new:?}"
    );
}

#[test]
fn nothing_below_the_command_line_layer_refers_to_it() {
    let graph = module_graph();
    let mut up = Vec::new();
    for (m, refs) in &graph {
        if m == "cli" || m.starts_with("cli::") {
            continue;
        }
        for r in refs {
            if r == "cli" || r.starts_with("cli::") {
                up.push(format!("{m} -> {r}"));
            }
        }
    }
    assert!(up.is_empty(), "references up into cli/: {up:?}");
}

#[test]
fn the_checker_sees_a_circle_and_a_long_function() {
    // The checks above can fail: a made-up graph with a circle is found, and a 130-line function
    // is measured as 130 lines.
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    g.insert("c".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(circles(&g), vec![vec!["a".to_string(), "b".to_string()]]);
    let body = "    let x = 1;\n".repeat(128);
    let f: syn::File = syn::parse_str(&format!("fn long() {{\n{body}}}\n")).unwrap();
    let mut v = Fns::default();
    v.visit_file(&f);
    assert_eq!(v.found, vec![("long".to_string(), 1, 130)]);
}

//! The crate's modules form layers in the order data flows through them: a module uses only
//! modules of earlier layers (and `error`, which every layer reports through). Read from
//! the source's `crate::` paths, so a backward import fails here before it becomes a cycle.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The layers, earliest first. `error` is left out: it names the index's and the store's
/// error types, and every module returns it. So is `macros`: it imports nothing, and its
/// macros are in scope in every module without an import.
const LAYERS: &[&str] = &[
    "json",
    "record",
    "text",
    "exact",
    "features",
    "fingerprint",
    "index",
    "verify",
    "semantic",
    "store",
    "pipeline",
    "watch",
    "tune",
];

fn sources(path: &Path) -> Vec<PathBuf> {
    if path.is_dir() {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(path).unwrap() {
            out.extend(sources(&entry.unwrap().path()));
        }
        out
    } else if path.extension().is_some_and(|e| e == "rs") {
        vec![path.to_owned()]
    } else {
        Vec::new()
    }
}

/// The items a module file brings in from its submodules (`pub use record::{Record, ..};`,
/// `use decide::Outcome;`), by name, with the submodule each comes from: at the crate root,
/// `crate::Record` is a use of `record`; in a directory, `super::Outcome` one of `decide`.
fn reexports(file: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("use ") {
        let starts_line = rest[..at]
            .rsplit('\n')
            .next()
            .is_some_and(|l| l.trim().is_empty() || l.trim().starts_with("pub"));
        let stmt = &rest[at + 4..];
        let stmt = &stmt[..stmt.find(';').unwrap_or(stmt.len())];
        rest = &rest[at + 4..];
        let Some((module, items)) = stmt.split_once("::").filter(|_| starts_line) else {
            continue;
        };
        let items = items.trim().trim_start_matches('{').trim_end_matches('}');
        for item in items.split(',') {
            let item = item.trim().rsplit("::").next().unwrap_or("").trim();
            if !item.is_empty() && item != "self" && item != "*" {
                out.push((item.to_owned(), module.trim().to_owned()));
            }
        }
    }
    out
}

/// The names a source text uses after `prefix` (e.g. `crate::`), each once; comments (doc
/// links among them) are not uses.
fn names_after(text: &str, prefix: &str) -> BTreeSet<String> {
    let code: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| format!("{l}\n"))
        .collect();
    let text = code.as_str();
    text.match_indices(prefix)
        .map(|(at, _)| {
            text[at + prefix.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|n| !n.is_empty())
        .collect()
}

/// The top-level modules a module's sources name as `crate::NAME`, or through an item the
/// crate root re-exports (`crate::Record` is `record`).
fn uses(module: &str) -> BTreeSet<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let dir = src.join(module);
    let files = if dir.is_dir() {
        sources(&dir)
    } else {
        vec![src.join(format!("{module}.rs"))]
    };
    let exports = reexports(&src.join("lib.rs"));
    let mut used = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        // `$crate::` in macros is the crate itself, as is this.
        for name in names_after(&text, "crate::") {
            let name = exports
                .iter()
                .find(|(item, _)| *item == name)
                .map_or(name, |(_, m)| m.clone());
            if name != module && name != "error" {
                used.insert(name);
            }
        }
    }
    used
}

/// Whether the graph of `edges` has a cycle; if so, one of them.
fn cycle(edges: &[(String, String)]) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &[(String, String)],
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut found = path[at..].to_vec();
            found.push(node.to_owned());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for (_, to) in edges.iter().filter(|(from, _)| from == node) {
            if let Some(c) = visit(to, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .iter()
        .find_map(|(from, _)| visit(from, edges, &mut Vec::new(), &mut done))
}

#[test]
fn modules_use_only_earlier_layers() {
    let mut backward = Vec::new();
    for (i, module) in LAYERS.iter().enumerate() {
        for used in uses(module) {
            match LAYERS.iter().position(|m| *m == used) {
                Some(j) if j < i => {}
                Some(_) => backward.push(format!("{module} uses {used}")),
                // Re-exports at the crate root (crate::Result, crate::Error, ...).
                None => {}
            }
        }
    }
    assert!(
        backward.is_empty(),
        "backward imports (layers: {LAYERS:?}): {backward:?}"
    );
}

#[test]
fn every_module_is_in_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if !["lib", "error", "macros"].contains(&name.as_str()) && !LAYERS.contains(&name.as_str())
        {
            missing.push(name);
        }
    }
    assert!(missing.is_empty(), "modules in no layer: {missing:?}");
}

/// Inside each module directory, the submodules' imports of one another (`super::NAME`,
/// `crate::MODULE::NAME`) form no cycle: each directory reads one way too.
#[test]
fn submodules_import_one_another_without_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut cycles = Vec::new();
    for module in LAYERS {
        let dir = src.join(module);
        if !dir.is_dir() {
            continue;
        }
        // Each submodule: a file, or a file with a directory of its own.
        let mut subs: Vec<(String, Vec<PathBuf>)> = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            if name == "mod" || name == "tests" {
                continue;
            }
            let files = sources(&path);
            match subs.iter_mut().find(|(n, _)| *n == name) {
                Some((_, f)) => f.extend(files),
                None => subs.push((name, files)),
            }
        }
        let names: BTreeSet<&str> = subs.iter().map(|(n, _)| n.as_str()).collect();
        let exports = reexports(&dir.join("mod.rs"));
        let mut edges = Vec::new();
        for (name, files) in &subs {
            let mut used = BTreeSet::new();
            for file in files {
                let text = std::fs::read_to_string(file).unwrap();
                // A file's own `mod tests` and its children refer to it through `super::`.
                let own = file.parent() != Some(dir.as_path());
                if !own {
                    used.extend(names_after(&text, "super::"));
                }
                used.extend(names_after(&text, &format!("crate::{module}::")));
            }
            for u in used {
                let u = exports
                    .iter()
                    .find(|(item, _)| *item == u)
                    .map_or(u, |(_, m)| m.clone());
                if u != *name && names.contains(u.as_str()) {
                    edges.push((name.clone(), u));
                }
            }
        }
        if let Some(c) = cycle(&edges) {
            cycles.push(format!("{module}: {}", c.join(" -> ")));
        }
    }
    assert!(cycles.is_empty(), "import cycles: {cycles:?}");
}

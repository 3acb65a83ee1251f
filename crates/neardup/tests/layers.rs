//! The crate's modules form layers in the order data flows through them: a module uses only
//! modules of earlier layers (and `error`, which every layer reports through). Read from
//! the source's `crate::` paths, so a backward import fails here before it becomes a cycle.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The layers, earliest first. `error` is left out: it names the index's and the store's
/// error types, and every module returns it.
const LAYERS: &[&str] = &[
    "record",
    "text",
    "exact",
    "features",
    "fingerprint",
    "index",
    "verify",
    "store",
    "pipeline",
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

/// The top-level modules a module's sources name as `crate::NAME`.
fn uses(module: &str) -> BTreeSet<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let dir = src.join(module);
    let files = if dir.is_dir() {
        sources(&dir)
    } else {
        vec![src.join(format!("{module}.rs"))]
    };
    let mut used = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (at, _) in text.match_indices("crate::") {
            // `$crate::` in macros is the crate itself, as is this.
            let name: String = text[at + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && name != module && name != "error" {
                used.insert(name);
            }
        }
    }
    used
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
        if name != "lib" && name != "error" && !LAYERS.contains(&name.as_str()) {
            missing.push(name);
        }
    }
    assert!(missing.is_empty(), "modules in no layer: {missing:?}");
}

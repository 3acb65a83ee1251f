//! Code mode against word mode on real source code with plagiarism-style rewrites (issue 39,
//! seed 002 section 6.2).
//!
//! Real code nobody here wrote: Rust from the cargo registry, Python from the interpreter's
//! standard library and installed packages, and C from `/usr/include` and the registry's C
//! sources (the Rust toolchain's own documentation is never read). Each corpus takes files of
//! 1 to 40 KB, at most two from a directory, and leaves out files that are already near
//! copies of a kept one. Each kept file gets one rewrite, as someone hiding a copy would
//! make it: every identifier renamed consistently, top-level functions in reverse order,
//! comments dropped and others written, indentation changed (not in Python) and a
//! statement inserted at the top of some function bodies. Truth: a file and its rewrite
//! are duplicates, every other pair is not.
//!
//! For each shingle width, the pairs' Hamming distances and Jaccard similarities are
//! compared with the truth: the recall at a precision of at least 0.99 (the best (k, J) on
//! the grid), and at the given rule, for code mode and for word mode side by side.
//!
//! `cargo run --release -p neardup --example code_eval -- [--files N] [--widths 4,6,8]
//! [--npm DIR] [--java DIR] [--go DIR] [--corpora rust,python,c,javascript,typescript,java,go]`:
//! `--npm` adds JavaScript and TypeScript from npm packages unpacked under DIR
//! (`scripts/code_npm.sh`; builds, minified files and type declarations are left out),
//! `--java` and `--go` the JDK's and Go's library sources (`scripts/code_java_go.sh`).
//!
//! With `--vendored DIR --originals DIR` it measures vendored copies instead: the files of a
//! `_vendor` folder (pip's, say) against the same releases of the libraries from the package
//! registry, unpacked one per folder under `--originals` (`scripts/code_vendored.sh` fetches
//! them). Truth: a vendored file and the original at the same path within its package
//! (`rich/text.py`) are a pair; every other vendored-original pair is not.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

mod score;
#[path = "../../benches/seeded.rs"]
mod seeded;

use neardup::hamming;
use neardup::text::{CodeLang, TokenRule};
use neardup::verify::id_jaccard;
use neardup::{Field, Scratch, SimHasher};
use score::{at, best, dump, quantiles, score};
use seeded::XorShift as Rng;
use tree_sitter::{Node, Parser};

fn walk(dir: &Path, ext: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_symlink() {
            continue;
        }
        if path.is_dir() {
            walk(&path, ext, out);
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| ext.contains(&e))
        {
            out.push(path);
        }
    }
}

fn home() -> PathBuf {
    PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| "/root".into()))
}

/// The corpora: (name, language, roots, extensions). With `npm` (packages unpacked one per
/// folder, as `scripts/code_npm.sh` fetches them), JavaScript and TypeScript too; with
/// `java` and `go` (source trees), Java and Go.
fn corpora(
    npm: Option<&Path>,
    java: Option<&Path>,
    go: Option<&Path>,
) -> Vec<(&'static str, CodeLang, Vec<PathBuf>, Vec<&'static str>)> {
    let registry = home().join(".cargo/registry/src");
    let mut python = vec![PathBuf::from("/usr/lib/python3")];
    if let Ok(entries) = std::fs::read_dir("/usr/lib") {
        let mut dirs: Vec<_> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("python3."))
            })
            .collect();
        dirs.sort();
        python.extend(dirs);
    }
    let mut out = vec![
        ("rust", CodeLang::Rust, vec![registry.clone()], vec!["rs"]),
        ("python", CodeLang::Python, python, vec!["py"]),
        (
            "c",
            CodeLang::C,
            vec![PathBuf::from("/usr/include"), registry],
            vec!["c", "h"],
        ),
    ];
    if let Some(npm) = npm {
        out.push((
            "javascript",
            CodeLang::JavaScript,
            vec![npm.to_owned()],
            vec!["js"],
        ));
        out.push((
            "typescript",
            CodeLang::TypeScript,
            vec![npm.to_owned()],
            vec!["ts"],
        ));
    }
    if let Some(java) = java {
        out.push(("java", CodeLang::Java, vec![java.to_owned()], vec!["java"]));
    }
    if let Some(go) = go {
        out.push(("go", CodeLang::Go, vec![go.to_owned()], vec!["go"]));
    }
    out
}

/// Whether a path is generated or bundled code rather than source someone wrote: builds
/// (`dist/`, CommonJS and ES module builds), minified files, type declarations.
fn generated(name: &str) -> bool {
    [
        "/dist/", "/cjs/", "/esm/", "/esm5/", "/min/", ".min.", ".d.ts", "/build/",
    ]
    .iter()
    .any(|m| name.contains(m))
}

/// Up to `max` files of 1 to 40 KB that parse, at most `per_dir` per directory, spread over
/// the list (the list is sorted, so taking every n-th spreads over packages).
fn pick(
    lang: CodeLang,
    roots: &[PathBuf],
    ext: &[&str],
    max: usize,
    per_dir: usize,
) -> Vec<(String, String)> {
    let mut paths = Vec::new();
    for root in roots {
        walk(root, ext, &mut paths);
    }
    let mut taken: HashMap<PathBuf, usize> = HashMap::new();
    let mut out = Vec::new();
    let step = (paths.len() / (max * 3)).max(1);
    for path in paths.iter().step_by(step) {
        let name = path.to_string_lossy();
        if name.contains("/.rustup/") || name.ends_with("parser.c") || generated(&name) {
            continue;
        }
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        if taken.get(&dir).copied().unwrap_or(0) >= per_dir {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        // C headers that are C++ (LLVM's, libstdc++'s) are C++, not C.
        let cpp = lang == CodeLang::C
            && ["namespace ", "template <", "template<", "class ", "C++"]
                .iter()
                .any(|m| text.contains(m));
        if cpp
            || !(1_000..=40_000).contains(&text.len())
            || neardup::text::code_tokens(&text, lang).is_none()
        {
            continue;
        }
        *taken.entry(dir).or_default() += 1;
        out.push((name.into_owned(), text));
        if out.len() == max {
            break;
        }
    }
    out
}

fn parser(lang: CodeLang) -> Parser {
    let mut p = Parser::new();
    let grammar: tree_sitter::Language = match lang {
        CodeLang::Rust => tree_sitter_rust::LANGUAGE.into(),
        CodeLang::Python => tree_sitter_python::LANGUAGE.into(),
        CodeLang::C => tree_sitter_c::LANGUAGE.into(),
        CodeLang::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
        CodeLang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        CodeLang::Java => tree_sitter_java::LANGUAGE.into(),
        CodeLang::Go => tree_sitter_go::LANGUAGE.into(),
        other => panic!("no rewriter for {other:?}"),
    };
    p.set_language(&grammar).expect("grammar loads");
    p
}

/// Byte-range edits of the source: (start, end, replacement).
type Edits = Vec<(usize, usize, String)>;

fn nodes<'t>(node: Node<'t>, out: &mut Vec<Node<'t>>) {
    out.push(node);
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        nodes(child, out);
    }
}

/// A plagiarism-style rewrite of `source` (see the module docs).
fn rewrite(source: &str, lang: CodeLang, rng: &mut Rng) -> String {
    let tree = parser(lang).parse(source, None).expect("parses");
    let mut all = Vec::new();
    nodes(tree.root_node(), &mut all);
    let comment = if lang == CodeLang::Python { "#" } else { "//" };
    let mut edits: Edits = Vec::new();
    // Identifiers renamed consistently; comments dropped.
    let mut names: HashMap<&str, String> = HashMap::new();
    for n in &all {
        let kind = n.kind();
        if n.child_count() == 0 && kind.ends_with("identifier") {
            let old = &source[n.byte_range()];
            let len = names.len();
            let new = names
                .entry(old)
                .or_insert_with(|| format!("v{len}_{}", rng.below(1000)))
                .clone();
            edits.push((n.start_byte(), n.end_byte(), new));
        } else if kind.contains("comment") {
            edits.push((n.start_byte(), n.end_byte(), String::new()));
        }
    }
    // A statement at the top of about half the function bodies.
    for n in &all {
        let body = match (lang, n.kind()) {
            (CodeLang::Rust, "function_item") => n.child_by_field_name("body"),
            (CodeLang::C, "function_definition") => n.child_by_field_name("body"),
            (CodeLang::Python, "function_definition") => n.child_by_field_name("body"),
            (
                CodeLang::JavaScript | CodeLang::TypeScript,
                "function_declaration" | "method_definition" | "function_expression",
            ) => n.child_by_field_name("body"),
            (CodeLang::Java, "method_declaration" | "constructor_declaration")
            | (CodeLang::Go, "function_declaration" | "method_declaration") => {
                n.child_by_field_name("body")
            }
            _ => None,
        };
        let Some(body) = body else { continue };
        if rng.below(2) == 0 {
            continue;
        }
        let k = rng.below(100);
        match lang {
            CodeLang::Python => {
                let at = body.start_byte();
                let col = body.start_position().column;
                edits.push((at, at, format!("trace_{k} = {k}\n{}", " ".repeat(col))));
            }
            CodeLang::Rust | CodeLang::JavaScript | CodeLang::TypeScript => {
                let at = body.start_byte() + 1;
                edits.push((at, at, format!(" let _trace_{k} = {k};")));
            }
            CodeLang::Go => {
                let at = body.start_byte() + 1;
                edits.push((at, at, format!(" trace{k} := {k};")));
            }
            _ => {
                let at = body.start_byte() + 1;
                edits.push((at, at, format!(" int trace_{k} = {k};")));
            }
        }
    }
    let mut out = apply(source, edits);
    // Top-level functions in reverse order: re-parse and swap the function items' text.
    out = reverse_functions(&out, lang);
    // Comments written, layout changed.
    let mut lines = Vec::new();
    let mut continued = false;
    for (i, line) in out.lines().enumerate() {
        // Not between the lines of a macro continued by a backslash (it would end there).
        if i % 12 == 5 && lang != CodeLang::Python && !continued {
            lines.push(format!("{comment} step {i}"));
        }
        if lang == CodeLang::Python {
            lines.push(line.trim_end().to_owned());
        } else {
            let trimmed = line.trim_start();
            let depth = (line.len() - trimmed.len()) / 4;
            lines.push(format!("{}{}", "  ".repeat(depth), trimmed.trim_end()));
        }
        continued = line.trim_end().ends_with('\\');
    }
    lines.join("\n") + "\n"
}

fn apply(source: &str, mut edits: Edits) -> String {
    edits.sort_by_key(|e| (e.0, e.1));
    let mut out = String::with_capacity(source.len() + 1024);
    let mut at = 0;
    for (start, end, text) in edits {
        if start < at {
            continue; // inside an edit already made (a comment's identifiers)
        }
        out.push_str(&source[at..start]);
        out.push_str(&text);
        at = end;
    }
    out.push_str(&source[at..]);
    out
}

fn reverse_functions(source: &str, lang: CodeLang) -> String {
    let Some(tree) = parser(lang).parse(source, None) else {
        return source.to_owned();
    };
    let mut root = tree.root_node();
    let function = match lang {
        CodeLang::Rust => "function_item",
        CodeLang::JavaScript | CodeLang::TypeScript | CodeLang::Go => "function_declaration",
        CodeLang::Java => "method_declaration",
        _ => "function_definition",
    };
    if lang == CodeLang::Java {
        // A Java file's methods are its first class's: reversed inside its body.
        let mut cursor = root.walk();
        let class = root
            .children(&mut cursor)
            .find(|c| c.kind() == "class_declaration");
        match class.and_then(|c| c.child_by_field_name("body")) {
            Some(body) => root = body,
            None => return source.to_owned(),
        }
    }
    let mut cursor = root.walk();
    let ranges: Vec<_> = root
        .children(&mut cursor)
        .filter(|c| c.kind() == function)
        .map(|c| c.byte_range())
        .collect();
    if ranges.len() < 2 {
        return source.to_owned();
    }
    let texts: Vec<&str> = ranges.iter().map(|r| &source[r.clone()]).collect();
    let edits = ranges
        .iter()
        .zip(texts.iter().rev())
        .map(|(r, t)| (r.start, r.end, (*t).to_owned()))
        .collect();
    apply(source, edits)
}

/// Each document's fingerprint and verification set under `hasher`.
fn analyse(hasher: &SimHasher, docs: &[String]) -> Vec<(u64, std::sync::Arc<[u32]>)> {
    let mut scratch = Scratch::default();
    docs.iter()
        .map(
            |d| match hasher.analyze_ids(&[Field::new(d)], None, &mut scratch) {
                Ok(a) => (a.fingerprint.as_u64(), a.shingles),
                Err(e) => panic!("{e}: {:?}", &d[..d.len().min(300)]),
            },
        )
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let files: usize = arg("--files").and_then(|s| s.parse().ok()).unwrap_or(300);
    let widths: Vec<usize> = arg("--widths")
        .map(|s| s.split(',').filter_map(|w| w.parse().ok()).collect())
        .unwrap_or_else(|| vec![4, 6, 8, 10, 12]);
    let rule_k: u32 = arg("--k").and_then(|s| s.parse().ok()).unwrap_or(16);
    let rule_t: f64 = arg("--jaccard").and_then(|s| s.parse().ok()).unwrap_or(0.5);
    let dump_to = arg("--dump");
    if let (Some(vendor), Some(originals)) = (arg("--vendored"), arg("--originals")) {
        for &width in arg("--widths").map_or(&[4][..], |_| &widths) {
            vendored(
                Path::new(&vendor),
                Path::new(&originals),
                width,
                rule_k,
                rule_t,
                dump_to.as_deref(),
            );
        }
        return;
    }
    println!(
        "corpus | mode | width | files | true pairs: distance | recall at P>=0.99 (k, J) | P, R at k {rule_k}, J {rule_t}"
    );
    let only: Option<Vec<String>> =
        arg("--corpora").map(|s| s.split(',').map(str::to_owned).collect());
    let [npm, java, go] = ["--npm", "--java", "--go"].map(|a| arg(a).map(PathBuf::from));
    for (name, lang, roots, ext) in corpora(npm.as_deref(), java.as_deref(), go.as_deref()) {
        if only.as_ref().is_some_and(|o| !o.iter().any(|c| c == name)) {
            continue;
        }
        // A few npm packages hold a language's files in a few folders (rxjs's operators):
        // more per folder there, two elsewhere (thousands of packages).
        let per_dir = if matches!(lang, CodeLang::JavaScript | CodeLang::TypeScript) {
            12
        } else {
            2
        };
        let picked = pick(lang, &roots, &ext, files * 2, per_dir);
        // Leave out files that are already near copies of a kept one (code Jaccard >= 0.3
        // at width 6), so that the truth's negatives are distinct files.
        let probe = SimHasher::builder()
            .tokens(TokenRule::Code(lang))
            .shingle_width(6)
            .build()
            .expect("a valid profile");
        let sets = analyse(
            &probe,
            &picked.iter().map(|p| p.1.clone()).collect::<Vec<_>>(),
        );
        let mut kept: Vec<usize> = Vec::new();
        for i in 0..picked.len() {
            if kept
                .iter()
                .all(|&k| id_jaccard(&sets[i].1, &sets[k].1) < 0.3)
            {
                kept.push(i);
            }
            if kept.len() == files {
                break;
            }
        }
        let mut rng = Rng(0x5eed ^ kept.len() as u64);
        let mut broken = 0;
        let mut docs: Vec<String> = Vec::new();
        let mut twin: Vec<usize> = Vec::new();
        for &i in &kept {
            let original = &picked[i].1;
            let copy = rewrite(original, lang, &mut rng);
            // A copy that hides its source still compiles: a rewrite this generator broke
            // (a macro cut in two, say) is left out, and counted.
            if copy.trim().is_empty() || neardup::text::code_tokens(&copy, lang).is_none() {
                broken += 1;
                continue;
            }
            let n = docs.len();
            docs.push(original.clone());
            docs.push(copy);
            twin.extend([n + 1, n]);
        }
        println!(
            "{name}: {} files, {broken} rewrites left out (they do not parse as {})",
            docs.len() / 2,
            lang.name()
        );
        let unique: HashSet<&String> = docs.iter().collect();
        assert_eq!(
            unique.len(),
            docs.len(),
            "every rewrite differs from its original"
        );
        for width in &widths {
            for (mode, rule) in [
                ("code", TokenRule::Code(lang)),
                ("words", TokenRule::Unicode),
            ] {
                let hasher = SimHasher::builder()
                    .tokens(rule)
                    .shingle_width(*width)
                    .build()
                    .expect("a valid profile");
                let s = score(&analyse(&hasher, &docs), &twin);
                if let Some(path) = &dump_to {
                    let labels = [
                        ("positives", &s.positives[..]),
                        ("negatives", &s.near_negatives[..]),
                    ];
                    dump(path, name, mode, *width, &labels);
                }
                let (r, p, k, t) = best(&s);
                let (pp, rr) = at(&s, rule_k, rule_t);
                let distances = quantiles(s.positives.iter().map(|p| p.0).collect());
                println!(
                    "{name} | {mode} | {width} | {} | {distances} | {r:.3} (P {p:.3}, k {k}, J {t:.2}) | {pp:.3}, {rr:.3}",
                    docs.len() / 2
                );
            }
        }
    }
    if only.is_none() {
        releases(rule_k, rule_t);
    }
}

/// Two releases of the same crates in the cargo registry, a real recrawl of code: the files
/// at the same path in both are pairs of versions (identical, lightly or heavily edited);
/// files at different paths are distinct. Printed: how many same-path pairs each mode merges
/// at the rule, and how many different-path pairs it merges (false merges).
fn releases(k: u32, t: f64) {
    let registry = home().join(".cargo/registry/src");
    let mut by_name: HashMap<String, Vec<PathBuf>> = HashMap::new();
    for index in std::fs::read_dir(&registry).into_iter().flatten().flatten() {
        for krate in std::fs::read_dir(index.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let dir = krate.path();
            let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            // `name-1.2.3`: the name is what comes before the last `-` followed by a digit.
            let Some(at) = name
                .char_indices()
                .rev()
                .find(|&(i, c)| c == '-' && name[i + 1..].starts_with(|d: char| d.is_ascii_digit()))
                .map(|(i, _)| i)
            else {
                continue;
            };
            by_name.entry(name[..at].to_owned()).or_default().push(dir);
        }
    }
    let mut names: Vec<_> = by_name.into_iter().filter(|(_, v)| v.len() >= 2).collect();
    names.sort();
    let mut docs: Vec<String> = Vec::new();
    let mut paths: Vec<String> = Vec::new();
    // (release-0 doc, release-1 doc) at the same path.
    let mut same: Vec<(usize, usize, bool)> = Vec::new();
    let mut crate_of: Vec<usize> = Vec::new();
    for (c, (_, mut dirs)) in names.into_iter().enumerate() {
        dirs.sort();
        let (old, new) = (&dirs[0], &dirs[dirs.len() - 1]);
        let mut files = Vec::new();
        walk(old, &["rs"], &mut files);
        for path in files {
            let Ok(rel) = path.strip_prefix(old) else {
                continue;
            };
            let (Ok(a), Ok(b)) = (
                std::fs::read_to_string(&path),
                std::fs::read_to_string(new.join(rel)),
            ) else {
                continue;
            };
            if a.len() < 500 || b.len() < 500 || a.len() > 200_000 || b.len() > 200_000 {
                continue;
            }
            let n = docs.len();
            same.push((n, n + 1, a == b));
            docs.push(a);
            docs.push(b);
            paths.push(path.display().to_string());
            paths.push(new.join(rel).display().to_string());
            crate_of.extend([c, c]);
        }
    }
    println!(
        "releases: {} files in two releases of {} crates ({} identical)",
        same.len(),
        crate_of.last().map_or(0, |c| c + 1),
        same.iter().filter(|p| p.2).count()
    );
    let pair_of: HashMap<usize, usize> = same
        .iter()
        .flat_map(|&(a, b, _)| [(a, b), (b, a)])
        .collect();
    for (mode, rule) in [
        ("code", TokenRule::Code(CodeLang::Rust)),
        ("words", TokenRule::Unicode),
    ] {
        let hasher = SimHasher::builder()
            .tokens(rule)
            .build()
            .expect("a valid profile");
        let a = analyse(&hasher, &docs);
        let merged =
            |i: usize, j: usize| hamming(a[i].0, a[j].0) <= k && id_jaccard(&a[i].1, &a[j].1) >= t;
        let edited: Vec<_> = same.iter().filter(|p| !p.2).collect();
        let found = edited.iter().filter(|p| merged(p.0, p.1)).count();
        let mut false_merges = 0;
        let mut other_crate = 0;
        let mut shown = 0;
        for i in 0..docs.len() {
            for j in i + 1..docs.len() {
                if pair_of.get(&i) != Some(&j) && hamming(a[i].0, a[j].0) <= k && merged(i, j) {
                    false_merges += 1;
                    other_crate += usize::from(crate_of[i] != crate_of[j]);
                    if std::env::var_os("CODE_EVAL_SHOW").is_some()
                        && shown < 12
                        && docs[i] != docs[j]
                    {
                        shown += 1;
                        println!(
                            "  {mode}: {} ~ {} (J {:.2})",
                            paths[i],
                            paths[j],
                            id_jaccard(&a[i].1, &a[j].1)
                        );
                    }
                }
            }
        }
        println!("  ({other_crate} of them across crates)");
        println!(
            "releases | {mode} | edited same-path pairs merged {found} of {} | different-path pairs merged {false_merges}",
            edited.len()
        );
    }
}

/// Python files of `dir` by their path within their package: `rich/text.py` for
/// `DIR/rich/text.py` (vendored) or `DIR/rich-13.4.2/rich/text.py` (`skip` 1: the
/// unpacked release's folder), with their text; files under 300 bytes (empty `__init__.py`)
/// and over 400 KB are left out.
fn python_files(dir: &Path, skip: usize) -> Vec<(String, String)> {
    let mut files = Vec::new();
    walk(dir, &["py"], &mut files);
    let mut out: Vec<(String, String)> = files
        .into_iter()
        .filter_map(|path| {
            let rel = path.strip_prefix(dir).ok()?;
            let key: Vec<String> = rel
                .components()
                .skip(skip)
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let text = std::fs::read_to_string(&path).ok()?;
            (300..=400_000)
                .contains(&text.len())
                .then(|| (key.join("/"), text))
        })
        .collect();
    out.sort();
    out
}

/// Vendored copies against their originals: each vendored file is looked up among the
/// originals, as a store of the originals would be queried. Printed per mode: the pairs
/// found at the rule (identical and edited ones apart), matches with the same module
/// vendored elsewhere (setuptools carries its own `packaging`, urllib3 its own `six`: those
/// are copies too, counted apart), the false matches, and the distances of the true pairs.
fn vendored(vendor: &Path, originals: &Path, width: usize, k: u32, t: f64, dump_to: Option<&str>) {
    let copies = python_files(vendor, 0);
    let sources = python_files(originals, 1);
    let index: HashMap<&str, usize> = sources
        .iter()
        .enumerate()
        .map(|(i, (key, _))| (key.as_str(), i))
        .collect();
    let truth: Vec<Option<usize>> = copies
        .iter()
        .map(|(key, _)| index.get(key.as_str()).copied())
        .collect();
    let paired = truth.iter().filter(|t| t.is_some()).count();
    let identical = copies
        .iter()
        .zip(&truth)
        .filter(|((_, text), t)| t.is_some_and(|j| sources[j].1 == *text))
        .count();
    println!(
        "vendored: {} files in {}, {} originals in {}; {paired} have an original at the same path ({identical} identical, {} edited)",
        copies.len(),
        vendor.display(),
        sources.len(),
        originals.display(),
        paired - identical
    );
    println!("width {width}");
    println!("vendored | mode | true pairs found (edited) | same module vendored elsewhere | false matches | precision | recall | distance of true pairs");
    for (mode, rule) in [
        ("code", TokenRule::Code(CodeLang::Python)),
        ("words", TokenRule::Unicode),
    ] {
        let hasher = SimHasher::builder()
            .tokens(rule)
            .shingle_width(width)
            .build()
            .expect("a valid profile");
        let a = analyse(
            &hasher,
            &copies.iter().map(|c| c.1.clone()).collect::<Vec<_>>(),
        );
        let b = analyse(
            &hasher,
            &sources.iter().map(|s| s.1.clone()).collect::<Vec<_>>(),
        );
        let (mut found, mut found_edited, mut false_matches) = (0usize, 0usize, 0usize);
        let mut elsewhere = 0usize;
        let mut shown = 0;
        let mut distances = Vec::new();
        // Every pair within 24 bits, for `--dump`: true, the same module elsewhere, false.
        let mut pairs: [Vec<(u32, f64)>; 3] = Default::default();
        for (i, x) in a.iter().enumerate() {
            if let Some(j) = truth[i] {
                distances.push(hamming(x.0, b[j].0));
            }
            for (j, y) in b.iter().enumerate() {
                let d = hamming(x.0, y.0);
                // 0: the true pair, 1: the same module vendored elsewhere, 2: another file;
                // identical texts at other paths (a module copied within a package) are
                // exact copies, not false matches, and left out.
                let kind = if truth[i] == Some(j) {
                    0
                } else if sources[j].0.ends_with(&format!("/{}", copies[i].0))
                    || copies[i].0.ends_with(&format!("/{}", sources[j].0))
                {
                    1
                } else if copies[i].1 != sources[j].1 {
                    2
                } else {
                    continue;
                };
                let scored = kind == 0 || d <= k || (dump_to.is_some() && d <= 24);
                if !scored {
                    continue;
                }
                let jaccard = id_jaccard(&x.1, &y.1);
                if dump_to.is_some() && (kind == 0 || d <= 24) {
                    pairs[kind].push((d, jaccard));
                }
                if d > k || jaccard < t {
                    continue;
                }
                match kind {
                    0 => {
                        found += 1;
                        found_edited += usize::from(copies[i].1 != sources[j].1);
                    }
                    1 => elsewhere += 1,
                    _ => {
                        false_matches += 1;
                        if std::env::var_os("CODE_EVAL_SHOW").is_some() && shown < 15 {
                            shown += 1;
                            println!(
                                "  {mode}: {} ~ {} ({d} bits, J {jaccard:.2})",
                                copies[i].0, sources[j].0
                            );
                        }
                    }
                }
            }
        }
        let precision =
            (found + elsewhere) as f64 / (found + elsewhere + false_matches).max(1) as f64;
        println!(
            "vendored | {mode} | {found} of {paired} ({found_edited} of {}) | {elsewhere} | {false_matches} | {precision:.3} | {:.3} | {}",
            paired - identical,
            found as f64 / paired.max(1) as f64,
            quantiles(distances)
        );
        if let Some(path) = dump_to {
            let [truths, elsewhere, falses] = &pairs;
            let labels = [
                ("positives", &truths[..]),
                ("elsewhere", &elsewhere[..]),
                ("negatives", &falses[..]),
            ];
            dump(path, "vendored", mode, width, &labels);
        }
    }
}

//! `corpus`: the quality corpus.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;

use crate::args::Args;
use crate::edits::{edit, vocabulary};
use crate::rng::Rng;
use crate::sources::{read_text, render_man, walk, write_jsonl};
use crate::AnyResult;

pub(crate) fn cmd_corpus(args: &Args) -> AnyResult<()> {
    let out = PathBuf::from(args.get("out").ok_or("--out DIR")?);
    std::fs::create_dir_all(&out)?;
    let man_pages: usize = args.num("man-pages", 400);
    let seed: u64 = args.num("seed", 7);
    let mut rng = Rng::new(seed);
    let t0 = Instant::now();
    let mut base: Vec<(String, String)> = Vec::new();
    let mut counts = HashMap::new();
    // Every package's copyright file: packages of one source share theirs, and many share
    // licence texts (the same text published under several names).
    let mut dirs: Vec<_> = std::fs::read_dir("/usr/share/doc")?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    dirs.sort();
    for d in dirs {
        if let Some(text) = read_text(&d.join("copyright")) {
            let name = d.file_name().unwrap().to_string_lossy().into_owned();
            base.push((format!("copyright:{name}"), text));
            *counts.entry("copyright").or_insert(0) += 1;
        }
    }
    // The licences: real versions of each other (GPL-2/3, LGPL-2/2.1/3, GFDL-1.2/1.3).
    let mut lic = Vec::new();
    walk(Path::new("/usr/share/common-licenses"), &mut lic);
    for p in lic {
        if let Some(text) = read_text(&p) {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            base.push((format!("license:{name}"), text));
            *counts.entry("license").or_insert(0) += 1;
        }
    }
    // English man pages, a deterministic random sample, rendered with `man -l`.
    let mut pages = Vec::new();
    for s in ["man1", "man5", "man7", "man8"] {
        walk(&Path::new("/usr/share/man").join(s), &mut pages);
    }
    rng.shuffle(&mut pages);
    pages.truncate(man_pages);
    pages.sort();
    let rendered: Vec<(String, String)> = pages
        .par_iter()
        .filter_map(|p| {
            let name = p
                .file_name()?
                .to_string_lossy()
                .trim_end_matches(".gz")
                .to_owned();
            Some((format!("man:{name}"), render_man(p)?))
        })
        .collect();
    counts.insert("man", rendered.len());
    base.extend(rendered);
    let vocab = vocabulary(&base);

    // Edited versions of a random subset: about half the documents get one, some a second
    // independent one, some an edit of the edit.
    let mut docs = base.clone();
    let mut kinds: HashMap<String, usize> = HashMap::new();
    for (id, text) in &base {
        if !rng.chance(0.5) {
            continue;
        }
        let (k1, v1) = edit(text, &mut rng, &vocab);
        *kinds
            .entry(
                k1.split(|c: char| c.is_ascii_digit())
                    .next()
                    .unwrap()
                    .to_owned(),
            )
            .or_default() += 1;
        docs.push((format!("{id}~1-{k1}"), v1.clone()));
        if rng.chance(0.3) {
            let (k2, v2) = edit(text, &mut rng, &vocab);
            docs.push((format!("{id}~2-{k2}"), v2));
        }
        if rng.chance(0.3) {
            let (k3, v3) = edit(&v1, &mut rng, &vocab);
            docs.push((format!("{id}~1~3-{k3}"), v3));
        }
    }
    let n_variants = docs.len() - base.len();
    rng.shuffle(&mut docs);
    let bytes = write_jsonl(&out.join("corpus.jsonl"), &docs)?;
    let mut kinds: Vec<_> = kinds.into_iter().collect();
    kinds.sort();
    println!(
        "quality corpus: {} documents ({} real: {} copyright files, {} licences, {} man pages; {} edited versions; first-edit kinds {:?}), {:.1} MB, built in {:.1}s -> {}",
        docs.len(),
        base.len(),
        counts.get("copyright").copied().unwrap_or(0),
        counts.get("license").copied().unwrap_or(0),
        counts.get("man").copied().unwrap_or(0),
        n_variants,
        kinds,
        bytes as f64 / 1e6,
        t0.elapsed().as_secs_f64(),
        out.join("corpus.jsonl").display()
    );
    Ok(())
}

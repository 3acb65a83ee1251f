//! `big-corpus`: the throughput corpus.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use serde_json::json;

use crate::args::Args;
use crate::edits::{edit, vocabulary};
use crate::rng::{fnv, Rng};
use crate::sources::{read_text, render_groff, split_docs, walk};
use crate::AnyResult;

struct BaseDoc {
    host: String,
    path: String,
    text: String,
}

/// Cuts `text` at blank lines into documents of 2 to 24 KiB (a size drawn per document).
fn split_at_paragraphs(text: &str, rng: &mut Rng, out: &mut Vec<String>) {
    split_docs(text, || 2048 + rng.below(22 * 1024), out);
}

pub(crate) fn cmd_big_corpus(args: &Args) -> AnyResult<()> {
    let out = PathBuf::from(args.get("out").ok_or("--out FILE")?);
    let gb: f64 = args.num("gb", 1.0);
    let target = (gb * 1e9) as u64;
    let sample_every: u64 = args.num("sample-every", 128);
    let seed: u64 = args.num("seed", 11);
    let mut rng = Rng::new(seed);
    let t0 = Instant::now();

    // /usr/share/doc: every file that is text (gzip decompressed), cut at blank lines.
    let mut files = Vec::new();
    walk(Path::new("/usr/share/doc"), &mut files);
    walk(Path::new("/usr/share/common-licenses"), &mut files);
    let skip = [
        "html", "htm", "png", "gif", "jpg", "svg", "css", "js", "pdf", "c", "h", "py", "pl", "sh",
        "xml", "json", "cocci", "awk", "ico", "woff", "ttf",
    ];
    files.retain(|p| {
        let name = p.to_string_lossy();
        let stem = name.trim_end_matches(".gz");
        let ext = Path::new(stem)
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        !skip.contains(&ext.as_str())
    });
    let doc_texts: Vec<(PathBuf, String)> = files
        .par_iter()
        .filter_map(|p| Some((p.clone(), read_text(p)?)))
        .collect();
    let mut base: Vec<BaseDoc> = Vec::new();
    for (p, text) in &doc_texts {
        let rel = p.strip_prefix("/usr/share").unwrap_or(p);
        let mut comps = rel.components().skip(1);
        let pkg = comps
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        let host = format!("{}.docs.example", pkg.replace(['+', '_', '.'], "-"));
        let mut parts = Vec::new();
        split_at_paragraphs(text, &mut rng, &mut parts);
        for (n, t) in parts.into_iter().enumerate() {
            base.push(BaseDoc {
                host: host.clone(),
                path: format!("{}/{n}", rel.display()),
                text: t,
            });
        }
    }
    let doc_bytes: u64 = base.iter().map(|d| d.text.len() as u64).sum();
    eprintln!(
        "big-corpus: /usr/share/doc: {} files, {} documents, {:.0} MB ({:.0}s)",
        doc_texts.len(),
        base.len(),
        doc_bytes as f64 / 1e6,
        t0.elapsed().as_secs_f64()
    );
    drop(doc_texts);

    // Every man page of every language, rendered with groff.
    let mut pages = Vec::new();
    walk(Path::new("/usr/share/man"), &mut pages);
    let t1 = Instant::now();
    let rendered: Vec<(PathBuf, String)> = pages
        .par_iter()
        .filter_map(|p| Some((p.clone(), render_groff(p)?)))
        .collect();
    let before = base.len();
    for (p, text) in rendered {
        let rel = p.strip_prefix("/usr/share/man").unwrap_or(&p);
        let first = rel
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        let lang = if first.starts_with("man") {
            "en".into()
        } else {
            first
        };
        let host = format!(
            "man-{}.example",
            lang.to_ascii_lowercase().replace('_', "-")
        );
        let mut parts = Vec::new();
        if text.len() > 64 * 1024 {
            split_at_paragraphs(&text, &mut rng, &mut parts);
        } else {
            parts.push(text);
        }
        for (n, t) in parts.into_iter().enumerate() {
            base.push(BaseDoc {
                host: host.clone(),
                path: format!("{}/{n}", rel.display()),
                text: t,
            });
        }
    }
    let man_bytes: u64 = base[before..].iter().map(|d| d.text.len() as u64).sum();
    eprintln!(
        "big-corpus: man pages: {} files, {} documents, {:.0} MB ({:.0}s)",
        pages.len(),
        base.len() - before,
        man_bytes as f64 / 1e6,
        t1.elapsed().as_secs_f64()
    );
    // Interleave sources deterministically, so the file is not all changelogs first.
    rng.shuffle(&mut base);
    let vocab = {
        let sample: Vec<(String, String)> = base
            .iter()
            .step_by(50)
            .map(|d| (String::new(), d.text.clone()))
            .collect();
        vocabulary(&sample)
    };

    let mut e = Emitter {
        w: BufWriter::with_capacity(1 << 20, File::create(&out)?),
        sample: match args.get("sample-out") {
            Some(p) => Some(BufWriter::new(File::create(p)?)),
            None => None,
        },
        sample_every,
        bytes: 0,
        records: 0,
        sample_records: 0,
        kinds: HashMap::new(),
    };
    // Pass 0: the real documents. Passes 1..: per document, an edited near-duplicate (40%),
    // a verbatim republication (10%), or a new document spliced from the second half of it
    // and the first half of the next one (50%). Each pass and kind has its own hosts
    // (rev1.bash.docs.example, mirror1..., part1...), so a host never holds two versions of
    // one document: otherwise, on a host of 20-40 pages, the learner (5% share) would take a
    // document's own near-duplicate text for the site's boilerplate.
    let mut pass = 0usize;
    'outer: loop {
        for (i, d) in base.iter().enumerate() {
            if e.bytes >= target {
                break 'outer;
            }
            if pass == 0 {
                e.emit(
                    i,
                    format!("d{i}"),
                    format!("https://{}/{}", d.host, d.path),
                    &d.text,
                    "original",
                )?;
                continue;
            }
            let r = rng.below(100);
            let id = format!("d{i}~p{pass}");
            if r < 40 {
                let (k, t) = edit(&d.text, &mut rng, &vocab);
                let _ = k;
                e.emit(
                    i,
                    id,
                    format!("https://rev{pass}.{}/{}", d.host, d.path),
                    &t,
                    "edited",
                )?;
            } else if r < 50 {
                e.emit(
                    i,
                    id,
                    format!("https://mirror{pass}.{}/{}", d.host, d.path),
                    &d.text,
                    "republished",
                )?;
            } else {
                let next = &base[(i + 1) % base.len()];
                let a = &d.text[floor_boundary(&d.text, d.text.len() / 2)..];
                let b = &next.text[..floor_boundary(&next.text, next.text.len() / 2)];
                let t = format!("{a}\n\n{b}");
                e.emit(
                    i,
                    id,
                    format!("https://part{pass}.{}/{}", d.host, d.path),
                    &t,
                    "spliced",
                )?;
            }
        }
        pass += 1;
    }
    e.w.flush()?;
    if let Some(s) = e.sample.as_mut() {
        s.flush()?;
    }
    let (records, bytes, sample_records) = (e.records, e.bytes, e.sample_records);
    let mut k: Vec<_> = e.kinds.into_iter().collect();
    k.sort();
    eprintln!(
        "big-corpus: {records} records, {:.3} GB of text ({} passes over {} real documents of {:.0} MB), kinds (records, bytes) {:?}; sample: {sample_records} records; built in {:.0}s -> {}",
        bytes as f64 / 1e9,
        pass + 1,
        base.len(),
        (doc_bytes + man_bytes) as f64 / 1e6,
        k,
        t0.elapsed().as_secs_f64(),
        out.display()
    );
    Ok(())
}

struct Emitter {
    w: BufWriter<File>,
    sample: Option<BufWriter<File>>,
    sample_every: u64,
    bytes: u64,
    records: u64,
    sample_records: u64,
    kinds: HashMap<&'static str, (u64, u64)>,
}

impl Emitter {
    fn emit(
        &mut self,
        family: usize,
        id: String,
        url: String,
        text: &str,
        kind: &'static str,
    ) -> AnyResult<()> {
        let line = serde_json::to_string(&json!({"id": id, "url": url, "body_text": text}))?;
        self.w.write_all(line.as_bytes())?;
        self.w.write_all(b"\n")?;
        if let Some(s) = self.sample.as_mut() {
            if fnv(&family.to_string()).is_multiple_of(self.sample_every) {
                s.write_all(line.as_bytes())?;
                s.write_all(b"\n")?;
                self.sample_records += 1;
            }
        }
        self.bytes += text.len() as u64;
        self.records += 1;
        let k = self.kinds.entry(kind).or_default();
        k.0 += 1;
        k.1 += text.len() as u64;
        Ok(())
    }
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

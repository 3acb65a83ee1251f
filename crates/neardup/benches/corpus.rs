//! Real text from this machine for benchmarks: nobody here wrote it.
//!
//! English prose comes from `/usr/share/doc` (READMEs, copyright files, text files) and
//! `/usr/share/common-licenses`; other scripts from the translated man pages, rendered with
//! `man -l`. Documents are cut at paragraph boundaries into pieces of about `target` bytes.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Every file below `dir` into `out`, in path order, and every symbolic link too when
/// `links` (as a path: a link to a directory is not followed).
pub fn walk(dir: &Path, links: bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(|e| e.ok()).collect();
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let p = e.path();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            walk(&p, links, out);
        } else if ft.is_file() || (links && ft.is_symlink()) {
            out.push(p);
        }
    }
}

fn is_prose(p: &Path) -> bool {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    !name.ends_with(".gz")
        && (name == "copyright"
            || name.starts_with("README")
            || name.starts_with("NEWS")
            || name.ends_with(".txt"))
}

/// Splits `text` at blank lines into documents of at least `target()` bytes (asked anew
/// for each document), the last one kept if over 200 bytes.
pub fn split_docs(text: &str, mut target: impl FnMut() -> usize, out: &mut Vec<String>) {
    let mut want = target();
    let mut cur = String::new();
    for para in text.split("\n\n") {
        cur.push_str(para);
        cur.push_str("\n\n");
        if cur.len() >= want {
            out.push(std::mem::take(&mut cur));
            want = target();
        }
    }
    if cur.trim().len() > 200 {
        out.push(cur);
    }
}

/// English documents from `/usr/share/doc` and the licences, up to `max_bytes` in all.
pub fn english(target: usize, max_bytes: usize) -> Vec<String> {
    let mut files = Vec::new();
    walk(Path::new("/usr/share/common-licenses"), false, &mut files);
    walk(Path::new("/usr/share/doc"), false, &mut files);
    let mut docs = Vec::new();
    let mut total = 0;
    for f in files
        .iter()
        .filter(|p| p.starts_with("/usr/share/common-licenses") || is_prose(p))
    {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        let before = docs.len();
        split_docs(&text, || target, &mut docs);
        total += docs[before..].iter().map(String::len).sum::<usize>();
        if total >= max_bytes {
            break;
        }
    }
    docs
}

/// Man pages of one language (`zh_CN`, `ru`, `ja`, …), rendered to plain text.
pub fn man_pages(lang: &str, max_pages: usize) -> Vec<String> {
    let mut files = Vec::new();
    walk(&Path::new("/usr/share/man").join(lang), false, &mut files);
    let mut docs = Vec::new();
    for f in files.iter().take(max_pages) {
        let Ok(out) = Command::new("man")
            .arg("-l")
            .arg(f)
            .env("MANWIDTH", "80")
            .output()
        else {
            continue;
        };
        let text = strip_overstrike(&String::from_utf8_lossy(&out.stdout));
        if text.len() > 500 {
            docs.push(text);
        }
    }
    docs
}

/// `raw` without the overstrike sequences (char, backspace, char) that `man` uses for bold.
pub fn strip_overstrike(raw: &str) -> String {
    let mut text = String::with_capacity(raw.len());
    for c in raw.chars() {
        if c == '\u{8}' {
            text.pop();
        } else {
            text.push(c);
        }
    }
    text
}

/// The HTML pages of `/usr/share/doc` (package manuals: generated and hand-written), up to
/// `max_bytes` in all.
pub fn html(max_bytes: usize) -> Vec<String> {
    let mut files = Vec::new();
    walk(Path::new("/usr/share/doc"), false, &mut files);
    let mut docs = Vec::new();
    let mut total = 0;
    for f in &files {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !(name.ends_with(".html") || name.ends_with(".htm")) {
            continue;
        }
        let Ok(page) = std::fs::read_to_string(f) else {
            continue;
        };
        total += page.len();
        docs.push(page);
        if total >= max_bytes {
            break;
        }
    }
    docs
}

/// Total bytes of a corpus.
pub fn bytes(docs: &[String]) -> u64 {
    docs.iter().map(|d| d.len() as u64).sum()
}

//! Real text on this machine (files, man pages), and the corpus JSONL files.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::AnyResult;

// The file walk and man page clean-up the benches use.
#[path = "../../benches/corpus.rs"]
mod bench_corpus;
pub(crate) use bench_corpus::split_docs;
use bench_corpus::strip_overstrike;

/// Every file and symbolic link below `dir`, in path order.
pub(crate) fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    bench_corpus::walk(dir, true, out);
}

/// The standard output of a page renderer as plain text, if over 200 characters.
fn rendered(command: &mut Command) -> Option<String> {
    let out = command.stderr(Stdio::null()).output().ok()?;
    let text = strip_overstrike(&String::from_utf8_lossy(&out.stdout));
    (text.trim().len() > 200).then_some(text)
}

/// `man -l FILE` as plain text, 80 columns.
pub(crate) fn render_man(path: &Path) -> Option<String> {
    rendered(
        Command::new("man")
            .arg("-l")
            .arg(path)
            .env("MANWIDTH", "80")
            .env("MAN_KEEP_FORMATTING", "0"),
    )
}

/// Faster rendering for the big corpus: groff directly (preconv, tbl), 80 columns.
pub(crate) fn render_groff(path: &Path) -> Option<String> {
    let cat = if path.extension().is_some_and(|e| e == "gz") {
        "gzip -dc"
    } else {
        "cat"
    };
    let script = format!("{cat} \"$1\" | groff -k -t -mandoc -Tutf8 -P-cbou -rLL=80n 2>/dev/null");
    rendered(Command::new("sh").arg("-c").arg(script).arg("sh").arg(path))
}

pub(crate) fn read_text(path: &Path) -> Option<String> {
    let bytes = if path.extension().is_some_and(|e| e == "gz") {
        let out = Command::new("gzip")
            .arg("-dc")
            .arg(path)
            .stderr(Stdio::null())
            .output()
            .ok()?;
        out.stdout
    } else {
        let mut b = Vec::new();
        File::open(path).ok()?.read_to_end(&mut b).ok()?;
        b
    };
    if bytes.contains(&0) {
        return None;
    }
    let text = String::from_utf8(bytes).ok()?;
    let letters = text.chars().filter(|c| c.is_alphabetic()).count();
    (letters * 2 > text.chars().count() && text.trim().len() > 100).then_some(text)
}

pub(crate) fn write_jsonl(path: &Path, docs: &[(String, String)]) -> AnyResult<u64> {
    let mut w = BufWriter::new(File::create(path)?);
    let mut bytes = 0;
    for (id, text) in docs {
        serde_json::to_writer(&mut w, &json!({"id": id, "body_text": text}))?;
        w.write_all(b"\n")?;
        bytes += text.len() as u64;
    }
    w.flush()?;
    Ok(bytes)
}

pub(crate) fn read_corpus(path: &Path) -> AnyResult<Vec<(String, String)>> {
    let mut docs = Vec::new();
    for line in BufReader::new(File::open(path)?).lines() {
        let v: Value = serde_json::from_str(&line?)?;
        let id = v["id"].as_str().ok_or("record without id")?.to_owned();
        let text = v["body_text"].as_str().unwrap_or_default().to_owned();
        docs.push((id, text));
    }
    Ok(docs)
}

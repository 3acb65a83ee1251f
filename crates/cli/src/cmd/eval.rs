//! `neardup eval`: pairwise precision, recall and F1 of a dedup run against truth pairs.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context};
use clap::Args;
use serde_json::{json, Value};

use super::tune::read_pairs;

/// Arguments of `neardup eval`.
#[derive(Debug, Args)]
#[command(after_long_help = EVAL_HELP)]
pub struct EvalArgs {
    /// Labelled truth pairs with ids: JSONL `{"a_id": ID, "b_id": ID, "duplicate": true}` (an
    /// optional "weight" counts a pair that many times), or TSV with a header naming a_id,
    /// b_id and duplicate. `neardup label` files qualify once labelled.
    #[arg(long, value_name = "FILE")]
    pub truth: PathBuf,
    /// A dedup run's merges.jsonl (merge-log entries) or clusters.jsonl (clusters with
    /// their members).
    #[arg(long, value_name = "FILE")]
    pub predicted: PathBuf,
    /// Print JSON instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// List at most this many wrong merges and missed duplicates.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub show: usize,
}

const EVAL_HELP: &str = "\
Two records are predicted duplicates when the run put them in one cluster (merges are joined
transitively, as the pipeline's clusters are). Only the truth pairs are scored: precision is
the share of truth pairs predicted duplicate that are labelled duplicate, recall the share of
labelled duplicates predicted duplicate. A record the predicted file does not mention stands
alone. When nothing is predicted duplicate, precision is 1 (no wrong merge was made).

The summary ends with one line `F1=<f> P=<p> R=<r>` (4 decimals), for scripts.

Exit status: 0 on success, 2 on an error (a bad file names the file and line).";

/// Clusters as a union-find over record ids.
#[derive(Default)]
struct Clusters {
    index: HashMap<String, usize>,
    parent: Vec<usize>,
}

impl Clusters {
    fn id(&mut self, id: &str) -> usize {
        if let Some(&i) = self.index.get(id) {
            return i;
        }
        let i = self.parent.len();
        self.parent.push(i);
        self.index.insert(id.to_owned(), i);
        i
    }

    fn root(&mut self, mut i: usize) -> usize {
        while self.parent[i] != i {
            self.parent[i] = self.parent[self.parent[i]];
            i = self.parent[i];
        }
        i
    }

    fn join(&mut self, a: &str, b: &str) {
        let (a, b) = (self.id(a), self.id(b));
        let (ra, rb) = (self.root(a), self.root(b));
        if ra != rb {
            self.parent[ra.max(rb)] = ra.min(rb);
        }
    }

    fn same(&mut self, a: &str, b: &str) -> bool {
        match (self.index.get(a).copied(), self.index.get(b).copied()) {
            (Some(a), Some(b)) => self.root(a) == self.root(b),
            _ => a == b,
        }
    }
}

fn id_of(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Reads merges.jsonl or clusters.jsonl, line by line (each line may be either).
fn read_predicted(path: &PathBuf) -> anyhow::Result<(Clusters, u64)> {
    let name = path.display().to_string();
    let file = File::open(path).with_context(|| format!("opening predicted file {name}"))?;
    let mut clusters = Clusters::default();
    let mut entries = 0u64;
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let n = i + 1;
        let line = line.with_context(|| format!("{name}:{n}: reading"))?;
        if line.trim().is_empty() {
            continue;
        }
        let err = |m: String| anyhow!("{name}:{n}: {m}");
        let v: Value =
            serde_json::from_str(&line).map_err(|e| err(format!("malformed JSON: {e}")))?;
        if let Some(members) = v.get("members") {
            let Value::Array(members) = members else {
                return Err(err("\"members\" must be an array of ids".into()));
            };
            let ids: Vec<String> = members
                .iter()
                .map(|m| id_of(Some(m)).ok_or_else(|| err(format!("member {m} is not an id"))))
                .collect::<anyhow::Result<_>>()?;
            if let Some((first, rest)) = ids.split_first() {
                clusters.id(first);
                for id in rest {
                    clusters.join(first, id);
                }
            }
        } else if let (Some(kept), Some(merged)) = (id_of(v.get("kept")), id_of(v.get("merged"))) {
            clusters.join(&kept, &merged);
        } else {
            return Err(err(
                "neither a cluster (\"members\") nor a merge (\"kept\" and \"merged\"): expected a line of clusters.jsonl or merges.jsonl".into(),
            ));
        }
        entries += 1;
    }
    Ok((clusters, entries))
}

pub fn run(args: &EvalArgs) -> anyhow::Result<ExitCode> {
    let truth_name = args.truth.display().to_string();
    let truth = read_pairs(&args.truth)?;
    let mut pairs = Vec::with_capacity(truth.len());
    for t in &truth {
        let (Some(a), Some(b)) = (&t.a.id, &t.b.id) else {
            bail!(
                "{truth_name}:{}: eval compares record ids: give \"a_id\" and \"b_id\"",
                t.line
            );
        };
        let Some(duplicate) = t.duplicate else {
            bail!(
                "{truth_name}:{}: the pair is not labelled: set \"duplicate\" to true or false",
                t.line
            );
        };
        pairs.push((t.line, a.clone(), b.clone(), duplicate, t.weight));
    }
    let (mut clusters, entries) = read_predicted(&args.predicted)?;
    let (mut tp, mut fp, mut fn_, mut tn) = (0.0, 0.0, 0.0, 0.0);
    let mut wrong = Vec::new();
    let mut missed = Vec::new();
    let mut unseen = 0usize;
    for (line, a, b, duplicate, weight) in &pairs {
        let predicted = clusters.same(a, b);
        if !clusters.index.contains_key(a) || !clusters.index.contains_key(b) {
            unseen += 1;
        }
        match (duplicate, predicted) {
            (true, true) => tp += weight,
            (false, true) => {
                fp += weight;
                wrong.push((line, a, b));
            }
            (true, false) => {
                fn_ += weight;
                missed.push((line, a, b));
            }
            (false, false) => tn += weight,
        }
    }
    let precision = if tp + fp > 0.0 { tp / (tp + fp) } else { 1.0 };
    let recall = if tp + fn_ > 0.0 { tp / (tp + fn_) } else { 0.0 };
    let f1 = if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        let v = json!({
            "truth": truth_name,
            "predicted": args.predicted.display().to_string(),
            "pairs": pairs.len(),
            "true_positives": tp, "false_positives": fp,
            "false_negatives": fn_, "true_negatives": tn,
            "precision": precision, "recall": recall, "f1": f1,
            "pairs_with_an_unmentioned_record": unseen,
            "wrong_merges": wrong.iter().map(|(l, a, b)| json!({"line": l, "a_id": a, "b_id": b})).collect::<Vec<_>>(),
            "missed_duplicates": missed.iter().map(|(l, a, b)| json!({"line": l, "a_id": a, "b_id": b})).collect::<Vec<_>>(),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let labelled_dups = pairs.iter().filter(|p| p.3).count();
    writeln!(
        out,
        "truth: {} pairs from {truth_name} ({} duplicates, {} not)",
        pairs.len(),
        labelled_dups,
        pairs.len() - labelled_dups
    )?;
    writeln!(
        out,
        "predicted: {entries} entries from {}, {} records in clusters",
        args.predicted.display(),
        clusters.index.len()
    )?;
    if unseen > 0 {
        writeln!(
            out,
            "note: {unseen} truth pairs name a record the predicted file does not mention (taken to stand alone)"
        )?;
    }
    let w = |x: f64| {
        if x == x.trunc() {
            format!("{x:.0}")
        } else {
            format!("{x:.1}")
        }
    };
    writeln!(out)?;
    writeln!(out, "                 predicted dup  predicted distinct")?;
    writeln!(out, "labelled dup     {:>13}  {:>18}", w(tp), w(fn_))?;
    writeln!(out, "labelled distinct{:>13}  {:>18}", w(fp), w(tn))?;
    for (title, list) in [
        ("wrong merges (labelled distinct, clustered)", &wrong),
        ("missed duplicates (labelled duplicate, apart)", &missed),
    ] {
        if list.is_empty() {
            continue;
        }
        writeln!(out)?;
        writeln!(out, "{title}: {}", list.len())?;
        for (line, a, b) in list.iter().take(args.show) {
            writeln!(out, "  line {line}: {a} / {b}")?;
        }
        if list.len() > args.show {
            writeln!(out, "  ... {} more", list.len() - args.show)?;
        }
    }
    writeln!(out)?;
    writeln!(out, "F1={f1:.4} P={precision:.4} R={recall:.4}")?;
    Ok(ExitCode::SUCCESS)
}

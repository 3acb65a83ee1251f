//! Scoring against the truth after boilerplate removal, for runs that learned boilerplate.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use serde_json::{json, Value};

use crate::score::{pairs_of_clusters, Ctx};
use crate::systems::RunResult;
use crate::truth::{jac, pairs_at_least};
use crate::AnyResult;

/// For each run with learned boilerplate: prints its row against that truth, writes
/// `out/cli_wrong_pairs*.jsonl` (and, for the first, `out/truth_after_boilerplate.jsonl`)
/// and adds its `results.json` entry to `systems`.
pub(crate) fn score_after_boilerplate(
    ctx: &Ctx,
    runs: &[RunResult],
    out: &Path,
    systems: &mut Vec<Value>,
) -> AnyResult<()> {
    // The truth for a run that learned boilerplate: pairs whose Jaccard after
    // boilerplate removal is >= 0.8 (the rows above count Jaccard before it).
    for (nth, r) in runs.iter().filter(|r| r.furniture.is_some()).enumerate() {
        let Some(furniture) = &r.furniture else {
            continue;
        };
        let content: Vec<Vec<u64>> = ctx
            .sets
            .iter()
            .map(|s| {
                s.iter()
                    .copied()
                    .filter(|h| !furniture.contains(h))
                    .collect()
            })
            .collect();
        let truth: HashSet<(u32, u32)> = pairs_at_least(&content, 0.8)
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        if nth == 0 {
            // This truth, for the peers run over the whole corpus (peers.py full).
            let mut sorted: Vec<&(u32, u32)> = truth.iter().collect();
            sorted.sort_unstable();
            let mut w = BufWriter::new(File::create(out.join("truth_after_boilerplate.jsonl"))?);
            for (a, b) in sorted {
                writeln!(w, "{{\"a\":{a},\"b\":{b}}}")?;
            }
            w.flush()?;
        }
        let predicted = pairs_of_clusters(&r.clusters);
        let tp = predicted.intersection(&truth).count();
        // Every pair the run got wrong under this truth, for a closer look.
        let mut wrong: Vec<Value> = Vec::new();
        for (kind, pairs) in [
            ("missed", truth.difference(&predicted)),
            ("false", predicted.difference(&truth)),
        ] {
            let mut pairs: Vec<&(u32, u32)> = pairs.collect();
            pairs.sort_unstable();
            for &(a, b) in pairs {
                wrong.push(json!({
                    "kind": kind, "a": ctx.ids[a as usize], "b": ctx.ids[b as usize],
                    "j": jac(&content[a as usize], &content[b as usize]),
                    "j_plain": ctx.exact_j((a, b)),
                    "d": (ctx.fps[a as usize] ^ ctx.fps[b as usize]).count_ones(),
                }));
            }
        }
        // One file per CLI run: the first `cli_wrong_pairs.jsonl`, then `-2`, `-3`, ...
        let suffix = if nth == 0 {
            String::new()
        } else {
            format!("-{}", nth + 1)
        };
        let path = out.join(format!("cli_wrong_pairs{suffix}.jsonl"));
        let mut text = String::new();
        for w in &wrong {
            text.push_str(&w.to_string());
            text.push('\n');
        }
        std::fs::write(&path, text)?;
        let (p, rec) = (
            tp as f64 / predicted.len().max(1) as f64,
            tp as f64 / truth.len().max(1) as f64,
        );
        let f1 = if p + rec > 0.0 {
            2.0 * p * rec / (p + rec)
        } else {
            0.0
        };
        println!(
            "{:<46} {:>9} {:>9} {:>7.4} {:>7.4} {:>7.4}",
            "  the same, truth after its boilerplate",
            predicted.len(),
            tp,
            p,
            rec,
            f1
        );
        println!(
            "  ({} pairs with J >= 0.8 once the {} shingles the run learned as boilerplate are left out, against {} before)",
            truth.len(),
            furniture.len(),
            ctx.truth08.len()
        );
        systems.push(json!({
            "name": format!("{} (truth after its boilerplate)", r.name),
            "precision": p, "recall": rec, "f1": f1,
            "predicted_pairs": predicted.len(), "true_positives": tp, "truth_pairs": truth.len(),
            "boilerplate_shingles": furniture.len(), "seconds": r.seconds,
            "clusters": r.clusters.len(),
            "largest_cluster": r.clusters.iter().map(Vec::len).max().unwrap_or(0),
        }));
    }
    Ok(())
}

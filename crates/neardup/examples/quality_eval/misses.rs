//! Where the default rule loses recall, and where its false positives come from.

use std::collections::HashSet;

use crate::score::{pairs_of_clusters, Ctx};
use crate::systems::RunResult;
use crate::truth::jac32;

/// The counts `results.json` keeps.
pub(crate) struct Misses {
    /// Missed pairs by cause (see the labels in `explain`).
    pub(crate) cat: [usize; 5],
    /// False-positive pairs.
    pub(crate) false_positives: usize,
    /// Of them, the ones from transitive clustering rather than a verified edge.
    pub(crate) chained: usize,
}

/// Prints the missed truth pairs of `def` (the default rule's run) by cause, its false
/// positives and its largest clusters.
pub(crate) fn explain(ctx: &Ctx, def: &RunResult) -> Misses {
    // Where the default loses recall, and where its false positives come from.
    let rule = def.rule.unwrap();
    let predicted = pairs_of_clusters(&def.clusters);
    let edge_set: HashSet<(u32, u32)> = def.edges.iter().copied().collect();
    let mut cat: [usize; 5] = [0; 5];
    let mut examples: Vec<Vec<String>> = vec![Vec::new(); 5];
    let mut missed: Vec<(u32, u32)> = ctx
        .truth08
        .iter()
        .filter(|p| !predicted.contains(p))
        .copied()
        .collect();
    missed.sort_unstable();
    let mut cluster_of = vec![usize::MAX; ctx.ids.len()];
    for (n, c) in def.clusters.iter().enumerate() {
        for &m in c {
            cluster_of[m as usize] = n;
        }
    }
    for p in &missed {
        let t = ctx.truth[p];
        let (a, b) = (t.a as usize, t.b as usize);
        let c = if ctx.tokens[a] < rule.min_words || ctx.tokens[b] < rule.min_words {
            0
        } else if t.d > rule.max_distance {
            1
        } else {
            let j32 = jac32(&ctx.sets[a], &ctx.sets[b]);
            if j32 < rule.min_jaccard {
                2
            } else if cluster_of[a] != usize::MAX && cluster_of[b] != usize::MAX {
                3
            } else {
                4
            }
        };
        cat[c] += 1;
        if examples[c].len() < 4 {
            examples[c].push(format!(
                "{} ~ {} (J {:.3}, d {}, words {}/{})",
                ctx.ids[a], ctx.ids[b], t.j, t.d, ctx.tokens[a], ctx.tokens[b]
            ));
        }
    }
    println!();
    println!(
        "default rule: {} of {} pairs with J >= 0.8 missed:",
        missed.len(),
        ctx.truth08.len()
    );
    let labels = [
        "a document under min_words (exact tier only)",
        "fingerprints farther apart than max_distance",
        "within max_distance, but J of the 32-bit verification ids < min_jaccard",
        "within max_distance and verifiable, but in two different clusters (a record joins only its best match's cluster; clusters never merge)",
        "within max_distance and verifiable, but one stayed a singleton (its partners arrived later and each joined an exact duplicate or a higher-J match; or the 64-candidate cap)",
    ];
    for (c, l) in labels.iter().enumerate() {
        println!("  {:>6}  {l}", cat[c]);
        for e in &examples[c] {
            println!("            e.g. {e}");
        }
    }
    let fps_pairs: Vec<(u32, u32)> = predicted
        .iter()
        .filter(|p| !ctx.truth08.contains(p))
        .copied()
        .collect();
    let chained = fps_pairs.iter().filter(|p| !edge_set.contains(p)).count();
    println!(
        "default rule: {} false-positive pairs: {} are verified edges (J >= {} on 32-bit ids but < 0.8 exactly), {} come from transitive clustering (A~B, B~C, J(A,C) < 0.8); their exact J: {}",
        fps_pairs.len(),
        fps_pairs.len() - chained,
        rule.min_jaccard,
        chained,
        ctx.fp_bands(&predicted)
    );
    let mut sizes: Vec<usize> = def.clusters.iter().map(Vec::len).collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    println!(
        "default rule: {} clusters of 2+, largest {:?}",
        sizes.len(),
        &sizes[..sizes.len().min(8)]
    );
    Misses {
        cat,
        false_positives: fps_pairs.len(),
        chained,
    }
}

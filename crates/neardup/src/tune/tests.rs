use super::*;
use crate::fingerprint::{HashAlgo, SimHasher};
use crate::index::plan::LayoutKind;
use crate::index::PermutedLayout;
use crate::pipeline::Rule;
use crate::text::Boilerplate;
use crate::verify::Scores;

fn pair(distance: u32, jaccard: f64, duplicate: bool) -> LabelledPair {
    LabelledPair {
        scores: Scores::new(distance, jaccard),
        duplicate,
        weight: 1.0,
    }
}

/// A small labelled set: duplicates spread to 10 bits, one far-but-similar duplicate,
/// near non-duplicates with low Jaccard (shared template), far unrelated pairs.
fn fixture() -> Vec<LabelledPair> {
    vec![
        pair(0, 1.0, true),
        pair(2, 0.95, true),
        pair(4, 0.90, true),
        pair(7, 0.86, true),
        pair(10, 0.82, true),
        pair(20, 0.81, true),
        pair(3, 0.55, false),
        pair(6, 0.70, false),
        pair(9, 0.30, false),
        pair(25, 0.05, false),
        pair(31, 0.01, false),
    ]
}

macro_rules! rule_cases {
    ($($name:ident: ($k:expr, $j:expr) => ($p:expr, $r:expr);)*) => {$(
        #[test]
        fn $name() {
            let cell = score_rule(&fixture(), $k, $j);
            assert!((cell.precision - $p).abs() < 1e-9, "precision {}", cell.precision);
            assert!((cell.recall - $r).abs() < 1e-9, "recall {}", cell.recall);
        }
    )*};
}

rule_cases! {
    radius_zero_finds_identical_only: (0, 0.5) => (1.0, 1.0 / 6.0);
    loose_jaccard_admits_template_pairs: (10, 0.5) => (5.0 / 7.0, 5.0 / 6.0);
    seed_default_k3_misses_edits: (3, 0.8) => (1.0, 2.0 / 6.0);
    measured_default_k12: (12, 0.8) => (1.0, 5.0 / 6.0);
    nothing_accepted_is_vacuously_precise: (16, 1.01) => (1.0, 0.0);
}

#[test]
fn grid_has_every_cell_in_order() {
    let grid = evaluate(&fixture(), &GridSpec::default()).expect("grid");
    assert_eq!(grid.spec().min_jaccards().len(), 26);
    assert_eq!(grid.spec().min_jaccards()[15], 0.8);
    assert_eq!(grid.cells().len(), 17 * 26);
    let j = grid.jaccard_index(0.8).expect("0.8 on the grid");
    assert_eq!(*grid.cell(12, j), score_rule(&fixture(), 12, 0.8));
    assert_eq!(grid.by_distance(j).len(), 17);
    assert_eq!(grid.by_jaccard(4).len(), 26);
    assert_eq!(grid.duplicates(), 6.0);
}

#[test]
fn recommendation_is_the_smallest_radius_with_the_best_recall() {
    let grid = evaluate(&fixture(), &GridSpec::default()).expect("grid");
    let rec = grid.recommend(0.99);
    assert!(rec.meets_min_precision);
    assert_eq!(rec.cell.max_distance, 10);
    assert_eq!(rec.cell.recall, 5.0 / 6.0);
    assert_eq!(rec.cell.precision, 1.0);
    // Tied thresholds run from 0.72 (above the 0.70 template pair) to 0.82: the middle.
    assert!(
        (0.72..=0.82).contains(&rec.cell.min_jaccard),
        "{}",
        rec.cell.min_jaccard
    );
    assert_eq!(rec.cell.min_jaccard, 0.76);
}

#[test]
fn unreachable_precision_falls_back_to_best_f1() {
    let pairs = vec![pair(1, 0.9, true), pair(1, 0.9, false)];
    let grid = evaluate(&pairs, &GridSpec::default()).expect("grid");
    let rec = grid.recommend(0.99);
    assert!(!rec.meets_min_precision);
    assert_eq!(rec.cell.recall, 1.0);
    assert_eq!(rec.cell.max_distance, 1);
}

#[test]
fn weights_scale_counts() {
    let mut pairs = fixture();
    pairs[6].weight = 10.0; // the near template pair stands for ten
    let cell = score_rule(&pairs, 10, 0.5);
    assert_eq!(cell.false_positives, 11.0);
    assert!((cell.precision - 5.0 / 16.0).abs() < 1e-12);
}

#[test]
fn bad_sets_are_refused() {
    assert!(evaluate(&[], &GridSpec::default()).is_err());
    assert!(evaluate(&[pair(1, 0.9, true)], &GridSpec::default()).is_err());
    let mut p = fixture();
    p[0].weight = 0.0;
    assert!(evaluate(&p, &GridSpec::default()).is_err());
    assert!(GridSpec::new(16, 1.5, 0.02).is_err());
    assert!(GridSpec::new(16, 0.5, 0.0).is_err());
    assert_eq!(
        GridSpec::new(4, 0.9, 0.05).expect("spec").min_jaccards(),
        &[0.9, 0.95, 1.0]
    );
}

#[test]
fn inverse_question_picks_the_radius_for_the_recall() {
    let scored: Vec<(Scores, f64)> = fixture().iter().map(|p| (p.scores, 1.0)).collect();
    // Jaccard >= 0.8: distances 0, 2, 4, 7, 10, 20.
    let answer = radius_for(&scored, 0.8, 0.8, 1_000_000).expect("answer");
    assert_eq!(answer.similar_pairs, 6);
    assert_eq!(answer.max_distance, 10);
    assert!((answer.recall - 5.0 / 6.0).abs() < 1e-12);
    assert_eq!(answer.recall_by_distance.len(), 11);
    assert!(answer.plan.max_supported_distance >= 10);
    let all = radius_for(&scored, 0.8, 1.0, 1000).expect("answer");
    assert_eq!(all.max_distance, 20);
    assert!(radius_for(&scored, 1.0, 0.5, 10).is_ok());
    assert!(radius_for(&[(Scores::new(1, 0.1), 1.0)], 0.8, 0.9, 10).is_err());
    assert!(radius_for(&scored, 0.8, 1.5, 10).is_err());
}

#[test]
fn shingle_texts_hash_like_the_fingerprint() {
    let text = "The Quick brown fox — jumps over the lazy dog; the quick brown fox naps. Ünïcödé 東京タワー";
    for hash in [HashAlgo::Xxh3, HashAlgo::Blake2b] {
        for width in [1, 3, 4, 40] {
            let hasher = SimHasher::builder()
                .hash(hash)
                .shingle_width(width.min(16))
                .build()
                .expect("hasher");
            let mut mine: Vec<u64> = shingle_texts(&hasher, text).iter().map(|s| s.0).collect();
            mine.sort_unstable();
            mine.dedup();
            assert_eq!(mine, hasher.shingle_set(text), "{hash:?} w{width}");
        }
    }
}

#[test]
fn diff_shows_the_edit_and_the_boilerplate() {
    let hasher = SimHasher::builder()
        .shingle_width(2)
        .build()
        .expect("hasher");
    let a = "home news sport the cat sat on the mat";
    let b = "home news sport the cat sat on a hat";
    let nav = Boilerplate::from_hashes(hasher.shingle_set("home news sport"));
    let diff = shingle_diff(&hasher, a, b, Some(&nav));
    assert_eq!(diff.boilerplate_a, ["home news", "news sport"]);
    assert_eq!(diff.only_a, ["on the", "the mat"]);
    assert_eq!(diff.only_b, ["on a", "a hat"]);
    assert_eq!(diff.passages_a, ["on the mat"]);
    assert_eq!(diff.passages_b, ["on a hat"]);
    // "sport the", "the cat", "cat sat", "sat on"
    assert_eq!(diff.shared, 4);
}

#[test]
fn decisions_follow_the_pipeline_order() {
    let hasher = SimHasher::builder().build().expect("hasher");
    let long: String = (0..300u64)
        .map(|i| format!("w{} ", i * 7919 % 1009))
        .collect();
    let edited = long
        .replacen("w7919 ", "changed ", 1)
        .replacen("w0 ", "w1 ", 1);
    let fact = |t: &str| RecordFacts::of_text(&hasher, t, None).expect("facts");
    // A short-text rule under 50 words (the default has none).
    let rule = Rule {
        min_words: 50,
        ..Rule::default()
    };
    assert_eq!(
        decide(&rule, &fact(&long), &fact(&long.to_uppercase())),
        Verdict::Exact
    );
    assert!(decide(&rule, &fact(&long), &fact(&edited)).is_duplicate());
    assert!(matches!(
        decide(
            &rule,
            &fact("a short text here"),
            &fact("a short text there")
        ),
        Verdict::TooShort { words: 4, .. }
    ));
    let unrelated = "quarterly earnings rose on strong demand ".repeat(20);
    assert!(!decide(&rule, &fact(&long), &fact(&unrelated)).is_duplicate());
    let strict = Rule {
        min_jaccard: 0.999,
        ..Rule::default()
    };
    assert!(matches!(
        decide(&strict, &fact(&long), &fact(&edited)),
        Verdict::TooDissimilar { .. } | Verdict::TooFar { .. }
    ));
}

#[test]
fn tables_meet_exactly_when_the_index_would_find_the_pair() {
    let a = 0x0123_4567_89ab_cdefu64;
    let b = a ^ 0b101 ^ (1 << 40); // 3 bits: low band and one high
    let bands = band_matches(4, a, b);
    assert_eq!(bands.len(), 4);
    assert_eq!(
        bands.iter().map(|t| t.matched).collect::<Vec<_>>(),
        [false, true, false, true]
    );
    assert_eq!(bands[0].bit_ranges, [(0, 16)]);
    assert_eq!(bands[0].differing_bits, 2);
    let layout = LayoutKind::Permuted(PermutedLayout::new(3, 5).expect("layout"));
    let tables = table_matches(&layout, 3, a, b).expect("tables");
    assert_eq!(tables.len(), 10);
    assert!(tables.iter().any(|t| t.matched));
    // Six radius units over two substrings: each probed within 2 bits.
    let c = a ^ 0b111 ^ (1 << 40);
    let mih = table_matches(&LayoutKind::Mih { substrings: 2 }, 5, a, c).expect("mih");
    assert_eq!(mih.len(), 2);
    assert!(mih.iter().all(|t| t.probe_radius == Some(2)));
    assert!(mih[1].matched && !mih[0].matched);
    assert!(table_matches(&LayoutKind::Linear, 3, a, b)
        .expect("linear")
        .is_empty());
}

#[test]
fn sampling_spreads_over_buckets_with_weights() {
    let mut fps: Vec<u128> = Vec::new();
    for i in 0..40u128 {
        let base = (i * 0x9e37_79b9_7f4a_7c15) & u128::from(u64::MAX);
        fps.push(base);
        fps.push(base ^ (1 << (i % 60)) ^ (1 << ((i + 7) % 60))); // 2 bits away
    }
    let pairs = sample_pairs(&fps, 4, 20, 7).expect("sample");
    assert_eq!(pairs.len(), 20);
    let near: Vec<&SampledPair> = pairs.iter().filter(|p| p.bucket == Some(2)).collect();
    assert!(!near.is_empty());
    assert!(pairs.iter().any(|p| p.bucket.is_none()));
    let total = (80 * 79 / 2) as f64;
    // The weights of a full bucket census add up to the corpus's pairs.
    let all = sample_pairs(&fps, 4, 100_000, 7).expect("census");
    let weight: f64 = all.iter().map(SampledPair::weight).sum();
    assert!((weight - total).abs() < 1e-6, "{weight}");
    assert_eq!(all.len(), 80 * 79 / 2);
    assert_eq!(sample_pairs(&fps, 4, 20, 7).expect("again"), pairs);
    assert!(pairs.windows(2).all(|w| w[0].distance <= w[1].distance));
}

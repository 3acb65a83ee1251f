//! Differential tests shared by every index: each layout against the linear oracle.

use proptest::prelude::*;

use super::*;

// splitmix64 and bit flips with fixed seeds (shared with the index bench), so failures
// reproduce.
#[path = "../../benches/seeded.rs"]
mod seeded;
use seeded::{flip_bits, splitmix};

/// Random fingerprints, or clustered ones (a few centers with small random bit flips,
/// which make huge buckets and many near pairs).
fn fingerprints(n: usize, clustered: bool, seed: u64) -> Vec<u64> {
    let mut state = seed;
    if !clustered {
        return (0..n).map(|_| splitmix(&mut state)).collect();
    }
    let centers: Vec<u64> = (0..4).map(|_| splitmix(&mut state)).collect();
    (0..n)
        .map(|i| {
            let flips = (splitmix(&mut state) % 8) as u32;
            flip_bits(centers[i % centers.len()], flips, &mut state)
        })
        .collect()
}

/// Every index under test, each able to answer radii up to `max_distance`.
fn indexes(max_distance: u32, buffer: usize) -> Vec<Box<dyn HammingIndex>> {
    let mut out: Vec<Box<dyn HammingIndex>> = Vec::new();
    if max_distance < 64 {
        let mut bands = BandIndex::builder();
        bands.bands(max_distance + 1).buffer_capacity(buffer);
        out.push(Box::new(bands.build().expect("bands")));
    }
    if max_distance <= 10 {
        let mut permuted = PermutedIndex::builder();
        permuted
            .max_distance(max_distance)
            .expected_len(1000)
            .buffer_capacity(buffer);
        out.push(Box::new(permuted.build().expect("permuted")));
    }
    if (1..=4).contains(&max_distance) {
        let mut two_level = PermutedIndex::builder();
        two_level
            .max_distance(max_distance)
            .blocks(max_distance + 1)
            .second_level_blocks(max_distance + 1)
            .buffer_capacity(buffer);
        out.push(Box::new(two_level.build().expect("two-level")));
    }
    if max_distance == 3 {
        // 56 tables: more than the exact path stages per query, so the general probe
        // path answers exact lookups of multi-range keys.
        let mut many = PermutedIndex::builder();
        many.max_distance(3).blocks(8).buffer_capacity(buffer);
        out.push(Box::new(many.build().expect("56 tables")));
    }
    for substrings in [2, 4, 5] {
        let mut mih = MihIndex::builder();
        mih.substrings(substrings).buffer_capacity(buffer);
        out.push(Box::new(mih.build().expect("mih")));
    }
    out.push(Box::new(
        AutoIndex::for_size(1000, max_distance).expect("auto"),
    ));
    out
}

/// Applies the same operations to the oracle and to every index, then compares queries.
fn check_against_oracle(
    fps: &[u64],
    removes: &[usize],
    replaces: &[(usize, u64)],
    max_distance: u32,
    buffer: usize,
    seed: u64,
) -> Result<(), TestCaseError> {
    let mut oracle = LinearIndex::new();
    let mut under_test = indexes(max_distance, buffer);
    for (id, &fp) in fps.iter().enumerate() {
        oracle.insert(id as u64, fp).expect("fresh id");
        for index in &mut under_test {
            index.insert(id as u64, fp).expect("fresh id");
        }
    }
    for &r in removes {
        let id = (r % fps.len().max(1)) as u64;
        let expected = oracle.remove(id);
        for index in &mut under_test {
            prop_assert_eq!(index.remove(id), expected);
        }
    }
    for &(r, fp) in replaces {
        let id = (r % (fps.len() + 5)) as u64;
        let expected = oracle.replace(id, fp).expect("linear never fills");
        for index in &mut under_test {
            prop_assert_eq!(index.replace(id, fp).expect("replace"), expected);
        }
    }
    let mut state = seed;
    let mut queries: Vec<u64> = (0..8).map(|_| splitmix(&mut state)).collect();
    for &fp in fps.iter().take(40) {
        let flips = (splitmix(&mut state) % u64::from(max_distance + 1)) as u32;
        queries.push(flip_bits(fp, flips, &mut state));
    }
    for pass in 0..2 {
        for &q in &queries {
            for k in 0..=max_distance {
                let expected = oracle.query(q, k).expect("oracle answers all");
                for index in &under_test {
                    let got = index.query(q, k).expect("radius within layout");
                    prop_assert_eq!(
                        &got,
                        &expected,
                        "{} k={} pass={}",
                        index.stats().layout,
                        k,
                        pass
                    );
                    // The nearest `limit`: the answer's first `limit`, for limits below,
                    // at and above its length.
                    let mut nearest = Vec::new();
                    for limit in [0, 1, 2, expected.len() / 2, expected.len(), usize::MAX] {
                        index
                            .query_nearest_into(q, k, limit, &mut nearest)
                            .expect("radius within layout");
                        prop_assert_eq!(
                            &nearest[..],
                            &expected[..limit.min(expected.len())],
                            "nearest {} {} k={} pass={}",
                            limit,
                            index.stats().layout,
                            k,
                            pass
                        );
                    }
                }
            }
        }
        // The batch path (staged and prefetched on table layouts) answers the same,
        // including batches longer than one of its internal groups.
        for k in 0..=max_distance {
            let mut expected = Vec::new();
            for (at, &q) in queries.iter().enumerate() {
                let hits = oracle.query(q, k).expect("oracle answers all");
                expected.extend(hits.into_iter().map(|m| (at, m)));
            }
            for index in &under_test {
                // Both batch paths: grouped random probes, and the sorted sweep that large
                // batches over large tables take.
                for sweep in [None, Some(7), Some(1 << 20)] {
                    let mut got = Vec::new();
                    super::table::FORCE_SORTED_SWEEP.with(|f| f.set(sweep));
                    let answered = index.query_batch(&queries, k, &mut got);
                    super::table::FORCE_SORTED_SWEEP.with(|f| f.set(None));
                    answered.expect("radius within layout");
                    prop_assert_eq!(
                        &got,
                        &expected,
                        "batch {} k={} pass={} sweep={:?}",
                        index.stats().layout,
                        k,
                        pass,
                        sweep
                    );
                }
            }
        }
        // Second pass after merging buffers and dropping tombstones.
        for index in &mut under_test {
            index.compact();
            prop_assert_eq!(index.len(), oracle.len());
            prop_assert_eq!(index.stats().tombstones, 0);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn prop_every_layout_matches_the_oracle(
        n in 0usize..300,
        clustered in any::<bool>(),
        max_distance in 0u32..=8,
        seed in any::<u64>(),
        removes in proptest::collection::vec(any::<usize>(), 0..40),
        replaces in proptest::collection::vec((any::<usize>(), any::<u64>()), 0..10),
        buffer in 1usize..64,
    ) {
        let fps = fingerprints(n, clustered, seed);
        check_against_oracle(&fps, &removes, &replaces, max_distance, buffer, seed)?;
    }

    #[test]
    fn prop_mih_matches_the_oracle_up_to_16(
        n in 0usize..400,
        clustered in any::<bool>(),
        seed in any::<u64>(),
        substrings in 2u32..=6,
        removes in proptest::collection::vec(any::<usize>(), 0..20),
    ) {
        let fps = fingerprints(n, clustered, seed);
        let mut oracle = LinearIndex::new();
        let mut mih = MihIndex::new(substrings).expect("valid");
        for (id, &fp) in fps.iter().enumerate() {
            oracle.insert(id as u64, fp).expect("fresh");
            mih.insert(id as u64, fp).expect("fresh");
        }
        for &r in &removes {
            let id = (r % n.max(1)) as u64;
            prop_assert_eq!(mih.remove(id), oracle.remove(id));
        }
        let mut state = seed ^ 1;
        for &fp in fps.iter().take(8) {
            for k in [10u32, 12, 16] {
                let q = flip_bits(fp, (splitmix(&mut state) % u64::from(k + 1)) as u32, &mut state);
                prop_assert_eq!(mih.query(q, k).expect("exact"), oracle.query(q, k).expect("exact"));
            }
        }
    }

    #[test]
    fn prop_flipping_at_most_k_bits_is_always_found(
        fp in any::<u64>(),
        max_distance in 0u32..=7,
        seed in any::<u64>(),
    ) {
        let mut state = seed;
        for mut index in indexes(max_distance, 16) {
            // Some noise, then the stored fingerprint, then more noise past the buffer.
            for id in 0..40u64 {
                index.insert(id, splitmix(&mut state)).expect("fresh");
            }
            index.insert(1000, fp).expect("fresh");
            for id in 40..80u64 {
                index.insert(id, splitmix(&mut state)).expect("fresh");
            }
            for _ in 0..8 {
                let flips = (splitmix(&mut state) % u64::from(max_distance + 1)) as u32;
                let q = flip_bits(fp, flips, &mut state);
                let hits = index.query(q, max_distance).expect("within layout");
                let wanted = Match { distance: flips, id: 1000 };
                prop_assert!(hits.contains(&wanted), "{}", index.stats().layout);
            }
        }
    }
}

#[test]
fn seed_001_two_stored_fingerprints_each_found_at_distance_zero() {
    // Seed 001: incidents 47 and 83 through the index; each query finds its own id at 0.
    let (fp47, fp83) = (0x5D1C_7E2A_9B30_44F1u64, 0x0A7F_E3C2_1B98_6D05u64);
    for mut index in indexes(7, 64) {
        index.insert(47, fp47).expect("fresh");
        index.insert(83, fp83).expect("fresh");
        assert_eq!(
            index.query(fp47, 7).expect("k=7"),
            vec![Match {
                distance: 0,
                id: 47
            }]
        );
        assert_eq!(
            index.query(fp83, 7).expect("k=7"),
            vec![Match {
                distance: 0,
                id: 83
            }]
        );
        assert_eq!(
            index.insert(47, fp83),
            Err(IndexError::DuplicateId { id: 47 })
        );
    }
}

#[test]
fn removed_ids_are_never_returned_and_leave_the_tables() {
    for mut index in indexes(3, 8) {
        for id in 0..100u64 {
            index.insert(id, 0xABCD_0000 | id).expect("fresh");
        }
        for id in (0..100u64).step_by(2) {
            assert!(index.remove(id).is_some());
        }
        let hits = index.query(0xABCD_0000, 3).expect("k=3");
        assert!(
            hits.iter().all(|m| m.id % 2 == 1),
            "{}",
            index.stats().layout
        );
        index.compact();
        let stats = index.stats();
        assert_eq!(stats.tombstones, 0);
        assert_eq!(stats.len, 50);
        assert_eq!(index.get(0), None);
        assert_eq!(index.get(1), Some(0xABCD_0001));
    }
}

#[test]
fn candidate_cap_is_counted_not_silent() {
    let mut builder = PermutedIndex::builder();
    builder
        .max_distance(3)
        .expected_len(1000)
        .max_candidates_per_probe(4);
    let mut index = builder.build().expect("valid");
    // One huge cluster: every fingerprint shares every prefix with the query.
    index
        .extend((0..50u64).map(|id| (id, 0x1234_5678_0000_0000 | (id & 1))))
        .expect("fresh ids");
    let mut out = Vec::new();
    let stats = index
        .query_into(0x1234_5678_0000_0000, 3, &mut out)
        .expect("k=3");
    assert!(!stats.is_complete());
    assert!(stats.capped_probes > 0);
    let index_stats = index.stats();
    assert_eq!(index_stats.capped_probes, stats.capped_probes);
    assert_eq!(index_stats.largest_bucket, 50);
}

#[test]
fn join_matches_pairs_from_queries() {
    let fps = fingerprints(500, true, 42);
    for k in [0, 2, 4, 7] {
        let pairs = self_join(&fps, k).expect("join");
        let mut oracle = LinearIndex::new();
        for (id, &fp) in fps.iter().enumerate() {
            oracle.insert(id as u64, fp).expect("fresh");
        }
        let mut expected = Vec::new();
        for (a, &fp) in fps.iter().enumerate() {
            for m in oracle.query(fp, k).expect("oracle") {
                if m.id as usize > a {
                    expected.push(NearPair {
                        a: a as u32,
                        b: m.id as u32,
                        distance: m.distance,
                    });
                }
            }
        }
        expected.sort_unstable();
        assert_eq!(pairs, expected, "k = {k}");
    }
}

/// A buffer merge runs in the background after the buffer fills; `settle` installs it once
/// it is done (queries then scan only the live buffer), and answers never change.
#[test]
fn settle_installs_a_finished_background_merge() {
    let mut index = PermutedIndex::builder()
        .max_distance(3)
        .buffer_capacity(1000)
        .build()
        .expect("valid layout");
    let fps = fingerprints(20_000, false, 11);
    index
        .extend(fps.iter().enumerate().map(|(i, &fp)| (i as u64, fp)))
        .expect("fresh ids");
    // A full buffer: the merge starts on its own thread and the buffer is frozen.
    for (i, &fp) in fps.iter().enumerate().take(1000) {
        index.insert(20_000 + i as u64, fp ^ 1).expect("fresh id");
    }
    assert_eq!(index.stats().buffered, 1000);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while index.stats().buffered > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the merge was never installed"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
        index.settle();
    }
    let hits = index.query(fps[7] ^ 1, 0).expect("k=0");
    assert_eq!(
        hits,
        vec![Match {
            distance: 0,
            id: 20_007
        }]
    );
    assert_eq!(index.len(), 21_000);
}

#[test]
fn mih_batches_answer_as_one_query_after_another() {
    // Sizes at which probing beats scanning for each radius, so the batch takes its
    // sorted sweep; clustered sets make long runs and many matches per query.
    for (substrings, k, n, clustered) in [
        (6, 10, 5_000, false),
        (6, 10, 5_000, true),
        (5, 14, 40_000, false),
        (4, 7, 20_000, true),
    ] {
        let fps = fingerprints(n, clustered, u64::from(k) * 7 + n as u64);
        let mut mih = MihIndex::builder();
        mih.substrings(substrings).buffer_capacity(700);
        let mut mih = mih.build().expect("valid");
        let mut oracle = LinearIndex::new();
        for (id, &fp) in fps.iter().enumerate() {
            mih.insert(id as u64, fp).expect("fresh");
            oracle.insert(id as u64, fp).expect("fresh");
        }
        // Tombstones in the tables, and rows in the insert buffer.
        for id in (0..n as u64).step_by(97) {
            assert_eq!(mih.remove(id), oracle.remove(id));
        }
        let mut state = n as u64;
        let mut queries: Vec<u64> = (0..40).map(|_| splitmix(&mut state)).collect();
        // On the smallest set, more queries than one sweep takes (`RADII_BATCH`).
        for &fp in fps.iter().step_by(if n <= 5_000 { 4 } else { n / 200 }) {
            let flips = (splitmix(&mut state) % u64::from(k + 3)) as u32;
            queries.push(flip_bits(fp, flips, &mut state));
        }
        for limit in [usize::MAX, 3, 0] {
            let mut batch = Vec::new();
            let stats = mih
                .query_nearest_batch(&queries, k, limit, &mut batch)
                .expect("exact");
            assert!(
                stats.probes > 0,
                "m={substrings} k={k}: the tables were probed"
            );
            assert_eq!(batch.len(), queries.len());
            let mut found = 0;
            for (&q, got) in queries.iter().zip(&batch) {
                let mut one = Vec::new();
                mih.query_nearest_into(q, k, limit, &mut one)
                    .expect("exact");
                assert_eq!(got, &one, "m={substrings} k={k} limit={limit}");
                let all = oracle.query(q, k).expect("oracle");
                assert_eq!(&got[..], &all[..limit.min(all.len())]);
                found += got.len();
            }
            if limit == usize::MAX {
                assert!(
                    found > queries.len() / 2,
                    "m={substrings} k={k}: {found} matches"
                );
            }
        }
    }
}

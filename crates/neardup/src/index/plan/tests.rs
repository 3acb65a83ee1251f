//! The planner's layouts, radii and refusals.

use super::*;

fn permuted(plans: &[LayoutPlan], blocks: u32, second: Option<u32>) -> &LayoutPlan {
    plans
        .iter()
        .find(|p| {
            matches!(p.kind, LayoutKind::Permuted(l)
                if l.blocks() == blocks && l.second_level_blocks() == second)
        })
        .expect("layout listed")
}

/// Manku et al., Example 3.1: f = 64, k = 3, 2^34 (8B) fingerprints.
#[test]
fn manku_example_3_1() {
    let plans = plan_layouts(&PlanRequest::new(1 << 34, 3));
    // 20 tables: 6 blocks of 11,11,11,11,10,10 bits, p = 31..33, at most 2^(34-31) = 8.
    let twenty = permuted(&plans, 6, None);
    assert_eq!(twenty.tables, 20);
    assert_eq!(twenty.max_candidates_per_probe, 8.0);
    assert_eq!(twenty.min_candidates_per_probe, 2.0);
    // 16 tables: 4 blocks choose 1, the other 48 bits in 4 blocks choose 1, p = 28.
    let sixteen = permuted(&plans, 4, Some(4));
    assert_eq!(sixteen.tables, 16);
    assert_eq!(sixteen.max_candidates_per_probe, 64.0);
    // 10 tables: 5 blocks of 13,13,13,13,12 bits, p = 25 or 26: 256 to 512.
    let ten = permuted(&plans, 5, None);
    assert_eq!(ten.tables, 10);
    assert_eq!(ten.min_candidates_per_probe, 256.0);
    assert_eq!(ten.max_candidates_per_probe, 512.0);
    // 4 tables: 4 blocks of 16 bits, p = 16: 2^18 = 256K.
    let four = permuted(&plans, 4, None);
    assert_eq!(four.tables, 4);
    assert_eq!(four.max_candidates_per_probe, 262_144.0);
    // And 8B rows exceed what this crate builds.
    assert!(!ten.buildable);
}

#[test]
fn every_listed_layout_guarantees_the_radius() {
    for k in 0..=16 {
        for plan in plan_layouts(&PlanRequest::new(1_000_000, k)) {
            assert!(plan.max_supported_distance >= k, "{plan}");
            if let LayoutKind::Bands { bands } = plan.kind {
                assert!(bands > k);
            }
        }
    }
}

#[test]
fn budget_excludes_large_layouts_and_can_refuse() {
    let request = PlanRequest::new(100_000_000, 3).memory_budget(24 << 30);
    let chosen = choose_layout(&request).expect("something fits 24 GiB");
    assert!(chosen.total_bytes <= 24 << 30);
    let roomy =
        choose_layout(&PlanRequest::new(100_000_000, 3).memory_budget(1 << 40)).expect("plan");
    assert!(roomy.tables >= chosen.tables);
    let tiny = PlanRequest::new(1_000_000_000, 3).memory_budget(1 << 20);
    assert!(matches!(
        choose_layout(&tiny),
        Err(IndexError::OverBudget { .. })
    ));
    let text = format_plans(&plan_layouts(&request));
    assert!(text.contains('*'));
}

#[test]
fn larger_radii_pick_multi_index_hashing() {
    let chosen = choose_layout(&PlanRequest::new(1_000_000, 10)).expect("plan");
    assert!(matches!(chosen.kind, LayoutKind::Mih { .. }), "{chosen}");
}

#[test]
fn binomials() {
    assert_eq!(binomial(64, 3), 41_664);
    assert_eq!(binomial(5, 2), 10);
    assert_eq!(binomial(3, 5), 0);
}

#[test]
fn band_widths_differ_by_at_most_one_and_cover_64_bits() {
    for bands in 1..=64 {
        let ranges = band_ranges(bands);
        assert_eq!(ranges.iter().map(|r| r.1).sum::<u32>(), 64);
        let (min, max) = (
            ranges.iter().map(|r| r.1).min().unwrap_or(0),
            ranges.iter().map(|r| r.1).max().unwrap_or(0),
        );
        assert!(max - min <= 1, "bands = {bands}");
    }
}

#[test]
fn radii_satisfy_the_refined_pigeonhole() {
    for m in 1..=8u32 {
        let widths: Vec<u32> = band_ranges(m).iter().map(|r| r.1).collect();
        for k in 0..=20 {
            let radii = mih_radii(&widths, k);
            let units: u32 = radii.iter().map(|r| r.map_or(0, |r| r + 1)).sum();
            assert_eq!(units, k + 1, "m = {m}, k = {k}");
        }
    }
}

#[test]
fn combinations_are_complete_and_ordered() {
    let all = combinations(5, 2);
    assert_eq!(all.len(), 10);
    assert_eq!(all[0], vec![0, 1]);
    assert_eq!(all[9], vec![3, 4]);
    assert_eq!(combinations(3, 0), vec![Vec::<usize>::new()]);
    assert!(combinations(2, 3).is_empty());
}

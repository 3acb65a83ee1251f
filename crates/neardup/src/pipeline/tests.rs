//! Pipeline behaviour, run against the in-memory and the SQLite store.

use super::*;
use crate::store::{Label, MemoryStore, SqliteStore, Verdict};
use crate::text::shingle::fmix64;

#[path = "../../tests/support/corpus.rs"]
mod corpus;
#[path = "../../tests/support/shared_store.rs"]
mod shared_store;
pub(super) use corpus::doc;

/// `text` with `n` words replaced (spread out), a typical light edit.
pub(super) fn edit(text: &str, n: usize) -> String {
    let mut words: Vec<String> = text.split(' ').map(str::to_owned).collect();
    let len = words.len();
    for i in 0..n {
        words[(i * 37 + 11) % len] = format!("edit{i}");
    }
    words.join(" ")
}

fn t(s: &str) -> Timestamp {
    Timestamp::parse_rfc3339(s).unwrap()
}

fn memory() -> Deduper<MemoryStore> {
    Deduper::builder()
        .rule(guarded_rule())
        .open(MemoryStore::new())
        .unwrap()
}

/// An in-memory deduper under `rule` (set over the guarded rule).
fn with_rule(rule: Rule) -> Deduper<MemoryStore> {
    Deduper::builder()
        .rule(guarded_rule())
        .rule(rule)
        .open(MemoryStore::new())
        .unwrap()
}

/// A deduper under the guarded rule over the SQLite store at `path`.
fn sqlite(path: &std::path::Path) -> Deduper<SqliteStore> {
    sqlite_with(guarded_rule(), path)
}

/// A deduper under `rule` (set over the guarded rule) over the SQLite store at `path`.
fn sqlite_with(rule: Rule, path: &std::path::Path) -> Deduper<SqliteStore> {
    Deduper::builder()
        .rule(guarded_rule())
        .rule(rule)
        .open(SqliteStore::open(path).unwrap())
        .unwrap()
}

/// Asserts that `builder` refuses the SQLite store at `path` as made under another
/// configuration; returns the error.
#[track_caller]
fn assert_refused_as_mismatch(builder: DeduperBuilder, path: &std::path::Path) -> Error {
    let err = builder.open(SqliteStore::open(path).unwrap()).unwrap_err();
    assert!(matches!(err, Error::ConfigMismatch { .. }), "{err}");
    err
}

/// A temporary folder (removed when dropped) and the path of a store `name` in it.
fn temp_db(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let path = tmp.path().join(name);
    (tmp, path)
}

/// Asserts that a record was kept as too short for SimHash.
#[track_caller]
fn assert_kept_short(decision: &Decision) {
    assert!(matches!(
        decision,
        Decision::Kept {
            too_short: true,
            ..
        }
    ));
}

/// Asserts that a record was kept, for whatever reason.
#[track_caller]
fn assert_kept(decision: &Decision) {
    assert!(matches!(decision, Decision::Kept { .. }), "{decision:?}");
}

/// Asserts that a record was merged, into whichever survivor.
#[track_caller]
fn assert_merged(decision: &Decision) {
    assert!(matches!(decision, Decision::Merged { .. }), "{decision:?}");
}

/// Asserts that a record was merged into `survivor`.
#[track_caller]
fn assert_merged_into(decision: &Decision, survivor: &str) {
    assert!(
        matches!(decision, Decision::Merged { survivor: s, .. } if s == survivor),
        "{decision:?}"
    );
}

/// The survivor, rule and scores of a merge; panics, naming `what`, on any other decision.
#[track_caller]
fn merged<'a>(
    decision: &'a Decision,
    what: &str,
) -> (&'a str, MergeRule, &'a crate::verify::Scores) {
    match decision {
        Decision::Merged {
            survivor,
            rule,
            scores,
            ..
        } => (survivor, *rule, scores),
        other => panic!("{what}{other:?}"),
    }
}

/// The exact Jaccard of two texts' shingle sets under the default hasher.
fn text_jaccard(x: &str, y: &str) -> f64 {
    let h = SimHasher::builder().build().unwrap();
    crate::verify::jaccard(&h.shingle_set(x), &h.shingle_set(y))
}

/// The rule these tests were written for: the defaults before the multi-corpus
/// measurement (guarded linkage, a short-text rule under 50 words, radius 14), so each
/// keeps testing the mechanism it names.
pub(super) fn guarded_rule() -> Rule {
    Rule {
        linkage: Linkage::Guarded,
        min_words: 50,
        max_distance: 14,
        ..Rule::default()
    }
}

#[test]
fn the_defaults_are_the_measured_ones() {
    // scripts/bench_quality_corpora.sh: single linkage, no short-text path, radius 16.
    let r = Rule::default();
    assert_eq!(
        (
            r.linkage,
            r.chain_floor,
            r.min_words,
            r.max_distance,
            r.min_jaccard
        ),
        (Linkage::Single, 0.5, 1, 16, 0.8)
    );
}

const NOW: &str = "2026-11-30T00:00:00Z";

#[test]
fn exact_near_and_distinct_records() {
    let mut d = memory();
    let a = doc(1, 300);
    let recs = vec![
        Record::new("a", a.clone()).with_url("https://one.example/a"),
        Record::new("a-copy", a.to_uppercase()).with_url("https://two.example/a"),
        Record::new("a-edit", edit(&a, 3)).with_url("https://three.example/a"),
        Record::new("b", doc(2, 300)),
    ];
    let out = d.process(&recs, t(NOW)).unwrap();
    assert!(matches!(
        out[0].decision,
        Decision::Kept {
            displaced: None,
            ..
        }
    ));
    let (survivor, rule, scores) = merged(&out[1].decision, "exact copy: ");
    assert_eq!(survivor, "a");
    assert_eq!(rule, MergeRule::Exact);
    assert_eq!(scores.jaccard, 1.0);
    let (survivor, rule, scores) = merged(&out[2].decision, "light edit: ");
    assert_eq!(survivor, "a");
    assert_eq!(rule, MergeRule::SimhashJaccard);
    assert!(scores.jaccard >= 0.8 && scores.jaccard < 1.0, "{scores:?}");
    assert_eq!(out[2].merges[0].rule, "simhash+jaccard");
    // The entry names the URL the merge brought; the cluster's whole list is the kept
    // record's (below).
    assert_eq!(out[2].merges[0].source_urls, ["https://three.example/a"]);
    assert!(matches!(out[3].decision, Decision::Kept { .. }));
    let c = d.cluster_of("a-edit").unwrap();
    assert_eq!(c.survivor, "a");
    assert_eq!(c.members.len(), 3);
    assert_eq!(d.survivor_of("a-edit"), Some(("a", 3)));
    assert_eq!(d.survivor_of("a"), Some(("a", 3)));
    assert_eq!(d.survivor_of("b"), Some(("b", 1)));
    assert_eq!(d.survivor_of("nobody"), None);
    let stats = d.stats();
    assert_eq!(
        (stats.records, stats.clusters, stats.largest_cluster),
        (4, 2, 3)
    );
}

#[test]
fn earliest_first_seen_survives_and_keeps_every_url() {
    let mut d = memory();
    let a = doc(3, 200);
    let late = Record::new("late", a.clone())
        .with_url("https://x.example/late")
        .with_first_seen(t("2026-05-01T00:00:00Z"));
    let early = Record::new("early", edit(&a, 2))
        .with_url("https://y.example/early")
        .with_first_seen(t("2026-01-01T00:00:00Z"));
    d.process(&[late], t(NOW)).unwrap();
    let out = d.process(&[early], t(NOW)).unwrap();
    match &out[0].decision {
        Decision::Kept { displaced, .. } => assert_eq!(displaced.as_deref(), Some("late")),
        other => panic!("{other:?}"),
    }
    assert_eq!(out[0].merges[0].kept, "early");
    assert_eq!(out[0].merges[0].merged, "late");
    assert_eq!(out[0].merges[0].source_urls, ["https://x.example/late"]);
    let c = d.cluster_of("late").unwrap();
    assert_eq!(c.survivor, "early");
    assert_eq!(c.first_seen, t("2026-01-01T00:00:00Z"));
    assert_eq!(
        c.source_urls,
        ["https://y.example/early", "https://x.example/late"]
    );
    // Ties on time go to the smallest id.
    let mut d = memory();
    let same = t("2026-01-01T00:00:00Z");
    d.process(&[Record::new("z", a.clone()).with_first_seen(same)], t(NOW))
        .unwrap();
    d.process(&[Record::new("m", a.clone()).with_first_seen(same)], t(NOW))
        .unwrap();
    assert_eq!(d.cluster_of("z").unwrap().survivor, "m");
}

#[test]
fn a_clusters_urls_are_listed_once_each_survivor_first() {
    // The same URL crawled twice (and a third copy elsewhere): the cluster lists it once.
    let mut d = memory();
    let a = doc(4, 200);
    let records = [
        Record::new("b", edit(&a, 1))
            .with_url("https://x.example/p")
            .with_first_seen(t("2026-02-01T00:00:00Z")),
        Record::new("c", edit(&a, 2))
            .with_url("https://x.example/p")
            .with_first_seen(t("2026-03-01T00:00:00Z")),
        Record::new("a", a.clone())
            .with_url("https://y.example/q")
            .with_first_seen(t("2026-01-01T00:00:00Z")),
    ];
    d.process(&records, t(NOW)).unwrap();
    let c = d.cluster_of("c").unwrap();
    assert_eq!(c.members.len(), 3);
    assert_eq!(
        c.source_urls,
        ["https://y.example/q", "https://x.example/p"]
    );
}

#[test]
fn the_merge_log_names_each_url_of_a_cluster_once() {
    // A big cluster (near copies of one page under many URLs, as a crawl's soft-404 pages
    // are): each entry lists the URL its merge brought, so the log grows with the cluster,
    // not with its square, and together with the survivor's own URL it holds them all.
    let mut d = memory();
    let a = doc(5, 300);
    let records: Vec<Record> = (0..120)
        .map(|i| {
            Record::new(format!("r{i:03}"), edit(&a, i % 3))
                .with_url(format!("https://site{i}.example/page"))
                .with_first_seen(t("2026-01-01T00:00:00Z"))
        })
        .collect();
    let mut logged: Vec<String> = Vec::new();
    for chunk in records.chunks(7) {
        for outcome in d.process(chunk, t(NOW)).unwrap() {
            for m in &outcome.merges {
                assert!(m.source_urls.len() <= 1, "{m:?}");
                logged.extend(m.source_urls.iter().cloned());
            }
        }
    }
    let c = d.cluster_of("r000").unwrap();
    assert_eq!(c.members.len(), 120);
    assert_eq!(logged.len(), 119, "one URL per merged record");
    logged.push(format!("https://site{}.example/page", 0));
    logged.sort();
    let mut all = c.source_urls.clone();
    all.sort();
    assert_eq!(logged, all);
}

#[test]
fn short_records_get_only_the_exact_tier_in_exact_only_mode() {
    let rule = Rule {
        short_text: ShortText::ExactOnly,
        ..guarded_rule()
    };
    let mut d = with_rule(rule);
    let out = d
        .process(
            &[
                Record::new("s1", "breaking: storm closes the coastal road tonight"),
                Record::new("s2", "Breaking - storm closes the coastal road tonight!"),
                Record::new("s3", "breaking: storm closes the coastal road today"),
            ],
            t(NOW),
        )
        .unwrap();
    assert_kept_short(&out[0].decision);
    assert!(matches!(
        &out[1].decision,
        Decision::Merged {
            rule: MergeRule::Exact,
            ..
        }
    ));
    assert!(
        matches!(
            out[2].decision,
            Decision::Kept {
                too_short: true,
                ..
            }
        ),
        "short near-duplicates are never SimHash-merged: {:?}",
        out[2].decision
    );
}

#[test]
fn rerun_is_idempotent_and_changed_duplicate_ids_are_rejected() {
    let mut d = memory();
    let a = doc(4, 200);
    let recs = vec![Record::new("a", a.clone()), Record::new("a2", edit(&a, 1))];
    d.process(&recs, t(NOW)).unwrap();
    let again = d.process(&recs, t(NOW)).unwrap();
    for o in &again {
        assert!(
            matches!(&o.decision, Decision::AlreadyStored { survivor } if survivor == "a"),
            "{o:?}"
        );
        assert!(o.merges.is_empty());
    }
    let mut merges = 0;
    d.store().merges(&mut |_| merges += 1).unwrap();
    assert_eq!(merges, 1, "nothing is merged twice");
    let out = d.process(&[Record::new("a", doc(5, 100))], t(NOW)).unwrap();
    match &out[0].decision {
        Decision::Rejected { reason } => assert!(
            reason.starts_with("duplicate id with different text: \"a\""),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn failed_verification_is_logged_with_scores() {
    // A candidate within the radius whose shingles differ: a heavy rewrite of a text.
    let rule = Rule {
        max_distance: 32,
        ..guarded_rule()
    };
    let mut d = with_rule(rule);
    let a = doc(6, 400);
    let out = d
        .process(
            &[Record::new("a", a.clone()), Record::new("b", edit(&a, 60))],
            t(NOW),
        )
        .unwrap();
    assert_kept(&out[1].decision);
    assert!(d.store().rejection_count() >= 1);
}

#[test]
fn query_does_not_insert() {
    let mut d = memory();
    let a = doc(7, 200);
    d.process(&[Record::new("a", a.clone())], t(NOW)).unwrap();
    let hits = d.query(&Record::new("q", edit(&a, 2))).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].0, "a");
    assert!(hits[0].1.jaccard >= 0.8);
    assert!(!d.contains("q"));
    let exact = d.query(&Record::new("q", a.clone())).unwrap();
    assert_eq!(exact[0].1.jaccard, 1.0);
    assert!(d.query(&Record::new("q", "")).is_err());
}

#[test]
fn erasure_removes_the_record_everywhere_and_promotes_a_survivor() {
    let mut d = memory();
    let a = doc(8, 200);
    d.process(
        &[
            Record::new("first", a.clone()).with_first_seen(t("2026-01-01T00:00:00Z")),
            Record::new("second", edit(&a, 2)).with_first_seen(t("2026-02-01T00:00:00Z")),
            Record::new("third", edit(&a, 3)).with_first_seen(t("2026-03-01T00:00:00Z")),
        ],
        t(NOW),
    )
    .unwrap();
    for (other, verdict) in [("second", Verdict::Duplicate), ("third", Verdict::Unsure)] {
        d.put_label(&Label {
            a: "first".into(),
            b: other.into(),
            verdict,
            source: "boundary".into(),
            distance: 3,
            jaccard: 0.9,
            by: "ana".into(),
            at: NOW.into(),
        })
        .unwrap();
    }
    d.put_label(&Label {
        a: "second".into(),
        b: "third".into(),
        verdict: Verdict::Duplicate,
        source: "random".into(),
        distance: 2,
        jaccard: 0.95,
        by: "ana".into(),
        at: NOW.into(),
    })
    .unwrap();
    assert_eq!(d.erase(&["first", "nope"]).unwrap(), ["first"]);
    let mut labels = Vec::new();
    d.store().labels(&mut |l| labels.push((l.a, l.b))).unwrap();
    assert_eq!(
        labels,
        [("second".to_owned(), "third".to_owned())],
        "labels naming it go"
    );
    assert!(!d.contains("first"));
    assert_eq!(d.cluster_of("third").unwrap().survivor, "second");
    // The erased text is no longer found by the index or the exact tier.
    let hits = d.query(&Record::new("q", a.clone())).unwrap();
    assert!(hits.iter().all(|(id, _)| id != "first"), "{hits:?}");
    let mut log = Vec::new();
    d.store().merges(&mut |m| log.push(m)).unwrap();
    assert!(log
        .iter()
        .all(|m| m.merged != "first" && m.kept != "first" && m.matched != "first"));
    assert!(log.iter().any(|m| m.kept == "<erased>"), "{log:?}");
}

#[test]
fn expire_removes_a_retention_class_before_a_time() {
    let mut d = memory();
    d.process(
        &[
            Record::new("old", doc(9, 100))
                .with_retention_class("30d")
                .with_first_seen(t("2026-01-01T00:00:00Z")),
            Record::new("new", doc(10, 100))
                .with_retention_class("30d")
                .with_first_seen(t("2026-11-01T00:00:00Z")),
            Record::new("keep", doc(11, 100))
                .with_retention_class("forever")
                .with_first_seen(t("2026-01-01T00:00:00Z")),
        ],
        t(NOW),
    )
    .unwrap();
    let gone = d.expire("30d", t("2026-06-01T00:00:00Z")).unwrap();
    assert_eq!(gone, ["old"]);
    assert!(d.contains("new") && d.contains("keep"));
}

#[test]
fn learned_boilerplate_is_excluded() {
    let template = format!(
        "home news sport weather contact us {} all rights reserved",
        doc(999, 70)
    );
    let page = |body: &str| format!("{template} {body}");
    let rule = Rule {
        min_words: 10,
        ..guarded_rule()
    };
    let pages = [
        Record::new("p1", page("storm closes road")).with_url("https://site.example/1"),
        Record::new("p2", page("council approves budget")).with_url("https://site.example/2"),
    ];
    // Without boilerplate exclusion the shared template makes them near-duplicates.
    let mut plain = with_rule(rule);
    let out = plain.process(&pages, t(NOW)).unwrap();
    assert_merged(&out[1].decision);
    // Learn the host's furniture from 30 of its pages, then the two pages are distinct.
    let mut d = with_rule(rule);
    let h = d.hasher().clone();
    let mut learner = crate::text::BoilerplateLearner::new(0.05, 20, 1000);
    for i in 0..30 {
        learner.add_page("site.example", &h.shingle_set(&page(&doc(100 + i, 40))));
    }
    // An analyzer copied before the boilerplate was learned is stale afterwards: what it
    // prepared is analysed again, so the decisions are those of the current boilerplate.
    let stale = d.analyzer();
    d.learn_boilerplate(learner.finish()).unwrap();
    assert!(d
        .boilerplate_of("site.example")
        .is_some_and(|b| b.len() > 50));
    assert_ne!(stale.generation(), d.analyzer_generation());
    let early = stale.prepare(&pages);
    let fresh = d.analyzer().prepare(&pages);
    assert_ne!(early[1].fingerprint(), fresh[1].fingerprint());
    assert_eq!(
        d.query_prepared(
            &pages[1],
            stale.prepare_one(&pages[1], &mut Default::default())
        )
        .unwrap(),
        d.query(&pages[1]).unwrap()
    );
    let out = d.process_prepared(&pages, early, t(NOW)).unwrap();
    assert_kept(&out[1].decision);
}

#[test]
fn sqlite_store_persists_clusters_and_refuses_another_profile() {
    let (_tmp, path) = temp_db("store.db");
    let a = doc(12, 250);
    {
        let mut d = sqlite(&path);
        d.process(
            &[Record::new("a", a.clone()).with_url("https://a.example/")],
            t(NOW),
        )
        .unwrap();
    }
    {
        let mut d = sqlite(&path);
        let out = d
            .process(&[Record::new("a2", edit(&a, 2))], t(NOW))
            .unwrap();
        assert_merged_into(&out[0].decision, "a");
    }
    let d = sqlite(&path);
    assert_eq!(d.cluster_of("a2").unwrap().members, ["a", "a2"]);
    let other = SimHasher::builder().shingle_width(3).build().unwrap();
    let err =
        assert_refused_as_mismatch(Deduper::builder().rule(guarded_rule()).hasher(other), &path);
    assert!(
        err.to_string().contains("neardup/4/xxh3/w4/b64/tf"),
        "{err}"
    );
}

#[test]
fn deduper_over_the_sqlite_store_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Deduper<SqliteStore>>();
    assert_send_sync::<Deduper<Box<dyn Store>>>();
}

#[test]
fn sliding_window_evicts_old_records_from_the_index_only() {
    let mut d = memory();
    let a = doc(20, 200);
    d.process(
        &[Record::new("old", a.clone()).with_first_seen(t("2026-11-30T00:00:00Z"))],
        t(NOW),
    )
    .unwrap();
    assert!(d.record("old").unwrap().indexed);
    assert_eq!(
        d.evict_from_index_before(t("2026-11-30T00:05:00Z"))
            .unwrap(),
        1
    );
    assert!(!d.record("old").unwrap().indexed);
    // A copy arriving later is no longer compared with it, but the old record stays stored.
    let out = d
        .process(
            &[Record::new("new", a).with_first_seen(t("2026-11-30T00:06:00Z"))],
            t(NOW),
        )
        .unwrap();
    assert_kept(&out[0].decision);
    assert!(d.contains("old"));
    // Records stored after the first eviction are evicted when they fall out in turn, an
    // erased one is skipped, and nothing is evicted twice.
    let mid = Record::new("mid", doc(21, 200)).with_first_seen(t("2026-11-30T00:07:00Z"));
    let gone = Record::new("gone", doc(22, 200)).with_first_seen(t("2026-11-30T00:07:30Z"));
    d.process(&[mid, gone], t(NOW)).unwrap();
    d.erase(&["gone"]).unwrap();
    assert_eq!(
        d.evict_from_index_before(t("2026-11-30T00:06:30Z"))
            .unwrap(),
        1
    ); // "new"
    assert!(d.record("mid").unwrap().indexed);
    assert_eq!(
        d.evict_from_index_before(t("2026-11-30T00:08:00Z"))
            .unwrap(),
        1
    ); // "mid"
    assert!(!d.record("mid").unwrap().indexed);
    assert_eq!(
        d.evict_from_index_before(t("2026-11-30T00:08:00Z"))
            .unwrap(),
        0
    );
}

#[test]
fn short_text_char_ngrams_merge_light_edits_of_short_records() {
    let rule = Rule {
        short_text: ShortText::CharNgrams {
            width: 3,
            max_distance: 16,
            min_jaccard: 0.6,
        },
        ..guarded_rule()
    };
    let mut d = with_rule(rule);
    let out = d
        .process(
            &[
                Record::new(
                    "s1",
                    "Breaking: storm closes the coastal road tonight, police say",
                ),
                Record::new(
                    "s2",
                    "Breaking: storm closes the coastal road tonight, police said",
                ),
                Record::new(
                    "s3",
                    "Council approves the new budget for schools and parks",
                ),
            ],
            t(NOW),
        )
        .unwrap();
    assert_kept_short(&out[0].decision);
    let (survivor, how, scores) = merged(&out[1].decision, "");
    assert_eq!(survivor, "s1");
    assert_eq!(how, MergeRule::CharsJaccard);
    assert!(scores.jaccard >= 0.6 && scores.jaccard < 1.0, "{scores:?}");
    assert_kept_short(&out[2].decision);
    assert!(d.record("s1").unwrap().indexed);
    // A store made in one short-text mode refuses the other.
    let (_tmp, path) = temp_db("s.db");
    drop(sqlite_with(rule, &path));
    let exact_only = Rule {
        short_text: ShortText::ExactOnly,
        ..guarded_rule()
    };
    assert_refused_as_mismatch(
        Deduper::builder().rule(guarded_rule()).rule(exact_only),
        &path,
    );
}

#[test]
fn two_processes_on_one_sqlite_store_see_each_others_records() {
    let (_tmp, path) = temp_db("shared.db");
    let text = doc(30, 250);
    shared_store::two_processes_see_each_others_records(
        || sqlite(&path),
        t(NOW),
        &text,
        [&edit(&text, 2), &edit(&text, 3)],
    );
}

#[test]
fn a_group_decides_exactly_as_records_one_by_one() {
    // Families of near duplicates (light and heavier edits, verbatim copies, short texts),
    // interleaved so that matches fall both before a group and inside it; some records
    // are stored first so that groups also find older ones.
    let mut recs = Vec::new();
    for family in 0..60u64 {
        let base = doc(1000 + family, 120 + (family as usize % 5) * 40);
        recs.push(Record::new(format!("f{family}"), base.clone()));
        for (v, edits) in [2usize, 9, 14, 30].into_iter().enumerate() {
            recs.push(Record::new(format!("f{family}-e{v}"), edit(&base, edits)));
        }
        if family % 7 == 0 {
            recs.push(Record::new(format!("f{family}-copy"), base.to_uppercase()));
        }
        recs.push(Record::new(
            format!("s{family}"),
            doc(9000 + family % 9, 12),
        ));
    }
    let n = recs.len();
    let order: Vec<usize> = (0..n).map(|i| (i * 37) % n).collect();
    let recs: Vec<Record> = order.iter().map(|&i| recs[i].clone()).collect();
    let (first, rest) = recs.split_at(n / 4);

    let mut one_by_one = memory();
    one_by_one.process(first, t(NOW)).unwrap();
    let mut expected = Vec::new();
    for r in rest {
        expected.extend(one_by_one.process(std::slice::from_ref(r), t(NOW)).unwrap());
    }

    let mut grouped = memory();
    grouped.process(first, t(NOW)).unwrap();
    let mut got = Vec::new();
    for group in rest.chunks(PRESEARCH_WINDOW / 8 + 3) {
        got.extend(grouped.process(group, t(NOW)).unwrap());
    }
    assert_eq!(got, expected);
    assert!(got
        .iter()
        .any(|o| matches!(o.decision, Decision::Merged { .. })));
    let log = |d: &Deduper<MemoryStore>| {
        let mut v = Vec::new();
        d.store.rejections(&mut |r| v.push(r)).unwrap();
        v
    };
    assert_eq!(log(&grouped), log(&one_by_one));
}

#[test]
fn the_set_cache_changes_no_decision_and_forgets_erased_records() {
    // Families of edited copies, several batches (so candidates' sets are read back from the
    // store or the cache), an erasure between them.
    let batches: Vec<Vec<Record>> = (0..4u64)
        .map(|b| {
            (0..12u64)
                .map(|i| {
                    let family = i % 4;
                    let text = edit(&doc(100 + family, 200), (b * 3 + i) as usize % 9);
                    Record::new(format!("r{b}-{i}"), text)
                })
                .collect()
        })
        .collect();
    let tmp = tempfile::tempdir().expect("temp dir");
    // One batch, after erasing the id given.
    type Step<'a> = dyn FnMut(&[Record], Option<&str>) -> Vec<Outcome> + 'a;
    let run = |d: &mut Step<'_>| {
        let mut decisions = Vec::new();
        for (b, batch) in batches.iter().enumerate() {
            let erase = (b == 2).then_some("r0-1");
            for o in d(batch, erase) {
                decisions.push(format!("{} {:?}", o.id, o.decision));
            }
        }
        decisions
    };
    let sqlite = |cache: u64, name: &str| {
        let mut d = Deduper::builder()
            .rule(guarded_rule())
            .set_cache_bytes(cache)
            .open(SqliteStore::open(&tmp.path().join(name)).unwrap())
            .unwrap();
        let decisions = run(&mut |batch, erase| {
            if let Some(id) = erase {
                let h = d.by_id[id];
                assert!(
                    cache == 0 || d.sets.get(h).is_some(),
                    "{id}'s set is cached"
                );
                d.erase(&[id]).unwrap();
                assert!(
                    d.sets.get(h).is_none(),
                    "an erased record's set is forgotten"
                );
            }
            d.process(batch, t(NOW)).unwrap()
        });
        decisions
    };
    let mut m = memory();
    let in_memory = run(&mut |batch, erase| {
        if let Some(id) = erase {
            m.erase(&[id]).unwrap();
        }
        m.process(batch, t(NOW)).unwrap()
    });
    assert!(
        in_memory.iter().any(|d| d.contains("Merged")),
        "{in_memory:?}"
    );
    assert_eq!(sqlite(DEFAULT_SET_CACHE_BYTES, "cached.db"), in_memory);
    assert_eq!(sqlite(0, "uncached.db"), in_memory);
}

#[test]
fn stores_of_the_previous_format_version_open_where_their_fingerprints_still_compare() {
    let dir = tempfile::tempdir().unwrap();
    let open_as = |name: &str, stored: &str, hasher: SimHasher| {
        let path = dir.path().join(name);
        let mut store = SqliteStore::open(&path).unwrap();
        store.set_profile(stored).unwrap();
        // The default rule fingerprints short text by character shingles.
        store
            .set_meta("short_profile", "neardup/2/xxh3/w3/b64/tf/tok=chars")
            .unwrap();
        Deduper::builder()
            .rule(guarded_rule())
            .hasher(hasher)
            .open(SqliteStore::open(&path).unwrap())
    };
    // Versions 3 and 4 changed only the language detector: default-profile fingerprints
    // of versions 2 and 3 are the same.
    let default = SimHasher::builder().build().unwrap();
    assert!(open_as("v2.db", "neardup/2/xxh3/w4/b64/tf", default.clone()).is_ok());
    assert!(open_as("v3.db", "neardup/3/xxh3/w4/b64/tf", default.clone()).is_ok());
    // Stopword-dropping fingerprints depend on the detected language: refused.
    let stop = SimHasher::builder().stopwords(true).build().unwrap();
    for old in ["2", "3"] {
        let stored = format!("neardup/{old}/xxh3/w4/b64/tf/stop");
        let err = open_as(&format!("v{old}stop.db"), &stored, stop.clone()).unwrap_err();
        assert!(matches!(err, Error::ConfigMismatch { .. }), "{err}");
    }
    assert!(open_as("v4stop.db", "neardup/4/xxh3/w4/b64/tf/stop", stop).is_ok());
    // Anything else that differs is still refused.
    let err = open_as("w5.db", "neardup/2/xxh3/w5/b64/tf", default).unwrap_err();
    assert!(matches!(err, Error::ConfigMismatch { .. }), "{err}");
}

#[test]
fn a_record_joins_a_cluster_only_if_it_verifies_against_every_member() {
    // B is a light edit of A and C a light edit of B, but C is further from A: chaining
    // would put all three in one cluster.
    let a = doc(7, 400);
    let (b, c) = (edit(&a, 8), edit(&a, 16));
    let j = text_jaccard;
    let (ab, bc, ac) = (j(&a, &b), j(&b, &c), j(&a, &c));
    assert!(ab >= 0.8 && bc >= 0.8, "{ab} {bc}");
    assert!((0.7..0.75).contains(&ac), "{ac}");
    let recs = [
        Record::new("a", a.clone()),
        Record::new("b", b),
        Record::new("c", c),
    ];
    for (max_distance, min_cluster_jaccard, joins) in [
        (12, 0.75, false),
        (32, 0.75, false),
        (12, 0.7, true),
        (32, 0.7, true),
    ] {
        let rule = Rule {
            max_distance,
            min_cluster_jaccard,
            cluster_quorum: 0.0,
            ..guarded_rule()
        };
        let mut d = with_rule(rule);
        let out = d.process(&recs, t(NOW)).unwrap();
        assert!(matches!(&out[1].decision, Decision::Merged { survivor, .. } if survivor == "a"));
        let joined =
            matches!(&out[2].decision, Decision::Merged { survivor, .. } if survivor == "a");
        assert_eq!(
            joined, joins,
            "k {max_distance}, cluster J {min_cluster_jaccard}: {:?}",
            out[2].decision
        );
    }
}

/// `text` with `n` words replaced in lane `lane` (words `100 * lane + 8 * i`): edits in
/// different lanes never touch the same shingle, so two texts differing in `d` words share
/// all but `4 d` of their shingles.
fn lane_edit(text: &str, lane: usize, n: usize) -> String {
    let mut words: Vec<String> = text.split(' ').map(str::to_owned).collect();
    for i in 0..n {
        words[100 * lane + 8 * i] = format!("lane{lane}edit{i}");
    }
    words.join(" ")
}

#[test]
fn a_record_joins_a_cluster_it_verifies_against_a_quorum_of() {
    // A cluster of four (`a` and three edits of it, every pair verified) and a record `x`
    // that verifies against three of them and sits at 0.78 from the fourth, `m3`: under
    // the default quorum (three quarters, every member at 0.74 at least) it joins; under
    // complete linkage at 0.8 it stays apart; and against the cluster of `a` and `m3` alone,
    // where the one member it misses is half the cluster, it stays apart too.
    let a = doc(9001, 400);
    let (m1, m2, m3) = (
        lane_edit(&a, 1, 3),
        lane_edit(&a, 2, 3),
        lane_edit(&a, 3, 6),
    );
    let x = lane_edit(&a, 0, 6);
    let j = text_jaccard;
    for m in [&a, &m1, &m2] {
        assert!(j(&x, m) >= 0.8, "{}", j(&x, m));
    }
    assert!((0.75..0.8).contains(&j(&x, &m3)), "{}", j(&x, &m3));
    let run = |rule: Rule, members: &[(&str, &String)]| {
        let mut d = with_rule(rule);
        let recs: Vec<Record> = members
            .iter()
            .map(|(id, text)| Record::new(*id, text.as_str()))
            .collect();
        let out = d.process(&recs, t(NOW)).unwrap();
        assert_eq!(
            d.cluster_of("a").unwrap().members.len(),
            recs.len(),
            "{out:?}"
        );
        d.process(&[Record::new("x", x.clone())], t(NOW)).unwrap();
        d.cluster_of("x").unwrap().members
    };
    let four = [("a", &a), ("m1", &m1), ("m2", &m2), ("m3", &m3)];
    assert_eq!(run(guarded_rule(), &four), ["a", "m1", "m2", "m3", "x"]);
    let complete = Rule {
        min_cluster_jaccard: 0.8,
        cluster_quorum: 1.0,
        ..guarded_rule()
    };
    assert_eq!(run(complete, &four), ["x"]);
    assert_eq!(run(guarded_rule(), &[("a", &a), ("m3", &m3)]), ["x"]);
    // The floor holds whatever the quorum: at 0.8 for every member, m3 keeps x out.
    let floor = Rule {
        min_cluster_jaccard: 0.8,
        ..guarded_rule()
    };
    assert_eq!(run(floor, &four), ["x"]);
    // Copies count: with two more copies of `m3` the cluster's members are 6, x verifies
    // against 3 of them, not the 5 that three quarters asks.
    let six = [
        ("a", &a),
        ("m1", &m1),
        ("m2", &m2),
        ("m3", &m3),
        ("m3b", &m3),
        ("m3c", &m3),
    ];
    assert_eq!(run(guarded_rule(), &six), ["x"]);
}

#[test]
fn clusters_fuse_when_a_quorum_of_their_pairs_verifies() {
    // `q` sits at 0.78 from `a`: two clusters. Each of m1, m2, m3 (three, four and five of
    // q's twelve edits) verifies against both and joins `a`'s cluster; the pairs across
    // the two are then q-a (0.78, at the floor) and q with each m, all verified: one of
    // two, two of three, three of four. Under the default quorum (three quarters) the
    // clusters fuse with m3 and not before; under complete linkage at 0.8, never.
    let a = doc(9107, 400);
    let q = lane_edit(&a, 3, 12);
    let ms: Vec<String> = (3..=5).map(|n| lane_edit(&a, 3, n)).collect();
    let j = text_jaccard;
    assert!((0.75..0.8).contains(&j(&a, &q)), "{}", j(&a, &q));
    for m in &ms {
        assert!(j(m, &q) >= 0.8 && j(m, &a) >= 0.8);
    }
    for (rule, fused_at) in [
        (guarded_rule(), Some(2)),
        (
            Rule {
                min_cluster_jaccard: 0.8,
                cluster_quorum: 1.0,
                ..guarded_rule()
            },
            None,
        ),
    ] {
        let mut d = with_rule(rule);
        d.process(
            &[Record::new("a", a.clone()), Record::new("q", q.clone())],
            t(NOW),
        )
        .unwrap();
        assert_eq!(d.cluster_of("q").unwrap().members, ["q"]);
        for (i, m) in ms.iter().enumerate() {
            let out = d
                .process(&[Record::new(format!("m{}", i + 1), m.as_str())], t(NOW))
                .unwrap();
            let fused = fused_at.is_some_and(|at| i >= at);
            assert_eq!(
                d.cluster_of("q").unwrap().survivor == "a",
                fused,
                "{rule:?}, m{}: {out:?}",
                i + 1
            );
            assert_eq!(out[0].fused, usize::from(Some(i) == fused_at));
        }
    }
}

#[test]
fn complete_linkage_holds_for_every_pair_with_displaced_survivors() {
    // Families of edits at many distances from one page, arriving out of first-seen order
    // (survivors are displaced and the bounds to them carried over), in chunks: whatever
    // the bounds let complete linkage skip, every two members of a cluster must still be
    // within the cluster threshold of each other (members with the same text, which are
    // checked once, aside).
    let h = SimHasher::builder().build().unwrap();
    let tmp = tempfile::tempdir().expect("temp dir");
    for seed in 1..=4u64 {
        // Half the seeds reopen their store halfway: bounds and radii start unknown then.
        let path = tmp.path().join(format!("linkage-{seed}.db"));
        let open = || -> Deduper<Box<dyn Store>> {
            let store: Box<dyn Store> = if seed % 2 == 0 {
                Box::new(SqliteStore::open(&path).unwrap())
            } else {
                Box::new(MemoryStore::new())
            };
            Deduper::builder().rule(guarded_rule()).open(store).unwrap()
        };
        let mut d = open();
        let min = d.rule().min_cluster_jaccard;
        let base = doc(seed * 31, 400);
        let mut s = seed;
        let mut next = |n: u64| {
            s = fmix64(s.wrapping_add(0x9e37_79b9_7f4a_7c15));
            s % n
        };
        let records: Vec<Record> = (0..150)
            .map(|i| {
                let edits = next(40) as usize;
                let day = 1 + next(28);
                Record::new(format!("s{seed}r{i:03}"), edit(&base, edits))
                    .with_first_seen(t(&format!("2026-02-{day:02}T00:00:00Z")))
            })
            .collect();
        let texts: std::collections::HashMap<String, Vec<u64>> = records
            .iter()
            .map(|r| (r.id.clone(), h.shingle_set(&r.fields[0].text)))
            .collect();
        let mut displaced = 0;
        for (n, chunk) in records.chunks(9).enumerate() {
            if n == 8 && seed % 2 == 0 {
                drop(d);
                d = open();
            }
            for o in d.process(chunk, t(NOW)).unwrap() {
                displaced += usize::from(matches!(
                    o.decision,
                    Decision::Kept {
                        displaced: Some(_),
                        ..
                    }
                ));
            }
        }
        assert!(
            displaced >= 3,
            "seed {seed}: {displaced} survivors displaced"
        );
        let mut pairs = 0;
        for c in d.clusters() {
            for (i, x) in c.members.iter().enumerate() {
                for y in &c.members[i + 1..] {
                    let (sx, sy) = (&texts[x], &texts[y]);
                    if sx == sy {
                        continue;
                    }
                    pairs += 1;
                    let j = crate::verify::jaccard(sx, sy);
                    assert!(j >= min, "seed {seed}: {x} and {y} in one cluster at {j}");
                }
            }
        }
        assert!(pairs > 100, "seed {seed}: the clusters hold {pairs} pairs");
    }
}

#[test]
fn a_hosts_boilerplate_is_left_out_of_copies_of_its_pages_on_other_hosts() {
    // A licence paragraph on every page of one host is its furniture. A copy of one of its
    // pages on a small host that learned nothing carries the paragraph too: left out of
    // the page but not of the copy, the two would differ by all of it.
    let licence = doc(4242, 80);
    let page = |body: &str| format!("{licence} {body}");
    let mut d = with_rule(Rule {
        min_words: 10,
        ..guarded_rule()
    });
    let h = d.hasher().clone();
    let mut learner = crate::text::BoilerplateLearner::new(0.05, 20, 1000);
    for i in 0..30 {
        learner.add_page("big.example", &h.shingle_set(&page(&doc(300 + i, 60))));
    }
    d.learn_boilerplate(learner.finish()).unwrap();
    assert!(d
        .boilerplate_of("big.example")
        .is_some_and(|b| b.len() > 50));
    assert!(d.boilerplate_of("small.example").is_none());
    let body = doc(77, 300);
    let original = Record::new("original", page(&body)).with_url("https://big.example/a");
    let copy = Record::new("copy", page(&edit(&body, 2))).with_url("https://small.example/a");
    let same = Record::new("same", page(&body).to_uppercase()).with_url("https://small.example/b");
    let a = d.analyzer();
    let fps: Vec<_> = a
        .prepare(&[original.clone(), same.clone()])
        .iter()
        .map(PreparedRecord::fingerprint)
        .collect();
    assert_eq!(fps[0], fps[1], "one text, one fingerprint, wherever it is");
    let out = d.process(&[original, copy], t(NOW)).unwrap();
    // The copy's id sorts first, so it joins the original's cluster as its survivor.
    let Decision::Kept {
        joined: Some((_, scores, with)),
        ..
    } = &out[1].decision
    else {
        panic!("{:?}", out[1].decision);
    };
    assert_eq!(with, "original");
    assert!(scores.jaccard > 0.9 && scores.distance <= 8, "{scores:?}");
    assert!(out[1].boilerplate_removed > 50);
}

/// One step of [`records_repeating_an_earlier_text_are_decided_as_if_analysed`].
enum Step {
    Batch(Vec<Record>),
    Erase(&'static str),
    LearnBoilerplate,
}

/// Runs `steps` on `d`, batches through `Analyzer::prepare_run` (records repeating an
/// earlier record's text not analysed) or `process` (every record analysed); answers every
/// outcome, then what the store holds.
fn run_steps<S: Store>(mut d: Deduper<S>, steps: &[Step], run: bool) -> (Vec<Outcome>, String) {
    let mut seen = SeenTexts::new();
    let mut analyzer = d.analyzer();
    // First passes as the boilerplate pass makes them: before any boilerplate is learned.
    let early = d.analyzer();
    let mut outcomes = Vec::new();
    for step in steps {
        match step {
            Step::Batch(records) if run => {
                // A copy taken before boilerplate was learned stays stale on purpose for
                // one batch: stale analyses, repeats included, are made again.
                // Most records' first halves were made early; some are another record's
                // (the input changed between the passes), which must not be used.
                let first = (0..records.len())
                    .map(|i| match i % 5 {
                        0 => early.first_pass(&records[(i + 1) % records.len()]),
                        1 | 3 => early.first_pass(&records[i]),
                        _ => None,
                    })
                    .collect::<Vec<_>>();
                let prepared = analyzer.prepare_run(records, &mut seen, first);
                outcomes.extend(d.process_prepared(records, prepared, t(NOW)).unwrap());
                analyzer = d.analyzer();
            }
            Step::Batch(records) => outcomes.extend(d.process(records, t(NOW)).unwrap()),
            Step::Erase(id) => {
                d.erase(&[id]).unwrap();
                assert!(
                    d.by_text.is_empty(),
                    "an erasure leaves no text hash behind"
                );
            }
            Step::LearnBoilerplate => {
                let h = d.hasher().clone();
                let mut learner = crate::text::BoilerplateLearner::new(0.05, 20, 1000);
                for i in 0..30 {
                    let page = format!("{} {}", doc(7, 60), doc(500 + i, 40));
                    learner.add_page("site.example", &h.shingle_set(&page));
                }
                d.learn_boilerplate(learner.finish()).unwrap();
            }
        }
    }
    let mut stored = Vec::new();
    d.store.load(&mut |r| stored.push(r)).unwrap();
    stored.sort_by_key(|r| r.handle);
    let mut state = String::new();
    for r in &stored {
        let set = d.store.shingles(r.handle).unwrap();
        state += &format!("{r:?} {set:?}\n");
    }
    let mut merges = Vec::new();
    d.store
        .merges(&mut |m| merges.push(format!("{m:?}")))
        .unwrap();
    state += &merges.join("\n");
    (outcomes, state)
}

#[test]
fn records_repeating_an_earlier_text_are_decided_as_if_analysed() {
    let rule = Rule {
        min_words: 20,
        ..guarded_rule()
    };
    let with_template = |body: &str| format!("{} {body}", doc(7, 60));
    let copy = |id: &str, text: &str, url: &str, first_seen: &str| {
        Record::new(id, text)
            .with_url(url)
            .with_first_seen(t(first_seen))
    };
    let a = doc(1, 300);
    let b = doc(2, 200);
    let c = with_template(&doc(3, 120));
    let short = doc(4, 8);
    let mut weighted = Record::new("w1", a.clone());
    weighted.fields[0].weight = 3;
    let mut batch1 = vec![
        copy("a", &a, "https://one.example/a", "2026-01-02T00:00:00Z"),
        // Copies in the same window: one earlier (it displaces the survivor), one later.
        copy(
            "a-copy1",
            &a,
            "https://two.example/a",
            "2026-01-01T00:00:00Z",
        ),
        copy(
            "a-copy2",
            &a,
            "https://three.example/a",
            "2026-01-03T00:00:00Z",
        ),
        copy("b", &b, "https://one.example/b", "2026-01-02T00:00:00Z"),
        copy(
            "a-edit",
            &edit(&a, 3),
            "https://one.example/e",
            "2026-01-02T00:00:00Z",
        ),
        copy(
            "short",
            &short,
            "https://one.example/s",
            "2026-01-02T00:00:00Z",
        ),
        copy(
            "short-copy",
            &short,
            "https://two.example/s",
            "2026-01-02T00:00:00Z",
        ),
        copy("c", &c, "https://site.example/c", "2026-01-02T00:00:00Z"),
        weighted,
        // The same text twice in records of two fields, and the fields swapped.
        Record::new("two", "").with_url("https://two.example/2"),
        Record::new("two-copy", "").with_url("https://two.example/3"),
        Record::new("two-swapped", "").with_url("https://two.example/4"),
    ];
    for (i, r) in batch1.iter_mut().rev().take(3).enumerate() {
        let (x, y) = if i == 0 { (&b, &c) } else { (&c, &b) };
        let field = |name: &str, text: &String| crate::record::TextField {
            name: name.into(),
            text: text.clone(),
            weight: 1,
        };
        r.fields = vec![field("title", x), field("body_text", y)];
    }
    // Filler, so that the records above span presearch windows.
    for i in 0..(PRESEARCH_WINDOW as u64 + 40) {
        batch1.push(Record::new(format!("f{i}"), doc(100 + i, 60)));
    }
    batch1.push(copy(
        "b-late",
        &b,
        "https://four.example/b",
        "2026-01-04T00:00:00Z",
    ));
    let steps = vec![
        Step::Batch(batch1.clone()),
        Step::Batch(vec![
            // Across batches; a copy whose id is stored with other text (rejected), then
            // a copy of that rejected record's text under a fresh id.
            copy(
                "a-copy3",
                &a,
                "https://five.example/a",
                "2026-01-05T00:00:00Z",
            ),
            copy(
                "b",
                &edit(&b, 40),
                "https://six.example/b",
                "2026-01-05T00:00:00Z",
            ),
            copy(
                "b2",
                &edit(&b, 40),
                "https://six.example/b2",
                "2026-01-05T00:00:00Z",
            ),
            copy(
                "short-copy2",
                &short,
                "https://five.example/s",
                "2026-01-05T00:00:00Z",
            ),
        ]),
        // New boilerplate: copies of `c` are analysed under it, not as `c` was (the first
        // by an analyzer copied before it, the second by one copied after).
        Step::LearnBoilerplate,
        Step::Batch(vec![copy(
            "c-copy",
            &c,
            "https://other.example/c",
            "2026-01-06T00:00:00Z",
        )]),
        Step::Batch(vec![copy(
            "c-copy2",
            &c,
            "https://other.example/c2",
            "2026-01-07T00:00:00Z",
        )]),
        // A page that is nothing but boilerplate now (fingerprinted whole).
        Step::Batch(vec![
            copy(
                "t0",
                &doc(8, 90),
                "https://site.example/t0",
                "2026-01-07T00:00:00Z",
            ),
            copy(
                "template",
                &doc(7, 60),
                "https://site.example/t",
                "2026-01-07T00:00:00Z",
            ),
        ]),
        // Erasing a text's first record: its later copies cannot take its analysis.
        Step::Erase("b"),
        Step::Batch(vec![copy(
            "b-again",
            &b,
            "https://seven.example/b",
            "2026-01-06T00:00:00Z",
        )]),
        // The whole first batch again: already stored, repeats and all.
        Step::Batch(batch1),
    ];
    let open = || with_rule(rule);
    let (want, want_state) = run_steps(open(), &steps, false);
    let (got, got_state) = run_steps(open(), &steps, true);
    assert_eq!(got, want);
    assert_eq!(got_state, want_state);
    assert!(want.iter().any(|o| matches!(
        &o.decision,
        Decision::Merged {
            rule: MergeRule::Exact,
            ..
        }
    )));
    assert!(want
        .iter()
        .any(|o| matches!(o.decision, Decision::AlreadyStored { .. })));

    // The same over SQLite, whose sets are read back from the file.
    let tmp = tempfile::tempdir().expect("temp dir");
    let open = |name: &str| {
        Deduper::builder()
            .rule(guarded_rule())
            .rule(rule)
            .set_cache_bytes(0)
            .open(SqliteStore::open(&tmp.path().join(name)).unwrap())
            .unwrap()
    };
    let (want, want_state) = run_steps(open("full.db"), &steps, false);
    let (got, got_state) = run_steps(open("run.db"), &steps, true);
    assert_eq!(got, want);
    assert_eq!(got_state, want_state);
}

#[test]
fn a_run_leaves_repeated_texts_unanalysed_until_decided() {
    let d = memory();
    let a = doc(1, 100);
    let records = [
        Record::new("a", a.clone()),
        Record::new("a2", a.clone()),
        Record::new("b", doc(2, 100)),
    ];
    let mut seen = SeenTexts::new();
    let analyzer = d.analyzer();
    let first = analyzer.prepare_run(&records, &mut seen, Vec::new());
    assert!(first[0].fingerprint().is_some() && first[2].fingerprint().is_some());
    assert!(first[1].fingerprint().is_none(), "a repeat is not analysed");
    let later = analyzer.prepare_run(&records[..1], &mut seen, Vec::new());
    assert!(later[0].fingerprint().is_none(), "nor in a later batch");
    // Without the run's memory every record is analysed.
    assert!(analyzer
        .prepare(&records)
        .iter()
        .all(|p| p.fingerprint().is_some()));
}

#[test]
fn reserving_lays_the_index_out_for_the_input_and_keeps_what_it_holds() {
    let mut d = memory();
    let a = doc(7, 300);
    let first = d
        .process(
            &[Record::new("a", a.clone()), Record::new("b", doc(8, 300))],
            t(NOW),
        )
        .unwrap();
    assert!(first
        .iter()
        .all(|o| matches!(o.decision, Decision::Kept { .. })));
    let before = d.stats().index.layout;
    // Announced: far more than the builder planned for, so the index is laid out anew.
    d.reserve(50_000_000).unwrap();
    let after = d.stats().index.layout;
    assert_ne!(before, after, "a layout for 50M fingerprints");
    // An announcement within twice the plan leaves the layout as it is.
    d.reserve(40_000_000).unwrap();
    assert_eq!(d.stats().index.layout, after);
    // What was stored before is still found through the new layout.
    let out = d
        .process(&[Record::new("a-edit", edit(&a, 3))], t(NOW))
        .unwrap();
    let (survivor, rule, _) = merged(&out[0].decision, "light edit after reserve: ");
    assert_eq!((survivor, rule), ("a", MergeRule::SimhashJaccard));
    assert_eq!(d.stats().records, 3);
}

/// Families of near duplicates and copies in batches: what committing behind is tested on.
fn behind_batches() -> Vec<Vec<Record>> {
    (0..6u64)
        .map(|b| {
            (0..20u64)
                .map(|i| {
                    let family = (b * 7 + i) % 9;
                    let base = doc(500 + family, 150 + family as usize * 20);
                    let text = match i % 4 {
                        0 => base.to_uppercase(),
                        1 => base,
                        _ => edit(&base, (b + i) as usize % 12),
                    };
                    Record::new(format!("b{b}-{i}"), text)
                })
                .collect()
        })
        .collect()
}

fn stored_ids(path: &std::path::Path) -> Vec<String> {
    let store = SqliteStore::open(path).unwrap();
    let mut ids = Vec::new();
    store.load(&mut |r| ids.push(r.id)).unwrap();
    ids
}

#[test]
fn committing_behind_decides_as_committing_at_once_and_confirms_each_batch_by_the_next() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (at_once_path, behind_path) = (tmp.path().join("a.db"), tmp.path().join("b.db"));
    let mut at_once = sqlite(&at_once_path);
    let mut behind = Deduper::builder()
        .rule(guarded_rule())
        .open(SqliteStore::open_bulk(&behind_path).unwrap())
        .unwrap();
    assert!(behind.store().commits_behind());
    let (mut want, mut got) = (Vec::new(), Vec::new());
    let mut confirmed = 0;
    for batch in behind_batches() {
        let prepared = at_once.analyzer().prepare(&batch);
        want.extend(at_once.process_prepared(&batch, prepared, t(NOW)).unwrap());
        let prepared = behind.analyzer().prepare(&batch);
        got.extend(
            behind
                .process_prepared_behind(&batch, prepared, t(NOW))
                .unwrap(),
        );
        // The batch before this one is in the store now (another connection reads it).
        let stored = stored_ids(&behind_path).len();
        assert!(stored >= confirmed, "{stored} < {confirmed}");
        confirmed += batch.len();
    }
    behind.wait_committed().unwrap();
    assert_eq!(got, want);
    assert!(got
        .iter()
        .any(|o| matches!(o.decision, Decision::Merged { .. })));
    assert_eq!(stored_ids(&behind_path), stored_ids(&at_once_path));
    let merges = |d: &Deduper<SqliteStore>| {
        let mut v = Vec::new();
        d.store()
            .merges(&mut |m| v.push((m.kept, m.merged, m.rule)))
            .unwrap();
        v
    };
    assert_eq!(merges(&behind), merges(&at_once));
    // Sets committed behind are read back like any others by a deduper opened anew.
    let mut reopened = sqlite(&behind_path);
    let again = reopened
        .process(&[Record::new("late", edit(&doc(503, 210), 2))], t(NOW))
        .unwrap();
    assert_merged(&again[0].decision);
}

#[test]
fn a_batch_committed_behind_another_processs_write_is_refused_and_decided_again_by_a_fresh_deduper()
{
    let (_tmp, path) = temp_db("shared.db");
    let mut a = Deduper::builder()
        .rule(guarded_rule())
        .open(SqliteStore::open_bulk(&path).unwrap())
        .unwrap();
    let mut b = sqlite(&path);
    let text = doc(77, 240);
    let first = vec![Record::new("a1", doc(78, 240))];
    let prepared = a.analyzer().prepare(&first);
    a.process_prepared_behind(&first, prepared, t(NOW)).unwrap();
    a.wait_committed().unwrap();
    // Another process stores a text while `a` goes on without syncing.
    b.process(&[Record::new("from-b", text.clone())], t(NOW))
        .unwrap();
    let second = vec![Record::new("a2", edit(&text, 3))];
    let prepared = a.analyzer().prepare(&second);
    let out = a
        .process_prepared_behind(&second, prepared, t(NOW))
        .unwrap();
    // Decided on a stale view: `a` did not know `from-b`.
    assert_kept(&out[0].decision);
    let err = a.wait_committed().unwrap_err();
    assert!(matches!(err, Error::Conflict), "{err}");
    assert!(matches!(
        a.process(&second, t(NOW)).unwrap_err(),
        Error::Poisoned
    ));
    // The first batch is stored, the refused one is not.
    assert_eq!(stored_ids(&path), ["a1", "from-b"]);
    drop(a);
    let mut fresh = Deduper::builder()
        .rule(guarded_rule())
        .open(SqliteStore::open_bulk(&path).unwrap())
        .unwrap();
    let prepared = fresh.analyzer().prepare(&second);
    let out = fresh
        .process_prepared_behind(&second, prepared, t(NOW))
        .unwrap();
    fresh.wait_committed().unwrap();
    // Now it joins `from-b` (and, the smaller id of two first seen at once, survives).
    assert!(
        matches!(&out[0].decision, Decision::Kept { joined: Some((_, _, m)), .. } if m == "from-b"),
        "{:?}",
        out[0].decision
    );
    assert_eq!(stored_ids(&path), ["a1", "from-b", "a2"]);
    assert_eq!(
        fresh.cluster_of("from-b").unwrap().members,
        ["a2", "from-b"]
    );
}

#[test]
fn committing_behind_a_store_that_cannot_commits_at_once() {
    let mut d = memory();
    assert!(!d.store().commits_behind());
    let batch = vec![
        Record::new("m1", doc(1, 200)),
        Record::new("m2", doc(1, 200)),
    ];
    let prepared = d.analyzer().prepare(&batch);
    let out = d.process_prepared_behind(&batch, prepared, t(NOW)).unwrap();
    assert!(matches!(out[1].decision, Decision::Merged { .. }));
    // Nothing is waiting: the batch was committed before the call returned.
    let mut n = 0;
    d.store().load(&mut |_| n += 1).unwrap();
    assert_eq!(n, 2);
    d.wait_committed().unwrap();
}

#[test]
fn a_record_that_bridges_two_clusters_fuses_them_where_every_pair_still_links() {
    // `b` carries twelve edits of `a`: Jaccard about 0.78, below the 0.8 to merge but above
    // a 0.77 linkage, so they are two clusters. `x` carries half of `b`'s edits:
    // at about 0.89 from both, it joins `a` (the older of two equal matches) and fuses
    // `b`'s cluster in, every pair linking. `b2` is `a` with fourteen edits (about 0.75):
    // its bridge `x2` joins `a` too, but its cluster stays apart.
    // (A text whose edits all sit within 8 bits of each other, so that every pair here is
    // a candidate.)
    let base = doc(4307, 400);
    let (a, b, x) = (base.clone(), edit(&base, 12), edit(&base, 6));
    let j = text_jaccard;
    assert!((0.77..0.8).contains(&j(&a, &b)), "{}", j(&a, &b));
    assert!(j(&a, &x) >= 0.8 && j(&x, &b) >= 0.8);
    let (b2, x2) = (edit(&base, 14), edit(&base, 7));
    assert!(j(&a, &b2) < 0.77 && j(&x2, &b2) >= 0.8);

    // Complete linkage at 0.77: the quorum is another test's.
    let linkage = Rule {
        min_cluster_jaccard: 0.77,
        cluster_quorum: 0.0,
        ..guarded_rule()
    };
    let complete = || with_rule(linkage);
    let mut d = complete();
    let out = d
        .process(
            &[
                Record::new("a", a.clone()),
                Record::new("b", b),
                Record::new("x", x),
            ],
            t(NOW),
        )
        .unwrap();
    assert!(matches!(
        out[1].decision,
        Decision::Kept { joined: None, .. }
    ));
    // Whichever of the two x joined, it ends in the cluster of the older survivor, and its
    // outcome carries both entries: its own merge and the fused cluster's.
    assert_merged_into(&out[2].decision, "a");
    let entries: Vec<(&str, &str)> = out[2]
        .merges
        .iter()
        .map(|m| (m.kept.as_str(), m.merged.as_str()))
        .collect();
    assert!(
        entries == [("a", "x"), ("a", "b")] || entries == [("b", "x"), ("a", "b")],
        "{entries:?}"
    );
    assert_eq!((out[0].fused, out[1].fused, out[2].fused), (0, 0, 1));
    assert_eq!(d.cluster_of("b").unwrap().members, ["a", "b", "x"]);

    let mut d = complete();
    d.process(
        &[
            Record::new("a", a),
            Record::new("b2", b2),
            Record::new("x2", x2),
        ],
        t(NOW),
    )
    .unwrap();
    assert_eq!(d.cluster_of("x2").unwrap().members, ["a", "x2"]);
    assert_eq!(d.cluster_of("b2").unwrap().members, ["b2"]);
}

#[test]
fn a_fused_cluster_is_what_the_store_holds_after_reopening() {
    let base = doc(4307, 400);
    let (_tmp, path) = temp_db("s.db");
    // Complete linkage at 0.77, as in the test above.
    let rule = Rule {
        min_cluster_jaccard: 0.77,
        cluster_quorum: 0.0,
        ..guarded_rule()
    };
    let mut d = sqlite_with(rule, &path);
    // The first cluster is stored in an earlier batch; the bridge fuses it from a later one,
    // and the older survivor is the one that was first seen.
    d.process(
        &[Record::new("z-old", edit(&base, 12))],
        t("2026-01-01T00:00:00Z"),
    )
    .unwrap();
    let out = d
        .process(
            &[
                Record::new("a-new", base.clone()),
                Record::new("m-bridge", edit(&base, 6)),
            ],
            t(NOW),
        )
        .unwrap();
    assert_eq!(d.cluster_of("a-new").unwrap().survivor, "z-old", "{out:?}");
    assert_merged_into(&out[1].decision, "z-old");
    drop(d);
    let d = sqlite_with(rule, &path);
    let c = d.cluster_of("m-bridge").unwrap();
    assert_eq!(c.survivor, "z-old");
    assert_eq!(c.members, ["z-old", "a-new", "m-bridge"]);
    let mut log = Vec::new();
    d.store()
        .merges(&mut |m| log.push((m.kept, m.merged, m.matched)))
        .unwrap();
    assert!(
        log.contains(&("z-old".into(), "a-new".into(), "m-bridge".into()))
            || log.contains(&("z-old".into(), "a-new".into(), "z-old".into())),
        "{log:?}"
    );
}

#[test]
fn exact_copies_stay_out_of_the_index_until_their_text_is_handed_to_them() {
    let (_tmp, path) = temp_db("s.db");
    let open = || sqlite(&path);
    let a = doc(30, 200);
    let at = |i: u32| t(&format!("2026-11-30T00:0{i}:00Z"));
    let mut d = open();
    let copies: Vec<Record> = (0..3)
        .map(|i| Record::new(format!("a{i}"), a.clone()).with_first_seen(at(i)))
        .collect();
    d.process(&copies, t(NOW)).unwrap();
    let indexed = |d: &Deduper<SqliteStore>| -> Vec<bool> {
        (0..3)
            .map(|i| d.record(&format!("a{i}")).is_some_and(|r| r.indexed))
            .collect()
    };
    assert_eq!(indexed(&d), [true, false, false]);
    // A query still lists every copy, near or exact, with the same scores.
    let near: Vec<String> = d
        .query(&Record::new("q", edit(&a, 2)))
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(near, ["a0", "a1", "a2"]);
    assert_eq!(d.query(&Record::new("q", a.clone())).unwrap().len(), 3);
    // Erased, the indexed one hands its text to a copy, which a near copy then finds.
    d.erase(&["a0"]).unwrap();
    assert_eq!(indexed(&d), [false, true, false]);
    let out = d
        .process(
            &[Record::new("a-edit", edit(&a, 2)).with_first_seen(at(5))],
            t(NOW),
        )
        .unwrap();
    assert!(
        matches!(&out[0].decision, Decision::Merged { matched, .. } if matched == "a1"),
        "{:?}",
        out[0].decision
    );
    // The store opened again indexes the same records.
    drop(d);
    let mut d = open();
    assert_eq!(indexed(&d), [false, true, false]);
    // A sliding window takes out the indexed copy: the one still in the window takes over.
    d.evict_from_index_before(at(2)).unwrap();
    assert_eq!(indexed(&d), [false, false, true]);
    let out = d
        .process(
            &[Record::new("a3", a.clone()).with_first_seen(at(6))],
            t(NOW),
        )
        .unwrap();
    assert!(
        matches!(&out[0].decision, Decision::Merged { matched, rule: MergeRule::Exact, .. } if matched == "a2"),
        "{:?}",
        out[0].decision
    );
    d.evict_from_index_before(at(9)).unwrap();
    assert_eq!(indexed(&d), [false, false, false]);
}

/// Pure single linkage: connected components, no chain floor.
fn single() -> Rule {
    Rule {
        linkage: Linkage::Single,
        chain_floor: 0.0,
        ..guarded_rule()
    }
}

#[test]
fn the_chain_floor_cuts_a_chain_whose_ends_are_no_duplicates() {
    // Each link verifies (four more words edited each time); the ends are under 0.5.
    let base = doc(911, 400);
    let links: Vec<Record> = (0..10)
        .map(|l| Record::new(format!("c{l}"), edit(&base, l * 4)))
        .collect();
    let h = SimHasher::builder().build().unwrap();
    let j = |a: &Record, b: &Record| {
        crate::verify::jaccard(
            &h.shingle_set(&a.fields[0].text),
            &h.shingle_set(&b.fields[0].text),
        )
    };
    assert!(j(&links[0], &links[9]) < 0.5);
    assert!((1..10).all(|l| j(&links[l - 1], &links[l]) >= 0.8));
    let pure = partition(single(), &links, 3);
    assert_eq!(pure.len(), 1, "connected components: one chain {pure:?}");
    let floored = Rule {
        chain_floor: 0.5,
        ..single()
    };
    let cut = partition(floored, &links, 3);
    assert!(cut.len() > 1, "{cut:?}");
    for cluster in &cut {
        for a in cluster {
            for b in cluster {
                let (a, b) = (
                    &links[a[1..].parse::<usize>().unwrap()],
                    &links[b[1..].parse::<usize>().unwrap()],
                );
                assert!(j(a, b) >= 0.5, "{} ~ {} in {cluster:?}", a.id, b.id);
            }
        }
    }
}

#[test]
fn single_linkage_joins_a_chain_that_guarded_linkage_keeps_apart() {
    // a ~ x and x ~ b verify, a and b (J under 0.77) do not.
    let base = doc(4307, 400);
    let (a, b, x) = (base.clone(), edit(&base, 14), edit(&base, 5));
    let j = text_jaccard;
    assert!(j(&a, &b) < 0.8 && j(&a, &x) > j(&x, &b) && j(&x, &b) >= 0.8);
    let records = [
        Record::new("a", a),
        Record::new("b", b),
        Record::new("x", x),
    ];
    for (rule, want) in [
        (guarded_rule(), vec![vec!["a", "x"], vec!["b"]]),
        (single(), vec![vec!["a", "b", "x"]]),
    ] {
        let mut d = with_rule(rule);
        let out = d.process(&records, t(NOW)).unwrap();
        let mut got: Vec<Vec<String>> = ["a", "b"]
            .iter()
            .map(|id| d.cluster_of(id).unwrap().members)
            .collect();
        got.dedup();
        assert_eq!(got, want, "{:?}: {out:?}", rule.linkage);
    }
}

/// The clusters of `records` processed in batches of `batch`, as sorted lists of ids.
fn partition(rule: Rule, records: &[Record], batch: usize) -> Vec<Vec<String>> {
    let mut d = with_rule(rule);
    for chunk in records.chunks(batch) {
        d.process(chunk, t(NOW)).unwrap();
    }
    let mut clusters: Vec<Vec<String>> = records
        .iter()
        .filter_map(|r| d.cluster_of(&r.id).map(|c| c.members))
        .map(|mut m| {
            m.sort();
            m
        })
        .collect();
    clusters.sort();
    clusters.dedup();
    clusters
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// Single linkage is connected components of the verified pairs: the input's order
    /// changes no cluster (every pair within the radius is found, whichever comes first).
    #[test]
    fn prop_single_linkage_clusters_do_not_depend_on_input_order(
        families in proptest::collection::vec((0u64..1000, 1usize..5), 1..6),
        edits in proptest::collection::vec(0usize..30, 20),
        order in proptest::collection::vec(proptest::prelude::any::<u64>(), 20),
        batch in 1usize..8,
    ) {
        let mut records = Vec::new();
        let mut e = edits.iter().cycle();
        for (f, &(seed, members)) in families.iter().enumerate() {
            let base = doc(seed, 300);
            for m in 0..members {
                let n = *e.next().expect("cycled");
                records.push(Record::new(format!("f{f}m{m}"), edit(&base, n)));
            }
        }
        let want = partition(single(), &records, batch);
        let mut shuffled: Vec<(u64, Record)> =
            order.iter().copied().cycle().zip(records).collect();
        shuffled.sort_by_key(|(k, r)| (*k, r.id.clone()));
        let shuffled: Vec<Record> = shuffled.into_iter().map(|(_, r)| r).collect();
        proptest::prop_assert_eq!(partition(single(), &shuffled, batch), want);
    }
}

/// A batch searched before the store's lock, on a view other processes wrote past, is
/// completed under the lock with what they committed: the same outcomes as a deduper that
/// saw every write first (with an erasure among them, the batch is searched again).
#[test]
fn a_batch_searched_before_the_lock_decides_as_if_it_saw_every_commit() {
    let docs = |prefix: &str, seed: u64| -> Vec<Record> {
        (0..20)
            .map(|i| Record::new(format!("{prefix}{i}"), doc(seed + i, 200)))
            .collect()
    };
    let mut batch = Vec::new();
    for i in 0..20 {
        batch.push(Record::new(
            format!("e-old{i}"),
            edit(&doc(300 + i, 200), 3),
        ));
        batch.push(Record::new(format!("e-b{i}"), edit(&doc(400 + i, 200), 3)));
        batch.push(Record::new(format!("new{i}"), doc(500 + i, 200)));
        batch.push(Record::new(
            format!("e-new{i}"),
            edit(&doc(500 + i, 200), 4),
        ));
    }
    assert!(batch.len() >= super::decide::PARALLEL_PRESEARCH_MIN);
    for erase in [false, true] {
        let (_tmp, path) = temp_db("shared.db");
        let (_tmp2, alone) = temp_db("alone.db");
        // `a` stores the old texts, then `b` writes while `a` does not sync: texts only
        // `b` knows of, and maybe an erasure.
        let mut a = sqlite(&path);
        a.process(&docs("old", 300), t(NOW)).unwrap();
        let mut b = sqlite(&path);
        b.process(&docs("b", 400), t(NOW)).unwrap();
        // The same writes by one deduper, which sees each as it is made.
        let mut c = sqlite(&alone);
        c.process(&docs("old", 300), t(NOW)).unwrap();
        c.process(&docs("b", 400), t(NOW)).unwrap();
        if erase {
            b.erase(&["old3"]).unwrap();
            c.erase(&["old3"]).unwrap();
        }
        let ours = a.process(&batch, t(NOW)).unwrap();
        let expected = c.process(&batch, t(NOW)).unwrap();
        assert_eq!(ours, expected, "erase: {erase}");
        // Edits of `b`'s texts found `b`'s records, which `a` learned of under the lock.
        for (i, o) in ours
            .iter()
            .enumerate()
            .filter(|(_, o)| o.id.starts_with("e-b"))
        {
            assert_merged_into(&o.decision, &format!("b{}", i / 4));
        }
    }
}

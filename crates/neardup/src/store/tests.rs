//! Store conformance: one generic function per behaviour, run for every backend.

use super::*;
use crate::record::Timestamp;

fn record(handle: u64, id: &str, survivor: u64) -> NewRecord {
    NewRecord {
        record: StoredRecord {
            handle,
            id: id.to_owned(),
            fingerprint: 0xdead_beef_0000_0000_0000_0000_0000_0001 + u128::from(handle),
            content_hash: u128::from(handle) << 64 | 7,
            url: Some(format!("https://example.org/{id}")),
            host: Some("example.org".into()),
            first_seen: Timestamp(1_700_000_000_000 + handle as i64),
            retention_class: Some("30d".into()),
            survivor,
            arrival: if handle == survivor {
                Arrival::New
            } else {
                Arrival::Near
            },
            tokens: 123,
            language: Some("eng".into()),
            features: if handle.is_multiple_of(2) {
                Features::Chars
            } else {
                Features::Words
            },
        },
        shingles: vec![1, 5, 9, handle as u32 + 100].into(),
        // The semantic stage embeds records with word features (odd handles here).
        embedding: (!handle.is_multiple_of(2)).then(|| embedding(handle)),
    }
}

fn embedding(handle: u64) -> std::sync::Arc<[f32]> {
    vec![handle as f32, 0.5, -0.25, 1.0e-7].into()
}

fn merge(kept: &str, merged: &str) -> MergeLogEntry {
    MergeLogEntry {
        kept: kept.into(),
        merged: merged.into(),
        merged_fingerprint: "00ff".into(),
        rule: "simhash+jaccard".into(),
        distance: 7,
        jaccard: 0.875,
        cosine: Some(0.9375),
        matched: kept.into(),
        source_urls: vec!["https://a".into(), "https://b".into()],
        at: "2026-11-30T00:00:00Z".into(),
    }
}

fn loaded(store: &dyn Store) -> Vec<StoredRecord> {
    let mut v = Vec::new();
    store.load(&mut |r| v.push(r)).unwrap();
    v
}

fn merges(store: &dyn Store) -> Vec<MergeLogEntry> {
    let mut v = Vec::new();
    store.merges(&mut |m| v.push(m)).unwrap();
    v
}

/// A batch of `records` and nothing else.
fn batch_of(records: Vec<NewRecord>) -> Batch {
    Batch {
        records,
        ..Batch::default()
    }
}

/// Commits a batch of `records` and nothing else.
fn commit_records(store: &mut dyn Store, records: Vec<NewRecord>) {
    store.commit(&batch_of(records)).unwrap();
}

/// Host "h" with its boilerplate learned from `pages` pages.
fn host_h(pages: u64, shingles: Vec<u64>) -> Vec<(String, HostBoilerplate)> {
    vec![("h".to_owned(), HostBoilerplate { pages, shingles })]
}

/// A temporary folder (removed when dropped) and the path of a store `name` in it.
fn temp_db(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let path = tmp.path().join(name);
    (tmp, path)
}

fn commit_then_load_round_trips(store: &mut dyn Store) {
    assert_eq!(store.profile().unwrap(), None);
    store.set_profile("neardup/2/xxh3/w4/b64/tf").unwrap();
    assert_eq!(
        store.profile().unwrap().as_deref(),
        Some("neardup/2/xxh3/w4/b64/tf")
    );
    let batch = Batch {
        records: vec![record(1, "a", 1), record(2, "b", 1)],
        merges: vec![merge("a", "b")],
        rejections: vec![Rejection {
            record: "b".into(),
            candidate: "x".into(),
            distance: 9,
            jaccard: 0.2,
            cosine: Some(0.40625),
        }],
        ..Batch::default()
    };
    store.commit(&batch).unwrap();
    let got = loaded(store);
    assert_eq!(
        got,
        vec![record(1, "a", 1).record, record(2, "b", 1).record]
    );
    assert_eq!(store.shingles(2).unwrap(), Some(vec![1, 5, 9, 102]));
    assert_eq!(store.shingles(99).unwrap(), None);
    assert_eq!(
        store.embeddings_many(&[1, 2, 99]).unwrap(),
        vec![Some(embedding(1).to_vec()), None, None]
    );
    assert_eq!(merges(store), vec![merge("a", "b")]);
    let mut rejections = Vec::new();
    store.rejections(&mut |r| rejections.push(r)).unwrap();
    assert_eq!(rejections, batch.rejections);
}

fn survivor_updates_and_boilerplate_upserts(store: &mut dyn Store) {
    commit_records(store, vec![record(1, "a", 1), record(2, "b", 1)]);
    store
        .commit(&Batch {
            survivor_updates: vec![(1, 2), (2, 2)],
            boilerplate: host_h(20, vec![3, 4]),
            ..Batch::default()
        })
        .unwrap();
    assert!(loaded(store).iter().all(|r| r.survivor == 2));
    store
        .commit(&Batch {
            boilerplate: host_h(40, vec![4, 5]),
            ..Batch::default()
        })
        .unwrap();
    assert_eq!(store.boilerplate().unwrap(), host_h(40, vec![4, 5]));
}

fn erase_removes_record_shingles_and_its_merge_rows(store: &mut dyn Store) {
    store
        .commit(&Batch {
            records: vec![record(1, "a", 1), record(2, "b", 1), record(3, "c", 1)],
            merges: vec![merge("a", "b"), merge("a", "c")],
            ..Batch::default()
        })
        .unwrap();
    store
        .commit(&Batch {
            erase: vec![1, 3],
            survivor_updates: vec![(2, 2)],
            ..Batch::default()
        })
        .unwrap();
    let got = loaded(store);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].id, "b");
    assert_eq!(store.shingles(1).unwrap(), None);
    assert_eq!(store.embeddings_many(&[1, 3]).unwrap(), vec![None, None]);
    let log = merges(store);
    assert_eq!(log.len(), 1, "the row merging the erased c is gone");
    assert_eq!(log[0].kept, "<erased>");
    assert_eq!(log[0].merged, "b");
}

fn label(a: &str, b: &str, verdict: Verdict, at: &str) -> Label {
    Label {
        a: a.into(),
        b: b.into(),
        verdict,
        source: "boundary".into(),
        distance: 7,
        jaccard: 0.8125,
        by: "ana".into(),
        at: at.into(),
    }
}

fn labelled(store: &dyn Store) -> Vec<Label> {
    let mut out = Vec::new();
    store.labels(&mut |l| out.push(l)).unwrap();
    out
}

fn labels_replace_by_pair_remove_and_go_with_erasure(store: &mut dyn Store) {
    assert!(labelled(store).is_empty());
    let first = label("a", "b", Verdict::Duplicate, "2026-12-06T10:00:02Z");
    store.put_label(&first).unwrap();
    store
        .put_label(&label("c", "d", Verdict::Unsure, "2026-12-06T10:00:01Z"))
        .unwrap();
    // The reverse pair is another pair.
    store
        .put_label(&label(
            "b",
            "a",
            Verdict::NotDuplicate,
            "2026-12-06T10:00:03Z",
        ))
        .unwrap();
    let got = labelled(store);
    let pairs: Vec<(&str, &str)> = got.iter().map(|l| (&*l.a, &*l.b)).collect();
    assert_eq!(
        pairs,
        [("c", "d"), ("a", "b"), ("b", "a")],
        "ordered by time"
    );
    assert_eq!(got[1], first, "every field round-trips");

    // Labelling a pair again replaces its label.
    store
        .put_label(&label(
            "a",
            "b",
            Verdict::NotDuplicate,
            "2026-12-06T10:00:04Z",
        ))
        .unwrap();
    let got = labelled(store);
    assert_eq!(got.len(), 3);
    assert_eq!(got[2].verdict, Verdict::NotDuplicate);

    assert!(store.remove_label("c", "d").unwrap());
    assert!(!store.remove_label("c", "d").unwrap(), "already gone");
    assert_eq!(labelled(store).len(), 2);

    store
        .put_label(&label("e", "f", Verdict::Duplicate, "2026-12-06T10:00:05Z"))
        .unwrap();
    assert_eq!(store.remove_labels_of(&["a", "zz"]).unwrap(), 2);
    let got = labelled(store);
    assert_eq!(got.len(), 1);
    assert_eq!((&*got[0].a, &*got[0].b), ("e", "f"));

    let mut bad = label("e", "", Verdict::Duplicate, "2026-12-06T10:00:06Z");
    assert!(matches!(
        store.put_label(&bad),
        Err(crate::Error::InvalidLabel { .. })
    ));
    bad.b = "f".into();
    bad.jaccard = 1.5;
    assert!(store.put_label(&bad).is_err());
    assert_eq!(labelled(store).len(), 1, "refused labels change nothing");
}

fn merges_since_filters_by_time_and_limits(store: &mut dyn Store) {
    // Times with and without a fraction of a second: text order is not time order there.
    let at = [
        "2026-11-30T10:00:00.900Z",
        "2026-11-30T10:00:01Z",
        "2026-11-30T10:00:01.500Z",
        "2026-11-30T10:00:02Z",
        "2026-11-30T11:00:00Z",
    ];
    let entries: Vec<MergeLogEntry> = at
        .iter()
        .enumerate()
        .map(|(i, &t)| MergeLogEntry {
            at: t.into(),
            ..merge("k", &format!("m{i}"))
        })
        .collect();
    store
        .commit(&Batch {
            merges: entries,
            ..Batch::default()
        })
        .unwrap();
    let since = |s: Option<&str>, limit: usize| {
        let mut got = Vec::new();
        let truncated = store
            .merges_since(
                s.map(|s| Timestamp::parse_rfc3339(s).unwrap()),
                limit,
                &mut |m| got.push(m.merged),
            )
            .unwrap();
        (got, truncated)
    };
    assert_eq!(since(None, 100).0.len(), 5);
    assert_eq!(
        since(Some("2026-11-30T10:00:01.200Z"), 100),
        (vec!["m2".to_owned(), "m3".into(), "m4".into()], false)
    );
    assert_eq!(
        since(Some("2026-11-30T10:00:01Z"), 2),
        (vec!["m1".to_owned(), "m2".into()], true)
    );
    assert_eq!(
        since(Some("2026-11-30T10:00:00.900Z"), 5),
        (
            vec![
                "m0".to_owned(),
                "m1".into(),
                "m2".into(),
                "m3".into(),
                "m4".into()
            ],
            false
        )
    );
    assert_eq!(since(Some("2026-12-01T00:00:00Z"), 5), (vec![], false));
}

fn batches_committed_behind_are_stored_once_waited_for(store: &mut dyn Store) {
    store.load(&mut |_| {}).unwrap();
    store.wait_behind().unwrap(); // nothing handed over yet
    store
        .commit_behind(batch_of(vec![record(1, "a", 1)]))
        .unwrap();
    // The second hand-over waits for the first batch.
    store
        .commit_behind(Batch {
            records: vec![record(2, "b", 1)],
            merges: vec![merge("a", "b")],
            ..Batch::default()
        })
        .unwrap();
    store.wait_behind().unwrap();
    store.wait_behind().unwrap();
    let handles: Vec<u64> = loaded(store).iter().map(|r| r.handle).collect();
    assert_eq!(handles, [1, 2]);
    assert_eq!(merges(store), [merge("a", "b")]);
    assert_eq!(store.shingles(2).unwrap(), Some(vec![1, 5, 9, 102]));
    // A batch handed over, then an ordinary commit: both land, in order.
    store
        .commit_behind(batch_of(vec![record(3, "c", 3)]))
        .unwrap();
    store
        .commit(&Batch {
            survivor_updates: vec![(3, 1)],
            ..Batch::default()
        })
        .unwrap();
    store.wait_behind().unwrap();
    let got = loaded(store);
    assert_eq!(got.len(), 3);
    assert_eq!(got[2].survivor, 1);
}

/// `a` and `b` are two processes' handles on one store: a batch `a` decided after `b`
/// committed, without syncing, is refused whole; once `a` has loaded the store again it goes
/// in.
fn a_batch_committed_behind_another_processs_commit_is_refused(
    a: &mut dyn Store,
    b: &mut dyn Store,
) {
    a.load(&mut |_| {}).unwrap();
    b.load(&mut |_| {}).unwrap();
    b.lock().unwrap();
    commit_records(b, vec![record(1, "from-b", 1)]);
    b.unlock().unwrap();
    let stale = Batch {
        records: vec![record(2, "from-a", 2)],
        merges: vec![merge("from-b", "from-a")],
        ..Batch::default()
    };
    let refused = a
        .commit_behind(stale.clone())
        .and_then(|()| a.wait_behind());
    assert!(
        matches!(refused, Err(crate::Error::Conflict)),
        "{refused:?}"
    );
    let ids: Vec<String> = loaded(b).into_iter().map(|r| r.id).collect();
    assert_eq!(ids, ["from-b"]);
    assert!(merges(b).is_empty());
    // Once `a` has loaded what the store holds now, the batch goes in.
    let ids: Vec<String> = loaded(a).into_iter().map(|r| r.id).collect();
    assert_eq!(ids, ["from-b"]);
    a.commit_behind(stale)
        .and_then(|()| a.wait_behind())
        .unwrap();
    let ids: Vec<String> = loaded(b).into_iter().map(|r| r.id).collect();
    assert_eq!(ids, ["from-b", "from-a"]);
}

#[test]
fn sqlite_a_batch_committed_behind_another_processs_commit_is_refused() {
    for bulk in [false, true] {
        let (_tmp, path) = temp_db("s.db");
        let open = if bulk {
            crate::store::SqliteStore::open_bulk
        } else {
            crate::store::SqliteStore::open
        };
        let mut a = open(&path).unwrap();
        let mut b = crate::store::SqliteStore::open(&path).unwrap();
        a_batch_committed_behind_another_processs_commit_is_refused(&mut a, &mut b);
    }
}

#[cfg(feature = "redis")]
#[test]
fn redis_a_batch_committed_behind_another_processs_commit_is_refused() {
    use crate::store::redis::test_server::{shared_server, unique_prefix};
    let url = shared_server().url(&unique_prefix("behind"));
    let mut a = crate::store::RedisStore::open(&url).unwrap();
    let mut b = crate::store::RedisStore::open(&url).unwrap();
    a_batch_committed_behind_another_processs_commit_is_refused(&mut a, &mut b);
}

/// A Redis store on the shared server, under a fresh key prefix named after `test`.
#[cfg(feature = "redis")]
fn redis_on_server(test: &str) -> crate::store::RedisStore {
    use crate::store::redis::test_server::{shared_server, unique_prefix};
    crate::store::RedisStore::open(&shared_server().url(&unique_prefix(test))).unwrap()
}

/// A Redis store on the shared cluster, under a fresh key prefix named after `test`.
#[cfg(feature = "redis")]
fn redis_on_cluster(test: &str) -> crate::store::RedisStore {
    use crate::store::redis::test_server::{shared_cluster, unique_prefix};
    crate::store::RedisStore::open(&shared_cluster().url(&unique_prefix(test))).unwrap()
}

macro_rules! conformance {
    ($($name:ident),*) => {
        mod memory {
            $(#[test] fn $name() { super::$name(&mut crate::store::MemoryStore::new()); })*
        }
        mod sqlite {
            $(#[test] fn $name() {
                let (_tmp, path) = super::temp_db("s.db");
                super::$name(&mut crate::store::SqliteStore::open(&path).unwrap());
            })*
        }
        mod sqlite_bulk {
            $(#[test] fn $name() {
                let (_tmp, path) = super::temp_db("s.db");
                let mut store = crate::store::SqliteStore::open_bulk(&path).unwrap();
                assert!(store.is_bulk());
                super::$name(&mut store);
            })*
        }
        #[cfg(feature = "redis")]
        mod redis {
            $(#[test] fn $name() { super::$name(&mut super::redis_on_server(stringify!($name))); })*
        }
        #[cfg(feature = "redis")]
        mod redis_cluster {
            $(#[test] fn $name() { super::$name(&mut super::redis_on_cluster(stringify!($name))); })*
        }
    };
}

conformance!(
    commit_then_load_round_trips,
    survivor_updates_and_boilerplate_upserts,
    erase_removes_record_shingles_and_its_merge_rows,
    merges_since_filters_by_time_and_limits,
    labels_replace_by_pair_remove_and_go_with_erasure,
    batches_committed_behind_are_stored_once_waited_for
);

#[test]
fn sqlite_refuses_a_file_that_is_not_a_store() {
    let (_tmp, path) = temp_db("not.db");
    std::fs::write(
        &path,
        "this is not a database, just some text that is long enough",
    )
    .unwrap();
    let err = crate::store::SqliteStore::open(&path).unwrap_err();
    assert!(err.to_string().contains("not.db"), "{err}");
}

#[test]
fn sqlite_closes_with_everything_in_the_database_file() {
    // Verification reads go through read-only connections; closing must still checkpoint
    // the WAL into the .db file, so the file alone (copied, or with the -wal lost) holds
    // every committed record.
    let (tmp, path) = temp_db("s.db");
    {
        let mut s = crate::store::SqliteStore::open(&path).unwrap();
        for h in 1..=40u64 {
            commit_records(&mut s, vec![record(h, &format!("r{h}"), h)]);
            assert_eq!(s.shingles(h).unwrap(), Some(vec![1, 5, 9, h as u32 + 100]));
            assert_eq!(s.shingles_many(&[h, 1]).unwrap().len(), 2);
        }
    }
    assert!(
        std::fs::metadata(tmp.path().join("s.db-wal")).map_or(true, |m| m.len() == 0),
        "the WAL was left behind"
    );
    let copy = tmp.path().join("copy.db");
    std::fs::copy(&path, &copy).unwrap();
    let store = crate::store::SqliteStore::open(&copy).unwrap();
    assert_eq!(loaded(&store).len(), 40);
}

/// A pragma's value as a fresh connection to the store at `path` reads it.
fn pragma<T: rusqlite::types::FromSql>(path: &std::path::Path, name: &str) -> T {
    rusqlite::Connection::open(path)
        .unwrap()
        .query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
        .unwrap()
}

fn journal_mode(path: &std::path::Path) -> String {
    pragma(path, "journal_mode")
}

#[test]
fn sqlite_bulk_commits_reach_the_file_and_the_store_is_left_in_wal_mode() {
    let (tmp, path) = temp_db("s.db");
    let mut s = crate::store::SqliteStore::open_bulk(&path).unwrap();
    assert!(s.is_bulk());
    for h in 1..=30u64 {
        let mut r = record(h, &format!("r{h}"), h);
        r.shingles = (0..2000).map(|i| i * 7 + h as u32).collect();
        commit_records(&mut s, vec![r]);
    }
    // Committed means in the database file, with no WAL to replay: a copy of the file
    // alone, taken while the store is open, holds every record.
    assert!(!tmp.path().join("s.db-wal").exists());
    let copy = tmp.path().join("copy.db");
    std::fs::copy(&path, &copy).unwrap();
    let in_file: i64 = rusqlite::Connection::open(&copy)
        .unwrap()
        .query_row("SELECT count(*) FROM records", [], |r| r.get(0))
        .unwrap();
    assert_eq!(in_file, 30);
    assert_eq!(s.shingles(17).unwrap().map(|v| v.len()), Some(2000));
    drop(s);
    assert_eq!(journal_mode(&path), "wal");
    let again = crate::store::SqliteStore::open(&path).unwrap();
    assert_eq!(loaded(&again).len(), 30);
}

#[test]
fn sqlite_stores_a_batch_run_creates_have_large_pages_and_others_keep_theirs() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let bulk = tmp.path().join("bulk.db");
    let mut s = crate::store::SqliteStore::open_bulk(&bulk).unwrap();
    let mut r = record(1, "a", 1);
    r.shingles = (0..3000).map(|i| i * 11).collect();
    commit_records(&mut s, vec![r]);
    drop(s);
    assert_eq!(pragma::<i64>(&bulk, "page_size"), 16384);
    // A set of 3,000 ids (12 KB) sits in its leaf: no overflow page.
    let pages: i64 = pragma(&bulk, "page_count");
    let free: i64 = pragma(&bulk, "freelist_count");
    let trees: i64 = rusqlite::Connection::open(&bulk)
        .unwrap()
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE rootpage > 0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    // One page for the schema and one for each table and index, the shingles' leaf included.
    assert_eq!(pages - free, 1 + trees, "{pages} pages, {free} free");

    // A store made by the service (or any other opener) keeps SQLite's 4 KiB pages, and
    // an existing store keeps its page size whoever opens it.
    let plain = tmp.path().join("plain.db");
    drop(crate::store::SqliteStore::open(&plain).unwrap());
    assert_eq!(pragma::<i64>(&plain, "page_size"), 4096);
    drop(crate::store::SqliteStore::open_bulk(&plain).unwrap());
    assert_eq!(pragma::<i64>(&plain, "page_size"), 4096);
    drop(crate::store::SqliteStore::open(&bulk).unwrap());
    assert_eq!(pragma::<i64>(&bulk, "page_size"), 16384);
}

#[test]
fn sqlite_bulk_stays_in_wal_mode_while_another_connection_has_the_store() {
    let (_tmp, path) = temp_db("s.db");
    let mut first = crate::store::SqliteStore::open(&path).unwrap();
    commit_records(&mut first, vec![record(1, "a", 1)]);
    let started = std::time::Instant::now();
    let mut second = crate::store::SqliteStore::open_bulk(&path).unwrap();
    assert!(!second.is_bulk());
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(journal_mode(&path), "wal");
    commit_records(&mut second, vec![record(2, "b", 2)]);
    let mut seen = Vec::new();
    first
        .sync(&mut |b| seen.extend(b.records.iter().map(|r| r.record.id.clone())))
        .unwrap();
    assert_eq!(seen, ["b"]);
    assert_eq!(loaded(&first).len(), 2);
}

#[test]
fn sqlite_checkpoints_small_commits_early() {
    // Commits checkpoint the WAL every CHECKPOINT_PAGES pages, not SQLite's default 1,000:
    // 50 small commits (~8 pages each) must reach the database file while the store is open.
    let (tmp, path) = temp_db("s.db");
    let mut s = crate::store::SqliteStore::open(&path).unwrap();
    for h in 1..=50u64 {
        let mut r = record(h, &format!("r{h}"), h);
        r.shingles = (0..2000).map(|i| i * 7 + h as u32).collect(); // 8 KB: 2+ pages
        commit_records(&mut s, vec![r]);
    }
    let copy = tmp.path().join("copy.db");
    std::fs::copy(&path, &copy).unwrap();
    let in_file: i64 = rusqlite::Connection::open(&copy)
        .unwrap()
        .query_row("SELECT count(*) FROM records", [], |r| r.get(0))
        .unwrap_or(0);
    assert!(
        in_file >= 25,
        "only {in_file} of 50 committed records reached the database file"
    );
    drop(s);
}

#[test]
fn sqlite_change_log_names_new_records_by_handle_and_reads_older_full_entries() {
    let (_tmp, path) = temp_db("s.db");
    let mut writer = crate::store::SqliteStore::open(&path).unwrap();
    let mut reader = crate::store::SqliteStore::open(&path).unwrap();
    assert!(loaded(&reader).is_empty());
    writer
        .commit(&Batch {
            records: vec![record(1, "r1", 1), record(2, "r2", 1)],
            survivor_updates: vec![(2, 1)],
            ..Batch::default()
        })
        .unwrap();
    writer
        .commit(&Batch {
            erase: vec![2],
            ..Batch::default()
        })
        .unwrap();
    // An entry as the log held it before handles were logged: the record in full.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mut old = record(3, "r3", 3);
    old.shingles = Default::default();
    let full = batch_of(vec![old.clone()]);
    conn.execute(
        "INSERT INTO changes (batch) VALUES (?1)",
        [serde_json::to_string(&full).unwrap()],
    )
    .unwrap();
    // The new entries hold no copy of the records.
    let first: String = conn
        .query_row("SELECT batch FROM changes ORDER BY seq LIMIT 1", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(!first.contains("example.org"), "{first}");

    let mut got = Vec::new();
    reader.sync(&mut |b| got.push(b)).unwrap();
    assert_eq!(got.len(), 3);
    // Record 2 was erased by a later change: it has no row left to read, and the erasure
    // follows.
    // Other processes read sets and embeddings from the store when they need them.
    let mut r1 = record(1, "r1", 1);
    r1.shingles = Default::default();
    r1.embedding = None;
    assert_eq!(got[0].records, vec![r1]);
    assert_eq!(got[0].survivor_updates, vec![(2, 1)]);
    assert_eq!(got[1].erase, vec![2]);
    assert_eq!(got[2].records, vec![old]);
    // Nothing more until the next commit.
    reader.sync(&mut |_| panic!("synced twice")).unwrap();
}

#[test]
fn sqlite_drops_the_record_indexes_no_query_uses() {
    let (_tmp, path) = temp_db("s.db");
    let indexes = |path: &std::path::Path| -> Vec<String> {
        let conn = rusqlite::Connection::open(path).unwrap();
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'records' ORDER BY name")
            .unwrap();
        let names = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .unwrap()
            .collect::<rusqlite::Result<Vec<String>>>()
            .unwrap();
        names
    };
    // A store as earlier releases made it, with the two indexes.
    {
        let mut s = crate::store::SqliteStore::open(&path).unwrap();
        commit_records(&mut s, vec![record(1, "r1", 1)]);
    }
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(
            "CREATE INDEX records_survivor ON records(survivor);
             CREATE INDEX records_retention ON records(retention_class, first_seen);",
        )
        .unwrap();
    assert_eq!(indexes(&path).len(), 3);
    let store = crate::store::SqliteStore::open(&path).unwrap();
    // Only the unique index on ids is left; the records are all there.
    assert_eq!(indexes(&path), ["sqlite_autoindex_records_1"]);
    assert_eq!(loaded(&store).len(), 1);
}

#[test]
fn sqlite_another_process_opening_a_bulk_store_switches_it_back_to_wal_and_both_go_on() {
    let (_tmp, path) = temp_db("s.db");
    let mut bulk = crate::store::SqliteStore::open_bulk(&path).unwrap();
    assert!(bulk.is_bulk());
    commit_records(&mut bulk, vec![record(1, "a", 1)]);
    // A `neardup query` or `serve` opening the store while the batch run holds it, in the
    // middle of a commit: it waits for the commit instead of failing.
    bulk.lock().unwrap();
    let opener = {
        let path = path.clone();
        std::thread::spawn(move || crate::store::SqliteStore::open(&path))
    };
    std::thread::sleep(std::time::Duration::from_millis(300));
    bulk.unlock().unwrap();
    let mut other = opener.join().unwrap().unwrap();
    assert_eq!(journal_mode(&path), "wal");
    assert_eq!(loaded(&other).len(), 1);
    commit_records(&mut bulk, vec![record(2, "b", 2)]);
    commit_records(&mut other, vec![record(3, "c", 3)]);
    assert_eq!(loaded(&bulk).len(), 3);
    assert_eq!(loaded(&other).len(), 3);
}

#[test]
fn sqlite_reads_plain_and_packed_sets_refuses_a_damaged_one_and_upgrades_version_2() {
    // Sets of earlier releases are plain little-endian ids; new ones are packed when that
    // is smaller. Both read back; a damaged blob is an error naming the record.
    let (_tmp, path) = temp_db("s.db");
    let mut s = crate::store::SqliteStore::open(&path).unwrap();
    let mut big = record(1, "big", 1);
    let mut ids: Vec<u32> = (0..2000u32)
        .map(|i| i.wrapping_mul(2_147_483).wrapping_add(i) | 1)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    big.shingles = ids.into();
    commit_records(&mut s, vec![big.clone(), record(3, "small", 3)]);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let stored: Vec<u8> = conn
        .query_row("SELECT ids FROM shingles WHERE handle = 1", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(stored.len() < big.shingles.len() * 4, "packed");
    conn.execute(
        "INSERT INTO shingles (handle, ids) VALUES (5, ?1)",
        [[1u8, 0, 0, 0, 4, 3, 2, 1, 255, 255, 255, 255].as_slice()],
    )
    .unwrap();
    assert_eq!(s.shingles(1).unwrap(), Some(big.shingles.to_vec()));
    assert_eq!(s.shingles(3).unwrap(), Some(vec![1, 5, 9, 103]));
    assert_eq!(s.shingles(5).unwrap(), Some(vec![1, 0x0102_0304, u32::MAX]));
    conn.execute(
        "UPDATE shingles SET ids = substr(ids, 1, 20) WHERE handle = 1",
        [],
    )
    .unwrap();
    let err = s.shingles(1).unwrap_err().to_string();
    assert!(err.contains("handle 1") && err.contains("damaged"), "{err}");
    drop(s);
    // A store of schema version 2 (plain sets only) is upgraded when opened: an older
    // release would take packed sets for plain ids, so it is refused the store from then.
    let version = |conn: &rusqlite::Connection| -> String {
        conn.query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert_eq!(version(&conn), "3");
    conn.execute(
        "UPDATE meta SET value = '2' WHERE key = 'schema_version'",
        [],
    )
    .unwrap();
    let s = crate::store::SqliteStore::open(&path).unwrap();
    assert_eq!(version(&conn), "3");
    assert_eq!(s.shingles(5).unwrap(), Some(vec![1, 0x0102_0304, u32::MAX]));
    drop(s);
    conn.execute(
        "UPDATE meta SET value = '4' WHERE key = 'schema_version'",
        [],
    )
    .unwrap();
    let err = crate::store::SqliteStore::open(&path)
        .unwrap_err()
        .to_string();
    assert!(err.contains("schema version 4"), "{err}");
}

//! Scenarios for a store that several processes share, run on every backend that can be
//! shared: the SQLite file (the library's `src/pipeline/tests.rs`) and Redis (the `redis`
//! integration test). The includer brings the names below into scope: `crate::` paths
//! inside the library, `neardup::` paths outside it.

use super::{Decision, Deduper, Record, Store, Timestamp};

/// Two processes (`a` and `b`, each its own `open()`) take turns on one store: `a` stores
/// `text` as "from-a", `b` merges `edits[0]` ("from-b") into it, `a` merges `edits[1]`
/// ("from-a-2") into the same cluster, and `b` erases "from-a". Each sees the other's
/// records, cluster and erasure; the third deduper opened afterwards, returned, agrees.
pub fn two_processes_see_each_others_records<S: Store>(
    open: impl Fn() -> Deduper<S>,
    now: Timestamp,
    text: &str,
    edits: [&str; 2],
) -> Deduper<S> {
    let mut a = open();
    let mut b = open();
    a.process(&[Record::new("from-a", text)], now).unwrap();
    // B opened before A's insert; its next cycle applies A's change first.
    let out = b.process(&[Record::new("from-b", edits[0])], now).unwrap();
    assert!(
        matches!(&out[0].decision, Decision::Merged { survivor, .. } if survivor == "from-a"),
        "{:?}",
        out[0].decision
    );
    // And A sees B's record and cluster in turn (distinct handles, one cluster).
    let out = a
        .process(&[Record::new("from-a-2", edits[1])], now)
        .unwrap();
    assert!(matches!(&out[0].decision, Decision::Merged { survivor, .. } if survivor == "from-a"));
    assert_eq!(
        a.cluster_of("from-b").unwrap().members,
        ["from-a", "from-a-2", "from-b"]
    );
    // An erasure by one process reaches the other.
    b.erase(&["from-a"]).unwrap();
    a.process(&[], now).unwrap();
    assert!(!a.contains("from-a"));
    assert_eq!(a.cluster_of("from-b").unwrap().survivor, "from-a-2");
    // A fresh open agrees with both.
    let c = open();
    assert_eq!(
        c.cluster_of("from-b").unwrap().members,
        ["from-a-2", "from-b"]
    );
    c
}

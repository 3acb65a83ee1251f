//! The runner against the in-memory and SQLite stores.

use super::*;
use crate::pipeline::tests::{doc, edit, guarded_rule};
use crate::pipeline::Decision;
use crate::store::SqliteStore;

/// Items are `(id, url, text)`; an empty text is a reject.
struct Items;

type Item = (String, String, String);

impl Source for Items {
    type Item = Item;
    type Extra = usize;
    type Reject = String;

    fn parse(&self, (id, url, text): Item) -> std::result::Result<(Record, usize), String> {
        if text.is_empty() {
            return Err(id);
        }
        let len = text.len();
        Ok((Record::new(id, text).with_url(url), len))
    }

    fn host(&self, (_, url, _): &Item) -> Option<String> {
        url.split('/').nth(2).map(str::to_owned)
    }

    fn size(&self, (id, url, text): &Item) -> usize {
        id.len() + url.len() + text.len()
    }
}

/// What a sink got, in order.
#[derive(Default, Debug, PartialEq)]
struct Got {
    rejects: Vec<String>,
    outcomes: Vec<(String, String)>,
    /// Stop at the first reject.
    strict: bool,
}

impl Sink<Items> for Got {
    type Error = Error;

    fn rejected(&mut self, reject: String) -> Result<()> {
        self.rejects.push(reject);
        Ok(())
    }

    fn decided(&mut self, record: &Record, extra: usize, outcome: Outcome) -> Result<()> {
        assert_eq!(record.fields[0].text.len(), extra);
        let what = match outcome.decision {
            Decision::Kept { .. } => "kept".to_owned(),
            Decision::Merged { survivor, .. } => format!("merged into {survivor}"),
            other => format!("{other:?}"),
        };
        self.outcomes.push((record.id.clone(), what));
        Ok(())
    }

    fn stops_at(&mut self, reject: &String) -> Option<Error> {
        self.strict.then(|| Error::InvalidInput {
            field: "text",
            value: reject.clone(),
            reason: "empty".into(),
        })
    }
}

/// A [`Got`] beside which another process writes to the store once the run reports its
/// first progress.
struct Interrupted {
    got: Got,
    other: Option<Deduper<SqliteStore>>,
}

impl Sink<Items> for Interrupted {
    type Error = Error;

    fn rejected(&mut self, reject: String) -> Result<()> {
        self.got.rejected(reject)
    }

    fn decided(&mut self, record: &Record, extra: usize, outcome: Outcome) -> Result<()> {
        self.got.decided(record, extra, outcome)
    }

    fn progress(&mut self, _items: u64) {
        if let Some(mut other) = self.other.take() {
            other
                .process(&[Record::new("other", doc(5000, 200))], Timestamp::now())
                .unwrap();
        }
    }
}

/// `chunks` chunks of `size` items: pages of three hosts sharing a template, some of
/// them edits of others, and every 17th item without text.
fn input(chunks: usize, size: usize) -> Vec<Vec<Item>> {
    let template = doc(9, 80);
    (0..chunks * size)
        .map(|i| {
            let host = i % 3;
            let text = match i % 17 {
                16 => String::new(),
                n if n % 4 == 1 => edit(&format!("{template} {}", doc(i as u64 - 1, 200)), 4),
                _ => format!("{template} {}", doc(i as u64, 200)),
            };
            (
                format!("r{i}"),
                format!("https://h{host}.example/{i}"),
                text,
            )
        })
        .collect::<Vec<_>>()
        .chunks(size)
        .map(<[Item]>::to_vec)
        .collect()
}

fn never<S: Store>(_: usize) -> Result<Deduper<S>> {
    panic!("no conflict expected")
}

/// An in-memory deduper under the guarded rule.
fn memory() -> Deduper<crate::store::MemoryStore> {
    Deduper::builder()
        .rule(guarded_rule())
        .open(crate::store::MemoryStore::new())
        .unwrap()
}

/// Asserts that `got` decided every item of `all` with text, in input order; returns
/// their ids.
#[track_caller]
fn assert_decided_in_order<'a>(got: &Got, all: impl IntoIterator<Item = &'a Item>) -> Vec<&'a str> {
    let decided: Vec<&str> = got.outcomes.iter().map(|(id, _)| id.as_str()).collect();
    let want: Vec<&str> = all
        .into_iter()
        .filter(|i| !i.2.is_empty())
        .map(|i| i.0.as_str())
        .collect();
    assert_eq!(decided, want);
    want
}

#[test]
fn every_item_is_rejected_or_decided_once_in_input_order() {
    let mut d = memory();
    let chunks = input(5, 40);
    let mut got = Got::default();
    let totals = Runner::new(&mut d)
        .run(&Items, chunks.clone(), &mut got, never)
        .unwrap();
    assert_eq!(totals.items, 200);
    let all: Vec<&Item> = chunks.iter().flatten().collect();
    let rejected: Vec<String> = all
        .iter()
        .filter(|i| i.2.is_empty())
        .map(|i| i.0.clone())
        .collect();
    assert_eq!(got.rejects, rejected);
    assert_decided_in_order(&got, all.iter().copied());
    assert!(
        got.outcomes.iter().any(|(_, o)| o.starts_with("merged")),
        "{got:?}"
    );
    let text_bytes: usize = all.iter().map(|i| i.2.len()).sum();
    assert_eq!(totals.text_bytes, text_bytes as u64);
}

#[test]
fn a_strict_sink_stops_before_the_chunk_of_the_first_reject_with_the_chunks_before_written() {
    let mut d = memory();
    // The first reject is item 16, in the second chunk of ten.
    let mut got = Got {
        strict: true,
        ..Got::default()
    };
    let err = Runner::new(&mut d)
        .run(&Items, input(4, 10), &mut got, never)
        .unwrap_err();
    assert!(err.to_string().contains("r16"), "{err}");
    assert_eq!(got.outcomes.len(), 10);
    assert!(got.rejects.is_empty());
    assert_eq!(d.len(), 10);
}

#[test]
fn the_boilerplate_passs_analyses_decide_as_analyses_made_afresh() {
    let pass = BoilerplatePass {
        min_pages: 5,
        min_count: 3,
        ..BoilerplatePass::default()
    };
    let chunks = input(4, 30);
    // With the first pass's analyses finished by the run ...
    let mut d = memory();
    let mut with = Got::default();
    let mut runner = Runner::new(&mut d);
    let items = runner
        .learn_boilerplate(&Items, chunks.clone(), &pass, |_| {})
        .unwrap();
    assert_eq!(items, 120);
    runner
        .run(&Items, chunks.clone(), &mut with, never)
        .unwrap();
    assert_eq!(
        d.boilerplate_hosts().len(),
        3,
        "{:?}",
        d.boilerplate_hosts()
    );
    // ... and with them dropped (a runner of its own for the run): the same outcomes.
    let mut d = memory();
    Runner::new(&mut d)
        .learn_boilerplate(&Items, chunks.clone(), &pass, |_| {})
        .unwrap();
    let mut without = Got::default();
    Runner::new(&mut d)
        .run(&Items, chunks, &mut without, never)
        .unwrap();
    assert_eq!(with, without);
}

#[test]
fn after_another_processs_write_the_unconfirmed_chunks_are_decided_again_by_a_deduper_opened_anew()
{
    let tmp = tempfile::tempdir().expect("temp dir");
    let path = tmp.path().join("shared.db");
    let open = |bulk: bool| {
        let store = if bulk {
            SqliteStore::open_bulk(&path)
        } else {
            SqliteStore::open(&path)
        };
        Deduper::builder()
            .rule(guarded_rule())
            .open(store.unwrap())
            .unwrap()
    };
    let mut d = open(true);
    let chunks = input(6, 20);
    let all: Vec<Item> = chunks.iter().flatten().cloned().collect();
    // Another process stores a record once the first chunk is written (it commits at once,
    // under the lock): the second chunk's batch, committed behind, is refused.
    let mut got = Interrupted {
        got: Got::default(),
        other: Some(open(false)),
    };
    let mut reopened = Vec::new();
    Runner::new(&mut d)
        .run(&Items, chunks, &mut got, |records| {
            reopened.push(records);
            Ok(open(true))
        })
        .unwrap();
    let got = got.got;
    assert_eq!(reopened.len(), 1, "{reopened:?}");
    assert!(reopened[0] > 0);
    // Every record once, in order; the store holds them all and the other's.
    let want = assert_decided_in_order(&got, &all);
    drop(d);
    let mut stored = Vec::new();
    SqliteStore::open(&path)
        .unwrap()
        .load(&mut |r| stored.push(r.id))
        .unwrap();
    assert_eq!(stored.len(), want.len() + 1);
    assert!(stored.iter().any(|id| id == "other"));
}

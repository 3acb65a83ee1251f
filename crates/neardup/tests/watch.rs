//! Watchlists on real text (man pages of this machine in seven languages, shipped as
//! fixtures): graded alerts, classes, erasure and a second process's changes.

use std::path::Path;

use neardup::watch::{AlertBands, Watchlist};
use neardup::{Deduper, Record, Rule, SqliteStore, Store, Timestamp};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/text")
            .join(name),
    )
    .expect("fixture")
}

const PAGES: [&str; 7] = ["de", "en", "ja", "ko", "ru", "tr", "zh_CN"];

/// The known content: each man page, class `leak` for English, `farm` for the rest.
fn known() -> Vec<Record> {
    PAGES
        .iter()
        .map(|lang| {
            Record::new(format!("man-{lang}"), fixture(&format!("man_{lang}.txt")))
                .with_retention_class(if *lang == "en" { "leak" } else { "farm" })
        })
        .collect()
}

/// `text` with every `step`-th word replaced.
fn reworded(text: &str, step: usize) -> String {
    text.split_whitespace()
        .enumerate()
        .map(|(i, w)| if i % step == step - 1 { "changed" } else { w })
        .collect::<Vec<_>>()
        .join(" ")
}

fn open(store: impl Store + 'static, bands: &AlertBands) -> Deduper<Box<dyn Store>> {
    Deduper::builder()
        .rule(bands.rule(Rule::default()))
        .open(Box::new(store) as Box<dyn Store>)
        .unwrap()
}

fn add(deduper: &mut Deduper<Box<dyn Store>>, records: &[Record]) {
    deduper
        .process(
            records,
            Timestamp::parse_rfc3339("2026-01-01T00:00:00Z").unwrap(),
        )
        .unwrap();
}

#[test]
fn copies_and_rewordings_are_graded_by_distance_and_unrelated_text_raises_nothing() {
    let bands = AlertBands::default();
    let mut deduper = open(neardup::MemoryStore::new(), &bands);
    add(&mut deduper, &known());
    let watch = Watchlist::new(deduper, bands).unwrap();

    let en = fixture("man_en.txt");
    let copy = watch.check(&Record::new("q", en.clone())).unwrap();
    assert_eq!(copy[0].level, "red");
    assert_eq!(copy[0].watched, "man-en");
    assert_eq!(copy[0].class.as_deref(), Some("leak"));
    assert_eq!((copy[0].distance, copy[0].jaccard), (0, 1.0));
    assert_eq!(copy.len(), 1, "no other page is like it: {copy:?}");

    // Heavier rewording moves a copy down the levels, never up.
    let mut last = 0;
    for (i, step) in [300, 100, 40, 12, 6].into_iter().enumerate() {
        let alerts = watch.check(&Record::new("q", reworded(&en, step))).unwrap();
        let band = alerts.first().map_or(3, |a| {
            assert_eq!(a.watched, "man-en");
            ["red", "orange", "yellow"]
                .iter()
                .position(|l| *l == a.level)
                .unwrap()
        });
        assert!(band >= last, "every {step}th word changed: {alerts:?}");
        assert!(i > 0 || band < 3, "one word changed raises an alert");
        last = band;
    }
    // One word in 300 changed is at most orange here (5 bits: the seed's red is for
    // near-verbatim copies); every 6th word changed shares under half its shingles.
    assert_eq!(last, 3, "rewording every 6th word raises no alert");

    // Another language's page of the same kind is no match.
    let special = watch
        .check(&Record::new("q", fixture("special.txt")))
        .unwrap();
    assert!(special.is_empty(), "{special:?}");
}

#[test]
fn bands_decide_the_level_and_a_floor_the_alert() {
    let en = fixture("man_en.txt");
    let edited = reworded(&en, 12);
    let grade = |spec: &str| {
        let bands: AlertBands = spec.parse().unwrap();
        let mut deduper = open(neardup::MemoryStore::new(), &bands);
        add(&mut deduper, &known());
        let watch = Watchlist::new(deduper, bands).unwrap();
        let alerts = watch.check(&Record::new("q", edited.clone())).unwrap();
        alerts.first().map(|a| a.level.clone())
    };
    let wide = grade("high=32:0").expect("the edit is within 32 bits");
    assert_eq!(wide, "high");
    // A floor above the edit's Jaccard: no alert, however close the fingerprints.
    assert_eq!(grade("high=32:0.99"), None);
    // A band too narrow for it leaves it to the next one.
    assert_eq!(grade("exact=0:0,near=32:0").as_deref(), Some("near"));
}

#[test]
fn a_service_sees_records_another_process_adds_and_erases() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("watch.db");
    let bands = AlertBands::default();
    let mut writer = open(SqliteStore::open(&path).unwrap(), &bands);
    let mut watch = Watchlist::new(open(SqliteStore::open(&path).unwrap(), &bands), bands).unwrap();
    let de = Record::new("q", fixture("man_de.txt"));
    assert!(watch.check(&de).unwrap().is_empty());

    add(&mut writer, &known());
    watch.refresh().unwrap();
    let alerts = watch.check(&de).unwrap();
    assert_eq!(alerts[0].watched, "man-de");
    assert_eq!(alerts[0].class.as_deref(), Some("farm"));

    writer.erase(&["man-de"]).unwrap();
    watch.refresh().unwrap();
    assert!(
        watch.check(&de).unwrap().is_empty(),
        "erased content alerts no more"
    );

    // Expiry retires a whole class.
    let expired = writer
        .expire(
            "leak",
            Timestamp::parse_rfc3339("2027-01-01T00:00:00Z").unwrap(),
        )
        .unwrap();
    assert_eq!(expired, ["man-en"]);
    watch.refresh().unwrap();
    assert!(watch
        .check(&Record::new("q", fixture("man_en.txt")))
        .unwrap()
        .is_empty());
    assert!(!watch
        .check(&Record::new("q", fixture("man_ru.txt")))
        .unwrap()
        .is_empty());
}

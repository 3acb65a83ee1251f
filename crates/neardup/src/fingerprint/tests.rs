//! Fingerprint tests: the seeds' checks, invariants as properties, profile safety.

use super::*;
use crate::features::IdfTable;
use proptest::prelude::*;
use std::sync::Arc;

fn hasher() -> SimHasher {
    SimHasher::builder()
        .build()
        .expect("default config is valid")
}

fn fp(text: &str) -> Fingerprint {
    hasher().fingerprint(text).expect("text has tokens")
}

fn dist(a: &str, b: &str) -> u32 {
    fp(a).distance(&fp(b)).expect("same profile")
}

/// Deterministic pseudo-random documents over a vocabulary of `vocab` words.
fn random_doc(seed: u64, words: usize, vocab: u64) -> String {
    let mut s = seed;
    (0..words)
        .map(|_| {
            s = fmix64(s.wrapping_add(0x9e37_79b9_7f4a_7c15));
            format!("w{}", s % vocab)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One to three `(seed, words)` pairs, each a document of up to 300 words.
fn doc_seeds() -> impl Strategy<Value = Vec<(u64, usize)>> {
    proptest::collection::vec((any::<u64>(), 1usize..300), 1..4)
}

/// A [`random_doc`] over `vocab` words for each `(seed, words)` pair.
fn random_docs(seeds: &[(u64, usize)], vocab: u64) -> Vec<String> {
    seeds
        .iter()
        .map(|&(seed, words)| random_doc(seed, words, vocab))
        .collect()
}

// Seed 000's tests.

#[test]
fn identical_text_has_distance_zero() {
    let text = "the quick brown fox jumps over the lazy dog ".repeat(20);
    assert_eq!(dist(&text, &text), 0);
}

#[test]
fn small_edit_stays_close() {
    let original = "the quick brown fox jumps over the lazy dog ".repeat(20);
    let edited = original.replacen("lazy dog", "lazy cat", 1);
    assert!(dist(&original, &edited) <= 3);
}

#[test]
fn unrelated_text_is_far() {
    let a = "quarterly earnings rose on strong demand ".repeat(20);
    let b = "the football match ended in a draw after extra time ".repeat(20);
    assert!(dist(&a, &b) > 12, "distance {}", dist(&a, &b));
}

#[test]
fn boilerplate_exclusion_separates_pages() {
    let nav = "home news sport weather business culture travel contact us about us privacy policy terms of use sitemap";
    let footer = "copyright example media group all rights reserved follow us on social media subscribe to our newsletter for daily updates";
    let page = |body: &str| format!("{nav} {body} {footer}");
    let a = page(&"unique article one content ".repeat(30));
    let b = page(&"entirely different subject matter ".repeat(30));
    let h = hasher();
    // Learn the furniture as the shingles both pages share (the pipeline learns it per host).
    let sa = h.shingle_set(&a);
    let sb = h.shingle_set(&b);
    let shared = sa.iter().filter(|x| sb.binary_search(x).is_ok()).copied();
    let furniture = Boilerplate::from_hashes(shared);
    let mut scratch = Scratch::default();
    let fa = h
        .analyze(&[Field::new(&a)], Some(&furniture), &mut scratch)
        .unwrap();
    let fb = h
        .analyze(&[Field::new(&b)], Some(&furniture), &mut scratch)
        .unwrap();
    let cleaned = fa.fingerprint.distance(&fb.fingerprint).unwrap();
    assert!(
        cleaned > 12,
        "boilerplate exclusion should separate the pages: {cleaned}"
    );
    assert!(fa.boilerplate_removed > 0);
    // The verification set is the page's shingles without the furniture, stopword runs
    // included whether or not stopwords vote.
    let want: Vec<u64> = sa
        .iter()
        .copied()
        .filter(|x| sb.binary_search(x).is_err())
        .collect();
    assert_eq!(fa.shingles, want);
    let stop = SimHasher::builder().stopwords(true).build().unwrap();
    let fs = stop
        .analyze(&[Field::new(&a)], Some(&furniture), &mut scratch)
        .unwrap();
    assert_eq!(fs.shingles, want);
}

// Seed 004's asserts.

#[test]
fn case_and_punctuation_do_not_matter() {
    assert_eq!(fp("The quick brown fox"), fp("the  QUICK, brown fox!"));
}

#[test]
fn light_edit_close_unrelated_far_on_400_word_documents() {
    let a = random_doc(1, 400, 5000);
    let c = random_doc(2, 400, 5000);
    let b = a.replacen('w', "x", 1); // first token changed
    assert!(dist(&a, &b) <= 8, "light edit moved {} bits", dist(&a, &b));
    assert!(
        dist(&a, &c) >= 20,
        "unrelated only {} bits apart",
        dist(&a, &c)
    );
}

#[test]
fn every_output_bit_is_balanced_over_random_documents() {
    let n = 2000;
    let mut ones = [0u32; 64];
    for i in 0..n {
        let f = fp(&random_doc(1000 + i, 60, 5000)).as_u64();
        for (b, o) in ones.iter_mut().enumerate() {
            *o += ((f >> b) & 1) as u32;
        }
    }
    for (b, &o) in ones.iter().enumerate() {
        let p = f64::from(o) / n as f64;
        assert!((p - 0.5).abs() < 0.05, "bit {b} set with probability {p}");
    }
}

#[test]
fn empty_text_is_an_error() {
    for t in ["", "   ", "!!! ---"] {
        let err = hasher().fingerprint(t).expect_err("no tokens");
        assert!(matches!(err, Error::EmptyFeatureBag { .. }), "{err}");
    }
}

#[test]
fn short_text_still_fingerprints() {
    assert_eq!(fp("hello world"), fp("Hello, World!"));
    assert_ne!(fp("hello world"), fp("world hello"));
}

// Seed 001: feature bags.

#[test]
fn feature_bag_matches_repeated_tokens_under_width_one() {
    let h = SimHasher::builder().shingle_width(1).build().unwrap();
    let bag = h
        .fingerprint_bag([("dock", 3), ("scanner", 2), ("timeout", 1)])
        .unwrap();
    let text = h
        .fingerprint("dock dock dock scanner scanner timeout")
        .unwrap();
    assert_eq!(bag, text);
    // Order of features does not matter.
    let reordered = h
        .fingerprint_bag([("timeout", 1), ("dock", 3), ("scanner", 2)])
        .unwrap();
    assert_eq!(bag, reordered);
}

#[test]
fn feature_bag_rejects_empty_and_non_positive() {
    let h = hasher();
    let empty: [(&str, i64); 0] = [];
    assert!(matches!(
        h.fingerprint_bag(empty),
        Err(Error::EmptyFeatureBag { .. })
    ));
    let err = h
        .fingerprint_bag([("road", 2), ("weather", -1)])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "feature \"weather\" has weight -1: weights must be positive integers"
    );
}

// Profiles.

#[test]
fn different_profiles_cannot_be_compared() {
    let a = hasher().fingerprint("some text here to hash").unwrap();
    let h3 = SimHasher::builder().shingle_width(3).build().unwrap();
    let b = h3.fingerprint("some text here to hash").unwrap();
    let err = a.distance(&b).unwrap_err();
    assert!(matches!(err, Error::ProfileMismatch { .. }));
    assert!(
        err.to_string().contains("neardup/4/xxh3/w4/b64/tf"),
        "{err}"
    );
}

#[test]
fn builder_rejects_bad_configuration() {
    assert!(SimHasher::builder().shingle_width(0).build().is_err());
    assert!(SimHasher::builder().shingle_width(17).build().is_err());
    let err = SimHasher::builder()
        .hash(HashAlgo::Blake2b)
        .bits(FingerprintBits::Bits128)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("blake2b"), "{err}");
}

#[test]
fn hex_round_trip_for_both_widths() {
    for bits in [FingerprintBits::Bits64, FingerprintBits::Bits128] {
        let h = SimHasher::builder().bits(bits).build().unwrap();
        let f = h
            .fingerprint("round trip of a fingerprint through hex")
            .unwrap();
        let hex = f.to_hex();
        assert_eq!(hex.len(), bits.count() as usize / 4);
        assert_eq!(Fingerprint::from_hex(&hex, h.profile()).unwrap(), f);
    }
    let p = hasher().profile();
    assert!(Fingerprint::from_hex("xyz", p).is_err());
    assert!(Fingerprint::from_hex("zzzzzzzzzzzzzzzz", p).is_err());
}

#[test]
fn wide_fingerprint_low_half_equals_narrow_fingerprint() {
    let text = random_doc(7, 300, 2000);
    let narrow = fp(&text);
    let wide = SimHasher::builder()
        .bits(FingerprintBits::Bits128)
        .build()
        .unwrap();
    let w = wide.fingerprint(&text).unwrap();
    assert_eq!(w.as_u64(), narrow.as_u64());
    assert_ne!(w.value() >> 64, 0);
}

// Weights.

#[test]
fn title_weight_pulls_the_fingerprint_toward_the_title() {
    let h = hasher();
    let title = random_doc(11, 40, 3000);
    let body = random_doc(12, 200, 3000);
    let t = h.fingerprint(&title).unwrap();
    let plain = h
        .fingerprint_fields(&[Field::new(&title), Field::new(&body)])
        .unwrap();
    let heavy = h
        .fingerprint_fields(&[Field::weighted(&title, 20), Field::new(&body)])
        .unwrap();
    assert!(heavy.distance(&t).unwrap() < plain.distance(&t).unwrap());
    assert!(h.fingerprint_fields(&[Field::weighted(&title, 0)]).is_err());
}

#[test]
fn presence_ignores_repetition() {
    let h = SimHasher::builder()
        .weighting(Weighting::Presence)
        .build()
        .unwrap();
    // A period-4 text: repeating it adds occurrences but no new distinct shingle.
    let three = "a b c d ".repeat(3);
    let five = "a b c d ".repeat(5);
    assert_eq!(h.shingle_set(&three), h.shingle_set(&five));
    assert_eq!(
        h.fingerprint(&three).unwrap(),
        h.fingerprint(&five).unwrap()
    );
    // Presence and tf are different profiles.
    assert_ne!(h.profile(), hasher().profile());
}

#[test]
fn idf_weighting_discounts_common_shingles() {
    let plain = hasher();
    let common = "please read the terms and conditions before you continue";
    let mut builder = IdfTable::builder();
    for i in 0..50 {
        builder.add_document(plain.shingle_set(&format!("{common} {}", random_doc(i, 30, 9000))));
    }
    let table = Arc::new(builder.build());
    let h = SimHasher::builder()
        .weighting(Weighting::Idf(table.clone()))
        .build()
        .unwrap();
    assert!(matches!(h.profile().weighting(), WeightingTag::Idf(d) if d == table.digest()));
    let a = format!("{common} {}", random_doc(900, 30, 9000));
    let b = format!("{common} {}", random_doc(901, 30, 9000));
    let d_idf = h
        .fingerprint(&a)
        .unwrap()
        .distance(&h.fingerprint(&b).unwrap())
        .unwrap();
    let d_tf = dist(&a, &b);
    assert!(
        d_idf > d_tf,
        "idf {d_idf} should separate more than tf {d_tf}"
    );
}

// The exact tier.

#[test]
fn content_hash_ignores_formatting_but_not_words() {
    let h = hasher();
    let mut s = Scratch::default();
    let mut hash = |t: &str| {
        h.analyze(&[Field::new(t)], None, &mut s)
            .unwrap()
            .content_hash
    };
    assert_eq!(hash("Hello,   World!"), hash("hello world"));
    assert_eq!(hash("Ｈｅｌｌｏ world"), hash("hello world"));
    assert_ne!(hash("hello world"), hash("hello worlds"));
    let two = h
        .analyze(
            &[Field::new("ab"), Field::new("c")],
            None,
            &mut Scratch::default(),
        )
        .unwrap();
    let other = h
        .analyze(&[Field::new("ab c")], None, &mut Scratch::default())
        .unwrap();
    assert_ne!(two.content_hash, other.content_hash);
}

#[test]
fn analysis_reports_sorted_distinct_shingles_and_tokens() {
    let h = hasher();
    let a = h
        .analyze(
            &[Field::new("a b c d e a b c d e")],
            None,
            &mut Scratch::default(),
        )
        .unwrap();
    assert_eq!(a.token_count, 10);
    assert!(a.shingles.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(a.shingles.len(), 5); // abcd bcde cdea deab eabc, then repeats
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn prop_fingerprint_is_deterministic_and_distance_symmetric(a in "[a-z ]{1,200}", b in "[a-z ]{1,200}") {
        let h = hasher();
        if let (Ok(fa), Ok(fb)) = (h.fingerprint(&a), h.fingerprint(&b)) {
            prop_assert_eq!(fa, h.fingerprint(&a).unwrap());
            prop_assert_eq!(fa.distance(&fa).unwrap(), 0);
            prop_assert_eq!(fa.distance(&fb).unwrap(), fb.distance(&fa).unwrap());
        }
    }

    #[test]
    fn prop_triangle_inequality(a in any::<u64>(), b in any::<u64>(), c in any::<u64>()) {
        prop_assert!(hamming(a, c) <= hamming(a, b) + hamming(b, c));
    }

    #[test]
    fn prop_bag_ignores_order_and_scaling(
        features in proptest::collection::btree_map("[a-z]{1,8}", 1i64..50, 1..20),
        scale in 1i64..10,
    ) {
        let h = hasher();
        let forward = h.fingerprint_bag(features.iter().map(|(k, &v)| (k.as_str(), v))).unwrap();
        let backward = h.fingerprint_bag(features.iter().rev().map(|(k, &v)| (k.as_str(), v))).unwrap();
        let scaled = h.fingerprint_bag(features.iter().map(|(k, &v)| (k.as_str(), v * scale))).unwrap();
        prop_assert_eq!(forward, backward);
        prop_assert_eq!(forward, scaled);
    }

    #[test]
    fn prop_ascii_and_unicode_paths_agree(words in proptest::collection::vec("[A-Za-z0-9_]{1,12}", 1..40)) {
        // Appending a non-ASCII separator forces the Unicode path without adding a token.
        let ascii = words.join(" ");
        let unicode = format!("{ascii}\u{00a0}");
        prop_assert_eq!(fp(&ascii), fp(&unicode));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn prop_pipeline_analysis_is_analyze_with_ids(
        seeds in doc_seeds(),
        vocabulary in 5u64..400,
        drop_every in 0usize..6,
    ) {
        // Records of one to three fields, some of whose shingles are boilerplate, analysed
        // one after another with one scratch: the pipeline's path must answer what
        // `analyze` and `shingle_ids` answer, set, fingerprint and counts alike.
        let h = hasher();
        let docs = random_docs(&seeds, vocabulary);
        let fields: Vec<Field<'_>> = docs.iter().map(|d| Field::weighted(d, 1)).collect();
        let all = h.analyze(&fields, None, &mut Scratch::default());
        let boilerplate = match (&all, drop_every) {
            (Ok(a), n) if n > 0 => Some(Boilerplate::from_hashes(
                a.shingles.iter().copied().step_by(n),
            )),
            _ => None,
        };
        let mut scratch = Scratch::default();
        for _ in 0..2 {
            let want = h.analyze(&fields, boilerplate.as_ref(), &mut Scratch::default());
            let got = h.analyze_ids(&fields, boilerplate.as_ref(), &mut scratch);
            match (want, got) {
                (Ok(want), Ok(got)) => {
                    prop_assert_eq!(crate::text::shingle::shingle_ids(&want.shingles), got.shingles.to_vec());
                    prop_assert_eq!(want.fingerprint, got.fingerprint);
                    prop_assert_eq!(want.content_hash, got.content_hash);
                    prop_assert_eq!(want.token_count, got.token_count);
                    prop_assert_eq!(want.shingle_count, got.shingle_count);
                    prop_assert_eq!(want.boilerplate_removed, got.boilerplate_removed);
                }
                (Err(want), Err(got)) => prop_assert_eq!(want.to_string(), got.to_string()),
                (want, got) => prop_assert!(false, "{want:?} against {got:?}"),
            }
        }
    }

    #[test]
    fn prop_a_finished_pre_analysis_is_the_analysis(
        seeds in doc_seeds(),
        vocabulary in 3u64..400,
        drop_every in 0usize..6,
        languages in any::<bool>(),
    ) {
        // Repetitive texts (small vocabularies repeat shingles), boilerplate taking a share
        // of their shingles, all of them (every other pass) or none; one scratch throughout.
        let h = SimHasher::builder().detect_language(languages).build().unwrap();
        let docs = random_docs(&seeds, vocabulary);
        let fields: Vec<Field<'_>> = docs.iter().map(|d| Field::weighted(d, 1)).collect();
        let all = h.analyze(&fields, None, &mut Scratch::default()).unwrap();
        let boilerplate = [
            (drop_every > 0).then(|| {
                Boilerplate::from_hashes(all.shingles.iter().copied().step_by(drop_every))
            }),
            Some(Boilerplate::from_hashes(all.shingles.iter().copied())),
            None,
        ];
        let mut scratch = Scratch::default();
        let pre = h.pre_analyze(&fields, &mut scratch).unwrap().unwrap();
        prop_assert_eq!(pre.token_count(), all.token_count);
        // The same set, already sorted.
        prop_assert_eq!(&pre.shingles()[..], &all.shingles[..]);
        for b in &boilerplate {
            let want = h.analyze_ids(&fields, b.as_ref(), &mut Scratch::default());
            let got = h.finish_analysis(&pre, b.as_ref(), &mut scratch);
            match (want, got) {
                (Ok(want), Ok(got)) => prop_assert_eq!(want, got),
                (Err(want), Err(got)) => prop_assert_eq!(want.to_string(), got.to_string()),
                (want, got) => prop_assert!(false, "{want:?} against {got:?}"),
            }
        }
    }
}

#[test]
fn pre_analysis_serves_only_the_default_kind_of_vote() {
    let text = random_doc(1, 50, 40);
    let unit = [Field::weighted(&text, 1)];
    let mut scratch = Scratch::default();
    assert!(hasher().pre_analyze(&unit, &mut scratch).is_some());
    assert!(hasher()
        .pre_analyze(&[Field::weighted(&text, 2)], &mut scratch)
        .is_none());
    for h in [
        SimHasher::builder()
            .weighting(Weighting::Presence)
            .build()
            .unwrap(),
        SimHasher::builder()
            .bits(FingerprintBits::Bits128)
            .build()
            .unwrap(),
        SimHasher::builder().stopwords(true).build().unwrap(),
    ] {
        assert!(h.pre_analyze(&unit, &mut scratch).is_none());
    }
    assert!(matches!(
        hasher().pre_analyze(&[Field::weighted("", 1)], &mut scratch),
        Some(Err(Error::EmptyFeatureBag { .. }))
    ));
}

#[test]
fn one_scratch_serves_many_shingle_sets_and_analyses_without_growing() {
    // Boilerplate learning makes thousands of sets with one scratch per thread: nothing of
    // one text may stay behind for the next (a record's token buffer once grew without end
    // there), and an analysis after sets is that of a fresh scratch.
    let h = hasher();
    let mut scratch = Scratch::default();
    let doc = random_doc(7, 400, 300);
    for i in 0..200 {
        let set = h.shingle_set_with(&random_doc(i, 400, 300), &mut scratch);
        assert!(!set.is_empty());
        assert!(
            scratch.all_tokens.capacity() < 4 * 400,
            "{} tokens kept after {} sets",
            scratch.all_tokens.len(),
            i + 1
        );
    }
    let fields = [Field::weighted(&doc, 1)];
    let reused = h.analyze(&fields, None, &mut scratch).unwrap();
    let fresh = h.analyze(&fields, None, &mut Scratch::default()).unwrap();
    assert_eq!(reused.fingerprint, fresh.fingerprint);
    assert_eq!(reused.content_hash, fresh.content_hash);
    assert_eq!(reused.token_count, 400);
    assert_eq!(reused.shingles, fresh.shingles);
}

#[test]
fn a_kept_scratch_lets_go_of_what_a_huge_text_grew() {
    let h = hasher();
    let mut scratch = Scratch::default();
    let huge = random_doc(3, 300_000, 50_000);
    let doc = random_doc(4, 500, 300);
    let fields = [Field::weighted(&huge, 1)];
    h.analyze_ids(&fields, None, &mut scratch).unwrap();
    h.distinct_shingles_with(&[&huge], &mut scratch);
    assert!(scratch.all_shingles.capacity() * 8 > 2 << 20);
    scratch.release_large();
    let held = scratch.tokens.capacity()
        + scratch.all_tokens.capacity()
        + scratch.field.capacity()
        + scratch.all_shingles.capacity()
        + scratch.table.values.capacity()
        + scratch.distinct.capacity();
    assert!(held * 8 <= 6 << 20, "{held} words held");
    // And the scratch still analyses as a fresh one does.
    let fields = [Field::weighted(&doc, 1)];
    let reused = h.analyze_ids(&fields, None, &mut scratch).unwrap();
    let fresh = h
        .analyze_ids(&fields, None, &mut Scratch::default())
        .unwrap();
    assert_eq!(reused, fresh);
}

#[test]
fn a_finished_pre_analysis_reads_the_language_of_the_longest_field() {
    let h = SimHasher::builder().detect_language(true).build().unwrap();
    let english = "the cat sat on the mat and it was happy with the sun".repeat(2);
    let german =
        "der hund und die katze sind in dem haus und sie haben es gut mit der sonne ".repeat(6);
    let fields = [Field::weighted(&english, 1), Field::weighted(&german, 1)];
    let want = h
        .analyze_ids(&fields, None, &mut Scratch::default())
        .unwrap();
    assert_eq!(want.language.as_ref().map(|l| l.code), Some("deu"));
    let mut scratch = Scratch::default();
    let pre = h.pre_analyze(&fields, &mut scratch).unwrap().unwrap();
    assert_eq!(h.finish_analysis(&pre, None, &mut scratch).unwrap(), want);
}

#[test]
fn code_auto_reads_each_field_as_its_language_and_falls_back_to_words_without_one() {
    use crate::text::CodeLang;
    let auto = SimHasher::builder()
        .tokens(TokenRule::CodeAuto)
        .build()
        .expect("a valid profile");
    let profile = auto.profile();
    assert!(profile.to_string().ends_with("/tok=code-auto"), "{profile}");
    assert_eq!(profile.to_string().parse::<Profile>().ok(), Some(profile));
    let python = SimHasher::builder()
        .tokens(TokenRule::Code(CodeLang::Python))
        .build()
        .expect("a valid profile");
    let source =
        "def total(items):\n    s = 0\n    for x in items:\n        s += x * 2\n    return s\n";
    let run = |h: &SimHasher, f: Field<'_>| {
        let a = h.analyze(&[f], None, &mut Scratch::default()).unwrap();
        (a.fingerprint.value(), a.code_fallback)
    };
    // With its language, a field is read as the one-language profile reads it.
    let (as_python, fell_back) = run(
        &auto,
        Field::new(source).with_code_lang(Some(CodeLang::Python)),
    );
    assert!(!fell_back);
    assert_eq!(as_python, run(&python, Field::new(source)).0);
    // Another language's grammar gives other tokens (or none: words).
    assert_ne!(
        as_python,
        run(
            &auto,
            Field::new(source).with_code_lang(Some(CodeLang::Rust))
        )
        .0
    );
    // Without one, words, flagged as a fallback.
    let (words, fell_back) = run(&auto, Field::new(source));
    assert!(fell_back);
    assert_eq!(words, fp(source).value());
}

#[test]
fn code_mode_profiles_round_trip_and_prose_falls_back_to_words() {
    let code = SimHasher::builder()
        .tokens(TokenRule::Code(crate::text::CodeLang::Python))
        .build()
        .expect("a valid profile");
    let profile = code.profile();
    assert_eq!(
        profile.to_string(),
        format!("neardup/{FORMAT_VERSION}/xxh3/w4/b64/tf/tok=code-python")
    );
    assert_eq!(profile.to_string().parse::<Profile>().ok(), Some(profile));
    assert!(!profile.reads(&hasher().profile().to_string()));
    // Prose does not parse as Python: it is read as words, as the default profile reads it.
    let prose = "The quick brown fox jumps over the lazy dog, and then it runs away \
                 into the forest where nobody can ever find it again, not even the owl.";
    assert_eq!(
        code.fingerprint(prose).map(|f| f.value()).ok(),
        Some(fp(prose).value())
    );
    // Renamed, re-commented code is the same code; word mode sees other words.
    let a = "def total(items):\n    s = 0\n    for x in items:\n        s += x * 2\n    return s\n";
    let b = "# Sum.\ndef acc(values):\n    res = 0\n    for v in values:\n        res += v * 2\n    return res\n";
    let fell_back = |t: &str| {
        code.analyze(&[Field::new(t)], None, &mut Scratch::default())
            .map(|a| a.code_fallback)
            .ok()
    };
    assert_eq!(fell_back(prose), Some(true));
    let code_fp = |t: &str| code.fingerprint(t).map(|f| f.value()).ok();
    assert_eq!(code_fp(a), code_fp(b));
    assert_eq!(fell_back(a), Some(false));
    assert_ne!(fp(a).value(), fp(b).value());
}

#[test]
fn synonyms_make_one_word_of_a_group_in_the_fingerprint_and_the_set() {
    let groups = "# vehicles\ncar, automobile, auto\nbig large huge\n";
    let synonyms = Arc::new(crate::features::Synonyms::parse(groups, "s.txt").expect("groups"));
    let with = SimHasher::builder()
        .synonyms(synonyms.clone())
        .build()
        .expect("a valid profile");
    let a = "the big car was parked outside the old station all night long in the rain";
    let b = "the huge automobile was parked outside the old station all night long in the rain";
    let set = |h: &SimHasher, t: &str| h.shingle_set(t);
    assert_eq!(with.fingerprint(a).ok(), with.fingerprint(b).ok());
    assert_eq!(set(&with, a), set(&with, b));
    assert_ne!(fp(a).value(), fp(b).value());
    assert_ne!(set(&hasher(), a), set(&hasher(), b));
    // The profile records the groups: another set of groups is another profile.
    let profile = with.profile();
    assert!(profile
        .to_string()
        .ends_with(&format!("/syn:{:016x}", synonyms.digest())));
    assert_eq!(profile.to_string().parse::<Profile>().ok(), Some(profile));
    assert!(!profile.reads(&hasher().profile().to_string()));
    let reordered = crate::features::Synonyms::parse("large,big,huge\n\nautomobile car auto", "t")
        .expect("groups");
    assert_ne!(
        reordered.digest(),
        synonyms.digest(),
        "other first words are other groups"
    );
    let same = crate::features::Synonyms::parse("big large huge\ncar automobile auto", "u")
        .expect("groups");
    assert_eq!(same.digest(), synonyms.digest());
    // Bad files name their line; blake2b has no synonyms.
    let err = crate::features::Synonyms::parse("car auto\n\nauto vehicle", "v.txt").unwrap_err();
    assert!(err.to_string().contains("v.txt line 3"), "{err}");
    let err = crate::features::Synonyms::parse("New-York nyc", "w.txt").unwrap_err();
    assert!(err.to_string().contains("one word"), "{err}");
    assert!(SimHasher::builder()
        .hash(HashAlgo::Blake2b)
        .synonyms(synonyms)
        .build()
        .is_err());
}

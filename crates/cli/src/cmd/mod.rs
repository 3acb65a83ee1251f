//! One module per subcommand, each with its arguments and a `run`.

pub mod dedup;
pub mod erase;
pub mod eval;
pub mod explain;
pub mod fingerprint;
pub mod idf;
pub mod label;
pub mod plan;
pub mod query;
pub mod review;
pub mod serve;
pub mod tune;
pub mod watch;

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context};
use std::path::Path;

use neardup::features::Synonyms;
use neardup::text::TokenRule;
use neardup::{
    Deduper, FingerprintBits, HashAlgo, IdfTable, SimHasher, SimHasherBuilder, SqliteStore, Store,
    Weighting,
};

use crate::args::{
    Cli, CodeChoice, Command, FeaturesName, ProfileArgs, ProfileName, RuleArgs, TokensName,
    WeightingName,
};

/// Opens the store named on the command line and the pipeline over it.
pub fn open_deduper(
    store: &Path,
    profile: &ProfileArgs,
    rule: &RuleArgs,
    expected_records: u64,
) -> anyhow::Result<Deduper<Box<dyn Store>>> {
    open_deduper_with(store, profile, rule, expected_records, true, false)
}

/// [`open_deduper`], choosing whether each record's language is detected and whether an
/// SQLite store is opened for a batch load ([`SqliteStore::open_bulk`]).
pub fn open_deduper_with(
    store: &Path,
    profile: &ProfileArgs,
    rule: &RuleArgs,
    expected_records: u64,
    detect_language: bool,
    bulk: bool,
) -> anyhow::Result<Deduper<Box<dyn Store>>> {
    open_deduper_semantic(
        store,
        profile,
        rule,
        expected_records,
        (detect_language, bulk),
        None,
    )
}

/// [`open_deduper_with`] (`(detect_language, bulk)`), with the semantic stage on where
/// `semantic` gives its model and rule.
pub fn open_deduper_semantic(
    store: &Path,
    profile: &ProfileArgs,
    rule: &RuleArgs,
    expected_records: u64,
    (detect_language, bulk): (bool, bool),
    semantic: Option<(
        Arc<dyn neardup::semantic::Embed>,
        neardup::semantic::SemanticRule,
    )>,
) -> anyhow::Result<Deduper<Box<dyn Store>>> {
    let backend = open_backend(store, bulk)?;
    let mut builder = Deduper::builder()
        .hasher(
            hasher_builder(profile)?
                .detect_language(detect_language)
                .build()?,
        )
        .rule(rule.rule(profile))
        .expected_records(expected_records)
        .set_cache_bytes(rule.set_cache);
    if let Some((embedder, rule)) = semantic {
        builder = builder.semantic(embedder, rule);
    }
    Ok(builder.open(backend)?)
}

/// Whether `--store` names a Redis server or cluster rather than an SQLite file.
pub fn is_redis_url(store: &Path) -> bool {
    store.to_str().is_some_and(|s| {
        [
            "redis://",
            "rediss://",
            "redis+cluster://",
            "rediss+cluster://",
        ]
        .iter()
        .any(|scheme| s.starts_with(scheme))
    })
}

/// The backend `--store` names: `redis://host:port/db?prefix=P` (or `rediss://`,
/// `redis+cluster://host:port,host:port/?prefix=P`) is a [`neardup::store::RedisStore`]
/// shared by many processes; anything else is an SQLite file, opened with
/// [`SqliteStore::open_bulk`] when `bulk` (a batch run).
pub fn open_backend(store: &Path, bulk: bool) -> anyhow::Result<Box<dyn Store>> {
    if is_redis_url(store) {
        let url = store.to_str().expect("checked by is_redis_url");
        return Ok(Box::new(neardup::store::RedisStore::open(url)?));
    }
    Ok(Box::new(if bulk {
        SqliteStore::open_bulk(store)?
    } else {
        SqliteStore::open(store)?
    }))
}

/// Takes the writer lock of the SQLite store at `store` for `command` (e.g. `neardup
/// dedup`): one process writes to a store at a time, so that a run's outputs account for
/// its input. When another process holds it, waits for it with a message on stderr, or with
/// `no_wait` refuses ([`neardup::Error::StoreBusy`], exit code 5). A Redis store is shared by
/// many processes by design and takes no lock (`None`).
///
/// # Errors
/// The store is busy and `no_wait`; the lock file cannot be created.
pub fn lock_store(
    store: &Path,
    command: &str,
    no_wait: bool,
) -> anyhow::Result<Option<neardup::store::WriterLock>> {
    use neardup::store::WriterLock;
    if is_redis_url(store) {
        return Ok(None);
    }
    let lock = if no_wait {
        WriterLock::try_acquire(store, command)?
    } else {
        WriterLock::acquire(store, command, |holder| {
            eprintln!(
                "neardup: store {} is in use by {holder}: waiting for it to finish (--no-wait refuses instead)",
                store.display()
            )
        })?
    };
    Ok(Some(lock))
}

/// Runs the chosen subcommand.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Fingerprint(args) => fingerprint::run(&args),
        Command::Idf(args) => idf::run(&args),
        Command::Dedup(mut args) => {
            // The profile's flags are checked before the store is opened.
            token_rule(&args.profile)?;
            args.input.code_lang = args.profile.code();
            args.input.resolve()?;
            dedup::run(&args)
        }
        Command::Query(args) => query::run(&args),
        Command::Erase(args) => erase::run_erase(&args),
        Command::Expire(args) => erase::run_expire(&args),
        Command::Reevaluate(args) => review::run_reevaluate(&args),
        Command::Review(args) => review::run_review(&args),
        Command::Tune(args) => tune::run(&args),
        Command::Label(args) => label::run(&args),
        Command::Eval(args) => eval::run(&args),
        Command::Explain(args) => explain::run(&args),
        Command::Plan(args) => plan::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::Watch(args) => watch::run(args),
    }
}

/// Builds the hasher the profile options describe.
pub fn hasher(p: &ProfileArgs) -> anyhow::Result<SimHasher> {
    Ok(hasher_builder(p)?.build()?)
}

/// The hasher builder the profile options describe.
pub fn hasher_builder(p: &ProfileArgs) -> anyhow::Result<SimHasherBuilder> {
    let weighting = match (p.weighting, &p.idf) {
        (WeightingName::Tf, None) => Weighting::Tf,
        (WeightingName::Presence, None) => Weighting::Presence,
        (WeightingName::Idf, Some(path)) => Weighting::Idf(Arc::new(
            IdfTable::load(path).context("loading the IDF table")?,
        )),
        (WeightingName::Idf, None) => {
            bail!("--weighting idf needs --idf FILE (make one with `neardup idf`)")
        }
        (_, Some(_)) => bail!("--idf is only used with --weighting idf"),
    };
    let builder = SimHasher::builder()
        .hash(match p.profile {
            ProfileName::Xxh3 => HashAlgo::Xxh3,
            ProfileName::Blake2b => HashAlgo::Blake2b,
        })
        .shingle_width(p.shingle_width)
        .bits(if p.bits == 128 {
            FingerprintBits::Bits128
        } else {
            FingerprintBits::Bits64
        })
        .weighting(weighting)
        .stopwords(p.stopwords);
    let builder = match &p.synonyms {
        Some(path) => builder.synonyms(Arc::new(
            Synonyms::load(path).context("reading the synonyms")?,
        )),
        None => builder,
    };
    Ok(match token_rule(p)? {
        Some(rule) => builder.tokens(rule),
        None => builder,
    })
}

/// The token rule `--features`, `--code-lang` and `--tokens` ask for (`None`: the profile's
/// own), checked without reading any file, so that a command can refuse a bad combination
/// before it opens a store.
pub fn token_rule(p: &ProfileArgs) -> anyhow::Result<Option<TokenRule>> {
    match (p.features, p.code_lang, p.tokens, p.profile) {
        (FeaturesName::Code, None, ..) => {
            bail!("--features code needs --code-lang (rust, python, javascript, typescript, tsx, c, cpp, java, go, or auto)")
        }
        (FeaturesName::Code, Some(_), tokens, _) if tokens != TokensName::Words => {
            bail!("--tokens applies to --features words; code is read as its syntax tree")
        }
        (FeaturesName::Code, Some(_), _, ProfileName::Blake2b) => {
            bail!("--features code applies to the xxh3 profile; blake2b reads words as seed 000's Python does")
        }
        (FeaturesName::Code, Some(CodeChoice::Lang(lang)), ..) => Ok(Some(TokenRule::Code(lang))),
        (FeaturesName::Code, Some(CodeChoice::Auto), ..) => Ok(Some(TokenRule::CodeAuto)),
        (FeaturesName::Words, Some(_), ..) => bail!("--code-lang applies to --features code"),
        (FeaturesName::Words, None, TokensName::Words, _) => Ok(None),
        (FeaturesName::Words, None, _, ProfileName::Blake2b) => bail!(
            "--tokens applies to the xxh3 profile; blake2b tokenises as seed 000's Python does"
        ),
        (FeaturesName::Words, None, TokensName::Jieba, _) => Ok(Some(TokenRule::UnicodeJieba)),
        (FeaturesName::Words, None, TokensName::Chars, _) => Ok(Some(TokenRule::Characters)),
    }
}

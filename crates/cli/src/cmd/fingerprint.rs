//! `neardup fingerprint`: one fingerprint per document.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use clap::Args;
use neardup::{Field, HashAlgo, Scratch, SimHasher};
use rayon::prelude::*;

use crate::args::{InputArgs, ProfileArgs};
use crate::input::{self, Record, Reject};

/// Arguments of `neardup fingerprint`.
#[derive(Debug, Args)]
pub struct FingerprintArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub profile: ProfileArgs,
}

/// Records fingerprinted in parallel per batch; output stays in input order.
const BATCH: usize = 4096;

pub fn run(args: &FingerprintArgs) -> anyhow::Result<ExitCode> {
    let mut input_args = args.input.clone();
    input_args.code_lang = args.profile.code();
    input_args.resolve()?;
    let hasher = super::hasher(&args.profile)?;
    input::print_skipped_note(&input_args);
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut failures = 0u64;
    let mut batch: Vec<Result<Record, Reject>> = Vec::with_capacity(BATCH);
    let mut flush =
        |batch: &mut Vec<Result<Record, Reject>>, out: &mut BufWriter<_>| -> anyhow::Result<()> {
            let results: Vec<Result<(String, String), String>> = batch
                .par_drain(..)
                .map_init(Scratch::default, |scratch, item| match item {
                    Ok(record) => fingerprint_record(&hasher, &record, &input_args, scratch)
                        .map(|fp| (record.id, fp)),
                    Err(reject) => Err(reject.to_string()),
                })
                .collect();
            for r in results {
                match r {
                    Ok((id, fp)) => writeln!(out, "{id}\t{fp}")?,
                    Err(msg) => {
                        failures += 1;
                        out.flush()?;
                        eprintln!("neardup: {msg}");
                    }
                }
            }
            Ok(())
        };
    input::for_each(&input_args, |item| {
        batch.push(item);
        if batch.len() == BATCH {
            flush(&mut batch, &mut out)?;
        }
        Ok(())
    })?;
    flush(&mut batch, &mut out)?;
    out.flush()?;
    Ok(if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::exit::REJECTED)
    })
}

/// Fingerprints one record. The `blake2b` profile joins the fields with newlines, exactly as
/// seed 000's `content_text` does; the default profile keeps fields apart and weighted.
pub fn fingerprint_record(
    hasher: &SimHasher,
    record: &Record,
    input: &InputArgs,
    scratch: &mut Scratch,
) -> Result<String, String> {
    let result = if hasher.profile().hash() == HashAlgo::Blake2b {
        let joined = record
            .fields
            .iter()
            .map(|(_, t)| t.as_str())
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        hasher.fingerprint_with(&joined, scratch)
    } else {
        let fields: Vec<Field<'_>> = record
            .fields
            .iter()
            .map(|(name, text)| Field::weighted(text, input.weight_of(name)))
            .collect();
        hasher.fingerprint_fields(&fields)
    };
    result.map(|fp| fp.to_hex()).map_err(|e| match e {
        neardup::Error::EmptyFeatureBag { .. } => {
            format!(
                "{}: no words to fingerprint (record {:?})",
                record.origin, record.id
            )
        }
        other => format!("{}: {other}", record.origin),
    })
}

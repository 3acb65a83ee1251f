//! `neardup plan`: which index layouts answer a radius exactly for a collection size, and
//! what each costs (as in Manku, Jain, Das Sarma 2007, Example 3.1).

use std::io::Write;
use std::process::ExitCode;

use clap::Args;

use crate::args::parse_size;
use neardup::index::{choose_layout, format_plans, plan_layouts, PlanRequest};

/// Arguments of `neardup plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Number of fingerprints to index (`1e9`, `250000000`, `8G` and `2^34` are accepted).
    #[arg(short = 'n', long = "fingerprints", value_name = "N", value_parser = parse_count)]
    pub fingerprints: u64,
    /// The Hamming radius in bits that must be answered exactly.
    #[arg(short = 'k', long = "max-distance", value_name = "BITS")]
    pub max_distance: u32,
    /// Memory budget for the index (`24GiB`, `512MB`, `1e9`); layouts above it are left out.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memory: Option<u64>,
}

fn parse_count(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if let Some((base, exp)) = t.split_once('^') {
        let (b, e): (u64, u32) = (
            base.parse().map_err(|_| format!("bad base in {s:?}"))?,
            exp.parse().map_err(|_| format!("bad exponent in {s:?}"))?,
        );
        return b.checked_pow(e).ok_or_else(|| format!("{s} is too large"));
    }
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 1e3),
        Some((i, 'M')) => (&t[..i], 1e6),
        Some((i, 'G' | 'B')) => (&t[..i], 1e9),
        _ => (t, 1.0),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a count (e.g. 1e9, 250000000, 8G, 2^34)"))?;
    if !(v >= 1.0 && v * mult <= 1.8e19) {
        return Err(format!("{s:?} is out of range"));
    }
    Ok((v * mult).round() as u64)
}

/// Prints every layout that answers the radius exactly and the one neardup would pick; exit
/// 2 when none fits the budget.
pub fn run(args: &PlanArgs) -> anyhow::Result<ExitCode> {
    let mut request = PlanRequest::new(args.fingerprints, args.max_distance);
    if let Some(bytes) = args.memory {
        request = request.memory_budget(bytes);
    }
    let mut out = std::io::stdout().lock();
    write!(out, "{}", format_plans(&plan_layouts(&request)))?;
    let chosen = choose_layout(&request)?;
    writeln!(out, "chosen: {chosen}")?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_sizes_parse() {
        assert_eq!(parse_count("1e9"), Ok(1_000_000_000));
        assert_eq!(parse_count("2^34"), Ok(17_179_869_184));
        assert_eq!(parse_count("8G"), Ok(8_000_000_000));
        assert!(parse_count("lots").is_err());
        assert_eq!(parse_size("24GiB"), Ok(24 * 1024 * 1024 * 1024));
        assert_eq!(parse_size("512 MB"), Ok(512_000_000));
        assert!(parse_size("3 parsecs").is_err());
    }
}

//! Sizes in bytes as written on the command line (`24GiB`, `512 MB`).

/// A size in bytes: a number with an optional unit (`24GiB`, `512 MB`, `1e9`).
///
/// # Errors
/// Not a positive number with a known unit.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 24GiB, 512MB)"))?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "kib" => 1024.0,
        "m" | "mb" => 1e6,
        "mib" => 1024.0 * 1024.0,
        "g" | "gb" => 1e9,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tb" => 1e12,
        "tib" => 1024f64.powi(4),
        other => return Err(format!("unknown unit {other:?} in {s:?}")),
    };
    if v.is_nan() || v <= 0.0 {
        return Err(format!("{s:?} must be positive"));
    }
    Ok((v * mult).round() as u64)
}

/// A cache size: 0 or a [`parse_size`] size.
pub(super) fn parse_cache_size(s: &str) -> Result<u64, String> {
    if s.trim() == "0" {
        Ok(0)
    } else {
        parse_size(s)
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::args::{Cli, Command};

    #[test]
    fn cache_sizes_parse_and_zero_turns_the_cache_off() {
        assert_eq!(parse_cache_size("0"), Ok(0));
        assert_eq!(parse_cache_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_cache_size("1 GB"), Ok(1_000_000_000));
        assert!(parse_cache_size("-1").is_err());
        assert!(parse_cache_size("lots").is_err());
        let cli = Cli::try_parse_from(["neardup", "query", "--text", "x", "--set-cache", "0"])
            .expect("parses");
        let Command::Query(q) = cli.command else {
            panic!("a query");
        };
        assert_eq!(q.scoring.rule.set_cache, 0);
    }
}

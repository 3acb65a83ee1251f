//! The pairs file of `tune`, `label` and `eval`: JSON Lines or tab-separated pairs of
//! texts or ids, each with its label and weight.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use anyhow::{anyhow, bail, Context};
use serde_json::{Map, Value};

/// One side of a pair as written: its text, its id, or both.
#[derive(Debug, Clone, Default)]
pub struct Side {
    /// The text, when given.
    pub text: Option<String>,
    /// The id, when given.
    pub id: Option<String>,
}

/// One line of a pairs file.
#[derive(Debug, Clone)]
pub struct PairLine {
    /// 1-based line number.
    pub line: u64,
    /// Side A.
    pub a: Side,
    /// Side B.
    pub b: Side,
    /// The label; `None` when not labelled yet.
    pub duplicate: Option<bool>,
    /// How many pairs it stands for.
    pub weight: f64,
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 40 {
        format!("{}...", s.chars().take(40).collect::<String>())
    } else {
        s
    }
}

/// Reads a pairs file (JSONL or TSV, by extension or by its first line).
///
/// # Errors
/// An unreadable or empty file; a line with a missing side, a non-boolean label or a bad
/// weight, naming the file and line.
pub fn read_pairs(path: &Path) -> anyhow::Result<Vec<PairLine>> {
    let name = path.display().to_string();
    let file = File::open(path).with_context(|| format!("opening pairs file {name}"))?;
    let mut lines = Vec::new();
    for (i, line) in BufReader::new(file).split(b'\n').enumerate() {
        let bytes = line.with_context(|| format!("reading {name}"))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            anyhow!(
                "{name}:{}: invalid UTF-8 at byte {}",
                i + 1,
                e.utf8_error().valid_up_to()
            )
        })?;
        lines.push((i as u64 + 1, text.trim_end_matches(['\r', '\n']).to_owned()));
    }
    lines.retain(|(_, l)| !l.trim().is_empty());
    let Some((_, first)) = lines.first() else {
        bail!(
            "{name}: empty file: no pairs (expected JSON Lines such as {{\"a\": \"...\", \"b\": \"...\", \"duplicate\": true}}, or a\\tb\\tduplicate)"
        );
    };
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let jsonl = match ext.as_str() {
        "tsv" | "tab" => false,
        "jsonl" | "json" | "ndjson" => true,
        _ => first.trim_start().starts_with('{'),
    };
    if jsonl {
        lines
            .iter()
            .map(|(n, l)| parse_json_pair(l).map_err(|e| anyhow!("{name}:{n}: {e}")))
            .zip(lines.iter())
            .map(|(r, (n, _))| {
                r.map(|(a, b, duplicate, weight)| PairLine {
                    line: *n,
                    a,
                    b,
                    duplicate,
                    weight,
                })
            })
            .collect()
    } else {
        read_tsv(&name, &lines)
    }
}

type Parsed = (Side, Side, Option<bool>, f64);

fn parse_json_pair(line: &str) -> Result<Parsed, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("malformed JSON: {e}"))?;
    let Value::Object(obj) = value else {
        return Err(format!("expected a JSON object, not {}", json_kind(&value)));
    };
    let a = json_side(&obj, "a")?;
    let b = json_side(&obj, "b")?;
    let duplicate = match obj.get("duplicate") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(d)) => Some(*d),
        Some(other) => {
            return Err(format!(
                "\"duplicate\" must be true or false, not {} ({})",
                json_kind(other),
                short(other)
            ))
        }
    };
    let weight = match obj.get("weight") {
        None | Some(Value::Null) => 1.0,
        Some(Value::Number(n)) => check_weight(n.as_f64().unwrap_or(f64::NAN), &n.to_string())?,
        Some(other) => {
            return Err(format!(
                "\"weight\" must be a positive number, not {}",
                json_kind(other)
            ))
        }
    };
    Ok((a, b, duplicate, weight))
}

fn check_weight(w: f64, text: &str) -> Result<f64, String> {
    if w > 0.0 && w.is_finite() {
        Ok(w)
    } else {
        Err(format!("\"weight\" must be a positive number, not {text}"))
    }
}

fn json_side(obj: &Map<String, Value>, side: &str) -> Result<Side, String> {
    let id_key = format!("{side}_id");
    let text = match obj.get(side) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(format!(
                "\"{side}\" must be a string (the text of side {side}), not {}",
                json_kind(other)
            ))
        }
    };
    let id = match obj.get(&id_key) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(other) => {
            return Err(format!(
                "\"{id_key}\" must be a non-empty string or a number, not {}",
                json_kind(other)
            ))
        }
    };
    if text.is_none() && id.is_none() {
        return Err(format!(
            "missing side {side}: give \"{side}\" (its text) or \"{id_key}\" (its id)"
        ));
    }
    Ok(Side { text, id })
}

fn parse_bool(s: &str) -> Result<Option<bool>, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "" | "null" => Ok(None),
        "true" | "1" => Ok(Some(true)),
        "false" | "0" => Ok(Some(false)),
        _ => Err(format!(
            "column \"duplicate\" must be true or false (or 1 or 0), not {:?}",
            s.trim()
        )),
    }
}

const TSV_COLUMNS: [&str; 6] = ["a", "b", "a_id", "b_id", "duplicate", "weight"];

fn read_tsv(name: &str, lines: &[(u64, String)]) -> anyhow::Result<Vec<PairLine>> {
    let first: Vec<&str> = lines[0].1.split('\t').map(str::trim).collect();
    let header = first.contains(&"duplicate") && first.iter().all(|c| TSV_COLUMNS.contains(c));
    let columns: Vec<String> = if header {
        first.iter().map(|s| (*s).to_owned()).collect()
    } else {
        ["a", "b", "duplicate", "weight"]
            .map(str::to_owned)
            .to_vec()
    };
    let body = if header { &lines[1..] } else { lines };
    if body.is_empty() {
        bail!("{name}: no pairs after the header line");
    }
    let col = |c: &str| columns.iter().position(|x| x == c);
    let mut out = Vec::new();
    for (n, line) in body {
        let cells: Vec<&str> = line.split('\t').collect();
        let err = |m: String| anyhow!("{name}:{n}: {m}");
        let get = |c: &str| col(c).and_then(|i| cells.get(i)).map(|s| s.to_string());
        let side = |s: &str| -> anyhow::Result<Side> {
            let text = get(s).filter(|t| !t.trim().is_empty());
            let id = get(&format!("{s}_id")).filter(|t| !t.trim().is_empty());
            if text.is_none() && id.is_none() {
                return Err(err(format!(
                    "missing side {s}: expected tab-separated columns {}, found {} column{}",
                    columns.join(", "),
                    cells.len(),
                    if cells.len() == 1 { "" } else { "s" }
                )));
            }
            Ok(Side { text, id })
        };
        let a = side("a")?;
        let b = side("b")?;
        let duplicate = parse_bool(&get("duplicate").unwrap_or_default()).map_err(err)?;
        let weight = match get("weight").filter(|w| !w.trim().is_empty()) {
            None => 1.0,
            Some(w) => {
                let v: f64 = w.trim().parse().unwrap_or(f64::NAN);
                check_weight(v, w.trim()).map_err(err)?
            }
        };
        out.push(PairLine {
            line: *n,
            a,
            b,
            duplicate,
            weight,
        });
    }
    Ok(out)
}

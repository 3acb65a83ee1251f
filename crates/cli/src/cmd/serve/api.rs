//! The JSON of the HTTP API: request records, their validation, and per-record answers.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use neardup::pipeline::{ClusterView, MergeRule, RecordView};
use neardup::store::MergeLogEntry;
use neardup::{Decision, Outcome, Record, TextField, Timestamp};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Text fields in the order `neardup dedup` reads them (its default `--text-field`s).
pub const TEXT_FIELDS: [&str; 4] = ["title", "description", "body_text", "text"];

/// One record as clients send it: the fields of `neardup dedup`'s JSONL input.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordIn {
    /// Required to insert; optional to query.
    pub id: Option<String>,
    pub title: Option<String>,
    pub description: Option<String>,
    pub body_text: Option<String>,
    pub text: Option<String>,
    /// Raw HTML: its visible text is extracted, markup is never fingerprinted.
    pub html: Option<String>,
    pub url: Option<String>,
    pub host: Option<String>,
    /// RFC 3339; defaults to the time the server processes the record.
    pub first_seen: Option<String>,
    pub retention_class: Option<String>,
}

/// An API error: a status and `{"error", "field"}`.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub field: Option<String>,
    pub id: Option<String>,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            field: None,
            id: None,
        }
    }

    pub fn field(mut self, field: impl Into<String>) -> ApiError {
        self.field = Some(field.into());
        self
    }

    pub fn bad_request(field: impl Into<String>, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message).field(field)
    }

    pub fn not_found(what: &str, id: &str) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, format!("no {what} {id:?} is stored"))
    }

    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }

    pub fn body(&self) -> Value {
        let mut v = json!({"error": self.message, "field": self.field});
        if let Some(id) = &self.id {
            v["id"] = json!(id);
        }
        v
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body())).into_response()
    }
}

/// A request body: one record or an array of them.
pub enum Body {
    One(Box<RecordIn>),
    Many(Vec<RecordIn>),
}

/// Parses a request body, naming the offending field (`[3].first_seen`) on error.
pub fn parse_body(bytes: &[u8]) -> Result<Body, ApiError> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace()).copied();
    match first {
        Some(b'{') => parse(bytes).map(|r| Body::One(Box::new(r))),
        Some(b'[') => parse(bytes).map(Body::Many),
        None => Err(ApiError::bad_request(
            "body",
            "empty body: expected a JSON record object or an array of them",
        )),
        Some(_) => Err(ApiError::bad_request(
            "body",
            "expected a JSON record object or an array of them",
        )),
    }
}

fn parse<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = inner.to_string();
        // An unknown field is named by the message, not by the path (which stops at its
        // object); a syntax error has no field.
        let field = if let Some(name) = message
            .strip_prefix("unknown field `")
            .and_then(|rest| rest.split('`').next())
        {
            join_path(&path, name)
        } else if inner.is_syntax() || inner.is_eof() || path == "." {
            "body".to_owned()
        } else {
            path
        };
        let kind = if inner.is_syntax() || inner.is_eof() {
            "malformed JSON"
        } else {
            "invalid record"
        };
        ApiError::bad_request(field, format!("{kind}: {message}"))
    })?;
    de.end().map_err(|e| {
        ApiError::bad_request("body", format!("malformed JSON: {e} (trailing characters)"))
    })?;
    Ok(value)
}

fn join_path(path: &str, name: &str) -> String {
    if path.is_empty() || path == "." {
        name.to_owned()
    } else if path.ends_with(name) {
        path.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// How records become library records.
#[derive(Debug, Clone, Default)]
pub struct Conversion {
    /// `--field-weight` values.
    pub field_weights: Vec<(String, u32)>,
}

impl Conversion {
    fn weight_of(&self, field: &str) -> u32 {
        self.field_weights
            .iter()
            .find(|(n, _)| n == field)
            .map_or(1, |(_, w)| *w)
    }

    /// Validates and converts one record; `prefix` names it in errors (`[3].` in a batch).
    pub fn convert(&self, r: RecordIn, prefix: &str, require_id: bool) -> Result<Record, ApiError> {
        let named = |f: &str| format!("{prefix}{f}");
        let id = match r.id {
            Some(id) if !id.trim().is_empty() => id,
            Some(_) => {
                return Err(ApiError::bad_request(
                    named("id"),
                    "field \"id\" must be a non-empty string",
                ))
            }
            None if require_id => {
                return Err(ApiError::bad_request(
                    named("id"),
                    "missing field \"id\": every inserted record needs a unique id",
                ))
            }
            None => String::new(),
        };
        let with_id = |e: ApiError| ApiError {
            id: (!id.is_empty()).then(|| id.clone()),
            ..e
        };
        let mut fields = Vec::new();
        // Blank is judged on the fields as sent, as the OpenAPI document states: HTML with
        // no visible text is no request error but a record with no words (422, or a
        // `rejected` entry in a batch), as punctuation alone is.
        let mut blank = true;
        let texts = [r.title, r.description, r.body_text, r.text];
        for (name, text) in TEXT_FIELDS.iter().zip(texts) {
            if let Some(text) = text {
                blank &= text.trim().is_empty();
                fields.push(TextField {
                    weight: self.weight_of(name),
                    name: (*name).to_owned(),
                    text,
                });
            }
        }
        if let Some(html) = r.html {
            blank &= html.trim().is_empty();
            fields.push(TextField {
                weight: self.weight_of("html"),
                name: "html".to_owned(),
                text: neardup::text::html_to_text(&html),
            });
        }
        if blank {
            let field = if fields.len() == 1 {
                fields[0].name.clone()
            } else {
                "text".to_owned()
            };
            let message = if fields.is_empty() {
                "missing text: send one of \"text\", \"title\", \"description\", \"body_text\" or \"html\""
            } else {
                "empty text: the record's text fields hold no text"
            };
            return Err(with_id(ApiError::bad_request(named(&field), message)));
        }
        let first_seen =
            match r.first_seen {
                None => None,
                Some(t) => Some(Timestamp::parse_rfc3339(&t).map_err(|e| {
                    with_id(ApiError::bad_request(named("first_seen"), e.to_string()))
                })?),
            };
        Ok(Record {
            id,
            url: r.url,
            host: r.host,
            first_seen,
            retention_class: r.retention_class,
            fields,
        })
    }
}

/// The answer for one record: what `neardup dedup` decided (or would decide) for it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Answer {
    pub id: String,
    /// `new`, `exact_duplicate`, `near_duplicate`, `too_short` or (batch entries only)
    /// `rejected`.
    pub decision: &'static str,
    /// The record it duplicates: its cluster's survivor (or, when the arriving record was
    /// first seen earlier and displaced the survivor, the displaced survivor).
    pub of: Option<String>,
    /// The stored record it was verified against (a member of that cluster).
    pub matched: Option<String>,
    /// Hamming distance to `matched`, in bits.
    pub distance: Option<u32>,
    /// Shingle Jaccard similarity with `matched`.
    pub jaccard: Option<f64>,
    /// Its fingerprint, hex.
    pub fingerprint: Option<String>,
    /// Its cluster's survivor after the decision.
    pub survivor: Option<String>,
    /// The id was already stored with the same text: nothing changed (a retried request).
    pub already_stored: bool,
    /// Why a record was rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Queries only: every stored near duplicate, best first (at most 10).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matches: Option<Vec<Match>>,
    /// With --watchlist: the watched records it matched, most severe level first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alerts: Option<Vec<neardup::watch::Alert>>,
}

/// One stored near duplicate in a query answer.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Match {
    pub id: String,
    pub distance: u32,
    pub jaccard: f64,
}

pub fn rule_decision(rule: MergeRule) -> &'static str {
    match rule {
        MergeRule::Exact => "exact_duplicate",
        // Short records verified on character n-grams are near duplicates too.
        MergeRule::SimhashJaccard | MergeRule::CharsJaccard | MergeRule::SimhashSemantic => {
            "near_duplicate"
        }
    }
}

impl Answer {
    pub fn blank(id: &str, decision: &'static str) -> Answer {
        Answer {
            id: id.to_owned(),
            decision,
            of: None,
            matched: None,
            distance: None,
            jaccard: None,
            fingerprint: None,
            survivor: None,
            already_stored: false,
            error: None,
            matches: None,
            alerts: None,
        }
    }

    /// The answer for a processed record. `earlier` finds the answer given when an
    /// already-stored id was first inserted (a retried request gets the same answer).
    pub fn from_outcome(o: &Outcome, earlier: impl FnOnce(&str) -> Option<Answer>) -> Answer {
        let mut a = Answer::blank(&o.id, "new");
        a.fingerprint = o.fingerprint.clone();
        match &o.decision {
            Decision::Kept {
                too_short,
                displaced,
                joined,
            } => {
                a.survivor = Some(o.id.clone());
                match joined {
                    Some((rule, scores, matched)) => {
                        a.decision = rule_decision(*rule);
                        a.of = displaced.clone().or_else(|| Some(matched.clone()));
                        a.matched = Some(matched.clone());
                        a.distance = Some(scores.distance);
                        a.jaccard = Some(scores.jaccard);
                    }
                    None if *too_short => a.decision = "too_short",
                    None => {}
                }
            }
            Decision::Merged {
                survivor,
                matched,
                rule,
                scores,
            } => {
                a.decision = rule_decision(*rule);
                a.of = Some(survivor.clone());
                a.survivor = Some(survivor.clone());
                a.matched = Some(matched.clone());
                a.distance = Some(scores.distance);
                a.jaccard = Some(scores.jaccard);
            }
            Decision::AlreadyStored { survivor } => {
                if let Some(mut prev) = earlier(&o.id) {
                    prev.already_stored = true;
                    prev.survivor = Some(survivor.clone());
                    if prev.decision != "new" && prev.decision != "too_short" && *survivor != o.id {
                        prev.of = Some(survivor.clone());
                    }
                    return prev;
                }
                // Inserted before this server's memory of answers (an older run): its
                // merge is not looked up in the log; it is reported as a duplicate of its
                // survivor, or as new when it is the survivor.
                a.already_stored = true;
                a.survivor = Some(survivor.clone());
                if *survivor != o.id {
                    a.decision = "exact_duplicate";
                    a.of = Some(survivor.clone());
                }
            }
            Decision::Rejected { reason } => {
                a.decision = "rejected";
                a.error = Some(reason.clone());
            }
        }
        a
    }
}

/// The status and field of a record the pipeline rejected, when it was sent alone.
pub fn rejection_error(answer: &Answer) -> ApiError {
    let reason = answer.error.clone().unwrap_or_default();
    let (status, field) = if reason.starts_with("duplicate id") {
        (StatusCode::CONFLICT, "id")
    } else {
        (StatusCode::UNPROCESSABLE_ENTITY, "text")
    };
    ApiError {
        status,
        message: reason,
        field: Some(field.to_owned()),
        id: Some(answer.id.clone()),
    }
}

pub fn record_json(r: &RecordView, cluster: Option<&ClusterView>) -> Value {
    json!({
        "id": r.id,
        "fingerprint": r.fingerprint,
        "survivor": r.survivor,
        "first_seen": r.first_seen.to_rfc3339(),
        "url": r.url,
        "retention_class": r.retention_class,
        "indexed": r.indexed,
        "cluster_size": cluster.map_or(1, |c| c.members.len()),
    })
}

pub fn cluster_json(c: &ClusterView) -> Value {
    json!({
        "survivor": c.survivor,
        "members": c.members,
        "source_urls": c.source_urls,
        "first_seen": c.first_seen.to_rfc3339(),
        "size": c.members.len(),
    })
}

pub fn merge_json(m: &MergeLogEntry) -> Value {
    serde_json::to_value(m).expect("a merge-log entry serialises")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_field() {
        let e = parse_body(br#"{"id": 5, "text": "x"}"#).err().unwrap();
        assert_eq!(e.field.as_deref(), Some("id"), "{}", e.message);
        let e = parse_body(br#"[{"id": "a", "text": "x"}, {"id": "b", "colour": 1}]"#)
            .err()
            .unwrap();
        assert_eq!(e.field.as_deref(), Some("[1].colour"), "{}", e.message);
        let e = parse_body(br#"{"id": "a", "text": "#).err().unwrap();
        assert_eq!(e.field.as_deref(), Some("body"), "{}", e.message);
        assert!(e.message.starts_with("malformed JSON"), "{}", e.message);
        let e = parse_body(br#"{"id": "a", "text": "x"} x"#).err().unwrap();
        assert_eq!(e.field.as_deref(), Some("body"), "{}", e.message);
        let e = parse_body(br#"{"id": "a", "first_seen": [1]}"#)
            .err()
            .unwrap();
        assert_eq!(e.field.as_deref(), Some("first_seen"), "{}", e.message);
    }

    #[test]
    fn empty_and_missing_text_are_named() {
        let c = Conversion::default();
        let r = RecordIn {
            id: Some("a".into()),
            text: Some("  ".into()),
            ..RecordIn::default()
        };
        let e = c.convert(r, "", true).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("text"));
        let r = RecordIn {
            id: Some("a".into()),
            ..RecordIn::default()
        };
        let e = c.convert(r, "[2].", true).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("[2].text"));
        let r = RecordIn {
            text: Some("words".into()),
            ..RecordIn::default()
        };
        assert_eq!(
            c.convert(r, "", true).unwrap_err().field.as_deref(),
            Some("id")
        );
    }
}

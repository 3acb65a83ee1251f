//! The OpenAPI 3.0 document of the service, served at `/v1/openapi.json`.
//!
//! Written by hand (no derive crate for a dozen operations) and built once per server, so
//! that it states what this server enforces: the bearer token only when it runs with
//! `--token-file`, its `--max-batch`. `tests/serve.rs` keeps it true: every documented
//! operation is answered with a documented status, the documented record and answer
//! properties are exactly those the server accepts and sends, and records the schema
//! refuses are refused; `scripts/schemathesis.sh` checks it against the live server.

use serde_json::{json, Map, Value};

/// What the document depends on: the server's settings.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// The server runs with `--token-file`: every endpoint but /healthz needs the token.
    pub token_required: bool,
    /// `--max-batch`: most records in one request.
    pub max_batch: usize,
    /// `--max-body-bytes`: largest request body.
    pub max_body_bytes: usize,
}

/// The characters [`char::is_whitespace`] accepts (Unicode `White_Space`), as ranges: what
/// `str::trim` removes, so what makes an id or a text field blank.
const WHITESPACE: [(char, char); 10] = [
    ('\u{9}', '\u{d}'),
    (' ', ' '),
    ('\u{85}', '\u{85}'),
    ('\u{a0}', '\u{a0}'),
    ('\u{1680}', '\u{1680}'),
    ('\u{2000}', '\u{200a}'),
    ('\u{2028}', '\u{2029}'),
    ('\u{202f}', '\u{202f}'),
    ('\u{205f}', '\u{205f}'),
    ('\u{3000}', '\u{3000}'),
];

/// A regular expression (ECMA 262 and Python alike) that a string matches when it holds a
/// character other than whitespace: when the server does not find it blank. `\s` is not
/// used because its meaning differs between regex engines.
pub fn not_blank_pattern() -> String {
    let mut pattern = String::from("[^");
    for (first, last) in WHITESPACE {
        pattern.push_str(&format!("\\u{:04x}", u32::from(first)));
        if last != first {
            pattern.push_str(&format!("-\\u{:04x}", u32::from(last)));
        }
    }
    pattern.push(']');
    pattern
}

/// The text fields a record may carry, in the order they are read; one of them must hold
/// something other than whitespace.
const TEXT_PROPERTIES: [&str; 5] = ["title", "description", "body_text", "text", "html"];

/// The schema of a record sent to insert (`id` required) or to query (`id` optional).
fn record_schema(id_required: bool) -> Value {
    let not_blank = not_blank_pattern();
    // Absent and null are the same to the server (as to `neardup dedup`'s input).
    let text =
        |description: &str| json!({"type": "string", "nullable": true, "description": description});
    let id_description = if id_required {
        "Unique record id, not blank (whitespace only is refused)."
    } else {
        "Optional; when sent, not blank (whitespace only is refused). Names the record in the answer."
    };
    let one_text_field: Vec<Value> = TEXT_PROPERTIES
        .iter()
        .map(|name| {
            json!({
                "required": [name],
                "properties": {(*name): {"type": "string", "pattern": not_blank}}
            })
        })
        .collect();
    let mut schema = json!({
        "type": "object",
        "additionalProperties": false,
        "description": "The fields of `neardup dedup`'s JSONL input; null is the same as absent. Text is title, description, body_text and text in that order, then the visible text of html; at least one of them must hold something other than whitespace (else 400). A record whose text has no words (punctuation only, or html with no visible text) is refused with 422 alone and answered `rejected` in a batch. Unknown fields are refused (400).",
        "properties": {
            "id": {"type": "string", "nullable": !id_required, "minLength": 1, "pattern": not_blank, "description": id_description},
            "title": text("Weighted by --field-weight title=N."),
            "description": text("Weighted by --field-weight description=N."),
            "body_text": text("Weighted by --field-weight body_text=N."),
            "text": text("Weighted by --field-weight text=N."),
            "html": text("Raw HTML; only its visible text is fingerprinted."),
            "url": {"type": "string", "nullable": true},
            "host": {"type": "string", "nullable": true, "description": "Boilerplate host (default: from url)."},
            "first_seen": {"type": "string", "nullable": true, "format": "date-time", "description": "RFC 3339 (else 400); default: when the server processes it. The earliest first seen survives."},
            "retention_class": {"type": "string", "nullable": true}
        },
        "anyOf": one_text_field
    });
    if id_required {
        schema["required"] = json!(["id"]);
    }
    schema
}

/// A response with an [`Error`](#/components/schemas/Error) body.
fn error(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    })
}

/// A successful JSON response.
fn ok(description: &str, schema: Value) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": schema}}})
}

/// `response` with links to `operations`, each taking the `{id}` at `pointer` in its body.
fn with_links(mut response: Value, pointer: &str, operations: &[&str]) -> Value {
    let links: Map<String, Value> = operations
        .iter()
        .map(|op| {
            let link = json!({
                "operationId": op,
                "parameters": {"id": format!("$response.body#{pointer}")}
            });
            ((*op).to_owned(), link)
        })
        .collect();
    response["links"] = Value::Object(links);
    response
}

/// One operation: `responses` lists every status it answers; 401 is added when a token is
/// required (and the operation is not public).
fn operation(
    settings: &Settings,
    public: bool,
    mut op: Value,
    responses: impl IntoIterator<Item = (u16, Value)>,
) -> Value {
    let mut all = Map::new();
    for (status, response) in responses {
        all.insert(status.to_string(), response);
    }
    if settings.token_required {
        if public {
            op["security"] = json!([]);
        } else {
            all.insert(
                "401".into(),
                json!({"$ref": "#/components/responses/Unauthorized"}),
            );
        }
    }
    op["responses"] = Value::Object(all);
    op
}

/// The document of a server with these settings.
pub fn document(settings: &Settings) -> Value {
    let s = settings;
    let id_param = json!({
        "name": "id", "in": "path", "required": true,
        "schema": {"type": "string", "minLength": 1}, "description": "A record id (percent-encoded)."
    });
    let records_body = |record: &str| {
        json!({
            "required": true,
            "description": format!(
                "One record, or an array of at most {} (--max-batch; more get 413); at most {} bytes (--max-body-bytes; more get 413). The body must be JSON sent as `Content-Type: application/json` (a charset parameter other than utf-8 is refused): other content types get 415.",
                s.max_batch, s.max_body_bytes
            ),
            "content": {"application/json": {"schema": {"oneOf": [
                {"$ref": format!("#/components/schemas/{record}")},
                {"type": "array", "maxItems": s.max_batch, "items": {"$ref": format!("#/components/schemas/{record}")}}
            ]}}}
        })
    };
    let answers = || {
        json!({"oneOf": [
            {"$ref": "#/components/schemas/Answer"},
            {"type": "array", "items": {"$ref": "#/components/schemas/Answer"}}
        ]})
    };
    let invalid = || {
        error("A malformed body, a record the schema refuses, or an unknown field: the whole request is refused; `field` names the offending field (`[3].first_seen`).")
    };
    let too_large = || {
        error("The body is larger than --max-body-bytes or holds more records than --max-batch.")
    };
    let not_json = || {
        error("The body is not sent as `Content-Type: application/json` (missing, text/plain, a form, or a charset other than utf-8).")
    };
    let no_words = || {
        error("A record sent alone has no words to fingerprint (punctuation only, or html with no visible text).")
    };
    let internal =
        || error("A reader or the writer thread failed (a bug); the server keeps serving.");
    let bad_id = || error("The id is not valid UTF-8 once percent-decoded.");
    let not_found = || error("No record with this id is stored.");

    let mut info_description = String::from("Online near-duplicate detection over a neardup store: the decisions of `neardup dedup` (exact tier, SimHash candidates, Jaccard verification, merge log, stored boilerplate), one record or a batch per request. Inserts are durable when answered. Errors are JSON objects naming the offending field.");
    if s.token_required {
        info_description.push_str(" This server runs with --token-file: every endpoint but /healthz needs `Authorization: Bearer TOKEN` (the scheme is case-insensitive).");
    }
    let mut doc = json!({
        "openapi": "3.0.3",
        "info": {
            "title": "neardup",
            "version": env!("CARGO_PKG_VERSION"),
            "description": info_description
        },
        "paths": {
            "/healthz": {"get": operation(s, true, json!({
                "operationId": "health",
                "summary": "Liveness: 200 while the store accepts writes, 503 after a failed commit."
            }), [
                (200, ok("Serving.", json!({"$ref": "#/components/schemas/Health"}))),
                (503, ok("A commit failed: writes are refused until a restart.", json!({"$ref": "#/components/schemas/Health"})))
            ])},
            "/metrics": {"get": operation(s, false, json!({
                "operationId": "metrics",
                "summary": "Prometheus text: decisions by kind, request latency histograms, store size, largest group, largest index bucket."
            }), [
                (200, json!({"description": "Prometheus exposition format 0.0.4.", "content": {"text/plain": {"schema": {"type": "string"}}}})),
                (500, internal())
            ])},
            "/v1/openapi.json": {"get": operation(s, false, json!({
                "operationId": "openapi",
                "summary": "This document."
            }), [
                (200, ok("OpenAPI 3.0.", json!({"type": "object"})))
            ])},
            "/v1/records": {"post": operation(s, false, json!({
                "operationId": "insertRecords",
                "summary": "Insert records and answer each: new, exact_duplicate, near_duplicate or too_short.",
                "description": "A JSON object inserts one record and answers one Answer; an array inserts a batch in order (later records are compared with earlier ones) and answers an array. Concurrent requests are decided one after another, so two near duplicates posted at once are merged. A record whose id is stored with the same text is answered as first (already_stored: true); with other text it is rejected (409 alone, a `rejected` entry in a batch). A record with no words is 422 alone, a `rejected` entry in a batch. Validation errors (400) reject the whole request.",
                "requestBody": records_body("InsertRecord")
            }), [
                (200, ok("Answers, in request order; stored durably.", answers())),
                (400, invalid()),
                (409, error("The id is stored with other text (a record sent alone).")),
                (413, too_large()),
                (415, not_json()),
                (422, no_words()),
                (500, internal()),
                (503, error("A commit failed (writes are refused until a restart) or the server is shutting down."))
            ])},
            "/v1/query": {"post": operation(s, false, json!({
                "operationId": "queryRecords",
                "summary": "The answer an insert would get, without inserting; `id` is optional.",
                "requestBody": records_body("QueryRecord")
            }), [
                (200, ok("Answers, in request order.", answers())),
                (400, invalid()),
                (413, too_large()),
                (415, not_json()),
                (422, no_words()),
                (500, internal())
            ])},
            "/v1/records/{id}": {
                "parameters": [id_param.clone()],
                "get": operation(s, false, json!({
                    "operationId": "getRecord",
                    "summary": "A stored record: fingerprint, survivor, first seen, URL."
                }), [
                    (200, with_links(ok("The record.", json!({"$ref": "#/components/schemas/StoredRecord"})), "/id", &["getCluster", "eraseRecord"])),
                    (400, bad_id()),
                    (404, not_found()),
                    (500, internal())
                ]),
                "delete": operation(s, false, json!({
                    "operationId": "eraseRecord",
                    "summary": "Erase a record: the record, its fingerprint, index entries and shingles; merge-log rows about it go. When it was a survivor, the earliest remaining member takes over."
                }), [
                    (200, with_links(ok("Erased, durably.", json!({"type": "object", "additionalProperties": false, "properties": {"erased": {"type": "string"}}, "required": ["erased"]})), "/erased", &["getRecord", "getCluster"])),
                    (400, bad_id()),
                    (404, not_found()),
                    (500, internal()),
                    (503, error("A commit failed (writes are refused until a restart) or the server is shutting down."))
                ])
            },
            "/v1/clusters/{id}": {
                "parameters": [id_param],
                "get": operation(s, false, json!({
                    "operationId": "getCluster",
                    "summary": "The cluster of a record (any member's id)."
                }), [
                    (200, ok("The cluster.", json!({"$ref": "#/components/schemas/Cluster"}))),
                    (400, bad_id()),
                    (404, not_found()),
                    (500, internal())
                ])
            },
            "/v1/merges": {"get": operation(s, false, json!({
                "operationId": "getMerges",
                "summary": "The merge log, oldest first.",
                "parameters": [
                    {"name": "since", "in": "query", "required": false, "schema": {"type": "string", "format": "date-time"}, "description": "Only merges decided at or after this time (RFC 3339)."},
                    {"name": "limit", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 1, "maximum": 100000, "default": 1000}, "description": "At most this many entries; `truncated` tells whether more matched."}
                ]
            }), [
                (200, ok("Merge-log entries.", json!({"$ref": "#/components/schemas/Merges"}))),
                (400, error("`since` is not an RFC 3339 time, `limit` is not a whole number from 1 to 100000, or another query parameter was sent.")),
                (500, internal())
            ])}
        },
        "components": {
            "schemas": {
                "InsertRecord": record_schema(true),
                "QueryRecord": record_schema(false),
                "Answer": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["id", "decision", "of", "matched", "distance", "jaccard", "fingerprint", "survivor", "already_stored"],
                    "properties": {
                        "id": {"type": "string", "description": "The record's id (empty for a query sent without one)."},
                        "decision": {"type": "string", "enum": ["new", "exact_duplicate", "near_duplicate", "too_short", "rejected"], "description": "`rejected` only in batches."},
                        "of": {"type": "string", "nullable": true, "description": "The record it duplicates: its cluster's survivor, or the survivor it displaced when it was first seen earlier."},
                        "matched": {"type": "string", "nullable": true, "description": "The stored record it was verified against."},
                        "distance": {"type": "integer", "minimum": 0, "nullable": true, "description": "Hamming distance to `matched`, bits."},
                        "jaccard": {"type": "number", "minimum": 0, "maximum": 1, "nullable": true, "description": "Shingle Jaccard similarity with `matched`."},
                        "fingerprint": {"type": "string", "nullable": true, "description": "SimHash, hex."},
                        "survivor": {"type": "string", "nullable": true, "description": "The cluster's survivor after the decision."},
                        "already_stored": {"type": "boolean", "description": "The id was stored with the same text before: nothing changed; the first answer is repeated when the server still remembers it, else a duplicate of its survivor (or new when it is the survivor)."},
                        "error": {"type": "string", "description": "Why a batch entry was rejected."},
                        "matches": {"type": "array", "description": "Queries only: stored near duplicates, best first (at most 10).", "maxItems": 10, "items": {
                            "type": "object",
                            "additionalProperties": false,
                            "required": ["id", "distance", "jaccard"],
                            "properties": {"id": {"type": "string"}, "distance": {"type": "integer", "minimum": 0}, "jaccard": {"type": "number", "minimum": 0, "maximum": 1}}
                        }},
                        "alerts": alerts_schema()
                    }
                },
                "StoredRecord": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["id", "fingerprint", "survivor", "first_seen", "url", "retention_class", "indexed", "cluster_size"],
                    "properties": {
                        "id": {"type": "string"},
                        "fingerprint": {"type": "string"},
                        "survivor": {"type": "string"},
                        "first_seen": {"type": "string", "format": "date-time"},
                        "url": {"type": "string", "nullable": true},
                        "retention_class": {"type": "string", "nullable": true},
                        "indexed": {"type": "boolean", "description": "In the Hamming index (false when too short, out of the window, or an exact copy of an indexed record)."},
                        "cluster_size": {"type": "integer", "minimum": 1}
                    }
                },
                "Cluster": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["survivor", "members", "source_urls", "first_seen", "size"],
                    "properties": {
                        "survivor": {"type": "string"},
                        "members": {"type": "array", "items": {"type": "string"}},
                        "source_urls": {"type": "array", "items": {"type": "string"}},
                        "first_seen": {"type": "string", "format": "date-time"},
                        "size": {"type": "integer", "minimum": 1}
                    }
                },
                "Merges": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["merges", "truncated"],
                    "properties": {
                        "merges": {"type": "array", "items": {"$ref": "#/components/schemas/MergeLogEntry"}},
                        "truncated": {"type": "boolean"}
                    }
                },
                "MergeLogEntry": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["kept", "merged", "merged_fingerprint", "rule", "distance", "jaccard", "matched", "source_urls", "at"],
                    "properties": {
                        "kept": {"type": "string"},
                        "merged": {"type": "string"},
                        "merged_fingerprint": {"type": "string"},
                        "rule": {"type": "string", "enum": ["exact", "simhash+jaccard", "chars+jaccard", "simhash+semantic", "reverted"], "description": "`reverted`: `neardup reevaluate --apply` split the record off."},
                        "distance": {"type": "integer", "minimum": 0},
                        "jaccard": {"type": "number", "minimum": 0, "maximum": 1},
                        "cosine": {"type": "number", "minimum": -1, "maximum": 1, "description": "The sentence embeddings' cosine, where the semantic stage (`neardup dedup --model`) scored the pair."},
                        "matched": {"type": "string"},
                        "source_urls": {"type": "array", "items": {"type": "string"}},
                        "at": {"type": "string", "format": "date-time"}
                    }
                },
                "Health": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["status", "records"],
                    "properties": {
                        "status": {"type": "string", "enum": ["ok", "failing"]},
                        "records": {"type": "integer", "minimum": 0},
                        "error": {"type": "string", "nullable": true, "description": "Why the last commit failed."}
                    }
                },
                "Error": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["error", "field"],
                    "properties": {
                        "error": {"type": "string", "minLength": 1, "description": "What was wrong, and the fix when there is one."},
                        "field": {"type": "string", "nullable": true, "description": "The offending field, as a path (`text`, `[3].first_seen`, `body`) or a header name (`Authorization`, `Content-Type`)."},
                        "id": {"type": "string", "description": "The record concerned, when known."}
                    }
                }
            }
        }
    });
    let review = review_paths(s);
    if let (Some(paths), Value::Object(review)) = (doc["paths"].as_object_mut(), review) {
        paths.extend(review);
    }
    doc["components"]["schemas"]["Label"] = label_schema();
    if s.token_required {
        doc["security"] = json!([{"bearer": []}]);
        doc["components"]["securitySchemes"] =
            json!({"bearer": {"type": "http", "scheme": "bearer"}});
        doc["components"]["responses"] = json!({
            "Unauthorized": {
                "description": "No valid bearer token: send `Authorization: Bearer TOKEN` with the token of --token-file.",
                "headers": {"WWW-Authenticate": {"schema": {"type": "string", "enum": ["Bearer"]}, "required": true}},
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
            }
        });
    }
    doc
}

/// A stored label of a pair.
fn label_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["a", "b", "verdict", "source", "distance", "jaccard", "by", "at"],
        "properties": {
            "a": {"type": "string", "description": "The stored record of the pair."},
            "b": {"type": "string", "description": "The arriving record of the pair."},
            "verdict": {"type": "string", "enum": ["duplicate", "not_duplicate", "unsure"]},
            "source": {"type": "string", "description": "The queue's stratum: boundary, rejected or random."},
            "distance": {"type": "integer", "minimum": 0},
            "jaccard": {"type": "number", "minimum": 0, "maximum": 1},
            "by": {"type": "string", "description": "The name of the token used (`anonymous` without --token-file, unless the request named someone)."},
            "at": {"type": "string", "format": "date-time"}
        }
    })
}

/// The review page's API: its queue, a pair side by side, labels, the summary and a dry
/// run of `reevaluate`.
fn review_paths(s: &Settings) -> Value {
    let pair_params = json!([
        {"name": "a", "in": "query", "required": true, "schema": {"type": "string", "minLength": 1}, "description": "The pair's stored record."},
        {"name": "b", "in": "query", "required": true, "schema": {"type": "string", "minLength": 1}, "description": "The pair's arriving record."}
    ]);
    let bad_query = || error("A query parameter is missing, malformed or unknown.");
    let invalid =
        || error("A malformed body, a value out of range, or an unknown field; `field` names it.");
    let too_large = || error("The body is larger than --max-body-bytes.");
    let not_json = || error("The body is not sent as `Content-Type: application/json`.");
    let internal = || error("Reading or writing the store failed; the server keeps serving.");
    json!({
        "/v1/review/queue": {"get": operation(s, false, json!({
            "operationId": "getReviewQueue",
            "summary": "The pairs people should judge: merges near the Jaccard threshold (nearest first), rejected candidates just under it, and random merges, each with its label when labelled.",
            "parameters": [{"name": "refresh", "in": "query", "required": false, "schema": {"type": "boolean"}, "description": "Draw the queue again from the store (taking in merges made since the server started)."}]
        }), [
            (200, ok("The queue.", json!({"type": "object", "required": ["threshold", "margin", "populations", "texts", "reviewer", "reviewer_from_token", "pairs"], "properties": {
                "threshold": {"type": "number"}, "margin": {"type": "number"},
                "populations": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}, "description": "Pairs in each stratum's population."},
                "texts": {"type": "boolean", "description": "Whether the queued records' texts were found."},
                "reviewer": {"type": "string", "description": "The name labels of this request are stored under: its token's name, or `anonymous`."},
                "reviewer_from_token": {"type": "boolean", "description": "Whether the name comes from --token-file (else a label's `by` names who labels)."},
                "pairs": {"type": "array", "items": {"type": "object"}}
            }}))),
            (400, bad_query()),
            (500, internal())
        ])},
        "/v1/review/pair": {"get": operation(s, false, json!({
            "operationId": "getReviewPair",
            "summary": "One queued pair side by side: both records' URLs and first-seen times, the scores, its label, and a page of the word-level diff of the texts (moved paragraphs marked).",
            "parameters": pair_params.as_array().into_iter().flatten().cloned().chain([json!(
                {"name": "page", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 0, "maximum": 1_000_000_000u64}, "description": "The page of the diff (200 rows a page), from 0; a page past the end has no rows."}
            )]).collect::<Vec<Value>>()
        }), [
            (200, ok("The pair.", json!({"type": "object"}))),
            (400, bad_query()),
            (404, error("The pair is not in the review queue.")),
            (500, internal())
        ])},
        "/v1/review/summary": {"get": operation(s, false, json!({
            "operationId": "getReviewSummary",
            "summary": "What the labels say: counts by stratum and verdict, the precision of the merges with its 95% interval, the recommended thresholds (as `neardup tune` recommends) and tune's plot as SVG."
        }), [
            (200, ok("The summary.", json!({"type": "object"}))),
            (500, internal())
        ])},
        "/v1/review/reevaluate": {"post": operation(s, false, json!({
            "operationId": "reevaluate",
            "summary": "`neardup reevaluate` under other thresholds: what would change (nothing is written), or with `apply` the changes applied, durably (merges that fail split, rejected candidates that pass merge) and the review queue drawn again.",
            "requestBody": {"required": true, "content": {"application/json": {"schema": {
                "type": "object", "additionalProperties": false, "required": ["max_distance", "min_jaccard"],
                "properties": {"max_distance": {"type": "integer", "minimum": 0, "maximum": 64}, "min_jaccard": {"type": "number", "minimum": 0, "maximum": 1}, "apply": {"type": "boolean", "default": false}}
            }}}}
        }), [
            (200, ok("The changes (the first 200 listed, all counted; `applied`: how many were applied, null for a dry run).", json!({"type": "object"}))),
            (400, invalid()),
            (413, too_large()),
            (415, not_json()),
            (500, internal())
        ])},
        "/v1/labels": {
            "put": operation(s, false, json!({
                "operationId": "putLabel",
                "summary": "Label a queued pair (replacing its label); stored durably with who (the token's name) and when.",
                "requestBody": {"required": true, "content": {"application/json": {"schema": {
                    "type": "object", "additionalProperties": false, "required": ["a", "b", "verdict"],
                    "properties": {
                        "a": {"type": "string"}, "b": {"type": "string"},
                        "verdict": {"type": "string", "enum": ["duplicate", "not_duplicate", "unsure"]},
                        "by": {"type": "string", "nullable": true, "description": "Who, on a server without --token-file (else the token's name)."}
                    }
                }}}}
            }), [
                (200, ok("The stored label.", json!({"$ref": "#/components/schemas/Label"}))),
                (400, invalid()),
                (404, error("The pair is not in the review queue.")),
                (413, too_large()),
                (415, not_json()),
                (500, internal())
            ]),
            "delete": operation(s, false, json!({
                "operationId": "deleteLabel",
                "summary": "Remove a pair's label (the page's undo).",
                "parameters": pair_params
            }), [
                (200, ok("Removed.", json!({"type": "object", "required": ["a", "b", "removed"], "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "removed": {"type": "boolean"}}}))),
                (400, bad_query()),
                (404, error("The pair has no label.")),
                (500, internal())
            ]),
            "get": operation(s, false, json!({
                "operationId": "getLabels",
                "summary": "Every stored label; with format=pairs, the pairs file `neardup tune` reads (JSON Lines, weighted by stratum, unsure labels left out), as `neardup review --export` writes it.",
                "parameters": [{"name": "format", "in": "query", "required": false, "schema": {"type": "string", "enum": ["json", "pairs"]}}]
            }), [
                (200, {
                    let mut r = ok("The labels.", json!({"type": "object", "required": ["labels"], "properties": {"labels": {"type": "array", "items": {"$ref": "#/components/schemas/Label"}}}}));
                    r["content"]["application/x-ndjson"] = json!({"schema": {"type": "string"}});
                    r
                }),
                (400, bad_query()),
                (500, internal())
            ])
        }
    })
}

/// An answer's `alerts` (with `--watchlist`).
fn alerts_schema() -> Value {
    json!({"type": "array", "description": "With --watchlist: the watched records it matched, most severe level first (at most 10).", "maxItems": 10, "items": {
        "type": "object",
        "additionalProperties": false,
        "required": ["level", "watched", "class", "distance", "jaccard"],
        "properties": {
            "level": {"type": "string", "description": "The alert level (--alert-bands)."},
            "watched": {"type": "string", "description": "The watched record's id."},
            "class": {"type": "string", "nullable": true, "description": "Its class (`neardup watch add --class`)."},
            "distance": {"type": "integer", "minimum": 0},
            "jaccard": {"type": "number", "minimum": 0, "maximum": 1}
        }
    }})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_blank_pattern_excludes_exactly_what_trim_removes() {
        let in_class = |c: char| WHITESPACE.iter().any(|&(lo, hi)| (lo..=hi).contains(&c));
        for c in (0..=u32::from(char::MAX)).filter_map(char::from_u32) {
            assert_eq!(in_class(c), c.is_whitespace(), "{c:?}");
        }
        assert_eq!(
            not_blank_pattern(),
            r"[^\u0009-\u000d\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028-\u2029\u202f\u205f\u3000]"
        );
    }

    fn statuses(doc: &Value, path: &str, method: &str) -> Vec<String> {
        doc["paths"][path][method]["responses"]
            .as_object()
            .expect("responses")
            .keys()
            .cloned()
            .collect()
    }

    #[test]
    fn security_and_401_only_with_a_token() {
        let mut settings = Settings {
            token_required: false,
            max_batch: 7,
            max_body_bytes: 100,
        };
        let open = document(&settings);
        assert!(open.get("security").is_none());
        assert!(open["components"].get("securitySchemes").is_none());
        assert!(!open.to_string().contains("\"401\""));
        settings.token_required = true;
        let closed = document(&settings);
        assert_eq!(closed["security"], json!([{"bearer": []}]));
        assert_eq!(closed["paths"]["/healthz"]["get"]["security"], json!([]));
        for (path, method) in [
            ("/metrics", "get"),
            ("/v1/openapi.json", "get"),
            ("/v1/records", "post"),
            ("/v1/query", "post"),
            ("/v1/records/{id}", "get"),
            ("/v1/records/{id}", "delete"),
            ("/v1/clusters/{id}", "get"),
            ("/v1/merges", "get"),
        ] {
            assert!(
                statuses(&closed, path, method).contains(&"401".to_owned()),
                "{method} {path}"
            );
        }
        assert!(!statuses(&closed, "/healthz", "get").contains(&"401".to_owned()));
        let batch = &closed["paths"]["/v1/records"]["post"]["requestBody"]["content"]
            ["application/json"]["schema"]["oneOf"][1];
        assert_eq!(batch["maxItems"], 7);
    }

    #[test]
    fn inserted_records_need_an_id_and_text() {
        let doc = document(&Settings {
            token_required: false,
            max_batch: 1,
            max_body_bytes: 1,
        });
        let schemas = &doc["components"]["schemas"];
        assert_eq!(schemas["InsertRecord"]["required"], json!(["id"]));
        assert!(schemas["QueryRecord"].get("required").is_none());
        for schema in ["InsertRecord", "QueryRecord"] {
            let alternatives = schemas[schema]["anyOf"].as_array().expect("anyOf");
            let fields: Vec<&Value> = alternatives.iter().map(|a| &a["required"][0]).collect();
            assert_eq!(
                fields,
                ["title", "description", "body_text", "text", "html"],
                "{schema}"
            );
            assert_eq!(
                schemas[schema]["properties"]["id"]["pattern"],
                not_blank_pattern()
            );
        }
    }
}

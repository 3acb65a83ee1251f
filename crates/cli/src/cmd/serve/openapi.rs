//! The OpenAPI 3.0 document of the service, served at `/v1/openapi.json`.
//!
//! Written by hand (no derive crate for a dozen operations); `tests/serve.rs` keeps it
//! true: every documented operation is answered, with the documented statuses, and the
//! documented record and answer properties are exactly those the server accepts and sends.

use serde_json::{json, Value};

/// The document.
pub fn document() -> Value {
    let error = json!({"$ref": "#/components/responses/Error"});
    let unauthorized = json!({"$ref": "#/components/responses/Unauthorized"});
    let id_param = json!({
        "name": "id", "in": "path", "required": true,
        "schema": {"type": "string"}, "description": "A record id (percent-encoded)."
    });
    let records_body = json!({
        "required": true,
        "content": {"application/json": {"schema": {"oneOf": [
            {"$ref": "#/components/schemas/Record"},
            {"type": "array", "items": {"$ref": "#/components/schemas/Record"}}
        ]}}}
    });
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "neardup",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Online near-duplicate detection over a neardup store: the decisions of `neardup dedup` (exact tier, SimHash candidates, Jaccard verification, merge log, stored boilerplate), one record or a batch per request. Inserts are durable when answered. Every endpoint but /healthz needs `Authorization: Bearer TOKEN` when the server runs with --token-file."
        },
        "security": [{"bearer": []}],
        "paths": {
            "/healthz": {"get": {
                "summary": "Liveness: 200 while the store accepts writes, 503 after a failed commit.",
                "security": [],
                "responses": {
                    "200": {"description": "Serving.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Health"}}}},
                    "503": {"description": "A commit failed: writes are refused until a restart.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Health"}}}}
                }
            }},
            "/metrics": {"get": {
                "summary": "Prometheus text: decisions by kind, request latency histograms, store size, largest group, largest index bucket.",
                "responses": {
                    "200": {"description": "Prometheus exposition format 0.0.4.", "content": {"text/plain": {"schema": {"type": "string"}}}},
                    "401": unauthorized
                }
            }},
            "/v1/openapi.json": {"get": {
                "summary": "This document.",
                "responses": {
                    "200": {"description": "OpenAPI 3.0.", "content": {"application/json": {"schema": {"type": "object"}}}},
                    "401": unauthorized
                }
            }},
            "/v1/records": {"post": {
                "summary": "Insert records and answer each: new, exact_duplicate, near_duplicate or too_short.",
                "description": "A JSON object inserts one record and answers one Answer; an array inserts a batch in order (later records are compared with earlier ones) and answers an array. Concurrent requests are decided one after another, so two near duplicates posted at once are merged. A record whose id is stored with the same text is answered as first (already_stored: true); with other text it is rejected (409 alone, a `rejected` entry in a batch). A record with no words is 422 alone, a `rejected` entry in a batch. Validation errors (400) reject the whole request.",
                "requestBody": records_body,
                "responses": {
                    "200": {"description": "Answers, in request order; stored durably.", "content": {"application/json": {"schema": {"oneOf": [
                        {"$ref": "#/components/schemas/Answer"},
                        {"type": "array", "items": {"$ref": "#/components/schemas/Answer"}}
                    ]}}}},
                    "400": error, "401": unauthorized, "409": error, "413": error, "422": error, "503": error
                }
            }},
            "/v1/query": {"post": {
                "summary": "The answer an insert would get, without inserting; `id` is optional.",
                "requestBody": records_body,
                "responses": {
                    "200": {"description": "Answers, in request order.", "content": {"application/json": {"schema": {"oneOf": [
                        {"$ref": "#/components/schemas/Answer"},
                        {"type": "array", "items": {"$ref": "#/components/schemas/Answer"}}
                    ]}}}},
                    "400": error, "401": unauthorized, "413": error, "422": error
                }
            }},
            "/v1/records/{id}": {
                "parameters": [id_param],
                "get": {
                    "summary": "A stored record: fingerprint, survivor, first seen, URL.",
                    "responses": {
                        "200": {"description": "The record.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/StoredRecord"}}}},
                        "401": unauthorized, "404": error
                    }
                },
                "delete": {
                    "summary": "Erase a record: the record, its fingerprint, index entries and shingles; merge-log rows about it go. When it was a survivor, the earliest remaining member takes over.",
                    "responses": {
                        "200": {"description": "Erased, durably.", "content": {"application/json": {"schema": {"type": "object", "properties": {"erased": {"type": "string"}}, "required": ["erased"]}}}},
                        "401": unauthorized, "404": error, "503": error
                    }
                }
            },
            "/v1/clusters/{id}": {
                "parameters": [id_param],
                "get": {
                    "summary": "The cluster of a record (any member's id).",
                    "responses": {
                        "200": {"description": "The cluster.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Cluster"}}}},
                        "401": unauthorized, "404": error
                    }
                }
            },
            "/v1/merges": {"get": {
                "summary": "The merge log, oldest first.",
                "parameters": [
                    {"name": "since", "in": "query", "required": false, "schema": {"type": "string", "format": "date-time"}, "description": "Only merges decided at or after this time (RFC 3339)."},
                    {"name": "limit", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 1, "maximum": 100000, "default": 1000}, "description": "At most this many entries; `truncated` tells whether more matched."}
                ],
                "responses": {
                    "200": {"description": "Merge-log entries.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Merges"}}}},
                    "400": error, "401": unauthorized
                }
            }}
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "responses": {
                "Error": {"description": "An error naming the offending field where there is one.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
                "Unauthorized": {"description": "No valid bearer token (servers started with --token-file).", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
            },
            "schemas": {
                "Record": {
                    "type": "object",
                    "additionalProperties": false,
                    "description": "The fields of `neardup dedup`'s JSONL input. Text is title, description, body_text and text in that order, then the visible text of html. Unknown fields are refused.",
                    "properties": {
                        "id": {"type": "string", "description": "Unique record id; required to insert."},
                        "text": {"type": "string"},
                        "title": {"type": "string"},
                        "description": {"type": "string"},
                        "body_text": {"type": "string"},
                        "html": {"type": "string", "description": "Raw HTML; only its visible text is fingerprinted."},
                        "url": {"type": "string"},
                        "host": {"type": "string", "description": "Boilerplate host (default: from url)."},
                        "first_seen": {"type": "string", "format": "date-time", "description": "RFC 3339; default: when the server processes it. The earliest first seen survives."},
                        "retention_class": {"type": "string"}
                    }
                },
                "Answer": {
                    "type": "object",
                    "required": ["id", "decision", "of", "matched", "distance", "jaccard", "fingerprint", "survivor", "already_stored"],
                    "properties": {
                        "id": {"type": "string"},
                        "decision": {"type": "string", "enum": ["new", "exact_duplicate", "near_duplicate", "too_short", "rejected"], "description": "`rejected` only in batches."},
                        "of": {"type": "string", "nullable": true, "description": "The record it duplicates: its cluster's survivor, or the survivor it displaced when it was first seen earlier."},
                        "matched": {"type": "string", "nullable": true, "description": "The stored record it was verified against."},
                        "distance": {"type": "integer", "nullable": true, "description": "Hamming distance to `matched`, bits."},
                        "jaccard": {"type": "number", "nullable": true, "description": "Shingle Jaccard similarity with `matched`."},
                        "fingerprint": {"type": "string", "nullable": true, "description": "SimHash, hex."},
                        "survivor": {"type": "string", "nullable": true, "description": "The cluster's survivor after the decision."},
                        "already_stored": {"type": "boolean", "description": "The id was stored with the same text before: nothing changed; the first answer is repeated when the server still remembers it, else a duplicate of its survivor (or new when it is the survivor)."},
                        "error": {"type": "string", "description": "Why a batch entry was rejected."},
                        "matches": {"type": "array", "description": "Queries only: stored near duplicates, best first (at most 10).", "items": {"type": "object", "properties": {"id": {"type": "string"}, "distance": {"type": "integer"}, "jaccard": {"type": "number"}}}}
                    }
                },
                "StoredRecord": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "fingerprint": {"type": "string"},
                        "survivor": {"type": "string"},
                        "first_seen": {"type": "string", "format": "date-time"},
                        "url": {"type": "string", "nullable": true},
                        "retention_class": {"type": "string", "nullable": true},
                        "indexed": {"type": "boolean", "description": "In the Hamming index (false when too short, out of the window, or an exact copy of an indexed record)."},
                        "cluster_size": {"type": "integer"}
                    }
                },
                "Cluster": {
                    "type": "object",
                    "properties": {
                        "survivor": {"type": "string"},
                        "members": {"type": "array", "items": {"type": "string"}},
                        "source_urls": {"type": "array", "items": {"type": "string"}},
                        "first_seen": {"type": "string", "format": "date-time"},
                        "size": {"type": "integer"}
                    }
                },
                "Merges": {
                    "type": "object",
                    "properties": {
                        "merges": {"type": "array", "items": {"$ref": "#/components/schemas/MergeLogEntry"}},
                        "truncated": {"type": "boolean"}
                    }
                },
                "MergeLogEntry": {
                    "type": "object",
                    "properties": {
                        "kept": {"type": "string"},
                        "merged": {"type": "string"},
                        "merged_fingerprint": {"type": "string"},
                        "rule": {"type": "string", "enum": ["exact", "simhash+jaccard", "chars+jaccard"]},
                        "distance": {"type": "integer"},
                        "jaccard": {"type": "number"},
                        "matched": {"type": "string"},
                        "source_urls": {"type": "array", "items": {"type": "string"}},
                        "at": {"type": "string", "format": "date-time"}
                    }
                },
                "Health": {
                    "type": "object",
                    "properties": {
                        "status": {"type": "string", "enum": ["ok", "failing"]},
                        "records": {"type": "integer"},
                        "error": {"type": "string"}
                    }
                },
                "Error": {
                    "type": "object",
                    "required": ["error", "field"],
                    "properties": {
                        "error": {"type": "string"},
                        "field": {"type": "string", "nullable": true, "description": "The offending field, as a path: `text`, `[3].first_seen`, `body`."},
                        "id": {"type": "string", "description": "The record concerned, when known."}
                    }
                }
            }
        }
    })
}

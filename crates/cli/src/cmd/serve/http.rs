//! HTTP plumbing of the service: the bearer token, metrics per route, JSON bodies and
//! their limits, path ids, and the answers to unknown routes.

use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::rejection::PathRejection;
use axum::extract::{MatchedPath, Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use neardup::Record;

use super::api::{self, ApiError};
use super::review::Reviewer;
use super::App;

/// The metrics name of a route.
fn route_name(method: &Method, path: Option<&str>) -> &'static str {
    match (method.as_str(), path.unwrap_or("")) {
        ("GET", "/healthz") => "healthz",
        ("GET", "/metrics") => "metrics",
        ("GET", "/v1/openapi.json") => "openapi",
        ("POST", "/v1/records") => "insert",
        ("POST", "/v1/query") => "query",
        ("GET", "/v1/records/{id}") => "get_record",
        ("DELETE", "/v1/records/{id}") => "delete_record",
        ("GET", "/v1/clusters/{id}") => "get_cluster",
        ("GET", "/v1/merges") => "merges",
        ("GET", "/review" | "/review/app.js" | "/review/app.css") => "review_page",
        ("GET", "/v1/review/queue") => "review_queue",
        ("GET", "/v1/review/pair") => "review_pair",
        ("GET", "/v1/review/summary") => "review_summary",
        ("POST", "/v1/review/reevaluate") => "review_reevaluate",
        ("PUT", "/v1/labels") => "put_label",
        ("DELETE", "/v1/labels") => "delete_label",
        ("GET", "/v1/labels") => "labels",
        _ => "other",
    }
}

pub(super) async fn observe(State(app): State<App>, req: Request, next: Next) -> Response {
    let route = route_name(
        req.method(),
        req.extensions()
            .get::<MatchedPath>()
            .map(MatchedPath::as_str),
    );
    let started = Instant::now();
    let response = next.run(req).await;
    app.metrics
        .request(route, response.status().as_u16(), started.elapsed());
    response
}

pub(super) async fn authorize(State(app): State<App>, mut req: Request, next: Next) -> Response {
    if app.tokens.is_empty() {
        req.extensions_mut()
            .insert(Reviewer("anonymous".to_owned()));
        return next.run(req).await;
    }
    let path = req.uri().path();
    if path == "/healthz" || (req.method() == Method::GET && super::review::is_static(path)) {
        return next.run(req).await;
    }
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_token);
    // Every token is compared, so the time taken does not say which one matched.
    let mut name = None;
    if let Some(g) = given {
        for t in &app.tokens {
            if constant_time_eq(g.as_bytes(), t.token.as_bytes()) && name.is_none() {
                name = Some(t.name.clone());
            }
        }
    }
    match name {
        Some(name) => {
            req.extensions_mut().insert(Reviewer(name));
            next.run(req).await
        }
        None => {
            let mut response = ApiError::new(
                StatusCode::UNAUTHORIZED,
                "missing or invalid bearer token: send `Authorization: Bearer TOKEN` with a token of --token-file",
            )
            .field("Authorization")
            .into_response();
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            response
        }
    }
}

/// The token of an `Authorization: Bearer TOKEN` value. The scheme is case-insensitive
/// (RFC 7235): `bearer` and `BEARER` are accepted too.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once([' ', '\t'])?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Refuses a request body not sent as JSON with 415. Only `application/json` (any case,
/// with parameters; a charset must be UTF-8) is read: a browser sends a cross-site form or
/// `text/plain` body without asking first, and must not be able to insert records.
fn require_json(headers: &HeaderMap) -> Result<(), ApiError> {
    let unsupported = |message: String| {
        ApiError::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, message).field("Content-Type")
    };
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Err(unsupported(
            "missing content type: send the records as JSON with `Content-Type: application/json`"
                .to_owned(),
        ));
    };
    let Ok(value) = value.to_str() else {
        return Err(unsupported(
            "unsupported content type (not ASCII): send the records as JSON with `Content-Type: application/json`"
                .to_owned(),
        ));
    };
    let mut parts = value.split(';');
    let essence = parts.next().unwrap_or_default().trim();
    if !essence.eq_ignore_ascii_case("application/json") {
        return Err(unsupported(format!(
            "unsupported content type {essence:?}: send the records as JSON with `Content-Type: application/json`"
        )));
    }
    for parameter in parts {
        let Some((name, charset)) = parameter.split_once('=') else {
            continue;
        };
        let charset = charset.trim().trim_matches('"');
        if name.trim().eq_ignore_ascii_case("charset")
            && !charset.eq_ignore_ascii_case("utf-8")
            && !charset.eq_ignore_ascii_case("utf8")
        {
            return Err(unsupported(format!(
                "unsupported charset {charset:?} in the content type: JSON bodies are UTF-8; send `Content-Type: application/json`"
            )));
        }
    }
    Ok(())
}

/// The `{id}` of a path, or 400 naming it (an id that is not UTF-8 once percent-decoded).
pub(super) fn path_id(path: Result<Path<String>, PathRejection>) -> Result<String, ApiError> {
    path.map(|Path(id)| id).map_err(|e| {
        ApiError::bad_request(
            "id",
            format!(
                "the record id in the path is not valid once percent-decoded ({}): percent-encode the id's UTF-8 bytes",
                e.body_text()
            ),
        )
    })
}

/// Compares without an early exit, so timing does not reveal how much of a guess matched.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub(super) async fn not_found(method: Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!("no endpoint {method} {}; see /v1/openapi.json", uri.path()),
    )
}

pub(super) async fn method_not_allowed(method: Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!(
            "{method} is not allowed on {}; see /v1/openapi.json",
            uri.path()
        ),
    )
}

async fn read_body(app: &App, body: Body) -> Result<Bytes, ApiError> {
    axum::body::to_bytes(body, app.max_body_bytes)
        .await
        .map_err(|e| {
            let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
            let mut too_long = false;
            while let Some(s) = source {
                too_long |= s.to_string().contains("length limit exceeded");
                source = s.source();
            }
            if too_long {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!(
                        "request body larger than {} bytes (--max-body-bytes)",
                        app.max_body_bytes
                    ),
                )
                .field("body")
            } else {
                ApiError::bad_request("body", format!("reading the request body: {e}"))
            }
        })
}

/// Reads a JSON request body (refusing other content types and bodies over the limit).
pub(super) async fn json_body(
    app: &App,
    headers: &HeaderMap,
    body: Body,
) -> Result<Bytes, ApiError> {
    require_json(headers)?;
    read_body(app, body).await
}

/// Reads, parses and validates a request's records; `true` when it was a batch.
pub(super) async fn records_of(
    app: &App,
    headers: &HeaderMap,
    body: Body,
    require_id: bool,
) -> Result<(Vec<Record>, bool), ApiError> {
    require_json(headers)?;
    let bytes = read_body(app, body).await?;
    match api::parse_body(&bytes)? {
        api::Body::One(r) => Ok((vec![app.conversion.convert(*r, "", require_id)?], false)),
        api::Body::Many(rs) => {
            if rs.len() > app.max_batch {
                return Err(ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!(
                        "{} records in one request; at most {} (--max-batch)",
                        rs.len(),
                        app.max_batch
                    ),
                )
                .field("body"));
            }
            let records = rs
                .into_iter()
                .enumerate()
                .map(|(i, r)| app.conversion.convert(r, &format!("[{i}]."), require_id))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((records, true))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_scheme_is_case_insensitive() {
        for (value, token) in [
            ("Bearer s3cret", Some("s3cret")),
            ("bearer s3cret", Some("s3cret")),
            ("BEARER s3cret", Some("s3cret")),
            ("  Bearer \t s3cret  ", Some("s3cret")),
            ("Bearer", None),
            ("Bearer ", None),
            ("Bearers3cret", None),
            ("Basic s3cret", None),
            ("s3cret", None),
        ] {
            assert_eq!(bearer_token(value), token, "{value:?}");
        }
    }

    #[test]
    fn only_json_bodies_are_read() {
        for (content_type, accepted) in [
            (Some("application/json"), true),
            (Some("Application/JSON"), true),
            (Some("application/json; charset=utf-8"), true),
            (Some("application/json;charset=\"UTF-8\""), true),
            (Some("application/json; charset=latin1"), false),
            (Some("text/plain"), false),
            (Some("text/plain; charset=utf-8"), false),
            (Some("application/x-www-form-urlencoded"), false),
            (Some("multipart/form-data; boundary=x"), false),
            (Some("application/jsonx"), false),
            (Some(""), false),
            (None, false),
        ] {
            let mut headers = HeaderMap::new();
            if let Some(t) = content_type {
                headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(t));
            }
            match require_json(&headers) {
                Ok(()) => assert!(accepted, "{content_type:?} accepted"),
                Err(e) => {
                    assert!(!accepted, "{content_type:?} refused: {}", e.message);
                    assert_eq!(e.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
                    assert_eq!(e.field.as_deref(), Some("Content-Type"));
                    assert!(e.message.contains("application/json"), "{}", e.message);
                }
            }
        }
    }

    #[test]
    fn token_comparison() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
    }
}

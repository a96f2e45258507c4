//! The one trust filter for frames from a Lean worker, shared by every
//! LSP path: the pool's driver (`connection.rs`, with the document
//! session's record in `session.rs`) and the leased-worker gate
//! (`leased`, for the daemon's `lease` tunnel and `leanpool lsp`).
//! [`classify`] checks a message's shape and sorts it (an answer, a
//! request of Lean's, a notification); [`report`] checks what a
//! notification may say: only progress and diagnostics of the worker's
//! own document, for a version that was sent; the notifications Lean
//! sends for its watchdog are ignored; anything else is a [`Violation`].
//! Whose answers are awaited and which versions were sent is the caller's
//! state (its `Pending`, its record of versions).

use serde_json::{Map, Value};

/// Notifications Lean's file worker sends besides progress and
/// diagnostics; accepted and ignored. Any other notification is out of
/// place.
pub const IGNORED_NOTIFICATIONS: &[&str] = &[
    // Lean's file worker reports its reference index (`.ilean`) and import
    // information to the watchdog with these; none carries a verdict.
    // (Names from the Lean 4.28 server; `$/lean/ileanHeaderInfo` is sent
    // after the header is processed, seen on the WASM build.)
    "$/lean/ileanHeaderInfo",
    "$/lean/ileanHeaderSetupInfo",
    "$/lean/ileanInfoUpdate",
    "$/lean/ileanInfoFinal",
    "$/lean/importClosure",
    "$/lean/staleDependency",
    "window/logMessage",
];

/// A frame on the worker's stdout that the driver did not ask for. Each
/// one marks the worker compromised; the text (`Display`) is what
/// [`crate::WorkerError::Compromised`] carries (and a leased worker's
/// [`crate::leased::Forged`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum Violation {
    #[error("malformed frame: {0}")]
    MalformedFrame(String),
    #[error("a frame that is not JSON: {0}")]
    NotJson(String),
    #[error("a message that is not a JSON object")]
    NotAnObject,
    #[error("a message whose `method` is not a string")]
    MethodNotAString,
    #[error("a message with neither method nor id")]
    NeitherMethodNorId,
    #[error("an answer with id {0}, which the driver never sends")]
    ForeignId(Value),
    #[error("an answer to request {0}, which is not waiting for one")]
    Unasked(i64),
    /// A notification the handler knows whose params do not parse.
    #[error("a malformed {method}: {error}")]
    Malformed { method: &'static str, error: String },
    #[error("a {what} for another document ({uri})")]
    OtherDocument { what: &'static str, uri: String },
    #[error("a {what} without a version")]
    NoVersion { what: &'static str },
    #[error("a {what} for version {version}, which was never sent (newest: {newest})")]
    UnsentVersion {
        what: &'static str,
        version: i32,
        newest: i32,
    },
    #[error("an unexpected notification `{0}`")]
    UnexpectedNotification(String),
}

/// One message from Lean, sorted by its shape.
#[derive(Debug)]
pub(crate) enum Frame<'a> {
    /// An answer to request `id` (the caller checks it asked).
    Answer {
        id: i64,
        result: Option<&'a Value>,
        error: Option<&'a Map<String, Value>>,
    },
    /// A request of Lean's own (refreshes).
    Request { id: &'a Value, method: &'a str },
    /// A notification (`params` `Null` when missing).
    Notification { method: &'a str, params: &'a Value },
}

/// Sorts a message, or names why it is no LSP message Lean may send.
pub(crate) fn classify(msg: &Value) -> Result<Frame<'_>, Violation> {
    let Value::Object(obj) = msg else {
        return Err(Violation::NotAnObject);
    };
    let method = match obj.get("method") {
        None => None,
        Some(Value::String(m)) => Some(m.as_str()),
        Some(_) => return Err(Violation::MethodNotAString),
    };
    match (method, obj.get("id")) {
        (Some(method), Some(id)) => Ok(Frame::Request { id, method }),
        (Some(method), None) => Ok(Frame::Notification {
            method,
            params: obj.get("params").unwrap_or(&Value::Null),
        }),
        (None, Some(id)) => Ok(Frame::Answer {
            id: id
                .as_i64()
                .ok_or_else(|| Violation::ForeignId(id.clone()))?,
            result: obj.get("result"),
            error: obj.get("error").and_then(Value::as_object),
        }),
        (None, None) => Err(Violation::NeitherMethodNorId),
    }
}

/// What an accepted notification reports on.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Report {
    /// `$/lean/fileProgress` of this version.
    Progress(i32),
    /// `textDocument/publishDiagnostics` of this version.
    Diagnostics(i32),
    /// One of [`IGNORED_NOTIFICATIONS`].
    Ignored,
}

/// Checks a notification from Lean: progress or diagnostics about the
/// document `uri`, for a version `sent` says was sent (`newest`: the
/// newest sent, for the message), or one of the ignored ones.
pub(crate) fn report(
    method: &str,
    params: &Value,
    uri: &str,
    sent: impl Fn(i32) -> bool,
    newest: i32,
) -> Result<Report, Violation> {
    let (what, doc, version): (&'static str, &Value, &Value) = match method {
        "$/lean/fileProgress" => (
            "fileProgress",
            &params["textDocument"]["uri"],
            &params["textDocument"]["version"],
        ),
        "textDocument/publishDiagnostics" => {
            ("publishDiagnostics", &params["uri"], &params["version"])
        }
        m if IGNORED_NOTIFICATIONS.contains(&m) => return Ok(Report::Ignored),
        m => return Err(Violation::UnexpectedNotification(m.to_string())),
    };
    if !params.is_object() {
        return Err(Violation::Malformed {
            method: what,
            error: "its params are not an object".into(),
        });
    }
    if doc.as_str() != Some(uri) {
        return Err(Violation::OtherDocument {
            what,
            uri: doc.as_str().map_or_else(|| doc.to_string(), str::to_string),
        });
    }
    let Some(v) = version.as_i64() else {
        return Err(Violation::NoVersion { what });
    };
    let v = i32::try_from(v).unwrap_or(i32::MAX);
    if v < 1 || !sent(v) {
        return Err(Violation::UnsentVersion {
            what,
            version: v,
            newest,
        });
    }
    Ok(match what {
        "fileProgress" => Report::Progress(v),
        _ => Report::Diagnostics(v),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const URI: &str = "file:///leanpool/Doc.lean";

    #[test]
    fn shapes_lean_may_not_send_are_violations() {
        for (msg, want) in [
            (json!([1]), Violation::NotAnObject),
            (json!({ "method": 1 }), Violation::MethodNotAString),
            (json!({ "jsonrpc": "2.0" }), Violation::NeitherMethodNorId),
            (
                json!({ "id": "x", "result": 1 }),
                Violation::ForeignId(json!("x")),
            ),
        ] {
            assert_eq!(classify(&msg).unwrap_err(), want, "{msg}");
        }
        assert!(matches!(
            classify(&json!({ "id": 3, "result": 1 })).unwrap(),
            Frame::Answer { id: 3, .. }
        ));
    }

    #[test]
    fn reports_only_on_this_document_and_sent_versions() {
        let d = |uri: &str, v: Value| json!({ "uri": uri, "version": v, "diagnostics": [] });
        let sent = |v: i32| v <= 3;
        let r = |p: &Value| report("textDocument/publishDiagnostics", p, URI, sent, 3);
        assert_eq!(r(&d(URI, json!(3))).unwrap(), Report::Diagnostics(3));
        assert!(matches!(
            r(&d("file:///x", json!(3))),
            Err(Violation::OtherDocument { .. })
        ));
        assert!(matches!(
            r(&d(URI, json!(4))),
            Err(Violation::UnsentVersion { .. })
        ));
        assert!(matches!(
            r(&d(URI, json!(0))),
            Err(Violation::UnsentVersion { .. })
        ));
        assert!(matches!(
            r(&d(URI, Value::Null)),
            Err(Violation::NoVersion { .. })
        ));
        let p = json!({ "textDocument": { "uri": URI, "version": 2 }, "processing": [] });
        assert_eq!(
            report("$/lean/fileProgress", &p, URI, sent, 3).unwrap(),
            Report::Progress(2)
        );
        assert_eq!(
            report("$/lean/ileanInfoFinal", &p, URI, sent, 3).unwrap(),
            Report::Ignored
        );
        assert!(report("window/showMessage", &p, URI, sent, 3).is_err());
    }
}

//! The LSP messages leanpool exchanges with a Lean file worker: standard
//! ones from `lsp-types`, Lean's own extensions as small serde structs.

use leanpool_protocol::{Diagnostic, Position, Range, Severity};
use lsp_types::{
    ClientCapabilities, ClientInfo, DiagnosticSeverity, InitializeParams,
    PublishDiagnosticsClientCapabilities, TextDocumentClientCapabilities, TextDocumentItem, Url,
    VersionedTextDocumentIdentifier,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// `$/lean/fileProgress`: the ranges still being elaborated for a version;
/// empty `processing` means that version is done.
#[derive(Debug, Clone, Deserialize)]
pub struct FileProgressParams {
    #[serde(rename = "textDocument")]
    /// The document and the version the progress is about.
    pub text_document: VersionedTextDocumentIdentifier,
    /// Ranges still being elaborated.
    pub processing: Vec<FileProgressProcessingInfo>,
}

#[derive(Debug, Clone, Deserialize)]
/// One range Lean is still working on.
pub struct FileProgressProcessingInfo {
    /// The range, in the document's coordinates.
    pub range: lsp_types::Range,
    #[serde(default)]
    /// Lean's kind of work (1 processing, 2 fatal error), when sent.
    pub kind: Option<u32>,
}

/// Lean's `textDocument/didOpen` params: the standard ones plus
/// `dependencyBuildMode` (`never`: a worker must not try to build imports).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeanDidOpenTextDocumentParams {
    /// The document: URI, language, version 1 and the full text.
    pub text_document: TextDocumentItem,
    /// `never`: the worker must not build imports.
    pub dependency_build_mode: &'static str,
}

/// `textDocument/waitForDiagnostics`: answered once every diagnostic of
/// `version` has been sent (on the same ordered stream, so the answer is a
/// barrier).
#[derive(Debug, Clone, Serialize)]
pub struct WaitForDiagnosticsParams {
    /// The document.
    pub uri: Url,
    /// The version whose diagnostics must all have been sent.
    pub version: i32,
}

/// `$/lean/rpc/connect` answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcConnected {
    /// The session id to pass to every `$/lean/rpc/call` (an opaque JSON value).
    pub session_id: Value,
}

/// `initialize` params: what the Lean VS Code extension announces, minus
/// what a headless client does not do. `hasWidgets` makes the worker
/// serve the interactive (widget) RPC methods.
#[allow(deprecated)] // root_uri/root_path are deprecated fields of the struct
pub fn initialize_params() -> InitializeParams {
    InitializeParams {
        process_id: Some(std::process::id()),
        root_path: None,
        root_uri: None,
        initialization_options: Some(json!({ "hasWidgets": true })),
        capabilities: ClientCapabilities {
            text_document: Some(TextDocumentClientCapabilities {
                publish_diagnostics: Some(PublishDiagnosticsClientCapabilities {
                    related_information: Some(true),
                    version_support: Some(true),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        },
        trace: None,
        workspace_folders: None,
        client_info: Some(ClientInfo {
            name: "leanpool".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        }),
        locale: None,
    }
}

/// A JSON-RPC request message with `id`.
pub fn request(id: i64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// A JSON-RPC notification message (no id, no answer).
pub fn notification(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

/// Reply to a request the server sent us (we have nothing to say).
pub fn null_response(id: &Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": null })
}

/// A protocol position as an LSP one (same coordinates: 0-based line,
/// UTF-16 column).
pub fn position_to_lsp(p: Position) -> lsp_types::Position {
    lsp_types::Position {
        line: p.line,
        character: p.character,
    }
}

/// An LSP position as a protocol one (same coordinates).
pub fn position_from_lsp(p: lsp_types::Position) -> Position {
    Position {
        line: p.line,
        character: p.character,
    }
}

/// An LSP range as a protocol one (same coordinates).
pub fn range_from_lsp(r: lsp_types::Range) -> Range {
    Range {
        start: position_from_lsp(r.start),
        end: position_from_lsp(r.end),
    }
}

/// A diagnostic as Lean's `publishDiagnostics` sends it: the LSP fields
/// leanpool uses plus Lean's `fullRange`. Lean cuts `range` to the first
/// line of a multi-line diagnostic (so editors do not underline whole
/// blocks) and sends the real extent, the one its command line prints, as
/// `fullRange`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeanDiagnostic {
    /// The LSP range: cut to the first line of a multi-line message.
    pub range: lsp_types::Range,
    #[serde(default)]
    /// The message's real extent (Lean's extension), when sent.
    pub full_range: Option<lsp_types::Range>,
    #[serde(default)]
    /// Error, warning, information or hint; absent counts as error.
    pub severity: Option<DiagnosticSeverity>,
    /// Lean's text.
    pub message: String,
    #[serde(default)]
    /// LSP `code`: Lean 4.28 sends the name of a *named error* here
    /// (`errorNameOfKind?` of the message's kind), nothing for others.
    pub code: Option<Value>,
    #[serde(default)]
    /// LSP `tags`, which Lean derives from the message's own tag (not its
    /// text): 1 (`unnecessary`) for the `linter.unusedVariables` linter, 2
    /// (`deprecated`) for the `linter.deprecated` linter.
    pub tags: Option<Vec<Value>>,
    #[serde(default)]
    /// Lean's `leanTags` (from the message's tag): 1 unsolved goals, 2
    /// goals accomplished.
    pub lean_tags: Option<Vec<Value>>,
}

/// One of Lean's messages with what Lean attached to it besides its text:
/// the evidence `leanpool_methods::verdict` recognises messages by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeanMessage {
    /// The message as leanpool reports it.
    pub diagnostic: Diagnostic,
    /// Lean's error name (LSP `code`), when it sent one.
    pub code: Option<String>,
    /// LSP diagnostic tags (1 unnecessary, 2 deprecated).
    pub tags: Vec<u64>,
    /// Lean's `leanTags` (1 unsolved goals, 2 goals accomplished).
    pub lean_tags: Vec<u64>,
}

fn numbers(v: &Option<Vec<Value>>) -> Vec<u64> {
    v.iter().flatten().filter_map(Value::as_u64).collect()
}

/// A Lean diagnostic with its evidence (see [`LeanMessage`]).
pub fn message_from_lsp(d: &LeanDiagnostic) -> LeanMessage {
    LeanMessage {
        diagnostic: diagnostic_from_lsp(d),
        code: d.code.as_ref().map(|c| match c {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }),
        tags: numbers(&d.tags),
        lean_tags: numbers(&d.lean_tags),
    }
}

/// `textDocument/publishDiagnostics` params with [`LeanDiagnostic`]s.
#[derive(Debug, Clone, Deserialize)]
pub struct LeanPublishDiagnosticsParams {
    /// The document the diagnostics are about.
    pub uri: Url,
    #[serde(default)]
    /// The document version they are for; the driver refuses a message
    /// without one (a protocol violation).
    pub version: Option<i32>,
    /// Every diagnostic of that version so far (each message replaces
    /// the previous list).
    pub diagnostics: Vec<LeanDiagnostic>,
}

/// Lean diagnostic -> leanpool's: `fullRange` when Lean sent one, else
/// `range`. Lean always sets a severity; a missing one is treated as an
/// error (LSP leaves it to the client).
pub fn diagnostic_from_lsp(d: &LeanDiagnostic) -> Diagnostic {
    let severity = match d.severity {
        Some(DiagnosticSeverity::WARNING) => Severity::Warning,
        Some(DiagnosticSeverity::INFORMATION) => Severity::Information,
        Some(DiagnosticSeverity::HINT) => Severity::Hint,
        _ => Severity::Error,
    };
    Diagnostic {
        severity,
        range: range_from_lsp(d.full_range.unwrap_or(d.range)),
        message: d.message.clone(),
    }
}

/// The one document name every worker uses. Lean embeds the document's
/// URI in what it says about the file (a `private` declaration's name is
/// `_private.«external:<uri>».0.<name>`), so the URI must be the same on
/// every worker, in every daemon, for identical requests to get identical
/// answers: no pid, no counter. Each worker process has exactly one
/// document open, so nothing needs the name to be unique.
pub const DOCUMENT_NAME: &str = "Doc.lean";

/// A file URI for a document name (only used as the document's identity;
/// nothing is read from it).
pub fn document_uri(name: &str) -> Url {
    format!("file:///leanpool/{name}")
        .parse()
        .expect("valid file URI")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_progress_parses_lean_shape() {
        let v = json!({"textDocument":{"uri":"file:///leanpool/a.lean","version":3},
            "processing":[{"range":{"start":{"line":0,"character":0},"end":{"line":2,"character":0}},"kind":1}]});
        let p: FileProgressParams = serde_json::from_value(v).unwrap();
        assert_eq!(p.text_document.version, 3);
        assert_eq!(p.processing.len(), 1);
        let done: FileProgressParams = serde_json::from_value(
            json!({"textDocument":{"uri":"file:///leanpool/a.lean","version":4},"processing":[]}),
        )
        .unwrap();
        assert!(done.processing.is_empty());
    }

    #[test]
    fn did_open_carries_dependency_build_mode() {
        let p = LeanDidOpenTextDocumentParams {
            text_document: TextDocumentItem {
                uri: document_uri("w1.lean"),
                language_id: "lean4".into(),
                version: 1,
                text: "import Init\n".into(),
            },
            dependency_build_mode: "never",
        };
        let v = serde_json::to_value(p).unwrap();
        assert_eq!(v["dependencyBuildMode"], "never");
        assert_eq!(v["textDocument"]["languageId"], "lean4");
        assert_eq!(v["textDocument"]["uri"], "file:///leanpool/w1.lean");
    }

    #[test]
    fn initialize_announces_widgets() {
        let v = serde_json::to_value(initialize_params()).unwrap();
        assert_eq!(v["initializationOptions"]["hasWidgets"], true);
        assert_eq!(
            v["capabilities"]["textDocument"]["publishDiagnostics"]["versionSupport"],
            true
        );
    }

    #[test]
    fn full_range_wins_over_the_truncated_range() {
        // As Lean 4.28 sends a multi-line error: `range` cut at the start
        // of the next line, `fullRange` the real extent.
        let p: LeanPublishDiagnosticsParams = serde_json::from_value(json!({
            "uri": "file:///leanpool/Doc.lean", "version": 2,
            "diagnostics": [{
                "range":{"start":{"line":0,"character":25},"end":{"line":1,"character":0}},
                "fullRange":{"start":{"line":0,"character":25},"end":{"line":2,"character":40}},
                "severity":1, "source":"Lean 4", "message":"type mismatch"},
                {"range":{"start":{"line":3,"character":1},"end":{"line":3,"character":4}},
                "severity":2, "message":"unused"}]}))
        .unwrap();
        assert_eq!(p.version, Some(2));
        let d = diagnostic_from_lsp(&p.diagnostics[0]);
        assert_eq!(
            d.range.start,
            Position {
                line: 0,
                character: 25
            }
        );
        assert_eq!(
            d.range.end,
            Position {
                line: 2,
                character: 40
            }
        );
        assert_eq!(d.severity, Severity::Error);
        // No fullRange: the range is all there is.
        let d = diagnostic_from_lsp(&p.diagnostics[1]);
        assert_eq!(
            d.range.end,
            Position {
                line: 3,
                character: 4
            }
        );
        assert_eq!(d.severity, Severity::Warning);
    }

    #[test]
    fn document_uri_is_the_same_in_every_process() {
        // Nothing process-specific: the URI ends up in answers.
        let u = document_uri(DOCUMENT_NAME);
        assert_eq!(u.as_str(), "file:///leanpool/Doc.lean");
        assert!(!u.as_str().contains(&std::process::id().to_string()));
    }

    #[test]
    fn diagnostic_severity_mapping() {
        let d: LeanDiagnostic = serde_json::from_value(json!({
            "range":{"start":{"line":1,"character":2},"end":{"line":1,"character":5}},
            "severity":2,"message":"declaration uses 'sorry'"}))
        .unwrap();
        let d = diagnostic_from_lsp(&d);
        assert_eq!(d.severity, Severity::Warning);
        assert_eq!(
            d.range.start,
            Position {
                line: 1,
                character: 2
            }
        );
    }
}

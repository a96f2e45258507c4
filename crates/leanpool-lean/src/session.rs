//! The one warm document of a Lean worker: its versions and edits, the
//! header it starts with, the check flow (send a version, wait until Lean
//! reports it done, take its diagnostics behind the `waitForDiagnostics`
//! barrier) and the RPC session for Lean's widget methods (the document
//! half of a [`Worker`]; the connection half is `connection.rs`).
//!
//! **Trust rules enforced here** (docs/threat-model.md): a
//! notification is accepted only if it is one Lean's file worker sends
//! (progress, diagnostics, and a short list of index notifications, which
//! carry no verdict) and, for progress and diagnostics, only if it names
//! this document and a version that was sent ([`DocState`]); anything else
//! is a [`Violation`] and the connection marks the worker compromised. The
//! diagnostics returned for a check are those of exactly the version sent
//! for it: a later message of an older version never replaces them, and a
//! version Lean published nothing for has none.
//!
//! [`Worker`]: crate::Worker

use crate::connection::{Connection, Notifications, Violation};
use crate::error::WorkerError;
use crate::frames::{self, Report};
use crate::lsp;
use lsp_types::{
    DidChangeTextDocumentParams, TextDocumentContentChangeEvent, TextDocumentItem, Url,
    VersionedTextDocumentIdentifier,
};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tokio::time::Instant as TokioInstant;

/// The connection a session runs on.
pub(crate) type Conn = Connection<DocState>;

/// Reconnect an RPC session that has been idle this long: Lean expires
/// sessions that receive no keep-alive for about 30 s.
const RPC_SESSION_IDLE: Duration = Duration::from_secs(20);

/// What Lean has said about the document: kept by the connection's reader
/// (as its [`Notifications`] handler), read by the session.
pub(crate) struct DocState {
    /// The document's URI: the only one Lean may report about.
    uri: String,
    /// The newest document version sent (1 = `didOpen`): a version above
    /// it was never sent, so a frame naming one is forged.
    sent_version: i32,
    /// Highest version reported done (`fileProgress` with nothing left).
    done_version: i32,
    /// Latest `publishDiagnostics` and the version it was for.
    diagnostics: Option<(i32, Vec<lsp::LeanDiagnostic>)>,
    /// `publishDiagnostics` that arrived after their version was reported
    /// done: how often the `waitForDiagnostics` barrier mattered.
    late_diagnostics: u64,
}

impl DocState {
    /// A notification about the document must name this worker's
    /// document and a version that was sent (the shared frame filter,
    /// `frames::report`).
    fn check_report(&self, method: &str, params: &Value) -> Result<Report, Violation> {
        let newest = self.sent_version;
        frames::report(method, params, &self.uri, |v| v <= newest, newest)
    }

    /// A checked `fileProgress` (see [`DocState::check_report`]).
    fn file_progress(&mut self, params: &Value) -> Result<(), Violation> {
        let p = serde_json::from_value::<lsp::FileProgressParams>(params.clone()).map_err(|e| {
            Violation::Malformed {
                method: "fileProgress",
                error: e.to_string(),
            }
        })?;
        if p.processing.is_empty() {
            self.done_version = self.done_version.max(p.text_document.version);
        }
        Ok(())
    }

    /// A checked `publishDiagnostics` (see [`DocState::check_report`]).
    fn publish_diagnostics(&mut self, params: &Value) -> Result<(), Violation> {
        let p = serde_json::from_value::<lsp::LeanPublishDiagnosticsParams>(params.clone())
            .map_err(|e| Violation::Malformed {
                method: "publishDiagnostics",
                error: e.to_string(),
            })?;
        let version = p.version.expect("checked");
        // Never let a late message of an older version win.
        let newer = match &self.diagnostics {
            Some((v, _)) => *v <= version,
            None => true,
        };
        if newer {
            self.diagnostics = Some((version, p.diagnostics));
        }
        if version <= self.done_version {
            self.late_diagnostics += 1;
        }
        Ok(())
    }

    /// `publishDiagnostics` that came after their version's done progress.
    pub fn late_diagnostics(&self) -> u64 {
        self.late_diagnostics
    }
}

impl Notifications for DocState {
    fn notification(&mut self, method: &str, params: &Value) -> Result<(), Violation> {
        match self.check_report(method, params)? {
            Report::Progress(_) => self.file_progress(params),
            Report::Diagnostics(_) => self.publish_diagnostics(params),
            Report::Ignored => Ok(()),
        }
    }
}

/// The document session: what the driver sent and the RPC session. Its
/// methods run on the connection they are given (the [`Worker`]'s).
///
/// [`Worker`]: crate::Worker
pub(crate) struct Session {
    uri: Url,
    header: String,
    /// The newest version sent.
    version: i32,
    /// `elaborate` calls served.
    uses: u64,
    /// The version once the header (and warm-up body) were done: while
    /// the document is still at it, no caller's text has reached Lean.
    ready_version: i32,
    rpc_session: Option<(Value, Instant)>,
    rpc_refs_released: u64,
}

impl Session {
    /// A session for a document holding `header` (not yet opened), and the
    /// record its connection keeps.
    pub fn new(header: &str) -> (Session, DocState) {
        let uri = lsp::document_uri(lsp::DOCUMENT_NAME);
        let doc = DocState {
            uri: uri.as_str().to_string(),
            sent_version: 1,
            done_version: 0,
            diagnostics: None,
            late_diagnostics: 0,
        };
        let session = Session {
            uri,
            header: header.to_string(),
            version: 1,
            uses: 0,
            ready_version: 0,
            rpc_session: None,
            rpc_refs_released: 0,
        };
        (session, doc)
    }

    /// The file-worker handshake. Unlike a full LSP server, Lean's file
    /// worker (normally driven by the watchdog, which answers `initialize`
    /// itself) reads `initialize` and then expects `didOpen` at once; it
    /// does not answer `initialize` and needs no `initialized`. So the
    /// request is sent without waiting, and "ready" means the header's
    /// version is reported done. Then the warm-up body, if any.
    pub async fn open(
        &mut self,
        conn: &mut Conn,
        deadline: TokioInstant,
        warmup: Option<&str>,
    ) -> Result<(), WorkerError> {
        let init = serde_json::to_value(lsp::initialize_params()).expect("serializable");
        conn.request_unwaited("initialize", init)?;
        let open = lsp::LeanDidOpenTextDocumentParams {
            text_document: TextDocumentItem {
                uri: self.uri.clone(),
                language_id: "lean4".into(),
                version: self.version,
                text: self.header.clone(),
            },
            dependency_build_mode: "never",
        };
        conn.notify(
            "textDocument/didOpen",
            serde_json::to_value(open).expect("serializable"),
        )?;
        Self::wait_done(conn, self.version, deadline).await?;
        if let Some(body) = warmup {
            let text = format!("{}{body}", self.header);
            self.change(conn, &text)?;
            self.finish_version(conn, self.version, deadline).await?;
        }
        self.ready_version = self.version;
        Ok(())
    }

    /// Sends the whole new text as the next version.
    fn change(&mut self, conn: &mut Conn, text: &str) -> Result<(), WorkerError> {
        self.version += 1;
        // Before the send: Lean may answer before this returns.
        let version = self.version;
        conn.handler_mut(|d| d.sent_version = version);
        let change = DidChangeTextDocumentParams {
            text_document: VersionedTextDocumentIdentifier {
                uri: self.uri.clone(),
                version: self.version,
            },
            content_changes: vec![TextDocumentContentChangeEvent {
                range: None,
                range_length: None,
                text: text.into(),
            }],
        };
        conn.notify(
            "textDocument/didChange",
            serde_json::to_value(change).expect("serializable"),
        )
    }

    /// Replaces the document with `text` (which must start with the
    /// header) and returns the diagnostics of that version, in `text`'s
    /// coordinates. Kills nothing: the caller decides what a timeout
    /// costs.
    pub async fn elaborate(
        &mut self,
        conn: &mut Conn,
        text: &str,
        deadline: TokioInstant,
    ) -> Result<Vec<lsp::LeanMessage>, WorkerError> {
        if !text.starts_with(&self.header) {
            return Err(WorkerError::Internal(
                "text does not start with this worker's header".into(),
            ));
        }
        self.uses += 1;
        self.change(conn, text)?;
        self.finish_version(conn, self.version, deadline).await
    }

    /// Waits for `version` to be done, then uses `waitForDiagnostics` as
    /// a barrier: its answer follows every diagnostic of the version on
    /// the same ordered stream, so the latest diagnostics seen then are
    /// final whether they came before or after the done progress.
    async fn finish_version(
        &mut self,
        conn: &mut Conn,
        version: i32,
        deadline: TokioInstant,
    ) -> Result<Vec<lsp::LeanMessage>, WorkerError> {
        Self::wait_done(conn, version, deadline).await?;
        let params = lsp::WaitForDiagnosticsParams {
            uri: self.uri.clone(),
            version,
        };
        conn.call(
            "textDocument/waitForDiagnostics",
            serde_json::to_value(params).expect("serializable"),
            deadline,
        )
        .await?;
        Ok(conn.handler(|d| match &d.diagnostics {
            Some((v, diags)) if *v == version => diags.iter().map(lsp::message_from_lsp).collect(),
            // Lean publishes for every version it elaborates; none at all
            // means nothing to report.
            _ => vec![],
        }))
    }

    /// Waits until Lean reports `version` fully elaborated.
    async fn wait_done(
        conn: &mut Conn,
        version: i32,
        deadline: TokioInstant,
    ) -> Result<(), WorkerError> {
        conn.wait_until(deadline, |d| d.done_version >= version)
            .await
    }

    /// `$/lean/rpc/call` of `method` at `position` of the document,
    /// connecting an RPC session first when there is none (or it may have
    /// expired); retried once if Lean asks to reconnect. Kills nothing.
    pub async fn rpc_call(
        &mut self,
        conn: &mut Conn,
        method: &str,
        position: lsp_types::Position,
        params: Value,
        deadline: TokioInstant,
    ) -> Result<Value, WorkerError> {
        let mut retried = false;
        loop {
            let session = match &self.rpc_session {
                Some((id, last)) if last.elapsed() < RPC_SESSION_IDLE => id.clone(),
                _ => {
                    let v = conn
                        .call("$/lean/rpc/connect", json!({ "uri": self.uri }), deadline)
                        .await?;
                    let connected: lsp::RpcConnected = serde_json::from_value(v)
                        .map_err(|e| WorkerError::Protocol(e.to_string()))?;
                    connected.session_id
                }
            };
            self.rpc_session = Some((session.clone(), Instant::now()));
            let call = json!({
                "textDocument": { "uri": self.uri },
                "position": position,
                "sessionId": session,
                "method": method,
                "params": params,
            });
            match conn.call("$/lean/rpc/call", call, deadline).await {
                Err(WorkerError::Lsp {
                    code: leanpool_protocol::lsp_error::LEAN_RPC_NEEDS_RECONNECT,
                    ..
                }) if !retried => {
                    retried = true;
                    self.rpc_session = None;
                }
                r => return r,
            }
        }
    }

    /// Releases RPC references of the current session (see
    /// [`crate::Worker::rpc_release`]).
    pub fn rpc_release(&mut self, conn: &mut Conn, refs: Vec<Value>) -> Result<(), WorkerError> {
        let Some((session, _)) = &self.rpc_session else {
            return Ok(());
        };
        if refs.is_empty() {
            return Ok(());
        }
        self.rpc_refs_released += refs.len() as u64;
        let params = json!({ "uri": self.uri, "sessionId": session.clone(), "refs": refs });
        conn.notify("$/lean/rpc/release", params)
    }

    pub fn uri(&self) -> &Url {
        &self.uri
    }

    pub fn header(&self) -> &str {
        &self.header
    }

    pub fn version(&self) -> i32 {
        self.version
    }

    /// Whether the document holds only what `open` sent (header and
    /// warm-up body) and no RPC session was opened: no caller's text or
    /// request has reached this process.
    pub fn pristine(&self) -> bool {
        self.version == self.ready_version && self.rpc_session.is_none()
    }

    pub fn uses(&self) -> u64 {
        self.uses
    }

    pub fn rpc_refs_released(&self) -> u64 {
        self.rpc_refs_released
    }
}

/// Appends every RPC reference in `v` to `out`: Lean encodes one as an
/// object whose only field is `"p"` (a string), e.g. the `info` of a
/// subexpression in interactive goals. Duplicates are kept out.
pub fn collect_rpc_refs(v: &Value, out: &mut Vec<Value>) {
    let is_ref =
        matches!(v, Value::Object(m) if m.len() == 1 && m.get("p").is_some_and(Value::is_string));
    if is_ref {
        if !out.contains(v) {
            out.push(v.clone());
        }
        return;
    }
    match v {
        Value::Object(m) => m.values().for_each(|x| collect_rpc_refs(x, out)),
        Value::Array(a) => a.iter().for_each(|x| collect_rpc_refs(x, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::IGNORED_NOTIFICATIONS;

    fn doc() -> DocState {
        Session::new("import Init\n").1
    }

    fn progress(uri: &str, version: i32, processing: bool) -> Value {
        let busy =
            json!([{"range":{"start":{"line":0,"character":0},"end":{"line":1,"character":0}}}]);
        json!({"textDocument":{"uri":uri,"version":version},"processing": if processing { busy } else { json!([]) }})
    }

    fn diags(uri: &str, version: Option<i32>, message: &str) -> Value {
        json!({"uri":uri,"version":version,"diagnostics":[
            {"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}},"severity":1,"message":message}]})
    }

    const URI: &str = "file:///leanpool/Doc.lean";

    #[test]
    fn notifications_for_another_document_are_violations() {
        let mut d = doc();
        let other = "file:///leanpool/Other.lean";
        let e = d
            .notification("$/lean/fileProgress", &progress(other, 1, false))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("a fileProgress for another document ({other})")
        );
        let e = d
            .notification(
                "textDocument/publishDiagnostics",
                &diags(other, Some(1), "x"),
            )
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("a publishDiagnostics for another document ({other})")
        );
        assert_eq!(d.done_version, 0);
        assert!(d.diagnostics.is_none());
    }

    #[test]
    fn versions_never_sent_are_violations() {
        let mut d = doc();
        // Only version 1 (didOpen) has been sent.
        for v in [0, 2, i32::MAX, -1] {
            let e = d
                .notification("$/lean/fileProgress", &progress(URI, v, false))
                .unwrap_err();
            assert_eq!(
                e,
                Violation::UnsentVersion {
                    what: "fileProgress",
                    version: v,
                    newest: 1
                }
            );
            let e = d
                .notification(
                    "textDocument/publishDiagnostics",
                    &diags(URI, Some(v), "forged"),
                )
                .unwrap_err();
            assert_eq!(
                e,
                Violation::UnsentVersion {
                    what: "publishDiagnostics",
                    version: v,
                    newest: 1
                }
            );
        }
        let e = d
            .notification(
                "textDocument/publishDiagnostics",
                &diags(URI, None, "forged"),
            )
            .unwrap_err();
        assert_eq!(e.to_string(), "a publishDiagnostics without a version");
        assert_eq!(d.done_version, 0);
        assert!(d.diagnostics.is_none());
        d.sent_version = 2;
        d.notification("$/lean/fileProgress", &progress(URI, 2, false))
            .unwrap();
        assert_eq!(d.done_version, 2);
    }

    #[test]
    fn unknown_and_malformed_notifications_are_violations() {
        let mut d = doc();
        let e = d
            .notification("textDocument/didSave", &json!({}))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "an unexpected notification `textDocument/didSave`"
        );
        let e = d
            .notification("$/lean/fileProgress", &Value::Null)
            .unwrap_err();
        assert!(
            e.to_string().starts_with("a malformed fileProgress: "),
            "{e}"
        );
        let e = d
            .notification(
                "textDocument/publishDiagnostics",
                &json!({"uri": URI, "version": 1}),
            )
            .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("a malformed publishDiagnostics: "),
            "{e}"
        );
        for m in IGNORED_NOTIFICATIONS {
            d.notification(m, &json!({"anything": 1})).unwrap();
        }
    }

    #[test]
    fn an_older_version_never_replaces_newer_diagnostics() {
        let mut d = doc();
        d.sent_version = 3;
        d.notification(
            "textDocument/publishDiagnostics",
            &diags(URI, Some(3), "new"),
        )
        .unwrap();
        d.notification(
            "textDocument/publishDiagnostics",
            &diags(URI, Some(2), "old"),
        )
        .unwrap();
        let (v, ds) = d.diagnostics.as_ref().unwrap();
        assert_eq!((*v, ds[0].message.as_str()), (3, "new"));
        // Progress still busy: not done; the published-after-done count
        // only moves for versions already done.
        d.notification("$/lean/fileProgress", &progress(URI, 3, true))
            .unwrap();
        assert_eq!(d.done_version, 0);
        assert_eq!(d.late_diagnostics(), 0);
        d.notification("$/lean/fileProgress", &progress(URI, 3, false))
            .unwrap();
        d.notification(
            "textDocument/publishDiagnostics",
            &diags(URI, Some(3), "late"),
        )
        .unwrap();
        assert_eq!(d.late_diagnostics(), 1);
    }
}

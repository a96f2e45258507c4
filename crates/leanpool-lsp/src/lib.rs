//! `leanpool lsp`: a Language Server for editors whose documents are
//! served by warm Lean workers leased from a [`Pool`].
//!
//! One document = one leased worker ([`Pool::lease`]) in passthrough mode
//! ([`Worker::passthrough`](leanpool_lean::Worker::passthrough)): the editor's text goes to Lean unchanged (so
//! positions need no mapping); only the document URI (the worker has its
//! own) and the version (the worker's document already has versions) are
//! mapped, both ways. Every document has an actor task owning its text,
//! its worker and its state (guard refusals, crash notes); a forwarder task
//! per worker carries Lean's messages back to the editor.
//!
//! tower-lsp serves the editor side: standard requests through its typed
//! `LanguageServer` trait (params and results pass through serde as JSON,
//! positions untouched), Lean's own methods (`$/lean/*`,
//! `textDocument/waitForDiagnostics`) through `custom_method`, and Lean's
//! server-to-client requests through the raw `Client` service (any method,
//! answer passed back to the worker).

#![deny(missing_docs)]

mod conn;
mod convert;
mod doc;
mod remote;

use doc::{DocHandle, DocMsg};
use leanpool_lean::leased::LeaseLimits;
use leanpool_pool::Pool;
use leanpool_screen::guard::GuardPolicy;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use tower_lsp::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp::lsp_types::*;
use tower_lsp::{Client, LanguageServer, LspService};

/// Where documents' workers come from.
#[derive(Clone)]
pub enum Source {
    /// An in-process pool (`leanpool lsp`).
    Pool(Pool),
    /// Leased from the daemon listening at `socket` (`leanpool lsp
    /// --socket`; the daemon's `lease` method), in its project `project`
    /// (`None`: the daemon's first project; docs/protocol.md, "Projects").
    Daemon {
        /// The daemon's Unix socket.
        socket: std::path::PathBuf,
        /// The name of one of the daemon's projects (`leanpool lsp
        /// --project`).
        project: Option<String>,
    },
}

/// Settings of the bridge (the pool is configured on its own).
#[derive(Clone, Debug, Default)]
pub struct BridgeConfig {
    /// What the guard lets through (same policy as the daemon's pool).
    pub guard: GuardPolicy,
    /// The caps on each document's leased worker (the daemon's `lease_*`
    /// settings; docs/protocol.md, "lease").
    pub limits: LeaseLimits,
}

pub(crate) struct Shared {
    pub client: Client,
    pub source: Source,
    pub cfg: BridgeConfig,
}

/// The Language Server: the editor's open documents, each on a worker
/// leased from the pool or a daemon.
pub struct Bridge {
    shared: Arc<Shared>,
    docs: Mutex<HashMap<String, Arc<DocHandle>>>,
}

/// Builds the tower-lsp service for workers from `source`.
pub fn service(source: Source, cfg: BridgeConfig) -> (LspService<Bridge>, tower_lsp::ClientSocket) {
    LspService::build(|client| Bridge {
        shared: Arc::new(Shared {
            client,
            source,
            cfg,
        }),
        docs: Mutex::new(HashMap::new()),
    })
    .custom_method("$/lean/plainGoal", Bridge::plain_goal)
    .custom_method("$/lean/plainTermGoal", Bridge::plain_term_goal)
    .custom_method("$/lean/rpc/connect", Bridge::rpc_connect)
    .custom_method("$/lean/rpc/call", Bridge::rpc_call)
    .custom_method("$/lean/rpc/release", Bridge::rpc_release)
    .custom_method("$/lean/rpc/keepAlive", Bridge::rpc_keep_alive)
    .custom_method(
        "textDocument/waitForDiagnostics",
        Bridge::wait_for_diagnostics,
    )
    .finish()
}

/// Serves `leanpool lsp` on stdin/stdout until the editor sends `exit`
/// or closes stdin. Returns the exit code LSP asks for: 0 after
/// `shutdown` + `exit` (or stdin closed after `shutdown`), 1 otherwise.
///
/// tower-lsp's `Server::serve` alone does not end at `exit`: it notices
/// only at the next message, and a message after `exit` (Neovim 0.7 sends
/// a second `shutdown` when it quits) makes it return from its reader
/// without closing its writer, so it never ends while the editor waits for
/// the process to exit. Hence the `exit` notification is watched here and
/// ends serving at once.
///
/// A closed stdout (the editor went away, or `leanpool lsp | head`) ends
/// serving quietly with [`CLOSED_STDOUT`], as every other leanpool
/// subcommand does: tower-lsp would log each failed write and keep
/// reading stdin.
pub async fn serve_stdio(source: Source, cfg: BridgeConfig) -> i32 {
    let (svc, socket) = service(source, cfg);
    let watch = Arc::new(ExitState::default());
    let svc = ExitWatch {
        inner: svc,
        state: watch.clone(),
    };
    let stdout = StdoutWatch {
        inner: tokio::io::stdout(),
        state: watch.clone(),
    };
    tokio::select! {
        _ = tower_lsp::Server::new(tokio::io::stdin(), stdout, socket).serve(svc) => {}
        _ = watch.exited.notified() => {}
    }
    if watch.stdout_closed.load(Ordering::SeqCst) {
        CLOSED_STDOUT
    } else if watch.shutdown.load(Ordering::SeqCst) {
        0
    } else {
        1
    }
}

/// [`serve_stdio`]'s exit code when stdout was closed under it (128 +
/// `SIGPIPE`, the CLI's code for a closed stdout).
pub const CLOSED_STDOUT: i32 = 141;

#[derive(Default)]
struct ExitState {
    shutdown: std::sync::atomic::AtomicBool,
    /// A write to stdout failed with `EPIPE`.
    stdout_closed: std::sync::atomic::AtomicBool,
    exited: tokio::sync::Notify,
}

/// Stdout that, once its reader has gone, ends [`serve_stdio`] instead of
/// handing tower-lsp an error: the failed write stays pending (the server
/// is dropped at once) so nothing is logged.
struct StdoutWatch {
    inner: tokio::io::Stdout,
    state: Arc<ExitState>,
}

impl StdoutWatch {
    fn check<T>(
        &self,
        r: std::task::Poll<std::io::Result<T>>,
    ) -> std::task::Poll<std::io::Result<T>> {
        match r {
            std::task::Poll::Ready(Err(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.state.stdout_closed.store(true, Ordering::SeqCst);
                self.state.exited.notify_one();
                std::task::Poll::Pending
            }
            r => r,
        }
    }
}

impl tokio::io::AsyncWrite for StdoutWatch {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let r = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        self.check(r)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let r = std::pin::Pin::new(&mut self.inner).poll_flush(cx);
        self.check(r)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let r = std::pin::Pin::new(&mut self.inner).poll_shutdown(cx);
        self.check(r)
    }
}

/// The tower-lsp service with the `shutdown` and `exit` messages noticed
/// on the way in (see [`serve_stdio`]).
struct ExitWatch<S> {
    inner: S,
    state: Arc<ExitState>,
}

impl<S: tower_service::Service<tower_lsp::jsonrpc::Request>>
    tower_service::Service<tower_lsp::jsonrpc::Request> for ExitWatch<S>
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::result::Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: tower_lsp::jsonrpc::Request) -> S::Future {
        match req.method() {
            "shutdown" => self.state.shutdown.store(true, Ordering::SeqCst),
            // `notify_one` keeps the wake-up if nobody waits yet.
            "exit" => self.state.exited.notify_one(),
            _ => {}
        }
        self.inner.call(req)
    }
}

/// What Lean's own server (`Lean.Server.Watchdog.mkLeanServerCapabilities`,
/// Lean 4.28) announces, minus what only the watchdog can answer (it needs
/// the project's `.ilean` index across files): references, rename,
/// workspace symbols, call hierarchy. The semantic token legend must be
/// Lean's exactly (in order): the worker answers with indices into it.
pub fn capabilities() -> Value {
    json!({
        "textDocumentSync": {
            "openClose": true,
            "change": 2,
            "willSave": false,
            "willSaveWaitUntil": false,
            "save": { "includeText": true }
        },
        "completionProvider": { "triggerCharacters": ["."], "resolveProvider": true },
        "hoverProvider": true,
        "declarationProvider": true,
        "definitionProvider": true,
        "typeDefinitionProvider": true,
        "documentHighlightProvider": true,
        "documentSymbolProvider": true,
        "foldingRangeProvider": true,
        "semanticTokensProvider": {
            "legend": {
                "tokenTypes": ["keyword", "variable", "property", "function", "namespace", "type", "class",
                    "enum", "interface", "struct", "typeParameter", "parameter", "enumMember",
                    "event", "method", "macro", "modifier", "comment", "string", "number",
                    "regexp", "operator", "decorator", "leanSorryLike"],
                "tokenModifiers": ["declaration", "definition", "readonly", "static", "deprecated",
                    "abstract", "async", "modification", "documentation", "defaultLibrary"]
            },
            "full": true,
            "range": true
        },
        "codeActionProvider": { "resolveProvider": true, "codeActionKinds": ["quickfix", "refactor", "source.organizeImports"] },
        "inlayHintProvider": { "resolveProvider": false }
    })
}

/// The error for a request about a document that is not open (Lean's
/// watchdog answers the same way).
pub(crate) fn not_open(uri: &str) -> Error {
    invalid_params(format!("Cannot process request to closed file '{uri}'"))
}

/// An `INVALID_PARAMS` answer (the code from `leanpool_protocol::lsp_error`,
/// as every code leanpool answers with).
pub(crate) fn invalid_params(message: String) -> Error {
    Error {
        code: ErrorCode::from(leanpool_protocol::lsp_error::INVALID_PARAMS),
        message: message.into(),
        data: None,
    }
}

pub(crate) fn failed(message: String) -> Error {
    Error {
        code: ErrorCode::ServerError(leanpool_protocol::lsp_error::REQUEST_FAILED),
        message: message.into(),
        data: None,
    }
}

impl Bridge {
    fn doc(&self, uri: &str) -> Option<Arc<DocHandle>> {
        self.docs.lock().unwrap().get(uri).cloned()
    }

    /// Forwards a request about the document named in `params` (at
    /// `textDocument.uri`, or `uri` for `$/lean/rpc/connect`).
    async fn forward_value(&self, method: &str, params: Value) -> Result<Value> {
        let uri = convert::request_uri(&params)
            .ok_or_else(|| invalid_params("no document URI in the params".into()))?;
        let doc = self.doc(&uri).ok_or_else(|| not_open(&uri))?;
        doc.request(method, params).await
    }

    async fn forward<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: P,
    ) -> Result<R> {
        let v = serde_json::to_value(params).map_err(|e| invalid_params(e.to_string()))?;
        let r = self.forward_value(method, v).await?;
        serde_json::from_value(r)
            .map_err(|e| failed(format!("unexpected answer from Lean to {method}: {e}")))
    }

    async fn notify_doc(&self, method: &'static str, params: Value) {
        if let Some(uri) = convert::request_uri(&params) {
            if let Some(doc) = self.doc(&uri) {
                let _ = doc.tx.send(DocMsg::Notify { method, params });
            }
        }
    }

    async fn plain_goal(&self, params: Value) -> Result<Value> {
        self.forward_value("$/lean/plainGoal", params).await
    }
    async fn plain_term_goal(&self, params: Value) -> Result<Value> {
        self.forward_value("$/lean/plainTermGoal", params).await
    }
    async fn rpc_connect(&self, params: Value) -> Result<Value> {
        self.forward_value("$/lean/rpc/connect", params).await
    }
    async fn rpc_call(&self, params: Value) -> Result<Value> {
        self.forward_value("$/lean/rpc/call", params).await
    }
    async fn rpc_release(&self, params: Value) {
        self.notify_doc("$/lean/rpc/release", params).await
    }
    async fn rpc_keep_alive(&self, params: Value) {
        self.notify_doc("$/lean/rpc/keepAlive", params).await
    }
    async fn wait_for_diagnostics(&self, params: Value) -> Result<Value> {
        self.forward_value("textDocument/waitForDiagnostics", params)
            .await
    }
}

#[tower_lsp::async_trait]
impl LanguageServer for Bridge {
    async fn initialize(&self, _: InitializeParams) -> Result<InitializeResult> {
        let capabilities =
            serde_json::from_value(capabilities()).map_err(|e| failed(e.to_string()))?;
        Ok(InitializeResult {
            capabilities,
            server_info: Some(ServerInfo {
                name: "leanpool lsp".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
        })
    }

    async fn shutdown(&self) -> Result<()> {
        let docs: Vec<_> = self.docs.lock().unwrap().drain().map(|(_, d)| d).collect();
        for d in docs {
            let _ = d.tx.send(DocMsg::Close);
        }
        Ok(())
    }

    async fn did_open(&self, p: DidOpenTextDocumentParams) {
        let uri = p.text_document.uri.to_string();
        let handle = doc::start(
            self.shared.clone(),
            uri.clone(),
            p.text_document.text,
            p.text_document.version,
        );
        if let Some(old) = self.docs.lock().unwrap().insert(uri, handle) {
            let _ = old.tx.send(DocMsg::Close);
        }
    }

    async fn did_change(&self, p: DidChangeTextDocumentParams) {
        if let Some(doc) = self.doc(p.text_document.uri.as_str()) {
            let changes = serde_json::to_value(&p.content_changes).unwrap_or(Value::Null);
            let _ = doc.tx.send(DocMsg::Change {
                version: p.text_document.version,
                changes,
            });
        }
    }

    async fn did_save(&self, p: DidSaveTextDocumentParams) {
        let v = serde_json::to_value(p).unwrap_or(Value::Null);
        self.notify_doc("textDocument/didSave", v).await
    }

    async fn did_close(&self, p: DidCloseTextDocumentParams) {
        if let Some(doc) = self
            .docs
            .lock()
            .unwrap()
            .remove(p.text_document.uri.as_str())
        {
            let _ = doc.tx.send(DocMsg::Close);
        }
    }

    async fn hover(&self, p: HoverParams) -> Result<Option<Hover>> {
        self.forward("textDocument/hover", p).await
    }
    async fn goto_definition(
        &self,
        p: GotoDefinitionParams,
    ) -> Result<Option<GotoDefinitionResponse>> {
        self.forward("textDocument/definition", p).await
    }
    async fn goto_declaration(
        &self,
        p: request::GotoDeclarationParams,
    ) -> Result<Option<request::GotoDeclarationResponse>> {
        self.forward("textDocument/declaration", p).await
    }
    async fn goto_type_definition(
        &self,
        p: request::GotoTypeDefinitionParams,
    ) -> Result<Option<request::GotoTypeDefinitionResponse>> {
        self.forward("textDocument/typeDefinition", p).await
    }
    async fn completion(&self, p: CompletionParams) -> Result<Option<CompletionResponse>> {
        self.forward("textDocument/completion", p).await
    }
    async fn completion_resolve(&self, item: CompletionItem) -> Result<CompletionItem> {
        // Lean puts the document into the item's `data`.
        let v = serde_json::to_value(&item).map_err(|e| invalid_params(e.to_string()))?;
        match convert::request_uri(&v["data"]["params"])
            .or_else(|| convert::request_uri(&v["data"]))
        {
            Some(uri) => {
                let doc = self.doc(&uri).ok_or_else(|| not_open(&uri))?;
                let r = doc.request("completionItem/resolve", v).await?;
                serde_json::from_value(r).map_err(|e| failed(e.to_string()))
            }
            None => Ok(item),
        }
    }
    async fn document_symbol(
        &self,
        p: DocumentSymbolParams,
    ) -> Result<Option<DocumentSymbolResponse>> {
        self.forward("textDocument/documentSymbol", p).await
    }
    async fn document_highlight(
        &self,
        p: DocumentHighlightParams,
    ) -> Result<Option<Vec<DocumentHighlight>>> {
        self.forward("textDocument/documentHighlight", p).await
    }
    async fn folding_range(&self, p: FoldingRangeParams) -> Result<Option<Vec<FoldingRange>>> {
        self.forward("textDocument/foldingRange", p).await
    }
    async fn semantic_tokens_full(
        &self,
        p: SemanticTokensParams,
    ) -> Result<Option<SemanticTokensResult>> {
        self.forward("textDocument/semanticTokens/full", p).await
    }
    async fn semantic_tokens_range(
        &self,
        p: SemanticTokensRangeParams,
    ) -> Result<Option<SemanticTokensRangeResult>> {
        self.forward("textDocument/semanticTokens/range", p).await
    }
    async fn code_action(&self, p: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        self.forward("textDocument/codeAction", p).await
    }
    async fn code_action_resolve(&self, a: CodeAction) -> Result<CodeAction> {
        let v = serde_json::to_value(&a).map_err(|e| invalid_params(e.to_string()))?;
        match convert::request_uri(&v["data"])
            .or_else(|| convert::request_uri(&v["data"]["params"]))
        {
            Some(uri) => {
                let doc = self.doc(&uri).ok_or_else(|| not_open(&uri))?;
                let r = doc.request("codeAction/resolve", v).await?;
                serde_json::from_value(r).map_err(|e| failed(e.to_string()))
            }
            None => Ok(a),
        }
    }
    async fn inlay_hint(&self, p: InlayHintParams) -> Result<Option<Vec<InlayHint>>> {
        self.forward("textDocument/inlayHint", p).await
    }
}

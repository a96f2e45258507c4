//! A FAKE Lean file worker (tower-lsp), for pool tests only.
//!
//! Why a fake: the pool's fault paths need faults on demand that real Lean
//! cannot produce: a worker that dies on the same request twice (the
//! `WorkerFailed` path), dies exactly once, eats a chosen amount of
//! memory, or fails to start; and tests of queueing and eviction need
//! workers that start in milliseconds rather than 25 s. The fake speaks
//! just the part of Lean's worker protocol the driver uses: `initialize`,
//! `didOpen`/`didChange` (full text) answered by `publishDiagnostics` and
//! `$/lean/fileProgress` with nothing left to process, and
//! `textDocument/waitForDiagnostics`. Everything else about Lean is not
//! imitated; `pool_lean.rs` tests the same pool on real Lean.
//!
//! Behaviour is scripted by `-- FAKE <cmd> [arg]` lines in the document
//! body (several allowed, run in order):
//! - `crash`: exit at once (the worker dies mid-request);
//! - `crash_once PATH`: exit unless PATH exists (create it first), i.e. die
//!   on the first attempt and succeed on the retry;
//! - `sleep MS`: wait before answering;
//! - `alloc MB`: allocate and touch MB megabytes, keep them, wait 60 s;
//! - `error`: report one error diagnostic.
//!
//! A header containing `FakeDieOnOpen` makes the worker exit at `didOpen`
//! (a worker that cannot start). If `FAKE_LOG` is set, every `didChange`
//! appends `<pid> <last line of the text>` to that file.

use serde_json::{json, Value};
use std::io::Write;
use std::time::Duration;
use tower_lsp::jsonrpc::Result;
use tower_lsp::lsp_types::notification::Notification;
use tower_lsp::lsp_types::*;
use tower_lsp::{Client, LanguageServer, LspService, Server};

/// Env var that turns the test executable into the fake worker.
pub const FAKE_ENV: &str = "LEANPOOL_FAKE_PEER";

enum FileProgress {}
impl Notification for FileProgress {
    type Params = Value;
    const METHOD: &'static str = "$/lean/fileProgress";
}

struct Fake {
    client: Client,
}

impl Fake {
    async fn finish(&self, uri: Url, version: i32, diags: Vec<tower_lsp::lsp_types::Diagnostic>) {
        self.client.publish_diagnostics(uri.clone(), diags, Some(version)).await;
        self.client
            .send_notification::<FileProgress>(json!({"textDocument": {"uri": uri, "version": version}, "processing": []}))
            .await;
    }

    async fn wait_for_diagnostics(&self, _p: Value) -> Result<Value> {
        Ok(json!({}))
    }
}

#[tower_lsp::async_trait]
impl LanguageServer for Fake {
    async fn initialize(&self, _: InitializeParams) -> Result<InitializeResult> {
        Ok(InitializeResult::default())
    }

    async fn shutdown(&self) -> Result<()> {
        Ok(())
    }

    async fn did_open(&self, p: DidOpenTextDocumentParams) {
        if p.text_document.text.contains("FakeDieOnOpen") {
            std::process::exit(4);
        }
        self.finish(p.text_document.uri, p.text_document.version, vec![]).await;
    }

    async fn did_change(&self, p: DidChangeTextDocumentParams) {
        let text = p.content_changes.last().map(|c| c.text.clone()).unwrap_or_default();
        if let Ok(path) = std::env::var("FAKE_LOG") {
            let last = text.trim_end().lines().last().unwrap_or("").to_string();
            let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
            writeln!(f, "{} {last}", std::process::id()).unwrap();
        }
        let mut diags = vec![];
        for line in text.lines() {
            let Some(cmd) = line.trim().strip_prefix("-- FAKE ") else { continue };
            let mut words = cmd.split_whitespace();
            let (verb, arg) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
            match verb {
                "crash" => std::process::exit(3),
                "crash_once" => {
                    if std::fs::metadata(arg).is_err() {
                        std::fs::write(arg, b"crashed").unwrap();
                        std::process::exit(3);
                    }
                }
                "sleep" => tokio::time::sleep(Duration::from_millis(arg.parse().unwrap())).await,
                "alloc" => {
                    let mb: usize = arg.parse().unwrap();
                    let v = vec![1u8; mb << 20];
                    std::hint::black_box(&v);
                    std::mem::forget(v);
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
                "error" => diags.push(tower_lsp::lsp_types::Diagnostic {
                    range: Range::default(),
                    severity: Some(DiagnosticSeverity::ERROR),
                    message: "fake error".into(),
                    ..Default::default()
                }),
                other => panic!("unknown FAKE command {other}"),
            }
        }
        self.finish(p.text_document.uri, p.text_document.version, diags).await;
    }
}

/// Serves the fake worker on stdin/stdout until stdin closes.
pub fn serve() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let (service, socket) = LspService::build(|client| Fake { client })
            .custom_method("textDocument/waitForDiagnostics", Fake::wait_for_diagnostics)
            .finish();
        Server::new(tokio::io::stdin(), tokio::io::stdout(), socket).serve(service).await;
    });
}

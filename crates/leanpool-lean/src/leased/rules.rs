//! The allowlist of a leased worker: every LSP method a lease holder may
//! send to Lean, and the rule its parameters are rebuilt by. Parameters
//! are never passed on as sent: each allowed method's params are built
//! anew from the fields its rule names, each checked (the leased
//! document's URI, positions and ranges inside its current text, versions
//! the holder sent, RPC sessions and `data` that Lean issued through this
//! lease); every other field is dropped. A method not listed here is
//! refused (`METHOD_NOT_FOUND`).

/// How a request's params are rebuilt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// `{textDocument: {uri}}`.
    Doc,
    /// `{textDocument: {uri}, position}`.
    DocPosition,
    /// `{textDocument: {uri}, position, context?}`: completion's trigger
    /// kind and character only.
    Completion,
    /// `{textDocument: {uri}, range}`.
    DocRange,
    /// `{textDocument: {uri}, range, context}`: diagnostics rebuilt from
    /// range, severity and message (no `data`), `only` kinds.
    CodeAction,
    /// A completion item or code action: exactly the one Lean issued
    /// through this lease (named by leanpool's token in its `data`).
    Resolve(Issued),
    /// `{uri, version}`: a version the holder sent.
    WaitForDiagnostics,
    /// `{uri}`.
    RpcConnect,
    /// `{textDocument: {uri}, position, sessionId, method, params}`: a
    /// session Lean opened through this lease, a method on
    /// [`RPC_METHODS`]; `params` naming a document or lines are checked.
    RpcCall,
}

/// What Lean's `data` (carried back by a resolve request) was issued with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Issued {
    /// An item of a `textDocument/completion` answer.
    Completion,
    /// A code action of a `textDocument/codeAction` answer.
    CodeAction,
}

impl Issued {
    /// The request whose answers issue such items.
    pub fn source_method(self) -> &'static str {
        match self {
            Issued::Completion => "textDocument/completion",
            Issued::CodeAction => "textDocument/codeAction",
        }
    }
}

/// Requests a lease holder may send, each with its rule.
pub const REQUESTS: &[(&str, Rule)] = &[
    ("textDocument/hover", Rule::DocPosition),
    ("textDocument/definition", Rule::DocPosition),
    ("textDocument/declaration", Rule::DocPosition),
    ("textDocument/typeDefinition", Rule::DocPosition),
    ("textDocument/documentHighlight", Rule::DocPosition),
    ("textDocument/signatureHelp", Rule::DocPosition),
    ("textDocument/completion", Rule::Completion),
    ("completionItem/resolve", Rule::Resolve(Issued::Completion)),
    ("textDocument/documentSymbol", Rule::Doc),
    ("textDocument/foldingRange", Rule::Doc),
    ("textDocument/semanticTokens/full", Rule::Doc),
    ("textDocument/semanticTokens/range", Rule::DocRange),
    ("textDocument/inlayHint", Rule::DocRange),
    ("textDocument/codeAction", Rule::CodeAction),
    ("codeAction/resolve", Rule::Resolve(Issued::CodeAction)),
    ("textDocument/waitForDiagnostics", Rule::WaitForDiagnostics),
    ("$/lean/plainGoal", Rule::DocPosition),
    ("$/lean/plainTermGoal", Rule::DocPosition),
    ("$/lean/rpc/connect", Rule::RpcConnect),
    ("$/lean/rpc/call", Rule::RpcCall),
];

/// Notifications a lease holder may send (`textDocument/didChange`: whole
/// texts, screened, same imports; `$/lean/rpc/release` and `keepAlive`:
/// sessions Lean opened through this lease; `$/cancelRequest`: the
/// holder's own pending requests; `textDocument/didSave`: accepted and not
/// passed on, Lean's file worker ignores it). Everything else is refused.
pub const NOTIFICATIONS: &[&str] = &[
    "textDocument/didChange",
    "textDocument/didSave",
    "$/lean/rpc/release",
    "$/lean/rpc/keepAlive",
    "$/cancelRequest",
];

/// RPC procedures a lease holder may call: the builtin ones Lean 4.28
/// registers (`registerBuiltinRpcProcedure` in
/// `Lean.Server.FileWorker.WidgetRequests`, `Lean.Server.FileWorker` and
/// `Lean.Widget.UserWidget`; each name checked against the 4.28 WASM
/// build's `lean.wasm` and oleans), never one a document declares (a
/// `@[server_rpc_method]` of the caller's: the attribute is refused by the
/// guard, and its name is not on this list).
pub const RPC_METHODS: &[&str] = &[
    "Lean.Widget.InteractiveDiagnostics.msgToInteractive",
    "Lean.Widget.InteractiveDiagnostics.infoToInteractive",
    "Lean.Widget.getInteractiveGoals",
    "Lean.Widget.getInteractiveTermGoal",
    "Lean.Widget.getInteractiveDiagnostics",
    "Lean.Widget.getGoToLocation",
    "Lean.Widget.lazyTraceChildrenToInteractive",
    "Lean.Widget.getWidgets",
    "Lean.Widget.getWidgetSource",
    "Lean.Widget.highlightMatches",
];

/// Every client-to-server method a Lean 4.28 process knows (read from
/// the 4.28 WASM build's method strings and `Lean.Server`'s sources;
/// `$/lean/staleDependency` is the watchdog's notification to a file
/// worker, which `FileWorker.handleNotification` handles):
/// what the tests walk to show each is either on [`REQUESTS`] /
/// [`NOTIFICATIONS`] with a rule, or refused. The watchdog's methods
/// (references, rename, call hierarchy, workspace symbols, module
/// hierarchy, `.ilean` waits) are here too: a file worker has no answer
/// for them and a lease refuses them.
pub const LEAN_CLIENT_METHODS: &[&str] = &[
    "initialize",
    "initialized",
    "shutdown",
    "exit",
    "textDocument/didOpen",
    "textDocument/didChange",
    "textDocument/didClose",
    "textDocument/didSave",
    "textDocument/waitForDiagnostics",
    "textDocument/completion",
    "completionItem/resolve",
    "textDocument/hover",
    "textDocument/declaration",
    "textDocument/definition",
    "textDocument/typeDefinition",
    "textDocument/documentHighlight",
    "textDocument/documentSymbol",
    "textDocument/documentColor",
    "textDocument/semanticTokens/full",
    "textDocument/semanticTokens/range",
    "textDocument/foldingRange",
    "textDocument/codeAction",
    "codeAction/resolve",
    "textDocument/inlayHint",
    "textDocument/signatureHelp",
    "textDocument/references",
    "textDocument/rename",
    "textDocument/prepareRename",
    "textDocument/prepareCallHierarchy",
    "callHierarchy/incomingCalls",
    "callHierarchy/outgoingCalls",
    "workspace/symbol",
    "workspace/didChangeWatchedFiles",
    "workspace/applyEdit",
    "$/lean/plainGoal",
    "$/lean/plainTermGoal",
    "$/lean/rpc/connect",
    "$/lean/rpc/call",
    "$/lean/rpc/release",
    "$/lean/rpc/keepAlive",
    "$/lean/staleDependency",
    "$/lean/waitForILeans",
    "$/lean/queryModule",
    "$/lean/prepareModuleHierarchy",
    "$/lean/moduleHierarchy/imports",
    "$/lean/moduleHierarchy/importedBy",
    "$/lean/importClosure",
    "$/cancelRequest",
    "$/setTrace",
];

/// The rule of an allowed request.
pub fn request_rule(method: &str) -> Option<Rule> {
    REQUESTS.iter().find(|(m, _)| *m == method).map(|&(_, r)| r)
}

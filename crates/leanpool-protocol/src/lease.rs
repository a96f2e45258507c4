//! `lease`: a warm worker for a connection's lifetime (the connection then
//! becomes a guarded LSP tunnel; see docs/protocol.md).

use serde::{Deserialize, Serialize};

/// `lease` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaseParams {
    /// The document's text or just its header: only its imports are used
    /// (the worker is the one `check` would use for the same imports).
    pub header: String,
}

/// `lease` result, the connection's last JSON-RPC line from the daemon.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeaseResult {
    /// The worker's document: the only URI the tunnel accepts.
    pub uri: String,
    /// The document's current version; the first `didChange` must be
    /// newer.
    pub version: i64,
    /// The worker's process id.
    pub pid: u32,
    /// The imports the worker holds (the header's key).
    pub header: String,
}

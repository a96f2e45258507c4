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
    /// The project whose pool (and `LEAN_PATH`) leases the worker
    /// (issue 25); absent: the default project. A name the daemon does not
    /// serve is answered `UNKNOWN_PROJECT`. (The daemon takes this member
    /// out of every request's params before decoding them, as for the
    /// other methods; typed here so clients name it.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

/// The daemon's last message on a lease tunnel: the lease has ended
/// (`params.reason` says why: a limit, a forged frame, the worker's end).
pub const LEASE_ENDED_NOTIFICATION: &str = "$/leanpool/leaseEnded";

/// The daemon's note on a lease tunnel that it did not pass a holder's
/// message on (`params.method`, `params.message`).
pub const LEASE_REFUSED_NOTIFICATION: &str = "$/leanpool/refused";

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

#[cfg(test)]
mod tests {
    use super::*;

    /// `project` is optional and typed (issue 25); without it the params
    /// are the same bytes as before; other members are still refused.
    #[test]
    fn lease_params_name_a_project() {
        let p: LeaseParams =
            serde_json::from_str(r#"{"header": "import Std", "project": "judge"}"#).unwrap();
        assert_eq!(p.project.as_deref(), Some("judge"));
        let bare = LeaseParams {
            header: "x".into(),
            project: None,
        };
        assert_eq!(serde_json::to_string(&bare).unwrap(), r#"{"header":"x"}"#);
        assert!(serde_json::from_str::<LeaseParams>(r#"{"header": "", "projekt": "a"}"#).is_err());
    }
}

//! The daemon's config file (TOML, or JSON when the name ends in `.json`).
//!
//! One struct per table, parsed directly: [`DaemonConfig`] is the top
//! level, its fields `pool` ([`PoolConfig`]), `guard`, `sandbox`,
//! `verdict`, `cache` and `project` are the tables of those names, each
//! type deserialized as the file has it (no field is filled in or moved
//! after reading). Every field is optional and its default is the type's
//! `Default` (the one source of defaults, shared with `leanpool lsp` and
//! the CLI's local commands: [`DaemonConfig::default`]). Unknown keys are
//! an error, at the top level and in every table, so that a typo
//! (`socket_mod`) or a key in the wrong table (`[pool] guard`) is reported
//! instead of silently ignored.

use crate::gted::GtedLimits;
use leanpool_pool::{GuardPolicy, InvalidPoolConfig, Policies, PoolConfig, SandboxConfig};
use leanpool_rpc::ServerOptions;
use serde::{Deserialize, Deserializer, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `log_format`: how the daemon writes its log lines (stderr).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable text (the default).
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// The daemon's config file, as read: the transport's caps at the top
/// level, `[pool]`, `[guard]`, `[sandbox]`, `[verdict]` (docs/protocol.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DaemonConfig {
    /// Permission bits of the socket file, as an octal string (`"0600"`) or
    /// a number (TOML `0o600`).
    #[serde(deserialize_with = "mode")]
    pub socket_mode: u32,
    /// Uids allowed to connect; absent means only the daemon's own uid.
    pub allowed_uids: Option<Vec<u32>>,
    /// Bytes of one request line; longer ones are refused.
    pub max_request_bytes: usize,
    /// Unanswered requests per connection; reading stops above it.
    pub max_inflight_per_connection: usize,
    /// Bytes of answers queued for one connection and not yet written to
    /// it; past this the daemon stops reading that connection until the
    /// client reads (a client that never reads cannot pin memory).
    pub max_unsent_bytes_per_connection: usize,
    /// Connections served at once; one more is answered `OVERLOADED`
    /// (id null) and closed.
    pub max_connections: usize,
    /// Nodes per `gted` tree (root included); larger ones are
    /// `INVALID_PARAMS` before any allocation.
    pub gted_max_nodes: usize,
    /// Depth per `gted` tree (a lone root is depth 1).
    pub gted_max_depth: usize,
    /// How long a graceful shutdown lets in-flight requests run.
    pub shutdown_deadline_ms: u64,
    /// Connections that may hold a leased worker at once (`lease`, e.g.
    /// `leanpool lsp --socket`); each holds a whole worker outside
    /// `[pool] max_workers`. 0 turns `lease` off.
    pub max_leases: usize,
    /// A request through a lease not answered within this is cancelled in
    /// Lean and answered `REQUEST_FAILED`; if Lean does not stop within
    /// 10 s more, the lease ends (the worker is killed).
    pub lease_request_timeout_ms: u64,
    /// A lease with no message from its holder (and nothing pending) for
    /// this long ends.
    pub lease_idle_timeout_ms: u64,
    /// CPU time a leased worker may use in all before its lease ends.
    pub lease_cpu_ms: u64,
    /// Text or JSON log lines.
    pub log_format: LogFormat,
    /// `[pool]`: workers, limits, time-outs.
    pub pool: PoolConfig,
    /// `[guard]`: the input guard's policy (`enabled = false` turns it off).
    pub guard: GuardPolicy,
    /// `[sandbox]`: the workers' OS sandbox (`mode`, extra `read` paths).
    pub sandbox: SandboxConfig,
    /// `[verdict]`: which axioms an `ok`/`proved` may rest on
    /// (`allowed_axioms`, `unlisted_axioms`).
    pub verdict: leanpool_pool::VerdictPolicy,
    /// `[cache]`: the persistent result cache (`enabled`, `dir`,
    /// `max_bytes`).
    pub cache: leanpool_cache::CacheConfig,
    /// `[[project]]`: the projects served (issue 25), the first the
    /// default; none: the backend's own library as project `default`.
    /// `leanpool serve --project` appends to it.
    #[serde(rename = "project", skip_serializing_if = "Vec::is_empty")]
    pub projects: Vec<crate::projects::ProjectEntry>,
}

impl Default for DaemonConfig {
    /// The transport's caps are [`ServerOptions`]' defaults, the `gted`
    /// caps [`GtedLimits`]', the lease caps [`LeaseLimits::DEFAULT`]'s, the
    /// tables their types' `Default`: each default is written once, there.
    ///
    /// [`LeaseLimits::DEFAULT`]: leanpool_lean::leased::LeaseLimits::DEFAULT
    fn default() -> Self {
        let transport = ServerOptions::new("");
        DaemonConfig {
            socket_mode: transport.socket_mode,
            allowed_uids: None,
            max_request_bytes: transport.max_request_bytes,
            max_inflight_per_connection: transport.max_inflight_per_connection,
            max_unsent_bytes_per_connection: transport.max_unsent_bytes_per_connection,
            max_connections: transport.max_connections,
            gted_max_nodes: GtedLimits::default().max_nodes,
            gted_max_depth: GtedLimits::default().max_depth,
            shutdown_deadline_ms: transport.shutdown_deadline.as_millis() as u64,
            max_leases: crate::handler::DEFAULT_MAX_LEASES,
            lease_request_timeout_ms: LEASE.request.as_millis() as u64,
            lease_idle_timeout_ms: LEASE.idle.as_millis() as u64,
            lease_cpu_ms: LEASE.cpu.as_millis() as u64,
            log_format: LogFormat::Text,
            pool: PoolConfig::default(),
            guard: GuardPolicy::default(),
            sandbox: SandboxConfig::default(),
            verdict: Default::default(),
            cache: Default::default(),
            projects: Vec::new(),
        }
    }
}

/// The lease caps' defaults (the config's `lease_*` fields).
const LEASE: leanpool_lean::leased::LeaseLimits = leanpool_lean::leased::LeaseLimits::DEFAULT;

impl DaemonConfig {
    /// The caps on each lease, from the `lease_*` fields.
    pub fn lease_limits(&self) -> leanpool_lean::leased::LeaseLimits {
        leanpool_lean::leased::LeaseLimits {
            request: Duration::from_millis(self.lease_request_timeout_ms.max(1)),
            idle: Duration::from_millis(self.lease_idle_timeout_ms.max(1)),
            cpu: Duration::from_millis(self.lease_cpu_ms.max(1)),
            ..LEASE
        }
    }
}

/// Why a config file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {0}: {1}")]
    /// The file could not be read.
    Read(PathBuf, std::io::Error),
    #[error("config {0}: {1}")]
    /// Not a config in JSON.
    Json(PathBuf, serde_json::Error),
    #[error("config {0}: {1}")]
    /// Not a config in TOML.
    Toml(PathBuf, toml::de::Error),
    #[error("config {0}: {1}")]
    /// Read, but a value is out of range.
    Invalid(PathBuf, InvalidConfig),
}

/// A daemon setting the daemon cannot serve with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidConfig {
    #[error("socket_mode {0:o} has bits outside 0777")]
    /// `socket_mode` is not a permission mask.
    SocketModeBits(u32),
    #[error("socket_mode must let the owner write (connecting needs write access)")]
    /// `socket_mode` would lock the owner out.
    SocketModeNotWritable,
    /// The named setting is 0.
    #[error("{0} must be at least 1")]
    Zero(&'static str),
    #[error(transparent)]
    /// A `[pool]` value is out of range.
    Pool(#[from] InvalidPoolConfig),
}

impl DaemonConfig {
    /// Reads and validates the config at `path` (JSON if it ends in
    /// `.json`, else TOML).
    pub fn load(path: &Path) -> Result<DaemonConfig, ConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|e| ConfigError::Read(path.to_owned(), e))?;
        let cfg: DaemonConfig = if path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str(&text).map_err(|e| ConfigError::Json(path.to_owned(), e))?
        } else {
            toml::from_str(&text).map_err(|e| ConfigError::Toml(path.to_owned(), e))?
        };
        cfg.validate()
            .map_err(|e| ConfigError::Invalid(path.to_owned(), e))?;
        Ok(cfg)
    }

    /// Refuses values the daemon could not serve with.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        if self.socket_mode & !0o777 != 0 {
            return Err(InvalidConfig::SocketModeBits(self.socket_mode));
        }
        if self.socket_mode & 0o200 == 0 {
            return Err(InvalidConfig::SocketModeNotWritable);
        }
        for (name, v) in [
            ("max_request_bytes", self.max_request_bytes),
            (
                "max_inflight_per_connection",
                self.max_inflight_per_connection,
            ),
            (
                "max_unsent_bytes_per_connection",
                self.max_unsent_bytes_per_connection,
            ),
            ("max_connections", self.max_connections),
            ("gted_max_nodes", self.gted_max_nodes),
            ("gted_max_depth", self.gted_max_depth),
        ] {
            if v == 0 {
                return Err(InvalidConfig::Zero(name));
            }
        }
        if self.cache.max_bytes == 0 {
            return Err(InvalidConfig::Zero("[cache] max_bytes"));
        }
        for p in &self.projects {
            if p.max_workers == Some(0) {
                return Err(InvalidConfig::Zero("[[project]] max_workers"));
            }
            if p.max_workers_per_key == Some(0) {
                return Err(InvalidConfig::Zero("[[project]] max_workers_per_key"));
            }
        }
        Ok(self.pool.validate()?)
    }

    /// The `[guard]`, `[verdict]` and `[sandbox]` tables: the policies
    /// `Pool::new` takes beside `[pool]`.
    pub fn policies(&self) -> Policies {
        Policies {
            guard: self.guard.clone(),
            verdict: self.verdict.clone(),
            sandbox: self.sandbox.clone(),
        }
    }

    /// The policies that decide answers, as one JSON value for the result
    /// cache's key: `[guard]`, `[verdict]` and `[sandbox]`, serialized
    /// whole so that a field added later counts too.
    pub fn answer_policies(&self) -> serde_json::Value {
        serde_json::json!({"guard": self.guard, "verdict": self.verdict, "sandbox": self.sandbox})
    }

    /// The caps on `gted` trees.
    pub fn gted_limits(&self) -> GtedLimits {
        GtedLimits {
            max_nodes: self.gted_max_nodes,
            max_depth: self.gted_max_depth,
        }
    }

    /// The transport's options for `socket`.
    pub fn server_options(&self, socket: &Path) -> ServerOptions {
        let mut o = ServerOptions::new(socket);
        o.socket_mode = self.socket_mode;
        if let Some(u) = &self.allowed_uids {
            o.allowed_uids = u.clone();
        }
        o.max_request_bytes = self.max_request_bytes;
        o.max_inflight_per_connection = self.max_inflight_per_connection;
        o.max_unsent_bytes_per_connection = self.max_unsent_bytes_per_connection;
        o.max_connections = self.max_connections;
        o.shutdown_deadline = Duration::from_millis(self.shutdown_deadline_ms);
        o
    }
}

fn mode<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum M {
        Num(u32),
        Text(String),
    }
    match M::deserialize(d)? {
        M::Num(n) => Ok(n),
        M::Text(s) => {
            let digits = s.trim_start_matches("0o");
            u32::from_str_radix(digits, 8).map_err(|_| {
                serde::de::Error::custom(format!("socket_mode {s:?} is not an octal number"))
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(name: &str, text: &str) -> Result<DaemonConfig, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        DaemonConfig::load(&p)
    }

    #[test]
    fn worker_limits_not_named_follow_the_machine() {
        let limits = |c: &DaemonConfig| (c.pool.max_workers, c.pool.max_workers_per_key);
        assert_eq!(limits(&DaemonConfig::default()), (None, None));
        assert_eq!(limits(&load("d.toml", "").unwrap()), (None, None));
        assert_eq!(
            limits(&load("d.toml", "[pool]\nmax_uses = 5\n").unwrap()),
            (None, None)
        );
        let c = load("d.toml", "[pool]\nmax_workers = 3\n").unwrap();
        assert_eq!(limits(&c), (Some(3), None));
        let c = load("d.json", r#"{"pool": {"max_workers_per_key": 2}}"#).unwrap();
        assert_eq!(limits(&c), (None, Some(2)));
        // A prewarm minimum is checked against a configured per-key limit
        // only (a sized one caps it at start).
        let prewarm = "[pool]\nprewarm = [{ header = \"\", min = 3 }]\n";
        assert!(load("d.toml", prewarm).is_ok());
        assert!(load("d.toml", &format!("{prewarm}max_workers_per_key = 2\n")).is_err());
    }

    #[test]
    fn toml_and_json() {
        let c = load(
            "d.toml",
            "socket_mode = \"0660\"\nallowed_uids = [0, 1000]\n[pool]\nmax_uses = 5\n",
        )
        .unwrap();
        assert_eq!(
            (c.socket_mode, c.allowed_uids.clone(), c.pool.max_uses),
            (0o660, Some(vec![0, 1000]), 5)
        );
        let c = load("d.toml", "socket_mode = 0o640\nlog_format = \"json\"").unwrap();
        assert_eq!((c.socket_mode, c.log_format), (0o640, LogFormat::Json));
        let c = load(
            "d.json",
            r#"{"max_request_bytes": 100, "pool": {"max_workers": 1}}"#,
        )
        .unwrap();
        assert_eq!((c.max_request_bytes, c.pool.max_workers), (100, Some(1)));
        assert_eq!(load("d.toml", "").unwrap(), DaemonConfig::default());
    }

    #[test]
    fn guard_and_sandbox_tables_reach_the_pool() {
        use leanpool_pool::SandboxMode;
        let d = DaemonConfig::default().policies();
        assert!(d.guard.enabled);
        assert_eq!(d.sandbox.mode, SandboxMode::Required);
        let c = load(
            "d.toml",
            "[guard]\nenabled = false\n[sandbox]\nmode = \"best-effort\"\nread = [\"/opt/x\"]\n",
        )
        .unwrap();
        let p = c.policies();
        assert!(!p.guard.enabled);
        assert_eq!(p.sandbox.mode, SandboxMode::BestEffort);
        assert_eq!(p.sandbox.read, [std::path::PathBuf::from("/opt/x")]);
        let c = load(
            "d.toml",
            "[verdict]\nallowed_axioms = [\"propext\"]\nunlisted_axioms = \"error\"\n",
        )
        .unwrap();
        let p = c.policies();
        assert_eq!(p.verdict.allowed_axioms, ["propext"]);
        assert_ne!(
            c.answer_policies(),
            DaemonConfig::default().answer_policies()
        );
        assert_eq!(
            p.verdict.unlisted_axioms,
            leanpool_pool::UnlistedAxioms::Error
        );
        assert!(load("d.toml", "[verdict]\nunlisted_axioms = \"maybe\"\n").is_err());
        let c = load("d.toml", "[pool]\nisolate_by = \"connection\"\n").unwrap();
        assert_eq!(c.pool.isolate_by, leanpool_pool::IsolateBy::Connection);
        assert!(load("d.toml", "[pool]\nisolate_by = \"pid\"\n").is_err());
        assert!(load("d.toml", "[verdict]\nallowed = []\n").is_err());
        let c = load("d.toml", "[sandbox]\nmode = \"off\"\n").unwrap();
        assert_eq!(c.policies().sandbox.mode, SandboxMode::Off);
        assert!(load("d.toml", "[sandbox]\nmode = \"sometimes\"\n").is_err());
        assert!(load("d.toml", "[sandbox]\nmod = \"off\"\n").is_err());
    }

    /// The file's shape is the types' shape: every table is its type as
    /// read, and a policy table put under `[pool]` (where the in-memory
    /// `PoolConfig` once carried them) is refused with the key named.
    #[test]
    fn tables_are_their_types() {
        let text = "[pool]\nmax_uses = 4\n[guard]\nextra_attributes = [\"x\"]\n\
                    [verdict]\nallowed_axioms = [\"propext\"]\n[sandbox]\nmode = \"off\"\n";
        let c = load("d.toml", text).unwrap();
        let t: toml::Table = toml::from_str(text).unwrap();
        let table = |k: &str| t[k].clone();
        assert_eq!(c.pool, table("pool").try_into::<PoolConfig>().unwrap());
        assert_eq!(c.guard, table("guard").try_into::<GuardPolicy>().unwrap());
        assert_eq!(
            c.sandbox,
            table("sandbox").try_into::<SandboxConfig>().unwrap()
        );
        assert_eq!(
            c.verdict,
            table("verdict")
                .try_into::<leanpool_pool::VerdictPolicy>()
                .unwrap()
        );
        for misplaced in ["guard", "verdict", "sandbox"] {
            let e = load("d.toml", &format!("[pool.{misplaced}]\n"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(&format!("unknown field `{misplaced}`")), "{e}");
        }
        let e = load("d.toml", "[pool]\nmax_worker = 2\n").unwrap_err();
        assert!(e.to_string().contains("max_worker"), "{e}");
        // Every table refuses unknown keys, [guard] too (`enable` for
        // `enabled` was silently ignored).
        let e = load("d.toml", "[guard]\nenable = false\n").unwrap_err();
        assert!(e.to_string().contains("enable"), "{e}");
        // Set from `[verdict]`, never from `[guard]`.
        assert!(load("d.toml", "[guard]\ntrust_compiler = true\n").is_err());
    }

    /// The transport's defaults are written once, in `ServerOptions::new`:
    /// a daemon started with no config serves with exactly them.
    #[test]
    fn default_transport_caps_are_the_transports() {
        let p = Path::new("/tmp/s.sock");
        let (d, t) = (
            DaemonConfig::default().server_options(p),
            ServerOptions::new(p),
        );
        assert_eq!(
            (d.socket_mode, d.allowed_uids, d.max_request_bytes),
            (t.socket_mode, t.allowed_uids, t.max_request_bytes)
        );
        assert_eq!(
            (
                d.max_inflight_per_connection,
                d.max_unsent_bytes_per_connection
            ),
            (
                t.max_inflight_per_connection,
                t.max_unsent_bytes_per_connection
            )
        );
        assert_eq!(
            (d.max_connections, d.shutdown_deadline),
            (t.max_connections, t.shutdown_deadline)
        );
        let d = DaemonConfig::default();
        assert_eq!(d.gted_limits(), GtedLimits::default());
        assert_eq!(d.lease_limits(), LEASE);
    }

    #[test]
    fn mistakes_are_reported() {
        assert!(load("d.toml", "socket_mod = \"0600\"")
            .unwrap_err()
            .to_string()
            .contains("socket_mod"));
        assert!(load("d.toml", "socket_mode = \"rw\"").is_err());
        assert!(load("d.toml", "socket_mode = \"0400\"").is_err());
        assert!(load("d.toml", "[pool]\nmax_workers = 0")
            .unwrap_err()
            .to_string()
            .contains("max_workers"));
        assert!(load("d.toml", "max_connections = 0")
            .unwrap_err()
            .to_string()
            .contains("max_connections"));
        assert!(load("d.toml", "gted_max_nodes = 0")
            .unwrap_err()
            .to_string()
            .contains("gted_max_nodes"));
        assert!(load("d.json", "{").is_err());
    }
}

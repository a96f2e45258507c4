//! Pool configuration: [`PoolConfig`] is the daemon config file's `[pool]`
//! table as read (one struct per table: the file's shape is the in-memory
//! shape), and [`Policies`] the three other tables a pool applies
//! (`[guard]`, `[verdict]`, `[sandbox]`), each as read too.
//!
//! Every field has a serde default so a config file only names what it
//! changes, and the serde default is `Default::default()`: the one source of
//! defaults for the daemon, `leanpool lsp` and the CLI's local commands.
//! Zero means "off" for the optional limits (`idle_timeout_ms`,
//! `max_uses`), never "nothing allowed". Unknown keys are an error (a typo
//! is reported, not ignored).

use leanpool_lean::{BackendKind, SandboxConfig, WorkerConfig};
use leanpool_methods::VerdictPolicy;
use leanpool_screen::GuardPolicy;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A header to keep warm workers for from the start.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PrewarmEntry {
    /// Header text, e.g. `"import Mathlib\nopen Nat\n"`. It is canonicalized
    /// the same way request headers are (comments, blank lines and trailing
    /// whitespace dropped: `leanpool_screen::Document`), so it matches requests
    /// whose headers differ from it only in those.
    pub header: String,
    /// Workers kept alive for this header (never retired by the idle
    /// timeout below this count; evicted for another header only as a last
    /// resort).
    #[serde(default = "one")]
    pub min: usize,
}

/// `[pool] isolate_by`: which callers may share a worker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IsolateBy {
    /// All callers share the warm workers of an import set.
    #[default]
    None,
    /// Only requests from the same Unix user share workers.
    Uid,
    /// Only requests on the same connection share workers.
    Connection,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
/// `[pool]` in the daemon config: how many workers, for which headers,
/// with which limits. [`PoolConfig::validate`] refuses values out of
/// range; the pool itself raises them to their minimum. The policies a
/// pool applies are not here: they are their own tables ([`Policies`]).
pub struct PoolConfig {
    /// Headers to keep warm workers for before any request comes.
    pub prewarm: Vec<PrewarmEntry>,
    /// Upper bound of workers for one header. A second worker is started
    /// only while requests for the header are queued and no worker of it is
    /// starting (starting takes ~25 s on WASM Lean, so extra workers pay off
    /// only under sustained load). Absent (the default): sized to the
    /// machine ([`crate::sizing`]).
    pub max_workers_per_key: Option<usize>,
    /// Upper bound of workers (starting, idle, busy) over all headers. A
    /// WASM Lean worker holds 3-7 GB, so this is the memory budget. Absent
    /// (the default): sized to the machine's cores and memory
    /// ([`crate::sizing`]).
    pub max_workers: Option<usize>,
    /// An idle worker above its header's `min` is retired after this long.
    /// 0 = never.
    pub idle_timeout_ms: u64,
    /// A worker is recycled (killed and replaced by a fresh one) after this
    /// many requests. 0 = never, the default on both backends: workers are
    /// recycled by measurement instead (`rss_headroom_bytes`; one WASM
    /// worker's RSS grew by ~0.4 GB over 3,000 checks, benches/README.md).
    /// [`MAX_USES_AUTO`] (the old "by backend" value) also means never.
    pub max_uses: u64,
    /// Ready, unused workers kept per key (import set) in use, beyond the ones
    /// serving it: a worker that must go (recycle, time-out, crash, memory
    /// cap) is replaced by a spare at once, the request to retry goes to
    /// the spare, and the replacement starts in the background as the new
    /// spare. A spare takes requests only while its key has no other
    /// worker up. Started only once a worker of the header has become ready
    /// (its RSS is the estimate of the spare's), while the memory
    /// available (`MemAvailable` lowered to the cgroup's room: the measure
    /// the worker limits are sized by, [`crate::sizing`]) covers that RSS
    /// plus `spare_memory_margin_bytes` for every spare starting, and
    /// within `max_workers`. 0 = no spares.
    pub spares_per_key: usize,
    /// Whose requests may share a worker: `none` (every caller shares the
    /// warm workers of an import set), `uid` (callers of the same Unix
    /// user), `connection` (each connection gets workers of its own, cold
    /// started for it). Applied by the daemon, which knows the caller.
    pub isolate_by: IsolateBy,
    /// Memory left over (beyond the header's measured worker RSS) before a
    /// spare is started, of the memory available (`spares_per_key`).
    pub spare_memory_margin_bytes: u64,
    /// Resident-set cap per worker, polled from `/proc/<pid>/status` while a
    /// request runs and after it. Above it the worker is killed: a request
    /// in flight is answered `WorkerFailed`, an idle worker is replaced.
    pub rss_limit_bytes: Option<u64>,
    /// Resident-set cap relative to the worker's own RSS when it became
    /// ready (header imported, warm-up done): killed above `ready +
    /// headroom`, with the same consequences as `rss_limit_bytes` (the lower
    /// of the two applies when both are set). Baselines differ by header
    /// (core Lean vs `import Mathlib`) and, for WASM Lean, by up to ~0.5 GB
    /// between two processes of the same header, so "this much for
    /// requests" is often easier to state than an absolute figure. A worker
    /// found above it between requests is recycled (`recycles` and
    /// `memory_kills` count it; no request fails); one found above it
    /// during a request is killed and the request answered `WorkerFailed`.
    /// Default 1.5 GiB: a WASM worker grew ~0.4 GB over 3,000 one-line
    /// checks (benches/README.md), and the wasm heap it runs in is capped
    /// at 2 GiB. `null` = no relative cap.
    pub rss_headroom_bytes: Option<u64>,
    /// `RLIMIT_AS` set in the worker process before `exec` (hard kernel
    /// limit on address space). Careful with WASM Lean: Node reserves large
    /// virtual ranges for WebAssembly memories, far above the RSS.
    pub rlimit_as_bytes: Option<u64>,
    /// Per-request limit when the request gives none.
    pub default_timeout_ms: u64,
    /// A request's own `timeout_ms` is clamped to
    /// `[min_timeout_ms, max_timeout_ms]` (not refused): a caller cannot
    /// hold a worker for hours, nor have the shared warm worker killed
    /// before it could answer anything (`timeout_ms: 1`). The answer's
    /// `timeout` reason names the limit that applied.
    pub min_timeout_ms: u64,
    /// The longest limit a request may ask for (`timeout_ms` above it is
    /// lowered to it).
    pub max_timeout_ms: u64,
    /// A request that hits its time limit is answered `timeout` at once;
    /// then Lean is interrupted (a new edit holding only the header makes
    /// it cancel the timed-out version's elaboration) and the worker is
    /// kept if, within this long, Lean has finished that edit and the
    /// process has gone quiet (its CPU use over a short window has
    /// dropped). Otherwise it is killed and replaced as before (counted in
    /// `timeout_kills`). The same applies to a running request whose
    /// caller went away (`cancel_kills`): a worker still computing a
    /// departed caller's text would steal CPU from every later caller.
    /// The worker takes no other request meanwhile. 0 = kill at once. At most [`MAX_TIMEOUT_GRACE_MS`]. Default 15 s: the
    /// `faults` test's text (400 `omega` theorems on a 1.5 s limit) was
    /// interrupted in 4.9 s on WASM Lean on the shared 2-core machine.
    pub timeout_grace_ms: u64,
    /// Requests waiting per header (not counting the ones being served).
    /// A request that finds the queue full is answered `Overloaded` at once.
    pub max_queue_per_key: usize,
    /// Limit on starting a worker (process start, `initialize`, header
    /// elaboration).
    pub start_timeout_ms: u64,
    /// How often the RSS of a busy worker is polled (only with
    /// `rss_limit_bytes`).
    pub rss_poll_ms: u64,
    /// How often an idle worker is checked for being alive (a worker that
    /// died while idle is replaced before a request finds it dead) and the
    /// idle timeout is looked at.
    pub health_interval_ms: u64,
    /// Samples kept per method for the latency percentiles in `status`.
    pub latency_window: usize,
    /// Bytes of a worker's stderr kept for error messages.
    pub stderr_log_bytes: usize,
    /// Elaborate `leanpool_lean::DEFAULT_WARMUP` in every new worker before
    /// it takes requests: on WASM Lean the first elaboration after start
    /// costs 8-25 s (V8 compiling Lean's code paths), later ones ~0.2 s, so
    /// without it the first request on each worker pays that.
    pub warmup: bool,
}

/// The former "chosen by backend" `max_uses`; now means never, like 0.
pub const MAX_USES_AUTO: u64 = u64::MAX;

/// Default `timeout_grace_ms`.
pub const DEFAULT_TIMEOUT_GRACE_MS: u64 = 15_000;

/// Cap of `timeout_grace_ms`: the header's queue waits for the interrupt.
pub const MAX_TIMEOUT_GRACE_MS: u64 = 60_000;

/// Default `default_timeout_ms`: a request's limit when it gives none
/// (the CLI's local commands use it too).
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 60_000;

/// Default `rss_headroom_bytes`.
pub const DEFAULT_RSS_HEADROOM: u64 = 3 << 29;

fn one() -> usize {
    1
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            prewarm: Vec::new(),
            max_workers_per_key: None,
            max_workers: None,
            idle_timeout_ms: 30 * 60 * 1000,
            max_uses: 0,
            spares_per_key: 1,
            isolate_by: IsolateBy::None,
            spare_memory_margin_bytes: 1 << 30,
            rss_limit_bytes: None,
            rss_headroom_bytes: Some(DEFAULT_RSS_HEADROOM),
            rlimit_as_bytes: None,
            default_timeout_ms: DEFAULT_REQUEST_TIMEOUT_MS,
            min_timeout_ms: 1_000,
            max_timeout_ms: 600_000,
            timeout_grace_ms: DEFAULT_TIMEOUT_GRACE_MS,
            max_queue_per_key: 64,
            start_timeout_ms: leanpool_lean::DEFAULT_START_TIMEOUT.as_millis() as u64,
            rss_poll_ms: 200,
            health_interval_ms: 1000,
            latency_window: 1024,
            stderr_log_bytes: leanpool_lean::DEFAULT_STDERR_LOG_BYTES,
            warmup: true,
        }
    }
}

/// The policies a pool applies to every request and worker, each the
/// daemon config's top-level table of that name as read: what the guard
/// lets through (`[guard]`), what an `ok` may rest on (`[verdict]`), the
/// workers' OS sandbox (`[sandbox]`). `Default` is the daemon's default
/// and the CLI's local commands' (one source).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Policies {
    /// `[guard]`: requests it refuses are answered `rejected` by the pool
    /// itself, before they are queued.
    pub guard: GuardPolicy,
    /// `[verdict]`: which axioms an `ok` may rest on.
    pub verdict: VerdictPolicy,
    /// `[sandbox]`: the OS sandbox of every worker.
    pub sandbox: SandboxConfig,
}

impl Policies {
    /// The guard and verdict policies of a method run on workers of
    /// `backend` (the pool's, and the CLI's local commands' outside a
    /// pool): the tables as read, and whether the workers are native
    /// (`native_decide` passes the guard only there, and only with
    /// `[verdict] trust_compiler`: [`leanpool_methods::Policy::screening`]).
    pub fn method_policy(&self, backend: BackendKind) -> leanpool_methods::Policy {
        leanpool_methods::Policy {
            guard: self.guard.clone(),
            verdict: self.verdict.clone(),
            native_backend: backend == BackendKind::Native,
            library: Default::default(),
        }
    }
}

/// A pool setting under which the pool could never answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidPoolConfig {
    /// The named setting is 0.
    #[error("pool config: `{0}` must be at least 1")]
    Zero(&'static str),
    #[error("pool config: need min_timeout_ms ({min}) <= default_timeout_ms ({default}) <= max_timeout_ms ({max})")]
    /// The time limits are out of order.
    TimeoutOrder {
        /// `min_timeout_ms`.
        min: u64,
        /// `default_timeout_ms`.
        default: u64,
        /// `max_timeout_ms`.
        max: u64,
    },
    #[error("pool config: `timeout_grace_ms` ({0}) must be at most {MAX_TIMEOUT_GRACE_MS}")]
    /// `timeout_grace_ms` above [`MAX_TIMEOUT_GRACE_MS`].
    GraceTooLong(u64),
    #[error("pool config: prewarm min {min} exceeds max_workers_per_key {max}")]
    /// A header's prewarm minimum above `max_workers_per_key`.
    PrewarmAboveMax {
        /// The prewarm minimum.
        min: usize,
        /// `max_workers_per_key`.
        max: usize,
    },
}

impl PoolConfig {
    /// Rejects settings under which the pool could never answer (no worker
    /// allowed, no queue slot), so the daemon can refuse a bad config file
    /// with a message instead of hanging on the first request.
    pub fn validate(&self) -> Result<(), InvalidPoolConfig> {
        let positive = [
            ("max_workers", self.max_workers.map_or(1, |n| n as u64)),
            (
                "max_workers_per_key",
                self.max_workers_per_key.map_or(1, |n| n as u64),
            ),
            ("max_queue_per_key", self.max_queue_per_key as u64),
            ("default_timeout_ms", self.default_timeout_ms),
            ("start_timeout_ms", self.start_timeout_ms),
            ("rss_poll_ms", self.rss_poll_ms),
            ("health_interval_ms", self.health_interval_ms),
            ("latency_window", self.latency_window as u64),
        ];
        for (name, v) in positive {
            if v == 0 {
                return Err(InvalidPoolConfig::Zero(name));
            }
        }
        if !(self.min_timeout_ms <= self.default_timeout_ms
            && self.default_timeout_ms <= self.max_timeout_ms)
        {
            return Err(InvalidPoolConfig::TimeoutOrder {
                min: self.min_timeout_ms,
                default: self.default_timeout_ms,
                max: self.max_timeout_ms,
            });
        }
        if self.timeout_grace_ms > MAX_TIMEOUT_GRACE_MS {
            return Err(InvalidPoolConfig::GraceTooLong(self.timeout_grace_ms));
        }
        // A machine-sized limit is known only at start (prewarm is then
        // capped by it).
        if let Some(max) = self.max_workers_per_key {
            if let Some(p) = self.prewarm.iter().find(|p| p.min > max) {
                return Err(InvalidPoolConfig::PrewarmAboveMax { min: p.min, max });
            }
        }
        Ok(())
    }

    /// The memory cap of a worker whose RSS was `ready_rss` when it became
    /// ready: the lower of `rss_limit_bytes` and `ready_rss +
    /// rss_headroom_bytes` (a headroom without a readable RSS is ignored).
    pub fn rss_cap(&self, ready_rss: Option<u64>) -> Option<u64> {
        let relative = self
            .rss_headroom_bytes
            .zip(ready_rss)
            .map(|(h, r)| r.saturating_add(h));
        match (self.rss_limit_bytes, relative) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// `max_uses` as it applies to workers of `backend` (0 = never; the
    /// same on both backends since recycling goes by measured RSS).
    pub fn effective_max_uses(&self, _backend: BackendKind) -> u64 {
        match self.max_uses {
            MAX_USES_AUTO => 0,
            n => n,
        }
    }

    /// How a worker of this pool starts: `command`, the `[pool]` start-up
    /// settings (`start_timeout_ms`, `stderr_log_bytes`, `warmup`) and
    /// `sandbox`. The pool's workers and the CLI's local worker are built
    /// by this one function.
    pub fn worker_config(
        &self,
        command: leanpool_lean::LeanCommand,
        sandbox: &SandboxConfig,
    ) -> WorkerConfig {
        WorkerConfig {
            command,
            start_timeout: Duration::from_millis(self.start_timeout_ms),
            stderr_log_bytes: self.stderr_log_bytes,
            warmup: self
                .warmup
                .then(|| leanpool_lean::DEFAULT_WARMUP.to_string()),
            sandbox: sandbox.clone(),
        }
    }

    /// The config with every zero-means-broken field raised to 1, so that
    /// `Pool::new` (which cannot fail) still gets a working pool. The
    /// prewarm minimums are capped separately ([`PoolConfig::cap_prewarm`]),
    /// by the per-key limit in force at start, which the pool sizes.
    pub(crate) fn sanitized(mut self) -> Self {
        for v in [&mut self.max_workers, &mut self.max_workers_per_key]
            .into_iter()
            .flatten()
        {
            *v = (*v).max(1);
        }
        for v in [&mut self.max_queue_per_key, &mut self.latency_window] {
            *v = (*v).max(1);
        }
        for v in [
            &mut self.default_timeout_ms,
            &mut self.start_timeout_ms,
            &mut self.rss_poll_ms,
            &mut self.health_interval_ms,
        ] {
            *v = (*v).max(1);
        }
        self.timeout_grace_ms = self.timeout_grace_ms.min(MAX_TIMEOUT_GRACE_MS);
        self.max_timeout_ms = self.max_timeout_ms.max(1);
        self.min_timeout_ms = self.min_timeout_ms.clamp(1, self.max_timeout_ms);
        self
    }

    /// Caps every prewarm minimum by `per_key`, the per-key worker limit in
    /// force at start.
    pub(crate) fn cap_prewarm(&mut self, per_key: usize) {
        for p in &mut self.prewarm {
            p.min = p.min.min(per_key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_grace_is_capped() {
        let c = PoolConfig {
            timeout_grace_ms: MAX_TIMEOUT_GRACE_MS + 1,
            ..PoolConfig::default()
        };
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("timeout_grace_ms"));
        assert_eq!(c.sanitized().timeout_grace_ms, MAX_TIMEOUT_GRACE_MS);
        let c = PoolConfig {
            timeout_grace_ms: 0,
            ..PoolConfig::default()
        };
        c.validate().unwrap();
    }

    #[test]
    fn timeout_range_must_hold_the_default() {
        let c = PoolConfig {
            min_timeout_ms: 5,
            default_timeout_ms: 4,
            ..PoolConfig::default()
        };
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("min_timeout_ms"));
        let c = PoolConfig {
            max_timeout_ms: 10,
            ..PoolConfig::default()
        };
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("max_timeout_ms"));
        assert!(PoolConfig::default().validate().is_ok());
    }

    #[test]
    fn unknown_keys_are_refused() {
        let e = serde_json::from_str::<PoolConfig>(r#"{"max_worker": 2}"#).unwrap_err();
        assert!(e.to_string().contains("max_worker"), "{e}");
        // The policies are tables of their own, not `[pool]` keys.
        assert!(serde_json::from_str::<PoolConfig>(r#"{"guard": {}}"#).is_err());
        assert!(serde_json::from_str::<PrewarmEntry>(r#"{"header": "", "mn": 1}"#).is_err());
    }

    #[test]
    fn worker_config_follows_the_pool_table() {
        let cmd = leanpool_lean::LeanCommand {
            program: "lean".into(),
            args: vec![],
            env: vec![],
            cwd: None,
            backend: BackendKind::Native,
            version: None,
            source: "test".into(),
        };
        let c = PoolConfig {
            start_timeout_ms: 7,
            stderr_log_bytes: 9,
            warmup: false,
            ..PoolConfig::default()
        };
        let w = c.worker_config(cmd.clone(), &SandboxConfig::default());
        assert_eq!(
            (w.start_timeout, w.stderr_log_bytes, w.warmup),
            (Duration::from_millis(7), 9, None)
        );
        let d = PoolConfig::default().worker_config(cmd, &SandboxConfig::default());
        assert_eq!(d.start_timeout, leanpool_lean::DEFAULT_START_TIMEOUT);
        assert_eq!(d.stderr_log_bytes, leanpool_lean::DEFAULT_STDERR_LOG_BYTES);
        assert!(d.warmup.is_some());
    }

    #[test]
    fn partial_json_gets_defaults() {
        let c: PoolConfig =
            serde_json::from_str(r#"{"max_uses": 2, "prewarm": [{"header": "open Nat"}]}"#)
                .unwrap();
        assert_eq!(c.max_uses, 2);
        assert_eq!(c.prewarm[0].min, 1);
        assert_eq!(c.max_queue_per_key, PoolConfig::default().max_queue_per_key);
        assert!(c.validate().is_ok());
    }

    #[test]
    fn max_uses_unlimited_by_default_and_recycling_by_rss_on() {
        let auto = PoolConfig::default();
        assert_eq!(auto.effective_max_uses(BackendKind::Wasm), 0);
        assert_eq!(auto.effective_max_uses(BackendKind::Native), 0);
        let old = PoolConfig {
            max_uses: MAX_USES_AUTO,
            ..PoolConfig::default()
        };
        assert_eq!(old.effective_max_uses(BackendKind::Wasm), 0);
        let set: PoolConfig = serde_json::from_str(r#"{"max_uses": 7}"#).unwrap();
        assert_eq!(set.effective_max_uses(BackendKind::Wasm), 7);
        assert_eq!(
            auto.rss_cap(Some(1 << 30)),
            Some((1 << 30) + DEFAULT_RSS_HEADROOM)
        );
        assert_eq!(auto.spares_per_key, 1);
        let off: PoolConfig =
            serde_json::from_str(r#"{"rss_headroom_bytes": null, "spares_per_key": 0}"#).unwrap();
        assert_eq!((off.rss_cap(Some(1)), off.spares_per_key), (None, 0));
    }

    #[test]
    fn rss_cap_is_the_lower_of_absolute_and_relative() {
        let mut c = PoolConfig {
            rss_headroom_bytes: None,
            ..PoolConfig::default()
        };
        assert_eq!(c.rss_cap(Some(100)), None);
        c.rss_headroom_bytes = Some(50);
        assert_eq!(c.rss_cap(Some(100)), Some(150));
        assert_eq!(c.rss_cap(None), None);
        c.rss_limit_bytes = Some(120);
        assert_eq!(c.rss_cap(Some(100)), Some(120));
        assert_eq!(c.rss_cap(Some(10)), Some(60));
        assert_eq!(c.rss_cap(None), Some(120));
        let t: PoolConfig = serde_json::from_str(r#"{"rss_headroom_bytes": 1073741824}"#).unwrap();
        assert_eq!(t.rss_cap(Some(1 << 30)), Some(2 << 30));
    }

    #[test]
    fn zero_limits_rejected_and_sanitized() {
        let c = PoolConfig {
            max_workers: Some(0),
            ..PoolConfig::default()
        };
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("max_workers"));
        assert_eq!(c.sanitized().max_workers, Some(1));
        let c = PoolConfig {
            max_workers_per_key: Some(1),
            prewarm: vec![PrewarmEntry {
                header: String::new(),
                min: 3,
            }],
            ..PoolConfig::default()
        };
        assert!(c.validate().is_err());
        let mut s = c.clone().sanitized();
        let machine = crate::sizing::Machine::probe();
        let sources = crate::sizing::LimitSources::default();
        s.cap_prewarm(
            crate::sizing::size(&s, sources, machine, None)
                .max_workers_per_key
                .value,
        );
        assert_eq!(s.prewarm[0].min, 1);
        // A machine-sized per-key limit caps prewarm at start, not before.
        let sized = PoolConfig {
            max_workers_per_key: None,
            ..c
        };
        assert!(sized.validate().is_ok());
    }
}

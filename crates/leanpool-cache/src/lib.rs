//! The daemon's persistent, content-addressed result cache (issue 23):
//! never elaborate the same thing twice.
//!
//! - [`key`]: the key, a digest of everything that can change an answer,
//!   with the reason for each field.
//! - [`store`]: the crash-safe store (redb) under `[cache] dir`: size cap,
//!   LRU eviction, per-entry digests, repair or discard of a damaged file.
//! - [`answer`]: which answers are stored (deterministic Lean verdicts
//!   only) and how a stored answer is given back (`"cached": true`).
//! - [`flight`]: concurrent identical requests share one Lean run.
//! - [`Cache`]: the four together, wrapped around one method call by
//!   [`Cache::serve`]; the daemon calls it in one place for every
//!   cacheable method.
//!
//! Only the daemon writes entries: an entry is the daemon's own answer to a
//! request it ran, stored under the key it computed; callers choose only
//! whether their request uses the cache (`"cache": false` bypasses it).

#![deny(missing_docs)]

pub mod answer;
pub mod flight;
pub mod key;
pub mod store;

pub use answer::Answer;
pub use key::{Identity, IdentityError, Key};
pub use leanpool_protocol::CacheStatus;
pub use store::{Lookup, Opened, Store, StoreError};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

/// `[cache]` of the daemon's config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheConfig {
    /// Look answers up and store them (default true).
    pub enabled: bool,
    /// The directory of the store (created `0700`); default
    /// `$XDG_CACHE_HOME/leanpool`, else `$HOME/.cache/leanpool`.
    pub dir: Option<PathBuf>,
    /// Cap on the stored answers' bytes (default 1 GiB); the least recently
    /// used entries are evicted past it. One answer larger than an eighth
    /// of it is not stored.
    pub max_bytes: u64,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            enabled: true,
            dir: None,
            max_bytes: 1 << 30,
        }
    }
}

/// Why the config's cache directory cannot be chosen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no `[cache] dir` given and neither XDG_CACHE_HOME nor HOME is set; set `[cache] dir`")]
pub struct NoCacheDir;

impl CacheConfig {
    /// The directory the store lives in.
    pub fn dir(&self) -> Result<PathBuf, NoCacheDir> {
        if let Some(d) = &self.dir {
            return Ok(d.clone());
        }
        let env = |k| std::env::var_os(k).filter(|v| !v.is_empty());
        if let Some(x) = env("XDG_CACHE_HOME") {
            return Ok(PathBuf::from(x).join("leanpool"));
        }
        env("HOME")
            .map(|h| PathBuf::from(h).join(".cache").join("leanpool"))
            .ok_or(NoCacheDir)
    }
}

/// The member of a cacheable method's params that bypasses the cache.
pub const SWITCH_PARAM: &str = "cache";

/// Removes the per-request switch from `params`: `false` when the caller
/// asked to bypass the cache. A switch that is not a boolean is an error
/// message for `INVALID_PARAMS`.
pub fn take_switch(params: &mut Value) -> Result<bool, String> {
    let Value::Object(m) = params else {
        return Ok(true);
    };
    match m.remove(SWITCH_PARAM) {
        None | Some(Value::Bool(true)) => Ok(true),
        Some(Value::Bool(false)) => Ok(false),
        Some(_) => Err(format!("`{SWITCH_PARAM}` must be true or false")),
    }
}

/// Whether `params` asks for timing fields (`"timings": true`).
pub fn wants_timings(params: &Value) -> bool {
    params.get("timings") == Some(&Value::Bool(true))
}

#[derive(Default)]
struct Counters {
    hits: AtomicU64,
    misses: AtomicU64,
    joins: AtomicU64,
    bypassed: AtomicU64,
    corrupt: AtomicU64,
}

/// The store, the in-flight table and the counters of one daemon.
pub struct Cache {
    store: Arc<Store>,
    identity: Identity,
    flights: Arc<flight::Flights>,
    counters: Counters,
    max_bytes: u64,
}

/// One request as [`Cache::serve`] sees it.
pub struct Request<'a, P> {
    /// The method's name (part of the key).
    pub method: &'a str,
    /// The decoded params (the key is computed from them).
    pub params: P,
    /// The caller's partition (`[pool] isolate_by` tag, or empty).
    pub partition: &'a str,
    /// What judges this request when it is not what the cache was opened
    /// with: the identity of the daemon project the request runs in (its
    /// backend and library, issue 25). `None`: the cache's own.
    pub identity: Option<&'a Identity>,
    /// `false`: bypass the cache (see [`take_switch`]).
    pub use_cache: bool,
    /// The caller asked for timing fields.
    pub timings: bool,
}

impl Cache {
    /// Opens the store for a daemon of `identity`.
    pub fn open(cfg: &CacheConfig, identity: Identity) -> Result<Cache, OpenError> {
        let dir = cfg.dir()?;
        let store = Arc::new(Store::open(&dir, cfg.max_bytes)?);
        Ok(Cache {
            store,
            identity,
            flights: Default::default(),
            counters: Counters::default(),
            max_bytes: cfg.max_bytes,
        })
    }

    /// Serves one request of a method whose result is `A`: from the store,
    /// by joining an identical request in flight, or by `run` (whose
    /// storable answer is then stored). Returns the answer's JSON.
    pub async fn serve<P, A, E, F, Fut>(&self, req: Request<'_, P>, run: F) -> Result<String, E>
    where
        P: Serialize,
        A: Answer,
        E: From<EncodeError>,
        F: FnOnce(P) -> Fut,
        Fut: Future<Output = Result<A, E>>,
    {
        let t0 = Instant::now();
        let elapsed = |t: bool| t.then(|| t0.elapsed().as_millis() as u64);
        if !req.use_cache {
            self.counters.bypassed.fetch_add(1, Relaxed);
            return encode(&run(req.params).await?);
        }
        let identity = req.identity.unwrap_or(&self.identity);
        let k = key::key(identity, req.partition, req.method, &req.params);
        if let Some(hit) = self.lookup::<A>(&k, elapsed(req.timings)).await {
            self.counters.hits.fetch_add(1, Relaxed);
            return Ok(hit);
        }
        match self.flights.join(k) {
            flight::Role::Follower(slot) => {
                if let Some(stored) = flight::follow(slot).await {
                    if let Some(a) = answer::from_stored::<A>(&stored, elapsed(req.timings)) {
                        self.counters.joins.fetch_add(1, Relaxed);
                        return Ok(a);
                    }
                }
                // The leader had no storable answer: run our own.
                self.counters.misses.fetch_add(1, Relaxed);
                let a = run(req.params).await?;
                self.save(&k, answer::to_stored(&a)).await;
                encode(&a)
            }
            flight::Role::Leader(lead) => {
                self.counters.misses.fetch_add(1, Relaxed);
                let a = run(req.params).await?;
                if let Some(stored) = self.save(&k, answer::to_stored(&a)).await {
                    lead.finish(stored);
                }
                encode(&a)
            }
        }
    }

    /// A stored answer for `k`, ready to send; a store failure is a miss.
    async fn lookup<A: Answer>(&self, k: &Key, elapsed: Option<u64>) -> Option<String> {
        match self.store.get(k) {
            Ok(Lookup::Hit(stored)) => {
                let a = answer::from_stored::<A>(&stored, elapsed);
                if a.is_none() {
                    // Intact bytes that are not this method's answer: only
                    // a key collision or a bug could do it; never served.
                    tracing::error!(key = %k.hex(), "cached entry does not decode as its method's answer; ignored");
                }
                a
            }
            Ok(Lookup::Miss) => None,
            Ok(Lookup::Corrupt) => {
                self.counters.corrupt.fetch_add(1, Relaxed);
                None
            }
            Err(e) => {
                tracing::warn!(error = %e, "result cache lookup failed; running the request");
                None
            }
        }
    }

    /// Stores an answer's storable bytes ([`answer::to_stored`]); the
    /// bytes stored, or `None`.
    async fn save(&self, k: &Key, stored: Option<Vec<u8>>) -> Option<Arc<Vec<u8>>> {
        let stored = Arc::new(stored?);
        // A commit waits for fsync: off the async threads.
        let (store, key, bytes) = (self.store.clone(), *k, stored.clone());
        match tokio::task::spawn_blocking(move || store.put(&key, &bytes)).await {
            Ok(Ok(true)) => Some(stored),
            Ok(Ok(false)) => None,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "result cache write failed; answer not stored");
                None
            }
            Err(e) => {
                tracing::warn!(error = %e, "result cache write failed; answer not stored");
                None
            }
        }
    }

    /// `status`' report.
    pub fn status(&self) -> CacheStatus {
        let (entries, bytes) = self.store.usage();
        let c = &self.counters;
        CacheStatus {
            enabled: true,
            reason: None,
            path: Some(self.store.path().display().to_string()),
            opened: Some(
                match self.store.opened() {
                    Opened::Intact => "intact",
                    Opened::Repaired => "repaired",
                    Opened::Discarded => "discarded",
                }
                .into(),
            ),
            hits: c.hits.load(Relaxed),
            misses: c.misses.load(Relaxed),
            in_flight_joins: c.joins.load(Relaxed),
            bypassed: c.bypassed.load(Relaxed),
            corrupt: c.corrupt.load(Relaxed),
            entries,
            bytes,
            max_bytes: self.max_bytes,
        }
    }

    /// The status of a daemon whose cache is off, and why.
    pub fn off_status(why: impl Into<String>) -> CacheStatus {
        CacheStatus {
            enabled: false,
            reason: Some(why.into()),
            ..CacheStatus::default()
        }
    }

    /// The store (for `leanpool cache` and tests).
    pub fn store(&self) -> &Store {
        &self.store
    }
}

/// A result that could not be encoded as JSON (a leanpool bug).
#[derive(Debug, thiserror::Error)]
#[error("cannot encode the result: {0}")]
pub struct EncodeError(#[from] serde_json::Error);

impl From<EncodeError> for leanpool_protocol::RpcError {
    fn from(e: EncodeError) -> Self {
        leanpool_protocol::RpcError {
            code: leanpool_protocol::ErrorCode::InternalError,
            message: e.to_string(),
            data: None,
        }
    }
}

fn encode<T: Serialize, E: From<EncodeError>>(v: &T) -> Result<String, E> {
    serde_json::to_string(v).map_err(|e| E::from(EncodeError(e)))
}

/// Why [`Cache::open`] failed.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// No directory could be chosen.
    #[error(transparent)]
    NoDir(#[from] NoCacheDir),
    /// The store could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use leanpool_protocol::{CheckResult, CheckStatus};
    use std::sync::atomic::{AtomicU32, Ordering::SeqCst};

    async fn ask(cache: &Cache, identity: Option<&Identity>, runs: &AtomicU32) -> String {
        let req = Request {
            method: "check",
            params: serde_json::json!({"text": "import Judge.Basic\nexample : True := trivial"}),
            partition: "",
            identity,
            use_cache: true,
            timings: false,
        };
        cache
            .serve(req, |_| async move {
                runs.fetch_add(1, SeqCst);
                Ok::<_, EncodeError>(CheckResult::from_diagnostics(vec![]))
            })
            .await
            .unwrap()
    }

    /// Issue 25: a daemon serving several projects keys each request by
    /// its project's identity, so the same text in another project (another
    /// library) is never answered from the first project's entry.
    #[tokio::test]
    async fn a_project_identity_separates_entries() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = CacheConfig {
            enabled: true,
            dir: Some(dir.path().join("c")),
            max_bytes: 1 << 20,
        };
        let cache = Cache::open(&cfg, Identity::from_digest("core")).unwrap();
        let judge = Identity::from_digest("judge");
        let runs = AtomicU32::new(0);
        let first: CheckResult = serde_json::from_str(&ask(&cache, None, &runs).await).unwrap();
        assert_eq!(first.status, CheckStatus::Ok);
        ask(&cache, Some(&judge), &runs).await;
        assert_eq!(
            runs.load(SeqCst),
            2,
            "the judge's request was answered from core's entry"
        );
        assert!(ask(&cache, None, &runs).await.contains("\"cached\":true"));
        assert!(ask(&cache, Some(&judge), &runs)
            .await
            .contains("\"cached\":true"));
        assert_eq!(runs.load(SeqCst), 2);
    }
}

//! The result cache as the daemon uses it: opened once at start
//! ([`open`]), wrapped around every pool method's call in one place
//! ([`serve`]), reported by `status`.
//!
//! What is stored, under which key, and why, is `leanpool_cache`'s
//! (its crate docs); this module adds what only the daemon knows: the
//! caller's partition under `[pool] isolate_by`, the per-request switch,
//! and the translation to RPC answers.

use leanpool_cache::{Answer, Cache, CacheConfig, CacheStatus, Identity, Request};
use leanpool_pool::IsolateBy;
use leanpool_protocol::method::Method;
use leanpool_protocol::{BackendInfo, ErrorCode, RpcError};
use leanpool_rpc::handler::{params, rpc_error, CallContext};
use serde_json::value::RawValue;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;

/// The daemon's cache, or why it has none.
#[derive(Clone)]
pub enum CacheSlot {
    /// No cache configured (a library user's handler): `status` has no
    /// `cache` member.
    Absent,
    /// Off, and why (config, no library identity, a store that could not
    /// be opened).
    Off(String),
    /// On.
    On(Arc<Cache>),
}

impl CacheSlot {
    /// `status`' `cache` member.
    pub fn status(&self) -> Option<CacheStatus> {
        match self {
            CacheSlot::Absent => None,
            CacheSlot::Off(why) => Some(Cache::off_status(why.clone())),
            CacheSlot::On(c) => Some(c.status()),
        }
    }
}

/// Opens the cache of a daemon whose backend is `backend`, judging with
/// `policies` (see [`crate::DaemonConfig::answer_policies`]). Blocking:
/// hashes the daemon's executable and reads the store's index. A failure
/// turns the cache off (logged, and shown by `status`), never the daemon.
pub fn open(cfg: &CacheConfig, backend: &BackendInfo, policies: &Value) -> CacheSlot {
    if !cfg.enabled {
        return CacheSlot::Off("disabled by config ([cache] enabled = false)".into());
    }
    let opened = leanpool_cache::key::build_id()
        .and_then(|build| Identity::new(backend, policies, &build))
        .map_err(|e| e.to_string())
        .and_then(|id| Cache::open(cfg, id).map_err(|e| e.to_string()));
    match opened {
        Ok(c) => {
            let s = c.status();
            tracing::info!(
                store = s.path.as_deref().unwrap_or("?"),
                opened = s.opened.as_deref().unwrap_or("?"),
                entries = s.entries,
                bytes = s.bytes,
                "result cache"
            );
            CacheSlot::On(Arc::new(c))
        }
        Err(why) => {
            tracing::warn!(error = %why, "result cache off");
            CacheSlot::Off(why)
        }
    }
}

/// Opens the cache of a daemon whose projects' backends are `backends`
/// (the first the default), judging with `policies`, and gives each
/// project its identity ([`Identity::new`] of its own backend and
/// library). A project whose library cannot be identified turns the cache
/// off for the daemon (nothing would tell its answers apart), as does any
/// failure of [`open`].
pub fn open_for(
    cfg: &CacheConfig,
    backends: &[BackendInfo],
    policies: &Value,
) -> (CacheSlot, Vec<Option<Identity>>) {
    let none = || vec![None; backends.len()];
    let Some(first) = backends.first() else {
        return (CacheSlot::Off("no project".into()), vec![]);
    };
    let slot = open(cfg, first, policies);
    if !matches!(slot, CacheSlot::On(_)) || backends.len() == 1 {
        return (slot, none());
    }
    let ids = leanpool_cache::key::build_id().and_then(|build| {
        backends
            .iter()
            .map(|b| Identity::new(b, policies, &build))
            .collect::<Result<Vec<_>, _>>()
    });
    match ids {
        Ok(ids) => (slot, ids.into_iter().map(Some).collect()),
        Err(e) => {
            tracing::warn!(error = %e, "result cache off");
            (CacheSlot::Off(e.to_string()), none())
        }
    }
}

/// The caller's partition of the key space: empty when callers share
/// workers, the caller's tag under `[pool] isolate_by` (a connection's tag
/// carries `instance`, this daemon run's nonce, since connection numbers
/// start over at each start).
pub fn partition(isolate: IsolateBy, ctx: &CallContext, instance: u64) -> String {
    match isolate {
        IsolateBy::None => String::new(),
        IsolateBy::Uid => format!("uid:{}", ctx.peer.uid),
        IsolateBy::Connection => format!("conn:{instance:x}:{}", ctx.conn),
    }
}

/// Serves one request of pool method `M` with raw params `p` through the
/// cache (when there is one), running `run` on a miss. The switch
/// (`"cache": false`) is taken out of the params before they are decoded.
/// `identity`: the project's ([`crate::projects::ServedProject::identity`];
/// `None`: the one the cache was opened with).
pub async fn serve<M, F, Fut>(
    slot: &CacheSlot,
    partition: String,
    identity: Option<&Identity>,
    mut p: Value,
    run: F,
) -> Result<Box<RawValue>, RpcError>
where
    M: Method,
    M::Result: Answer,
    F: FnOnce(M::Params) -> Fut,
    Fut: Future<Output = Result<M::Result, RpcError>>,
{
    let use_cache = leanpool_cache::take_switch(&mut p).map_err(|e| {
        rpc_error(
            ErrorCode::InvalidParams,
            format!("invalid params for `{}`: {e}", M::NAME),
        )
    })?;
    let timings = leanpool_cache::wants_timings(&p);
    let decoded: M::Params = params(M::NAME, p)?;
    let json = match slot {
        CacheSlot::On(cache) => {
            let req = Request {
                method: M::NAME,
                params: decoded,
                partition: &partition,
                identity,
                use_cache,
                timings,
            };
            cache.serve(req, run).await?
        }
        CacheSlot::Absent | CacheSlot::Off(_) => serde_json::to_string(&run(decoded).await?)
            .map_err(|e| rpc_error(ErrorCode::InternalError, format!("encoding: {e}")))?,
    };
    RawValue::from_string(json)
        .map_err(|e| rpc_error(ErrorCode::InternalError, format!("encoding: {e}")))
}

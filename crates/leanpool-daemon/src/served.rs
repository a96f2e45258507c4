//! The [`Served`] impls of the methods the daemon runs itself, not on the
//! pool: `gted` (its work and caps in [`crate::gted`]), `status`
//! ([`PoolHandler::status`]) and `cache_clear` (the store of
//! [`crate::cache`]). Each is one route of [`crate::methods::ROUTES`].

use crate::cache::CacheSlot;
use crate::handler::PoolHandler;
use crate::methods::Served;
use leanpool_protocol::method::{self, CacheClearResult, NoParams};
use leanpool_protocol::{ErrorCode, GtedParams, GtedResult, RpcError, StatusResult};
use leanpool_rpc::handler::{rpc_error, CallContext};

impl Served for method::Gted {
    /// Exact TED is cubic in the worst case: it runs off the async
    /// threads so one big pair cannot stall every connection.
    async fn serve(
        h: &PoolHandler,
        p: GtedParams,
        _ctx: &CallContext,
    ) -> Result<GtedResult, RpcError> {
        let limits = h.gted_limits();
        match tokio::task::spawn_blocking(move || crate::gted::run_gted(&p, &limits)).await {
            Ok(r) => r,
            Err(e) => Err(rpc_error(
                ErrorCode::InternalError,
                format!("gted task failed: {e}"),
            )),
        }
    }
}

impl Served for method::Status {
    async fn serve(
        h: &PoolHandler,
        _: NoParams,
        _ctx: &CallContext,
    ) -> Result<StatusResult, RpcError> {
        h.status()
    }
}

impl Served for method::CacheClear {
    /// Only the daemon's owner may clear (like `shutdown`): the cache is
    /// shared by every caller, whose next identical requests would then
    /// run on Lean again.
    async fn serve(
        h: &PoolHandler,
        _: NoParams,
        ctx: &CallContext,
    ) -> Result<CacheClearResult, RpcError> {
        let owner = nix::unistd::geteuid().as_raw();
        if ctx.peer.uid != owner {
            return Err(rpc_error(
                ErrorCode::Unauthorized,
                format!("only the daemon's owner (uid {owner}) may clear its result cache"),
            ));
        }
        let cache = match h.cache() {
            CacheSlot::On(c) => c.clone(),
            CacheSlot::Off(why) => {
                return Err(rpc_error(
                    ErrorCode::InvalidRequest,
                    format!("this daemon's result cache is off ({why}): nothing to clear; a store no daemon holds is cleared by `leanpool cache clear --config FILE`"),
                ))
            }
            CacheSlot::Absent => {
                return Err(rpc_error(
                    ErrorCode::InvalidRequest,
                    "this daemon has no result cache: nothing to clear",
                ))
            }
        };
        let removed = tokio::task::spawn_blocking(move || cache.store().clear())
            .await
            .map_err(|e| rpc_error(ErrorCode::InternalError, format!("cache clear: {e}")))?
            .map_err(|e| {
                rpc_error(
                    ErrorCode::InternalError,
                    format!("cache clear failed: {e}; stop the daemon and run `leanpool cache clear --config FILE`"),
                )
            })?;
        tracing::info!(
            conn = ctx.conn,
            uid = ctx.peer.uid,
            removed,
            "result cache cleared"
        );
        Ok(CacheClearResult { removed })
    }
}

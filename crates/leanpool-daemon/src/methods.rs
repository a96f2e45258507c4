//! The daemon's dispatch, derived from `leanpool_protocol::method`: one
//! [`Route`] per method, built from the method's type, decodes its params
//! into `M::Params` and encodes its `M::Result`. Pool methods run through
//! [`leanpool_pool::Pool::call`]; the others implement [`Served`].
//!
//! Adding a method: its type in `leanpool_protocol::method`, its
//! implementation (a `leanpool_pool::PoolMethod` impl, or its work in a
//! file of its own here and its [`Served`] impl in `served.rs`), and its
//! line in [`ROUTES`]. [`PoolHandler`]'s `leanpool_rpc::Handler` impl,
//! the transport's way in, is here too: a request goes to `dispatch`.

use crate::handler::PoolHandler;
use leanpool_pool::PoolMethod;
use leanpool_protocol::method::{self, Method};
use leanpool_protocol::{ErrorCode, RpcError};
use leanpool_rpc::handler::{method_not_found, params, result, rpc_error, CallContext, Handler};
use leanpool_rpc::tunnel::Upgrade;
use serde_json::value::RawValue;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// Every method the daemon serves (`ping` and `shutdown` are answered by
/// the server itself, `lease` takes its connection over; see
/// `docs/protocol.md`).
pub const METHODS: &[&str] = method::NAMES;

/// A method the daemon runs itself (not on the pool).
pub trait Served: Method {
    /// Answers one request of this method.
    fn serve(
        h: &PoolHandler,
        params: Self::Params,
        ctx: &CallContext,
    ) -> impl Future<Output = Result<Self::Result, RpcError>> + Send;
}

/// The future of one routed call: the result already encoded.
pub type Answer<'a> = Pin<Box<dyn Future<Output = Result<Box<RawValue>, RpcError>> + Send + 'a>>;

/// One method's entry in the dispatch table.
#[derive(Clone, Copy)]
pub struct Route {
    /// The method's name (`M::NAME`).
    pub name: &'static str,
    /// Decodes params as the method would (`INVALID_PARAMS` when they do
    /// not fit), without running it.
    pub decode: fn(Value) -> Result<(), RpcError>,
    call: for<'a> fn(&'a PoolHandler, Value, &'a CallContext) -> Answer<'a>,
}

impl Route {
    /// A method the pool runs on a warm worker.
    pub const fn pool<M: PoolMethod>() -> Route
    where
        M::Result: leanpool_cache::Answer,
    {
        Route {
            name: M::NAME,
            decode: decode_as::<M>,
            call: call_pool::<M>,
        }
    }

    /// A method the daemon runs itself.
    pub const fn served<M: Served>() -> Route {
        Route {
            name: M::NAME,
            decode: decode_as::<M>,
            call: call_served::<M>,
        }
    }
}

/// The daemon's request methods, each routed by its type.
pub const ROUTES: &[Route] = &[
    Route::pool::<method::Check>(),
    Route::pool::<method::Verify>(),
    Route::pool::<method::Normalize>(),
    Route::pool::<method::Opt>(),
    Route::served::<method::Gted>(),
    Route::pool::<method::Equiv>(),
    Route::served::<method::Status>(),
    Route::served::<method::CacheClear>(),
];

/// The route of `method`, if it is a request method.
pub fn route(method: &str) -> Option<&'static Route> {
    ROUTES.iter().find(|r| r.name == method)
}

/// Decodes `params` exactly as the daemon would before running `method`:
/// `INVALID_PARAMS` for wrong shapes or types, `METHOD_NOT_FOUND` for
/// names the daemon does not serve. (`lease`'s params decode here too; a
/// `project` member is taken out first, as the daemon does.)
pub fn decode(method: &str, p: Value) -> Result<(), RpcError> {
    let mut p = p;
    crate::projects::take_project(&mut p)?;
    if method == method::Lease::NAME {
        return decode_as::<method::Lease>(p);
    }
    match route(method) {
        Some(r) => (r.decode)(p),
        None => Err(method_not_found(method)),
    }
}

/// Runs `method` on `h`: the one dispatch of the daemon's requests.
pub(crate) fn dispatch<'a>(
    h: &'a PoolHandler,
    method: &str,
    p: Value,
    ctx: &'a CallContext,
) -> Answer<'a> {
    match route(method) {
        Some(r) => (r.call)(h, p, ctx),
        None if method == method::Lease::NAME => {
            // The server sends `lease` to `upgrade`; reaching here is a bug.
            Box::pin(async {
                Err(rpc_error(
                    ErrorCode::InternalError,
                    "`lease` reached the request path",
                ))
            })
        }
        None => {
            let e = method_not_found(method);
            Box::pin(async move { Err(e) })
        }
    }
}

/// The transport's seam: requests go through `dispatch`, `lease`
/// upgrades to a tunnel (`PoolHandler::start_lease`).
impl Handler for PoolHandler {
    async fn call(
        &self,
        method: &str,
        p: Value,
        ctx: &CallContext,
    ) -> Result<Box<RawValue>, RpcError> {
        dispatch(self, method, p, ctx).await
    }

    fn upgrades(&self, method: &str) -> bool {
        method == method::Lease::NAME
    }

    async fn upgrade(
        &self,
        method: &str,
        p: Value,
        ctx: &CallContext,
    ) -> Result<Upgrade, RpcError> {
        if method != method::Lease::NAME {
            return Err(method_not_found(method));
        }
        self.start_lease(method, p, ctx).await
    }

    async fn shutdown(&self, deadline: Duration) {
        self.shutdown_pools(deadline).await
    }
}

fn decode_as<M: Method>(p: Value) -> Result<(), RpcError> {
    params::<M::Params>(M::NAME, p).map(drop)
}

/// A pool method, through the result cache (`PoolHandler::pool_call`):
/// every pool method's result says whether it may be stored
/// (`leanpool_cache::Answer`).
fn call_pool<'a, M>(h: &'a PoolHandler, p: Value, ctx: &'a CallContext) -> Answer<'a>
where
    M: PoolMethod,
    M::Result: leanpool_cache::Answer,
{
    Box::pin(h.pool_call::<M>(p, ctx))
}

fn call_served<'a, M: Served>(h: &'a PoolHandler, p: Value, ctx: &'a CallContext) -> Answer<'a> {
    Box::pin(async move {
        let p = params::<M::Params>(M::NAME, p)?;
        result(&M::serve(h, p, ctx).await?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_request_method_has_one_route() {
        let mut names: Vec<_> = ROUTES.iter().map(|r| r.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ROUTES.len());
        for m in METHODS {
            // The server answers `ping`/`shutdown`; `lease` is an upgrade.
            let own = ["ping", "shutdown", "lease"].contains(m);
            assert_eq!(route(m).is_some(), !own, "{m}");
        }
    }

    #[test]
    fn decoding() {
        assert!(decode("check", json!({"text": "example : 1 = 1 := rfl"})).is_ok());
        for (m, p) in [
            ("check", json!({"txt": "x"})),
            ("check", json!({"text": 5})),
            ("check", json!([1])),
            ("opt", json!({"text": "t", "timeout_ms": -1})),
            ("status", json!({"x": 1})),
            ("lease", json!({"header": 1})),
        ] {
            assert_eq!(decode(m, p).unwrap_err().code, ErrorCode::InvalidParams);
        }
        assert!(decode("status", Value::Null).is_ok());
        assert!(decode("status", json!({})).is_ok());
        assert!(decode(
            "gted",
            json!({"a": {"content": "x"}, "b": {"content": "x"}})
        )
        .is_ok());
        assert_eq!(
            decode("frobnicate", Value::Null).unwrap_err().code,
            ErrorCode::MethodNotFound
        );
    }

    /// Params must be an object (or absent): `["x"]` was decoded as
    /// `{"text": "x"}` by serde's sequence form of structs.
    #[test]
    fn non_object_params_are_invalid() {
        for p in [
            json!(["x"]),
            json!(["x", 5, false]),
            json!("x"),
            json!(3),
            json!(true),
        ] {
            for m in ["check", "normalize", "opt", "gted", "status"] {
                let e = decode(m, p.clone()).unwrap_err();
                assert_eq!(e.code, ErrorCode::InvalidParams, "{m} {p}");
                assert!(e.message.contains("object"), "{m}: {}", e.message);
            }
        }
    }
}

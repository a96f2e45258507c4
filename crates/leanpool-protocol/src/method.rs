//! The daemon's methods, one type each, as `lsp-types` does with its
//! requests: a method's name, its params and its result are named in one
//! place, and the daemon's dispatch, the Rust client, `leanpool batch` and
//! the pool's statistics take them from here.
//!
//! ```
//! use leanpool_protocol::method::{self, Method};
//! assert_eq!(method::Check::NAME, "check");
//! fn result_of<M: Method>(raw: &str) -> M::Result {
//!     serde_json::from_str(raw).unwrap()
//! }
//! let g = result_of::<method::Gted>(r#"{"distance":0,"similarity":1.0,"size_a":1,"size_b":1,"mode":"alpha","exact":true}"#);
//! assert_eq!(g.similarity, 1.0);
//! ```

use crate::{
    CheckParams, CheckResult, EquivParams, EquivResult, GtedParams, GtedResult, LeaseParams,
    LeaseResult, NormalizeResult, OptResult, StatementParams, StatusResult, VerifyParams,
    VerifyResult,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One JSON-RPC method of the daemon.
pub trait Method {
    /// The `method` member of the request.
    const NAME: &'static str;
    /// What `params` decodes to.
    type Params: Serialize + DeserializeOwned + Send + 'static;
    /// What `result` decodes to.
    type Result: Serialize + DeserializeOwned + Send + 'static;
}

macro_rules! methods {
    ($($(#[$doc:meta])* $ty:ident = $name:literal ($params:ty) -> $result:ty;)*) => {
        $(
            $(#[$doc])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq)]
            pub enum $ty {}
            impl Method for $ty {
                const NAME: &'static str = $name;
                type Params = $params;
                type Result = $result;
            }
        )*
        /// Every method's name, in the order docs/protocol.md lists them.
        pub const NAMES: &[&str] = &[$($name),*];

        /// Decodes `params` as method `name`'s `Params` and encodes them
        /// back (fields at their defaults may be left out): how a client
        /// that has a method only by name (`leanpool batch --method`)
        /// checks params before sending them. `None` when `name` is no
        /// method.
        pub fn reencode_params(name: &str, params: &Value) -> Option<Result<Value, serde_json::Error>> {
            match name {
                $($name => Some(
                    <$params as Deserialize>::deserialize(params)
                        .and_then(|p| serde_json::to_value(p)),
                ),)*
                _ => None,
            }
        }
    };
}

methods! {
    /// Elaborates a Lean text and judges it (`ok`, `sorry`, `error`, ...).
    Check = "check" (CheckParams) -> CheckResult;
    /// Judges a proof against a fixed statement.
    Verify = "verify" (VerifyParams) -> VerifyResult;
    /// A statement's binders and conclusion as Lean elaborated them.
    Normalize = "normalize" (StatementParams) -> NormalizeResult;
    /// `normalize` plus the statement's operator trees.
    Opt = "opt" (StatementParams) -> OptResult;
    /// Similarity of two operator trees (no Lean).
    Gted = "gted" (GtedParams) -> GtedResult;
    /// Whether two statements are equivalent, with the Lean proof either way.
    Equiv = "equiv" (EquivParams) -> EquivResult;
    /// The daemon's and its pool's state.
    Status = "status" (NoParams) -> StatusResult;
    /// Leases a warm worker for the connection's lifetime: after the
    /// answer the connection is an LSP tunnel to it.
    Lease = "lease" (LeaseParams) -> LeaseResult;
    /// Echoes its params (any JSON).
    Ping = "ping" (Value) -> Value;
    /// Asks the daemon to stop (its owner's uid only).
    Shutdown = "shutdown" (NoParams) -> ShutdownResult;
    /// Empties the running daemon's result cache (its owner's uid only).
    CacheClear = "cache_clear" (NoParams) -> CacheClearResult;
}

/// The params of a method that takes none: sent as `null`; `null`, absent
/// or `{}` are accepted, anything else is refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoParams;

impl Serialize for NoParams {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_unit()
    }
}

impl<'de> Deserialize<'de> for NoParams {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = NoParams;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("no params (null or {})")
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<NoParams, E> {
                Ok(NoParams)
            }
            fn visit_none<E: serde::de::Error>(self) -> Result<NoParams, E> {
                Ok(NoParams)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<NoParams, A::Error> {
                match m.next_key::<String>()? {
                    None => Ok(NoParams),
                    Some(k) => Err(serde::de::Error::custom(format!(
                        "takes no params (got `{k}`)"
                    ))),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// Result of `cache_clear`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheClearResult {
    /// Entries removed from the store.
    pub removed: u64,
}

/// Result of `shutdown`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShutdownResult {
    /// Always true: the daemon stops taking work.
    pub shutting_down: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_distinct() {
        let mut n = NAMES.to_vec();
        n.sort();
        n.dedup();
        assert_eq!(n.len(), NAMES.len());
        assert_eq!(
            NAMES,
            [
                "check",
                "verify",
                "normalize",
                "opt",
                "gted",
                "equiv",
                "status",
                "lease",
                "ping",
                "shutdown",
                "cache_clear"
            ]
        );
    }

    #[test]
    fn params_reencode_by_name() {
        let p = json!({"text": "x", "timings": false});
        assert_eq!(
            reencode_params("check", &p).unwrap().unwrap(),
            json!({"text": "x"})
        );
        assert!(reencode_params("check", &json!({"txt": "x"}))
            .unwrap()
            .is_err());
        assert!(reencode_params("frobnicate", &p).is_none());
    }

    #[test]
    fn no_params_is_null_or_empty() {
        assert_eq!(serde_json::to_value(NoParams).unwrap(), Value::Null);
        assert_eq!(
            serde_json::from_value::<NoParams>(Value::Null).unwrap(),
            NoParams
        );
        assert_eq!(
            serde_json::from_value::<NoParams>(json!({})).unwrap(),
            NoParams
        );
        for bad in [
            json!({"x": 1}),
            json!([]),
            json!([1]),
            json!(0),
            json!("x"),
            json!(false),
        ] {
            assert!(
                serde_json::from_value::<NoParams>(bad.clone()).is_err(),
                "{bad}"
            );
        }
        let r: ShutdownResult = serde_json::from_value(json!({"shutting_down": true})).unwrap();
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"shutting_down":true}"#
        );
    }
}

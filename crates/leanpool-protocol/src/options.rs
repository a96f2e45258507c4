//! What the params of every method Lean runs (`check`, `verify`,
//! `normalize`, `opt`, `equiv`) carry beside their text: the request's own
//! time limit and whether its answer carries timings. One struct,
//! flattened into each params type (the same keys at the top level of the
//! params on the wire), and one trait that reads it, [`LeanParams`]: the
//! pool clamps and reads the limit through it, whatever the method. Each
//! params type gets the trait and its builder methods (`with_timeout_ms`,
//! `with_timings`) from one macro, `lean_params!`, invoked next to it.

use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// A request's own time limit and whether it asked for timings; flattened
/// into each Lean method's params (`"timeout_ms"` and `"timings"` are keys
/// of the params object itself).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestOptions {
    /// Per-request limit in milliseconds; the daemon's default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Include `elapsed_ms` in the answer (off by default on the RPC so
    /// that identical requests give identical bytes).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timings: bool,
}

impl RequestOptions {
    /// The request's time limit: its own, or `default` (the daemon's)
    /// when it set none.
    pub fn limit_or(&self, default: Duration) -> Duration {
        self.timeout_ms
            .map(Duration::from_millis)
            .unwrap_or(default)
    }

    /// The milliseconds since `started` when the request asked for
    /// timings (an answer's `elapsed_ms`), else `None`.
    pub fn elapsed_ms(&self, started: Instant) -> Option<u64> {
        self.timings.then(|| started.elapsed().as_millis() as u64)
    }
}

/// The params of a method Lean runs: they carry [`RequestOptions`].
pub trait LeanParams {
    /// The request's time limit and timings flag.
    fn options(&self) -> &RequestOptions;
    /// The same, to change (the pool clamps the limit).
    fn options_mut(&mut self) -> &mut RequestOptions;
}

/// [`LeanParams`] and the builder methods every Lean method's params share,
/// for the params type named (it has an `options` field); invoked next to
/// each such type.
macro_rules! lean_params {
    ($params:ty) => {
        impl $crate::options::LeanParams for $params {
            fn options(&self) -> &$crate::options::RequestOptions {
                &self.options
            }
            fn options_mut(&mut self) -> &mut $crate::options::RequestOptions {
                &mut self.options
            }
        }

        impl $params {
            /// The same request with its own time limit in milliseconds
            /// (the daemon's default otherwise).
            pub fn with_timeout_ms(mut self, ms: u64) -> Self {
                self.options.timeout_ms = Some(ms);
                self
            }

            /// The same request asking for timings (`elapsed_ms`; `check`
            /// also `worker_us`).
            pub fn with_timings(mut self) -> Self {
                self.options.timings = true;
                self
            }
        }
    };
}
pub(crate) use lean_params;

#[cfg(test)]
mod tests {
    use super::RequestOptions;
    use crate::{CheckParams, StatementParams};
    use std::time::{Duration, Instant};

    /// The limit is the request's own or the default; `elapsed_ms` only
    /// when timings were asked for.
    #[test]
    fn limit_and_elapsed_follow_the_options() {
        let asked = RequestOptions {
            timeout_ms: Some(7),
            timings: true,
        };
        let plain = RequestOptions::default();
        let nine = Duration::from_secs(9);
        assert_eq!(asked.limit_or(nine), Duration::from_millis(7));
        assert_eq!(plain.limit_or(nine), nine);
        let t = Instant::now();
        assert!(asked.elapsed_ms(t).is_some());
        assert_eq!(plain.elapsed_ms(t), None);
    }
    use serde_json::json;

    /// The options are keys of the params object itself, absent at their
    /// defaults (the same bytes as before they were one struct).
    #[test]
    fn options_are_top_level_keys_of_the_params() {
        let p = CheckParams::new("t").with_timeout_ms(5).with_timings();
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v, json!({"text": "t", "timeout_ms": 5, "timings": true}));
        let back: CheckParams = serde_json::from_value(v).unwrap();
        assert_eq!(back, p);
        let plain = serde_json::to_string(&StatementParams::new("s")).unwrap();
        assert_eq!(plain, r#"{"text":"s"}"#);
        let bad = serde_json::from_value::<CheckParams>(json!({"text": "t", "timeout_ms": "5"}));
        assert!(bad.is_err(), "{bad:?}");
    }
}

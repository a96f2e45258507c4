//! A pool of warm Lean workers keyed by header.
mod config;
mod error;
mod latency;
mod plan;
mod status;

pub use config::{PoolConfig, PrewarmEntry};
pub use error::PoolError;
pub use latency::Percentiles;
pub use status::*;

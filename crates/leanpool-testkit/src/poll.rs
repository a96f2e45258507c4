//! Waiting for a condition the test cannot be told about (a pool's or a
//! daemon's status, a process's state): polled, with a bound, and a panic
//! that names what was awaited.

use std::time::{Duration, Instant};

/// How often [`wait_until`] looks again.
pub const POLL: Duration = Duration::from_millis(20);

/// Waits until `cond` holds, looking every [`POLL`]; panics after
/// `within`, naming `what`.
pub async fn wait_until(what: &str, within: Duration, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + within;
    while !cond() {
        assert!(
            Instant::now() < end,
            "timed out ({within:?}) waiting for: {what}"
        );
        tokio::time::sleep(POLL).await;
    }
}

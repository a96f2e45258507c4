//! Latency percentiles over a bounded window of recent samples.
//!
//! The window is a ring of atomics written with one `fetch_add` and one
//! `store` per sample, so recording on the request path takes no lock.
//! A reader may see a sample being overwritten concurrently; percentiles
//! over the last N samples tolerate that.

#![deny(missing_docs)]

use std::sync::atomic::{AtomicU64, Ordering};

/// Ring of the last `capacity` samples, in microseconds.
pub(crate) struct LatencyWindow {
    /// `0` = empty slot; a sample is stored as `micros + 1`.
    slots: Box<[AtomicU64]>,
    next: AtomicU64,
}

pub use leanpool_protocol::Percentiles;

impl LatencyWindow {
    pub(crate) fn new(capacity: usize) -> Self {
        LatencyWindow {
            slots: (0..capacity.max(1)).map(|_| AtomicU64::new(0)).collect(),
            next: AtomicU64::new(0),
        }
    }

    pub(crate) fn record(&self, micros: u64) {
        let i = self.next.fetch_add(1, Ordering::Relaxed) as usize % self.slots.len();
        self.slots[i].store(micros.saturating_add(1), Ordering::Relaxed);
    }

    /// `None` before the first sample.
    pub(crate) fn percentiles(&self) -> Option<Percentiles> {
        let mut v: Vec<u64> = self
            .slots
            .iter()
            .map(|s| s.load(Ordering::Relaxed))
            .filter(|&x| x != 0)
            .map(|x| x - 1)
            .collect();
        if v.is_empty() {
            return None;
        }
        v.sort_unstable();
        // Nearest-rank percentile: the smallest sample with at least p % of
        // the samples at or below it.
        let rank = |p: f64| {
            let r = ((p / 100.0) * v.len() as f64).ceil() as usize;
            v[r.clamp(1, v.len()) - 1] as f64 / 1000.0
        };
        Some(Percentiles {
            samples: v.len(),
            p50_ms: rank(50.0),
            p90_ms: rank(90.0),
            p99_ms: rank(99.0),
            max_ms: rank(100.0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_has_none() {
        assert!(LatencyWindow::new(8).percentiles().is_none());
    }

    #[test]
    fn nearest_rank_on_1_to_100() {
        let w = LatencyWindow::new(100);
        // Insert in scrambled order: the result must not depend on it.
        for i in (1..=100u64).rev() {
            w.record(i * 1000);
        }
        let p = w.percentiles().unwrap();
        assert_eq!(
            (p.samples, p.p50_ms, p.p90_ms, p.p99_ms, p.max_ms),
            (100, 50.0, 90.0, 99.0, 100.0)
        );
    }

    #[test]
    fn window_keeps_only_the_last_samples() {
        let w = LatencyWindow::new(4);
        for ms in [1000u64, 1000, 1000, 1000, 1, 2, 3, 4] {
            w.record(ms * 1000);
        }
        let p = w.percentiles().unwrap();
        assert_eq!(p.samples, 4);
        assert_eq!(p.max_ms, 4.0);
        assert_eq!(p.p50_ms, 2.0);
    }

    #[test]
    fn zero_duration_sample_counts() {
        let w = LatencyWindow::new(4);
        w.record(0);
        assert_eq!(w.percentiles().unwrap().samples, 1);
        assert_eq!(w.percentiles().unwrap().p99_ms, 0.0);
    }
}

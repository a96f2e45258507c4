//! Worker limits sized to the machine (issue 22 part 3): when the config
//! file does not set `max_workers` / `max_workers_per_key`, they follow the
//! cores and the memory.
//!
//! The formula ([`size`], a pure function; docs/protocol.md "Worker
//! limits"):
//!
//! - `by_cores` = the cores available to the daemon
//!   (`std::thread::available_parallelism`, which honours CPU affinity and
//!   the cgroup CPU quota);
//! - `worker_bytes` = the largest RSS at ready of a worker so far (measured
//!   by the pool when each worker becomes ready), or [`ESTIMATED_WORKER_RSS`]
//!   before any worker has started, plus `rss_headroom_bytes` (what a worker
//!   may grow by before it is recycled);
//! - `by_memory` = memory available when the pool started (`MemAvailable`,
//!   lowered to the cgroup memory limit minus its usage) / `worker_bytes`;
//! - `max_workers` = min(`by_cores`, `by_memory`), at least 1, at most
//!   [`MAX_SIZED_WORKERS`]; its source is whichever bound it (memory when
//!   unreadable is ignored);
//! - `max_workers_per_key` = `max_workers` (one import set may use the whole
//!   machine: a scorer with `import Mathlib` everywhere), or the configured
//!   `max_workers` when only that is set.
//!
//! A configured value is used as is (source `configured`, or the source
//! the caller gives in [`LimitSources`]: the config file has no such key,
//! the daemon knows it when it shares the machine out between projects).

use crate::config::PoolConfig;
use leanpool_protocol::{LimitSource, WorkerLimit, WorkerLimits};

/// The worker RSS assumed before any worker has been measured: a WASM
/// Lean worker with core Lean's `Init` stood at 3.2 GB at ready
/// (benches/README.md); 4 GiB leaves room for a larger import set.
pub const ESTIMATED_WORKER_RSS: u64 = 4 << 30;

/// Cap of a machine-sized `max_workers` (a configured value may exceed it).
pub const MAX_SIZED_WORKERS: usize = 256;

/// Where each configured limit came from, as
/// `status` reports it: [`LimitSource::Configured`] (the `[pool]` table)
/// unless the daemon set the value itself from its projects' tables
/// (issue 25: [`LimitSource::Project`], [`LimitSource::Shared`]). Not part
/// of [`PoolConfig`] (which is the file's `[pool]` table as read): given
/// beside it to [`crate::Pool::new`] and [`size`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LimitSources {
    /// The source of a non-sized `max_workers`.
    pub max_workers: LimitSource,
    /// The source of a non-sized `max_workers_per_key`.
    pub max_workers_per_key: LimitSource,
    /// The machine-wide total a project's `max_workers` was taken from,
    /// and what bound it (set by the daemon with several projects).
    pub total: Option<WorkerLimit>,
}

impl Default for LimitSources {
    fn default() -> Self {
        LimitSources {
            max_workers: LimitSource::Configured,
            max_workers_per_key: LimitSource::Configured,
            total: None,
        }
    }
}

/// The machine figures the limits are sized from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Machine {
    /// Cores available to this process.
    pub cores: usize,
    /// Memory available for workers, if readable.
    pub memory_bytes: Option<u64>,
}

impl Machine {
    /// Reads the cores and memory of this machine (and cgroup) now.
    pub fn probe() -> Machine {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Machine {
            cores,
            memory_bytes: memory_available(),
        }
    }
}

/// Memory available for new workers now: `MemAvailable`, lowered to the
/// cgroup's limit minus its usage. The one measure of free memory: the
/// worker limits are sized by it ([`Machine::probe`]) and a spare starts
/// only while it covers the spare (`[pool] spare_memory_margin_bytes`).
pub(crate) fn memory_available() -> Option<u64> {
    match (mem_available_bytes(), cgroup_memory_left()) {
        (Some(a), Some(c)) => Some(a.min(c)),
        (a, c) => a.or(c),
    }
}

/// `MemAvailable` from `/proc/meminfo`.
fn mem_available_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = s.lines().find(|l| l.starts_with("MemAvailable:"))?;
    line.split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()
        .map(|kb| kb * 1024)
}

/// The cgroup's memory limit minus its usage (v2 `memory.max` /
/// `memory.current`, else v1 `memory.limit_in_bytes` /
/// `memory.usage_in_bytes`); `None` without a limit.
fn cgroup_memory_left() -> Option<u64> {
    let read = |p: &str| -> Option<u64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    let (limit, used) = match read("/sys/fs/cgroup/memory.max") {
        Some(l) => (l, read("/sys/fs/cgroup/memory.current")?),
        None => (
            read("/sys/fs/cgroup/memory/memory.limit_in_bytes")?,
            read("/sys/fs/cgroup/memory/memory.usage_in_bytes")?,
        ),
    };
    // v1 reports "no limit" as a huge page-rounded number (v2 as "max",
    // which does not parse).
    (limit < 1 << 60).then(|| limit.saturating_sub(used))
}

/// The limits in force: configured ones as they are (reported with their
/// `sources`), the others sized to `machine` with a worker RSS of
/// `measured_rss` (the largest at ready so far) or, before any,
/// [`ESTIMATED_WORKER_RSS`].
pub fn size(
    cfg: &PoolConfig,
    sources: LimitSources,
    machine: Machine,
    measured_rss: Option<u64>,
) -> WorkerLimits {
    let rss = measured_rss.unwrap_or(ESTIMATED_WORKER_RSS);
    let worker_bytes = rss
        .saturating_add(cfg.rss_headroom_bytes.unwrap_or(0))
        .max(1);
    let by_cores = machine.cores.max(1);
    let by_memory = machine
        .memory_bytes
        .map(|m| usize::try_from(m / worker_bytes).unwrap_or(usize::MAX));
    let machine_limit = match by_memory {
        Some(m) if m < by_cores => WorkerLimit {
            value: m,
            source: LimitSource::Memory,
        },
        _ => WorkerLimit {
            value: by_cores,
            source: LimitSource::Cores,
        },
    };
    let machine_limit = WorkerLimit {
        value: machine_limit.value.clamp(1, MAX_SIZED_WORKERS),
        ..machine_limit
    };
    let configured = |value: usize, source: LimitSource| WorkerLimit {
        value: value.max(1),
        source,
    };
    let max_workers = match cfg.max_workers {
        Some(n) => configured(n, sources.max_workers),
        None => machine_limit,
    };
    let max_workers_per_key = match cfg.max_workers_per_key {
        Some(n) => configured(n, sources.max_workers_per_key),
        // The machine's bound, or `max_workers` when that is lower.
        None if max_workers.value < machine_limit.value => max_workers,
        None => machine_limit,
    };
    WorkerLimits {
        max_workers,
        max_workers_per_key,
        cores: machine.cores,
        memory_bytes: machine.memory_bytes,
        worker_bytes,
        worker_rss: if measured_rss.is_some() {
            "measured"
        } else {
            "estimate"
        }
        .to_string(),
        by_memory,
        total: sources.total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    /// Both limits left to the machine.
    fn cfg(headroom: Option<u64>) -> PoolConfig {
        PoolConfig {
            rss_headroom_bytes: headroom,
            ..PoolConfig::default()
        }
    }

    /// `max_workers` 3 and `max_workers_per_key` 2 configured.
    fn configured(headroom: Option<u64>) -> PoolConfig {
        PoolConfig {
            max_workers: Some(3),
            max_workers_per_key: Some(2),
            ..cfg(headroom)
        }
    }

    fn machine(cores: usize, mem_gib: Option<u64>) -> Machine {
        Machine {
            cores,
            memory_bytes: mem_gib.map(|g| g * GIB),
        }
    }

    fn lim(value: usize, source: LimitSource) -> WorkerLimit {
        WorkerLimit { value, source }
    }

    #[test]
    fn configured_values_are_kept_whatever_the_machine() {
        let l = size(
            &configured(None),
            LimitSources::default(),
            machine(64, Some(1)),
            None,
        );
        assert_eq!(l.max_workers, lim(3, LimitSource::Configured));
        assert_eq!(l.max_workers_per_key, lim(2, LimitSource::Configured));
    }

    #[test]
    fn many_cores_little_memory_is_bound_by_memory() {
        // 64 cores, 40 GiB, 4 GiB estimate + 1 GiB headroom: 8 workers.
        let l = size(
            &cfg(Some(GIB)),
            LimitSources::default(),
            machine(64, Some(40)),
            None,
        );
        assert_eq!(l.max_workers, lim(8, LimitSource::Memory));
        assert_eq!(l.max_workers_per_key, lim(8, LimitSource::Memory));
        assert_eq!(
            (l.worker_bytes, l.worker_rss.as_str()),
            (5 * GIB, "estimate")
        );
    }

    #[test]
    fn few_cores_much_memory_is_bound_by_cores() {
        let l = size(
            &cfg(None),
            LimitSources::default(),
            machine(2, Some(24)),
            None,
        );
        assert_eq!(l.max_workers, lim(2, LimitSource::Cores));
        assert_eq!(l.max_workers_per_key, lim(2, LimitSource::Cores));
    }

    #[test]
    fn a_measured_worker_replaces_the_estimate() {
        // 64 cores, 64 GiB: 16 workers by the 4 GiB estimate, 64 once a
        // worker was measured at 1 GiB (no headroom).
        let c = cfg(None);
        let before = size(&c, LimitSources::default(), machine(64, Some(64)), None);
        assert_eq!(before.max_workers, lim(16, LimitSource::Memory));
        let after = size(
            &c,
            LimitSources::default(),
            machine(64, Some(64)),
            Some(GIB),
        );
        assert_eq!(after.max_workers, lim(64, LimitSource::Cores));
        assert_eq!(after.worker_rss, "measured");
    }

    #[test]
    fn never_below_one_nor_above_the_cap() {
        let tiny = size(
            &cfg(None),
            LimitSources::default(),
            machine(4, Some(1)),
            None,
        );
        assert_eq!(tiny.max_workers, lim(1, LimitSource::Memory));
        let huge = size(
            &cfg(None),
            LimitSources::default(),
            machine(4096, None),
            None,
        );
        assert_eq!(huge.max_workers, lim(MAX_SIZED_WORKERS, LimitSource::Cores));
    }

    #[test]
    fn unreadable_memory_leaves_the_cores() {
        let l = size(&cfg(None), LimitSources::default(), machine(6, None), None);
        assert_eq!(l.max_workers, lim(6, LimitSource::Cores));
        assert_eq!(l.memory_bytes, None);
    }

    #[test]
    fn each_limit_is_sized_on_its_own() {
        // Only max_workers configured: per key follows the machine.
        let only_total = PoolConfig {
            max_workers_per_key: None,
            ..configured(None)
        };
        let l = size(
            &only_total,
            LimitSources::default(),
            machine(8, Some(100)),
            None,
        );
        assert_eq!(l.max_workers, lim(3, LimitSource::Configured));
        assert_eq!(l.max_workers_per_key, lim(3, LimitSource::Configured));
        let l = size(
            &only_total,
            LimitSources::default(),
            machine(2, Some(100)),
            None,
        );
        assert_eq!(l.max_workers_per_key, lim(2, LimitSource::Cores));
        // Only max_workers_per_key configured.
        let only_key = PoolConfig {
            max_workers: None,
            ..configured(None)
        };
        let l = size(
            &only_key,
            LimitSources::default(),
            machine(8, Some(100)),
            None,
        );
        assert_eq!(l.max_workers, lim(8, LimitSource::Cores));
        assert_eq!(l.max_workers_per_key, lim(2, LimitSource::Configured));
    }
}

//! What a pool's status says of one header's workers: the two views the
//! pool tests (fake and real Lean) read.

use leanpool_pool::{Pool, WorkerState};

/// Pids of the workers of `header` (canonical form), in slot order.
pub fn pids(pool: &Pool, header: &str) -> Vec<u32> {
    pool.status()
        .keys
        .iter()
        .filter(|k| k.header == header)
        .flat_map(|k| k.workers.iter().filter_map(|w| w.pid))
        .collect()
}

/// (serving pids, spare pids) of `header`, counting only workers with a
/// process up and idle.
pub fn roles(pool: &Pool, header: &str) -> (Vec<u32>, Vec<u32>) {
    let st = pool.status();
    let ws: Vec<_> = st
        .keys
        .into_iter()
        .filter(|k| k.header == header)
        .flat_map(|k| k.workers)
        .collect();
    let up = |spare: bool| {
        ws.iter()
            .filter(|w| w.spare == spare && w.state == WorkerState::Idle)
            .filter_map(|w| w.pid)
            .collect()
    };
    (up(false), up(true))
}

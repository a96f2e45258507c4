//! `RLIMIT_AS` for a worker process.
//!
//! Set with `prlimit(2)` on the worker's pid right after it is ready,
//! rather than in the child before `exec`: the driver builds and spawns the
//! command, and doing it from here needs no hook in it. The kernel enforces
//! the limit for the rest of the process's life, i.e. for every request.
//! Header elaboration at start-up runs without it.

use std::io;

/// Sets soft and hard `RLIMIT_AS` of `pid` to `bytes`.
pub(crate) fn set_address_space_limit(pid: u32, bytes: u64) -> io::Result<()> {
    let lim = libc::rlimit {
        rlim_cur: bytes as libc::rlim_t,
        rlim_max: bytes as libc::rlim_t,
    };
    // SAFETY: plain syscall wrapper; `lim` outlives the call and the old
    // limit is not requested (null).
    let r = unsafe {
        libc::prlimit(
            pid as libc::pid_t,
            libc::RLIMIT_AS,
            &lim,
            std::ptr::null_mut(),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leanpool_testkit::procs::address_space_limit;

    #[test]
    fn limit_is_applied_to_a_child() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        assert_eq!(address_space_limit(pid), None);
        set_address_space_limit(pid, 8 << 30).unwrap();
        assert_eq!(address_space_limit(pid), Some(8 << 30));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(set_address_space_limit(pid, 1 << 30).is_err());
    }
}

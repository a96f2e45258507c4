//! The Unix socket file: binding it with the right mode, clearing a stale
//! one, reading the peer's credentials, removing it on the way out.

#![deny(missing_docs)]

use crate::handler::PeerCred;
use nix::sys::socket::{self, sockopt, AddressFamily, SockFlag, SockType, UnixAddr};
use nix::sys::stat::{fchmod, Mode};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why the daemon could not bind its socket.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// A live daemon answers on that path.
    #[error("another daemon is already listening on {0}")]
    InUse(PathBuf),
    /// The path is taken by something that is not a socket.
    #[error("{0} exists and is not a socket; refusing to remove it")]
    NotASocket(PathBuf),
    /// Any other failure on that path.
    #[error("cannot use socket {path}: {source}")]
    Io {
        /// The socket path.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

/// The identity of the socket file we created, so that shutdown removes the
/// file only if it is still ours (a newer daemon may have replaced it).
#[derive(Debug, Clone)]
pub struct SocketFile {
    /// Where the socket file is.
    pub path: PathBuf,
    dev_ino: (u64, u64),
}

impl SocketFile {
    /// Removes the socket file if it is still the one we created.
    pub fn remove_file(&self) {
        if let Ok(m) = std::fs::symlink_metadata(&self.path) {
            if (m.dev(), m.ino()) == self.dev_ino {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

/// Binds `path` with permissions `mode`.
///
/// A leftover file is handled first: if something answers on it, another
/// daemon is alive and we refuse; if the connection is refused, it is a
/// stale socket from a daemon that died, and we remove it. The mode is set
/// on the socket *before* `bind` (Linux applies an unbound socket's inode
/// mode to the file it creates), so the file is never more open than asked,
/// then set exactly after `bind` (the umask may have removed bits).
pub fn bind(
    path: &Path,
    mode: u32,
) -> Result<(std::os::unix::net::UnixListener, SocketFile), BindError> {
    let io_err = |source| BindError::Io {
        path: path.to_owned(),
        source,
    };
    clear_stale(path)?;
    let fd: OwnedFd = socket::socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(|e| io_err(e.into()))?;
    fchmod(fd.as_raw_fd(), Mode::from_bits_truncate(mode)).map_err(|e| io_err(e.into()))?;
    let addr = UnixAddr::new(path).map_err(|e| io_err(e.into()))?;
    socket::bind(fd.as_raw_fd(), &addr).map_err(|e| match e {
        nix::errno::Errno::EADDRINUSE => BindError::InUse(path.to_owned()),
        e => io_err(e.into()),
    })?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(io_err)?;
    socket::listen(&fd, socket::Backlog::new(128).expect("valid backlog"))
        .map_err(|e| io_err(e.into()))?;
    let listener = std::os::unix::net::UnixListener::from(fd);
    listener.set_nonblocking(true).map_err(io_err)?;
    let m = std::fs::symlink_metadata(path).map_err(io_err)?;
    Ok((
        listener,
        SocketFile {
            path: path.to_owned(),
            dev_ino: (m.dev(), m.ino()),
        },
    ))
}

fn clear_stale(path: &Path) -> Result<(), BindError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(BindError::Io {
                path: path.to_owned(),
                source,
            })
        }
    };
    if !meta.file_type().is_socket() {
        return Err(BindError::NotASocket(path.to_owned()));
    }
    match std::os::unix::net::UnixStream::connect(path) {
        Ok(_) => Err(BindError::InUse(path.to_owned())),
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
            tracing::info!(socket = %path.display(), "removing stale socket");
            std::fs::remove_file(path).map_err(|source| BindError::Io {
                path: path.to_owned(),
                source,
            })
        }
        Err(source) => Err(BindError::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

/// The peer's uid/gid/pid as the kernel recorded them at `connect` time
/// (`SO_PEERCRED`): unforgeable by the client.
pub fn peer_cred(stream: &impl AsFd) -> io::Result<PeerCred> {
    let c = socket::getsockopt(stream, sockopt::PeerCredentials)?;
    Ok(PeerCred {
        uid: c.uid(),
        gid: c.gid(),
        pid: c.pid(),
    })
}

/// True once the peer has closed its end entirely (not merely shut down its
/// writing half): the kernel then reports `POLLHUP` on our side.
pub fn peer_hung_up(fd: &impl AsRawFd) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd, zero timeout.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n > 0 && p.revents & (libc::POLLHUP | libc::POLLERR) != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_stale_and_live() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let (l, _f) = bind(&path, 0o600).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(matches!(bind(&path, 0o600), Err(BindError::InUse(_))));
        drop(l); // the file stays: a stale socket
        assert!(path.exists());
        let (_l2, f2) = bind(&path, 0o660).unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o660
        );
        f2.remove_file();
        assert!(!path.exists());
        std::fs::write(&path, "not a socket").unwrap();
        assert!(matches!(bind(&path, 0o600), Err(BindError::NotASocket(_))));
        assert!(path.exists(), "bind must not delete a regular file");
    }
}

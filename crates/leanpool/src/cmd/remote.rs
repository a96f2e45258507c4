//! One-shot calls to a running daemon, for the subcommands' `--socket`.

use anyhow::Context;
use leanpool_protocol::method::Method;
use leanpool_rpc::Client;
use std::path::Path;

/// Connects to the daemon on `socket` (saying what to start when none
/// listens there).
pub async fn connect(socket: &Path) -> anyhow::Result<Client> {
    Client::connect(socket)
        .await
        .with_context(|| format!("is `leanpool serve --socket {}` running?", socket.display()))
}

/// Calls method `M` once on the daemon at `socket`.
pub async fn request<M: Method>(socket: &Path, params: M::Params) -> anyhow::Result<M::Result> {
    Ok(connect(socket).await?.request::<M>(&params).await?)
}

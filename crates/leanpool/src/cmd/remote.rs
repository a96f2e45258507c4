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

/// Calls method `M` once on the daemon at `socket`, in its project
/// `project` (`None`: the daemon's default project).
pub async fn request<M: Method>(
    socket: &Path,
    params: M::Params,
    project: Option<&str>,
) -> anyhow::Result<M::Result> {
    let mut params = serde_json::to_value(&params)?;
    if let (Some(name), Some(m)) = (project, params.as_object_mut()) {
        m.insert("project".into(), name.into());
    }
    Ok(connect(socket)
        .await?
        .call_typed::<_, M::Result>(M::NAME, &params)
        .await?)
}

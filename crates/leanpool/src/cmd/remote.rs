//! One-shot calls to a running daemon, for the subcommands' `--socket`.

use anyhow::Context;
use leanpool_protocol::{
    CheckParams, CheckResult, NormalizeResult, OptResult, StatementParams, VerifyParams,
    VerifyResult,
};
use leanpool_rpc::Client;
use std::path::Path;

async fn connect(socket: &Path) -> anyhow::Result<Client> {
    Client::connect(socket)
        .await
        .with_context(|| format!("is `leanpool serve --socket {}` running?", socket.display()))
}

pub async fn check(socket: &Path, params: CheckParams) -> anyhow::Result<CheckResult> {
    Ok(connect(socket).await?.check(&params).await?)
}

pub async fn normalize(socket: &Path, params: StatementParams) -> anyhow::Result<NormalizeResult> {
    Ok(connect(socket).await?.normalize(&params).await?)
}

pub async fn opt(socket: &Path, params: StatementParams) -> anyhow::Result<OptResult> {
    Ok(connect(socket).await?.opt(&params).await?)
}

pub async fn verify(socket: &Path, params: VerifyParams) -> anyhow::Result<VerifyResult> {
    Ok(connect(socket).await?.verify(&params).await?)
}

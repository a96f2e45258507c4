//! `leanpool opt` (not implemented yet).

#[derive(clap::Args)]
pub struct Args {}

pub async fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("`leanpool opt` is not implemented yet")
}

//! `leanpool status` (not implemented yet).

#[derive(clap::Args)]
pub struct Args {}

pub async fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("`leanpool status` is not implemented yet")
}

//! `leanpool batch` (not implemented yet).

#[derive(clap::Args)]
pub struct Args {}

pub async fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("`leanpool batch` is not implemented yet")
}

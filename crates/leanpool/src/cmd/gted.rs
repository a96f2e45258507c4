//! `leanpool gted ...` (not implemented yet).

#[derive(clap::Subcommand)]
pub enum Command {
    /// Similarity of two tree files.
    Score {},
}

pub async fn run(_c: Command) -> anyhow::Result<i32> {
    anyhow::bail!("`leanpool gted` is not implemented yet")
}

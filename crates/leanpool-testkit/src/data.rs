//! Where the GTED paper's miniF2F data lives (`../shared/gted-minif2f`
//! next to the repository, see its README): one locator for the tests,
//! the `gted` bench and the guard's corpus test, instead of a copy each.

use std::path::PathBuf;

/// The environment variable that overrides the location.
pub const DATA_ENV: &str = "LEANPOOL_GTED_DATA";

/// The GTED reference data was not where [`minif2f_dir`] looked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataNotFound {
    /// The directory looked in (no `gted_result.json`, or no
    /// `proofs.jsonl`, there).
    pub looked_in: PathBuf,
}

impl std::fmt::Display for DataNotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "test data not found at {}: expected the repository's sibling `shared/gted-minif2f` \
             (or set {DATA_ENV}) or `shared/proofs` (or set {PROOFS_ENV})",
            self.looked_in.display()
        )
    }
}

impl std::error::Error for DataNotFound {}

/// `$LEANPOOL_GTED_DATA`, else the repository's sibling
/// `shared/gted-minif2f` (resolved from this crate's source directory, so
/// it holds for a checkout, not for an installed binary). `Err` says where
/// it looked; callers that need the data (the reproduction tests) fail
/// with it rather than skip.
pub fn minif2f_dir() -> Result<PathBuf, DataNotFound> {
    let dir = match std::env::var_os(DATA_ENV) {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/gted-minif2f"),
    };
    if dir.join("gted_result.json").is_file() {
        Ok(dir)
    } else {
        Err(DataNotFound { looked_in: dir })
    }
}

/// The environment variable that overrides [`proofs_dir`].
pub const PROOFS_ENV: &str = "LEANPOOL_PROOFS_DATA";

/// `$LEANPOOL_PROOFS_DATA`, else the repository's sibling `shared/proofs`
/// (real model-written proofs and benchmark statements, see its README),
/// located like [`minif2f_dir`]. `Err` says where it looked (no
/// `proofs.jsonl` there); the honest-work test fails with it, never skips.
pub fn proofs_dir() -> Result<PathBuf, DataNotFound> {
    let dir = match std::env::var_os(PROOFS_ENV) {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/proofs"),
    };
    if dir.join("proofs.jsonl").is_file() {
        Ok(dir)
    } else {
        Err(DataNotFound { looked_in: dir })
    }
}

//! Provenance: what judged an answer (reported by `status`).

use serde::{Deserialize, Serialize};

/// The identity of the library the workers import.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LibraryIdentity {
    /// `mathlib` (a Mathlib revision from `lake-manifest.json`) or
    /// `oleans` (a digest of the olean set on `LEAN_PATH`).
    pub kind: String,
    /// Mathlib's git revision (kind `mathlib`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mathlib_rev: Option<String>,
    /// The manifest it was read from (kind `mathlib`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<String>,
    /// Hex SHA-256 of the olean set (kind `oleans`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oleans_sha256: Option<String>,
    /// Number of `.olean` files hashed (kind `oleans`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub olean_files: Option<u64>,
}

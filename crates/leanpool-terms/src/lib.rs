//! leanpool-terms: `normalize` and `opt` (placeholder doc, replaced below).
pub mod build;
pub mod tagged;

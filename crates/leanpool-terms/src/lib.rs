//! leanpool-terms: `normalize` and `opt` (placeholder doc, replaced below).
pub mod build;
pub mod tagged;
pub mod goals;
pub mod source;
pub mod hover;

//! The pool's only calls into `leanpool-terms` (normalize / opt on a warm
//! worker), kept in one place so the method table in `job.rs` stays
//! about routing.

pub(crate) use leanpool_terms::{normalize_on_with, opt_on_with};

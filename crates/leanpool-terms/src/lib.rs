//! leanpool-terms (work in progress)

//! leanpool-pool (work in progress)

//! leanpool-lean (work in progress)

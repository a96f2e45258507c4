//! leanpool-gted (work in progress)

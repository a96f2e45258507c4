//! leanpool-rpc (work in progress)

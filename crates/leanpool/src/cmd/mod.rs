//! Subcommands, one file each.
pub mod batch;
pub mod cache;
pub mod check;
pub mod doctor;
pub mod equiv;
pub mod gted;
pub mod jsonl;
pub mod lean_args;
pub mod lsp;
pub mod normalize;
pub mod opt;
pub mod remote;
pub mod serve;
pub mod status;
pub mod verify;

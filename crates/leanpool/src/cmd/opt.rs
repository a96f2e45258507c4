//! `leanpool opt FILE.lean`: the statement's operator tree.
//!
//! Prints the tree indented (one node per line: label, then `#id` for a
//! bound variable's scope id and `[kind]` for a binder node), or with
//! `--json` the whole `OptResult`, or with `--gted` only the tree in GTED's
//! format. Local worker or `--socket` as for `normalize`.

use crate::cmd::lean_args::{answer, Via};
use crate::cmd::normalize::{exit_code, human_diagnostics, read_params};
use leanpool_protocol::method;
use leanpool_protocol::{BinderKind, Node, NodeKind};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// A Lean file whose body is one `theorem`/`lemma`/`example`.
    pub file: PathBuf,
    /// Print the whole result (check, normalized, tree, gted_tree, lean_requests) as JSON.
    #[arg(long)]
    pub json: bool,
    /// Print only the tree in GTED's format (`{"content","children",...}`).
    #[arg(long)]
    pub gted: bool,
    #[command(flatten)]
    pub via: Via,
}

pub async fn run(args: Args) -> anyhow::Result<i32> {
    let params = read_params(&args.file, &args.via)?;
    let result = answer::<method::Opt>(&args.via, params).await?;
    if args.gted {
        match &result.gted_tree {
            Some(g) => println!("{}", serde_json::to_string(g)?),
            None => eprint!("{}", human_diagnostics(&args.file, &result.check)),
        }
    } else if args.json {
        println!("{}", serde_json::to_string(&result)?);
    } else {
        print!("{}", human_diagnostics(&args.file, &result.check));
        if let Some(t) = &result.tree {
            print!("{}", render(t));
        }
        if let Some(n) = result.lean_requests {
            println!("lean requests: {n}");
        }
    }
    Ok(exit_code(&result.check))
}

/// The tree, one node per line, indented two spaces per level.
pub fn render(t: &Node) -> String {
    let mut out = String::new();
    fn go(n: &Node, depth: usize, out: &mut String) {
        out.push_str(&"  ".repeat(depth));
        out.push_str(&n.label);
        if let Some(id) = n.scope {
            out.push_str(&format!("  #{id}"));
        }
        if n.kind == NodeKind::Hypothesis {
            out.push_str("  (hypothesis)");
        }
        if let Some(k) = n.binder {
            let k = match k {
                BinderKind::Default => "explicit",
                BinderKind::Implicit => "implicit",
                BinderKind::StrictImplicit => "strict-implicit",
                BinderKind::InstImplicit => "instance",
            };
            out.push_str(&format!("  [{k}]"));
        }
        out.push('\n');
        for c in &n.children {
            go(c, depth + 1, out);
        }
    }
    go(t, 0, &mut out);
    out
}

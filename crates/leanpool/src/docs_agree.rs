//! What the CLI says of itself and what the documents say of it agree:
//! the exit codes (`--help` and README.md's table) and the flags' defaults
//! the documents quote (each written once, in the clap `Args`, which read
//! the libraries' constants). A change on one side alone fails here.

use crate::{Cli, Command, EXIT_CODES};
use clap::Parser;

const README: &str = include_str!("../../../README.md");
const PROTOCOL: &str = include_str!("../../../docs/protocol.md");

/// The subcommands whose exit codes the tables describe.
const COMMANDS: [&str; 9] = [
    "check",
    "verify",
    "equiv",
    "normalize",
    "opt",
    "doctor",
    "batch",
    "gted pairs",
    "lsp",
];

/// `name` as a word of `text` (not inside another word).
fn names(text: &str, name: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(name)
        .any(|(i, _)| !text[..i].ends_with(word) && !text[i + name.len()..].starts_with(word))
}

/// `(code, the commands its row names)`, in order.
fn rows<'a>(rows: impl Iterator<Item = (u32, &'a str)>) -> Vec<(u32, Vec<&'static str>)> {
    rows.map(|(code, text)| {
        let named = COMMANDS.into_iter().filter(|c| names(text, c)).collect();
        (code, named)
    })
    .collect()
}

#[test]
fn exit_codes_are_the_readmes() {
    let mut help: Vec<(u32, String)> = vec![];
    for line in EXIT_CODES.lines().skip(1) {
        let t = line.trim_start();
        match t
            .split_once(' ')
            .and_then(|(c, rest)| Some((c.parse().ok()?, rest)))
        {
            Some((code, rest)) => help.push((code, rest.to_string())),
            None => help.last_mut().unwrap().1.push_str(&format!(" {t}")),
        }
    }
    let start = README
        .find("| code | meaning |")
        .expect("README's exit code table");
    let readme = README[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').collect();
            (cells[1].trim().parse::<u32>().unwrap(), cells[2])
        });
    let help = rows(help.iter().map(|(c, t)| (*c, t.as_str())));
    assert_eq!(help.len(), 5);
    assert_eq!(
        help,
        rows(readme),
        "`leanpool --help`'s exit codes (main.rs EXIT_CODES) and README.md's table differ \
         in their codes or in the commands each code names"
    );
}

fn parse(args: &[&str]) -> Command {
    Cli::try_parse_from(std::iter::once("leanpool").chain(args.iter().copied()))
        .unwrap()
        .command
}

#[test]
fn quoted_flag_defaults_are_the_clis() {
    let Command::Gted(crate::cmd::gted::Command::Pairs(pairs)) =
        parse(&["gted", "pairs", "i", "o", "--socket", "s"])
    else {
        panic!("gted pairs")
    };
    let Command::Gted(crate::cmd::gted::Command::Eval { threshold, .. }) =
        parse(&["gted", "eval", "d"])
    else {
        panic!("gted eval")
    };
    let Command::Batch(batch) = parse(&["batch", "i", "o", "--socket", "s"]) else {
        panic!("batch")
    };
    assert_eq!(threshold, leanpool_gted::eval::PAPER_THRESHOLD);
    let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let (protocol, readme) = (flat(PROTOCOL), flat(README));
    for (doc, text, phrase) in [
        (
            "protocol.md",
            &protocol,
            format!("[--threshold {}]", pairs.threshold),
        ),
        (
            "protocol.md",
            &protocol,
            format!("pairs in flight (default {};", pairs.io.concurrency),
        ),
        (
            "protocol.md",
            &protocol,
            format!("METHOD (default `{}`)", batch.method),
        ),
        (
            "protocol.md",
            &protocol,
            format!(
                "requests in flight at once on one connection (default {})",
                batch.io.concurrency
            ),
        ),
        (
            "README.md",
            &readme,
            format!("default the paper's {threshold}"),
        ),
    ] {
        assert!(
            text.contains(&phrase),
            "{doc} should say {phrase:?} (the CLI's default)"
        );
    }
}

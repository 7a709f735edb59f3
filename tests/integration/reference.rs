//! The command reference cannot drift from the code: `docs/commands.md` is exactly what
//! `decode-baseline reference` generates from the clap definitions, and every flag the
//! hand-written documents give a command (in a code span that starts with the command, such as
//! `` `compare --floor 0.02` `` or `` `decode-baseline run --job J --verbose` ``) is one of that
//! command's flags in the reference.

use std::collections::{BTreeMap, BTreeSet};

use crate::util;

/// The documents written by hand that name the commands' flags.
const HAND_WRITTEN: &[&str] = &["README.md", "docs/guide.md"];

/// Per command path (`compare`, `manifest add-case`), its flags, read from the reference.
fn flags_by_command(reference: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut current = None;
    for line in reference.lines() {
        if let Some(path) = line.strip_prefix("## `decode-baseline").and_then(|p| p.strip_suffix('`')) {
            current = Some(path.trim().to_owned());
            out.entry(path.trim().to_owned()).or_default();
        } else if let Some(command) = &current {
            out.get_mut(command).unwrap().extend(flags_in(line));
        }
    }
    // Global flags belong to every command.
    let global = out.get("").cloned().unwrap_or_default();
    for flags in out.values_mut() {
        flags.extend(global.iter().cloned());
    }
    out
}

/// The `--long` flags written in `text`.
fn flags_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("--") {
        let tail = &rest[at + 2..];
        let end = tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).unwrap_or(tail.len());
        let name = &tail[..end];
        let boundary = at == 0 || !rest[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '-');
        if boundary && name.starts_with(|c: char| c.is_ascii_lowercase()) {
            out.push(format!("--{name}"));
        }
        rest = &tail[end..];
    }
    out
}

/// Every flag a document gives a command the reference does not have, as `file: span: flag`.
fn unknown_flags(document: &str, name: &str, commands: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    // Inline code spans outside fenced blocks, and each line of a fenced block.
    let mut spans: Vec<&str> = Vec::new();
    let mut fenced = false;
    for line in document.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if fenced {
            spans.push(line);
        } else {
            spans.extend(line.split('`').skip(1).step_by(2));
        }
    }
    let mut out = Vec::new();
    for span in spans {
        let words: Vec<&str> = span.split_whitespace().collect();
        let words = match words.first() {
            Some(&"decode-baseline") => &words[1..],
            _ => &words[..],
        };
        // The longest command path the span starts with (`manifest add-case` before `manifest`).
        let Some(command) = (1..=words.len().min(2))
            .rev()
            .map(|n| words[..n].join(" "))
            .find(|path| !path.is_empty() && commands.contains_key(path))
        else {
            continue;
        };
        // Flags after a bare `--` belong to a program the command runs, not to it.
        let own = span.split(" -- ").next().unwrap_or(span);
        for flag in flags_in(own) {
            if !commands[&command].contains(&flag) {
                out.push(format!("{name}: `{span}`: {flag} is not a flag of `{command}`"));
            }
        }
    }
    out
}

#[test]
fn the_committed_reference_is_what_the_definitions_generate_and_the_documents_name_only_real_flags() {
    let root = util::repo_root();
    let out = util::run(std::process::Command::new(util::binary()).arg("reference"));
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let generated = util::stdout(&out);
    let committed = std::fs::read_to_string(root.join("docs/commands.md")).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/commands.md differs from the definitions: run `cargo run --release -- reference > docs/commands.md`"
    );
    let commands = flags_by_command(&generated);
    for expected in ["run", "compare", "calibrate", "manifest add-case"] {
        assert!(commands.contains_key(expected), "{expected} in {:?}", commands.keys());
    }
    assert!(commands["run"].contains("--until-decided") && commands["compare"].contains("--floor"));
    let mut unknown = Vec::new();
    for name in HAND_WRITTEN {
        let text = std::fs::read_to_string(root.join(name)).unwrap();
        unknown.extend(unknown_flags(&text, name, &commands));
    }
    assert!(unknown.is_empty(), "flags the commands do not have:\n{}", unknown.join("\n"));
}

/// The drift check on a flag removed from the code but not from a document: named with its
/// command and file; a flag of another program after `--` and a span that names no command are
/// not checked.
#[test]
fn a_flag_the_command_lost_fails_the_check_and_names_it() {
    let reference = "## `decode-baseline`\n\n```text\n      --repo <DIR>\n```\n\n## `decode-baseline compare`\n\n\
                     ```text\n      --floor <FLOOR>\n      --alpha <ALPHA>\n```\n";
    let commands = flags_by_command(reference);
    let document = "Use `compare A B --floor 0.02 --repo x`, not `compare A --margin 0.05`;\n\
                    `cargo bench --bench power -- --pairs 8`, `conformance -- prog --anything`.\n\
                    ```sh\ndecode-baseline compare A --alpha 0.01\ndecode-baseline compare A --gone\n```\n";
    let unknown = unknown_flags(document, "README.md", &commands);
    assert_eq!(
        unknown,
        [
            "README.md: `compare A --margin 0.05`: --margin is not a flag of `compare`",
            "README.md: `decode-baseline compare A --gone`: --gone is not a flag of `compare`"
        ],
        "{unknown:?}"
    );
}

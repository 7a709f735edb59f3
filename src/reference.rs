//! The command reference, generated from the clap definitions (`decode-baseline reference >
//! docs/commands.md`): every visible command's long help, in the order clap lists them. The
//! integration test `reference` fails when the committed file differs from this output and when
//! a hand-written document names a flag no command has, so neither can drift from the code.

/// The reference of `command` (the whole command line, `Cli::command()`) as Markdown.
pub fn markdown(mut command: clap::Command) -> String {
    command.build();
    let mut out = String::from(
        "# Command reference\n\nGenerated from the commands' own definitions by `decode-baseline reference > \
         docs/commands.md`; `./verify.sh` fails when this file and the definitions differ. Do not edit it by \
         hand.\n",
    );
    section(&mut out, &mut command, "decode-baseline");
    out
}

fn section(out: &mut String, command: &mut clap::Command, path: &str) {
    if command.is_hide_set() {
        return;
    }
    let help = command.render_long_help().to_string();
    let help: Vec<&str> = help.lines().map(str::trim_end).collect();
    out.push_str(&format!("\n## `{path}`\n\n```text\n{}\n```\n", help.join("\n").trim_end()));
    for sub in command.get_subcommands_mut().filter(|s| s.get_name() != "help") {
        let name = format!("{path} {}", sub.get_name());
        section(out, sub, &name);
    }
}

//! The sentences every view of a session shares (the end-of-run table, the launcher's stderr,
//! the report page, `compare`'s list of differences), each written once here.

use decode_baseline_wire::{
    hooks::replacement_variable,
    session::{Placement, SessionReport},
    Adapter,
};

/// A unit enum as its JSON spells it (`ok`, `worker_failed`, `against_reference`); empty for a
/// value that does not serialize to a string.
pub fn serde_word<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// A cell's name as it reads under its case: `<case>.<prompt>.<mode>` without the case, and
/// without the case's name at the head of the prompt id where `manifest add-case` put it there
/// (`tiny-qwen3.tiny-qwen3-L16.headline` under `tiny-qwen3` reads `L16.headline`). Returns the
/// case and that name; a name without a `.` is its own case.
pub fn within_case(cell: &str) -> (&str, &str) {
    let Some((case, rest)) = cell.split_once('.') else { return (cell, cell) };
    let short = rest.strip_prefix(case).and_then(|r| r.strip_prefix('-')).unwrap_or(rest);
    (case, short)
}

/// A placement as `compare` holds two sessions to it: the CPUs the workers got, however they
/// were asked for (`first` and `0` on the same host are one placement), or what was asked where
/// nothing was read back (macOS).
pub fn placement_as_compared(p: &Placement) -> String {
    match &p.effective {
        Some(cpus) => format!("CPUs {cpus}"),
        None => format!("left to the OS (--cpus {})", p.requested),
    }
}

/// One line for the table footer and the report page.
pub fn placement_line(placement: Option<&Placement>) -> String {
    match placement {
        None => "placement: not recorded".to_owned(),
        Some(p) => match &p.effective {
            Some(effective) => format!("placement: --cpus {} (workers on CPUs {effective})", p.requested),
            None => format!("placement: --cpus {} (no affinity on this system: left to the OS)", p.requested),
        },
    }
}

/// The session's rank group (`req/distributed.md`): `group: one process per worker`, or the
/// ranks, the backend and where they ran, with how many ranks ended other than ok.
pub fn group_line(session: &SessionReport) -> String {
    let setup = group_setup(session);
    if session.job.group.is_none() {
        return format!("group: {setup}");
    }
    let ranks: Vec<_> = session.workers.iter().flat_map(|w| &w.ranks).collect();
    let ok = ranks.iter().filter(|r| r.problem().is_none()).count();
    format!("group: {setup}; ranks past 0: {ok} ok of {}", ranks.len())
}

/// How the session's workers ran: `one process per worker`, or the ranks, the backend and
/// where (what `compare` holds two sessions to).
pub fn group_setup(session: &SessionReport) -> String {
    let Some(group) = &session.job.group else { return "one process per worker".to_owned() };
    let hosts = group.hosts.as_ref().map_or("this machine, loopback".to_owned(), |h| h.join(", "));
    format!("{} ranks per worker over {} ({hosts})", group.ranks, group.backend.as_str())
}

/// The lines of every adapter of `session` whose program was replaced, in adapter order: the
/// first lines of the table, the summary and the page's warnings, and the answer's notes.
pub fn replaced_lines(session: &SessionReport) -> impl Iterator<Item = String> + '_ {
    session.replaced_programs.iter().map(|(adapter, argv)| replaced_line(adapter, argv))
}

/// The line the table (and the launcher's stderr) prints for an adapter whose program was
/// replaced.
pub fn replaced_line(adapter: &Adapter, argv: &[String]) -> String {
    format!(
        "unpinned: the {adapter} worker program was replaced ({}={}): this session is unpinned, and compare \
         refuses to set it beside a pinned one",
        replacement_variable(adapter),
        argv.join(" "),
        adapter = adapter.as_str()
    )
}

#[cfg(test)]
mod tests {
    use super::within_case;

    #[test]
    fn a_cell_under_its_case_loses_the_case_and_the_prompts_own_copy_of_it() {
        assert_eq!(within_case("tiny-qwen3.tiny-qwen3-L16.headline"), ("tiny-qwen3", "L16.headline"));
        assert_eq!(within_case("m.chat-512.fixed_continuation"), ("m", "chat-512.fixed_continuation"));
        // A prompt that only starts with the case's letters keeps them.
        assert_eq!(within_case("tiny.tinyL16.headline"), ("tiny", "tinyL16.headline"));
        assert_eq!(within_case("lonely"), ("lonely", "lonely"));
    }
}

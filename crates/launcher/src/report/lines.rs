//! The sentences every view of a session shares (the end-of-run table, the launcher's stderr,
//! the report page), each written once here.

use decode_baseline_wire::{hooks::replacement_variable, session::Placement, Adapter};

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

//! What every view of a finished session is given.

use std::path::Path;

use decode_baseline_wire::session::SessionReport;

use crate::noise_profiles::Profiles;

/// A finished session as the views show it: its report, the host noise profiles its verdicts
/// use, and its folder (the page reads `bench.json` there).
#[derive(Debug, Clone, Copy)]
pub struct SessionView<'a> {
    pub report: &'a SessionReport,
    pub profiles: Option<&'a Profiles>,
    pub dir: &'a Path,
}

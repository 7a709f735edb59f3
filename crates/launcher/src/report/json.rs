//! `run --json`: the session report as it is written to `session.json`.

use crate::export::Exporter;

use super::SessionView;

/// The session report as JSON, pretty, one document.
pub struct Json;

impl Exporter<SessionView<'_>> for Json {
    fn export(&self, view: &SessionView<'_>) -> anyhow::Result<String> {
        Ok(serde_json::to_string_pretty(view.report)? + "\n")
    }
}

//! The views of a finished session, one exporter per format ([`crate::export::Exporter`] of a
//! [`SessionView`]): `run`'s summary table, `bench`'s headline table, Markdown, JSON and the
//! report page (`index.html`) that `run` and `bench` write into every session folder
//! ([`publish`]) and `report` rewrites; and the sentences they share.

mod answer;
mod command;
mod energy;
mod json;
mod page;
mod publish;
mod rows;
mod sequential;
mod summary;
mod table;
mod view;

pub use command::{run, ReportArgs};
pub use json::Json;
pub use page::{write_page, Html, PAGE};
pub use publish::publish;
pub use rows::{Headline, Markdown};
pub use sequential::lines as sequential_lines;
pub use summary::{Summary, COLUMNS};
#[cfg(test)]
pub(crate) use table::table;
pub use table::Table;
pub use view::SessionView;

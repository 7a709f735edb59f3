//! The human views of a session: the rows every table shows, and the report page
//! (`index.html`) that `run` and `bench` write into every session folder and `report` rewrites.

mod command;
mod energy;
mod lines;
mod page;
mod rows;
mod sequential;

pub use command::{run, ReportArgs};
pub use lines::{placement_line, replaced_line};
pub use page::{write_page, PAGE};
pub use rows::{markdown as rows_markdown, text as rows_text};
pub use sequential::lines as sequential_lines;

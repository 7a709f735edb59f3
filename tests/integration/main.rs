//! decode-baseline's integration tests: one binary, one module per area.

mod util;

mod bench;
mod bisect;
mod checkout;
mod compare;
mod conformance;
mod faults;
mod groups;
mod guard;
mod history;
mod install;
mod interleave;
mod kit;
mod launcher;
mod launcher_readers;
mod module_graph;
mod moe;
mod mutate;
mod page_browser;
mod parsers;
mod reference;
mod sequential;
mod session_json;
mod setup;

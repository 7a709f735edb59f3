//! `decode-baseline bench MODEL`: one command from a model folder or a Hugging Face repo id to a
//! finished session, with the session's own manifest inside its folder.

mod command;
mod hub;
mod support;

pub use command::{run, BenchArgs};
pub use hub::HubError;

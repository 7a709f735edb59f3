//! decode-baseline as a library: the parts of the suite that the binary's subcommands share and
//! that tests reach directly. Only what needs no MLX lives here.

pub mod stats;

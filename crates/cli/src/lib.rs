//! The command line's definition, as a library beside the `iolab` binary (main.rs): clap's
//! types (`args`) and the formats each command takes (`formats`). The binary parses with them;
//! the fuzz target `cli_args` drives arbitrary arguments through them into the spec's
//! validation, as the binary would.

#![forbid(unsafe_code)]

pub mod args;
pub mod formats;

//! The `neardup` command's internals, a library so that fuzz targets and tests can reach
//! them: argument parsing, the subcommands, exit codes and the input and output formats.
//! Not a stable API: the program is `neardup`; use the `neardup` crate as a library.

#![doc(hidden)]

pub mod args;
pub mod cmd;
pub mod exit;
pub mod input;
pub mod output;

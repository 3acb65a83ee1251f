//! The `neardup` command: parse arguments, dispatch, report errors, choose the exit code.

mod args;
mod cmd;
mod input;

use std::process::ExitCode;

use clap::Parser;

/// mimalloc instead of the system allocator: records are built and dropped by the
/// million across threads, and glibc's malloc spent about 15% of a dedup run's CPU.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args = args::Cli::parse();
    match cmd::run(args) {
        Ok(code) => code,
        Err(err) => {
            // A closed pipe (`neardup ... | head`) is not an error.
            if err
                .chain()
                .filter_map(|e| e.downcast_ref::<std::io::Error>())
                .any(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            eprintln!("neardup: {err:#}");
            ExitCode::from(2)
        }
    }
}

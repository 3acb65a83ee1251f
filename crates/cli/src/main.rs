//! The `neardup` command: parse arguments, dispatch, report errors, choose the exit code.

use std::process::ExitCode;

use clap::Parser;
use neardup_cli::{args, cmd, exit};

/// mimalloc instead of the system allocator: records are built and dropped by the
/// million across threads, and glibc's malloc spent about 15% of a dedup run's CPU.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How long mimalloc keeps freed memory before handing it back to the kernel (its default
/// is 1 s), for the long-running service: a burst's memory goes back once the burst is
/// over. (When dedup used it too, 5 s against 1 s on the 1 GB bench corpus: kernel time
/// -20%, CPU time -3% to -11%, RSS +3%.)
const SERVICE_PURGE_DELAY_MS: std::ffi::c_long = 5000;

/// The same for the commands that run a job and exit: never. Memory a job frees is what
/// it allocates next, and on a virtual machine whose host takes back the pages its guest
/// frees (a balloon's free page reporting) a page handed back costs as much as a fresh
/// one: touching a GiB the host took back took 2.6 s there against 0.1 s for one just
/// freed. The 1 GB bench run's peak RSS is the same either way (+1.5%); its kernel time
/// 2.0-2.2 s against 2.0-4.3 s at 5 s, five interleaved runs each (median wall -4%).
const JOB_PURGE_DELAY_MS: std::ffi::c_long = -1;

/// `mi_option_purge_delay` in mimalloc 3's option enum (`libmimalloc-sys` names no
/// constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Allocator options for `command`, unless the user set them through mimalloc's
/// environment variables.
fn tune_allocator(command: &args::Command) {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        let delay = match command {
            args::Command::Serve(_) => SERVICE_PURGE_DELAY_MS,
            _ => JOB_PURGE_DELAY_MS,
        };
        // SAFETY: mimalloc's option setters are not thread safe; this runs in main before
        // any thread of ours starts.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, delay) };
    }
}

fn main() -> ExitCode {
    let args = match args::Cli::try_parse() {
        Ok(args) => args,
        Err(err) => {
            // Help and version go to stdout and exit 0; a usage error is an error (3), not
            // clap's 2, which here means "done, some records rejected".
            let _ = err.print();
            return ExitCode::from(if err.use_stderr() {
                exit::ERROR
            } else {
                exit::DONE
            });
        }
    };
    tune_allocator(&args.command);
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
            ExitCode::from(exit::of_error(&err))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_option_is_the_one_tuned() {
        // Tests do not run `main`, so the option holds mimalloc's own default (1,000 ms,
        // the only option of that default) or the environment's value: a mimalloc whose
        // option enum moved fails here.
        let want = std::env::var("MIMALLOC_PURGE_DELAY")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1000);
        // SAFETY: reading an option has no preconditions.
        let got = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(got, want);
    }
}

//! Command-line handling shared by the examples: the runtime's options (`-w N`, `-n`, `-p`,
//! `-h`, `--trace DIR`, ...) and the example's own positional numbers and switches, read with
//! the one parser of the repository's programs (`timely_communication::ProgramFlags`), with the
//! usage and a listing on bad input or `--help`.

use timely_communication::{FlagError, Flags, ProgramFlags};
use timely_engine::{execute_traced, runtime_from_args, Config, ExecuteError, TraceSettings, Worker};

/// How the example runs: the workers and, with `--trace DIR`, the trace.
pub struct Runtime {
    config: Config,
    trace: Option<TraceSettings>,
}

impl Runtime {
    /// Runs `func` on every worker (see `timely_engine::execute_traced`).
    pub fn execute<T, F>(self, func: F) -> Result<Vec<T>, ExecuteError>
    where
        T: Send + 'static,
        F: Fn(&mut Worker) -> T + Send + Sync + 'static,
    {
        execute_traced(self.config, self.trace, func)
    }
}

/// The runtime's options, then `program`'s: its positional numbers (one per declared
/// positional argument; missing ones take their `defaults`) and its switches. Exits with the
/// usage on a bad command line, and with the listing on `--help`.
pub fn runtime_and_numbers(program: ProgramFlags, defaults: &[u64]) -> (Runtime, Vec<u64>, Flags) {
    let program = program.with_runtime_options();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (config, trace, rest) = runtime_from_args(args).unwrap_or_else(|error| program.exit(&error));
    let flags = program.parse_or_exit(rest);
    let numbers: Result<Vec<u64>, FlagError> =
        defaults.iter().enumerate().map(|(index, default)| flags.positional(index, *default)).collect();
    let numbers = numbers.unwrap_or_else(|error| program.exit(&error));
    (Runtime { config, trace }, numbers, flags)
}

//! Command-line handling shared by the examples: the runtime's options (`-w N`, `-n`, `-p`,
//! `-h`, `--trace DIR`, ...) and the example's own positional numbers, with a usage message on
//! bad input.

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

/// The runtime's options and `defaults.len()` positional numbers (missing ones take their
/// defaults). Exits with `usage` on a bad value. Flags the runtime does not know are ignored here.
pub fn runtime_and_numbers(usage: &str, defaults: &[u64]) -> (Runtime, Vec<u64>) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (config, trace, rest) = runtime_from_args(args).unwrap_or_else(|e| fail(&e, usage));
    let given: Vec<u64> = rest
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(|a| a.parse::<u64>().unwrap_or_else(|_| fail(&format!("not a number: {}", a), usage)))
        .collect();
    if given.len() > defaults.len() {
        fail("too many arguments", usage);
    }
    let numbers = defaults.iter().enumerate().map(|(i, d)| given.get(i).copied().unwrap_or(*d)).collect();
    (Runtime { config, trace }, numbers)
}

/// True when `flag` is among the program's arguments.
#[allow(dead_code)]
pub fn has_flag(flag: &str) -> bool {
    std::env::args().skip(1).any(|a| a == flag)
}

fn fail(message: &str, usage: &str) -> ! {
    eprintln!("{}\nusage: {}", message, usage);
    std::process::exit(2)
}

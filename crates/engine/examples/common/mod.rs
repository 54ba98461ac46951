//! Command-line handling shared by the examples: the runtime's `-w N` and the example's own
//! positional numbers, with a usage message on bad input.

use timely_engine::Config;

/// The worker configuration and `defaults.len()` positional numbers (missing ones take their
/// defaults). Exits with `usage` on a bad value. Flags other than `-w` are ignored here.
pub fn config_and_numbers(usage: &str, defaults: &[u64]) -> (Config, Vec<u64>) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (config, rest) = Config::from_args(args).unwrap_or_else(|e| fail(&e, usage));
    let given: Vec<u64> = rest
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(|a| a.parse::<u64>().unwrap_or_else(|_| fail(&format!("not a number: {}", a), usage)))
        .collect();
    if given.len() > defaults.len() {
        fail("too many arguments", usage);
    }
    let numbers = defaults.iter().enumerate().map(|(i, d)| given.get(i).copied().unwrap_or(*d)).collect();
    (config, numbers)
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

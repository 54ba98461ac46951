//! The runtime's options on a command line: one list of them, one parser.
//!
//! This module owns [`RuntimeOption`] (every option the runtime reads from a program's
//! arguments: the cluster's `-w -n -p -h --peer-timeout --insecure --join --nn --gone`, the
//! receive budgets' `--receive-budget --early-bytes`, and the trace's `--trace --trace-events --trace-flush`, with their spellings and help),
//! [`RuntimeArgs`] (what a command line gave them, and the program's own arguments in order),
//! and [`ArgsError`]. Reading lexes with `lexopt`, so `-w4`, `-w 4`, `--workers=4` and
//! `--workers 4` all work, and the launcher renders the same spellings
//! ([`RuntimeArgs::to_args`]). It must not decide what the values mean: [`crate::Config`]
//! and the engine's trace settings read them.

use std::ffi::OsString;

/// An option of the runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RuntimeOption {
    /// `-w N`: worker threads per process.
    Workers,
    /// `-n N`: processes the cluster starts with.
    Processes,
    /// `-p I`: this process's index.
    Process,
    /// `-h FILE`: one `host:port` per process.
    Hostfile,
    /// `--peer-timeout SECONDS`: how long another process may stay silent.
    PeerTimeout,
    /// `--insecure`: run without a secret on addresses other machines can reach.
    Insecure,
    /// `--join W`: the worker that serves a joining process's bootstrap.
    Join,
    /// `--nn N`: the number of processes after the join.
    AfterJoin,
    /// `--gone P,Q`: processes that left before this one joins.
    Gone,
    /// `--receive-budget BYTES`: what received messages may hold in memory before they spill.
    ReceiveBudget,
    /// `--early-bytes BYTES`: what a worker keeps for channels it has not built yet.
    EarlyBytes,
    /// `--trace DIR`: write a trace there.
    Trace,
    /// `--trace-events LIST`: the event classes to record.
    TraceEvents,
    /// `--trace-flush SECONDS`: how often trace files are closed.
    TraceFlush,
}

impl RuntimeOption {
    /// Every option, in the order the help lists them.
    pub const ALL: [RuntimeOption; 14] = [
        RuntimeOption::Workers,
        RuntimeOption::Processes,
        RuntimeOption::Process,
        RuntimeOption::Hostfile,
        RuntimeOption::PeerTimeout,
        RuntimeOption::Insecure,
        RuntimeOption::Join,
        RuntimeOption::AfterJoin,
        RuntimeOption::Gone,
        RuntimeOption::ReceiveBudget,
        RuntimeOption::EarlyBytes,
        RuntimeOption::Trace,
        RuntimeOption::TraceEvents,
        RuntimeOption::TraceFlush,
    ];

    /// How the option is written: its one-letter form if any, then its long forms (the first
    /// is the one rendered).
    pub fn spellings(self) -> (Option<char>, &'static [&'static str]) {
        match self {
            RuntimeOption::Workers => (Some('w'), &["workers", "threads"]),
            RuntimeOption::Processes => (Some('n'), &["processes"]),
            RuntimeOption::Process => (Some('p'), &["process"]),
            RuntimeOption::Hostfile => (Some('h'), &["hostfile"]),
            RuntimeOption::PeerTimeout => (None, &["peer-timeout"]),
            RuntimeOption::Insecure => (None, &["insecure"]),
            RuntimeOption::Join => (None, &["join"]),
            RuntimeOption::AfterJoin => (None, &["nn"]),
            RuntimeOption::Gone => (None, &["gone"]),
            RuntimeOption::ReceiveBudget => (None, &["receive-budget"]),
            RuntimeOption::EarlyBytes => (None, &["early-bytes"]),
            RuntimeOption::Trace => (None, &["trace"]),
            RuntimeOption::TraceEvents => (None, &["trace-events"]),
            RuntimeOption::TraceFlush => (None, &["trace-flush"]),
        }
    }

    /// The spelling rendered and shown in errors: `-w`, `--peer-timeout`.
    pub fn name(self) -> String {
        match self.spellings() {
            (Some(short), _) => format!("-{short}"),
            (None, long) => format!("--{}", long[0]),
        }
    }

    /// Whether the option takes a value (all but `--insecure`).
    pub fn takes_value(self) -> bool {
        self != RuntimeOption::Insecure
    }

    /// What the option's value is, for help texts.
    pub fn help(self) -> &'static str {
        match self {
            RuntimeOption::Workers => "worker threads per process (default 1)",
            RuntimeOption::Processes => "processes the cluster starts with (default 1)",
            RuntimeOption::Process => "this process's index, 0 to n - 1 (default 0)",
            RuntimeOption::Hostfile => {
                "a file with one host:port per process (default localhost:2101 and up)"
            }
            RuntimeOption::PeerTimeout => "seconds another process may stay silent before it counts as lost",
            RuntimeOption::Insecure => "run without a secret on addresses other machines can reach",
            RuntimeOption::Join => "join a running cluster, bootstrapped by this worker",
            RuntimeOption::AfterJoin => "the number of processes after the join (-p + 1)",
            RuntimeOption::Gone => "processes that left the cluster before this one joins (P,Q)",
            RuntimeOption::ReceiveBudget => {
                "bytes received messages may hold in memory before they spill to disk (64K, 512M, 2G; \
                 default 256M)"
            }
            RuntimeOption::EarlyBytes => {
                "bytes a worker keeps for channels it has not built yet (64K, 512M, 2G; default 128M)"
            }
            RuntimeOption::Trace => "write a trace of the run into this directory",
            RuntimeOption::TraceEvents => "the event classes to trace, comma-separated (default all)",
            RuntimeOption::TraceFlush => "seconds between trace file closes (default 1)",
        }
    }

    fn from_short(short: char) -> Option<RuntimeOption> {
        RuntimeOption::ALL.into_iter().find(|option| option.spellings().0 == Some(short))
    }

    fn from_long(long: &str) -> Option<RuntimeOption> {
        RuntimeOption::ALL.into_iter().find(|option| option.spellings().1.contains(&long))
    }
}

/// A command line that the runtime cannot read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    /// An option that takes a value came last.
    #[error("option {0} requires a value")]
    MissingValue(String),
    /// `--insecure=...`.
    #[error("option {0} takes no value, found {1:?}")]
    UnexpectedValue(String, String),
    /// An argument that is not valid Unicode.
    #[error("the argument {0:?} is not valid Unicode")]
    NotUnicode(String),
    /// Anything else the lexer refuses.
    #[error("{0}")]
    Invalid(String),
}

/// What a command line gave the runtime's options, and the program's own arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuntimeArgs {
    /// Each option given, as written (for errors), with its value (empty for a flag); the
    /// last occurrence of an option wins.
    given: Vec<(RuntimeOption, String, String)>,
    /// The arguments that are not the runtime's, in order; `--` and everything after it.
    pub rest: Vec<String>,
}

impl RuntimeArgs {
    /// Reads the runtime's options out of `args` (without or with the program's name: what
    /// is not an option of the runtime stays in [`RuntimeArgs::rest`], in order). Values may
    /// be attached (`-w4`, `--workers=4`). Nothing after `--` is read.
    ///
    /// # Errors
    ///
    /// An option without its value, a value given to `--insecure`, an argument that is not
    /// valid Unicode.
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<RuntimeArgs, ArgsError> {
        let mut parsed = RuntimeArgs::default();
        // lexopt skips the first argument as the program's name: give it a placeholder.
        let mut parser = lexopt::Parser::from_iter(std::iter::once(String::new()).chain(args));
        loop {
            // The rest is the program's from `--` on, verbatim.
            if let Ok(raw) = parser.raw_args() {
                if raw.peek().and_then(|arg| arg.to_str()) == Some("--") {
                    parsed.rest.extend(raw.map(text));
                    return Ok(parsed);
                }
            }
            let Some(arg) = parser.next().map_err(lex_error)? else { return Ok(parsed) };
            match arg {
                lexopt::Arg::Value(value) => parsed.rest.push(text(value)),
                lexopt::Arg::Short(short) => match RuntimeOption::from_short(short) {
                    Some(option) => parsed.take(&mut parser, option, format!("-{short}"))?,
                    // Not ours (`-x`, a negative number): kept as written, with what is attached.
                    None => {
                        let attached = parser.optional_value().map(text).unwrap_or_default();
                        parsed.rest.push(format!("-{short}{attached}"));
                    }
                },
                lexopt::Arg::Long(long) => match RuntimeOption::from_long(long) {
                    Some(option) => {
                        let written = format!("--{long}");
                        parsed.take(&mut parser, option, written)?
                    }
                    None => {
                        let written = format!("--{long}");
                        match parser.optional_value() {
                            Some(value) => parsed.rest.push(format!("{written}={}", text(value))),
                            None => parsed.rest.push(written),
                        }
                    }
                },
            }
        }
    }

    /// Records `option` (written as `written`) with its value from `parser`.
    fn take(
        &mut self,
        parser: &mut lexopt::Parser,
        option: RuntimeOption,
        written: String,
    ) -> Result<(), ArgsError> {
        let value = if option.takes_value() {
            parser.value().map(text).map_err(|_| ArgsError::MissingValue(written.clone()))?
        } else {
            if let Some(value) = parser.optional_value() {
                return Err(ArgsError::UnexpectedValue(written, text(value)));
            }
            String::new()
        };
        self.given.retain(|(given, _, _)| *given != option);
        self.given.push((option, written, value));
        Ok(())
    }

    /// The value given to `option` and how the option was written, if it was given.
    pub fn get(&self, option: RuntimeOption) -> Option<(&str, &str)> {
        self.given
            .iter()
            .find(|(given, _, _)| *given == option)
            .map(|(_, written, value)| (written.as_str(), value.as_str()))
    }

    /// Whether `option` was given.
    pub fn has(&self, option: RuntimeOption) -> bool {
        self.get(option).is_some()
    }

    /// Gives `option` the value `value` (a flag: any value), as if written in its usual
    /// spelling; for programs that build a command line, such as the launcher.
    pub fn set(&mut self, option: RuntimeOption, value: impl Into<String>) {
        self.given.retain(|(given, _, _)| *given != option);
        self.given.push((option, option.name(), value.into()));
    }

    /// The options given, rendered in their usual spelling (`-w 4`, `--insecure`), in the
    /// order of [`RuntimeOption::ALL`]; reading them back gives the same options.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        for option in RuntimeOption::ALL {
            if let Some((_, value)) = self.get(option) {
                args.push(option.name());
                if option.takes_value() {
                    args.push(value.to_string());
                }
            }
        }
        args
    }
}

/// An argument as text (what is not Unicode replaced).
pub(crate) fn text(value: OsString) -> String {
    value.to_string_lossy().into_owned()
}

pub(crate) fn lex_error(error: lexopt::Error) -> ArgsError {
    match error {
        lexopt::Error::NonUnicodeValue(value) => ArgsError::NotUnicode(text(value)),
        other => ArgsError::Invalid(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn every_spelling_is_read_and_the_rest_kept_in_order() {
        let args = strings(&[
            "prog",
            "-w4",
            "x",
            "--processes=2",
            "-p",
            "1",
            "-5",
            "--keyed",
            "--trace",
            "d",
            "--k=v",
        ]);
        let parsed = RuntimeArgs::parse(args).expect("valid");
        assert_eq!(parsed.get(RuntimeOption::Workers), Some(("-w", "4")));
        assert_eq!(parsed.get(RuntimeOption::Processes), Some(("--processes", "2")));
        assert_eq!(parsed.get(RuntimeOption::Process), Some(("-p", "1")));
        assert_eq!(parsed.get(RuntimeOption::Trace), Some(("--trace", "d")));
        assert_eq!(parsed.rest, strings(&["prog", "x", "-5", "--keyed", "--k=v"]));
    }

    #[test]
    fn the_last_occurrence_wins_and_nothing_after_a_double_dash_is_read() {
        let parsed = RuntimeArgs::parse(strings(&["--threads", "2", "-w", "3", "--", "-w", "9"])).unwrap();
        assert_eq!(parsed.get(RuntimeOption::Workers), Some(("-w", "3")));
        assert_eq!(parsed.rest, strings(&["--", "-w", "9"]));
    }

    #[test]
    fn bad_command_lines_name_the_option() {
        assert_eq!(RuntimeArgs::parse(strings(&["-w"])), Err(ArgsError::MissingValue("-w".into())));
        assert_eq!(
            RuntimeArgs::parse(strings(&["--insecure=yes"])),
            Err(ArgsError::UnexpectedValue("--insecure".into(), "yes".into()))
        );
    }

    #[test]
    fn rendered_options_read_back_the_same() {
        let mut built = RuntimeArgs::default();
        built.set(RuntimeOption::Gone, "1,3");
        built.set(RuntimeOption::Insecure, "");
        built.set(RuntimeOption::Workers, "2");
        let args = built.to_args();
        assert_eq!(args, strings(&["-w", "2", "--insecure", "--gone", "1,3"]));
        let read = RuntimeArgs::parse(args).unwrap();
        assert_eq!(read.to_args(), built.to_args());
    }
}

//! A program's own command line, read the way [`crate::RuntimeArgs`] reads the runtime's:
//! [`ProgramFlags`] declares a program's flags (`--runs 5`, also `--runs=5`), switches
//! (`--quiet`) and positional arguments with their help, [`Flags`] is what a command line
//! gave them, with typed values, and [`FlagError`] says what is wrong, naming the flag and the
//! value. `--help` prints the listing. The benchmark binaries and the crates' examples use it,
//! so every program of the repository reads its arguments with one piece (on `lexopt`).
//! It owns no defaults: each program passes its own when it reads a value.

use std::fmt::Display;
use std::str::FromStr;

use crate::runtime_args::{self, text, ArgsError, RuntimeOption};

/// A command line a program cannot read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FlagError {
    /// A flag the program does not declare.
    #[error("unknown option {0} (--help lists the options)")]
    Unknown(String),
    /// A flag that takes a value came last.
    #[error("option {0} requires a value")]
    MissingValue(String),
    /// A value attached to a switch (`--quiet=yes`).
    #[error("option {0} takes no value, found {1:?}")]
    UnexpectedValue(String, String),
    /// A value that does not parse as what the flag takes.
    #[error("option {flag}: expected {expected}, found {value:?}")]
    BadValue {
        /// The flag (`--runs`) or positional argument (`ROUNDS`).
        flag: String,
        /// The value as given.
        value: String,
        /// What the flag takes (`u64`, `P@SECONDS`).
        expected: String,
    },
    /// More positional arguments than the program takes.
    #[error("unexpected argument {0:?}")]
    ExtraArgument(String),
    /// Values that are each fine but do not go together (`--migrate-at` after `--duration`).
    #[error("{0}")]
    Combination(String),
    /// An argument that is not valid Unicode.
    #[error("the argument {0:?} is not valid Unicode")]
    NotUnicode(String),
    /// Anything else the lexer refuses.
    #[error("{0}")]
    Invalid(String),
    /// `--help` was given: not a mistake, the caller prints [`ProgramFlags::help`].
    #[error("--help")]
    HelpRequested,
}

impl FlagError {
    /// A value of `flag` that is not what it takes; `expected` says what it takes.
    pub fn bad_value(flag: &str, value: &str, expected: impl Display) -> FlagError {
        FlagError::BadValue {
            flag: flag.to_string(),
            value: value.to_string(),
            expected: expected.to_string(),
        }
    }
}

/// One declared flag or switch.
#[derive(Clone, Debug)]
struct Declared {
    /// `--runs`.
    name: &'static str,
    /// What its value is called in the listing (`N`); none for a switch.
    value: Option<&'static str>,
    help: &'static str,
}

/// The flags, switches and positional arguments a program takes.
#[derive(Clone, Debug)]
pub struct ProgramFlags {
    program: &'static str,
    flags: Vec<Declared>,
    positionals: Vec<(&'static str, &'static str)>,
    runtime_options: bool,
}

impl ProgramFlags {
    /// A program called `program` that takes nothing yet.
    pub fn new(program: &'static str) -> Self {
        ProgramFlags { program, flags: Vec::new(), positionals: Vec::new(), runtime_options: false }
    }

    /// Takes `name VALUE` (`name` with its dashes: `--runs`); `help` gives the default.
    pub fn flag(mut self, name: &'static str, value: &'static str, help: &'static str) -> Self {
        self.flags.push(Declared { name, value: Some(value), help });
        self
    }

    /// Takes the switch `name` (`--quiet`), which has no value.
    pub fn switch(mut self, name: &'static str, help: &'static str) -> Self {
        self.flags.push(Declared { name, value: None, help });
        self
    }

    /// Takes a positional argument called `name` (`ROUNDS`), after those declared before it.
    pub fn positional(mut self, name: &'static str, help: &'static str) -> Self {
        self.positionals.push((name, help));
        self
    }

    /// Lists the runtime's options ([`RuntimeOption`]) in the help too: for programs that
    /// read them first (`Config::from_args`) and hand the rest to [`ProgramFlags::parse`].
    pub fn with_runtime_options(mut self) -> Self {
        self.runtime_options = true;
        self
    }

    /// The usage line and one line per argument, flag and switch.
    pub fn help(&self) -> String {
        let mut usage = format!("usage: {}", self.program);
        for (name, _) in &self.positionals {
            usage.push_str(&format!(" [{name}]"));
        }
        if !self.flags.is_empty() || self.runtime_options {
            usage.push_str(" [OPTIONS]");
        }
        let mut lines = vec![usage];
        let mut row = |left: String, help: &str| lines.push(format!("  {left:<24} {help}"));
        for (name, help) in &self.positionals {
            row(name.to_string(), help);
        }
        for flag in &self.flags {
            let left = match flag.value {
                Some(value) => format!("{} {value}", flag.name),
                None => flag.name.to_string(),
            };
            row(left, flag.help);
        }
        row("--help".to_string(), "print this listing");
        if self.runtime_options {
            lines.push("runtime options:".to_string());
            for option in RuntimeOption::ALL {
                let value = if option.takes_value() { " VALUE" } else { "" };
                lines.push(format!("  {:<24} {}", format!("{}{value}", option.name()), option.help()));
            }
        }
        lines.join("\n")
    }

    /// Reads `args` (without the program's name): declared flags with their values, in
    /// either spelling, and positional arguments; the last occurrence of a flag wins.
    ///
    /// # Errors
    ///
    /// An undeclared flag, a missing or unexpected value, too many positional arguments, or
    /// `--help` ([`FlagError::HelpRequested`]).
    pub fn parse<I: IntoIterator<Item = String>>(&self, args: I) -> Result<Flags, FlagError> {
        let mut parsed =
            Flags { names: self.positionals.iter().map(|(name, _)| *name).collect(), ..Flags::default() };
        // lexopt skips the first argument as the program's name: give it a placeholder.
        let mut parser = lexopt::Parser::from_iter(std::iter::once(String::new()).chain(args));
        while let Some(arg) = parser.next().map_err(lex_error)? {
            let written = match arg {
                lexopt::Arg::Value(value) => {
                    let value = text(value);
                    if parsed.positionals.len() == self.positionals.len() {
                        return Err(FlagError::ExtraArgument(value));
                    }
                    parsed.positionals.push(value);
                    continue;
                }
                lexopt::Arg::Long("help") => return Err(FlagError::HelpRequested),
                lexopt::Arg::Long(long) => format!("--{long}"),
                lexopt::Arg::Short(short) => format!("-{short}"),
            };
            let Some(flag) = self.flags.iter().find(|flag| flag.name == written) else {
                return Err(FlagError::Unknown(written));
            };
            let value = match flag.value {
                Some(_) => parser.value().map(text).map_err(|_| FlagError::MissingValue(written))?,
                None => match parser.optional_value() {
                    Some(value) => return Err(FlagError::UnexpectedValue(written, text(value))),
                    None => String::new(),
                },
            };
            parsed.given.retain(|(name, _)| *name != flag.name);
            parsed.given.push((flag.name, value));
        }
        Ok(parsed)
    }

    /// [`ProgramFlags::parse`] for a `main`: prints the listing and exits with status 0 on
    /// `--help`, prints the error and the usage and exits with status 2 on a bad command line.
    pub fn parse_or_exit<I: IntoIterator<Item = String>>(&self, args: I) -> Flags {
        self.parse(args).unwrap_or_else(|error| self.exit(&error))
    }

    /// Exits as [`ProgramFlags::parse_or_exit`] does on `error`: for errors found while
    /// reading the values, and those of the runtime's options read before (`ConfigError`).
    pub fn exit(&self, error: &(dyn std::error::Error + 'static)) -> ! {
        if error.downcast_ref::<FlagError>() == Some(&FlagError::HelpRequested) {
            println!("{}", self.help());
            std::process::exit(0)
        }
        eprintln!("{}: {error}\n{}", self.program, self.help());
        std::process::exit(2)
    }
}

/// What a command line gave a program's flags and positional arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    /// Each flag given, with its value (empty for a switch).
    given: Vec<(&'static str, String)>,
    positionals: Vec<String>,
    /// The declared names of the positional arguments, for errors.
    names: Vec<&'static str>,
}

impl Flags {
    /// The text given to `flag`, if it was given.
    pub fn text(&self, flag: &str) -> Option<&str> {
        self.given.iter().find(|(name, _)| *name == flag).map(|(_, value)| value.as_str())
    }

    /// Whether the switch (or flag) `flag` was given.
    pub fn has(&self, flag: &str) -> bool {
        self.text(flag).is_some()
    }

    /// The value of `flag` (`default` when not given).
    ///
    /// # Errors
    ///
    /// [`FlagError::BadValue`] for a value that does not parse as a `T`.
    pub fn value<T: FromStr>(&self, flag: &str, default: T) -> Result<T, FlagError> {
        self.value_with(flag, default, |text| parse_as::<T>(flag, text))
    }

    /// The value of `flag` read by `read` (`default` when not given).
    ///
    /// # Errors
    ///
    /// What `read` returns.
    pub fn value_with<T>(
        &self,
        flag: &str,
        default: T,
        read: impl FnOnce(&str) -> Result<T, FlagError>,
    ) -> Result<T, FlagError> {
        self.text(flag).map_or(Ok(default), read)
    }

    /// The comma-separated values of `flag` (`default` when not given; empty items skipped).
    ///
    /// # Errors
    ///
    /// [`FlagError::BadValue`] naming the whole list, for an item that is not a `T`.
    pub fn list<T: FromStr>(&self, flag: &str, default: Vec<T>) -> Result<Vec<T>, FlagError> {
        self.value_with(flag, default, |text| {
            text.split(',')
                .filter(|item| !item.is_empty())
                .map(|item| {
                    item.parse().map_err(|_| {
                        FlagError::bad_value(flag, text, format!("a comma-separated list of {}", kind::<T>()))
                    })
                })
                .collect()
        })
    }

    /// Positional argument `index`, `default` when not given.
    ///
    /// # Errors
    ///
    /// [`FlagError::BadValue`] naming the argument as declared, for a value that is not a `T`.
    pub fn positional<T: FromStr>(&self, index: usize, default: T) -> Result<T, FlagError> {
        let name = self.names.get(index).copied().unwrap_or("a positional argument");
        self.positionals.get(index).map_or(Ok(default), |text| parse_as::<T>(name, text))
    }

    /// The positional arguments given, in order.
    pub fn positionals(&self) -> &[String] {
        &self.positionals
    }
}

/// `text` read as a `T`, or the error naming `flag`.
fn parse_as<T: FromStr>(flag: &str, text: &str) -> Result<T, FlagError> {
    text.parse().map_err(|_| FlagError::bad_value(flag, text, kind::<T>()))
}

/// What a `T` is, for errors: `u64`, `f64`, `PathBuf`.
fn kind<T>() -> &'static str {
    let name = std::any::type_name::<T>();
    name.rsplit("::").next().unwrap_or(name)
}

/// What the lexer refuses, as the runtime's parser reports it.
fn lex_error(error: lexopt::Error) -> FlagError {
    match runtime_args::lex_error(error) {
        ArgsError::NotUnicode(value) => FlagError::NotUnicode(value),
        other => FlagError::Invalid(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(ToString::to_string).collect()
    }

    fn program() -> ProgramFlags {
        ProgramFlags::new("prog")
            .positional("ROUNDS", "rounds (default 10)")
            .flag("--runs", "N", "runs (default 5)")
            .flag("--joins", "T1,T2", "join times (default 4,8)")
            .switch("--quiet", "print less")
    }

    #[test]
    fn both_spellings_switches_and_positionals_are_read() {
        let flags = program().parse(strings(&["--runs=3", "7", "--quiet", "--joins", "1.5,2"])).unwrap();
        assert_eq!(flags.value("--runs", 5u64), Ok(3));
        assert_eq!(flags.positional(0, 10u64), Ok(7));
        assert!(flags.has("--quiet"));
        assert_eq!(flags.list("--joins", vec![4.0, 8.0]), Ok(vec![1.5, 2.0]));
        let defaults = program().parse(Vec::new()).unwrap();
        assert_eq!(defaults.value("--runs", 5u64), Ok(5));
        assert_eq!(defaults.positional(0, 10u64), Ok(10));
        assert!(!defaults.has("--quiet"));
    }

    #[test]
    fn the_last_occurrence_wins_and_negative_values_are_values() {
        let flags = ProgramFlags::new("p").flag("--at", "S", "").parse(strings(&["--at", "1", "--at", "-2"]));
        assert_eq!(flags.unwrap().value("--at", 0i64), Ok(-2));
    }

    #[test]
    fn errors_name_the_flag_and_the_value() {
        let parse = |args: &[&str]| program().parse(strings(args));
        assert_eq!(parse(&["--rounds", "1"]), Err(FlagError::Unknown("--rounds".into())));
        assert_eq!(parse(&["--runs"]), Err(FlagError::MissingValue("--runs".into())));
        assert_eq!(parse(&["--quiet=yes"]), Err(FlagError::UnexpectedValue("--quiet".into(), "yes".into())));
        assert_eq!(parse(&["1", "2"]), Err(FlagError::ExtraArgument("2".into())));
        assert_eq!(parse(&["--help"]), Err(FlagError::HelpRequested));
        let flags = parse(&["--runs", "many", "x", "--joins", "1,soon"]).unwrap();
        let error = flags.value("--runs", 5u64).unwrap_err();
        assert_eq!(error, FlagError::bad_value("--runs", "many", "u64"));
        assert_eq!(error.to_string(), "option --runs: expected u64, found \"many\"");
        assert_eq!(flags.positional(0, 1u64), Err(FlagError::bad_value("ROUNDS", "x", "u64")));
        assert!(flags.list("--joins", vec![1.0]).unwrap_err().to_string().contains("\"1,soon\""));
    }

    #[test]
    fn the_help_lists_every_argument() {
        let help = program().with_runtime_options().help();
        for expected in
            ["usage: prog [ROUNDS] [OPTIONS]", "--runs N", "--quiet", "--help", "-w VALUE", "--insecure"]
        {
            assert!(help.contains(expected), "{expected:?} in\n{help}");
        }
    }
}

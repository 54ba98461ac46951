//! [`ConfigError`]: why a command line, the environment or a [`crate::Config`] does not make
//! a run, one variant per source of the problem (the command line's form, an option's value,
//! an environment variable, the network set-up).

use crate::networking::{BudgetError, NetworkError, SecondsError};
use crate::runtime_args::ArgsError;

/// Why a run cannot be configured or started.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The command line cannot be read (a missing value, text that is not Unicode).
    #[error(transparent)]
    Args(#[from] ArgsError),
    /// An option's value is not what it must be; `option` is spelled as written.
    #[error("option {option}: {problem}")]
    Option {
        /// The option as written (`--workers`, `-w`).
        option: String,
        /// What is wrong with its value.
        problem: String,
    },
    /// An option's duration is not a usable number of seconds.
    #[error("option {option}: {error}")]
    OptionSeconds {
        /// The option as written.
        option: String,
        /// What is wrong with the duration.
        error: SecondsError,
    },
    /// An environment variable's value is not what it must be.
    #[error("{variable}: {problem}")]
    Variable {
        /// The variable (`TIMELY_INSECURE`).
        variable: &'static str,
        /// What is wrong with its value.
        problem: String,
    },
    /// An environment variable's duration is not a usable number of seconds.
    #[error("{variable}: {error}")]
    VariableSeconds {
        /// The variable (`TIMELY_PEER_TIMEOUT`).
        variable: &'static str,
        /// What is wrong with the duration.
        error: SecondsError,
    },
    /// A receive budget that cannot be used.
    #[error(transparent)]
    Budget(#[from] BudgetError),
    /// `Config::Process(0)`.
    #[error("Config::Process(0): the number of workers must be at least 1")]
    NoWorkers,
    /// The hostfile, or connecting the cluster, failed.
    #[error(transparent)]
    Network(#[from] NetworkError),
}

impl ConfigError {
    /// Whether this is a join that may succeed later: a leave was in progress, and nothing
    /// was admitted ([`NetworkError::JoinPostponed`], `docs/rescaling.md`).
    pub fn is_join_postponed(&self) -> bool {
        matches!(self, ConfigError::Network(error) if error.is_join_postponed())
    }

    /// An error in the value of `option` (as written).
    pub fn option(option: &str, problem: impl Into<String>) -> Self {
        ConfigError::Option { option: option.to_string(), problem: problem.into() }
    }

    /// An error in the value of environment variable `variable`.
    pub fn variable(variable: &'static str, problem: impl Into<String>) -> Self {
        ConfigError::Variable { variable, problem: problem.into() }
    }
}

//! Durations written in seconds (`10`, `0.5`) on command lines and in environment
//! variables: [`parse_seconds`], and [`SecondsError`] for a text that is not one or a
//! duration outside what a setting accepts.

use std::time::Duration;

/// A duration setting that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SecondsError {
    /// Not a finite number of seconds above zero; holds the text as given.
    #[error("expected a positive number of seconds, found {0:?}")]
    NotSeconds(String),
    /// Below the setting's minimum.
    #[error("a {setting} of {} s is shorter than the minimum of {} s", .given.as_secs_f64(), .min.as_secs_f64())]
    TooShort {
        /// What the duration sets (`clock interval`).
        setting: &'static str,
        /// The duration given.
        given: Duration,
        /// The shortest accepted.
        min: Duration,
    },
    /// Outside the setting's range.
    #[error(
        "a {setting} of {} s is outside the accepted range, {} to {} s",
        .given.as_secs_f64(), .min.as_secs_f64(), .max.as_secs_f64()
    )]
    OutOfRange {
        /// What the duration sets (`peer timeout`).
        setting: &'static str,
        /// The duration given.
        given: Duration,
        /// The shortest accepted.
        min: Duration,
        /// The longest accepted.
        max: Duration,
    },
}

/// The duration `text` gives in seconds (surrounding white space ignored); a number too large
/// for a `Duration` is `Duration::MAX`, for the setting's range to refuse.
///
/// # Errors
///
/// [`SecondsError::NotSeconds`] for anything but a finite number above zero.
pub fn parse_seconds(text: &str) -> Result<Duration, SecondsError> {
    match text.trim().parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds > 0.0 => {
            Ok(Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX))
        }
        _ => Err(SecondsError::NotSeconds(text.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_of_seconds_are_read_and_others_refused() {
        assert_eq!(parse_seconds(" 2.5 "), Ok(Duration::from_millis(2500)));
        assert_eq!(parse_seconds("1e300"), Ok(Duration::MAX));
        for text in ["0", "-1", "soon", "", "NaN", "inf"] {
            assert_eq!(parse_seconds(text), Err(SecondsError::NotSeconds(text.to_string())), "{text}");
        }
    }
}

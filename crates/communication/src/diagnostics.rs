//! Warnings of the runtime: a connection rejected during setup, a cluster without a secret, a
//! trace that could not be finished.
//!
//! [`warning!`](crate::warning) sends them through the `log` crate, with the module that warns
//! as the target, so that a program with a logger can filter or redirect them (timely_py
//! installs one that hands them to Python's `logging`: the logger of
//! `timely_communication::networking::connect` is `logging.getLogger("timely_communication.networking.connect")`).
//! A Rust program that installed no logger (the `log` crate's maximum level is still `Off`)
//! sees them on stderr, as before. This module owns only that choice; it must not decide what
//! deserves a warning.

pub use log;

/// Whether warnings go to stderr: no logger has raised the `log` crate's maximum level.
pub fn unlogged() -> bool {
    log::max_level() == log::LevelFilter::Off
}

/// Warns through the `log` crate (target: the calling module), or on stderr when the program
/// installed no logger. Takes `format!` arguments.
#[macro_export]
macro_rules! warning {
    ($($arg:tt)+) => {
        if $crate::diagnostics::unlogged() {
            eprintln!("timely: warning: {}", format_args!($($arg)+));
        } else {
            $crate::diagnostics::log::warn!($($arg)+);
        }
    };
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    /// Collects every record it is given.
    struct Collector(Mutex<Vec<(String, log::Level, String)>>);

    impl log::Log for Collector {
        fn enabled(&self, _: &log::Metadata) -> bool {
            true
        }
        fn log(&self, record: &log::Record) {
            let entry = (record.target().to_owned(), record.level(), record.args().to_string());
            self.0.lock().unwrap().push(entry);
        }
        fn flush(&self) {}
    }

    static COLLECTOR: Collector = Collector(Mutex::new(Vec::new()));

    #[test]
    fn warnings_reach_an_installed_logger_with_the_calling_module_as_target() {
        assert!(super::unlogged(), "no logger yet");
        crate::warning!("before any logger: {}", 1);
        assert!(COLLECTOR.0.lock().unwrap().is_empty());
        log::set_logger(&COLLECTOR).expect("the only logger of this test binary");
        log::set_max_level(log::LevelFilter::Info);
        assert!(!super::unlogged());
        crate::warning!("process {}: rejected", 3);
        let seen = COLLECTOR.0.lock().unwrap().clone();
        let expected = (
            "timely_communication::diagnostics::tests".to_owned(),
            log::Level::Warn,
            "process 3: rejected".to_owned(),
        );
        assert_eq!(seen, vec![expected]);
    }
}

//! The engine's public API with one change: [`execute`] traces the run when the environment
//! names a trace directory (`TIMELY_TRACE_DIR`, with `TIMELY_TRACE_EVENTS` and
//! `TIMELY_TRACE_FLUSH`; see `TraceSettings::from_args`).
//!
//! The engine's examples call `timely_engine::execute`, which never traces; compiled against
//! this library instead (see `Cargo.toml`), they write the real traces that the Python trace
//! tools are tested on. This crate owns nothing else and must not change what a run does.

pub use engine::*;

/// `engine::execute`, traced into the directory the environment names (if any).
pub fn execute<T, F>(config: Config, func: F) -> Result<Vec<T>, ExecuteError>
where
    T: Send + 'static,
    F: Fn(&mut Worker) -> T + Send + Sync + 'static,
{
    let (trace, _) = TraceSettings::from_args(Vec::new()).map_err(ExecuteError::Config)?;
    execute_traced(config, trace, func)
}

//! The engine built without trace files (feature `trace-files` off, as this program, which
//! depends on timely-engine alone, builds it): a trace asked for in code or on the command
//! line stops the run before any worker starts, with an error that says the program was built
//! without trace files. Traced runs are tested in the engine's own suite (`trace`), which has
//! the feature.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use timely_engine::trace::BUILT_WITHOUT_TRACE_FILES;
use timely_engine::{execute_from_args, execute_traced, Config, ExecuteError, TraceSettings};

/// Runs a worker's closure that only notes that it ran, under `run`; returns the run's error
/// and whether the closure ran.
fn refused(run: impl FnOnce(Arc<AtomicBool>) -> Result<Vec<()>, ExecuteError>) -> (String, bool) {
    let ran = Arc::new(AtomicBool::new(false));
    let error = run(ran.clone()).expect_err("a trace was asked for in a build without trace files");
    (error.to_string(), ran.load(Ordering::SeqCst))
}

#[test]
fn a_trace_asked_for_in_code_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("trace");
    let settings = TraceSettings::to_directory(&root);
    let (error, ran) = refused(|ran| {
        execute_traced(Config::Process(2), Some(settings), move |_| ran.store(true, Ordering::SeqCst))
    });
    assert!(error.contains(BUILT_WITHOUT_TRACE_FILES), "{error}");
    assert!(error.contains(&root.display().to_string()), "the error names the directory: {error}");
    assert!(!ran, "no worker runs when its trace cannot be written");
    assert!(!root.exists(), "nothing is written");
}

#[test]
fn a_trace_asked_for_on_the_command_line_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("trace");
    let args = ["-w", "2", "--trace", root.to_str().unwrap(), "--trace-events", "schedule"];
    let (error, ran) =
        refused(|ran| execute_from_args(args.map(String::from), move |_| ran.store(true, Ordering::SeqCst)));
    assert!(error.contains("without trace files") && error.contains("trace-files"), "{error}");
    assert!(!ran && !root.exists());
}

#[test]
fn a_run_that_asks_for_no_trace_runs() {
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    execute_traced(Config::Process(2), None, move |_| flag.store(true, Ordering::SeqCst)).unwrap();
    assert!(ran.load(Ordering::SeqCst));
}

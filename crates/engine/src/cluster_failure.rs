//! How a worker stops when its cluster cannot go on.
//!
//! This module owns [`ClusterFailure`], the payload a worker unwinds with when a process was
//! lost or broke the protocol (the runner turns it into the error of the run), and the three
//! ways to raise it from the middle of a step: [`stop_if_failed`] after the network recorded
//! a failure, [`stop_for_violation`] when the engine itself finds a message of another process
//! invalid, [`stop_for_configuration`] when this process was started in a way that does not
//! fit the cluster it joined, [`stop_for_program`] when the program did what the cluster cannot
//! serve. It must not decide what is invalid.

use timely_communication::ProtocolViolations;

/// The payload with which a worker unwinds when its cluster failed (a process was lost, or
/// sent what the protocol forbids); it holds the reason, naming the process.
#[derive(Debug)]
pub struct ClusterFailure(pub String);

/// Unwinds with [`ClusterFailure`] if a failure was recorded: what the process sent after a
/// message that was dropped as invalid must not be used.
pub(crate) fn stop_if_failed(violations: &ProtocolViolations) {
    if let Some(failure) = violations.failure() {
        std::panic::resume_unwind(Box::new(ClusterFailure(failure)));
    }
}

/// Records that worker `worker`'s process broke the protocol (`reason` says how) and unwinds
/// with [`ClusterFailure`].
pub(crate) fn stop_for_violation(violations: &ProtocolViolations, worker: usize, reason: &str) -> ! {
    let failure = violations.report(violations.process_of(worker), reason);
    std::panic::resume_unwind(Box::new(ClusterFailure(failure)))
}

/// Ends this worker's run because this process was configured in a way that does not fit its
/// cluster (`error` says how): unwinds with [`ClusterFailure`] holding its message, which the
/// runner returns as the run's error (no panic message, no panic hook), without blaming
/// another process, so that this process's abort frames name this process and the others stop
/// naming it, as for any failed run.
pub(crate) fn stop_for_configuration(error: &dyn std::error::Error) -> ! {
    std::panic::resume_unwind(Box::new(ClusterFailure(error.to_string())))
}

/// Ends this worker's run because the program did something the cluster cannot serve
/// (`reason` says what, naming the dataflow and workers): unwinds with [`ClusterFailure`]
/// without blaming another process, so that the others stop naming this one.
pub(crate) fn stop_for_program(reason: &str) -> ! {
    std::panic::resume_unwind(Box::new(ClusterFailure(reason.to_owned())))
}

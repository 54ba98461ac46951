//! Helpers shared by the integration tests.

use std::time::Duration;

/// Runs `test` on its own thread and fails if it does not finish within `limit`, so that a lost
/// wake-up shows as a failure instead of a hung test run.
pub fn within<R: Send + 'static>(limit: Duration, test: impl FnOnce() -> R + Send + 'static) -> R {
    let (sender, receiver) = std::sync::mpsc::channel();
    let runner = std::thread::spawn(move || {
        let _ = sender.send(test());
    });
    match receiver.recv_timeout(limit) {
        Ok(result) => result,
        // The test panicked: join to re-raise its panic with its message.
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => match runner.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the runner sends before it finishes"),
        },
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("test did not finish within {limit:?}")
        }
    }
}

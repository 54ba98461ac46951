//! Values that stay on their worker's thread.
//!
//! The Python wrappers of ports, capabilities and operator facts are ordinary (sendable)
//! Python objects holding only a key (`Local`): used on another thread they raise, and if
//! an exception carries one to the caller of `execute`, dropping it there leaves the value
//! to its own thread. `Attached` releases Python objects owned by an operator's closure on
//! the thread that drops the operator. Knows nothing of operators.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::thread::ThreadId;

/// Python objects owned by an operator's closure. The engine drops finished operators while
/// stepping, detached from the interpreter, where dropping a `Py` only queues its release
/// for whichever thread attaches next: possibly another worker, which must not free this
/// worker's objects (user state, unsendable objects of other modules). This guard releases
/// them on the dropping thread, attached.
pub struct Attached<T>(Option<T>);

impl<T> Attached<T> {
    pub fn new(value: T) -> Self {
        Attached(Some(value))
    }

    pub fn get(&self) -> &T {
        self.0.as_ref().expect("present until dropped")
    }
}

impl<T> Drop for Attached<T> {
    fn drop(&mut self) {
        if let Some(value) = self.0.take() {
            Python::attach(|_py| drop(value));
        }
    }
}

thread_local! {
    static THREAD: ThreadId = std::thread::current().id();
    static LOCALS: RefCell<HashMap<u64, Box<dyn Any>>> = RefCell::new(HashMap::new());
    static NEXT_LOCAL: Cell<u64> = const { Cell::new(0) };
}

/// This thread's id (None while the thread's locals are being destroyed).
fn this_thread() -> Option<ThreadId> {
    THREAD.try_with(|id| *id).ok()
}

/// A value that stays on the worker thread that created it, reached through its key.
pub struct Local<T: Clone + 'static> {
    owner: ThreadId,
    key: u64,
    what: &'static str,
    marker: PhantomData<fn() -> T>,
}

impl<T: Clone + 'static> Local<T> {
    /// Keeps `value` on this thread; `what` names it in errors ("this Capability").
    pub fn new(what: &'static str, value: T) -> Self {
        let key = NEXT_LOCAL.with(|next| {
            let key = next.get();
            next.set(key + 1);
            key
        });
        LOCALS.with(|locals| locals.borrow_mut().insert(key, Box::new(value)));
        Local { owner: std::thread::current().id(), key, what, marker: PhantomData }
    }

    /// A clone of the value, on its own thread only.
    pub fn get(&self) -> PyResult<T> {
        if this_thread() != Some(self.owner) {
            return Err(PyRuntimeError::new_err(format!(
                "{} belongs to another worker: use it only on the worker (thread) whose operator made it",
                self.what
            )));
        }
        LOCALS
            .with(|locals| {
                locals.borrow().get(&self.key).and_then(|value| value.downcast_ref::<T>()).cloned()
            })
            .ok_or_else(|| PyRuntimeError::new_err(format!("{} is no longer available", self.what)))
    }
}

impl<T: Clone + 'static> Drop for Local<T> {
    fn drop(&mut self) {
        if this_thread() == Some(self.owner) {
            let value = LOCALS.try_with(|locals| locals.borrow_mut().remove(&self.key)).ok().flatten();
            drop(value);
        }
    }
}

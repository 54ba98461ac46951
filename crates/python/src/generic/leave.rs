//! A source's part in its worker's leave (`docs/rescaling.md`, "Leaving a running cluster").
//!
//! A generic operator without inputs (`scope.source`) holds capabilities that no input
//! justifies: nothing would ever finish it but its own logic, and a logic that emits every
//! epoch forever keeps its process from leaving. Each source registers a [`SourceLeave`] with
//! its worker's leave state as [`ReleaseOnLeave`], like an input handle; it keeps weak
//! references to every `Capability` slot Python holds for the operator. When the worker
//! starts leaving, every slot is released (using it then raises `LeavingError`), and one
//! borrowed at that moment is released at the end of the operator's current run. Records the
//! source gave before are in its output already and are delivered; what it has not given is
//! its program's. Operators with inputs do not register: they finish when their inputs do.

use crate::errors::LeavingError;
use pyo3::prelude::*;
use std::cell::{Cell, RefCell};
use std::rc::Weak;
use timely_engine::rescale::leave::ReleaseOnLeave;

/// A capability handed to Python (its slot, in `capability`), as a leave sees it.
pub trait LeaveSlot {
    /// Releases the capability because the worker is leaving, so that using it raises
    /// `LeavingError`; false (nothing done) if it is in use right now.
    fn release_for_leave(&self) -> bool;
}

/// The capability slots of one source, released when its worker starts leaving.
#[derive(Default)]
pub struct SourceLeave {
    /// Every slot handed to Python for the operator (dead ones are dropped as the list fills).
    slots: RefCell<Vec<Weak<dyn LeaveSlot>>>,
    /// True once the worker is leaving: the source holds no capability from then on.
    released: Cell<bool>,
}

impl SourceLeave {
    /// Tracks `slot`, a capability of the source just handed to Python; released at once if
    /// the worker is leaving already.
    pub fn track(&self, slot: Weak<dyn LeaveSlot>) {
        if self.released.get() && slot.upgrade().is_some_and(|slot| slot.release_for_leave()) {
            return;
        }
        let mut slots = self.slots.borrow_mut();
        // Dead slots go when the list is full, before it would grow: amortized O(1) a slot.
        if slots.len() == slots.capacity() {
            slots.retain(|slot| slot.strong_count() > 0);
        }
        slots.push(slot);
    }

    /// True once the worker is leaving and the source's capabilities were released.
    pub fn is_released(&self) -> bool {
        self.released.get()
    }

    /// True if `error`, raised by the source's logic, ends its run quietly: a `LeavingError`
    /// on a worker that is leaving (a capability released by the leave was used).
    pub fn ends_quietly(&self, py: Python<'_>, error: &PyErr) -> bool {
        self.released.get() && error.is_instance_of::<LeavingError>(py)
    }

    /// Releases every tracked slot that is not borrowed right now; keeps the borrowed ones
    /// for the next sweep (at the end of the operator's current run).
    pub fn sweep(&self) {
        // Taken out, and the busy ones put back.
        let slots = std::mem::take(&mut *self.slots.borrow_mut());
        let mut busy = Vec::new();
        for weak in slots {
            if weak.upgrade().is_some_and(|slot| !slot.release_for_leave()) {
                busy.push(weak);
            }
        }
        self.slots.borrow_mut().extend(busy);
    }
}

impl ReleaseOnLeave for SourceLeave {
    fn release(&self) {
        self.released.set(true);
        self.sweep();
    }
}

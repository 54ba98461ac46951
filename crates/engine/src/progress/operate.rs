//! The interface between a scope and the operators it contains.
//!
//! An operator describes its shape (inputs, outputs), its internal path summaries and its
//! initial capabilities, and then, each time it is scheduled, reports what it did through a
//! shared `SharedProgress`: messages consumed per input, capability changes per output,
//! messages produced per output. In the other direction the scope writes the changes of
//! each input's frontier into the same structure. Nested scopes implement this trait too,
//! which is how a scope is presented to its parent as an operator.

use super::change_batch::ChangeBatch;
use super::reachability::Summary;
use super::timestamp::Timestamp;
use std::cell::RefCell;
use std::rc::Rc;

/// Progress information exchanged between an operator and its scope.
#[derive(Debug)]
pub struct SharedProgress<T> {
    /// Per input: changes to the input's frontier, written by the scope.
    pub frontiers: Vec<ChangeBatch<T>>,
    /// Per input: messages consumed, written by the operator.
    pub consumeds: Vec<ChangeBatch<T>>,
    /// Per output: changes to the capabilities held, written by the operator.
    pub internals: Vec<ChangeBatch<T>>,
    /// Per output: messages produced, written by the operator.
    pub produceds: Vec<ChangeBatch<T>>,
}

impl<T: Ord> SharedProgress<T> {
    /// Empty progress information for an operator of the given shape.
    pub fn new(inputs: usize, outputs: usize) -> Self {
        SharedProgress {
            frontiers: (0..inputs).map(|_| ChangeBatch::new()).collect(),
            consumeds: (0..inputs).map(|_| ChangeBatch::new()).collect(),
            internals: (0..outputs).map(|_| ChangeBatch::new()).collect(),
            produceds: (0..outputs).map(|_| ChangeBatch::new()).collect(),
        }
    }

    /// True when the operator reported anything (consumed, produced, capability changes).
    pub fn reported_anything(&mut self) -> bool {
        let any = |batches: &mut Vec<ChangeBatch<T>>| batches.iter_mut().any(|b| !b.is_empty());
        any(&mut self.consumeds) || any(&mut self.internals) || any(&mut self.produceds)
    }
}

/// An operator as its scope sees it.
pub trait Operate<T: Timestamp> {
    /// A descriptive name.
    fn name(&self) -> &str;
    /// Number of input ports.
    fn inputs(&self) -> usize;
    /// Number of output ports.
    fn outputs(&self) -> usize;
    /// True when the operator's progress statements concern only this worker, so they must
    /// be broadcast to the others. Nested scopes report already-exchanged progress: false.
    fn local(&self) -> bool {
        true
    }
    /// True when the operator wants to be scheduled whenever an input frontier changes.
    fn notify_me(&self) -> bool {
        true
    }
    /// Called once when the operator is added to its scope: the internal summary
    /// (`[input][output]`) and the shared progress handle, whose `internals` hold the
    /// initial capabilities (counted once for every worker).
    fn initialize(&mut self) -> (Summary<T>, Rc<RefCell<SharedProgress<T>>>);
    /// Runs the operator. Returns true while it may still do work (holds capabilities,
    /// buffers data, or waits for input); false once it is complete.
    fn schedule(&mut self) -> bool;
}

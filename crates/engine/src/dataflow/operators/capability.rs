//! Capabilities: the right to produce records at a time.
//!
//! An operator holds `Capability`s for the times at which it may still send; the scope's
//! progress tracker counts them. Creating, cloning, downgrading and dropping a capability
//! record `+1`/`-1` changes in the operator's capability batch, which the operator reports
//! after each run. An `InputCapability` comes with received records and can be retained.
//! `CapabilitySet` keeps the minimal capabilities of a set of times.
//!
//! A `Capability` compares equal to a time and is a map key (`Eq`, `Hash` by time): an
//! operator can stash records by the capability that lets it send them.

use crate::progress::{Antichain, ChangeBatch, Timestamp};
use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

/// The capability changes of one operator.
pub type CapabilityChanges<T> = Rc<RefCell<ChangeBatch<T>>>;

/// Misuse of a capability.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CapabilityError {
    /// A capability was asked for a time earlier than the one it holds.
    NotInFuture {
        /// The time held.
        held: String,
        /// The time asked for.
        requested: String,
    },
    /// A capability of another operator was used.
    WrongOperator,
}

impl fmt::Display for CapabilityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CapabilityError::NotInFuture { held, requested } => {
                write!(f, "a capability for time {} cannot produce one for earlier time {}", held, requested)
            }
            CapabilityError::WrongOperator => write!(f, "the capability belongs to another operator"),
        }
    }
}

impl std::error::Error for CapabilityError {}

/// Something that names a time an operator may send at: a `Capability`, or the
/// `InputCapability` of records being processed.
pub trait CapabilityRef<T: Timestamp> {
    /// The time.
    fn time(&self) -> &T;
    /// True when it belongs to the operator recording into `changes`.
    #[doc(hidden)]
    fn belongs_to(&self, changes: &CapabilityChanges<T>) -> bool;
}

impl<T: Timestamp> CapabilityRef<T> for Capability<T> {
    fn time(&self) -> &T {
        &self.time
    }
    fn belongs_to(&self, changes: &CapabilityChanges<T>) -> bool {
        Rc::ptr_eq(&self.changes, changes)
    }
}

impl<T: Timestamp> CapabilityRef<T> for InputCapability<T> {
    fn time(&self) -> &T {
        &self.time
    }
    fn belongs_to(&self, changes: &CapabilityChanges<T>) -> bool {
        Rc::ptr_eq(&self.changes, changes)
    }
}

/// The right to send records at `time` (and later) from an operator's outputs.
pub struct Capability<T: Timestamp> {
    time: T,
    changes: CapabilityChanges<T>,
}

impl<T: Timestamp> Capability<T> {
    /// A new capability, recorded in `changes`.
    pub(crate) fn new(time: T, changes: CapabilityChanges<T>) -> Self {
        changes.borrow_mut().update(time.clone(), 1);
        Capability { time, changes }
    }

    /// A capability already counted elsewhere (the initial ones, counted for all workers).
    pub(crate) fn counted(time: T, changes: CapabilityChanges<T>) -> Self {
        Capability { time, changes }
    }

    /// A capability an operator on a joining worker starts with when its bootstrap server
    /// held none: it belongs to no operator, so sending or requesting notifications with it
    /// fails with [`CapabilityError::WrongOperator`]; dropping it changes nothing.
    pub(crate) fn detached(time: T) -> Self {
        Capability { time, changes: Rc::new(RefCell::new(ChangeBatch::new())) }
    }

    /// True for a capability that belongs to no operator: the initial capability of an
    /// operator on a joining worker whose bootstrap server's instance held none. Nothing else
    /// shares its change batch.
    pub fn is_detached(&self) -> bool {
        Rc::strong_count(&self.changes) == 1
    }

    /// The time this capability is for.
    #[inline]
    pub fn time(&self) -> &T {
        &self.time
    }

    /// A new capability for `time`, which must be greater or equal.
    pub fn delayed(&self, time: &T) -> Capability<T> {
        delayed(&self.time, &self.changes, time).unwrap_or_else(|e| panic!("{}", e))
    }

    /// Like `delayed`, but returns an error instead of panicking.
    pub fn try_delayed(&self, time: &T) -> Result<Capability<T>, CapabilityError> {
        delayed(&self.time, &self.changes, time)
    }

    /// Moves this capability to `time`, which must be greater or equal.
    pub fn downgrade(&mut self, time: &T) {
        self.try_downgrade(time).unwrap_or_else(|e| panic!("{}", e))
    }

    /// Like `downgrade`, but returns an error instead of panicking.
    pub fn try_downgrade(&mut self, time: &T) -> Result<(), CapabilityError> {
        let next = self.try_delayed(time)?;
        *self = next;
        Ok(())
    }
}

/// A new capability at `requested`, allowed by a capability (or records) at `held`.
fn delayed<T: Timestamp>(
    held: &T,
    changes: &CapabilityChanges<T>,
    requested: &T,
) -> Result<Capability<T>, CapabilityError> {
    if held.less_equal(requested) {
        Ok(Capability::new(requested.clone(), changes.clone()))
    } else {
        Err(CapabilityError::NotInFuture {
            held: format!("{:?}", held),
            requested: format!("{:?}", requested),
        })
    }
}

impl<T: Timestamp> Clone for Capability<T> {
    fn clone(&self) -> Self {
        Capability::new(self.time.clone(), self.changes.clone())
    }
}

impl<T: Timestamp> Drop for Capability<T> {
    fn drop(&mut self) {
        self.changes.borrow_mut().update(self.time.clone(), -1);
    }
}

impl<T: Timestamp> fmt::Debug for Capability<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Capability({:?})", self.time)
    }
}

impl<T: Timestamp> PartialEq for Capability<T> {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && Rc::ptr_eq(&self.changes, &other.changes)
    }
}

impl<T: Timestamp> Eq for Capability<T> {}

/// By time alone: equal capabilities have equal times, and one operator's capabilities for
/// different times hash apart.
impl<T: Timestamp> std::hash::Hash for Capability<T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.time.hash(state);
    }
}

impl<T: Timestamp> PartialEq<T> for Capability<T> {
    fn eq(&self, other: &T) -> bool {
        &self.time == other
    }
}

/// The time of received records, from which capabilities can be retained.
pub struct InputCapability<T: Timestamp> {
    time: T,
    changes: CapabilityChanges<T>,
}

impl<T: Timestamp> InputCapability<T> {
    pub(crate) fn new(time: T, changes: CapabilityChanges<T>) -> Self {
        InputCapability { time, changes }
    }

    /// The records' time.
    #[inline]
    pub fn time(&self) -> &T {
        &self.time
    }

    /// A capability for the records' time.
    pub fn retain(&self) -> Capability<T> {
        Capability::new(self.time.clone(), self.changes.clone())
    }

    /// A capability for `time`, which must be greater or equal to the records' time.
    pub fn delayed(&self, time: &T) -> Capability<T> {
        delayed(&self.time, &self.changes, time).unwrap_or_else(|e| panic!("{}", e))
    }

    /// Like `delayed`, but returns an error instead of panicking.
    pub fn try_delayed(&self, time: &T) -> Result<Capability<T>, CapabilityError> {
        delayed(&self.time, &self.changes, time)
    }
}

impl<T: Timestamp> fmt::Debug for InputCapability<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "InputCapability({:?})", self.time)
    }
}

/// A set of capabilities whose times form an antichain: the least set that can still
/// produce at every time it was given.
pub struct CapabilitySet<T: Timestamp> {
    elements: Vec<Capability<T>>,
}

impl<T: Timestamp> Default for CapabilitySet<T> {
    fn default() -> Self {
        CapabilitySet { elements: Vec::new() }
    }
}

impl<T: Timestamp> CapabilitySet<T> {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// A set holding `capability`.
    pub fn from_elem(capability: Capability<T>) -> Self {
        CapabilitySet { elements: vec![capability] }
    }

    /// Adds `capability` unless the set already covers its time; drops capabilities it covers.
    pub fn insert(&mut self, capability: Capability<T>) {
        if !self.elements.iter().any(|c| c.time().less_equal(capability.time())) {
            self.elements.retain(|c| !capability.time().less_equal(c.time()));
            self.elements.push(capability);
        }
    }

    /// A capability for `time` from an element less or equal to it.
    pub fn delayed(&self, time: &T) -> Capability<T> {
        self.try_delayed(time).unwrap_or_else(|e| panic!("{}", e))
    }

    /// Like `delayed`, but returns an error when no element is less or equal to `time`.
    pub fn try_delayed(&self, time: &T) -> Result<Capability<T>, CapabilityError> {
        match self.elements.iter().find(|c| c.time().less_equal(time)) {
            Some(c) => c.try_delayed(time),
            None => Err(CapabilityError::NotInFuture {
                held: format!("{:?}", self.elements.iter().map(|c| c.time()).collect::<Vec<_>>()),
                requested: format!("{:?}", time),
            }),
        }
    }

    /// Replaces the set by capabilities for the times of `frontier`, each of which must be
    /// greater or equal to some element. An empty frontier drops every capability.
    pub fn downgrade(&mut self, frontier: &[T]) {
        let next: Vec<_> = Antichain::from_iter(frontier.iter().cloned())
            .elements()
            .iter()
            .map(|t| self.delayed(t))
            .collect();
        self.elements = next;
    }

    /// The capabilities.
    pub fn iter(&self) -> std::slice::Iter<'_, Capability<T>> {
        self.elements.iter()
    }

    /// True when the set holds nothing.
    pub fn is_empty(&self) -> bool {
        self.elements.is_empty()
    }
}

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
//!
//! The capabilities of an operator built to be released when its worker leaves the cluster
//! (every `source`; `OperatorBuilder::release_on_leave`) share a [`CapabilityLedger`] that
//! the leave marks released: from then on they count nothing, `is_released` says so, and
//! sending with them is refused (`CapabilityError::Released`; `docs/rescaling.md`, "A
//! leaver's sources").

use crate::progress::{Antichain, ChangeBatch, Timestamp};
use std::cell::{Cell, RefCell, RefMut};
use std::fmt;
use std::rc::Rc;

/// The capability changes of one operator, and whether its worker's leave released its
/// capabilities.
pub struct CapabilityLedger<T: Timestamp> {
    changes: RefCell<ChangeBatch<T>>,
    released: Cell<bool>,
}

impl<T: Timestamp> Default for CapabilityLedger<T> {
    fn default() -> Self {
        CapabilityLedger { changes: RefCell::new(ChangeBatch::new()), released: Cell::new(false) }
    }
}

impl<T: Timestamp> CapabilityLedger<T> {
    /// The changes not yet reported by the operator.
    #[inline]
    pub(crate) fn changes(&self) -> RefMut<'_, ChangeBatch<T>> {
        self.changes.borrow_mut()
    }

    /// Records that `delta` capabilities at `time` were made (or dropped, negative).
    #[inline]
    pub(crate) fn update(&self, time: T, delta: i64) {
        self.changes.borrow_mut().update(time, delta);
    }

    /// True once the worker's leave released the operator's capabilities.
    #[inline]
    pub fn is_released(&self) -> bool {
        self.released.get()
    }

    /// The worker is leaving: the operator's capabilities are released (its next report
    /// retires them; see `OperatorBuilder::release_on_leave`).
    pub(crate) fn release(&self) {
        self.released.set(true);
    }
}

/// The capability changes of one operator.
pub type CapabilityChanges<T> = Rc<CapabilityLedger<T>>;

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
    /// The capability was released because its worker is leaving the cluster (its operator
    /// is a source, or was built with `OperatorBuilder::release_on_leave`): records given
    /// with it are refused, neither sent nor counted. The operator should stop.
    Released,
}

impl fmt::Display for CapabilityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CapabilityError::NotInFuture { held, requested } => {
                write!(f, "a capability for time {} cannot produce one for earlier time {}", held, requested)
            }
            CapabilityError::WrongOperator => write!(f, "the capability belongs to another operator"),
            CapabilityError::Released => write!(
                f,
                "the capability was released because this worker is leaving the cluster: records \
                 given with it are refused, and the operator should stop"
            ),
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
        changes.update(time.clone(), 1);
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
        Capability { time, changes: Rc::default() }
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

    /// True once this worker's leave released the capabilities of its operator (a source, or
    /// an operator built with `OperatorBuilder::release_on_leave`): sending with it is
    /// refused (`OutputPort::try_session` returns [`CapabilityError::Released`]), and it and
    /// every capability made from it count nothing. The operator's logic should stop: drop
    /// its capabilities and ask for no more runs.
    #[inline]
    pub fn is_released(&self) -> bool {
        self.changes.is_released()
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
        self.changes.update(self.time.clone(), -1);
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

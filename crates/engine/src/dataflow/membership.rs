//! Which workers receive keyed records at each time, as every worker agrees on it.
//!
//! Workers join a running cluster and learn of the join at different moments, so routing by
//! "every worker known now" sends records of one time and key to different workers. A keyed
//! exchange (`operators::keyed`) routes a time by the `Membership` in force at that time
//! instead: the workers present when the operator was built, plus every worker whose join
//! some worker *announced* at a time less than or equal to it. A worker announces each join it
//! handles at the time of the capability its announcing operator holds then, and that
//! operator's capability never passes a time the keyed exchange may still route. So once the
//! announcements' frontier has passed a time, every announcement that can affect it has
//! arrived everywhere, and all workers compute the same members for it
//! (`docs/rescaling.md`, "Keyed routing across joins").
//!
//! This module owns the table and its reading by the exchange; the operators that announce
//! and wait are `operators::keyed`'s.

use super::exchange::Members;
use crate::progress::{Antichain, Timestamp};
use crate::worker::WorkerState;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::rc::Rc;

/// A change of membership, announced on a keyed exchange's control stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Change {
    /// The worker joined the cluster.
    Joined {
        /// Its index.
        worker: usize,
    },
    /// The worker's process is leaving the cluster.
    Left {
        /// Its index.
        worker: usize,
    },
}

/// The workers that receive keyed records, by time.
#[derive(Debug)]
pub struct Membership<T: Timestamp> {
    /// Workers `0..base` are members at every time.
    base: usize,
    /// For worker `base + i`, the times at which some worker announced its join.
    joined: Vec<Antichain<T>>,
    /// Per worker whose departure was announced, the times of the announcements.
    left: std::collections::BTreeMap<usize, Antichain<T>>,
    /// The members at the last time asked for, until the next announcement.
    cached: Option<(T, Vec<usize>)>,
}

impl<T: Timestamp> Membership<T> {
    /// Workers `0..base` are members at every time; others from their announced joins.
    pub fn new(base: usize) -> Self {
        Membership { base, joined: Vec::new(), left: Default::default(), cached: None }
    }

    /// The number of workers that are members at every time.
    pub fn base(&self) -> usize {
        self.base
    }

    /// Records `change`, announced at `time`.
    pub fn announce(&mut self, time: &T, change: Change) {
        let times = match change {
            Change::Joined { worker } if worker < self.base => return,
            Change::Joined { worker } => {
                let slot = worker - self.base;
                if self.joined.len() <= slot {
                    self.joined.resize_with(slot + 1, Antichain::new);
                }
                &mut self.joined[slot]
            }
            Change::Left { worker } => self.left.entry(worker).or_insert_with(Antichain::new),
        };
        if times.insert(time.clone()) {
            self.cached = None;
        }
    }

    /// True when `worker` is a member at no time at or after every time of `frontier`: its
    /// departure was announced at or before each of them (or the frontier is empty).
    pub fn gone_from(&self, worker: usize, frontier: &[T]) -> bool {
        frontier.is_empty()
            || self.left.get(&worker).is_some_and(|times| frontier.iter().all(|time| times.less_equal(time)))
    }

    /// The members at `time`, ascending.
    pub fn members_at(&mut self, time: &T) -> &[usize] {
        if self.cached.as_ref().is_none_or(|(cached, _)| cached != time) {
            let joined = self.joined.iter().enumerate().filter(|(_, times)| times.less_equal(time));
            let present = |worker: &usize| !self.left.get(worker).is_some_and(|times| times.less_equal(time));
            let members =
                (0..self.base).chain(joined.map(|(slot, _)| self.base + slot)).filter(present).collect();
            self.cached = Some((time.clone(), members));
        }
        &self.cached.as_ref().expect("just computed").1
    }

    /// The highest worker index that is a member at `time` (0 when none is).
    pub fn last_member_at(&mut self, time: &T) -> usize {
        self.members_at(time).last().copied().unwrap_or(0)
    }
}

/// A keyed exchange's membership, shared by the operator that keeps it and the edge that routes
/// by it (both on one worker's thread).
pub type SharedMembership<T> = Rc<RefCell<Membership<T>>>;

impl<T: Timestamp> Members<T> for SharedMembership<T> {
    fn update(&mut self, time: &T, worker: &WorkerState, members: &mut Vec<usize>) {
        let mut membership = self.borrow_mut();
        let current = membership.members_at(time);
        assert!(
            current.last().is_some_and(|&last| last < worker.peers()),
            "a keyed exchange routed a time whose members this worker does not know yet"
        );
        if members[..] != *current {
            members.clear();
            members.extend_from_slice(current);
        }
    }
}

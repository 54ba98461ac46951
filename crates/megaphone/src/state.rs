//! The keyed state that operators F and S share on one worker.
//!
//! Megaphone co-locates F (the router) and S (the user logic) on every worker. S owns the
//! state of the bins the worker owns, with each bin's pending per-key notifications and the
//! capabilities that keep them alive; F reaches into the same [`Shared`] (through an
//! `Rc<RefCell<_>>`; both run on the worker's thread, never at once) to extract a bin that
//! moves away. S publishes in `done` how far it has got: every record before that time is
//! applied and every notification before it delivered, so F extracts a bin moving at time
//! `t` only once `done >= t`. Each wakes the other through its activator when it changed
//! something the other waits for.
//!
//! The states of all keys the worker holds live in one table keyed by the key and its stable
//! hash ([`Hashed`]: the hash that chose the key's bin, reused by the table), and each bin
//! keeps the set of its keys that have state, which extraction walks. A record costs one
//! probe of one table, not a lookup of its bin's table followed by a probe of that table.
//!
//! This module owns that data and the bookkeeping that keeps it consistent (which bins this
//! worker holds, notifications indexed by time with one capability per time); it decides
//! neither when a bin moves (F) nor when records or notifications are processed (S).

use crate::bins::{Bins, CarriedHash, Hashed};
use crate::codec::BinState;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::Hash;
use timely_engine::dataflow::operators::Capability;
use timely_engine::scheduling::Activator;

/// Keys with their stable hash, which the table reuses.
pub type KeySet<K> = HashSet<Hashed<K>, CarriedHash>;

/// What one bin holds besides its keys' states (which live in the worker's one table): the
/// keys that have state, and per-key notification requests by time.
struct Bin<K> {
    keys: KeySet<K>,
    notifications: BTreeMap<u64, KeySet<K>>,
}

impl<K> Default for Bin<K> {
    fn default() -> Self {
        Bin { keys: KeySet::default(), notifications: BTreeMap::new() }
    }
}

/// The bins with notifications at one time, and the capability to deliver them.
struct Due {
    capability: Capability<u64>,
    bins: BTreeSet<usize>,
}

/// The notifications at one time: the capability for it, and the keys of each bin.
pub type DueKeys<K> = (Capability<u64>, Vec<(usize, KeySet<K>)>);

/// The state shared by F and S on one worker.
pub struct Shared<K, S> {
    bins: Bins,
    worker: usize,
    /// The state of every key of every bin held here: one table rather than one per bin.
    entries: HashMap<Hashed<K>, S, CarriedHash>,
    contents: Vec<Bin<K>>,
    owned: Vec<bool>,
    due: BTreeMap<u64, Due>,
    /// S's progress: records before it are applied, notifications before it delivered
    /// (`None`: S will never see another record).
    done: Option<u64>,
    router: Option<Activator>,
    stateful: Option<Activator>,
}

impl<K: Hash + Eq + Clone, S: Default> Shared<K, S> {
    /// Worker `worker`'s share, owning the bins for which `owned` is true, with empty state.
    pub fn new(bins: Bins, worker: usize, owned: Vec<bool>) -> Self {
        Shared {
            bins,
            worker,
            entries: HashMap::default(),
            contents: (0..bins.count()).map(|_| Bin::default()).collect(),
            owned,
            due: BTreeMap::new(),
            done: Some(0),
            router: None,
            stateful: None,
        }
    }

    /// Replaces which bins this worker owns, before it has held any state: the operator was
    /// built counting a worker that took no part (`departures::Leave::absent`).
    ///
    /// # Panics
    ///
    /// If any key has state or a notification: records were applied under the old table.
    pub fn reset_owned(&mut self, owned: Vec<bool>) {
        assert!(
            self.entries.is_empty() && self.due.is_empty(),
            "megaphone: a table reset after records were applied"
        );
        self.owned = owned;
    }

    /// Registers F's and S's activators.
    pub fn set_activators(&mut self, router: Activator, stateful: Activator) {
        self.router = Some(router);
        self.stateful = Some(stateful);
    }

    /// The bin count.
    pub fn bins(&self) -> Bins {
        self.bins
    }

    /// True when S has applied every record and delivered every notification before `time`.
    pub fn done_before(&self, time: u64) -> bool {
        self.done.is_none_or(|done| done >= time)
    }

    /// Records S's progress (see [`Shared::done_before`]) and wakes F when it advanced.
    pub fn set_done(&mut self, done: Option<u64>) {
        if done != self.done {
            self.done = done;
            if let Some(router) = &self.router {
                router.activate();
            }
        }
    }

    /// The state of `key` in `bin`, created empty when missing. Panics if this worker does
    /// not own the bin: a record routed to the wrong worker would be processed against state
    /// that is not the key's.
    pub fn state(&mut self, bin: usize, key: &Hashed<K>) -> &mut S {
        self.check_owned(bin);
        if !self.entries.contains_key(key) {
            self.entries.insert(key.clone(), S::default());
            self.contents[bin].keys.insert(key.clone());
        }
        self.entries.get_mut(key).expect("inserted")
    }

    /// Drops the state of `key` in `bin`.
    pub fn discard(&mut self, bin: usize, key: &Hashed<K>) {
        if self.entries.remove(key).is_some() {
            self.contents[bin].keys.remove(key);
        }
    }

    /// True when this worker holds `bin`.
    pub fn owns(&self, bin: usize) -> bool {
        self.owned[bin]
    }

    fn check_owned(&self, bin: usize) {
        assert!(
            self.owned[bin],
            "megaphone: worker {} holds a record of bin {bin}, which it does not own",
            self.worker
        );
    }

    /// Asks for a notification of `key` (in `bin`) at `time`; `capability` makes the
    /// capability for `time` when no other notification holds one.
    pub fn request(
        &mut self,
        bin: usize,
        time: u64,
        key: Hashed<K>,
        capability: impl FnOnce(u64) -> Capability<u64>,
    ) {
        self.check_owned(bin);
        self.contents[bin].notifications.entry(time).or_default().insert(key);
        self.due
            .entry(time)
            .or_insert_with(|| Due { capability: capability(time), bins: BTreeSet::new() })
            .bins
            .insert(bin);
    }

    /// The earliest time with a pending notification.
    pub fn next_due(&self) -> Option<u64> {
        self.due.keys().next().copied()
    }

    /// Removes the notifications at `time`: the capability for it and the keys of each bin.
    pub fn take_due(&mut self, time: u64) -> Option<DueKeys<K>> {
        let due = self.due.remove(&time)?;
        let keys = due
            .bins
            .into_iter()
            .filter_map(|bin| self.contents[bin].notifications.remove(&time).map(|keys| (bin, keys)))
            .collect();
        Some((due.capability, keys))
    }

    /// Removes bin `bin` (state and pending notifications) for shipping to `target`; wakes S,
    /// whose capabilities for notifications that moved away are released.
    pub fn extract(&mut self, bin: usize, target: usize) -> BinState<K, S> {
        self.check_owned(bin);
        self.owned[bin] = false;
        let Bin { keys, notifications } = std::mem::take(&mut self.contents[bin]);
        let (mut notify_times, mut notify_keys) = (Vec::new(), Vec::new());
        for (time, keys) in notifications {
            if let Some(due) = self.due.get_mut(&time) {
                due.bins.remove(&bin);
                if due.bins.is_empty() {
                    self.due.remove(&time);
                }
            }
            notify_times.extend(std::iter::repeat_n(time, keys.len()));
            notify_keys.extend(keys.into_iter().map(Hashed::into_key));
        }
        if let Some(stateful) = &self.stateful {
            stateful.activate();
        }
        let states = keys.iter().map(|key| self.entries.remove(key).expect("a key of the bin")).collect();
        let keys = keys.into_iter().map(Hashed::into_key).collect();
        BinState { target, bin, keys, states, notify_times, notify_keys }
    }

    /// Installs a bin that arrived from its previous owner; `capability` makes capabilities
    /// for its notifications' times. Panics if the bin is already here (a routing error).
    pub fn install(&mut self, state: BinState<K, S>, mut capability: impl FnMut(u64) -> Capability<u64>) {
        let BinState { bin, keys, states, notify_times, notify_keys, .. } = state;
        assert!(
            !self.owned[bin],
            "megaphone: bin {bin} arrived at worker {}, which already owns it",
            self.worker
        );
        self.owned[bin] = true;
        for (key, state) in keys.into_iter().zip(states) {
            let key = Hashed::new(key);
            self.contents[bin].keys.insert(key.clone());
            self.entries.insert(key, state);
        }
        for (time, key) in notify_times.into_iter().zip(notify_keys) {
            self.request(bin, time, Hashed::new(key), &mut capability);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::bins::{Bins, Hashed};
    use crate::state::Shared;

    #[test]
    fn extraction_takes_exactly_the_bins_keys_that_have_state() {
        let bins = Bins::new(4).unwrap();
        let mut shared: Shared<u64, u64> = Shared::new(bins, 0, vec![true; 4]);
        for key in 0..100u64 {
            let key = Hashed::new(key);
            *shared.state(bins.of_hashed(&key), &key) += key.key() + 1;
        }
        let discarded: Vec<u64> = (0..100).filter(|key| key % 3 == 0).collect();
        for &key in &discarded {
            let key = Hashed::new(key);
            shared.discard(bins.of_hashed(&key), &key);
        }
        let mut receiver: Shared<u64, u64> = Shared::new(bins, 1, vec![false; 4]);
        for bin in 0..4 {
            let state = shared.extract(bin, 1);
            let mut pairs: Vec<(u64, u64)> =
                state.keys.iter().copied().zip(state.states.iter().copied()).collect();
            pairs.sort();
            let expected: Vec<(u64, u64)> =
                (0..100).filter(|k| bins.of(k) == bin && k % 3 != 0).map(|k| (k, k + 1)).collect();
            assert_eq!(pairs, expected, "bin {bin}");
            assert!(!shared.owns(bin));
            receiver.install(state, |_| unreachable!("no notifications"));
        }
        // The receiver finds every state, and a discarded key starts afresh.
        for key in 0..100u64 {
            let key = Hashed::new(key);
            let expected = if key.key() % 3 == 0 { 0 } else { key.key() + 1 };
            assert_eq!(*receiver.state(bins.of_hashed(&key), &key), expected);
        }
    }
}

//! Keyed exchange: records of one key and time meet on one worker, whatever workers join.
//!
//! `settle` builds two operators on every worker. *Membership* announces, on a broadcast
//! stream, each join its worker handles, at the time of the capability it holds; it keeps
//! that capability at the frontier of Settle's data input, so it never passes a time that
//! Settle may still release. *Settle* holds the records of each time until the
//! announcements' frontier has passed that time (so the `Membership` table in force there is
//! the same on every worker) and this worker knows every member at that time; then it releases
//! them into an edge that routes by that table (`keyed_pact`). Records wait for their time to
//! be complete upstream on every worker, a progress round or two: the price of exact keyed
//! results across joins. Where workers cannot join (one process), `settle` passes the stream
//! through and the table never changes.
//!
//! This module owns the two operators; the table is `membership`'s, the edge `exchange`'s.

use super::{CapabilitySet, OperatorBuilder};
use crate::dataflow::channels::{Data, ExchangeData, Pipeline};
use crate::dataflow::exchange::{ByHash, ExchangeWith, NotGone, Partition};
use crate::dataflow::membership::{Change, Membership, SharedMembership};
use crate::dataflow::{Scope, Stream};
use crate::progress::{Antichain, Timestamp};
use crate::rescale::leave::KeyedRoutes;
use std::cell::RefCell;
use std::rc::Rc;

/// The edge that routes a settled stream with `partition` over the members at each time.
pub fn keyed_pact<T: Timestamp, P>(
    membership: &SharedMembership<T>,
    partition: P,
) -> ExchangeWith<SharedMembership<T>, P> {
    ExchangeWith::new(membership.clone(), partition)
}

impl<T: Timestamp, D: Data> Stream<T, D> {
    /// This stream's records, each released once every worker agrees on the members at its
    /// time, and the table of members to route them by (with [`keyed_pact`]).
    pub fn settle(&self, name: &str) -> (Stream<T, D>, SharedMembership<T>) {
        let scope = self.scope();
        let peers = scope.peers();
        let mut table = Membership::new(peers);
        // Workers that left, or are leaving, receive nothing from a keyed exchange built now.
        let leaves = scope.worker().rescaling().leaves();
        for worker in leaves.departed().into_iter().chain(leaves.leaving()) {
            table.announce(&T::minimum(), Change::Left { worker });
        }
        let membership = Rc::new(RefCell::new(table));
        if !scope.worker().allocator().can_rescale() {
            return (self.clone(), membership);
        }
        let frontier = Rc::new(RefCell::new(Antichain::from_elem(T::minimum())));
        let (changes, announcer) = announce(&format!("{name}.Membership"), scope, frontier.clone());
        // Leavers hear of every change until they go: they seal others by it. Those leaving
        // already may never build this dataflow, and need none of it if they do (they route
        // nothing through it): they hear nothing.
        let changes = changes.broadcast_to(NotGone::excluding(leaves.leaving()));
        let mut builder = OperatorBuilder::new(&format!("{name}.Settle"), scope);
        let mut data_in = builder.new_input(self, Pipeline);
        let mut changes_in = builder.new_input_connection(&changes, Pipeline, Vec::new());
        let (mut output, settled) =
            builder.new_output_connection(vec![Antichain::from_elem(Default::default()), Antichain::new()]);
        let worker = scope.worker().clone();
        let activator = Rc::new(builder.info().activator.clone());
        worker.rescaling().wake_on_join(&activator);
        let routes = Rc::new(Routes {
            membership: membership.clone(),
            frontier: RefCell::new(Antichain::from_elem(T::minimum())),
        });
        let weak: std::rc::Weak<dyn KeyedRoutes> = Rc::downgrade(&routes) as _;
        worker.rescaling().leaves().register_routes(weak);
        let table = membership.clone();
        let mut stash: Vec<(super::Capability<T>, Vec<D>)> = Vec::new();
        builder.build_logic(move |frontiers| {
            // The engine holds only weak references: this closure keeps them alive.
            let _wake_on_join = (&activator, &routes);
            let (data_frontier, changes_frontier) = (&frontiers[0], &frontiers[1]);
            changes_in.for_each(|time, changes| {
                let mut table = table.borrow_mut();
                changes.drain(..).for_each(|change| table.announce(time.time(), change));
            });
            data_in.for_each(|time, data| {
                match stash.iter_mut().find(|(held, _)| held.time() == time.time()) {
                    Some((_, held)) => held.append(data),
                    None => stash.push((time.retain(), std::mem::take(data))),
                }
            });
            let peers = worker.peers();
            let settled = |time: &T| {
                !changes_frontier.less_equal(time) && table.borrow_mut().last_member_at(time) < peers
            };
            // The edge reads the table while records are given: no borrow is held then.
            let mut i = 0;
            while i < stash.len() {
                if settled(stash[i].0.time()) {
                    let (capability, mut data) = stash.swap_remove(i);
                    output.session(&capability).give_vec(&mut data);
                } else {
                    i += 1;
                }
            }
            routes.frontier.replace(changes_frontier.to_antichain());
            let mut shared = frontier.borrow_mut();
            if shared.elements() != data_frontier.frontier() {
                *shared = data_frontier.to_antichain();
                announcer.activate();
            }
            false
        });
        (settled, membership)
    }

    /// Sends every record to a worker chosen by `hash(record)` among the members at its time,
    /// so that records with equal hashes and times meet on one worker even while workers join.
    pub fn keyed_exchange<F: Fn(&D) -> u64 + 'static>(&self, hash: F) -> Stream<T, D>
    where
        D: ExchangeData,
    {
        self.keyed_exchange_with("KeyedExchange", ByHash(hash))
    }

    /// Like [`Stream::keyed_exchange`], choosing workers with `partition`.
    pub fn keyed_exchange_with<P: Partition<D>>(&self, name: &str, partition: P) -> Stream<T, D>
    where
        D: ExchangeData,
    {
        let (settled, membership) = self.settle(name);
        settled.unary(keyed_pact(&membership, partition), name, |_, _| {
            |input, output| input.for_each(|time, data| output.session(&time).give_vec(data))
        })
    }
}

/// Builds the Membership operator: announces joins at the times of its capabilities, which
/// follow `frontier` (Settle's data input frontier). Returns its output and its activator.
fn announce<T: Timestamp>(
    name: &str,
    scope: &Scope<T>,
    frontier: Rc<RefCell<Antichain<T>>>,
) -> (Stream<T, Change>, Rc<crate::scheduling::Activator>) {
    let mut builder = OperatorBuilder::new(name, scope);
    let (mut output, changes) = builder.new_output();
    let worker = scope.worker().clone();
    let activator = Rc::new(builder.info().activator.clone());
    worker.rescaling().wake_on_join(&activator);
    worker.rescaling().leaves().wake_on_change(&activator);
    let returned = activator.clone();
    builder.build(move |capability| {
        let mut capabilities = CapabilitySet::new();
        if !capability.is_detached() {
            capabilities.insert(capability);
        }
        let mut known = worker.peers();
        let mut left = std::collections::BTreeSet::new();
        move |_frontiers| {
            let _wake_on_join = &activator;
            let peers = worker.peers();
            let leaving: Vec<usize> =
                worker.rescaling().leaves().leaving().into_iter().filter(|w| !left.contains(w)).collect();
            if peers > known || !leaving.is_empty() {
                for capability in capabilities.iter() {
                    let mut session = output.session(capability);
                    session.give_iterator((known..peers).map(|worker| Change::Joined { worker }));
                    session.give_iterator(leaving.iter().map(|&worker| Change::Left { worker }));
                }
                known = peers;
                left.extend(leaving);
            }
            if worker.rescaling().leaves().is_leaving() {
                // A leaver announced its own departure: it holds nothing back any more.
                capabilities.downgrade(&[]);
                return false;
            }
            let frontier = frontier.borrow();
            // Hold a capability at each time of the frontier that one we hold covers. A joined
            // worker may start with fewer capabilities than its frontier has times (the
            // bootstrap hands over one): it can announce at the times it covers only.
            let covered: Vec<T> = frontier
                .elements()
                .iter()
                .filter(|time| capabilities.iter().any(|c| c.time().less_equal(time)))
                .cloned()
                .collect();
            if frontier.is_empty() || !covered.is_empty() {
                capabilities.downgrade(&covered);
            }
            false
        }
    });
    (changes, returned)
}

/// What a Settle operator tells its worker about leavers: it may still release records to a
/// worker until, from every time of its announcements' frontier on, that worker's departure
/// is announced (records it still holds are at those times or later).
struct Routes<T: Timestamp> {
    membership: SharedMembership<T>,
    frontier: RefCell<Antichain<T>>,
}

impl<T: Timestamp> KeyedRoutes for Routes<T> {
    fn may_route_to(&self, worker: usize) -> bool {
        !self.membership.borrow().gone_from(worker, self.frontier.borrow().elements())
    }
}

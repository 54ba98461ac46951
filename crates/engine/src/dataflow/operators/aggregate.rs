//! Keyed aggregation per time: `aggregate` and `count_by_key`.
//!
//! Records go through a keyed exchange by the stable hash of their key (`hashing::hash_of`),
//! so that each key and time is aggregated on one worker even while workers join; each
//! time's aggregates are emitted once the time is complete.

use super::hashing::hash_of;
use super::keyed::keyed_pact;
use crate::dataflow::channels::{Data, ExchangeData};
use crate::dataflow::exchange::ByHash;
use crate::dataflow::Stream;
use crate::progress::Timestamp;
use std::collections::HashMap;
use std::hash::Hash;

impl<T: Timestamp, K: Data + Send + Hash + Eq, V: Data + Send> Stream<T, (K, V)>
where
    (K, V): ExchangeData,
{
    /// Folds the values of each key per time with `fold(key, value, aggregate)`, starting
    /// from `A::default()`, and emits `emit(key, aggregate)` once the time is complete.
    pub fn aggregate<A, R, F, E>(&self, mut fold: F, mut emit: E) -> Stream<T, R>
    where
        A: Default + 'static,
        R: Data,
        F: FnMut(&K, V, &mut A) + 'static,
        E: FnMut(K, A) -> R + 'static,
    {
        let mut state: HashMap<T, HashMap<K, A>> = HashMap::new();
        let (settled, membership) = self.settle("Aggregate");
        let route = keyed_pact(&membership, ByHash(|(key, _): &(K, V)| hash_of(key)));
        settled.unary_notify(route, "Aggregate", move |input, output, notificator| {
            input.for_each(|time, data| {
                let aggregates = state.entry(time.time().clone()).or_insert_with(|| {
                    notificator.notify_at(time.retain());
                    HashMap::new()
                });
                for (key, value) in data.drain(..) {
                    match aggregates.get_mut(&key) {
                        Some(aggregate) => fold(&key, value, aggregate),
                        None => {
                            let mut aggregate = A::default();
                            fold(&key, value, &mut aggregate);
                            aggregates.insert(key, aggregate);
                        }
                    }
                }
            });
            notificator.for_each(|capability, _count, _notificator| {
                if let Some(aggregates) = state.remove(capability.time()) {
                    let mut session = output.session(&capability);
                    for (key, aggregate) in aggregates {
                        session.give(emit(key, aggregate));
                    }
                }
            });
        })
    }
}

impl<T: Timestamp, K: Data + Send + Hash + Eq> Stream<T, K>
where
    (K, ()): ExchangeData,
{
    /// Counts the records equal to each key per time; emits `(key, count)` once the time
    /// is complete.
    pub fn count_by_key(&self) -> Stream<T, (K, u64)> {
        self.map(|key| (key, ()))
            .aggregate(|_key, (), count: &mut u64| *count += 1, |key, count| (key, count))
    }
}

//! Record-at-a-time operators: map, map_in_place, flat_map, filter, inspect, exchange,
//! broadcast, concat, partition, branch, branch_when, delay.

use super::builder::OperatorBuilder;
use crate::dataflow::channels::{Data, ExchangeData, Pipeline};
use crate::dataflow::exchange::{AllWorkers, Exchange, ExchangeWith, Members, Partition};
use crate::dataflow::{Scope, Stream};
use crate::progress::Timestamp;
use std::collections::BTreeMap;

impl<T: Timestamp, D: Data> Stream<T, D> {
    /// Applies `logic` to every record.
    pub fn map<D2: Data, L: FnMut(D) -> D2 + 'static>(&self, mut logic: L) -> Stream<T, D2> {
        self.unary(Pipeline, "Map", move |_, _| {
            move |input, output| {
                input.for_each(|time, data| {
                    output.session(&time).give_iterator(data.drain(..).map(&mut logic))
                });
            }
        })
    }

    /// Changes every record in place: each batch moves on whole, in the buffer it came in.
    pub fn map_in_place<L: FnMut(&mut D) + 'static>(&self, mut logic: L) -> Stream<T, D> {
        self.unary(Pipeline, "MapInPlace", move |_, _| {
            move |input, output| {
                input.for_each(|time, data| {
                    data.iter_mut().for_each(&mut logic);
                    output.session(&time).give_vec(data);
                });
            }
        })
    }

    /// Replaces every record by the records `logic` returns for it.
    pub fn flat_map<D2: Data, I: IntoIterator<Item = D2>, L: FnMut(D) -> I + 'static>(
        &self,
        mut logic: L,
    ) -> Stream<T, D2> {
        self.unary(Pipeline, "FlatMap", move |_, _| {
            move |input, output| {
                input.for_each(|time, data| {
                    output.session(&time).give_iterator(data.drain(..).flat_map(&mut logic))
                });
            }
        })
    }

    /// Keeps the records for which `predicate` is true.
    pub fn filter<L: FnMut(&D) -> bool + 'static>(&self, mut predicate: L) -> Stream<T, D> {
        self.unary(Pipeline, "Filter", move |_, _| {
            move |input, output| {
                input.for_each(|time, data| {
                    data.retain(&mut predicate);
                    if !data.is_empty() {
                        output.session(&time).give_vec(data);
                    }
                });
            }
        })
    }

    /// Calls `logic` on every record and passes it on.
    pub fn inspect<L: FnMut(&D) + 'static>(&self, mut logic: L) -> Stream<T, D> {
        self.inspect_batch(move |_time, data| data.iter().for_each(&mut logic))
    }

    /// Calls `logic` on every record with its time and passes it on.
    pub fn inspect_time<L: FnMut(&T, &D) + 'static>(&self, mut logic: L) -> Stream<T, D> {
        self.inspect_batch(move |time, data| data.iter().for_each(|d| logic(time, d)))
    }

    /// Calls `logic` on every batch of records with their time and passes them on.
    pub fn inspect_batch<L: FnMut(&T, &[D]) + 'static>(&self, mut logic: L) -> Stream<T, D> {
        self.unary(Pipeline, "Inspect", move |_, _| {
            move |input, output| {
                input.for_each(|time, data| {
                    logic(time.time(), &data[..]);
                    output.session(&time).give_vec(data);
                });
            }
        })
    }

    /// Sends every record to worker `hash(record) % peers`.
    pub fn exchange<F: Fn(&D) -> u64 + 'static>(&self, hash: F) -> Stream<T, D>
    where
        D: ExchangeData,
    {
        self.unary(Exchange::new(hash), "Exchange", |_, _| {
            |input, output| input.for_each(|time, data| output.session(&time).give_vec(data))
        })
    }

    /// Sends a copy of every record to every worker.
    pub fn broadcast(&self) -> Stream<T, D>
    where
        D: ExchangeData,
    {
        self.broadcast_to(AllWorkers::default())
    }

    /// Sends a copy of every record to every worker of `members` (read when records are sent).
    pub fn broadcast_to<M: Members<T> + Clone>(&self, members: M) -> Stream<T, D>
    where
        D: ExchangeData,
    {
        // Each record becomes one copy per worker present, and the exchange sends the k-th
        // copy of every record to the k-th worker present (its routing cycles through them,
        // record after record). Counting copies as records keeps progress tracking exact. The
        // workers present are read when records are copied and routed (both happen while the
        // copying operator runs, between two steps, so they agree): workers that join a
        // running cluster receive the broadcasts sent after they joined, leaving ones do not.
        let worker = self.scope().worker().clone();
        let mut present = members.clone();
        let mut members_now = Vec::new();
        let copies = move |d| {
            present.update(&T::minimum(), &worker, &mut members_now);
            std::iter::repeat_n(d, members_now.len())
        };
        let mut next = 0;
        let cycle = move |data: &mut Vec<D>, members: &[usize], targets: &mut [Vec<D>]| {
            for datum in data.drain(..) {
                targets[members[next % members.len()]].push(datum);
                next = (next + 1) % members.len();
            }
        };
        let pact = ExchangeWith::new(members, Cycle(cycle));
        self.flat_map(copies).unary(pact, "Broadcast", |_, _| {
            |input, output| input.for_each(|time, data| output.session(&time).give_vec(data))
        })
    }

    /// Merges `other` into this stream.
    pub fn concat(&self, other: &Stream<T, D>) -> Stream<T, D> {
        self.scope().concatenate(vec![self.clone(), other.clone()])
    }

    /// Splits the stream into `parts` streams: `route` returns each record's part (which
    /// must be less than `parts`) and what to send there.
    pub fn partition<D2: Data, L: FnMut(D) -> (u64, D2) + 'static>(
        &self,
        parts: u64,
        mut route: L,
    ) -> Vec<Stream<T, D2>> {
        let mut builder = OperatorBuilder::new("Partition", self.scope());
        builder.set_notify(false);
        let mut input = builder.new_input(self, Pipeline);
        let (mut outputs, streams): (Vec<_>, Vec<_>) = (0..parts).map(|_| builder.new_output()).unzip();
        builder.build_logic(move |_frontiers| {
            input.for_each(|time, data| {
                for datum in data.drain(..) {
                    let (part, datum) = route(datum);
                    match outputs.get_mut(part as usize) {
                        Some(output) => output.session(&time).give(datum),
                        None => panic!("partition: record routed to part {} of {}", part, parts),
                    }
                }
            });
            false
        });
        streams
    }

    /// Splits the stream in two: records for which `predicate` is false, then true.
    pub fn branch<L: FnMut(&T, &D) -> bool + 'static>(
        &self,
        mut predicate: L,
    ) -> (Stream<T, D>, Stream<T, D>) {
        let mut builder = OperatorBuilder::new("Branch", self.scope());
        builder.set_notify(false);
        let mut input = builder.new_input(self, Pipeline);
        let (mut output_false, stream_false) = builder.new_output();
        let (mut output_true, stream_true) = builder.new_output();
        builder.build_logic(move |_frontiers| {
            input.for_each(|time, data| {
                let mut yes = output_true.session(&time);
                let mut no = output_false.session(&time);
                for datum in data.drain(..) {
                    if predicate(time.time(), &datum) {
                        yes.give(datum);
                    } else {
                        no.give(datum);
                    }
                }
            });
            false
        });
        (stream_false, stream_true)
    }

    /// Splits the stream in two by time: whole batches at times for which `condition` is
    /// false go to the first stream, those at times for which it is true to the second.
    pub fn branch_when<L: FnMut(&T) -> bool + 'static>(
        &self,
        mut condition: L,
    ) -> (Stream<T, D>, Stream<T, D>) {
        let mut builder = OperatorBuilder::new("BranchWhen", self.scope());
        builder.set_notify(false);
        let mut input = builder.new_input(self, Pipeline);
        let (mut output_false, stream_false) = builder.new_output();
        let (mut output_true, stream_true) = builder.new_output();
        builder.build_logic(move |_frontiers| {
            input.for_each(|time, data| {
                let output = if condition(time.time()) { &mut output_true } else { &mut output_false };
                output.session(&time).give_vec(data);
            });
            false
        });
        (stream_false, stream_true)
    }

    /// Moves every record to the later time `logic(record, time)` returns (it must be
    /// greater or equal to the record's time), releasing it once that time is complete.
    pub fn delay<L: FnMut(&D, &T) -> T + 'static>(&self, mut logic: L) -> Stream<T, D> {
        let mut stash: BTreeMap<T, Vec<D>> = BTreeMap::new();
        self.unary_notify(Pipeline, "Delay", move |input, output, notificator| {
            input.for_each(|time, data| {
                for datum in data.drain(..) {
                    let new_time = logic(&datum, time.time());
                    assert!(
                        time.time().less_equal(&new_time),
                        "delay: new time {:?} is earlier than the record's time {:?}",
                        new_time,
                        time.time()
                    );
                    let records = stash.entry(new_time.clone()).or_default();
                    if records.is_empty() {
                        notificator.notify_at(time.delayed(&new_time));
                    }
                    records.push(datum);
                }
            });
            notificator.for_each(|capability, _count, _notificator| {
                if let Some(mut records) = stash.remove(capability.time()) {
                    output.session(&capability).give_vec(&mut records);
                }
            });
        })
    }
}

impl<T: Timestamp> Scope<T> {
    /// Merges several streams of this scope into one.
    pub fn concatenate<D: Data>(&self, streams: Vec<Stream<T, D>>) -> Stream<T, D> {
        let mut builder = OperatorBuilder::new("Concatenate", self);
        builder.set_notify(false);
        let mut inputs: Vec<_> = streams.iter().map(|s| builder.new_input(s, Pipeline)).collect();
        let (mut output, stream) = builder.new_output();
        builder.build_logic(move |_frontiers| {
            for input in inputs.iter_mut() {
                input.for_each(|time, data| output.session(&time).give_vec(data));
            }
            false
        });
        stream
    }
}

/// A partition by a closure over whole batches (broadcast's cycle through the workers).
struct Cycle<F>(F);

impl<D: 'static, F: FnMut(&mut Vec<D>, &[usize], &mut [Vec<D>]) + 'static> Partition<D> for Cycle<F> {
    /// Every stayer received its own copy: a leaver's copies are retired, not delivered.
    const STRANDED: crate::dataflow::Stranded = crate::dataflow::Stranded::Retire;

    fn partition(&mut self, data: &mut Vec<D>, members: &[usize], targets: &mut [Vec<D>]) {
        (self.0)(data, members, targets)
    }
}

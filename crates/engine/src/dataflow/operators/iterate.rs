//! Crossing scopes and closing loops: `enter`, `leave`, `feedback`, `connect_loop`.
//!
//! `enter` brings a stream of a scope into one of its nested scopes (times become
//! `Refines::to_inner`), `leave` takes a stream of a nested scope to its parent
//! (`to_outer`); `enter_nested` and `leave_nested` do the same for a scope made with
//! `Scope::new_nested`, through its `Nesting`. Records entering a scope are counted for progress tracking; records
//! leaving are accounted for by the nested scope's own progress reports. A loop is made of
//! a `feedback` operator, whose output is available at once and whose input is connected
//! later with `connect_loop`; its summary must strictly advance timestamps.

use super::builder::OperatorBuilder;
use super::output::OutputPort;
use crate::dataflow::channels::{Data, Message, Pipeline, Tee};
use crate::dataflow::{Scope, Stream};
use crate::progress::{
    Antichain, ByRefines, ChangeBatch, Nesting, PathSummary, Refines, Source, Target, Timestamp,
};
use crate::scheduling::Activator;
use std::cell::RefCell;
use std::rc::Rc;
use timely_communication::Push;

struct Ingress<TInner: Timestamp, D, N> {
    tee: Tee<TInner, D>,
    counts: Rc<RefCell<ChangeBatch<TInner>>>,
    activator: Activator,
    nesting: N,
}

impl<TOuter: Timestamp, TInner: Timestamp, D: Data, N: Nesting<TOuter, TInner>> Push<Message<TOuter, D>>
    for Ingress<TInner, D, N>
{
    fn push(&mut self, element: &mut Option<Message<TOuter, D>>) {
        match element.take() {
            Some(message) => {
                let time = self.nesting.to_inner(message.time);
                self.counts.borrow_mut().update(time.clone(), message.data.len() as i64);
                self.tee.send(Message { time, data: message.data, from: message.from, seq: message.seq });
                self.activator.activate();
            }
            None => self.tee.done(),
        }
    }
}

struct Egress<TOuter, D, N> {
    tee: Tee<TOuter, D>,
    nesting: N,
}

impl<TOuter: Timestamp, TInner: Timestamp, D: Data, N: Nesting<TOuter, TInner>> Push<Message<TInner, D>>
    for Egress<TOuter, D, N>
{
    fn push(&mut self, element: &mut Option<Message<TInner, D>>) {
        match element.take() {
            Some(message) => {
                let time = self.nesting.to_outer(message.time);
                self.tee.send(Message { time, data: message.data, from: message.from, seq: message.seq });
            }
            None => self.tee.done(),
        }
    }
}

impl<T: Timestamp, D: Data> Stream<T, D> {
    /// Brings the stream into `inner`, a scope nested directly in this stream's scope.
    pub fn enter<TInner: Timestamp + Refines<T>>(&self, inner: &Scope<TInner>) -> Stream<TInner, D> {
        self.enter_nested(inner, ByRefines)
    }

    /// Brings the stream into `inner`, made by `Scope::new_nested` with `nesting`.
    pub fn enter_nested<TInner: Timestamp, N: Nesting<T, TInner>>(
        &self,
        inner: &Scope<TInner>,
        nesting: N,
    ) -> Stream<TInner, D> {
        assert!(
            self.scope().is_parent_of(inner),
            "enter: scope {:?} is not nested directly in the stream's scope {:?}",
            inner.address(),
            self.scope().address()
        );
        let counts = Rc::new(RefCell::new(ChangeBatch::new()));
        let input = inner.new_scope_input(counts.clone());
        let tee = Tee::default();
        self.tee().add_pusher(Box::new(Ingress {
            tee: tee.clone(),
            counts,
            activator: inner.activator().clone(),
            nesting,
        }));
        self.scope().add_edge(self.source(), Target::new(inner.index_in_parent(), input));
        Stream::new(Source::new(0, input), inner.clone(), tee)
    }

    /// Takes the stream out of its scope into `outer`, the scope it is nested in.
    pub fn leave<TOuter: Timestamp>(&self, outer: &Scope<TOuter>) -> Stream<TOuter, D>
    where
        T: Refines<TOuter>,
    {
        self.leave_nested(outer, ByRefines)
    }

    /// Takes the stream out of its scope, made by `Scope::new_nested` with `nesting`, into
    /// `outer`.
    pub fn leave_nested<TOuter: Timestamp, N: Nesting<TOuter, T>>(
        &self,
        outer: &Scope<TOuter>,
        nesting: N,
    ) -> Stream<TOuter, D> {
        assert!(
            outer.is_parent_of(self.scope()),
            "leave: scope {:?} is not the parent of the stream's scope {:?}",
            outer.address(),
            self.scope().address()
        );
        let output = self.scope().new_scope_output();
        self.scope().add_edge(self.source(), Target::new(0, output));
        let tee = Tee::default();
        self.tee().add_pusher(Box::new(Egress { tee: tee.clone(), nesting }));
        Stream::new(Source::new(self.scope().index_in_parent(), output), outer.clone(), tee)
    }

    /// Connects this stream to the input of the feedback operator of `handle`.
    pub fn connect_loop(&self, handle: LoopHandle<T, D>) {
        let LoopHandle { mut builder, mut output, summary } = handle;
        let connection = vec![Antichain::from_elem(summary.clone())];
        let mut input = builder.new_input_connection(self, Pipeline, connection);
        builder.set_notify(false);
        builder.build_logic(move |_frontiers| {
            input.for_each(|time, data| {
                if let Some(next) = summary.results_in(time.time()) {
                    output.session(&time.delayed(&next)).give_vec(data);
                }
            });
            false
        });
    }
}

/// The unconnected input of a feedback operator; pass it to `Stream::connect_loop`.
pub struct LoopHandle<T: Timestamp, D: Data> {
    builder: OperatorBuilder<T>,
    output: OutputPort<T, D>,
    summary: T::Summary,
}

impl<T: Timestamp> Scope<T> {
    /// A feedback operator: returns the handle for its input and the stream of its output,
    /// whose records have the times of the input's records advanced by `summary`. The
    /// summary must advance every time (for loops: `Product::new(Default::default(), 1)`),
    /// and records whose advanced time does not exist are dropped.
    pub fn feedback<D: Data>(&self, summary: T::Summary) -> (LoopHandle<T, D>, Stream<T, D>) {
        let mut builder = OperatorBuilder::new("Feedback", self);
        let (output, stream) = builder.new_output();
        (LoopHandle { builder, output, summary }, stream)
    }
}

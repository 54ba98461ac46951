//! Generic operators: sources, sinks, unary and binary operators with user logic.
//!
//! Each takes a constructor that receives an initial capability and the operator's facts
//! and returns the logic to run at each scheduling. The `_frontier` variants show the
//! logic its input frontiers; the `_notify` variants give it a `Notificator`. Operators
//! without frontier access are not scheduled for frontier changes alone.

use super::builder::{InputPort, OperatorBuilder, OperatorInfo};
use super::capability::Capability;
use super::notificator::{FrontierNotificator, Notificator};
use super::output::OutputPort;
use crate::dataflow::channels::{Data, Pact};
use crate::dataflow::{Scope, Stream};
use crate::progress::{MutableAntichain, Timestamp};

impl<T: Timestamp> Scope<T> {
    /// An operator with no inputs and one output. Its logic runs when activated (see
    /// `OperatorInfo::activator`) and once at start; it holds the output capability.
    ///
    /// # When its worker leaves the cluster
    ///
    /// Nothing but its own logic would ever finish a source, so its capabilities are released
    /// when its worker starts leaving, as the worker's input handles are
    /// ([`OperatorBuilder::release_on_leave`]; `docs/rescaling.md`, "A leaver's sources"):
    /// what it gave before is delivered, exactly once, and it runs once more. From then on
    /// [`Capability::is_released`] is true for every capability it holds (which now count
    /// nothing, whatever it does with them), [`OutputPort::try_session`] returns
    /// [`CapabilityError::Released`](super::CapabilityError::Released), and a session from
    /// [`OutputPort::session`] drops the records it is given. So a source that emits every
    /// epoch forever does not keep its process from leaving, and one that looks stops:
    ///
    /// ```ignore
    /// scope.source("Ticks", |capability, info| {
    ///     let mut held = Some(capability);
    ///     move |output| {
    ///         let Some(capability) = held.as_mut() else { return };
    ///         if capability.is_released() {
    ///             held = None; // the worker is leaving: stop
    ///             return;
    ///         }
    ///         output.session(capability).give(*capability.time());
    ///         let next = *capability.time() + 1;
    ///         capability.downgrade(&next);
    ///         info.activator.activate();
    ///     }
    /// })
    /// ```
    pub fn source<D, B, L>(&self, name: &str, constructor: B) -> Stream<T, D>
    where
        D: Data,
        B: FnOnce(Capability<T>, OperatorInfo) -> L,
        L: FnMut(&mut OutputPort<T, D>) + 'static,
    {
        let mut builder = OperatorBuilder::new(name, self);
        builder.release_on_leave();
        let (mut output, stream) = builder.new_output();
        let info = builder.info().clone();
        builder.build(move |capability| {
            let mut logic = constructor(capability, info);
            move |_frontiers| {
                logic(&mut output);
                false
            }
        });
        stream
    }
}

impl<T: Timestamp, D: Data> Stream<T, D> {
    /// A one-input, one-output operator that does not watch its input frontier.
    pub fn unary<D2, P, B, L>(&self, pact: P, name: &str, constructor: B) -> Stream<T, D2>
    where
        D2: Data,
        P: Pact<T, D>,
        B: FnOnce(Capability<T>, OperatorInfo) -> L,
        L: FnMut(&mut InputPort<T, D>, &mut OutputPort<T, D2>) + 'static,
    {
        self.unary_operator(pact, name, false, move |capability, info| {
            let mut logic = constructor(capability, info);
            move |input, _frontier, output| logic(input, output)
        })
    }

    /// A one-input, one-output operator whose logic sees its input frontier.
    pub fn unary_frontier<D2, P, B, L>(&self, pact: P, name: &str, constructor: B) -> Stream<T, D2>
    where
        D2: Data,
        P: Pact<T, D>,
        B: FnOnce(Capability<T>, OperatorInfo) -> L,
        L: FnMut(&mut InputPort<T, D>, &MutableAntichain<T>, &mut OutputPort<T, D2>) + 'static,
    {
        self.unary_operator(pact, name, true, constructor)
    }

    /// The one-input, one-output operator behind `unary` and `unary_frontier`; `notify`
    /// says whether frontier changes alone schedule it.
    fn unary_operator<D2, P, B, L>(&self, pact: P, name: &str, notify: bool, constructor: B) -> Stream<T, D2>
    where
        D2: Data,
        P: Pact<T, D>,
        B: FnOnce(Capability<T>, OperatorInfo) -> L,
        L: FnMut(&mut InputPort<T, D>, &MutableAntichain<T>, &mut OutputPort<T, D2>) + 'static,
    {
        let mut builder = OperatorBuilder::new(name, self.scope());
        builder.set_notify(notify);
        let mut input = builder.new_input(self, pact);
        let (mut output, stream) = builder.new_output();
        let info = builder.info().clone();
        builder.build(move |capability| {
            let mut logic = constructor(capability, info);
            move |frontiers| {
                logic(&mut input, &frontiers[0], &mut output);
                false
            }
        });
        stream
    }

    /// A one-input, one-output operator with notifications: the logic requests them with
    /// `notify_at` and receives each once its time is complete, in time order.
    pub fn unary_notify<D2, P, L>(&self, pact: P, name: &str, logic: L) -> Stream<T, D2>
    where
        D2: Data,
        P: Pact<T, D>,
        L: FnMut(&mut InputPort<T, D>, &mut OutputPort<T, D2>, &mut Notificator<T>) + 'static,
    {
        self.unary_notify_from(pact, name, None, logic)
    }

    /// Like `unary_notify`, with a notification requested at each of `initial` (times at or
    /// after the minimum) before any record arrives; the logic receives their capabilities
    /// as it receives any notification's (timely's `unary_notify` with its `init` list).
    pub fn unary_notify_from<D2, P, I, L>(
        &self,
        pact: P,
        name: &str,
        initial: I,
        mut logic: L,
    ) -> Stream<T, D2>
    where
        D2: Data,
        P: Pact<T, D>,
        I: IntoIterator<Item = T>,
        L: FnMut(&mut InputPort<T, D>, &mut OutputPort<T, D2>, &mut Notificator<T>) + 'static,
    {
        let mut notificator = requested_at(initial);
        self.unary_frontier(pact, name, move |capability, _info| {
            notificator.hold(&capability);
            move |input, frontier, output| {
                let frontiers = [frontier];
                let mut notificator = Notificator::new(&frontiers, &mut notificator.inner);
                logic(input, output, &mut notificator);
            }
        })
    }

    /// A one-input operator with no output.
    pub fn sink<P, L>(&self, pact: P, name: &str, mut logic: L)
    where
        P: Pact<T, D>,
        L: FnMut(&mut InputPort<T, D>, &MutableAntichain<T>) + 'static,
    {
        let mut builder = OperatorBuilder::new(name, self.scope());
        let mut input = builder.new_input(self, pact);
        builder.build(move |_capability| {
            move |frontiers| {
                logic(&mut input, &frontiers[0]);
                false
            }
        });
    }

    /// A two-input, one-output operator that does not watch its input frontiers.
    pub fn binary<D2, D3, P1, P2, B, L>(
        &self,
        other: &Stream<T, D2>,
        pact1: P1,
        pact2: P2,
        name: &str,
        constructor: B,
    ) -> Stream<T, D3>
    where
        D2: Data,
        D3: Data,
        P1: Pact<T, D>,
        P2: Pact<T, D2>,
        B: FnOnce(Capability<T>, OperatorInfo) -> L,
        L: FnMut(&mut InputPort<T, D>, &mut InputPort<T, D2>, &mut OutputPort<T, D3>) + 'static,
    {
        self.binary_operator(other, pact1, pact2, name, false, move |capability, info| {
            let mut logic = constructor(capability, info);
            move |input1, _frontier1, input2, _frontier2, output| logic(input1, input2, output)
        })
    }

    /// A two-input, one-output operator whose logic sees both input frontiers.
    #[allow(clippy::type_complexity)]
    pub fn binary_frontier<D2, D3, P1, P2, B, L>(
        &self,
        other: &Stream<T, D2>,
        pact1: P1,
        pact2: P2,
        name: &str,
        constructor: B,
    ) -> Stream<T, D3>
    where
        D2: Data,
        D3: Data,
        P1: Pact<T, D>,
        P2: Pact<T, D2>,
        B: FnOnce(Capability<T>, OperatorInfo) -> L,
        L: FnMut(
                &mut InputPort<T, D>,
                &MutableAntichain<T>,
                &mut InputPort<T, D2>,
                &MutableAntichain<T>,
                &mut OutputPort<T, D3>,
            ) + 'static,
    {
        self.binary_operator(other, pact1, pact2, name, true, constructor)
    }

    /// The two-input, one-output operator behind `binary` and `binary_frontier`.
    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    fn binary_operator<D2, D3, P1, P2, B, L>(
        &self,
        other: &Stream<T, D2>,
        pact1: P1,
        pact2: P2,
        name: &str,
        notify: bool,
        constructor: B,
    ) -> Stream<T, D3>
    where
        D2: Data,
        D3: Data,
        P1: Pact<T, D>,
        P2: Pact<T, D2>,
        B: FnOnce(Capability<T>, OperatorInfo) -> L,
        L: FnMut(
                &mut InputPort<T, D>,
                &MutableAntichain<T>,
                &mut InputPort<T, D2>,
                &MutableAntichain<T>,
                &mut OutputPort<T, D3>,
            ) + 'static,
    {
        let mut builder = OperatorBuilder::new(name, self.scope());
        builder.set_notify(notify);
        let mut input1 = builder.new_input(self, pact1);
        let mut input2 = builder.new_input(other, pact2);
        let (mut output, stream) = builder.new_output();
        let info = builder.info().clone();
        builder.build(move |capability| {
            let mut logic = constructor(capability, info);
            move |frontiers| {
                logic(&mut input1, &frontiers[0], &mut input2, &frontiers[1], &mut output);
                false
            }
        });
        stream
    }

    /// A two-input, one-output operator with notifications (times complete on both inputs).
    pub fn binary_notify<D2, D3, P1, P2, L>(
        &self,
        other: &Stream<T, D2>,
        pact1: P1,
        pact2: P2,
        name: &str,
        logic: L,
    ) -> Stream<T, D3>
    where
        D2: Data,
        D3: Data,
        P1: Pact<T, D>,
        P2: Pact<T, D2>,
        L: FnMut(&mut InputPort<T, D>, &mut InputPort<T, D2>, &mut OutputPort<T, D3>, &mut Notificator<T>)
            + 'static,
    {
        self.binary_notify_from(other, pact1, pact2, name, None, logic)
    }

    /// Like `binary_notify`, with a notification requested at each of `initial` before any
    /// record arrives (timely's `binary_notify` with its `init` list).
    #[allow(clippy::too_many_arguments)]
    pub fn binary_notify_from<D2, D3, P1, P2, I, L>(
        &self,
        other: &Stream<T, D2>,
        pact1: P1,
        pact2: P2,
        name: &str,
        initial: I,
        mut logic: L,
    ) -> Stream<T, D3>
    where
        D2: Data,
        D3: Data,
        P1: Pact<T, D>,
        P2: Pact<T, D2>,
        I: IntoIterator<Item = T>,
        L: FnMut(&mut InputPort<T, D>, &mut InputPort<T, D2>, &mut OutputPort<T, D3>, &mut Notificator<T>)
            + 'static,
    {
        let mut notificator = requested_at(initial);
        self.binary_frontier(other, pact1, pact2, name, move |capability, _info| {
            notificator.hold(&capability);
            move |input1, frontier1, input2, frontier2, output| {
                let frontiers = [frontier1, frontier2];
                let mut notificator = Notificator::new(&frontiers, &mut notificator.inner);
                logic(input1, input2, output, &mut notificator);
            }
        })
    }
}

/// A notificator and the times it is to notify at first, before the operator's initial
/// capability (from which their capabilities come) exists.
struct Initial<T: Timestamp> {
    times: Vec<T>,
    inner: FrontierNotificator<T>,
}

fn requested_at<T: Timestamp>(initial: impl IntoIterator<Item = T>) -> Initial<T> {
    Initial { times: initial.into_iter().collect(), inner: FrontierNotificator::new() }
}

impl<T: Timestamp> Initial<T> {
    /// Requests the initial notifications with capabilities delayed from `capability`.
    fn hold(&mut self, capability: &Capability<T>) {
        for time in self.times.drain(..) {
            self.inner.notify_at(capability.delayed(&time));
        }
    }
}

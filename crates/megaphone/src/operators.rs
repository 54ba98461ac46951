//! The user-facing keyed operators: `keyed_unary`, `keyed_binary` and `state_machine`.
//!
//! Each builds the operator pair, F (`router`) and S (`stateful`) sharing one worker's bin
//! state (`state`), with two helpers: C (`commands`) hands every command to every worker's F,
//! and K (`handover`) hands the routing state to workers that join. A keyed binary
//! operator is a keyed unary one over the two inputs merged as [`Side`] records, so both
//! inputs share per-key state and follow one routing table. This module owns the wiring and
//! the API; the migration protocol lives in `router` and `stateful`.

use crate::bins::Bins;
use crate::codec::Side;
use crate::commands::spread_commands;
use crate::context::Context;
use crate::departures::Departed;
use crate::handover::handover;
use crate::leaving::Leaving;
use crate::router::{router, RouterInputs};
use crate::routing::Routing;
use crate::state::Shared;
use crate::stateful::{stateful, Logic};
use crate::table::{Command, RoutingTable};
use std::cell::RefCell;
use std::hash::Hash;
use std::rc::Rc;
use timely_engine::dataflow::{Data, ExchangeData, Stream};

/// The control of a keyed operator: its stream of commands, its bins and its name.
///
/// Send each command once, from any worker: the operator hands every command to every
/// worker. The control stream's frontier must advance with the data: records at a time
/// are held back until the control frontier has passed it.
#[derive(Clone)]
pub struct Control {
    commands: Stream<u64, Command>,
    bins: Bins,
    name: String,
}

impl Control {
    /// Commands from `commands`, with the default number of bins.
    pub fn new(commands: &Stream<u64, Command>) -> Self {
        Control { commands: commands.clone(), bins: Bins::default(), name: "Megaphone".to_owned() }
    }

    /// The same control with `bins` bins.
    pub fn with_bins(mut self, bins: Bins) -> Self {
        self.bins = bins;
        self
    }

    /// The same control, naming the operators it builds `name.F` and `name.S`.
    pub fn named(mut self, name: &str) -> Self {
        name.clone_into(&mut self.name);
        self
    }

    /// The bins.
    pub fn bins(&self) -> Bins {
        self.bins
    }
}

/// Keyed operators on streams of records at `u64` times.
pub trait KeyedOperators<D: ExchangeData> {
    /// A keyed unary operator: `key` gives each record's key; `on_record` runs for each
    /// record with the key's state (created with `S::default()`); `on_notify` runs for each
    /// notification a key asked for with [`Context::notify_at`]. State and notifications
    /// move with their bin when `control` moves it.
    fn keyed_unary<K, S, O>(
        &self,
        control: &Control,
        key: impl Fn(&D) -> K + 'static,
        on_record: impl FnMut(&K, D, &mut S, &mut Context<O>) + 'static,
        on_notify: impl FnMut(&K, &mut S, &mut Context<O>) + 'static,
    ) -> Stream<u64, O>
    where
        K: ExchangeData + Hash + Eq,
        S: ExchangeData + Default,
        O: Data;

    /// A keyed binary operator: records of both inputs with equal keys share one state.
    #[allow(clippy::too_many_arguments)]
    fn keyed_binary<D2, K, S, O>(
        &self,
        other: &Stream<u64, D2>,
        control: &Control,
        key1: impl Fn(&D) -> K + 'static,
        key2: impl Fn(&D2) -> K + 'static,
        on_first: impl FnMut(&K, D, &mut S, &mut Context<O>) + 'static,
        on_second: impl FnMut(&K, D2, &mut S, &mut Context<O>) + 'static,
        on_notify: impl FnMut(&K, &mut S, &mut Context<O>) + 'static,
    ) -> Stream<u64, O>
    where
        D2: ExchangeData,
        K: ExchangeData + Hash + Eq,
        S: ExchangeData + Default,
        O: Data;
}

impl<D: ExchangeData> KeyedOperators<D> for Stream<u64, D> {
    fn keyed_unary<K, S, O>(
        &self,
        control: &Control,
        key: impl Fn(&D) -> K + 'static,
        on_record: impl FnMut(&K, D, &mut S, &mut Context<O>) + 'static,
        on_notify: impl FnMut(&K, &mut S, &mut Context<O>) + 'static,
    ) -> Stream<u64, O>
    where
        K: ExchangeData + Hash + Eq,
        S: ExchangeData + Default,
        O: Data,
    {
        let logic =
            Logic { key: Rc::new(key), on_record: Box::new(on_record), on_notify: Box::new(on_notify) };
        operator_pair(self, control, logic)
    }

    fn keyed_binary<D2, K, S, O>(
        &self,
        other: &Stream<u64, D2>,
        control: &Control,
        key1: impl Fn(&D) -> K + 'static,
        key2: impl Fn(&D2) -> K + 'static,
        mut on_first: impl FnMut(&K, D, &mut S, &mut Context<O>) + 'static,
        mut on_second: impl FnMut(&K, D2, &mut S, &mut Context<O>) + 'static,
        on_notify: impl FnMut(&K, &mut S, &mut Context<O>) + 'static,
    ) -> Stream<u64, O>
    where
        D2: ExchangeData,
        K: ExchangeData + Hash + Eq,
        S: ExchangeData + Default,
        O: Data,
    {
        let merged = self.map(Side::First).concat(&other.map(Side::Second));
        merged.keyed_unary(
            control,
            move |record: &Side<D, D2>| match record {
                Side::First(first) => key1(first),
                Side::Second(second) => key2(second),
            },
            move |key, record, state, context| match record {
                Side::First(first) => on_first(key, first, state, context),
                Side::Second(second) => on_second(key, second, state, context),
            },
            on_notify,
        )
    }
}

/// A state machine per key over streams of `(key, value)` pairs.
pub trait StateMachine<K, V> {
    /// Runs `fold(key, value, state)` for every record; it returns whether to discard the
    /// key's state and the outputs to send at the record's time.
    fn state_machine<S, O, I>(
        &self,
        control: &Control,
        fold: impl FnMut(&K, V, &mut S) -> (bool, I) + 'static,
    ) -> Stream<u64, O>
    where
        S: ExchangeData + Default,
        O: Data,
        I: IntoIterator<Item = O>;
}

impl<K, V> StateMachine<K, V> for Stream<u64, (K, V)>
where
    K: ExchangeData + Hash + Eq,
    V: Data,
    (K, V): ExchangeData,
{
    fn state_machine<S, O, I>(
        &self,
        control: &Control,
        mut fold: impl FnMut(&K, V, &mut S) -> (bool, I) + 'static,
    ) -> Stream<u64, O>
    where
        S: ExchangeData + Default,
        O: Data,
        I: IntoIterator<Item = O>,
    {
        self.keyed_unary(
            control,
            |(key, _): &(K, V)| key.clone(),
            move |key, (_, value), state, context| {
                let (discard, outputs) = fold(key, value, state);
                if discard {
                    context.discard_state();
                }
                outputs.into_iter().for_each(|output| context.give(output));
            },
            |_key, _state: &mut S, _context| {},
        )
    }
}

/// Builds the operators of one keyed operator on this worker: C (spreads commands), K (hands
/// the routing state to workers that join), F (routes) and S (runs the logic). F and S share
/// the worker's bin state, C, K and F its routing state.
fn operator_pair<D, K, S, O>(
    data: &Stream<u64, D>,
    control: &Control,
    logic: Logic<D, K, S, O>,
) -> Stream<u64, O>
where
    D: ExchangeData,
    K: ExchangeData + Hash + Eq,
    S: ExchangeData + Default,
    O: Data,
{
    let scope = data.scope();
    let worker = scope.worker();
    // Workers that left (or are leaving) when the operator is built own no bin of it.
    let leaves = worker.rescaling().leaves();
    let gone: Vec<usize> = leaves.departed().into_iter().chain(leaves.leaving()).collect();
    let present: Vec<usize> = (0..scope.peers()).filter(|w| !gone.contains(w)).collect();
    let table = RoutingTable::round_robin_over(control.bins, &present).expect("a scope has workers");
    // On a worker that joined a cluster already running the operator, the routing state comes
    // from the others that have not left, and this worker holds no bin until one moves here.
    let joined = worker.rescaling().joined_running(scope.address()[0]);
    let owned = table.owners().iter().map(|&owner| owner == scope.index() && joined.is_none()).collect();
    let shared = Rc::new(RefCell::new(Shared::new(control.bins, scope.index(), owned)));
    // Workers that are leaving still hand their part over: they admitted this worker first.
    let departed_workers = leaves.departed();
    let expected = joined.map(|existing| (0..existing).filter(|w| !departed_workers.contains(w)).collect());
    // Workers leaving when this worker builds the operator take no part in it, unless this
    // worker joined a cluster that runs it already: they built it before the join, so before
    // their leave, and take part as far as the others are concerned.
    let outside = if joined.is_some() { departed_workers.clone() } else { gone.clone() };
    let leaving = Leaving::new(worker, joined.is_none(), outside);
    let departed = Departed::new(gone, scope.peers());
    let routing = Rc::new(RefCell::new(Routing::new(table, departed, expected)));
    let (commands, commands_operator) =
        spread_commands(&control.name, &control.commands, routing.clone(), leaving.clone());
    let (parts, handover) = handover(&control.name, scope, routing.clone());
    let inputs = RouterInputs { commands, parts, handover, commands_operator, leaving };
    let (routed, states, router_activator) =
        router(&control.name, data, inputs, logic.key.clone(), shared.clone(), routing);
    let (output, stateful_activator) = stateful(&control.name, &routed, &states, shared.clone(), logic);
    shared.borrow_mut().set_activators(router_activator, stateful_activator);
    output
}

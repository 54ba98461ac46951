//! A model checker for the leave protocol: a process leaving a running cluster.
//!
//! `docs/rescaling.md` ("Leaving a running cluster: the protocol (contract)") is the contract;
//! this test explores every reachable state of a small model of its progress part,
//! independently of the engine's code, and checks that no worker's frontier ever passes a
//! pointstamp still held anywhere, that nothing is lost with the leaver, and that every run
//! completes. Run it with
//!
//! ```text
//! cargo test --release -p timely-engine --test suite -- leave_model:: --nocapture
//! ```
//!
//! which prints, per scenario, the states and transitions explored and, for the variants that
//! must fail, the shortest trace to the violation. The explorer, the dataflow and the lazily
//! applied views are `model_support`'s, shared with the join's model (`bootstrap_model`).
//!
//! # The model
//!
//! - **Dataflow**: as in the join's model, an input operator, an exchange, and a consumer that
//!   asks for a notification at the time of every message it takes; times `0..=2`, identity
//!   summaries (`model_support::dataflow`).
//! - **Workers**: two or three (`Config::peers`), every one counting the implicit initial
//!   capabilities (one per worker) at time 0 of each operator output. One of them leaves, or
//!   two (a process with two worker threads: `Config::leavers`); any worker may leave, worker 0
//!   included. Local steps: the input advances its epoch (`+1` new, `-1` old in one batch),
//!   closes, or sends a data message at its epoch to a worker it routes to; the consumer takes
//!   a message (`-1` message, `+1` notification capability), is notified at `t` once its
//!   worker's view lets its frontier pass `t`, and drops its initial capability. Each step ends
//!   by sending its batch (per-sender sequence numbers) to every worker the sender still sends
//!   progress to.
//! - **Channels**: progress batches, sealed markers and goodbyes are FIFO per (sender,
//!   receiver) and arbitrarily delayed; across senders any order. Data messages are a multiset
//!   per receiver (consumed in any order: more behaviours than FIFO).
//! - **The leave**, per the contract: every worker handles the *notice* at a moment of its
//!   choice, the leavers included (`Action::Notice`). From then on its input routes to the
//!   stayers only, and it sends each leaver its *sealed* marker (a stayer always; a leaver to
//!   the other leavers with the fix, see below). A leaver's program may keep feeding (the
//!   stayers) after its notice, and closes its input at a moment of its choice (the runtime
//!   closes it at the latest when the program returns); it may also have closed it before. A
//!   leaver is *drained* once it handled the notice, has the markers it waits for, consumed
//!   every message in its inbox and holds no capability; it then says *goodbye*
//!   (`Action::Goodbye`: the sequence number after its last batch) and stops. A stayer that
//!   received the goodbye applies the leaver's batches up to it and *forgets* the leaver
//!   (`Action::Forget`): it applies nothing more from it and sends it no more batches.
//! - **A dataflow built during the leave** (`Config::second`, module `second`; `docs/
//!   rescaling.md`, "Dataflows built during a leave"): a second dataflow, an input and a
//!   notifying consumer without an exchange (each input sends to its own consumer), with
//!   progress batches of its own. Each stayer builds it at a moment of its choice after it
//!   handled the notice (before the leaver's `Left`, after it, after the forget), and each
//!   leaver at a moment of its choice during its leave, or never: both are explored. A worker
//!   builds it counting one initial capability per worker whose `Left` it has not taken in,
//!   and per worker whose `Left` says it built it (`Leaves::builders`). A drained leaver (in
//!   both dataflows) sends `Left{dataflows}` (1, or 2 if it built the second) to every other
//!   worker still present with its goodbye, FIFO before it, and builds nothing afterwards (or
//!   earlier, when its program returns during its leave: `second::SecondAction::Return`, after
//!   which it builds nothing either; the engine's awaited `Left`, sent by a leaver whose program
//!   steps on once a stayer waits for it, is such a `Return` at a moment the engine picks);
//!   each receiver takes it in at a moment of its choice before it forgets the leaver
//!   (`second::SecondAction::HearLeft`) and, if it built the second dataflow and the leaver
//!   never did, retires the leaver's initial capabilities in its own view only (`-1`s never
//!   sent: `Rescaling::retire_initial`). Batches of the second dataflow sent before a worker
//!   built it wait for it (the engine's inboxes hold them for a channel not allocated yet),
//!   so they reach every worker, forgotten senders' included.
//! - **A dataflow the leaver never builds** (`Bounds::unbuilt`, module `unbuilt`; `docs/
//!   rescaling.md`, "Dataflows the leaver never builds that others built before its
//!   notice"): the second dataflow instead has an exchange, the stayers built it at the
//!   start, and the leavers never build it. The stayers' inputs send to the leaver until they
//!   handle the notice; what reaches it waits unconsumed (not holding up its drain), and the
//!   drained leaver forwards it to the lowest-index stayer before its goodbye
//!   (`second::SecondAction::Forward`), whose consumer takes it like its own; its `Left`
//!   retires its initial capabilities in the stayers' views.
//!
//! # Properties, in every reachable state
//!
//! - **Frontier**: for each member (a leaver while it runs) and location, the frontier its
//!   view gives is not later than any pointstamp held anywhere (capabilities held, messages
//!   not consumed) that can reach the location. Notifications are checked as events as well:
//!   none at `t` while a pointstamp at or before `t` can reach the consumer's input.
//! - **Accounting**: initial counts plus every batch sent equal what is truly held.
//! - **PrefixView**: every member's view is the initial counts plus a prefix of each sender's
//!   batches: none applied twice, none skipped.
//! - **NoLostMessage**: no data message reaches a worker that has left.
//! - **NoLostBatch**: every batch reaches every member: no member forgot a sender whose
//!   batches it has not all applied, and no stayer stopped sending batches to a member.
//! - **Deadlock**: a state where nothing can happen is complete: every leaver gone, every
//!   notice handled, every capability released, every message consumed, and every member's
//!   view, once the batches in flight to it arrived, empty (every batch applied).
//! - **InitialCount** (second dataflow): every member that built it counts the initial
//!   capabilities of exactly the workers that built it or may still as far as it knows: those
//!   that built it, and those whose `Left` it has not taken in.
//!
//! With a second dataflow, Frontier, Accounting, PrefixView and Deadlock are checked in it as
//! well (its views, its true counts with one initial capability per worker that built it, and
//! in a state where nothing can happen: every stayer built it, and it completed on every
//! member, with every initial capability counted released or retired).
//!
//! NoLostMessage and NoLostBatch catch a loss when it happens; without them the same runs end
//! in a Deadlock (a message no one consumes, a view that never catches up), which the broken
//! variants' tests check as well.
//!
//! # Variants that must fail
//!
//! Each deliberately broken variant (`Bug`) is caught, first by the property that sees the
//! loss and, with that property not checked, by what the loss leads to: (a) a leaver that goes
//! without waiting for the sealed markers: NoLostMessage, then Deadlock; (b) a goodbye before
//! the last batch: NoLostBatch, then Deadlock; (c) a stayer that forgets the leaver at the
//! notice: NoLostBatch, then Deadlock; (d) a leaver that discards its capabilities at the
//! notice without a batch: Accounting, then Deadlock; (e) a stayer that routes data to the
//! leaver after its sealed marker: NoLostMessage, then Deadlock; (f) a stayer that removes the
//! leaver's counts when it forgets it: PrefixView, then Frontier. With the second dataflow:
//! (g) a worker that retires the leaver's initial capabilities on its `Left` where the leaver
//! built the dataflow too: InitialCount, then Frontier (the stayer's frontier passes its own
//! input's capability); (h) a leaver that sends `Left` at its notice, before it is drained,
//! and builds the dataflow afterwards: InitialCount, then Frontier (the stayer, having taken
//! in `Left{1}`, passes the leaver's capability); (i) a stayer that never counts the leavers:
//! InitialCount, then Frontier (the leaver builds it too); (j) every worker counts every
//! leaver, and `Left` retires nothing: InitialCount, then Deadlock (the stayer's view keeps
//! the initial capability of a leaver that never built it); (k) a stayer that takes in the
//! goodbye before the `Left` and builds the dataflow in between, not counting the departed
//! leaver: InitialCount, then Frontier. With a dataflow the leaver never builds: (l) a leaver
//! that forwards what it received at its notice, before it is drained: NoLostMessage (a
//! stayer that had not handled the notice sent it one more), then Deadlock; (m) a leaver that
//! goes without forwarding: NoLostMessage, then Deadlock; (n) a leaver that sends a batch
//! consuming what it forwards, and the target one taking it in again: Frontier (a view that
//! applied the leaver's batch and not the target's passes the forwarded message).
//!
//! # Abstractions, and why they are sound
//!
//! - One step, one batch: the engine may fold several steps into a batch, which only removes
//!   intermediate views, so its behaviours are a subset of the model's.
//! - Every worker applies batches lazily (`model_support::views`): a state stands for every
//!   view between what the worker certainly applied and the batches that reach it, the
//!   properties are checked on all of them, and a notification commits to one. The leave's
//!   steps read no view (a leaver's drained check reads its operators and inbox), except the
//!   forget, which commits to the leaver's batches up to the goodbye (they came before it).
//!   Which batches reach a worker is `State::limit`: all a sender sent, unless one of them
//!   forgot the other.
//! - Data messages are in the receiver's inbox as soon as they are sent. A message in flight
//!   differs from one waiting in the inbox only for the drained check, and a leaver makes that
//!   check only once it has every marker it waits for, each of which follows its sender's data
//!   messages on their FIFO channel. The marker is in the leaver's inbox as soon as its sender
//!   handled the notice (a later marker only delays the goodbye, which is a separate step at a
//!   moment of the leaver's choice anyway), and a worker's messages to itself need no marker.
//! - A stayer sends its marker when it handles the notice: its plain exchange switches then,
//!   and a marker sent later again only delays the goodbye.
//! - `Left` is sent in the goodbye's step: in between, a drained leaver that sent `Left` builds
//!   nothing, holds nothing and sends no batch, so its goodbye later changes nothing but when
//!   the stayers may forget it, which is their choice anyway. A stayer has handled the notice
//!   before any `Left` arrives (the leaver waited for its sealed marker).
//! - The goodbye's delay to each stayer is the stayer's choice of when to forget. Batches to
//!   a worker that has gone are dropped: its view is no longer part of the state (only its
//!   inbox, where lost messages would show).
//! - No worker has a role of its own in this model (unlike the join's server), so which worker
//!   leaves matters only through the scenario's bounds; worker 0 leaving is checked anyway.
//! - Not modelled: keyed exchanges, Megaphone and their Membership operators (they hold
//!   capabilities like any operator; their routing is their contract), nested scopes, more
//!   than two dataflows, an exchange in the one built during the leave (its routing is that of
//!   the first: the workers present), the keyed exchanges' announcements and the copies of a
//!   broadcast that a leaver which never built their dataflow retires instead of forwarding
//!   (they carry no record), two leavers that never built a dataflow (the forward goes to a
//!   stayer, and a leaver's own process's messages are refused: `docs/rescaling.md`), a
//!   leaver that builds a dataflow before its notice (as
//!   any worker before the leave), joins, the launcher and its acknowledgements, failures.
//! - Bounded work: scenarios bound the epochs and the data messages per worker, and some start
//!   after a prelude of steps (a reachable state). Each scenario is exhaustive within its
//!   bounds; bugs that need more work than that are out of reach, and the bounds are chosen so
//!   each check runs in seconds.
//! - The visited set stores 64-bit fingerprints (`model_support::explorer`); a collision could
//!   hide a state with probability below one in a million at these sizes.
//!
//! # What the model found
//!
//! The contract as written lets a leaver go while another leaver still sends data to it: a
//! leaver waits for the sealed markers of the stayers only, but the other workers of its own
//! process leave too and route to it until they handle the notice. The shortest trace: the
//! stayer handles the notice (its marker goes), the first leaver closes its input, drops its
//! capability, handles the notice and, drained, says goodbye; the second leaver, which has not
//! handled the notice yet, sends it a message, which no one will ever consume
//! (`the_contract_as_written_lets_a_leaver_go_while_another_leaver_still_sends_to_it`). The
//! fix this model checks: every worker that handled the notice, a leaver too, sends its sealed
//! marker to every leaver but itself, and a leaver is drained only with the marker of every
//! other worker (`Config::sealed_by_all`); with it, every scenario holds.
//!
//! The contract also says that "a stayer's accumulation of the leaver's counts is zero when it
//! forgets it". Only the leaver's capabilities sum to zero: its batches also carry `+1` for
//! each message it sent and `-1` for each it consumed, which other workers' batches settle. A
//! stayer that forgets a leaver must keep every count it applied; one that removes the
//! leaver's counts lets its frontier pass a message the leaver sent it
//! (`removing_the_leavers_counts_at_the_forget_is_caught`).
//!
//! With a dataflow built during the leave, the rules of "Dataflows built during a leave" hold
//! in every scenario: every builder's count is right, no frontier passes a held capability,
//! and the dataflow completes on every stayer, whether the leaver built it or not and in any
//! order of the stayers' builds, the `Left` and the forget. Two things the rules rely on:
//! `Left` is taken in before the forget (FIFO before the goodbye; the engine takes both in
//! within one step, so no dataflow is built between them): a stayer that forgot the leaver
//! without its `Left` and then built the dataflow would not count the leaver (`builders`
//! counts no departed worker without a `Left`), whose releases would then pass its frontier
//! past its own capability (variant (k)). And a leaver may build the dataflow at any moment
//! until its `Left`, so a worker must count every leaver whose `Left` it has not taken in
//! (variants (h) and (i)).

mod actions;
mod model;
mod properties;
mod second;
mod unbuilt;

use crate::model_support::dataflow::Step;
use crate::model_support::explorer::{self, Model, Report};
use actions::{apply, enabled, Action, Bug, Config};
use model::State;
use properties::{check_state, check_terminal, Property, Violation};
use second::Bounds;

impl Model for Config {
    type State = State;
    type Action = Action;
    type Property = Property;

    fn enabled(&self, state: &State) -> Vec<Action> {
        enabled(state, self)
    }

    fn apply(&self, state: &State, action: Action) -> Result<State, Violation> {
        apply(state, self, action)
            .map_err(|detail| Violation { property: Property::EarlyNotification, detail })
    }

    fn check_state(&self, state: &State) -> Result<(), Violation> {
        check_state(state, self)
    }

    fn check_terminal(&self, state: &State) -> Result<(), Violation> {
        check_terminal(state, self)
    }
}

use Step::{Consume, DropHeld, Send};

/// Every consumer drops its initial capability first (three workers).
const DROPPED: &[Action] =
    &[Action::Local(DropHeld(0)), Action::Local(DropHeld(1)), Action::Local(DropHeld(2))];

/// Worker 0 sends worker 1 a message, which worker 1 takes (asking for a notification at 0)
/// before it handles the notice.
const NOTIFICATION_AT_THE_NOTICE: &[Action] =
    &[Action::Local(Send { from: 0, to: 1 }), Action::Local(Consume(1, 0)), Action::Notice(1)];

/// A scenario: the fixed protocol, no bug, `peers` workers of which `leavers` (one bit each)
/// leave, each sending at most `sends` messages, inputs advancing up to `last_epoch`.
fn scenario(peers: usize, leavers: u8, sends: [u8; 3], last_epoch: u8, prelude: &'static [Action]) -> Config {
    Config {
        peers,
        leavers,
        sealed_by_all: true,
        bug: None,
        sends,
        last_epoch,
        prelude,
        unchecked: None,
        second: None,
    }
}

/// The scenario's start: the initial state after its prelude.
fn start(config: &Config) -> State {
    let mut initial = State::initial(config.peers, config.sends);
    if let Some(bounds) = config.second.filter(|bounds| bounds.unbuilt) {
        unbuilt::build_at_start(&mut initial, config, bounds.sends);
    }
    explorer::start(config, initial, config.prelude)
}

/// Explores a scenario that must hold everywhere, and checks that it was explored completely.
fn holds(config: Config, at_least: usize) {
    explorer::holds(&config, start(&config), at_least);
}

/// Explores a variant that must fail, and checks which property it breaks.
fn fails(config: Config, expected: &[Property]) -> Report<Config> {
    explorer::fails(&config, start(&config), expected)
}

/// Explores a broken variant that must fail with `first`, and again without checking `first`,
/// when it must end in `then`: what the loss that `first` catches leads to.
fn fails_then(config: Config, first: Property, then: Property) {
    fails(config, &[first]);
    fails(Config { unchecked: Some(first), ..config }, &[then]);
}

#[test]
fn the_contract_as_written_lets_a_leaver_go_while_another_leaver_still_sends_to_it() {
    let config = Config { sealed_by_all: false, ..scenario(3, 0b110, [0, 1, 1], 0, &[]) };
    let report = fails(config, &[Property::NoLostMessage]);
    let (_, steps) = report.violation.as_ref().expect("a violation");
    let (last, _) = steps.last().expect("a trace");
    assert!(
        matches!(last, Action::Local(Send { from: 1 | 2, to: 1 | 2 })),
        "a leaver sent to another: {last:?}"
    );
}

#[test]
fn a_leave_without_data() {
    holds(scenario(2, 0b10, [0, 0, 0], 2, &[]), 2_000);
}

#[test]
fn the_leaver_feeds_data_before_it_leaves() {
    holds(scenario(2, 0b10, [0, 2, 0], 1, &[]), 200_000);
}

#[test]
fn stayers_send_data_to_the_leaver_around_the_notice() {
    holds(scenario(2, 0b10, [2, 0, 0], 1, &[]), 200_000);
}

#[test]
fn the_leaver_holds_a_notification_capability_at_the_notice() {
    holds(scenario(2, 0b10, [2, 0, 0], 2, NOTIFICATION_AT_THE_NOTICE), 90_000);
}

#[test]
fn worker_0_leaves_with_data_both_ways() {
    holds(scenario(2, 0b01, [1, 1, 0], 1, &[]), 400_000);
}

#[test]
fn worker_0_of_three_leaves_with_data_both_ways() {
    holds(scenario(3, 0b001, [1, 1, 0], 0, &[]), 200_000);
}

#[test]
fn three_workers_one_leaves_over_two_epochs() {
    holds(scenario(3, 0b010, [1, 0, 0], 1, DROPPED), 10_000);
}

#[test]
fn a_process_of_two_workers_leaves() {
    holds(scenario(3, 0b110, [0, 1, 1], 0, &[]), 200_000);
}

#[test]
fn a_process_of_two_workers_leaves_while_the_stayer_sends_to_both() {
    holds(scenario(3, 0b110, [1, 1, 1], 0, DROPPED), 30_000);
}

#[test]
fn leaving_without_the_sealed_markers_is_caught() {
    let config =
        Config { bug: Some(Bug::LeavesWithoutSealedMarkers), ..scenario(2, 0b10, [1, 0, 0], 1, &[]) };
    fails_then(config, Property::NoLostMessage, Property::Deadlock);
}

#[test]
fn a_goodbye_before_the_last_batch_is_caught() {
    let config = Config { bug: Some(Bug::GoodbyeBeforeLastBatch), ..scenario(2, 0b10, [0, 0, 0], 1, &[]) };
    fails_then(config, Property::NoLostBatch, Property::Deadlock);
}

#[test]
fn forgetting_the_leaver_at_the_notice_is_caught() {
    let config = Config { bug: Some(Bug::ForgetsAtNotice), ..scenario(2, 0b10, [0, 0, 0], 1, &[]) };
    fails_then(config, Property::NoLostBatch, Property::Deadlock);
}

#[test]
fn discarding_capabilities_at_the_notice_is_caught() {
    let config =
        Config { bug: Some(Bug::DiscardsCapabilitiesAtNotice), ..scenario(2, 0b10, [0, 0, 0], 1, &[]) };
    fails_then(config, Property::Accounting, Property::Deadlock);
}

#[test]
fn routing_to_the_leaver_after_the_sealed_marker_is_caught() {
    let config = Config { bug: Some(Bug::RoutesAfterSealed), ..scenario(2, 0b10, [1, 0, 0], 1, &[]) };
    fails_then(config, Property::NoLostMessage, Property::Deadlock);
}

#[test]
fn removing_the_leavers_counts_at_the_forget_is_caught() {
    let config = Config { bug: Some(Bug::RemovesTheLeaversCounts), ..scenario(2, 0b10, [1, 1, 0], 1, &[]) };
    fails_then(config, Property::PrefixView, Property::Frontier);
}

/// A scenario with a second dataflow built during the leave, whose inputs send up to
/// `sends[w]` messages each (to their own consumer) over epochs up to `last_epoch`.
fn with_second(config: Config, sends: [u8; 3], last_epoch: u8) -> Config {
    Config { second: Some(Bounds { sends, last_epoch, unbuilt: false }), ..config }
}

#[test]
fn a_dataflow_built_during_a_leave() {
    holds(with_second(scenario(2, 0b10, [0, 0, 0], 0, &[]), [0, 0, 0], 0), 100);
}

#[test]
fn a_dataflow_built_during_a_leave_of_worker_0() {
    holds(with_second(scenario(2, 0b01, [0, 0, 0], 0, &[]), [0, 0, 0], 0), 100);
}

#[test]
fn a_dataflow_built_during_a_leave_with_data_in_both() {
    holds(with_second(scenario(2, 0b10, [0, 1, 0], 0, &[]), [1, 0, 0], 0), 100);
}

#[test]
fn a_dataflow_built_during_a_leave_of_one_of_three() {
    holds(with_second(scenario(3, 0b010, [0, 0, 0], 0, &[]), [0, 0, 0], 0), 100);
}

#[test]
fn a_dataflow_built_during_a_leave_of_a_process_of_two_workers() {
    holds(with_second(scenario(3, 0b110, [0, 0, 0], 0, &[]), [0, 0, 0], 0), 100);
}

#[test]
fn retiring_where_the_leaver_built_is_caught() {
    let config = Config { bug: Some(Bug::RetiresWhereBuilt), ..second_bug_scenario() };
    fails_then(config, Property::InitialCount, Property::Frontier);
}

#[test]
fn left_before_the_leaver_is_drained_is_caught() {
    let config = Config { bug: Some(Bug::LeftBeforeDrained), ..second_bug_scenario() };
    fails_then(config, Property::InitialCount, Property::Frontier);
}

#[test]
fn counting_the_leaver_never_is_caught() {
    let config = Config { bug: Some(Bug::CountsLeaversNever), ..second_bug_scenario() };
    fails_then(config, Property::InitialCount, Property::Frontier);
}

#[test]
fn counting_the_leaver_always_is_caught() {
    let config = Config { bug: Some(Bug::CountsLeaversAlways), ..second_bug_scenario() };
    fails_then(config, Property::InitialCount, Property::Deadlock);
}

/// The broken variants of the second dataflow's counting: two workers, the second leaves.
fn second_bug_scenario() -> Config {
    with_second(scenario(2, 0b10, [0, 0, 0], 0, &[]), [0, 0, 0], 0)
}

#[test]
fn building_between_the_goodbye_and_a_later_left_is_caught() {
    let config = Config { bug: Some(Bug::ForgetsBeforeLeft), ..second_bug_scenario() };
    fails_then(config, Property::InitialCount, Property::Frontier);
}

//! A model checker for the progress protocol with the bootstrap of a joining worker.
//!
//! `docs/rescaling.md` ("Bootstrap of progress state", "Capabilities of joining workers") is
//! the contract; this test explores every reachable state of a small model of it,
//! independently of the engine's code, and checks that no worker's frontier ever passes a
//! pointstamp still held anywhere. Run it with
//!
//! ```text
//! cargo test --release -p timely-engine --test suite -- bootstrap_model:: --nocapture
//! ```
//!
//! which prints, per scenario, the states and transitions explored and, for the variants that
//! must fail, the shortest trace to the violation.
//!
//! # The model
//!
//! - **Dataflow**: an input operator, an exchange, and a consumer that asks for a notification
//!   at the time of every message it takes. Pointstamps live at three locations: the input's
//!   output (its capability), the consumer's input (messages not yet consumed) and the
//!   consumer's output (its initial capability and its notification capabilities). Timestamps
//!   are `0..=2`, totally ordered; every path summary is the identity.
//! - **Workers**: two initial workers (worker 0 is the bootstrap server) and one joiner. Every
//!   worker counts the implicit initial capabilities `+2` (the peers the dataflow was built
//!   for) at time 0 of each operator output. Local steps: the input advances its epoch (`+1`
//!   new, `-1` old in one batch), closes, or sends a data message at its epoch to any
//!   connected worker; the consumer takes a message (`-1` message, `+1` notification
//!   capability), is notified at `t` once its worker's frontier at its input passed `t`, and
//!   drops its initial capability. Each step ends by sending its batch (per-sender sequence
//!   numbers) to every worker, itself included.
//! - **Channels** are FIFO per (sender, receiver) and arbitrarily delayed; across senders any
//!   order. Data messages are a multiset per receiver (consumed in any order: more behaviours
//!   than FIFO).
//! - **The join**, per the contract: the server handles it at a moment of its choice, with the
//!   batches it has applied (`r`): the joiner's view starts as the server's view and the
//!   server announces `+1` at the times of the capabilities its own operators hold, in a batch
//!   of its own, the joiner starting with capabilities at those times. Each initial worker
//!   back-fills at a moment of its choice, before or after that, sending `s[v]` (from then on
//!   it can send data to the joiner). The joiner applies, per sender and in order, the range
//!   `[r, s)` (served once the server has received it all) and then the direct batches,
//!   dropping those below `r`; it bootstraps once every range and the announcement are
//!   applied, and only then runs its operators (its input can then send data and must be
//!   closed, its handed-over capabilities released).
//!
//! # Properties, in every reachable state
//!
//! - **Frontier**: for each running worker and location, the frontier its view gives is not
//!   later than any pointstamp held anywhere (capabilities held, messages not consumed) that
//!   can reach the location. Notifications are checked as events as well: none at `t` while
//!   a pointstamp at or before `t` can reach the consumer's input.
//! - **Accounting**: initial counts plus every batch sent equal what is truly held.
//! - **PrefixView**: every view (the joiner's from its bootstrap on) is the initial counts plus
//!   a prefix of each sender's batches: none applied twice, none skipped.
//! - **Deadlock**: a state where nothing can happen is complete: joiner bootstrapped, every
//!   capability released, every message consumed, every batch applied.
//!
//! # Abstractions, and why they are sound
//!
//! - One step, one batch: the engine may fold several steps into a batch, which only removes
//!   intermediate views (a folded batch applied is the same as its steps' batches applied in a
//!   row), so its behaviours are a subset of the model's.
//! - The initial workers apply batches lazily (`views`): a state stands for every view between
//!   what the worker certainly applied and what was sent to it, the properties are checked on
//!   all of them, and a step that reads the view (a notification, the server's snapshot, a
//!   range it serves) commits to one. Applying a batch commutes with every other worker's
//!   steps, so this is a partial-order reduction that keeps every reachable view.
//! - The server's request/response for ranges is folded into the joiner's applying the range
//!   (committing the server's receipt of it): a delayed response is the joiner applying later.
//! - One joiner, one operator of each kind, bounded work: scenarios bound the epochs and the
//!   data messages per worker, and some start after the consumers dropped their initial
//!   capabilities (a reachable state). Each scenario is exhaustive within its bounds; bugs
//!   that need more work than that are out of reach, and the bounds are chosen so each check
//!   runs in seconds.
//! - The visited set stores 64-bit fingerprints (`model_support::explorer`); a collision could
//!   hide a state with probability below one in a million at these sizes.
//!
//! # What the model found
//!
//! The contract as written lets a joiner's release overtake the server's announcement at a
//! third worker: the joiner, once bootstrapped, downgrades its capability (`-1` at `t` in its
//! own batch) and another worker applies that batch before the server's announcement (`+1` at
//! `t`, a different sender, so no order between them). Its count at `t` then reaches zero
//! while the server still holds its capability at `t`, and its frontier passes `t`
//! (`the_contract_as_written_lets_a_joiners_release_overtake_the_announcement`). The fix this
//! model checks: every worker applies the server's announcement batch before any batch of the
//! joiner (`Config::barrier`); with it, every scenario holds.

mod actions;
mod join;
mod model;
mod properties;
mod views;

use crate::model_support::dataflow::Step;
use crate::model_support::explorer::{self, Model, Report};
use actions::{apply, enabled, Action, Bug, Config};
use model::State;
use properties::{check_state, check_terminal, Property, Violation};

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
        check_terminal(state)
    }
}

/// Both consumers drop their initial capabilities first.
const DROPPED: &[Action] = &[Action::Local(Step::DropHeld(0)), Action::Local(Step::DropHeld(1))];

/// A scenario: the protocol with the barrier, no bug, and the given bounds.
fn scenario(sends: [u8; 3], last_epoch: u8, prelude: &'static [Action]) -> Config {
    Config { barrier: true, bug: None, sends, last_epoch, prelude }
}

/// The scenario's start: the initial state after its prelude.
fn start(config: &Config) -> State {
    explorer::start(config, State::initial(config.sends), config.prelude)
}

/// Explores a scenario that must hold everywhere, and checks that it was explored completely.
fn holds(config: Config, at_least: usize) {
    explorer::holds(&config, start(&config), at_least);
}

/// Explores a variant that must fail, and checks which property it breaks.
fn fails(config: Config, expected: &[Property]) -> Report<Config> {
    explorer::fails(&config, start(&config), expected)
}

#[test]
fn the_contract_as_written_lets_a_joiners_release_overtake_the_announcement() {
    let report = fails(Config { barrier: false, ..scenario([0, 0, 0], 2, &[]) }, &[Property::Frontier]);
    let (_, steps) = report.violation.as_ref().expect("a violation");
    assert!(steps.iter().any(|(action, _)| *action == Action::Bootstrap), "the joiner ran");
}

#[test]
fn handover_of_the_input_and_the_consumers_initial_capabilities() {
    holds(scenario([0, 0, 0], 1, &[]), 1_000_000);
}

#[test]
fn three_epochs_without_data() {
    holds(scenario([0, 0, 0], 2, DROPPED), 300_000);
}

#[test]
fn a_joiner_feeds_data() {
    holds(scenario([0, 0, 1], 1, DROPPED), 500_000);
}

#[test]
fn data_to_and_from_the_joiner_at_one_epoch() {
    holds(scenario([0, 1, 1], 0, DROPPED), 500_000);
}

#[test]
fn the_server_sends_data_across_the_join() {
    holds(scenario([1, 0, 0], 0, DROPPED), 50_000);
}

#[test]
fn keeping_direct_batches_below_r_is_caught() {
    let config = Config { bug: Some(Bug::KeepsBatchesBelowR), ..scenario([0, 0, 0], 2, DROPPED) };
    fails(config, &[Property::PrefixView, Property::Frontier]);
}

#[test]
fn announcing_at_the_servers_view_instead_of_its_own_capability_is_caught() {
    let config = Config { bug: Some(Bug::AnnouncesFromView), ..scenario([0, 0, 0], 2, DROPPED) };
    fails(config, &[Property::Frontier]);
}

#[test]
fn running_before_the_ranges_arrived_is_caught() {
    let config = Config { bug: Some(Bug::RunsBeforeRanges), ..scenario([0, 1, 0], 0, DROPPED) };
    fails(config, &[Property::Frontier, Property::EarlyNotification]);
}

#[test]
fn announcing_after_the_server_released_its_capability_is_caught() {
    let config = Config { bug: Some(Bug::AnnouncesLate), ..scenario([0, 0, 0], 2, DROPPED) };
    fails(config, &[Property::Frontier]);
}

//! A model checker for the rule that keeps a join and a leave from overlapping.
//!
//! `docs/rescaling.md` ("Joins and leaves at the same time") is the contract; this test
//! explores every reachable state of a small model of it, independently of the engine's code
//! (`membership_gate.rs`, `join_answer.rs`, `Worker::leave`), and checks that a joiner is
//! never admitted by one member and withdrawn from by another, that no process starts its
//! leave while a joiner some member admitted has not finished its bootstrap there, and that
//! every run ends complete. Run it with
//!
//! ```text
//! cargo test --release -p timely-engine --test suite -- admission_model:: --nocapture
//! ```
//!
//! which prints, per scenario, the states and transitions explored and, for the variants that
//! must fail, the shortest trace to the violation.
//!
//! # The model
//!
//! - **Processes**: two or three initial members and one joiner (process 3). Any one or two
//!   members ask to leave, each at a moment of its choice; the joiner starts at a moment of
//!   its choice, before, during or after a leave, dialing every member it was not told had
//!   left (told of those that have gone, as the launcher's `--gone`, or of none).
//! - **Channels** are FIFO per (sender, receiver), arbitrarily delayed, in any order across
//!   senders. A message to a process that has gone is lost; a hello to one fails the
//!   joiner's connection (the joiner sees that member as unreachable).
//! - **A member's gate**, at the joiner's hello, under one lock: refused, naming the leaves
//!   it knows of (its own from its start, another's from its notice until its goodbye);
//!   otherwise ready, naming the processes it knows have gone, and the joiner reserved until
//!   its `Admit` or `Withdraw` arrives. From `Admit` until the joiner's `Done` the member's
//!   workers know of a join in progress.
//! - **The joiner**, once every dialed member's view is in, admits at every member if all are
//!   ready and name no process it was not told of, and otherwise withdraws from every member
//!   with the reason (leaving, untold, unreachable). An admitted joiner bootstraps at a moment
//!   of its choice and sends `Done` to the members; from then on it is a member, answering
//!   notices.
//! - **A leave**: asked for at any moment and started once its check passes (nothing reserved,
//!   no admitted joiner without `Done`), check and start in one step (the gate's lock); until
//!   then it waits (the engine asks again at each step). Its start seals the peers the leaver
//!   knows (the members it has no goodbye from, the joiner once admitted there) and sends each
//!   a notice; each answers with a marker (a goodbye counts as one); with every answer in, it
//!   sends its goodbye to each and goes. Two leaves may run at once.
//!
//! # Properties
//!
//! - **Split**, in every state: the joiner's decision is the same towards every member.
//! - **Overlap**, in every state: while any member admitted the joiner, no member the joiner
//!   dialed has started its leave without the joiner's `Done` (the joiner would act as a member
//!   towards a leaver that sealed it without it, or before it could take part in the leave).
//! - **Incomplete**, in every state where nothing can happen: the join admitted everywhere
//!   and bootstrapped, or withdrawn from everywhere with its reason; no reservation left;
//!   every leave asked for departed, and known as gone by every process still present.
//!
//! # Abstractions, and why they are sound
//!
//! - One worker per process: the engine's per-worker records of a join in progress are one
//!   record here; every worker of a process checks its own before the process's leave starts,
//!   so the process's leave waits for the last of them, as here.
//! - The leave is its membership part only (notice, marker, goodbye); its progress part is
//!   `leave_model`'s, the join's bootstrap `bootstrap_model`'s, each modelled without the
//!   other, which is what this rule makes sound.
//! - A joiner that joins nowhere ends; its retries (the launcher's, with `--gone`
//!   recomputed) are new joins from a later state, which the scenarios' other orders cover.
//!
//! # What the model found
//!
//! Nothing in the rule as written; the argument "Why no joiner is told of a leaving member"
//! holds in every scenario, and the shortcut it mentions (only the leaver refusing) holds
//! too. Five broken variants are caught, each with the property it breaks.

mod actions;
mod model;
mod properties;

use crate::model_support::explorer::{self, Report};
use actions::{Action, Bug, Config};
use model::{bit, Set, State};
use properties::Property;

/// A scenario under the engine's rule: `members` initial members, `leavers` asking to leave.
fn scenario(members: usize, leavers: Set, told_gone: bool) -> Config {
    Config {
        members,
        leavers,
        told_gone,
        members_refuse_known_leaves: true,
        bug: None,
        outcomes: Default::default(),
        waiting: Default::default(),
    }
}

/// Explores a scenario that must hold everywhere, completely, and reach both outcomes of the
/// join (admitted, and withdrawn because of a leave) and a leave waiting for the join.
fn holds(config: Config, at_least: usize) -> Report<Config> {
    let report = explorer::holds(&config, State::initial(), at_least);
    let [admitted, withdrawn] = [0, 1].map(|outcome| config.outcomes[outcome].get());
    let waiting = config.waiting.get();
    println!(
        "terminal states: {admitted} with the joiner admitted, {withdrawn} withdrawn; \
         {waiting} states with a leave waiting for the join"
    );
    assert!(admitted > 0 && withdrawn > 0, "both outcomes of the join are reachable");
    assert!(waiting > 0, "a leave waits for the join somewhere");
    report
}

/// Explores a broken variant, which must break `expected`.
fn fails(config: Config, expected: Property) -> Report<Config> {
    explorer::fails(&config, State::initial(), &[expected])
}

fn broken(bug: Bug, members: usize, leavers: Set) -> Config {
    Config { bug: Some(bug), ..scenario(members, leavers, true) }
}

#[test]
fn one_of_two_members_leaves_around_the_join() {
    holds(scenario(2, bit(1), true), 200);
}

#[test]
fn member_0_of_two_leaves_and_the_joiner_is_told_of_nothing() {
    holds(scenario(2, bit(0), false), 200);
}

#[test]
fn one_of_three_members_leaves_around_the_join() {
    holds(scenario(3, bit(2), true), 2_000);
}

#[test]
fn two_of_three_members_leave_around_the_join() {
    holds(scenario(3, bit(1) | bit(2), true), 150_000);
}

#[test]
fn two_of_three_members_leave_and_the_joiner_is_told_of_nothing() {
    holds(scenario(3, bit(0) | bit(2), false), 150_000);
}

#[test]
fn only_the_leaver_refusing_still_keeps_joins_and_leaves_apart() {
    let config = Config { members_refuse_known_leaves: false, ..scenario(3, bit(1) | bit(2), true) };
    holds(config, 35_000);
}

#[test]
fn a_member_that_does_not_reserve_the_joiner_is_caught() {
    fails(broken(Bug::NoReserve, 3, bit(2)), Property::Overlap);
}

#[test]
fn a_view_offered_between_the_leaves_check_and_its_start_is_caught() {
    let report = fails(broken(Bug::CheckApartFromStart, 3, bit(2)), Property::Overlap);
    let (_, steps) = report.violation.as_ref().expect("a violation");
    let checked = steps.iter().position(|(action, _)| matches!(action, Action::Check(2)));
    let started = steps.iter().position(|(action, _)| matches!(action, Action::Start(2)));
    let offered = steps.iter().position(|(action, _)| *action == Action::Deliver { from: 3, to: 2 });
    assert!(checked < offered && offered < started, "the view is offered in between");
}

#[test]
fn a_joiner_that_admits_where_ready_despite_a_refusal_is_caught() {
    fails(broken(Bug::AdmitWhereReady, 3, bit(2)), Property::Split);
}

#[test]
fn a_leave_that_ignores_an_admitted_joiner_without_done_is_caught() {
    fails(broken(Bug::LeaveIgnoresUnfinishedJoiner, 2, bit(1)), Property::Overlap);
}

#[test]
fn a_leaver_that_offers_its_view_is_caught() {
    fails(broken(Bug::LeaverOffers, 3, bit(2)), Property::Overlap);
}

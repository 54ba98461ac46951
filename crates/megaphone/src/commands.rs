//! Operator C: hands every command to the F of every worker, remembers what it sent, and
//! announces its worker's leave.
//!
//! Commands enter on any worker; C sends each to every worker it knows that has not left (a
//! broadcast by target worker), and records what it sent in the routing state, so that K can
//! hand it to a worker that joins later and missed it. C rejects a command that names a worker
//! it does not know: only workers that know a joined worker may move bins to it, so that every
//! move to a joined worker reaches it directly, with the capability it needs to ship the bin on
//! later.
//!
//! In a cluster that can rescale, C also holds a capability at the commands' frontier (at F's
//! data frontier once the commands ended). When its worker's process leaves, C sends a
//! [`Leave`] at its cutoff with it (`leaving`), then lets it go; commands after a worker's
//! cutoff no longer go to that worker.

use crate::codec::Routed;
use crate::error::MegaphoneError;
use crate::leaving::{Leave, Leaving};
use crate::routing::Routing;
use crate::table::Command;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::rc::Rc;
use timely_engine::dataflow::operators::{Capability, OperatorBuilder};
use timely_engine::dataflow::{Pipeline, Stream};
use timely_engine::scheduling::Activator;

/// What C hands to every F: a program's command, or a worker's leave.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Update {
    /// A command from the control stream.
    Command(Command),
    /// A worker's leave, at its cutoff.
    Leave(Leave),
}

/// Builds C for the keyed operator `name` over the user's `commands`; returns its output and
/// its activator (F wakes it when its data frontier moves).
pub fn spread_commands(
    name: &str,
    commands: &Stream<u64, Command>,
    routing: Rc<RefCell<Routing>>,
    leaving: Rc<Leaving>,
) -> (Stream<u64, Routed<Update>>, Rc<Activator>) {
    let scope = commands.scope();
    let mut builder = OperatorBuilder::new(&format!("{name}.C"), scope);
    let mut input = builder.new_input(commands, Pipeline);
    let (mut output, stream) = builder.new_output();
    let worker = scope.worker().clone();
    let activator = Rc::new(builder.info().activator.clone());
    worker.rescaling().leaves().wake_on_change(&activator);
    let returned = activator.clone();
    let follow = worker.allocator().can_rescale();
    let threads = worker.allocator().threads();
    let name = name.to_owned();
    builder.build(move |capability| {
        // A worker that builds the operator during its own leave takes no part: it announces
        // at once that it is absent, for the workers that built it before they saw the leave.
        let takes_part = leaving.takes_part(worker.index());
        let mut held: Option<Capability<u64>> = (follow && !capability.is_detached()).then_some(capability);
        move |frontiers| {
            // The engine holds only a weak reference: this closure keeps the activator alive.
            let _wake_on_change = &activator;
            let peers = worker.peers();
            let targets = worker.rescaling().leaves().not_gone(peers);
            input.for_each(|capability, commands| {
                if let Some(&Command::Move { worker: named, .. }) =
                    commands.iter().find(|Command::Move { worker, .. }| *worker >= peers)
                {
                    let error = MegaphoneError::NoSuchWorker { worker: named, peers };
                    panic!(
                        "megaphone operator {name}: {error} (as far as worker {} knows: name a worker that joined from a worker that has seen the join)",
                        worker.index()
                    );
                }
                let time = *capability.time();
                let mut session = output.session(&capability);
                for &target in targets.iter().filter(|&&target| leaving.sends_to(target, time)) {
                    session.give_iterator(
                        commands.iter().map(|&command| Routed { target, record: Update::Command(command) }),
                    );
                }
                routing.borrow_mut().record_sent(time, commands.drain(..));
            });
            if let Some(capability) = held.as_mut() {
                if worker.rescaling().leaves().is_leaving() {
                    // Absent, its C still holds the operator's first time (it never followed).
                    let cutoff = if takes_part { leaving.choose_cutoff(*capability.time()) } else { *capability.time() };
                    let me = worker.index();
                    let first = me / threads * threads;
                    let leave = Leave { worker: me, first, count: threads, peers, absent: !takes_part };
                    if takes_part {
                        leaving.record(cutoff, &leave);
                    }
                    // Every worker hears of every leave, other leavers too: each learns the
                    // others' cutoffs, which tell it when it may seal them.
                    let at = capability.delayed(&cutoff);
                    let mut session = output.session(&at);
                    for &target in targets.iter().filter(|&&target| leaving.takes_part(target)) {
                        session.give(Routed { target, record: Update::Leave(leave) });
                    }
                    held = None;
                } else {
                    // Follow the commands, or F's data once the commands ended.
                    let follow = frontiers[0].frontier().first().copied().or_else(|| leaving.data_frontier());
                    match follow {
                        Some(time) if time > *capability.time() => capability.downgrade(&time),
                        Some(_) => {}
                        None => held = None,
                    }
                }
            }
            let commands_from = frontiers[0].frontier().first().copied();
            let held_at = held.as_ref().map(|capability| *capability.time());
            leaving.set_commands_from(commands_from.into_iter().chain(held_at).min());
            false
        }
    });
    (stream, returned)
}

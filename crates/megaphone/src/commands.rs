//! Operator C: hands every command to the F of every worker, and remembers what it sent.
//!
//! Commands enter on any worker; C sends each to every worker it knows (a broadcast by target
//! worker), and records what it sent in the routing state, so that K can hand it to a worker
//! that joins later and missed it. C rejects a command that names a worker it does not know:
//! only workers that know a joined worker may move bins to it, so that every move to a joined
//! worker reaches it directly, with the capability it needs to ship the bin on later.

use crate::codec::Routed;
use crate::error::MegaphoneError;
use crate::routing::Routing;
use crate::table::Command;
use std::cell::RefCell;
use std::rc::Rc;
use timely_engine::dataflow::operators::OperatorBuilder;
use timely_engine::dataflow::{Pipeline, Stream};

/// Builds C for the keyed operator `name` over the user's `commands`.
pub fn spread_commands(
    name: &str,
    commands: &Stream<u64, Command>,
    routing: Rc<RefCell<Routing>>,
) -> Stream<u64, Routed<Command>> {
    let mut builder = OperatorBuilder::new(&format!("{name}.C"), commands.scope());
    let mut input = builder.new_input(commands, Pipeline);
    let (mut output, stream) = builder.new_output();
    let worker = commands.scope().worker().clone();
    let name = name.to_owned();
    builder.build_logic(move |_frontiers| {
        let peers = worker.peers();
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
            let mut session = output.session(&capability);
            for target in 0..peers {
                session.give_iterator(commands.iter().map(|&record| Routed { target, record }));
            }
            routing.borrow_mut().record_sent(*capability.time(), commands.drain(..));
        });
        false
    });
    stream
}

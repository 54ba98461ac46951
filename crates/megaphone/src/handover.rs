//! Operator K: hands this worker's part of the routing state to every worker that joins.
//!
//! The seed's section 3.5.2 has the bootstrap server send its routing state to a new worker
//! when the controller sends a Bootstrap command. One worker's view can miss commands: a
//! worker that had not seen the join yet sent its commands only to the workers it knew, and
//! those may still be on their way to the server when it answers. So every worker that was
//! there before the join sends its part, as soon as it sees the join (the engine wakes K then,
//! [`timely_engine::rescale::Rescaling::wake_on_join`]): its base table and pending commands,
//! and every command its command operator sent before it knew the new worker. A command sent
//! after the sender saw the join reaches the new worker directly. The new worker assembles
//! the parts (`routing`); no controller has to remember a Bootstrap command.
//!
//! K holds a capability until no record or command can reach F any more (F tells it through
//! [`Routing::finish`]) or its worker leaves; its output reaches F on an input that no output of F depends on, so
//! the capability holds nothing else back. This module owns K; the parts are `routing`'s.

use crate::routing::{Routing, RoutingState};
use std::cell::RefCell;
use std::rc::Rc;
use timely_engine::dataflow::operators::OperatorBuilder;
use timely_engine::dataflow::{Scope, Stream};
use timely_engine::scheduling::Activator;

/// Builds K for the keyed operator `name`; returns its output and its activator (which F
/// uses once the routing state is no longer needed).
pub fn handover(
    name: &str,
    scope: &Scope<u64>,
    routing: Rc<RefCell<Routing>>,
) -> (Stream<u64, RoutingState>, Activator) {
    let mut builder = OperatorBuilder::new(&format!("{name}.K"), scope);
    let (mut output, stream) = builder.new_output();
    let worker = scope.worker().clone();
    let activator = Rc::new(builder.info().activator.clone());
    worker.rescaling().wake_on_join(&activator);
    worker.rescaling().leaves().wake_on_change(&activator);
    let returned = (*activator).clone();
    builder.build(move |capability| {
        let mut capability = (!capability.is_detached()).then_some(capability);
        let mut told = worker.peers();
        move |_frontiers| {
            // The engine holds only a weak reference: this closure keeps the activator alive.
            let _wake_on_join = &activator;
            let routing = routing.borrow();
            if routing.is_finished() {
                capability = None;
            }
            if let Some(capability) = &capability {
                let mut session = output.session(capability);
                for target in told..worker.peers() {
                    session.give(routing.part_for(worker.index(), target));
                }
            }
            told = worker.peers();
            // A leaving worker serves no later join (one membership change happens at a time),
            // but those it admitted before get its part first.
            if worker.rescaling().leaves().is_leaving() {
                capability = None;
            }
            false
        }
    });
    (stream, returned)
}

//! The dispatch of rescaling events at the start of each step: joins to admit, departures,
//! and the messages of the bootstrap channel, each handed to its side of the protocol
//! (`server`, `client`, `leave`, `stranded`).
//!
//! In steady state a step costs it a few loads: [`handle`] pulls the bootstrap channel only
//! after the worker reported an arrival on it (`Rescaling::notice`), or while this worker is
//! still bootstrapping, and runs the server side only while a join is pending or a welcome or
//! range request waits.
//!
//! Messages travel in an [`Envelope`] naming the sending worker, which the cluster allocator
//! checks against the connection; [`handle_events`] hands each handler that sender, and a
//! message the protocol state does not allow ends the run naming the sender's process
//! (`stop_for_violation`), as an invalid progress batch does.

use super::messages::{BootstrapMessage, Envelope};
use super::phases::{self, phase};
use super::{client, leave, server, stranded};
use crate::cluster_failure::{stop_for_configuration, stop_for_violation};
use crate::worker::WorkerState;

/// True when [`handle`] has something to take in: a message on the bootstrap channel, a join
/// or a departure (a parked worker would not wake for what already arrived).
#[inline]
pub(crate) fn has_arrivals(state: &WorkerState) -> bool {
    if state.rescaling().arrived.get() {
        return true;
    }
    let allocator = state.allocator();
    allocator.has_joins() || allocator.has_departures()
}

/// Handles joins and bootstrap messages; called at the start of every step. Inlined: in
/// steady state it only finds that there is nothing to do.
#[inline]
pub(crate) fn handle(state: &WorkerState) {
    let (has_joins, has_departures) = {
        let allocator = state.allocator();
        (allocator.has_joins(), allocator.has_departures())
    };
    if has_joins || has_departures || !state.rescaling().is_quiet() {
        handle_events(state, has_joins);
    }
}

/// Admits joins (`has_joins`), takes in bootstrap messages and serves joining workers.
#[inline(never)]
pub(crate) fn handle_events(state: &WorkerState, has_joins: bool) {
    let rescaling = state.rescaling();
    if has_joins {
        phase(state, phases::BACKFILL, || {
            let joins = state.allocator().take_joins();
            joins.into_iter().for_each(|workers| server::admit(state, workers));
        });
        rescaling.wake_join_watchers();
        rescaling.leaves.changed();
    }
    // A departure arrives after everything its process sent, its `Left` included: both are
    // taken in by this call, before any dataflow is built again.
    let departed = state.allocator().take_departures();
    if !departed.is_empty() {
        leave::departed(state, departed);
    }
    loop {
        let envelope = rescaling.puller.borrow_mut().recv();
        let Some(Envelope { from, message }) = envelope else { break };
        // The allocator checked, for a message of another process, that `from` is a worker of
        // the process at the other end of the connection, and that the message names no
        // other sender: every check below can blame `from`'s process.
        let checked = match message {
            BootstrapMessage::Hello { .. } => server::hello(state, from),
            BootstrapMessage::Range { channel, sender, start, end, .. } => {
                server::range(state, from, channel, sender, start, end)
            }
            BootstrapMessage::Done { .. } => server::done(state, from),
            BootstrapMessage::Serving { joiner, .. } => server::serving(state, from, joiner),
            BootstrapMessage::Leaving { .. } => leave::notice_from(state, from),
            BootstrapMessage::Sealed { .. } => leave::sealed(rescaling, from),
            BootstrapMessage::Left { dataflows, .. } => leave::left(state, from, dataflows),
            BootstrapMessage::Stranded { channels, kept, .. } => {
                stranded::received(state, from, &channels, &kept)
            }
            BootstrapMessage::Forwarded { channel, source, bytes, .. } => {
                stranded::forwarded(state, from, channel, source, bytes)
            }
            BootstrapMessage::Drained { .. } => leave::drained_from(state, from),
            BootstrapMessage::Released { .. } => leave::released(rescaling, from),
            BootstrapMessage::BuiltAtNotice { dataflows, .. } => {
                leave::built_at_notice(rescaling, from, dataflows)
            }
            other => match client::receive(state, from, other) {
                Err(client::ClientError::Departed(mismatch)) => stop_for_configuration(&mismatch),
                Err(client::ClientError::Protocol(reason)) => Err(reason),
                Ok(()) => Ok(()),
            },
        };
        if let Err(reason) = checked {
            stop_for_violation(&rescaling.violations, from, &format!("worker {from} {reason}"));
        }
    }
    server::serve(state);
    if rescaling.leaves.seals_pending() {
        leave::seal(state);
    }
}

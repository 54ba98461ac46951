//! Messages stranded on a leaver: what reached a leaving worker on channels of dataflows it
//! never built (`docs/rescaling.md`, "Dataflows the leaver never builds that others built
//! before its notice").
//!
//! A worker that builds a dataflow before it sees a leave's notice counts the leaver in, and
//! its plain exchanges and broadcasts may send the leaver records there at once (and its keyed
//! exchanges their membership announcements, Megaphone operators their commands). If the
//! leaver never builds that dataflow, nothing of its own ever takes them, and each is counted
//! as in flight by every worker. So the drained leaver, which receives nothing more, hands
//! them to one worker that stays ([`report`]): the lowest-index member it knows, the same
//! for all its messages. That worker gives each to its own instance of the channel, which
//! takes the records of data exchanges as its own and retires the counts of copies
//! (`dataflow::forwarded`); so every message is counted as received exactly once, by it.
//! The leaver also tells every other worker not gone which channels it forwarded and which it
//! could not (messages another worker of its own process sent it, which wait as elements, not
//! bytes); a stayer that built a dataflow with a data channel among the latter, or among the
//! former one whose edge cannot place them, stops the run with an error naming the dataflow,
//! the channel and both workers ([`received`]). Progress channels on the lists are harmless
//! (progress batches count nothing). This module must not decide how a run stops, only that
//! this one must.

use super::forward_inbox::Stranded;
use super::messages::BootstrapMessage;
use super::violation::ProtocolViolation;
use crate::cluster_failure::stop_for_program;
use crate::worker::WorkerState;

/// On a drained leaving worker, which receives nothing more: hands what it received on
/// channels it never built (and what other leavers forwarded it there) to the lowest-index
/// worker present, then tells every other worker not gone which channels it forwarded and
/// which it could not.
pub(crate) fn report(state: &WorkerState) {
    let channels = state.unclaimed_channels();
    let pending = state.take_pending_forwarded();
    if channels.is_empty() && pending.is_empty() {
        return;
    }
    let rescaling = state.rescaling();
    let me = state.index();
    let target = state.members().first().copied();
    let (mut forwarded, mut kept) = (Vec::new(), Vec::new());
    let mut messages = Vec::new();
    for channel in channels {
        if target.is_none() || state.allocator().allocated_locally_by_another(channel) {
            kept.push(channel);
            continue;
        }
        match state.allocator().take_early(channel) {
            Ok(taken) => {
                forwarded.push(channel);
                messages.extend(taken.into_iter().map(|(source, bytes)| (channel, source, bytes)));
            }
            // Its spill file cannot be read back: what it held stays stranded.
            Err(_) => kept.push(channel),
        }
    }
    for (channel, list) in pending {
        if !forwarded.contains(&channel) {
            forwarded.push(channel);
        }
        messages.extend(list.into_iter().map(|(_, source, bytes)| (channel, source, bytes)));
    }
    if let Some(target) = target {
        for (channel, source, bytes) in messages {
            rescaling.send(target, BootstrapMessage::Forwarded { from: me, channel, source, bytes });
        }
    }
    let departed = rescaling.leaves().departed();
    for worker in (0..state.peers()).filter(|w| *w != me && !departed.contains(w)) {
        let (channels, kept) = (forwarded.clone(), kept.clone());
        rescaling.send(worker, BootstrapMessage::Stranded { from: me, channels, kept });
    }
}

/// Leaving worker `from` forwarded the message `bytes` that worker `source` had sent it on
/// channel `channel`: this worker takes it in for its instance of the channel.
///
/// # Errors
///
/// `from` is not a worker whose leave this worker knows of, or `source` is no worker.
pub(crate) fn forwarded(
    state: &WorkerState,
    from: usize,
    channel: usize,
    source: usize,
    bytes: Vec<u8>,
) -> Result<(), ProtocolViolation> {
    let leaves = state.rescaling().leaves();
    if !leaves.leaving().contains(&from) && !leaves.departed().contains(&from) {
        return Err(ProtocolViolation::ForwardedNotLeaving);
    }
    if source >= state.peers() {
        return Err(ProtocolViolation::ForwardedUnknownSource { source_worker: source });
    }
    if leaves.is_drained() {
        // This worker left too and handed on what it held already: nothing could take it.
        unplaceable(state, from, channel);
    }
    state.take_forwarded(channel, (from, source, bytes));
    Ok(())
}

/// Leaving worker `from` forwarded the messages it received on `channels` and could not
/// forward those it received on `kept` (channels of dataflows it never built). Stops the run
/// if a data channel of a dataflow this worker built that has not completed is among `kept`,
/// or among `channels` and its edge cannot place them.
///
/// # Errors
///
/// `from` is not a worker whose leave this worker knows of.
pub(crate) fn received(
    state: &WorkerState,
    from: usize,
    channels: &[usize],
    kept: &[usize],
) -> Result<(), ProtocolViolation> {
    let leaves = state.rescaling().leaves();
    if !leaves.leaving().contains(&from) && !leaves.departed().contains(&from) {
        return Err(ProtocolViolation::StrandedNotLeaving);
    }
    let placeable =
        |channel: &usize| matches!(state.stranded_kind(*channel), Some(Stranded::Forward | Stranded::Retire));
    let unplaced = kept.iter().chain(channels.iter().filter(|channel| !placeable(channel)));
    if let Some(&channel) =
        unplaced.into_iter().find(|&&channel| state.live_dataflow_of_data_channel(channel).is_some())
    {
        unplaceable(state, from, channel);
    }
    Ok(())
}

/// Stops the run: leaver `from` received messages on channel `channel` that no worker can
/// take (of a dataflow it never built).
pub(crate) fn unplaceable(state: &WorkerState, from: usize, channel: usize) -> ! {
    let me = state.index();
    let dataflow = match state.live_dataflow_of_data_channel(channel) {
        Some(dataflow) => format!("dataflow {dataflow}"),
        None => "a dataflow".to_owned(),
    };
    stop_for_program(&format!(
        "{dataflow} cannot complete: worker {from} left the cluster without ever building it, \
         but workers that built it before they saw the leave (worker {me} among them) had sent it \
         messages there (on channel {channel}) that no worker that stays can take in its place: records of \
         an edge that is neither an exchange nor a broadcast (Megaphone's bin states), messages \
         another worker of the leaver's process sent it, or messages forwarded to a worker that \
         left too. Build the dataflow on every worker before the leave is asked for and on the \
         leaver too, or only after the leave's notice (docs/rescaling.md, \"Dataflows the leaver \
         never builds that others built before its notice\")"
    ));
}

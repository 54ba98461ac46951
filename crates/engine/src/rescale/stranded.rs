//! Records stranded on a leaver: messages that reached a leaving worker on channels of
//! dataflows it never built (`docs/rescaling.md`, "Dataflows built during a leave").
//!
//! A worker that builds a dataflow before it sees a leave's notice counts the leaver in, and
//! its plain exchanges and broadcasts may send the leaver records there at once (and its keyed
//! exchanges their membership announcements, Megaphone operators their commands). If the
//! leaver never builds that dataflow, nothing ever takes them: each is counted as in flight by every
//! worker, so the dataflow could never complete. Rather than let the run hang, the drained
//! leaver lists the channels on which it received messages it never took ([`report`]), and a
//! stayer that built a dataflow with a data channel among them stops the run with an error
//! naming the dataflow, the channel and both workers ([`received`]). Progress channels of
//! dataflows the leaver never built are on the list too and harmless (progress batches are
//! not counted). This module must not decide how a run stops, only that this one must.

use super::messages::BootstrapMessage;
use crate::cluster_failure::stop_for_program;
use crate::worker::WorkerState;

/// On a drained leaving worker: tells every other worker not gone the channels on which it
/// received messages that it never took, if there are any.
pub(crate) fn report(state: &WorkerState) {
    let channels = state.unclaimed_channels();
    if channels.is_empty() {
        return;
    }
    let rescaling = state.rescaling();
    let me = state.index();
    let departed = rescaling.leaves().departed();
    for worker in (0..state.peers()).filter(|w| *w != me && !departed.contains(w)) {
        rescaling.send(worker, BootstrapMessage::Stranded { from: me, channels: channels.clone() });
    }
}

/// Leaving worker `from` received messages on `channels` that it never took. Stops the run if
/// one of them is a data channel of a dataflow this worker built that has not completed.
///
/// # Errors
///
/// `from` is not a worker whose leave this worker knows of.
pub(crate) fn received(state: &WorkerState, from: usize, channels: &[usize]) -> Result<(), String> {
    let leaves = state.rescaling().leaves();
    if !leaves.leaving().contains(&from) && !leaves.departed().contains(&from) {
        return Err("listed channels of dataflows it never built, but it is not leaving".into());
    }
    let stranded =
        channels.iter().find_map(|&channel| Some((channel, state.live_dataflow_of_data_channel(channel)?)));
    if let Some((channel, dataflow)) = stranded {
        let me = state.index();
        stop_for_program(&format!(
            "dataflow {dataflow} cannot complete: worker {from} left the cluster without ever building it, \
             but workers that built it before they saw the leave (worker {me} among them) had sent it \
             messages there (records of an exchange or a broadcast, a keyed exchange's membership \
             announcements or Megaphone's commands, on channel {channel}), which nothing can take. Build \
             the dataflow on every worker before the leave is asked for and on the leaver too, or only \
             after the leave's notice (docs/rescaling.md, \"Dataflows built during a leave\")"
        ));
    }
    Ok(())
}

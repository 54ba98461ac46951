//! The model's state: workers, the progress batches they sent, and the leave in progress.
//!
//! This module owns the data of one state and the pure functions over it that the actions and
//! the properties share: who is still a member, which of a sender's batches reach a receiver,
//! the views a worker may hold. The dataflow's counts, logs and workers are
//! `model_support::dataflow`'s; the second dataflow's, built during the leave, is `second`'s.
//! It does not decide which actions are enabled (`actions`) nor
//! what must hold (`properties`).

use std::fmt;

use crate::model_support::dataflow::{self, Counts, Log, Worker, WORKERS};
use crate::model_support::views::{extensions, View};

use super::second::Second;

/// A stayer's record of a leaver it forgot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Forgot {
    /// It applies the leaver's batches below `end` and drops the rest.
    pub end: u8,
    /// Its own batches from `stop` on no longer go to the leaver; kept only while the leaver is
    /// still a member (then they are lost), `None` once it has gone.
    pub stop: Option<u8>,
}

/// The leave in progress.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Leave {
    /// The workers that handled the notice, one bit per worker.
    pub noticed: u8,
    /// Per leaver that said goodbye: the sequence number its goodbye carries.
    pub goodbye: [Option<u8>; WORKERS],
    /// `forgot[v][l]`: stayer `v` forgot leaver `l`.
    pub forgot: [[Option<Forgot>; WORKERS]; WORKERS],
}

/// A complete state of the model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// The workers the dataflow was built for (`0..peers`); every worker counts their
    /// implicit initial capabilities.
    pub peers: u8,
    /// The workers still present, one bit per worker: a leaver stops being one at its goodbye.
    pub members: u8,
    pub workers: [Worker; WORKERS],
    pub logs: [Log; WORKERS],
    pub leave: Leave,
    /// The second dataflow, built during the leave (untouched without `Config::second`).
    pub second: Second,
}

/// Whether bit `w` is set in `set`.
pub fn has(set: u8, w: usize) -> bool {
    set & (1 << w) != 0
}

impl State {
    /// `peers` workers at epoch 0 holding their initial capabilities; `sends[w]` bounds the
    /// data messages worker `w` sends.
    pub fn initial(peers: usize, sends: [u8; WORKERS]) -> Self {
        let worker = |w: usize| if w < peers { Worker::initial(peers, sends[w]) } else { Worker::default() };
        State {
            peers: peers as u8,
            members: (1 << peers) - 1,
            workers: [worker(0), worker(1), worker(2)],
            logs: Default::default(),
            leave: Leave::default(),
            second: Second::default(),
        }
    }

    /// The workers of the dataflow, present or gone.
    pub fn peers(&self) -> std::ops::Range<usize> {
        0..self.peers as usize
    }

    pub fn member(&self, w: usize) -> bool {
        has(self.members, w)
    }

    pub fn noticed(&self, w: usize) -> bool {
        has(self.leave.noticed, w)
    }

    /// The true counts: every capability held and every message not yet consumed (a message
    /// sent to a worker that has gone included: no one will consume it).
    pub fn truth(&self) -> Counts {
        dataflow::truth(&self.workers)
    }

    /// The initial counts plus every batch sent by anyone.
    pub fn sent_total(&self) -> Counts {
        dataflow::sent_total(&self.logs, self.peers as usize)
    }

    /// The view a worker must have if it applied exactly each sender's batches before `next`.
    pub fn view_of_prefixes(&self, next: &[u8; WORKERS]) -> Counts {
        dataflow::view_of_prefixes(&self.logs, self.peers as usize, next)
    }

    /// The end of `sender`'s batches that reach `receiver`: all it sent, unless the receiver
    /// forgot the sender (it drops the sender's batches from its goodbye on) or the sender
    /// forgot the receiver (it sends no more batches to it).
    pub fn limit(&self, receiver: usize, sender: usize) -> u8 {
        let sent = self.logs[sender].sent();
        if let Some(forgot) = self.leave.forgot[receiver][sender] {
            return forgot.end.min(sent);
        }
        match self.leave.forgot[sender][receiver] {
            Some(Forgot { stop: Some(stop), .. }) => stop,
            _ => sent,
        }
    }

    /// Every view member `w` may hold: its committed view extended by any prefix of each
    /// sender's batches that reach it.
    pub fn possible_views(&self, w: usize) -> Vec<View> {
        extensions(&self.workers[w], &self.logs, |sender| self.limit(w, sender))
    }

    /// Folds every batch no member can still apply into its log's prefix, and forgets what
    /// no longer matters about workers that have gone (so equal futures hash equally).
    pub fn compact(&mut self) {
        for sender in 0..WORKERS {
            let mut keep = self.logs[sender].sent();
            for receiver in (0..WORKERS).filter(|&r| self.member(r)) {
                keep = keep.min(self.workers[receiver].next[sender]);
            }
            self.logs[sender].trim(keep);
        }
        let members = self.members;
        self.second.compact(members);
        for forgot in self.leave.forgot.iter_mut().flat_map(|row| row.iter_mut().enumerate()) {
            if let (l, Some(forgot)) = forgot {
                if !has(members, l) {
                    forgot.stop = None;
                }
            }
        }
    }
}

/// A state in one line: per worker its capabilities, inbox, view and applied batches, then the
/// leave.
impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (w, k) in self.workers.iter().enumerate().filter(|&(w, _)| w < self.peers as usize) {
            let gone = if self.member(w) { "" } else { " GONE" };
            write!(
                f,
                "w{w}{gone}[epoch {:?} held {:?} notify {:03b} inbox {:?} view {:?} next {:?}] ",
                k.epoch, k.held, k.notify, k.inbox, k.view.0, k.next
            )?;
        }
        let sent: Vec<u8> = self.logs.iter().map(|log| log.sent()).collect();
        let forgot: Vec<(usize, usize, u8)> = (0..WORKERS)
            .flat_map(|v| (0..WORKERS).map(move |l| (v, l)))
            .filter_map(|(v, l)| self.leave.forgot[v][l].map(|forgot| (v, l, forgot.end)))
            .collect();
        let noticed: Vec<usize> = self.peers().filter(|&w| self.noticed(w)).collect();
        write!(
            f,
            "sent {sent:?} noticed {noticed:?} goodbye {:?} forgot (stayer, leaver, end) {forgot:?}",
            self.leave.goodbye
        )?;
        let second = &self.second;
        if second.built != 0 || second.left.iter().any(Option::is_some) {
            write!(f, " | second:")?;
            for (w, k) in second.workers.iter().enumerate().filter(|&(w, _)| second.built(w)) {
                write!(
                    f,
                    " w{w}[counts {} epoch {:?} held {:?} notify {:03b} inbox {:?} view {:?} next {:?}]",
                    second.counted[w], k.epoch, k.held, k.notify, k.inbox, k.view.0, k.next
                )?;
            }
            let sent: Vec<u8> = second.logs.iter().map(|log| log.sent()).collect();
            let heard: Vec<(usize, usize)> = (0..WORKERS)
                .flat_map(|v| (0..WORKERS).map(move |l| (v, l)))
                .filter(|&(v, l)| second.heard(v, l))
                .collect();
            write!(f, " sent {sent:?} left {:?} heard (worker, leaver) {heard:?}", second.left)?;
        }
        Ok(())
    }
}

//! The model's state: the processes, what each knows of the join and of the leaves, and the
//! messages in flight between them.
//!
//! This module owns the data of one state and the small queries over it that the actions and
//! the properties share. It does not decide which actions are enabled (`actions`) nor what
//! must hold (`properties`).

use std::fmt;

/// Processes in the model: up to three initial members (`0..members`) and the joiner.
pub const PROCESSES: usize = 4;
/// The joining process's index (whatever the number of initial members).
pub const JOINER: usize = 3;

/// A set of processes, one bit per index.
pub type Set = u8;

pub fn bit(process: usize) -> Set {
    1 << process
}

/// What a member answered the joiner after the handshake, or what the joiner saw instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum View {
    /// Ready, naming the processes the member knows have left; the member reserved the joiner.
    Ready { gone: Set },
    /// Refused, naming the processes the member knows are leaving (its own process included).
    Refused { leaving: Set },
    /// The member had gone when the joiner's hello reached it (the connection failed).
    Unreachable,
}

/// A message between processes; each (sender, receiver) channel is FIFO.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Msg {
    /// The joiner's handshake, asking for the member's view.
    Hello,
    View(View),
    /// The joiner's decision, once every view is in.
    Admit,
    Withdraw,
    /// The joiner finished its bootstrap (its workers' `Done` to a worker that was there).
    Done,
    /// A leaver's notice that it leaves.
    Notice,
    /// A peer's answer to a notice (the leaver has sealed it and has its last word).
    Marker,
    /// The leaver's last message: it has gone.
    Goodbye,
}

/// Where a process is in its own leave.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Leave {
    Staying,
    /// The check passed, the leave is not started yet (only when check and start are apart).
    Checked,
    /// Leaving: the peers it sealed (it waits for a marker or goodbye from each) and those it
    /// has heard from.
    Leaving {
        sealed: Set,
        heard: Set,
    },
    Departed,
}

/// What a member knows of the joiner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Seen {
    Unknown,
    /// It answered the joiner's hello (ready or refused).
    Viewed,
    /// The joiner told it to admit; its workers know the join is in progress.
    Admitted,
    /// It received the joiner's `Done`: the joiner is an ordinary member here.
    Done,
    Withdrawn,
}

/// One process's knowledge: its membership gate, its workers' record of the join, its leave.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Process {
    /// It asked to leave (the request stays until the leave starts).
    pub asked: bool,
    pub leave: Leave,
    /// Processes known to be leaving and not yet gone (itself included once it leaves).
    pub leaving: Set,
    /// Processes known to have gone (their goodbye received).
    pub gone: Set,
    /// The gate holds the joiner reserved (offered a ready view, not yet admitted or withdrawn).
    pub reserved: bool,
    pub joiner: Seen,
    /// What it knew of the joiner when its leave started.
    pub left_knowing: Option<Seen>,
}

impl Process {
    const fn initial() -> Self {
        Process {
            asked: false,
            leave: Leave::Staying,
            leaving: 0,
            gone: 0,
            reserved: false,
            joiner: Seen::Unknown,
            left_knowing: None,
        }
    }

    pub fn departed(&self) -> bool {
        self.leave == Leave::Departed
    }
}

/// Why the joiner withdrew.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// A member refused: these processes are leaving.
    Leaving(Set),
    /// A member named processes that left which the joiner was not told of (`--gone`).
    Untold(Set),
    /// A member had gone before the hello reached it.
    Unreachable(Set),
}

/// The joiner's decision towards one member.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    Admit,
    Withdraw(Reason),
}

/// The joining process's side of the join.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Joiner {
    pub started: bool,
    /// The members it dialed: those not named gone when it started.
    pub dialed: Set,
    /// The processes it was told had left (`--gone`).
    pub told: Set,
    pub views: [Option<View>; JOINER],
    /// Its decision, per dialed member, once every view is in.
    pub verdicts: [Option<Verdict>; JOINER],
    /// It finished its bootstrap and sent `Done` to every member it dialed.
    pub booted: bool,
}

/// A complete state of the model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// Members `0..members`, unused slots, and the joiner's process at `JOINER` (its gate and
    /// leave fields serve it once it is a member).
    pub processes: [Process; PROCESSES],
    pub joiner: Joiner,
    /// `channels[s][r]`: messages sent by `s` to `r`, oldest first.
    pub channels: [[Vec<Msg>; PROCESSES]; PROCESSES],
}

impl State {
    pub fn initial() -> Self {
        State {
            processes: [Process::initial(); PROCESSES],
            joiner: Joiner {
                started: false,
                dialed: 0,
                told: 0,
                views: [None; JOINER],
                verdicts: [None; JOINER],
                booted: false,
            },
            channels: Default::default(),
        }
    }

    pub fn send(&mut self, from: usize, to: usize, msg: Msg) {
        self.channels[from][to].push(msg);
    }

    /// Whether any member admitted the joiner (received its `Admit`).
    pub fn admitted_anywhere(&self, members: usize) -> bool {
        (0..members).any(|m| matches!(self.processes[m].joiner, Seen::Admitted | Seen::Done))
    }

    /// The joiner's verdicts, as (admitted at, withdrawn from) sets of members.
    pub fn verdict_sets(&self) -> (Set, Set) {
        let mut sets = (0, 0);
        for (m, verdict) in self.joiner.verdicts.iter().enumerate() {
            match verdict {
                Some(Verdict::Admit) => sets.0 |= bit(m),
                Some(Verdict::Withdraw(_)) => sets.1 |= bit(m),
                None => {}
            }
        }
        sets
    }
}

/// One line: each process's leave, gate and view of the joiner, the joiner, messages in flight.
impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (p, process) in self.processes.iter().enumerate() {
            if *process == Process::initial() && p != JOINER {
                continue;
            }
            let leave = match process.leave {
                Leave::Staying if process.asked => "asked".to_string(),
                Leave::Staying => "staying".to_string(),
                Leave::Checked => "checked".to_string(),
                Leave::Leaving { sealed, heard } => format!("leaving(sealed {sealed:04b} heard {heard:04b})"),
                Leave::Departed => "departed".to_string(),
            };
            let reserved = if process.reserved { " reserved" } else { "" };
            write!(
                f,
                "p{p}: {leave} leaving {:04b} gone {:04b}{reserved} {:?} | ",
                process.leaving, process.gone, process.joiner
            )?;
        }
        let j = &self.joiner;
        write!(f, "J: started {} dialed {:04b} told {:04b} views [", j.started, j.dialed, j.told)?;
        for view in j.views.iter().flatten() {
            write!(f, "{view:?} ")?;
        }
        write!(f, "] verdicts {:?} booted {} | in flight:", j.verdicts, j.booted)?;
        for (s, row) in self.channels.iter().enumerate() {
            for (r, queue) in row.iter().enumerate().filter(|(_, queue)| !queue.is_empty()) {
                write!(f, " {s}->{r} {queue:?}")?;
            }
        }
        Ok(())
    }
}

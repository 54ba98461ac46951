//! `Joiner`: the state of a worker of a joining process, kept in its `Rescaling` between the
//! messages of the bootstrap protocol (`docs/rescaling.md`).
//!
//! This module owns what the joining worker learned (its server's welcome, the `Next` messages
//! of the existing workers), the ledgers of its scopes being bootstrapped and the range requests
//! sent and answered, and answers from them what an operator or scope being built starts with.
//! The protocol that fills it is in `client` and `bootstrap`.

use std::collections::HashSet;
use std::rc::{Rc, Weak};

use super::messages::Welcome;
use super::operators::Initial;
use super::violation::ProtocolViolation;
use crate::progress::ScopeLedger;

/// The state of a worker of a joining process.
pub(crate) struct Joiner {
    pub(super) server: usize,
    pub(super) welcome: Option<Welcome>,
    /// `Next` messages received: sender and `(channel, first direct sequence)` per scope.
    pub(super) next: Vec<(usize, Vec<(usize, u64)>)>,
    /// The ledgers of scopes being bootstrapped, by progress channel.
    pub(super) joining: Vec<(usize, Weak<dyn ScopeLedger>)>,
    /// Range requests sent: `(channel, sender)`.
    pub(super) requested: HashSet<(usize, usize)>,
    /// Range requests answered: `(channel, sender)`.
    pub(super) answered: HashSet<(usize, usize)>,
    /// Set once `bootstrap` finished.
    pub(super) finished: bool,
}

impl Joiner {
    pub(crate) fn new(server: usize) -> Self {
        Joiner {
            server,
            welcome: None,
            next: Vec::new(),
            joining: Vec::new(),
            requested: HashSet::new(),
            answered: HashSet::new(),
            finished: false,
        }
    }

    pub(super) fn welcome(&self) -> &Welcome {
        self.welcome.as_ref().expect("a joining worker builds dataflows only after its welcome")
    }

    /// The number of workers dataflow `index` was built for on the server, if it was built
    /// there before the join and still runs.
    pub(crate) fn dataflow_peers(&self, index: usize) -> Option<usize> {
        self.welcome().dataflows.get(index).copied().flatten().map(|peers| peers as usize)
    }

    /// The number of workers before this worker's process joined, once the welcome is in.
    pub(crate) fn existing(&self) -> Option<usize> {
        self.welcome.as_ref().map(|welcome| welcome.existing)
    }

    /// True for a dataflow the server built before the join (running or completed).
    pub(super) fn built_before_join(&self, index: usize) -> bool {
        index < self.welcome().dataflows.len()
    }

    /// The initial capabilities of the operator at `address` on this joining worker.
    pub(crate) fn initial(&self, address: &[usize]) -> Initial {
        if !self.built_before_join(address[0]) {
            return Initial::Ordinary;
        }
        if self.completed_scope(&address[..address.len() - 1]) {
            // Nobody holds anything in a scope the server has completed.
            return Initial::Joining { counted: 0, times: None };
        }
        let counted =
            self.dataflow_peers(address[0]).expect("a scope the server runs is in a dataflow it runs");
        let times = self.welcome().operators.iter().find(|(a, _)| a == address).map(|(_, t)| t.clone());
        Initial::Joining { counted, times }
    }

    /// True for a scope (a whole dataflow, or a region or loop in one) the server built
    /// before the join and has completed and dropped: it starts empty here, so that its
    /// inputs are closed, its probes see it complete and it completes on its own.
    pub(super) fn completed_scope(&self, scope: &[usize]) -> bool {
        self.built_before_join(scope[0])
            && !self.welcome().scopes.iter().any(|welcome| welcome.address == scope)
    }

    /// The server.
    pub(crate) fn server(&self) -> usize {
        self.server
    }

    /// A scope was built: if the server built it before the join, its ledger starts joining
    /// (unless the server completed it: then it starts empty, like its operators, and drops
    /// the batches the others still send for it).
    ///
    /// # Errors
    ///
    /// The server's state of the scope does not decode or does not fit the scope: a violation
    /// of the server.
    pub(crate) fn scope_built(
        &mut self,
        channel: usize,
        address: &[usize],
        ledger: &Rc<dyn ScopeLedger>,
    ) -> Result<(), ProtocolViolation> {
        if !self.built_before_join(address[0]) {
            return Ok(());
        }
        if self.completed_scope(address) {
            ledger.detach();
            return Ok(());
        }
        let welcome = self.welcome();
        let Some(scope) = welcome.scopes.iter().find(|scope| scope.channel == channel) else {
            return Err(ProtocolViolation::WelcomeScopeMissing { address: address.to_vec(), channel });
        };
        ledger.start_joining(welcome.existing);
        ledger
            .install_state(&scope.state, self.server, scope.announced)
            .map_err(|error| ProtocolViolation::StateDoesNotFit { address: address.to_vec(), error })?;
        // Workers that left sent everything before the join: the state holds all of it.
        for &worker in &welcome.departed {
            ledger.direct_from(worker, 0);
        }
        for (from, scopes) in &self.next {
            for &(_, first) in scopes.iter().filter(|(c, _)| *c == channel) {
                ledger.direct_from(*from, first);
            }
        }
        self.joining.push((channel, Rc::downgrade(ledger)));
        Ok(())
    }

    pub(super) fn ledger(&self, channel: usize) -> Option<Rc<dyn ScopeLedger>> {
        self.joining.iter().find(|(c, _)| *c == channel).and_then(|(_, ledger)| ledger.upgrade())
    }
}

//! `Stream`: the output of an operator, to which other operators connect.

use super::channels::{Data, MessagePuller, Pact, Tee};
use super::Scope;
use crate::logging::{self, Event};
use crate::progress::{Source, Target, Timestamp};
use crate::scheduling::Activator;

/// A stream of records of type `D` at times `T`: one output port of one operator.
pub struct Stream<T: Timestamp, D> {
    source: Source,
    scope: Scope<T>,
    tee: Tee<T, D>,
}

impl<T: Timestamp, D> Clone for Stream<T, D> {
    fn clone(&self) -> Self {
        Stream { source: self.source, scope: self.scope.clone(), tee: self.tee.clone() }
    }
}

impl<T: Timestamp, D: Data> Stream<T, D> {
    /// The stream produced at `source` in `scope`, fanned out by `tee`.
    pub fn new(source: Source, scope: Scope<T>, tee: Tee<T, D>) -> Self {
        Stream { source, scope, tee }
    }

    /// The scope the stream lives in.
    pub fn scope(&self) -> &Scope<T> {
        &self.scope
    }

    /// The output port producing the stream.
    pub fn source(&self) -> Source {
        self.source
    }

    /// The fan-out of the producing output.
    pub(crate) fn tee(&self) -> &Tee<T, D> {
        &self.tee
    }

    /// Connects the stream to input `target` through `pact`; returns the receiving end.
    pub fn connect_to<P: Pact<T, D>>(
        &self,
        target: Target,
        pact: P,
        activator: Activator,
    ) -> MessagePuller<T, D> {
        let identifier = self.scope.worker().new_identifier();
        let (pusher, puller) = pact.connect(&self.scope, identifier, activator);
        self.tee.add_pusher(pusher);
        self.scope.add_edge(self.source, target);
        logging::log(&self.scope.logger(), || Event::Channels {
            id: identifier,
            scope_address: self.scope.address().to_vec(),
            source: (self.source.node, self.source.port),
            target: (target.node, target.port),
        });
        puller
    }
}

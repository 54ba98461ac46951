//! The joiner's side of the exchange that ends a join handshake: every member's view is in
//! before any member is told to admit the joiner (`docs/rescaling.md`, "Joins and leaves at the
//! same time").
//!
//! This module owns [`Viewed`] (a member that sent its view and waits for the decision) and
//! the decision: withdraw from every member ([`withdraw`]), or, when no member named a process
//! that left which the joiner was not told of, tell each to admit it and read its answer
//! ([`commit`]). Setup ([`super::connect`]) collects the views; this module must not dial.

use super::handshake::HANDSHAKE_TIMEOUT;
use super::join_answer::{listed, read_join_answer, write_join_decision};
use super::peer_stream::PeerStream;
use super::runtime::release;
use super::seal::SessionKeys;
use super::NetworkError;

/// A member that sent a joiner its view and waits for the joiner's decision.
pub(super) struct Viewed {
    pub(super) process: usize,
    pub(super) address: String,
    pub(super) stream: tokio::net::TcpStream,
    pub(super) keys: Option<SessionKeys>,
    /// The processes the member knows have left the cluster.
    pub(super) departed: Vec<usize>,
}

/// Tells every member that sent its view that this joiner withdraws (a member that does not
/// hear it withdraws the joiner when the connection ends).
pub(super) async fn withdraw(viewed: Vec<Viewed>) {
    for mut view in viewed {
        let _ = write_join_decision(&mut view.stream, false, HANDSHAKE_TIMEOUT).await;
    }
}

/// The processes that `viewed` members say left the cluster and that are not in `gone`.
pub(super) fn unknown_departures(viewed: &[Viewed], gone: &[usize]) -> Vec<usize> {
    let mut unknown: Vec<usize> =
        viewed.iter().flat_map(|view| view.departed.iter().copied()).filter(|q| !gone.contains(q)).collect();
    unknown.sort_unstable();
    unknown.dedup();
    unknown
}

/// The join waits for a joiner told of every process in `unknown`, which left.
pub(super) fn unknown_departures_error(unknown: &[usize]) -> NetworkError {
    let reason = format!(
        "process(es) {} left the cluster, which this joining process was not told of; start it \
         with --gone naming every process that left (the launcher does)",
        listed(unknown)
    );
    NetworkError::JoinPostponed { reason }
}

/// Every member sent its view: joins if none knows of a process that left which this joiner
/// was not told of (`gone`), reading each member's answer, and fills `streams`; otherwise
/// withdraws from all, and the join is postponed (nothing was admitted anywhere).
pub(super) async fn commit(
    mut viewed: Vec<Viewed>,
    gone: &[usize],
    streams: &mut [Option<PeerStream>],
) -> Result<(), NetworkError> {
    let unknown = unknown_departures(&viewed, gone);
    if !unknown.is_empty() {
        withdraw(viewed).await;
        return Err(unknown_departures_error(&unknown));
    }
    viewed.sort_by_key(|view| view.process);
    for mut view in viewed {
        // Past its decision the member may have admitted this joiner: no retry can help.
        let address = view.address.clone();
        write_join_decision(&mut view.stream, true, HANDSHAKE_TIMEOUT)
            .await
            .map_err(|error| error.at(&address))?;
        read_join_answer(&mut view.stream, HANDSHAKE_TIMEOUT).await.map_err(|error| error.at(&address))?;
        let stream =
            release(view.stream).map_err(|error| NetworkError::io("a joined socket", &error).at(&address))?;
        streams[view.process] = Some(PeerStream { stream, keys: view.keys, records_sent: 0 });
    }
    Ok(())
}

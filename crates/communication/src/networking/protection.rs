//! Whether a cluster may run without a secret: the loopback rule.
//!
//! Without a cluster secret any program that speaks the protocol is admitted, and Python
//! records may be pickles, so whoever reaches a port can run code in the cluster. This module
//! owns the rule that keeps the convenient case and refuses the dangerous one: a cluster whose
//! addresses are all loopback (`localhost`, `127.0.0.0/8`, `::1`) may run without a secret; one
//! with any other address needs a secret, or an explicit `insecure` choice. It resolves host
//! names to decide, but must not open sockets or print: the caller decides before anything is
//! bound or dialed, and reports.

use std::net::ToSocketAddrs;

use super::NetworkError;

/// How a cluster's connections are protected, as decided by [`decide_protection`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Protection {
    /// Peers prove knowledge of the cluster secret.
    Authenticated,
    /// No secret, but every address is loopback: only programs on this machine can join.
    LoopbackOnly,
    /// No secret, by explicit choice; `non_loopback` lists the addresses that are not loopback.
    Insecure {
        /// The addresses reachable from other machines (possibly none).
        non_loopback: Vec<String>,
    },
}

/// Decides how the cluster at `addresses` is protected: with a secret (`has_secret`), by
/// being loopback only, or not at all when `insecure` is set.
///
/// # Errors
///
/// [`NetworkError::Unprotected`] for a cluster without a secret, not `insecure`, with an address
/// that is not loopback (a host name that does not resolve counts as not loopback).
pub fn decide_protection(
    has_secret: bool,
    insecure: bool,
    addresses: &[String],
) -> Result<Protection, NetworkError> {
    if has_secret {
        return Ok(Protection::Authenticated);
    }
    let non_loopback: Vec<String> =
        addresses.iter().filter(|address| !is_loopback(address)).cloned().collect();
    match (insecure, non_loopback.is_empty()) {
        (true, _) => Ok(Protection::Insecure { non_loopback }),
        (false, true) => Ok(Protection::LoopbackOnly),
        (false, false) => Err(NetworkError::Unprotected { non_loopback }),
    }
}

/// Whether every address `address` (`host:port`) resolves to is a loopback address.
pub fn is_loopback(address: &str) -> bool {
    match address.to_socket_addrs() {
        Ok(resolved) => {
            let resolved: Vec<_> = resolved.collect();
            !resolved.is_empty() && resolved.iter().all(|socket| socket.ip().is_loopback())
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addresses(list: &[&str]) -> Vec<String> {
        list.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn loopback_names_and_ranges_are_loopback_and_others_are_not() {
        for address in ["localhost:2101", "127.0.0.1:2101", "127.255.0.9:1", "[::1]:2101"] {
            assert!(is_loopback(address), "{address}");
        }
        for address in ["10.255.255.1:2101", "192.0.2.7:9", "[2001:db8::1]:2101", "0.0.0.0:2101", "no port"] {
            assert!(!is_loopback(address), "{address}");
        }
    }

    #[test]
    fn decides_the_three_cases() {
        let local = addresses(&["localhost:2101", "127.0.0.1:2102"]);
        let mixed = addresses(&["127.0.0.1:2101", "10.255.255.1:2102"]);
        assert_eq!(decide_protection(true, false, &mixed), Ok(Protection::Authenticated));
        assert_eq!(decide_protection(false, false, &local), Ok(Protection::LoopbackOnly));
        let refused =
            decide_protection(false, false, &mixed).expect_err("a non-loopback address without a secret");
        assert_eq!(refused, NetworkError::Unprotected { non_loopback: addresses(&["10.255.255.1:2102"]) });
        let message = refused.to_string();
        for needed in ["10.255.255.1:2102", "TIMELY_CLUSTER_SECRET", "TIMELY_CLUSTER_ID", "--insecure"] {
            assert!(message.contains(needed), "{needed} in {message}");
        }
        let non_loopback = addresses(&["10.255.255.1:2102"]);
        assert_eq!(decide_protection(false, true, &mixed), Ok(Protection::Insecure { non_loopback }));
        assert_eq!(decide_protection(false, true, &local), Ok(Protection::Insecure { non_loopback: vec![] }));
    }
}

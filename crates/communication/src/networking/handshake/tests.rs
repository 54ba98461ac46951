//! Tests of the handshake over pairs of loopback sockets.

use super::*;
use crate::networking::proof::proof;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Instant;

const SHORT: Duration = Duration::from_millis(500);

/// A connected pair of loopback sockets.
fn pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let address = listener.local_addr().expect("listener address");
    let client = TcpStream::connect(address).expect("connect loopback");
    let (server, _) = listener.accept().expect("accept loopback");
    (client, server)
}

fn local(process: usize) -> LocalProcess {
    LocalProcess { process, processes: 3, threads: 2, role: Role::Setup }
}

/// The peer's index a handshake learnt.
fn peer(result: Result<Greeting, NetworkError>) -> Result<usize, NetworkError> {
    result.map(|greeting| greeting.process)
}

/// Runs both sides of a handshake, `first` dialling and `second` accepting, each with its
/// `(local, identity)`; returns the peer index each learnt.
fn both(
    first: (LocalProcess, ClusterIdentity),
    second: (LocalProcess, ClusterIdentity),
) -> (Result<usize, NetworkError>, Result<usize, NetworkError>) {
    let (mine, other) = greetings(first, second);
    (peer(mine), peer(other))
}

/// [`both`], with the whole greetings.
fn greetings(
    first: (LocalProcess, ClusterIdentity),
    second: (LocalProcess, ClusterIdentity),
) -> (Result<Greeting, NetworkError>, Result<Greeting, NetworkError>) {
    let (mut a, mut b) = pair();
    let other = std::thread::spawn(move || handshake(&mut b, &second.0, &second.1, Side::Acceptor, SHORT));
    let mine = handshake(&mut a, &first.0, &first.1, Side::Dialler, SHORT);
    (mine, other.join().expect("handshake thread"))
}

fn identity(cluster_id: u64, secret: &[u8]) -> ClusterIdentity {
    ClusterIdentity { cluster_id, secret: secret.to_vec(), ..ClusterIdentity::default() }
}

#[test]
fn matching_processes_learn_each_others_index() {
    let id = identity(7, b"s3cret");
    assert_eq!(both((local(2), id.clone()), (local(0), id)), (Ok(0), Ok(2)));
}

#[test]
fn mismatches_are_seen_by_both_sides() {
    let (a, b) = both((local(1), identity(1, b"")), (local(0), identity(2, b"")));
    assert_eq!(a, Err(NetworkError::ClusterMismatch { ours: 1, theirs: 2 }));
    assert_eq!(b, Err(NetworkError::ClusterMismatch { ours: 2, theirs: 1 }));
    let more_threads = LocalProcess { threads: 4, ..local(0) };
    let (a, b) = both((local(1), identity(0, b"")), (more_threads, identity(0, b"")));
    assert_eq!(a, Err(NetworkError::ThreadsMismatch { ours: 2, theirs: 4 }));
    assert_eq!(b, Err(NetworkError::ThreadsMismatch { ours: 4, theirs: 2 }));
}

#[test]
fn a_wrong_secret_fails_on_both_sides() {
    let (a, b) = both((local(1), identity(0, b"one")), (local(0), identity(0, b"two")));
    assert_eq!(a, Err(NetworkError::AuthenticationFailed));
    assert_eq!(b, Err(NetworkError::AuthenticationFailed));
}

#[test]
fn a_peer_claiming_our_index_is_refused() {
    let id = identity(0, b"");
    let (a, _) = both((local(1), id.clone()), (local(1), id));
    assert!(matches!(a, Err(NetworkError::UnexpectedProcess { found: 1, .. })));
}

#[test]
fn a_silent_peer_times_out() {
    let (mut a, _b) = pair();
    let started = Instant::now();
    let error = handshake(&mut a, &local(0), &ClusterIdentity::default(), Side::Acceptor, SHORT);
    assert!(matches!(error, Err(NetworkError::HandshakeIo { .. })), "{error:?}");
    assert!(started.elapsed() < SHORT * 4);
}

#[test]
fn garbage_and_huge_lengths_are_not_peers() {
    let mut huge = MAGIC.to_vec();
    huge.extend_from_slice(&PROTOCOL_VERSION.to_le_bytes());
    huge.extend_from_slice(&u32::MAX.to_le_bytes());
    for bytes in [b"GET / HTTP/1.1\r\n\r\n".to_vec(), huge] {
        let (mut a, mut b) = pair();
        b.write_all(&bytes).expect("write garbage");
        let error = handshake(&mut a, &local(0), &ClusterIdentity::default(), Side::Acceptor, SHORT);
        assert!(matches!(error, Err(NetworkError::NotAPeer { .. })), "{error:?}");
    }
}

fn joining(process: usize) -> LocalProcess {
    LocalProcess { process, processes: process + 1, threads: 2, role: Role::Joining }
}

fn admitting(process: usize, members: usize) -> LocalProcess {
    LocalProcess { process, processes: members, threads: 2, role: Role::Admitting }
}

#[test]
fn a_joiner_and_a_member_of_the_right_size_learn_each_others_index() {
    let id = identity(7, b"s3cret");
    assert_eq!(both((joining(3), id.clone()), (admitting(1, 3), id)), (Ok(1), Ok(3)));
}

#[test]
fn a_joiner_that_is_not_next_is_refused_on_both_sides() {
    let id = identity(7, b"");
    let (a, b) = both((joining(4), id.clone()), (admitting(0, 3), id));
    let expected = NetworkError::JoinCountMismatch { members: 3, joiner: 4, after: 5 };
    assert_eq!((a, b), (Err(expected.clone()), Err(expected)));
    let text = NetworkError::JoinCountMismatch { members: 3, joiner: 4, after: 5 }.to_string();
    assert!(text.contains("must be -p 3 --nn 4"), "{text}");
}

#[test]
fn the_modes_refuse_each_other_with_the_situation_named() {
    let id = identity(0, b"");
    let (joiner, setup) = both((joining(2), id.clone()), (local(0), id.clone()));
    assert_eq!(
        (joiner, setup),
        (Err(NetworkError::ClusterStillSettingUp), Err(NetworkError::JoinDuringSetup))
    );
    let (late, member) = both((local(1), id.clone()), (admitting(0, 2), id));
    assert_eq!(
        (late, member),
        (Err(NetworkError::JoinDuringSetup), Err(NetworkError::ClusterAlreadyRunning))
    );
    assert!(NetworkError::ClusterStillSettingUp.to_string().contains("still being set up"));
}

#[test]
fn a_join_with_a_wrong_secret_fails_on_both_sides() {
    let (a, b) = both((joining(2), identity(0, b"one")), (admitting(0, 2), identity(0, b"two")));
    assert_eq!((a, b), (Err(NetworkError::AuthenticationFailed), Err(NetworkError::AuthenticationFailed)));
}

/// Plays a dialler that sends `hello` on `stream` and then the dialler's proof for `secret`
/// over the hellos exchanged.
fn dial_with(mut stream: TcpStream, hello: Vec<u8>, secret: &'static [u8]) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        stream.write_all(&hello).expect("write the hello");
        let mut theirs = [0u8; HELLO_BYTES];
        stream.read_exact(&mut theirs).expect("the acceptor's hello");
        let transcript = Transcript::new(&hello, &theirs);
        let made = proof(secret, Side::Dialler, &transcript).expect("a proof");
        stream.write_all(&made).expect("write the proof");
        let mut sink = Vec::new();
        let _ = stream.read_to_end(&mut sink);
    })
}

#[test]
fn an_unknown_mode_is_not_a_peer() {
    let (mut a, b) = pair();
    let mut hello = hello_bytes(&local(1), 0).expect("a hello");
    hello[48] = 7;
    let dialler = dial_with(b, hello, b"");
    let error = handshake(&mut a, &local(0), &ClusterIdentity::default(), Side::Acceptor, SHORT);
    assert!(
        matches!(error, Err(NetworkError::NotAPeer { ref detail }) if detail.contains("mode 7")),
        "{error:?}"
    );
    drop(a);
    dialler.join().expect("the dialler");
}

#[test]
fn a_strangers_mismatched_hello_is_judged_only_after_its_proof() {
    // Another cluster id, another process count, and no knowledge of the secret: the acceptor
    // refuses the proof, it never reports a misconfiguration (which would end setup).
    let id = identity(7, b"s3cret");
    for (stranger, cluster_id) in [(local(1), 8), (LocalProcess { processes: 9, ..local(1) }, 7)] {
        let (mut a, b) = pair();
        let dialler = dial_with(b, hello_bytes(&stranger, cluster_id).expect("a hello"), b"guess");
        let error = handshake(&mut a, &local(0), &id, Side::Acceptor, SHORT);
        assert_eq!(error, Err(NetworkError::AuthenticationFailed));
        drop(a);
        dialler.join().expect("the dialler");
    }
    // The same hellos from a process that knows the secret are misconfigurations.
    let (mut a, b) = pair();
    let dialler = dial_with(b, hello_bytes(&local(1), 8).expect("a hello"), b"s3cret");
    let error = handshake(&mut a, &local(0), &id, Side::Acceptor, SHORT);
    assert_eq!(error, Err(NetworkError::ClusterMismatch { ours: 7, theirs: 8 }));
    drop(a);
    dialler.join().expect("the dialler");
}

/// Forwards everything `from` sends to `to` until either closes.
fn forward(mut from: TcpStream, mut to: TcpStream) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut from, &mut to);
        let _ = to.shutdown(std::net::Shutdown::Write);
    })
}

#[test]
fn a_relay_between_two_acceptors_is_refused() {
    // Processes 0 and 1 of a cluster both accept a connection from the attacker, who knows no
    // secret and passes each one's bytes to the other: 1's hello and proof reach 0 as if 1 had
    // dialled it. Up to version 4 a proof did not say which side made it, so 0 took the relay
    // for process 1 and would have run its frames.
    let id = identity(7, b"s3cret");
    let (mut zero, attacker_at_zero) = pair();
    let (mut one, attacker_at_one) = pair();
    let relays = [
        forward(attacker_at_zero.try_clone().expect("clone"), attacker_at_one.try_clone().expect("clone")),
        forward(attacker_at_one, attacker_at_zero),
    ];
    let at_one = {
        let id = id.clone();
        std::thread::spawn(move || handshake(&mut one, &local(1), &id, Side::Acceptor, SHORT))
    };
    let at_zero = handshake(&mut zero, &local(0), &id, Side::Acceptor, SHORT);
    assert_eq!(peer(at_zero), Err(NetworkError::AuthenticationFailed));
    let at_one = at_one.join().expect("process 1");
    assert_eq!(peer(at_one), Err(NetworkError::AuthenticationFailed));
    drop(zero);
    relays.into_iter().for_each(|relay| relay.join().expect("relay"));
}

#[test]
fn a_session_is_sealed_when_either_side_asks_with_keys_that_match() {
    let plain = ClusterIdentity { sealing: Sealing::Never, ..identity(7, b"s3cret") };
    let sealed = ClusterIdentity { sealing: Sealing::Always, ..plain.clone() };
    let (a, b) = greetings((local(1), plain.clone()), (local(0), plain.clone()));
    assert_eq!((a.expect("dialler").keys, b.expect("acceptor").keys), (None, None));
    for (first, second) in
        [(sealed.clone(), plain.clone()), (plain, sealed.clone()), (sealed.clone(), sealed)]
    {
        let (a, b) = greetings((local(1), first), (local(0), second));
        let (a, b) = (a.expect("dialler").keys.expect("sealed"), b.expect("acceptor").keys.expect("sealed"));
        assert_eq!((a.sending(), a.receiving()), (b.receiving(), b.sending()));
        assert_ne!(a.sending(), a.receiving());
    }
}

#[test]
fn auto_sealing_asks_off_loopback_only() {
    let loopback = ["localhost:2101".to_string(), "127.0.0.1:2102".to_string()];
    let remote = ["localhost:2101".to_string(), "192.0.2.7:2102".to_string()];
    let auto = identity(1, b"s");
    assert_eq!(auto.for_addresses(&loopback).sealing, Sealing::Never);
    assert_eq!(auto.for_addresses(&remote).sealing, Sealing::Always);
    let forced = ClusterIdentity { sealing: Sealing::Always, ..auto };
    assert_eq!(forced.for_addresses(&loopback).sealing, Sealing::Always);
}

#[test]
fn the_secret_stays_out_of_debug_output() {
    let shown = format!("{:?}", identity(3, b"hunter2"));
    assert!(!shown.contains("hunter2") && shown.contains("<7 bytes>"), "{shown}");
}

//! Runtime options from the environment: `TIMELY_PEER_TIMEOUT`, `TIMELY_INSECURE`,
//! `TIMELY_CLOCK_INTERVAL`, `TIMELY_RECEIVE_BUDGET` and `TIMELY_EARLY_BYTES`, and how
//! command-line flags override them. One test, because the environment is shared by every
//! thread of a test binary.
//!
//! Its own test binary, not a module of `tests/suite`: it sets and removes environment
//! variables of the process, which every parse of worker options reads, so the tests there
//! running in other threads of the same process (`config::`, whose default runs are secure,
//! say) would see its values, and changing the environment while other threads read it is
//! undefined behaviour on some platforms.

use std::time::Duration;

use timely_communication::initialize::{
    ClusterConfig, CLOCK_INTERVAL_VARIABLE, INSECURE_VARIABLE, PEER_TIMEOUT_VARIABLE,
};
use timely_communication::networking::receive_budget::{EARLY_BYTES_VARIABLE, RECEIVE_BUDGET_VARIABLE};
use timely_communication::networking::{
    DEFAULT_CLOCK_INTERVAL, DEFAULT_EARLY_BYTES, DEFAULT_PEER_TIMEOUT, DEFAULT_RECEIVE_BUDGET_BYTES,
};
use timely_communication::Config;

fn parse(args: &[&str]) -> Result<ClusterConfig, String> {
    match Config::from_args(args.iter().map(ToString::to_string)).map_err(|error| error.to_string())?.0 {
        Config::Cluster(cluster) => Ok(cluster),
        other => panic!("{args:?} is a cluster, not {other:?}"),
    }
}

fn timeout(args: &[&str]) -> Duration {
    parse(args).unwrap_or_else(|error| panic!("{args:?}: {error}")).liveness.timeout()
}

#[test]
fn the_environment_gives_defaults_that_flags_override() {
    std::env::remove_var(PEER_TIMEOUT_VARIABLE);
    std::env::remove_var(INSECURE_VARIABLE);
    assert_eq!(timeout(&["-n", "2"]), DEFAULT_PEER_TIMEOUT);
    assert!(!parse(&["-n", "2"]).expect("valid").insecure);

    std::env::set_var(PEER_TIMEOUT_VARIABLE, "4.5");
    assert_eq!(timeout(&["-n", "2"]), Duration::from_millis(4500));
    assert_eq!(timeout(&["-n", "2", "--peer-timeout", "7"]), Duration::from_secs(7));
    std::env::set_var(PEER_TIMEOUT_VARIABLE, "never");
    let error = parse(&["-n", "2"]).expect_err("a bad variable");
    assert!(error.contains(PEER_TIMEOUT_VARIABLE) && error.contains("\"never\""), "{error}");
    assert_eq!(timeout(&["-n", "2", "--peer-timeout=7"]), Duration::from_secs(7), "the flag wins");
    std::env::remove_var(PEER_TIMEOUT_VARIABLE);

    std::env::set_var(INSECURE_VARIABLE, "1");
    assert!(parse(&["-n", "2"]).expect("valid").insecure);
    std::env::set_var(INSECURE_VARIABLE, "0");
    assert!(!parse(&["-n", "2"]).expect("valid").insecure);
    assert!(parse(&["-n", "2", "--insecure"]).expect("valid").insecure);
    std::env::set_var(INSECURE_VARIABLE, "maybe");
    let error = parse(&["-n", "2"]).expect_err("a bad variable");
    assert!(error.contains(INSECURE_VARIABLE) && error.contains("\"maybe\""), "{error}");
    std::env::remove_var(INSECURE_VARIABLE);

    let interval = |args: &[&str]| parse(args).map(|cluster| cluster.clock.interval());
    std::env::remove_var(CLOCK_INTERVAL_VARIABLE);
    assert_eq!(interval(&["-n", "2"]), Ok(DEFAULT_CLOCK_INTERVAL));
    std::env::set_var(CLOCK_INTERVAL_VARIABLE, "0.5");
    assert_eq!(interval(&["-n", "2"]), Ok(Duration::from_millis(500)));
    std::env::set_var(CLOCK_INTERVAL_VARIABLE, "0.001");
    let error = interval(&["-n", "2"]).expect_err("an interval below the minimum");
    assert!(error.contains(CLOCK_INTERVAL_VARIABLE) && error.contains("minimum"), "{error}");
    std::env::remove_var(CLOCK_INTERVAL_VARIABLE);

    let budget = |args: &[&str]| parse(args).map(|cluster| cluster.receive_budget);
    std::env::remove_var(RECEIVE_BUDGET_VARIABLE);
    std::env::remove_var(EARLY_BYTES_VARIABLE);
    let defaults = budget(&["-n", "2"]).expect("valid");
    assert_eq!((defaults.bytes, defaults.early_bytes), (DEFAULT_RECEIVE_BUDGET_BYTES, DEFAULT_EARLY_BYTES));
    assert_eq!(DEFAULT_EARLY_BYTES, 128 << 20, "the default is unchanged");
    std::env::set_var(EARLY_BYTES_VARIABLE, "64M");
    std::env::set_var(RECEIVE_BUDGET_VARIABLE, "1G");
    let set = budget(&["-n", "2"]).expect("valid");
    assert_eq!((set.bytes, set.early_bytes), (1 << 30, 64 << 20), "each variable sets its own limit");
    std::env::set_var(EARLY_BYTES_VARIABLE, "4096");
    assert_eq!(budget(&["-n", "2"]).map(|b| b.early_bytes), Ok(4096));
    let flags = budget(&["-n", "2", "--early-bytes", "2M", "--receive-budget=3M"]).expect("valid");
    assert_eq!((flags.bytes, flags.early_bytes), (3 << 20, 2 << 20), "the flags win");
    for bad in ["lots", "12T", "-1", "99999999999999999999G"] {
        std::env::set_var(EARLY_BYTES_VARIABLE, bad);
        let error = budget(&["-n", "2"]).expect_err("a bad early limit");
        assert!(error.contains(EARLY_BYTES_VARIABLE) && error.contains(&format!("{bad:?}")), "{error}");
        let flag = budget(&["-n", "2", "--early-bytes", "1M"]).map(|b| b.early_bytes);
        assert_eq!(flag, Ok(1 << 20), "a valid flag overrides a bad variable");
    }
    std::env::remove_var(EARLY_BYTES_VARIABLE);
    std::env::remove_var(RECEIVE_BUDGET_VARIABLE);
}

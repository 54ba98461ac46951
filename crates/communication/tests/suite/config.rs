//! Parsing worker options from command-line arguments.

use timely_communication::Config;

fn parse(args: &[&str]) -> Result<(Config, Vec<String>), String> {
    Config::from_args(args.iter().map(ToString::to_string)).map_err(|error| error.to_string())
}

/// The number of workers and the remaining args, for comparison.
fn workers(args: &[&str]) -> (usize, Vec<String>) {
    let (config, rest) = parse(args).unwrap_or_else(|error| panic!("{args:?}: {error}"));
    match config {
        Config::Thread => (1, rest),
        Config::Process(workers) => {
            assert!(workers > 1, "one worker is Config::Thread");
            (workers, rest)
        }
        Config::Cluster(cluster) => panic!("{args:?} is not a cluster: {cluster:?}"),
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(ToString::to_string).collect()
}

#[test]
fn no_option_means_one_worker_and_keeps_every_arg() {
    assert_eq!(workers(&[]), (1, vec![]));
    assert_eq!(
        workers(&["input.txt", "-v", "--name", "x"]),
        (1, strings(&["input.txt", "-v", "--name", "x"]))
    );
}

#[test]
fn every_spelling_of_the_option_is_understood() {
    for args in [
        &["-w", "4"][..],
        &["-w4"],
        &["--workers", "4"],
        &["--workers=4"],
        &["--threads", "4"],
        &["--threads=4"],
    ] {
        assert_eq!(workers(args), (4, vec![]), "{args:?}");
    }
}

#[test]
fn one_worker_is_the_thread_config() {
    assert!(matches!(parse(&["-w", "1"]).unwrap().0, Config::Thread));
    assert!(matches!(parse(&["-w", "2"]).unwrap().0, Config::Process(2)));
}

#[test]
fn unrelated_args_are_returned_in_order() {
    assert_eq!(
        workers(&["a", "-w", "3", "b", "--workers-file", "c"]),
        (3, strings(&["a", "b", "--workers-file", "c"]))
    );
}

#[test]
fn the_last_occurrence_wins() {
    assert_eq!(workers(&["-w", "2", "--threads=5"]), (5, vec![]));
}

#[test]
fn args_after_a_double_dash_are_not_parsed() {
    assert_eq!(workers(&["-w2", "--", "-w", "9"]), (2, strings(&["--", "-w", "9"])));
}

#[test]
fn bad_values_are_clear_errors() {
    let cases: [(&[&str], &str); 6] = [
        (&["-w"], "requires a value"),
        (&["--workers"], "requires a value"),
        (&["-w", "many"], "\"many\""),
        (&["--threads=-3"], "\"-3\""),
        (&["-w", "0"], "at least 1"),
        (&["--workers=0"], "at least 1"),
    ];
    for (args, expected) in cases {
        let error = parse(args).expect_err(&format!("{args:?} is invalid"));
        assert!(error.contains(expected), "{args:?}: {error}");
        assert!(
            error.contains(args[0].split('=').next().unwrap()),
            "{args:?}: error names the option: {error}"
        );
    }
}

fn cluster(args: &[&str]) -> timely_communication::initialize::ClusterConfig {
    match parse(args).unwrap_or_else(|error| panic!("{args:?}: {error}")).0 {
        Config::Cluster(cluster) => cluster,
        other => panic!("{args:?} is a cluster, not {other:?}"),
    }
}

#[test]
fn processes_make_a_cluster() {
    let config = cluster(&["-n", "3", "-p", "2", "-w", "4"]);
    assert_eq!((config.processes, config.process, config.threads), (3, 2, 4));
    assert_eq!(config.addresses, ["localhost:2101", "localhost:2102", "localhost:2103"]);
    let config = cluster(&["--processes=2", "--process=1"]);
    assert_eq!((config.processes, config.process, config.threads), (2, 1, 1));
    // The command line sets no frame observer (the engine's trace does).
    assert!(config.frames.is_none());
    // One process is no cluster, whatever its index option says.
    assert!(matches!(parse(&["-n", "1", "-p", "0", "-w", "2"]).unwrap().0, Config::Process(2)));
}

#[test]
fn a_hostfile_gives_the_addresses() {
    let path = std::env::temp_dir().join(format!("timely-hostfile-{}", std::process::id()));
    std::fs::write(&path, "# the cluster\nhost-a:7000\n\nhost-b:7001\nhost-c:7002\n").unwrap();
    let config = cluster(&["-n", "2", "-p", "0", "-h", path.to_str().unwrap()]);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(config.addresses, ["host-a:7000", "host-b:7001"]);
    let missing = parse(&["-n", "2", "--hostfile", "/nonexistent/hosts"]).unwrap_err();
    assert!(missing.contains("/nonexistent/hosts"), "{missing}");
}

#[test]
fn bad_cluster_options_are_clear_errors() {
    let cases: [(&[&str], &str); 4] = [
        (&["-n", "2", "-p", "2"], "process 2 does not exist in a cluster of 2"),
        (&["-n", "0"], "at least 1"),
        (&["-p", "x"], "expected a process index"),
        (&["-n", "2", "-h"], "requires a value"),
    ];
    for (args, expected) in cases {
        let error = parse(args).expect_err(&format!("{args:?} is invalid"));
        assert!(error.contains(expected), "{args:?}: {error}");
    }
}

#[test]
fn the_peer_timeout_and_insecure_flags_are_read_and_consumed() {
    let config = cluster(&["-n", "2", "--peer-timeout", "2.5", "x"]);
    assert_eq!(config.liveness.timeout(), std::time::Duration::from_millis(2500));
    assert!(!config.insecure);
    let (parsed, rest) = parse(&["-n", "2", "--insecure", "--peer-timeout=30", "y"]).expect("valid flags");
    let Config::Cluster(config) = parsed else { panic!("a cluster") };
    assert_eq!((config.liveness.timeout().as_secs(), config.insecure, rest), (30, true, strings(&["y"])));
    // The last occurrence wins, as for every option.
    let config = cluster(&["-n", "2", "--peer-timeout", "3", "--peer-timeout=4"]);
    assert_eq!(config.liveness.timeout().as_secs(), 4);
}

#[test]
fn bad_peer_timeouts_and_insecure_values_are_clear_errors() {
    let cases: [(&[&str], &str); 6] = [
        (&["-n", "2", "--peer-timeout"], "requires a value"),
        (&["-n", "2", "--peer-timeout", "soon"], "positive number of seconds, found \"soon\""),
        (&["-n", "2", "--peer-timeout", "0"], "positive number of seconds, found \"0\""),
        (&["-n", "2", "--peer-timeout=-1"], "positive number of seconds, found \"-1\""),
        (&["-n", "2", "--peer-timeout=0.001"], "outside the accepted range"),
        (&["-n", "2", "--insecure=yes"], "--insecure takes no value"),
    ];
    for (args, expected) in cases {
        let error = parse(args).expect_err(&format!("{args:?} is invalid"));
        assert!(error.contains(expected), "{args:?}: {error}");
        assert!(error.contains(args[2].split('=').next().unwrap()), "{args:?}: names the option: {error}");
    }
}

/// `--receive-budget` and `--early-bytes` are runtime options like `--peer-timeout`: read in
/// every spelling, consumed, the last occurrence winning. (They override the environment
/// variables: `tests/config_environment.rs`, which may set them.)
#[test]
fn the_receive_budget_flags_are_read_and_consumed() {
    let (parsed, rest) =
        parse(&["-n", "2", "--early-bytes", "8M", "x", "--receive-budget=1G"]).expect("valid flags");
    let Config::Cluster(config) = parsed else { panic!("a cluster") };
    assert_eq!((config.receive_budget.early_bytes, config.receive_budget.bytes), (8 << 20, 1 << 30));
    assert_eq!(rest, strings(&["x"]));
    let config = cluster(&["-n", "2", "--early-bytes=4096", "--early-bytes", "64K", "--receive-budget", "0"]);
    assert_eq!((config.receive_budget.early_bytes, config.receive_budget.bytes), (64 << 10, 0));
}

#[test]
fn bad_receive_budgets_are_clear_errors_naming_the_option_and_value() {
    let cases: [(&[&str], &str); 5] = [
        (&["-n", "2", "--early-bytes"], "requires a value"),
        (
            &["-n", "2", "--early-bytes", "lots"],
            "expected a byte count such as 1048576, 64K, 512M or 2G, found \"lots\"",
        ),
        (&["-n", "2", "--early-bytes=-1"], "found \"-1\""),
        (
            &["-n", "2", "--early-bytes", "99999999999G"],
            "\"99999999999G\" is more bytes than this machine can count",
        ),
        (&["-n", "2", "--receive-budget", "12T"], "found \"12T\""),
    ];
    for (args, expected) in cases {
        let error = parse(args).expect_err(&format!("{args:?} is invalid"));
        assert!(error.contains(expected), "{args:?}: {error}");
        let option = args[2].split('=').next().unwrap();
        assert!(error.contains(&format!("option {option}")), "{args:?}: names the option: {error}");
    }
}

#[test]
fn errors_say_where_the_problem_is() {
    use timely_communication::networking::SecondsError;
    use timely_communication::ConfigError;
    let error = |args: &[&str]| Config::from_args(args.iter().map(ToString::to_string)).unwrap_err();
    assert!(matches!(error(&["--workers=0"]), ConfigError::Option { option, .. } if option == "--workers"));
    assert!(matches!(error(&["-w"]), ConfigError::Args(_)));
    assert!(matches!(
        error(&["-n", "2", "--peer-timeout", "soon"]),
        ConfigError::OptionSeconds { option, error: SecondsError::NotSeconds(text) } if option == "--peer-timeout" && text == "soon"
    ));
    assert!(matches!(
        error(&["-n", "2", "--peer-timeout=0.001"]),
        ConfigError::OptionSeconds { error: SecondsError::OutOfRange { setting: "peer timeout", .. }, .. }
    ));
    assert!(matches!(error(&["-n", "2", "-h", "/nonexistent/hostfile"]), ConfigError::Network(_)));
    assert_eq!(Config::Process(0).try_build().err(), Some(ConfigError::NoWorkers));
}

//! Parsing worker options from command-line arguments.

use timely_communication::Config;

fn parse(args: &[&str]) -> Result<(Config, Vec<String>), String> {
    Config::from_args(args.iter().map(ToString::to_string))
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
    assert_eq!(
        workers(&["-w2", "--", "-w", "9"]),
        (2, strings(&["--", "-w", "9"]))
    );
}

#[test]
fn bad_values_are_clear_errors() {
    let cases: [(&[&str], &str); 6] = [
        (&["-w"], "requires a number"),
        (&["--workers"], "requires a number"),
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

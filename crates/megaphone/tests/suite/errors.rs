//! Misuse is reported, not hidden: bad commands and bad notification requests end the run
//! with an error naming the problem; and records wait for the control frontier rather than
//! being routed by a table that may still change.

use timely_engine::dataflow::operators::Captured;
use timely_engine::dataflow::InputHandle;
use timely_engine::{Config, ExecuteError};
use timely_megaphone::{Bins, Command, Control, KeyedOperators};

/// Runs a keyed sum on two workers; worker 0 sends `commands` at time 1 and asks for
/// notifications `back` times before each record's time (0: at it). Returns the outcome.
fn run_with(commands: Vec<Command>, back: u64) -> Result<Vec<()>, ExecuteError> {
    timely_engine::execute(Config::Process(2), move |worker| {
        let mut data = InputHandle::new();
        let mut control = InputHandle::new();
        worker.dataflow(|scope| {
            let control = Control::new(&scope.input_from(&mut control)).with_bins(Bins::new(4).unwrap());
            scope.input_from(&mut data).keyed_unary(
                &control,
                |&key: &u64| key,
                move |_, value, sum: &mut u64, context| {
                    *sum += value;
                    context.notify_at(context.time() - back);
                },
                |_, _, context: &mut timely_megaphone::Context<u64>| context.give(0),
            );
        });
        data.advance_to(1);
        control.advance_to(1);
        if worker.index() == 0 {
            data.send(7u64);
            commands.iter().for_each(|&command| control.send(command));
        }
    })
}

#[test]
fn conflicting_moves_end_the_run_with_a_clear_error() {
    let commands = vec![Command::Move { bin: 1, worker: 0 }, Command::Move { bin: 1, worker: 1 }];
    let error = run_with(commands, 0).unwrap_err().to_string();
    assert!(error.contains("two commands at time 1 move bin 1 to different workers (0 and 1)"), "{error}");
}

#[test]
fn moves_to_missing_workers_or_bins_end_the_run_with_a_clear_error() {
    let error = run_with(vec![Command::Move { bin: 0, worker: 5 }], 0).unwrap_err().to_string();
    assert!(error.contains("worker 5 does not exist: there are 2 workers"), "{error}");
    let error = run_with(vec![Command::Move { bin: 4, worker: 0 }], 0).unwrap_err().to_string();
    assert!(error.contains("bin 4 does not exist: there are 4 bins"), "{error}");
    assert!(run_with(vec![Command::Move { bin: 3, worker: 0 }], 0).is_ok());
}

#[test]
fn notifications_in_the_past_end_the_run_with_a_clear_error() {
    let error = run_with(vec![], 1).unwrap_err().to_string();
    assert!(error.contains("notify_at(0) at time 1"), "{error}");
}

#[test]
fn records_wait_until_the_control_frontier_passes_their_time() {
    let outputs = timely_engine::example(|worker| {
        let mut data = InputHandle::new();
        let mut control = InputHandle::<u64, Command>::new();
        let captured = Captured::new();
        worker.dataflow(|scope| {
            let control = Control::new(&scope.input_from(&mut control));
            scope
                .input_from(&mut data)
                .keyed_unary(
                    &control,
                    |&key: &u64| key,
                    |&key, value: u64, sum: &mut u64, context| {
                        *sum += value;
                        context.give((key, *sum));
                    },
                    |_, _, _| {},
                )
                .capture_into(&captured);
        });
        data.send(5);
        data.send(5);
        data.advance_to(10);
        for _ in 0..20 {
            worker.step();
        }
        let held = captured.extract();
        control.advance_to(1);
        for _ in 0..20 {
            worker.step();
        }
        (held, captured.extract())
    });
    assert_eq!(outputs.0, vec![], "nothing before the control frontier passes time 0");
    assert_eq!(outputs.1, vec![(0, (5, 5)), (0, (5, 10))]);
}

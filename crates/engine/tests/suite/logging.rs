//! The trace event points: every event the thesis's instrumentation needs is reported to
//! an installed logger, consistently across workers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use timely_communication::clock;
use timely_engine::dataflow::{InputHandle, ProbeHandle};
use timely_engine::logging::{Event, EventClasses, Wake};
use timely_engine::Config;

type Trace = Arc<Mutex<Vec<(usize, i64, Event)>>>;

/// Runs hello for `rounds` rounds on `workers` workers with a logger, returning all events.
fn traced_hello(workers: usize, rounds: u64) -> Vec<(usize, i64, Event)> {
    let trace: Trace = Default::default();
    let shared = trace.clone();
    timely_engine::execute(Config::Process(workers), move |worker| {
        let sink = shared.clone();
        worker.install_logger(EventClasses::all(), move |index, events, _| {
            sink.lock()
                .unwrap()
                .extend(events.drain(..).map(|e| (index, clock::stamp_to_ns(e.stamp), e.event)));
        });
        let mut input = InputHandle::new();
        let probe = ProbeHandle::new();
        worker.dataflow(|scope| {
            scope.input_from(&mut input).exchange(|x: &u64| *x).inspect(|_| {}).probe_with(&probe);
        });
        let outer = worker.activity("feed");
        for round in 0..rounds {
            if worker.index() == 0 {
                input.send(round);
            }
            input.advance_to(round + 1);
            worker.step_while(|| probe.less_than(input.time()));
        }
        drop(outer);
    })
    .unwrap();
    let events = trace.lock().unwrap().clone();
    events
}

#[test]
fn operators_and_channels_are_announced() {
    let events = traced_hello(2, 3);
    for worker in 0..2 {
        let names: Vec<_> = events
            .iter()
            .filter_map(|(w, _, e)| match e {
                Event::Operates { name, address, .. } if *w == worker => Some((name.clone(), address.len())),
                _ => None,
            })
            .collect();
        for expected in ["Input", "Exchange", "Inspect", "Probe"] {
            assert!(
                names.iter().any(|(n, depth)| n == expected && *depth == 2),
                "worker {}: {:?}",
                worker,
                names
            );
        }
        let channels =
            events.iter().filter(|(w, _, e)| *w == worker && matches!(e, Event::Channels { .. })).count();
        assert_eq!(channels, 3, "input->exchange, exchange->inspect, inspect->probe");
    }
}

#[test]
fn schedules_are_balanced_and_timestamps_are_wall_clock() {
    let events = traced_hello(2, 5);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i64;
    for worker in 0..2 {
        let mine: Vec<_> = events.iter().filter(|(w, _, _)| *w == worker).collect();
        assert!(mine.windows(2).all(|p| p[0].1 <= p[1].1), "timestamps of worker {} do not decrease", worker);
        assert!(
            mine.iter().all(|(_, t, _)| (-1_000_000_000..60_000_000_000).contains(&(now - *t))),
            "Unix-epoch nanoseconds"
        );
        let mut open: HashMap<usize, usize> = HashMap::new();
        let mut useful = 0;
        for (_, _, event) in &mine {
            if let Event::Schedule { id, start, useful: u } = event {
                let depth = open.entry(*id).or_default();
                if *start {
                    *depth += 1;
                } else {
                    assert_eq!(*depth, 1, "stop without start for operator {}", id);
                    *depth -= 1;
                    useful += *u as usize;
                }
            }
        }
        assert!(open.values().all(|d| *d == 0));
        assert!(useful > 0, "some runs did useful work");
        let app: Vec<_> = mine
            .iter()
            .filter_map(|(_, _, e)| match e {
                Event::Activity { name, start } if &**name == "feed" => Some(*start),
                _ => None,
            })
            .collect();
        assert_eq!(app, vec![true, false]);
        assert!(mine.iter().any(|(_, _, e)| matches!(e, Event::PushProgress { .. })));
    }
}

#[test]
fn the_root_scope_is_an_operator_whose_runs_are_the_steps_around_its_children() {
    let events = traced_hello(2, 5);
    for worker in 0..2 {
        let mine: Vec<&Event> = events.iter().filter(|(w, _, _)| *w == worker).map(|(_, _, e)| e).collect();
        let created: Vec<(usize, usize, &str)> = mine
            .iter()
            .filter_map(|e| match e {
                Event::Operates { id, address, name } => Some((*id, address.len(), name.as_str())),
                _ => None,
            })
            .collect();
        let roots: Vec<_> = created.iter().filter(|(_, depth, _)| *depth == 1).collect();
        assert_eq!(roots.len(), 1, "worker {worker}: {created:?}");
        let (root, _, name) = *roots[0];
        assert_eq!(name, "Dataflow");
        assert!(created.iter().all(|(id, depth, _)| *depth == 1 || *id < root), "its id comes last");
        let (mut in_step, mut steps, mut useful) = (false, 0, false);
        for event in &mine {
            match event {
                Event::Schedule { id, start, useful: u } if *id == root => {
                    assert_ne!(in_step, *start, "steps do not nest");
                    in_step = *start;
                    steps += *start as usize;
                    useful |= *u;
                }
                Event::Schedule { start: true, .. } => {
                    assert!(in_step, "worker {worker}: a child ran outside a step")
                }
                _ => {}
            }
        }
        assert!(steps > 0 && useful && !in_step, "worker {worker}: {steps} steps, useful {useful}");
    }
}

#[test]
fn every_sent_message_and_progress_batch_is_received() {
    let events = traced_hello(2, 20);
    let mut messages: HashMap<(usize, usize, usize, u64), (usize, usize)> = HashMap::new();
    let mut progress: HashMap<(usize, usize, u64), (usize, usize)> = HashMap::new();
    for (worker, _, event) in &events {
        match event {
            Event::Messages { send, channel, source, target, sequence, length } => {
                let entry = messages.entry((*channel, *source, *target, *sequence)).or_default();
                if *send {
                    assert_eq!(*worker, *source);
                    entry.0 += length;
                } else {
                    assert_eq!(*worker, *target);
                    entry.1 += length;
                }
            }
            Event::Progress { send, source, channel, sequence, .. } => {
                let entry = progress.entry((*channel, *source, *sequence)).or_default();
                if *send {
                    entry.0 += 1;
                } else {
                    entry.1 += 1;
                }
            }
            _ => {}
        }
    }
    assert!(!messages.is_empty());
    for (key, (sent, received)) in &messages {
        assert_eq!(sent, received, "message {:?}", key);
    }
    let input_channel = events
        .iter()
        .find_map(|(_, _, e)| match e {
            Event::Channels { id, source: (1, 0), .. } => Some(*id),
            _ => None,
        })
        .expect("the input's channel");
    let records: usize =
        messages.iter().filter(|((c, ..), _)| *c == input_channel).map(|(_, (s, _))| *s).sum();
    assert!(records >= 20, "the input sent every record");
    assert!(!progress.is_empty());
    for (key, (sent, received)) in &progress {
        assert_eq!(
            (*sent, *received),
            (1, 2),
            "progress batch {:?} is sent once and received by both workers",
            key
        );
    }
}

#[test]
fn an_idle_worker_parks_until_data_arrives() {
    let trace: Trace = Default::default();
    let shared = trace.clone();
    timely_engine::execute(Config::Process(2), move |worker| {
        let sink = shared.clone();
        worker.install_logger(EventClasses::all(), move |index, events, _| {
            sink.lock()
                .unwrap()
                .extend(events.drain(..).map(|e| (index, clock::stamp_to_ns(e.stamp), e.event)));
        });
        let mut input = InputHandle::new();
        let probe = ProbeHandle::new();
        worker.dataflow(|scope| {
            scope.input_from(&mut input).exchange(|x: &u64| *x).probe_with(&probe);
        });
        let input: &mut InputHandle<u64, u64> = &mut input;
        if worker.index() == 0 {
            std::thread::sleep(std::time::Duration::from_millis(50));
            input.send(1);
            input.close();
        } else {
            input.close();
            while !probe.done() {
                worker.step_or_park(None);
            }
        }
    })
    .unwrap();
    let events = trace.lock().unwrap();
    let parks = events.iter().filter(|(w, _, e)| *w == 1 && matches!(e, Event::Park { .. })).count();
    let unparks = events.iter().filter(|(w, _, e)| *w == 1 && matches!(e, Event::Unpark { .. })).count();
    assert!(parks > 0, "worker 1 had nothing to do for 50 ms and parked");
    assert_eq!(parks, unparks);
    let woken_by_data =
        events.iter().any(|(w, _, e)| *w == 1 && matches!(e, Event::Unpark { wake: Wake::Data }));
    assert!(woken_by_data, "worker 1 was woken by the record worker 0 sent");
}

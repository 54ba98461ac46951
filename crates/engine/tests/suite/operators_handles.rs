//! Tests of the handles through which a program watches and drives a dataflow's progress,
//! stepping one worker: probes (`ProbeHandle`), capabilities (`Capability`, `CapabilitySet`)
//! and input handles (`InputHandle`), including the errors they report on misuse.
//!
//! Helpers shared with the other `operators_*.rs` tests are in `operators_support`.

use crate::operators_support::*;
use timely_engine::dataflow::operators::{CapabilityError, CapabilitySet, InputError};
use timely_engine::dataflow::{InputHandle, ProbeHandle, Scope};
use timely_engine::Product;

// ---------------------------------------------------------------------------------------
// Probes
// ---------------------------------------------------------------------------------------

#[test]
fn probe_reports_less_than_less_equal_done_and_frontier() {
    timely_engine::example(|worker| {
        let mut input: InputHandle<u64, u64> = InputHandle::new();
        let probe = worker.dataflow(|scope| scope.input_from(&mut input).probe());
        assert_eq!(frontier(&probe), vec![0]);
        assert!(probe.less_equal(&0) && !probe.less_than(&0) && probe.less_than(&1) && !probe.done());
        input.advance_to(5);
        step_until(worker, || !probe.less_than(&5));
        assert_eq!(frontier(&probe), vec![5]);
        assert!(probe.less_equal(&5) && !probe.less_than(&5) && probe.less_than(&6) && !probe.less_equal(&4));
        assert!(!probe.done());
        input.close();
        step_until(worker, || probe.done());
        assert!(frontier(&probe).is_empty());
        assert!(!probe.less_equal(&u64::MAX));
    });
}

#[test]
fn probe_with_several_streams_reports_their_combined_frontier() {
    timely_engine::example(|worker| {
        let (mut a, mut b) = (InputHandle::<u64, u64>::new(), InputHandle::<u64, u64>::new());
        let probe = ProbeHandle::new();
        assert!(probe.done(), "a probe that watches nothing is done");
        worker.dataflow(|scope| {
            scope.input_from(&mut a).probe_with(&probe);
            scope.input_from(&mut b).probe_with(&probe);
        });
        a.advance_to(5);
        b.advance_to(3);
        step_until(worker, || !probe.less_than(&3));
        step_a_while(worker);
        assert_eq!(frontier(&probe), vec![3], "the earlier input holds the probe back");
        b.close();
        step_until(worker, || !probe.less_than(&5));
        assert_eq!(frontier(&probe), vec![5]);
        a.close();
        step_until(worker, || probe.done());
    });
}

// ---------------------------------------------------------------------------------------
// Capabilities
// ---------------------------------------------------------------------------------------

#[test]
fn capability_holds_the_probe_until_downgraded_or_dropped() {
    timely_engine::example(|worker| {
        let (probe, slot, activator) = worker.dataflow(|scope: &Scope<u64>| {
            let (stream, slot, activator) = held_capability(scope);
            (stream.probe(), slot, activator)
        });
        step_a_while(worker);
        assert_eq!(frontier(&probe), vec![0], "the capability at 0 holds the probe");

        slot.borrow_mut().as_mut().expect("held").downgrade(&3);
        assert_eq!(*slot.borrow().as_ref().expect("held").time(), 3);
        activator.activate();
        step_until(worker, || !probe.less_than(&3));
        assert_eq!(frontier(&probe), vec![3]);

        let later = slot.borrow().as_ref().expect("held").delayed(&7);
        assert_eq!(*later.time(), 7);
        activator.activate();
        step_a_while(worker);
        assert_eq!(frontier(&probe), vec![3], "a delayed copy does not release the original");

        drop(slot.borrow_mut().take());
        activator.activate();
        step_until(worker, || !probe.less_than(&7));
        assert_eq!(frontier(&probe), vec![7], "dropping the original leaves the delayed copy");
        step_a_while(worker);
        assert!(!probe.done(), "the probe stays until every capability is dropped");

        drop(later);
        activator.activate();
        step_until(worker, || probe.done());
    });
}

#[test]
fn capability_try_delayed_and_try_downgrade_reject_earlier_times() {
    timely_engine::example(|worker| {
        let (probe, slot, activator) = worker.dataflow(|scope: &Scope<u64>| {
            let (stream, slot, activator) = held_capability(scope);
            (stream.probe(), slot, activator)
        });
        let mut capability = slot.borrow_mut().take().expect("held");
        capability.downgrade(&4);
        let error = capability.try_delayed(&2).expect_err("2 is earlier than 4");
        assert_eq!(error, CapabilityError::NotInFuture { held: "4".into(), requested: "2".into() });
        assert!(error.to_string().contains("earlier"), "{}", error);
        assert!(capability.try_downgrade(&3).is_err());
        assert_eq!(*capability.time(), 4, "a failed downgrade leaves the capability as it was");
        assert_eq!(capability.try_delayed(&4).map(|c| *c.time()), Ok(4));
        capability.try_downgrade(&6).expect("6 is later");
        activator.activate();
        step_until(worker, || !probe.less_than(&6));
        assert_eq!(frontier(&probe), vec![6]);
        drop(capability);
        activator.activate();
        step_until(worker, || probe.done());
    });
}

#[test]
fn capability_set_keeps_minimal_times_and_drives_the_frontier() {
    type P = Product<u64, u64>;
    let p = Product::new;
    timely_engine::example(|worker| {
        let (probe, slot, activator) = worker.dataflow(|scope: &Scope<P>| {
            let (stream, slot, activator) = held_capability(scope);
            (stream.probe(), slot, activator)
        });
        let times = |set: &CapabilitySet<P>| {
            let mut times: Vec<P> = set.iter().map(|c| *c.time()).collect();
            times.sort();
            times
        };
        let mut set = CapabilitySet::from_elem(slot.borrow_mut().take().expect("held"));
        set.insert(set.delayed(&p(2, 2)));
        assert_eq!(times(&set), vec![p(0, 0)], "a later time is covered by (0, 0)");

        set.downgrade(&[p(1, 0), p(0, 1)]);
        assert_eq!(times(&set), vec![p(0, 1), p(1, 0)]);
        set.insert(set.delayed(&p(1, 1)));
        assert_eq!(times(&set), vec![p(0, 1), p(1, 0)], "(1, 1) is covered");
        assert!(set.try_delayed(&p(0, 0)).is_err(), "(0, 0) is before every element");
        assert_eq!(*set.delayed(&p(0, 5)).time(), p(0, 5));
        activator.activate();
        step_until(worker, || frontier(&probe) == vec![p(0, 1), p(1, 0)]);

        let mut other = CapabilitySet::new();
        assert!(other.is_empty());
        other.insert(set.delayed(&p(3, 3)));
        other.insert(set.delayed(&p(2, 4)));
        assert_eq!(times(&other), vec![p(2, 4), p(3, 3)], "incomparable times are both kept");
        other.insert(set.delayed(&p(2, 3)));
        assert_eq!(times(&other), vec![p(2, 3)], "(2, 3) covers both");

        set.downgrade(&[p(2, 0)]);
        activator.activate();
        step_until(worker, || frontier(&probe) == vec![p(2, 0)]);
        set.downgrade(&[]);
        assert!(set.is_empty());
        activator.activate();
        step_a_while(worker);
        assert_eq!(frontier(&probe), vec![p(2, 3)], "the other set still holds (2, 3)");
        drop(other);
        activator.activate();
        step_until(worker, || probe.done());
    });
}

// ---------------------------------------------------------------------------------------
// Input handles
// ---------------------------------------------------------------------------------------

#[test]
fn input_handle_sends_advances_and_closes_every_attachment() {
    let captured = timely_engine::example(|worker| {
        let mut input = InputHandle::new();
        assert_eq!(*input.time(), 0);
        let captured = worker.dataflow(|scope: &Scope<u64>| {
            let first = scope.input_from(&mut input).map(|x: u64| (1u64, x));
            let second = scope.input_from(&mut input).map(|x: u64| (2u64, x));
            first.concat(&second).capture()
        });
        input.send(1);
        let mut batch = vec![2, 3];
        input.send_batch(&mut batch);
        assert!(batch.is_empty(), "send_batch takes the records");
        input.advance_to(2);
        assert_eq!(*input.time(), 2);
        input.advance_to(2);
        input.send(4);
        assert!(!input.is_closed());
        input.close();
        assert!(input.is_closed());
        input.close();
        captured
    });
    let expected: Vec<(u64, (u64, u64))> = [1, 2]
        .iter()
        .flat_map(|&tag| [(0, (tag, 1)), (0, (tag, 2)), (0, (tag, 3)), (2, (tag, 4))])
        .collect::<Vec<_>>();
    let mut expected = expected;
    expected.sort();
    assert_eq!(captured.extract(), expected);
}

#[test]
fn input_handle_rejects_going_back_and_sending_after_close() {
    timely_engine::example(|worker| {
        let mut input = InputHandle::new();
        let captured = worker.dataflow(|scope: &Scope<u64>| scope.input_from(&mut input).capture());
        input.advance_to(5);
        let error = input.try_advance_to(3).expect_err("3 is before 5");
        assert_eq!(error, InputError::TimeNotAdvancing { current: "5".into(), requested: "3".into() });
        assert!(error.to_string().contains("only move forward"), "{}", error);
        assert_eq!(*input.time(), 5, "a failed advance leaves the time");
        input.send(7u64);
        input.close();
        assert_eq!(input.try_send_batch(&mut vec![8]), Err(InputError::Closed));
        assert_eq!(input.try_advance_to(9), Err(InputError::Closed));
        while worker.step() {}
        assert_eq!(captured.extract(), vec![(5, 7)], "nothing sent after close arrives");
    });
}

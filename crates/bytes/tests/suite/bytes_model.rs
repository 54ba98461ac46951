//! Property test: random sequences of splits, writes, merges, drops, reclaims and recoveries on
//! `Bytes` behave exactly like a reference model made of plain vectors.

use proptest::prelude::*;
use proptest::sample::Index;
use timely_bytes::Bytes;

#[derive(Clone, Debug)]
enum Op {
    /// Make a new allocation with this many bytes.
    Allocate(u8),
    /// `extract_to` on a handle, at a position chosen inside `0..=len`.
    Split(Index, Index),
    /// Write a byte through a handle, at a position inside it (if it is not empty).
    Write(Index, Index, u8),
    /// `try_merge` of one handle into another (possibly of another allocation).
    Merge(Index, Index),
    /// `try_merge` of the handle that starts where this one ends, if there is one.
    MergeNeighbour(Index),
    Drop(Index),
    Reclaim(Index),
    Recover(Index),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => any::<u8>().prop_map(Op::Allocate),
        4 => (any::<Index>(), any::<Index>()).prop_map(|(h, at)| Op::Split(h, at)),
        3 => (any::<Index>(), any::<Index>(), any::<u8>()).prop_map(|(h, at, v)| Op::Write(h, at, v)),
        2 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Op::Merge(a, b)),
        3 => any::<Index>().prop_map(Op::MergeNeighbour),
        2 => any::<Index>().prop_map(Op::Drop),
        1 => any::<Index>().prop_map(Op::Reclaim),
        1 => any::<Index>().prop_map(Op::Recover),
    ]
}

/// A live handle and where the model says it is.
struct Handle {
    bytes: Bytes,
    allocation: usize,
    offset: usize,
}

/// The model: the contents of every allocation ever made (`None` once recovered).
struct Model {
    allocations: Vec<Option<Vec<u8>>>,
    handles: Vec<Handle>,
    /// Successful merges, to make sure the test exercises them.
    merges: usize,
    /// Successful recoveries and reclaims, likewise.
    recoveries: usize,
}

impl Model {
    fn allocate(&mut self, len: usize) {
        let contents: Vec<u8> = (0..len).map(|i| (i * 7 + self.allocations.len()) as u8).collect();
        self.handles.push(Handle {
            bytes: Bytes::from(contents.clone()),
            allocation: self.allocations.len(),
            offset: 0,
        });
        self.allocations.push(Some(contents));
    }

    fn handles_on(&self, allocation: usize) -> usize {
        self.handles.iter().filter(|h| h.allocation == allocation).count()
    }

    fn apply(&mut self, op: Op) {
        if let Op::Allocate(len) = op {
            return self.allocate(len as usize);
        }
        if self.handles.is_empty() {
            return;
        }
        let n = self.handles.len();
        match op {
            Op::Allocate(_) => unreachable!(),
            Op::Split(h, at) => {
                let handle = &mut self.handles[h.index(n)];
                let at = at.index(handle.bytes.len() + 1);
                let front = handle.bytes.extract_to(at);
                let (allocation, offset) = (handle.allocation, handle.offset);
                handle.offset += at;
                self.handles.push(Handle { bytes: front, allocation, offset });
            }
            Op::Write(h, at, value) => {
                let handle = &mut self.handles[h.index(n)];
                if !handle.bytes.is_empty() {
                    let at = at.index(handle.bytes.len());
                    handle.bytes[at] = value;
                    self.allocations[handle.allocation].as_mut().unwrap()[handle.offset + at] = value;
                }
            }
            Op::Merge(a, b) => self.merge(a.index(n), b.index(n)),
            Op::MergeNeighbour(a) => {
                let a = a.index(n);
                let (allocation, end) =
                    (self.handles[a].allocation, self.handles[a].offset + self.handles[a].bytes.len());
                let b = (0..n).find(|&b| {
                    b != a && self.handles[b].allocation == allocation && self.handles[b].offset == end
                });
                if let Some(b) = b {
                    self.merge(a, b);
                }
            }
            Op::Drop(h) => {
                self.handles.swap_remove(h.index(n));
            }
            Op::Reclaim(h) => {
                let h = h.index(n);
                let unique = self.handles_on(self.handles[h].allocation) == 1;
                let handle = &mut self.handles[h];
                assert_eq!(handle.bytes.try_reclaim(), unique);
                if unique {
                    handle.offset = 0;
                    self.recoveries += 1;
                }
            }
            Op::Recover(h) => {
                let handle = self.handles.swap_remove(h.index(n));
                let unique = self.handles_on(handle.allocation) == 0;
                match handle.bytes.try_recover() {
                    Ok(vec) => {
                        assert!(unique, "recovered an allocation that other handles share");
                        let expected = self.allocations[handle.allocation].take().unwrap();
                        assert_eq!(vec, expected);
                        self.recoveries += 1;
                    }
                    Err(bytes) => {
                        assert!(!unique, "failed to recover from the only handle");
                        self.handles.push(Handle { bytes, ..handle });
                    }
                }
            }
        }
    }

    /// `try_merge` of handle `b` into handle `a`, checked against the model.
    fn merge(&mut self, a: usize, b: usize) {
        if a == b {
            return;
        }
        let other = self.handles.swap_remove(b);
        // `swap_remove` moved the last handle to `b`: follow it if it was `a`.
        let a = if a == self.handles.len() { b } else { a };
        let target = &mut self.handles[a];
        let adjacent =
            target.allocation == other.allocation && target.offset + target.bytes.len() == other.offset;
        match target.bytes.try_merge(other.bytes) {
            Ok(()) => {
                assert!(adjacent, "merged regions that are not adjacent");
                self.merges += 1;
            }
            Err(bytes) => {
                assert!(!adjacent, "refused to merge adjacent regions");
                self.handles.push(Handle { bytes, ..other });
            }
        }
    }

    /// Every handle shows exactly its part of the model's allocation.
    fn check(&self) {
        for handle in &self.handles {
            let contents = self.allocations[handle.allocation].as_ref().expect("live allocation");
            assert_eq!(&handle.bytes[..], &contents[handle.offset..handle.offset + handle.bytes.len()]);
        }
    }
}

fn ops() -> impl Strategy<Value = (usize, Vec<Op>)> {
    (0usize..64, prop::collection::vec(op(), 0..120))
}

/// Runs `ops` from two allocations of `first` and `first / 2` bytes, checking the model after
/// every step and recovery of every allocation at the end.
fn run(first: usize, ops: Vec<Op>) -> Model {
    let mut model = Model { allocations: Vec::new(), handles: Vec::new(), merges: 0, recoveries: 0 };
    model.allocate(first);
    model.allocate(first / 2);
    for op in ops {
        model.apply(op);
        model.check();
    }
    // Dropping all but one handle of an allocation always allows recovery.
    let mut handles = std::mem::take(&mut model.handles);
    for (allocation, contents) in model.allocations.iter_mut().enumerate() {
        let (mut mine, rest): (Vec<Handle>, Vec<Handle>) =
            handles.into_iter().partition(|h| h.allocation == allocation);
        handles = rest;
        if let Some(last) = mine.pop() {
            drop(mine);
            assert_eq!(last.bytes.try_recover().unwrap(), contents.take().unwrap());
        }
    }
    model
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn bytes_behave_like_the_model((first, ops) in ops()) {
        run(first, ops);
    }
}

/// The generated sequences do reach the interesting cases (successful merges and recoveries),
/// so the property above is not vacuous.
#[test]
fn generated_sequences_merge_and_recover() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut merges, mut recoveries) = (0, 0);
    for _ in 0..100 {
        let (first, ops) = ops().new_tree(&mut runner).unwrap().current();
        let model = run(first, ops);
        merges += model.merges;
        recoveries += model.recoveries;
    }
    assert!(merges > 100, "only {merges} merges");
    assert!(recoveries > 10, "only {recoveries} recoveries");
}

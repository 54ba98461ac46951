//! The epoch scope of a keyed operator: the crate's operators run on `u64` times, a
//! dataflow's root scope on `VecTime`s of one coordinate. Each keyed operator is built in a
//! scope nested in the root whose times are the root's epochs as `u64`s; its streams enter
//! and leave it through `Epochs`, which maps a time to its one coordinate and back.
//!
//! The scope's name starts with [`SCOPE_PREFIX`], exported to Python as
//! `EPOCH_SCOPE_PREFIX`: the autoscaler looks through such a scope and judges the operators
//! inside it as if they sat in the root (`docs/autoscaling.md`).

use crate::time::Time;
use timely_engine::dataflow::{Data, Scope, Stream};
use timely_engine::Nesting;

/// What an epoch scope's name starts with; the rest is the kind of keyed operator inside.
pub const SCOPE_PREFIX: &str = "Epochs:";

/// A root time is its epoch.
#[derive(Clone, Copy, Debug)]
pub struct Epochs;

impl Nesting<Time, u64> for Epochs {
    fn to_inner(&self, outer: Time) -> u64 {
        outer.get(0)
    }
    fn to_outer(&self, epoch: u64) -> Time {
        Time::root(epoch)
    }
    fn summarize(&self, path: u64) -> Time {
        Time::root(path)
    }
}

/// Builds an operator with `build` in a new epoch scope nested in `root`, named `name`
/// after [`SCOPE_PREFIX`]; `build` brings streams in with `enter` and returns the
/// operator's output, which leaves to `root`.
pub fn in_epoch_scope<O: Data>(
    root: &Scope<Time>,
    name: &str,
    build: impl FnOnce(&Scope<u64>) -> Stream<u64, O>,
) -> Stream<Time, O> {
    let inner = root.new_nested(&format!("{SCOPE_PREFIX}{name}"), Epochs);
    let output = build(&inner).leave_nested(root, Epochs);
    inner.finish();
    output
}

/// `stream` of the root scope, brought into the epoch scope `inner`.
pub fn enter<D: Data>(stream: &Stream<Time, D>, inner: &Scope<u64>) -> Stream<u64, D> {
    stream.enter_nested(inner, Epochs)
}

//! The shared shape of record-at-a-time operators: a callback per batch of records, with
//! the interpreter attached once per operator run. Owns no operator of its own.

use crate::record::Record;
use crate::stream::StreamHandle;
use crate::time::Time;
use pyo3::prelude::*;
use timely_engine::dataflow::Pipeline;

/// Applies `logic(py, time, data, output)` to every batch of `stream`, with the interpreter
/// attached once per operator run; `output` collects the records to send at the batch's time.
pub fn batch_operator<L>(stream: &StreamHandle, name: &'static str, mut logic: L) -> StreamHandle
where
    L: FnMut(Python<'_>, &Time, &mut Vec<Record>, &mut Vec<Record>) -> PyResult<()> + 'static,
{
    let context = stream.context.clone();
    let mut produced = Vec::new();
    let built = stream.stream.unary(Pipeline, name, move |_, _| {
        move |input, output| {
            context.run(name, |py| {
                while let Some((time, data)) = input.next() {
                    logic(py, time.time(), data, &mut produced)?;
                    if !produced.is_empty() {
                        output.session(&time).give_vec(&mut produced);
                    }
                }
                Ok(())
            });
            // After a failure, drain and drop what arrives.
            while input.next().is_some() {}
        }
    });
    stream.wrap(built)
}

//! The built-in operators of `Stream`, one file per family. Each file holds, for each of
//! its operators, the Python method (which checks the arguments when the dataflow is built)
//! and the engine operator, written once for any timestamp depth. Each operator runs its
//! Python callbacks with the interpreter attached once per operator run (a batch of
//! messages), never per record by the engine itself; routing and progress tracking run
//! without it. The generic operators (`unary`, `binary`, ...) are `generic`'s.

mod batch;
mod delay;
pub mod exchange;
mod inspect;
mod keyed;
mod map;
mod probe;
mod split;

//! The generic operators as Python calls them: `Stream.unary`, `unary_frontier`,
//! `unary_notify`, `binary`, `binary_frontier`, `binary_notify`, `sink`, and
//! `Scope.source`. Checks their arguments and hands a `Spec` to `builder`.

use crate::args::{callable, optional_callable};
use crate::generic::builder::build_operator;
use crate::generic::state::{Kind, Spec};
use crate::scope::{PyScope, ScopeHandle};
use crate::stream::{PyStream, StreamHandle};
use pyo3::prelude::*;

/// Builds `spec` reading `stream` (and `other`, which must be of the same scope).
fn build_on(
    py: Python<'_>,
    stream: &StreamHandle,
    other: Option<&PyStream>,
    spec: Spec,
) -> PyResult<Option<PyStream>> {
    let mut inputs = vec![&stream.stream];
    if let Some(other) = other {
        inputs.push(&other.at(stream.depth, &spec.name)?.stream);
    }
    let built = build_operator(py, (stream.stream.scope(), stream.depth), &stream.context, inputs, spec)?;
    Ok(built.map(|built| stream.wrap(built).into()))
}

fn source(py: Python<'_>, scope: &ScopeHandle, spec: Spec) -> PyResult<PyStream> {
    let built = build_operator(py, (&scope.scope, scope.depth), &scope.context, vec![], spec)?;
    Ok(scope.stream(built.expect("a source has an output")).into())
}

/// The exchange argument of an input: None, or a key function.
fn exchange(py: Python<'_>, key: Option<Py<PyAny>>, what: &str) -> PyResult<Option<Py<PyAny>>> {
    optional_callable(py, key, &format!("{} (a key function, or None for no exchange)", what))
}

impl PyStream {
    fn generic(&self, py: Python<'_>, other: Option<&PyStream>, spec: Spec) -> PyResult<Option<PyStream>> {
        build_on(py, &self.inner, other, spec)
    }

    fn unary_kind(
        &self,
        py: Python<'_>,
        (name, kind, constructed): (&str, Kind, bool),
        callable_: Py<PyAny>,
        key: Option<Py<PyAny>>,
    ) -> PyResult<PyStream> {
        let what = if constructed { "constructor" } else { "logic" };
        let spec = Spec {
            name: name.to_owned(),
            kind,
            callable: callable(py, callable_, what)?,
            constructed,
            exchanges: vec![exchange(py, key, "exchange")?],
            output: true,
        };
        Ok(self.generic(py, None, spec)?.expect("unary operators have an output"))
    }

    fn binary_kind(
        &self,
        py: Python<'_>,
        other: &PyStream,
        (name, kind, constructed): (&str, Kind, bool),
        callable_: Py<PyAny>,
        (exchange1, exchange2): (Option<Py<PyAny>>, Option<Py<PyAny>>),
    ) -> PyResult<PyStream> {
        let what = if constructed { "constructor" } else { "logic" };
        let spec = Spec {
            name: name.to_owned(),
            kind,
            callable: callable(py, callable_, what)?,
            constructed,
            exchanges: vec![exchange(py, exchange1, "exchange1")?, exchange(py, exchange2, "exchange2")?],
            output: true,
        };
        Ok(self.generic(py, Some(other), spec)?.expect("binary operators have an output"))
    }
}

#[pymethods]
impl PyStream {
    /// A one-input, one-output operator with Python logic.
    ///
    /// `constructor(capability, info)` runs now, with the operator's initial `Capability`
    /// (at the first time; drop or release it unless the operator sends records that no
    /// input justifies) and its `OperatorInfo`, and returns `logic(input, output)`, which
    /// runs whenever records arrive (or the operator is activated). `exchange`, if given,
    /// is a key function: record `x` goes to worker `route(key(x))` (`key(x) % peers`
    /// for ints, a stable hash otherwise); None keeps records on this worker.
    #[pyo3(signature = (constructor, name="Unary", exchange=None))]
    fn unary(
        &self,
        py: Python<'_>,
        constructor: Py<PyAny>,
        name: &str,
        exchange: Option<Py<PyAny>>,
    ) -> PyResult<PyStream> {
        self.unary_kind(py, (name, Kind::Plain, true), constructor, exchange)
    }

    /// Like `unary`, but the logic also runs when the input frontier changes and can read
    /// it as `input.frontier` (a `Frontier`).
    #[pyo3(signature = (constructor, name="UnaryFrontier", exchange=None))]
    fn unary_frontier(
        &self,
        py: Python<'_>,
        constructor: Py<PyAny>,
        name: &str,
        exchange: Option<Py<PyAny>>,
    ) -> PyResult<PyStream> {
        self.unary_kind(py, (name, Kind::Frontier, true), constructor, exchange)
    }

    /// A one-input, one-output operator with notifications: `logic(input, output,
    /// notificator)` runs when records arrive or the input frontier changes; it requests
    /// notifications with `notificator.notify_at(capability)` and receives them by
    /// iterating the notificator once no more records can arrive at their times.
    #[pyo3(signature = (logic, name="UnaryNotify", exchange=None))]
    fn unary_notify(
        &self,
        py: Python<'_>,
        logic: Py<PyAny>,
        name: &str,
        exchange: Option<Py<PyAny>>,
    ) -> PyResult<PyStream> {
        self.unary_kind(py, (name, Kind::Notify, false), logic, exchange)
    }

    /// A two-input, one-output operator: `constructor(capability, info)` returns
    /// `logic(input1, input2, output)`. `exchange1`/`exchange2` route the inputs like
    /// `unary`'s `exchange`.
    #[pyo3(signature = (other, constructor, name="Binary", exchange1=None, exchange2=None))]
    fn binary(
        &self,
        py: Python<'_>,
        other: PyRef<'_, PyStream>,
        constructor: Py<PyAny>,
        name: &str,
        exchange1: Option<Py<PyAny>>,
        exchange2: Option<Py<PyAny>>,
    ) -> PyResult<PyStream> {
        self.binary_kind(py, &other, (name, Kind::Plain, true), constructor, (exchange1, exchange2))
    }

    /// Like `binary`, with both input frontiers visible (`input1.frontier`,
    /// `input2.frontier`).
    #[pyo3(signature = (other, constructor, name="BinaryFrontier", exchange1=None, exchange2=None))]
    fn binary_frontier(
        &self,
        py: Python<'_>,
        other: PyRef<'_, PyStream>,
        constructor: Py<PyAny>,
        name: &str,
        exchange1: Option<Py<PyAny>>,
        exchange2: Option<Py<PyAny>>,
    ) -> PyResult<PyStream> {
        self.binary_kind(py, &other, (name, Kind::Frontier, true), constructor, (exchange1, exchange2))
    }

    /// A two-input operator with notifications: `logic(input1, input2, output,
    /// notificator)`; a notification is delivered once neither input can still receive
    /// records at its time.
    #[pyo3(signature = (other, logic, name="BinaryNotify", exchange1=None, exchange2=None))]
    fn binary_notify(
        &self,
        py: Python<'_>,
        other: PyRef<'_, PyStream>,
        logic: Py<PyAny>,
        name: &str,
        exchange1: Option<Py<PyAny>>,
        exchange2: Option<Py<PyAny>>,
    ) -> PyResult<PyStream> {
        self.binary_kind(py, &other, (name, Kind::Notify, false), logic, (exchange1, exchange2))
    }

    /// A one-input operator without output: `logic(input)` runs when records arrive or
    /// the input frontier (`input.frontier`) changes.
    #[pyo3(signature = (logic, name="Sink", exchange=None))]
    fn sink(
        &self,
        py: Python<'_>,
        logic: Py<PyAny>,
        name: &str,
        exchange: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let spec = Spec {
            name: name.to_owned(),
            kind: Kind::Frontier,
            callable: callable(py, logic, "logic")?,
            constructed: false,
            exchanges: vec![self::exchange(py, exchange, "exchange")?],
            output: false,
        };
        self.generic(py, None, spec)?;
        Ok(())
    }
}

#[pymethods]
impl PyScope {
    /// An operator without inputs that produces records.
    ///
    /// `constructor(capability, info)` runs now and returns `logic(output)`. The logic
    /// runs once at start and then whenever activated: `info.activate()` schedules it at
    /// the worker's next step. Send with `output.give(capability, x)`; `downgrade` the
    /// capability as times complete and release it when done: a source holding no
    /// capability is finished, and one that holds a capability must be activated again.
    ///
    /// When the worker's process leaves the cluster (`worker.leaving`), every capability of
    /// the source is released (`OperatorBuilder::release_on_leave`): what it gave before is delivered, and using
    /// a capability afterwards (`give` with it, `delayed`, `downgrade`, `time`) raises
    /// `LeavingError`; the source should stop. Letting that error out of the logic ends the
    /// run quietly, so a source that never stops still lets its process leave; any other
    /// exception fails the run. Operators with inputs are not released: they finish when
    /// their inputs do.
    #[pyo3(signature = (constructor, name="Source"))]
    fn source(&self, py: Python<'_>, constructor: Py<PyAny>, name: &str) -> PyResult<PyStream> {
        let spec = Spec {
            name: name.to_owned(),
            kind: Kind::Frontier,
            callable: callable(py, constructor, "constructor")?,
            constructed: true,
            exchanges: vec![],
            output: true,
        };
        source(py, &self.inner, spec)
    }
}

//! Planning from Python: routing tables as lists of owners, `plan` and `rebalance` of the
//! Megaphone crate, its `Controller` (a program's planned table and the moves due at each
//! time), and the bin of a key. Nothing here sends: sending the commands is the caller's
//! business (`timely_py.megaphone` wraps these in typed classes).

use crate::key::Key;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use timely_megaphone::{Bins, Command, Controller, MegaphoneError, RoutingTable, Strategy};

fn value_error(what: &str) -> impl Fn(MegaphoneError) -> PyErr + '_ {
    move |error| PyValueError::new_err(format!("{what}: {error}"))
}

fn table(owners: Vec<usize>, what: &str) -> PyResult<RoutingTable> {
    RoutingTable::from_owners(owners).map_err(value_error(what))
}

fn strategy(name: &str, per_worker: usize) -> PyResult<Strategy> {
    match name {
        "all_at_once" => Ok(Strategy::AllAtOnce),
        "fluid" => Ok(Strategy::Fluid),
        "batched" => Ok(Strategy::Batched { per_worker }),
        _ => Err(PyValueError::new_err(format!(
            "unknown strategy {name:?}: use 'all_at_once', 'fluid' or 'batched'"
        ))),
    }
}

/// The owners of the initial table of `bins` bins over `peers` workers (bin `b` on `b % peers`).
#[pyfunction]
fn megaphone_round_robin(bins: usize, peers: usize) -> PyResult<Vec<usize>> {
    let bins = Bins::new(bins).map_err(value_error("round_robin"))?;
    Ok(RoutingTable::round_robin(bins, peers).map_err(value_error("round_robin"))?.owners().to_vec())
}

/// `(time, bin, worker)` moves that turn `current` into `target` with strategy `name`.
#[pyfunction]
fn megaphone_plan(
    current: Vec<usize>,
    target: Vec<usize>,
    name: &str,
    per_worker: usize,
    start: u64,
) -> PyResult<Vec<(u64, usize, usize)>> {
    let (current, target) = (table(current, "plan: current")?, table(target, "plan: target")?);
    let commands = timely_megaphone::plan(&current, &target, strategy(name, per_worker)?, start)
        .map_err(value_error("plan"))?;
    Ok(commands.into_iter().map(|(time, Command::Move { bin, worker })| (time, bin, worker)).collect())
}

/// The owners of `current` spread evenly over `workers`, moving as few bins as possible.
#[pyfunction]
fn megaphone_rebalance(current: Vec<usize>, workers: Vec<usize>) -> PyResult<Vec<usize>> {
    let current = table(current, "rebalance: current")?;
    Ok(timely_megaphone::rebalance(&current, workers).map_err(value_error("rebalance"))?.owners().to_vec())
}

/// The bin of `key` among `bins` bins, as the keyed operators compute it.
#[pyfunction]
fn megaphone_bin(key: &Bound<'_, PyAny>, bins: usize) -> PyResult<usize> {
    let bins = Bins::new(bins).map_err(value_error("bin_of"))?;
    Ok(bins.of(&Key::new(key, "bin_of")?))
}

/// The crate's `Controller` over tables given as lists of owners and strategies by name.
#[pyclass(name = "MegaphoneController", module = "timely_py._core")]
struct PyController(Controller);

#[pymethods]
impl PyController {
    #[new]
    fn new(owners: Vec<usize>) -> PyResult<Self> {
        Ok(PyController(Controller::new(table(owners, "Controller")?)))
    }

    /// The owners of the table in force once every planned move applies.
    fn owners(&self) -> Vec<usize> {
        self.0.table().owners().to_vec()
    }

    /// True when every planned move has been handed out.
    fn is_idle(&self) -> bool {
        self.0.is_idle()
    }

    /// Plans moves to `target` (owners); returns how many bins move.
    fn move_to(
        &mut self,
        target: Vec<usize>,
        name: &str,
        per_worker: usize,
        earliest: u64,
    ) -> PyResult<usize> {
        let target = table(target, "Controller.move_to: target")?;
        self.0
            .move_to(target, strategy(name, per_worker)?, earliest)
            .map_err(value_error("Controller.move_to"))
    }

    /// Plans moves that spread the bins evenly over `workers`; returns how many move.
    fn rebalance(
        &mut self,
        workers: Vec<usize>,
        name: &str,
        per_worker: usize,
        earliest: u64,
    ) -> PyResult<usize> {
        self.0
            .rebalance(workers, strategy(name, per_worker)?, earliest)
            .map_err(value_error("Controller.rebalance"))
    }

    /// Plans moves that take every bin off `leaving` onto the other `members`; returns how
    /// many move.
    fn evacuate(
        &mut self,
        leaving: Vec<usize>,
        members: Vec<usize>,
        name: &str,
        per_worker: usize,
        earliest: u64,
    ) -> PyResult<usize> {
        self.0
            .evacuate(leaving, members, strategy(name, per_worker)?, earliest)
            .map_err(value_error("Controller.evacuate"))
    }

    /// `(bin, worker)` of the planned moves due at `time` or earlier, to send now.
    fn due(&mut self, time: u64) -> Vec<(usize, usize)> {
        pairs(self.0.due(time))
    }

    /// `(bin, worker)` of the earliest planned step, to send now.
    fn next_step(&mut self) -> Vec<(usize, usize)> {
        pairs(self.0.next_step())
    }
}

fn pairs(commands: Vec<Command>) -> Vec<(usize, usize)> {
    commands.into_iter().map(|Command::Move { bin, worker }| (bin, worker)).collect()
}

/// Adds the planning functions and the controller to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyController>()?;
    m.add_function(wrap_pyfunction!(megaphone_round_robin, m)?)?;
    m.add_function(wrap_pyfunction!(megaphone_plan, m)?)?;
    m.add_function(wrap_pyfunction!(megaphone_rebalance, m)?)?;
    m.add_function(wrap_pyfunction!(megaphone_bin, m)?)
}

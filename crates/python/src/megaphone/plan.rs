//! Planning from Python: routing tables as lists of owners, `plan` and `rebalance` of the
//! Megaphone crate, and the bin of a key. Pure functions; sending the commands they return is
//! the caller's business (`timely_py.megaphone` wraps them in typed classes).

use super::keys::key_bytes;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use timely_megaphone::{Bins, Command, MegaphoneError, RoutingTable, Strategy};

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

/// The owners of `current` spread evenly over `peers` workers, moving as few bins as possible.
#[pyfunction]
fn megaphone_rebalance(current: Vec<usize>, peers: usize) -> PyResult<Vec<usize>> {
    let current = table(current, "rebalance: current")?;
    Ok(timely_megaphone::rebalance(&current, peers).map_err(value_error("rebalance"))?.owners().to_vec())
}

/// The bin of `key` among `bins` bins, as the keyed operators compute it.
#[pyfunction]
fn megaphone_bin(py: Python<'_>, key: &Bound<'_, PyAny>, bins: usize) -> PyResult<usize> {
    let bins = Bins::new(bins).map_err(value_error("bin_of"))?;
    Ok(bins.of(&key_bytes(py, key, "bin_of")?))
}

/// Adds the planning functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(megaphone_round_robin, m)?)?;
    m.add_function(wrap_pyfunction!(megaphone_plan, m)?)?;
    m.add_function(wrap_pyfunction!(megaphone_rebalance, m)?)?;
    m.add_function(wrap_pyfunction!(megaphone_bin, m)?)
}

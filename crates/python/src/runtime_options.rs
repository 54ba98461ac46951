//! The runtime's command-line options as Python sees them: their list, and a command line
//! rendered from values, so that the launcher writes the options the runtime reads
//! (`timely_communication::RuntimeArgs`) without a list of its own. It must not start anything.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::collections::BTreeMap;
use timely_communication::{RuntimeArgs, RuntimeOption};

/// Every runtime option: `(spellings, takes_value, help)`, the spellings as written on a
/// command line (`["-w", "--workers", "--threads"]`), the rendered one first.
#[pyfunction]
pub fn runtime_options() -> Vec<(Vec<String>, bool, &'static str)> {
    RuntimeOption::ALL
        .iter()
        .map(|option| {
            let (short, long) = option.spellings();
            let spellings =
                short.map(|c| format!("-{c}")).into_iter().chain(long.iter().map(|l| format!("--{l}")));
            (spellings.collect(), option.takes_value(), option.help())
        })
        .collect()
}

/// The command line that gives the runtime `values`, keyed by an option's first long
/// spelling without dashes (`{"processes": "2", "join": "0", "insecure": ""}`), in the
/// runtime's order and spelling (`["-n", "2", "--join", "0", "--insecure"]`).
#[pyfunction]
pub fn runtime_args(values: BTreeMap<String, String>) -> PyResult<Vec<String>> {
    let mut args = RuntimeArgs::default();
    for (key, value) in values {
        let option = RuntimeOption::ALL
            .into_iter()
            .find(|option| option.spellings().1[0] == key)
            .ok_or_else(|| PyValueError::new_err(format!("{key:?} is not an option of the runtime")))?;
        args.set(option, value);
    }
    Ok(args.to_args())
}

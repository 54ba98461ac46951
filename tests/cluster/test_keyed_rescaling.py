"""The built-in keyed operators stay exact while processes join (issue 24, part 1), through the
public Python API and the real launcher: `tests/cluster/scripts/keyed_rescaling.py` runs on 2
processes (1 or 2 workers each); worker 0 asks for one or two more processes
(`timely_py.launch.add_process()`) at epochs drawn from the seed, a second join sometimes right
after the first joiner's bootstrap, served by a worker drawn from the seed (a joined one
included). Every worker, the joined ones too, feeds random records of 12 to 30 int and str keys
each epoch into `count_by_key` (with and without a key function), `aggregate` (a sum), a
`unary_notify` with `exchange=` summing per (time, key), and a plain `exchange`
(`support.rescaling` has the plan, the reference and the checks).

What must hold: one result per (epoch, key) across all workers, equal to a sequential count or
sum of everything every worker fed; the joined workers take a share of the keys; and the
stateless `exchange` delivers every record fed exactly once."""

import pytest
from support.rescaling import OPERATORS, all_keyed_errors, exchange_errors, joined_workers_share, launch_run

pytestmark = pytest.mark.cluster

#: (seed, workers per process). One join (0: 24 keys; 35: 29 keys, 2 workers per process), a
#: second join right after the first joiner's bootstrap (27: 27 keys, served by the joined
#: worker; 5: served by worker 0; 7: 2 workers per process, served by a joined worker) and a
#: second join 3 epochs later (30, served by the joined worker). Every case feeds at least
#: `KEYS_FOR_A_SHARE` keys after its first join.
CASES = [(0, 1), (27, 1), (5, 1), (30, 1), (7, 2), (35, 2)]

#: With this many distinct keys fed after a join, routing that spreads keys over the workers
#: gives the joined workers (a third of the workers or more) none of them with a probability
#: below (2/3)**20 < 0.03 %: their share is asserted only from this many keys on.
KEYS_FOR_A_SHARE = 20


@pytest.fixture(scope="module", params=CASES, ids=lambda case: f"seed{case[0]}-w{case[1]}")
def run(request, tmp_path_factory):
    """One launch per case, shared by the tests of this module."""
    seed, workers = request.param
    return launch_run(tmp_path_factory.mktemp(f"keyed-seed{seed}-w{workers}"), seed, workers)


@pytest.mark.timeout(120)
def test_the_joins_happened_and_the_joined_workers_fed(run):
    joined = [w for w in run.workers if w >= run.initial_peers]
    assert joined, "no worker joined"
    assert run.workers[0]["asked"] == list(range(2, 2 + run.plan.joins)), run.workers[0]["asked"]
    assert all(run.workers[w]["fed"] for w in joined), "a joined worker fed nothing"


@pytest.mark.timeout(120)
def test_plain_exchange_delivers_every_record_once_across_joins(run):
    errors = exchange_errors(run)
    assert errors is None, errors


@pytest.mark.timeout(120)
def test_keyed_operators_give_one_exact_result_per_epoch_and_key(run):
    errors = all_keyed_errors(run)
    assert not errors, "\n".join(errors)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("operator", OPERATORS)
def test_joined_workers_take_a_share_of_the_keys(run, operator):
    taken, keys = joined_workers_share(run, operator)
    assert keys >= KEYS_FOR_A_SHARE, f"the case feeds only {keys} keys after its join: pick another seed"
    assert taken, f"{operator}: the joined workers emitted no result for any of {keys} keys after they joined"

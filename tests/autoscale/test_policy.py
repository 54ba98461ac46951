"""The policy's arithmetic on hand-built signal windows (no dataflow runs), worked out by
hand below after DS2's method: rates leave the sources, are carried along the channels with
the observed selectivities, and each operator's demand over its true rate per instance says
how many instances it needs; the operator that needs most decides the process count.

The topology, a diamond with a fan-out and a merge (ids in order: Source 1, Parse 2,
Audit 3, Count 4), observed over a window of 2 s on 2 processes of 2 workers (4 instances;
every worker seen):

    Source --> Parse --(x2)--> Count
       \\                       ^
        +----> Audit --(x0.1)--+

    operator  records in  records out  useful s (4 workers)  true rate per instance
    Source            0        4000         0.2                   (a source)
    Parse          4000        8000         4.0                   4000 / 4.0 = 1000 /s
    Audit          4000         400         0.8                   4000 / 0.8 = 5000 /s
    Count          8400           0         6.0                   8400 / 6.0 = 1400 /s

Source offers 4000 / 2 s = 2000 rec/s on each of its two channels (a fan-out sends every
record on both). Parse's demand is 2000, Audit's 2000; Parse sends 2 per record in, Audit
0.1, so Count's demand is 2000 x 2 + 2000 x 0.1 = 4200 rec/s. Utilisations with 4
instances: Parse 2000 / (1000 x 4) = 0.5, Audit 2000 / (5000 x 4) = 0.1, Count 4200 /
(1400 x 4) = 0.75. The bottleneck is Count, though Parse is the slowest per record.
"""

import math

import pytest
from timely_py.autoscale import Policy, Settings
from timely_py.autoscale.testing import signals_of

pytestmark = pytest.mark.timeout(30)

TWO_BY_TWO = dict(processes=2, workers_per_process=2)


def diamond(source_records=4000):
    return signals_of(
        ["Source", "Parse", "Audit", "Count"],
        edges=[("Source", "Parse", 1.0), ("Source", "Audit", 1.0), ("Parse", "Count", 1.0), ("Audit", "Count", 1.0)],
        window_s=2.0,
        records_in={"Parse": 4000, "Audit": 4000, "Count": 8400},
        records_out={"Source": source_records, "Parse": 8000, "Audit": 400, "Count": 0},
        useful_s={"Source": 0.2, "Parse": 4.0, "Audit": 0.8, "Count": 6.0},
        workers=[0, 1, 2, 3],
    )


def by_name(decision):
    return {d.operator.name: d for d in decision.demands}


def test_demands_travel_the_diamond_with_selectivities():
    decision = Policy(Settings(max_processes=8)).decide(diamond(), **TWO_BY_TWO)
    demands = by_name(decision)
    assert demands["Parse"].demand == pytest.approx(2000)
    assert demands["Audit"].demand == pytest.approx(2000)
    assert demands["Count"].demand == pytest.approx(4200)
    assert demands["Parse"].true_rate == pytest.approx(1000)
    assert demands["Audit"].true_rate == pytest.approx(5000)
    assert demands["Count"].true_rate == pytest.approx(1400)
    assert demands["Parse"].utilisation == pytest.approx(0.5)
    assert demands["Audit"].utilisation == pytest.approx(0.1)
    assert demands["Count"].utilisation == pytest.approx(0.75)
    assert not demands["Source"].judged  # fed by the workers seen: more processes do not help it
    assert decision.source_rates == {"Source#1": pytest.approx(2000)}


def test_within_the_band_the_count_stays_and_the_merge_is_blamed():
    decision = Policy(Settings(max_processes=8)).decide(diamond(), **TWO_BY_TWO)
    assert decision.action == "stay" and decision.desired == 2
    assert decision.bottleneck.operator.name == "Count"
    assert "Count#4" in decision.explain() and "0.75" in decision.explain()


def test_a_step_up_of_the_offered_rate_scales_out_to_what_count_needs():
    """Offered 3000 rec/s: Count's demand is 3000 x 2.1 = 6300, utilisation 6300 / 5600 =
    1.125; at target 0.7 it needs 6300 / (1400 x 0.7) = 6.43 instances, 4 processes of 2."""
    decision = Policy(Settings(max_processes=8)).decide(diamond(), offered={"Source": 3000}, **TWO_BY_TWO)
    count = by_name(decision)["Count"]
    assert count.demand == pytest.approx(6300)
    assert count.utilisation == pytest.approx(1.125)
    assert count.required_instances == pytest.approx(6300 / 980)
    assert decision.action == "scale_out" and decision.desired == 4 == math.ceil(6300 / 980 / 2)
    assert decision.bottleneck.operator.name == "Count"


def test_max_processes_and_max_step_bound_a_scale_out():
    offered = {"Source": 3000}
    capped = Policy(Settings(max_processes=3)).decide(diamond(), offered=offered, **TWO_BY_TWO)
    assert (capped.action, capped.desired) == ("scale_out", 3)
    stepped = Policy(Settings(max_processes=8, max_step=1)).decide(diamond(), offered=offered, **TWO_BY_TWO)
    assert (stepped.action, stepped.desired) == ("scale_out", 3)
    at_max = Policy(Settings(max_processes=2)).decide(diamond(), offered=offered, **TWO_BY_TWO)
    assert at_max.action == "stay" and "max_processes" in at_max.reason


def test_a_step_down_scales_in_and_respects_the_minimum():
    """Offered 800 rec/s: Count's demand 1680, utilisation 1680 / 5600 = 0.3, below 0.49;
    it needs 1680 / 980 = 1.71 instances: 1 process of 2 workers."""
    low = Policy(Settings(max_processes=8)).decide(diamond(), offered={"Source": 800}, **TWO_BY_TWO)
    assert by_name(low)["Count"].utilisation == pytest.approx(0.3)
    assert (low.action, low.desired) == ("scale_in", 1)
    floor = Policy(Settings(min_processes=2, max_processes=8)).decide(diamond(), offered={"Source": 800}, **TWO_BY_TWO)
    assert floor.action == "stay" and "min_processes" in floor.reason


def test_the_observed_source_rate_is_the_demand_by_default():
    """With Source's observed 4000 records in 2 s and no offer, the result equals an offer
    of 2000; doubling what Source sent doubles every demand."""
    observed = Policy(Settings(max_processes=8)).decide(diamond(8000), **TWO_BY_TWO)
    assert by_name(observed)["Count"].demand == pytest.approx(8400)
    assert (observed.action, observed.desired) == ("scale_out", 5)  # 8400 / 980 = 8.57 -> 9 instances


def test_symmetric_sources_scale_what_one_process_sees_to_the_cluster():
    """Seen from process 0 alone (workers 0 and 1 of 4) with every worker feeding, the
    source's observed rate is half the cluster's."""
    half = signals_of(["Source", "Work"], edges=[("Source", "Work", 1.0)], window_s=1.0,
                      records_in={"Work": 500}, records_out={"Source": 500},
                      useful_s={"Work": 1.0, "Source": 0.01}, workers=[0, 1])
    local = Policy(Settings()).decide(half, **TWO_BY_TWO)
    symmetric = Policy(Settings(sources="symmetric")).decide(half, **TWO_BY_TWO)
    assert by_name(local)["Work"].demand == pytest.approx(500)
    assert by_name(symmetric)["Work"].demand == pytest.approx(1000)
    assert by_name(symmetric)["Source"].judged


def test_idle_operators_are_not_judged_and_no_data_changes_nothing():
    idle = signals_of(["Source", "Work"], edges=[("Source", "Work", 1.0)], window_s=1.0, workers=[0])
    decision = Policy(Settings()).decide(idle, processes=1, workers_per_process=1)
    assert decision.action == "no_data" and decision.desired == 1
    assert all(not d.judged for d in decision.demands)
    out_of_range = Policy(Settings(min_processes=2, max_processes=3)).decide(idle, processes=1, workers_per_process=1)
    assert (out_of_range.action, out_of_range.desired) == ("scale_out", 2)


def test_a_decision_is_plain_data():
    decision = Policy(Settings(max_processes=8)).decide(diamond(), offered={"Source": 3000}, **TWO_BY_TWO)
    data = decision.to_dict()
    assert data["action"] == "scale_out" and data["bottleneck"]["name"] == "Count"
    assert [d["name"] for d in data["demands"]] == ["Source", "Parse", "Audit", "Count"]
    import json

    assert json.loads(json.dumps(data)) == data


def test_below_the_band_but_already_at_what_it_needs_it_stays_and_says_so():
    """Offered 1200: Count's demand 2520, utilisation 2520 / 5600 = 0.45, below 0.49; it
    needs 2520 / 980 = 2.57 instances, 2 processes of 2 workers: the count it has."""
    decision = Policy(Settings(max_processes=8)).decide(diamond(), offered={"Source": 1200}, **TWO_BY_TWO)
    assert by_name(decision)["Count"].utilisation == pytest.approx(0.45)
    assert decision.action == "stay" and decision.reason.endswith("needs 2 processes, as many as it has")


def test_an_operator_that_hardly_ran_passes_demand_on_with_its_last_selectivity():
    """In the second window Parse received nothing (its worker was busy in Count's long
    runs): its selectivity of 2 from the first window still carries Source's 2000 records/s
    on to Count as 4000 (plus Audit's 200), instead of nothing."""
    policy = Policy(Settings(max_processes=8))
    first = policy.decide(diamond(), **TWO_BY_TWO)
    assert by_name(first)["Count"].demand == pytest.approx(4200)
    idle_parse = signals_of(
        ["Source", "Parse", "Audit", "Count"],
        edges=[("Source", "Parse", 1.0), ("Source", "Audit", 1.0), ("Parse", "Count", 1.0), ("Audit", "Count", 1.0)],
        window_s=2.0, records_in={"Parse": 0, "Audit": 4000, "Count": 8400},
        records_out={"Source": 4000, "Parse": 0, "Audit": 400, "Count": 0},
        useful_s={"Source": 0.2, "Parse": 0.0, "Audit": 0.8, "Count": 6.0}, workers=[0, 1, 2, 3])
    second = policy.decide(idle_parse, **TWO_BY_TWO)
    assert by_name(second)["Count"].demand == pytest.approx(4200)
    assert not by_name(second)["Parse"].judged
    fresh = Policy(Settings(max_processes=8)).decide(idle_parse, **TWO_BY_TWO)
    assert by_name(fresh)["Count"].demand == pytest.approx(2000 + 200), "one out per record in before any"


@pytest.mark.timeout(10)
def test_before_any_measured_selectivity_a_few_records_give_a_rough_one():
    """A starved worker passed Split only 3 ranges in the window, too few to measure its
    fan-out, and none was measured before: the 120 pieces it sent for them still carry the
    offered 10 ranges/s on to Work as 400 records/s (the example `autoscaled_pipeline.py` once
    saw 10 here under load and missed its scale-out). A later window with a measure replaces
    the rough ratio, and a rough ratio is never kept."""
    def window(split_in, split_out):
        return signals_of(["Input", "Split", "Work"], edges=[("Input", "Split", 1.0), ("Split", "Work", 1.0)],
                          window_s=1.5, records_in={"Split": split_in, "Work": 150},
                          records_out={"Input": split_in, "Split": split_out, "Work": 150},
                          useful_s={"Input": 0.01, "Split": 0.001, "Work": 1.4}, workers=[0])
    policy = Policy(Settings(max_processes=3))
    starved = policy.decide(window(3, 120), offered={"Input": 10.0}, processes=2, workers_per_process=1)
    assert by_name(starved)["Work"].demand == pytest.approx(400.0)
    assert starved.action == "scale_out"
    assert not policy.selectivities, "a ratio from too few records is not a measure"
    measured = policy.decide(window(30, 600), offered={"Input": 10.0}, processes=2, workers_per_process=1)
    assert by_name(measured)["Work"].demand == pytest.approx(200.0)
    again = policy.decide(window(3, 300), offered={"Input": 10.0}, processes=2, workers_per_process=1)
    assert by_name(again)["Work"].demand == pytest.approx(200.0), "the measured selectivity stands"


@pytest.mark.timeout(10)
def test_few_records_of_disjoint_windows_add_up_to_a_measured_selectivity():
    """Split receives 4 ranges per window, never the 10 a measure needs in one window; three
    disjoint windows add up to 12 ranges and 480 pieces: a fan-out of 40 is measured and
    kept, so a window where Split received nothing (its worker in Work's long run) still
    carries 10 ranges/s to Work as 400 records/s. Overlapping windows are added once."""
    def window(start_s, split_in, split_out):
        return signals_of(["Input", "Split", "Work"], edges=[("Input", "Split", 1.0), ("Split", "Work", 1.0)],
                          window_s=1.5, start_s=start_s, records_in={"Split": split_in, "Work": 150},
                          records_out={"Input": split_in, "Split": split_out, "Work": 150},
                          useful_s={"Input": 0.01, "Split": 0.001, "Work": 1.4}, workers=[0])
    policy = Policy(Settings(max_processes=3))
    decide = lambda w: policy.decide(w, offered={"Input": 10.0}, processes=2, workers_per_process=1)  # noqa: E731
    decide(window(0.0, 4, 160))
    decide(window(1.0, 4, 160))  # overlaps the first: not added
    assert not policy.selectivities
    decide(window(1.5, 4, 160))
    decide(window(3.0, 4, 160))
    assert list(policy.selectivities.values()) == [pytest.approx(40.0)]
    idle = decide(window(4.5, 0, 0))
    assert by_name(idle)["Work"].demand == pytest.approx(400.0)

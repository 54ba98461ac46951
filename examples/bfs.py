"""Breadth-first search on a random directed graph, inside a loop.

Every worker generates the same graph from the seed and keeps the out-edges of the nodes it
owns (node % workers). In the loop, iteration i holds proposals `(node, distance)`;
`aggregate` gathers each node's proposals on its owner once the iteration is complete, a
filter keeps the nodes reached for the first time, and their out-edges propose
`distance + 1` for the next iteration. A node's distance is therefore the iteration in which
it was reached, which the program checks against the loop timestamps and against a
sequential BFS.

Run with `python examples/bfs.py [NODES] [EDGES] [SEED] [-w WORKERS]`
(defaults: 1000 nodes, 2500 edges, seed 42).
"""

import random
import sys
from collections import Counter, deque

import timely_py as timely


def random_graph(nodes, edges, seed):
    """`edges` directed edges between `nodes` nodes, the same for every worker and run."""
    rng = random.Random(seed)
    return [(rng.randrange(nodes), rng.randrange(nodes)) for _ in range(edges)]


def sequential_bfs(nodes, graph, root=0):
    adjacency = [[] for _ in range(nodes)]
    for src, dst in graph:
        adjacency[src].append(dst)
    distance = {root: 0}
    queue = deque([root])
    while queue:
        node = queue.popleft()
        for other in adjacency[node]:
            if other not in distance:
                distance[other] = distance[node] + 1
                queue.append(other)
    return distance


def bfs(nodes, graph):
    """Returns `main(worker)`, which returns this worker's `{node: distance}` and whether every
    distance equalled the loop iteration at which the node was reached."""

    def main(worker):
        adjacency = {}
        for src, dst in graph:
            if src % worker.peers == worker.index:
                adjacency.setdefault(src, []).append(dst)
        distance = {}
        timing = {"agrees": True}

        def first_time(pair):
            node, dist = pair
            if node in distance:
                return False
            distance[node] = dist
            return True

        def check_time(time, pair):
            _epoch, iteration = time
            timing["agrees"] &= pair[1] == iteration

        with worker.dataflow("BFS") as scope:
            root = scope.to_stream([(0, 0)] if worker.index == 0 else [])
            with scope.iterative("Distances") as loop:
                handle, proposals = loop.feedback((0, 1))
                candidates = root.enter(loop).concat(proposals)
                # One (node, smallest proposal) per node and iteration, on the node's worker.
                best = candidates.aggregate(
                    key=lambda pair: pair[0],
                    fold=lambda acc, pair: min(acc, pair[1]),
                    init=lambda: nodes,
                )
                reached = best.filter(first_time).inspect_time(check_time)
                (
                    reached.flat_map(lambda pair: [(dst, pair[1] + 1) for dst in adjacency.get(pair[0], ())])
                    .exchange(lambda pair: pair[0])
                    .connect_loop(handle)
                )
        return distance, timing["agrees"]

    return main


def main_program(argv):
    args = [a for a in timely.program_args(argv) if not a.startswith("-")]
    nodes = int(args[0]) if len(args) > 0 else 1000
    edges = int(args[1]) if len(args) > 1 else 2500
    seed = int(args[2]) if len(args) > 2 else 42
    graph = random_graph(nodes, edges, seed)
    results = timely.execute_from_args(argv, bfs(nodes, graph))

    distance = {}
    for index, (part, agrees) in enumerate(results):
        assert agrees, f"worker {index}: a distance differs from its loop iteration"
        assert all(node % len(results) == index for node in part), "nodes are owned by node % workers"
        distance.update(part)
    print(f"bfs: {nodes} nodes, {edges} edges, seed {seed}, {len(results)} workers")
    print(f"reached {len(distance)} of {nodes} nodes")
    histogram = Counter(distance.values())
    print("distance histogram:")
    for dist in sorted(histogram):
        print(f"  {dist}: {histogram[dist]}")
    expected = sequential_bfs(nodes, graph)
    if distance != expected:
        wrong = sorted(set(distance) ^ set(expected)) or sorted(n for n in expected if distance[n] != expected[n])
        print(f"MISMATCH: {len(wrong)} nodes differ, first {wrong[:5]}")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main_program(sys.argv[1:]))

"""Breadth-first search on a random directed graph, inside a loop.

Every worker generates the same graph from the seed and keeps the out-edges of the nodes it
owns (node % workers). In the loop, iteration i holds proposals `(node, distance)`;
`aggregate` gathers each node's proposals on its owner once the iteration is complete, a
filter keeps the nodes reached for the first time, and their out-edges propose
`distance + 1` for the next iteration. A node's distance is therefore the iteration in which
it was reached. Every reached node is also sent to worker 0, with the iteration that reached
it; from these the program checks that each node was reached once, in the iteration equal to
its distance, and that the distances agree with a sequential BFS.

Run with `python examples/bfs.py [NODES] [EDGES] [SEED] [-w WORKERS]`
(defaults: 1000 nodes, 2500 edges, seed 42), or on two processes of two workers each with
`python -m timely_py.launch -n 2 -w 2 examples/bfs.py [NODES] [EDGES] [SEED]`: only the
process that holds worker 0 prints the summary, the same as with one process.
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
    """Returns `main(worker)`, which returns, on worker 0, the number of workers and a list of
    `(node, distance, iteration)` for every reached node, and None on the other workers."""

    def main(worker):
        adjacency = {}
        # A user activity: traces and their analysis name this stretch instead of leaving it
        # unexplained (it costs nothing when the run is not traced).
        with worker.activity("load graph"):
            for src, dst in graph:
                if src % worker.peers == worker.index:
                    adjacency.setdefault(src, []).append(dst)
        distance = {}  # the nodes this worker owns that have been reached
        found = []  # on worker 0: every reached node

        def first_time(pair):
            node, dist = pair
            if node in distance:
                return False
            distance[node] = dist
            return True

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
                reached = best.filter(first_time)
                (
                    reached.flat_map(lambda pair: [(dst, pair[1] + 1) for dst in adjacency.get(pair[0], ())])
                    .exchange(lambda pair: pair[0])
                    .connect_loop(handle)
                )
                # Worker 0 collects the reached nodes, whichever process owns them.
                reached.exchange(lambda _: 0).inspect_time(lambda time, pair: found.append((*pair, time[1])))
        # `execute` steps the worker until the dataflow completes after main returns; the list
        # is filled by then.
        return (worker.peers, found) if worker.index == 0 else None

    return main


def main_program(argv):
    args = [a for a in timely.program_args(argv) if not a.startswith("-")]
    nodes = int(args[0]) if len(args) > 0 else 1000
    edges = int(args[1]) if len(args) > 1 else 2500
    seed = int(args[2]) if len(args) > 2 else 42
    graph = random_graph(nodes, edges, seed)
    first = timely.execute_from_args(argv, bfs(nodes, graph))[0]
    if first is None:  # worker 0 runs in another process, which prints the summary
        return 0

    workers, found = first
    distance = {node: dist for node, dist, _ in found}
    assert len(distance) == len(found), "every node is reached once"
    assert all(dist == iteration for _, dist, iteration in found), "a distance differs from its loop iteration"
    print(f"bfs: {nodes} nodes, {edges} edges, seed {seed}, {workers} workers")
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

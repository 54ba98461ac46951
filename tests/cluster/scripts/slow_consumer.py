"""A producer faster than its consumer: worker 0 sends EPOCHS epochs of RECORDS records of
about 1 KB each to worker 1 (on the other process) without waiting for them, and worker 1
takes SECONDS_PER_RECORD seconds per record it receives. Worker 1 samples its process's
resident memory at every batch and prints `consumer: records N baseline B peak P last T`
(bytes; T is when it took its last record, to compare with the producer's last send on one
machine), then `network: held H spilled S messages M budget L` from `worker.network_stats()`
read inside its operator (the most its receive buffers held, and what spilled to disk);
worker 0 prints `producer: sent N at T`.
Usage: slow_consumer.py EPOCHS [RECORDS] [SECONDS_PER_RECORD] RUNTIME_FLAGS"""

import sys
import time

import timely_py as timely

args = timely.program_args(sys.argv[1:])
epochs = int(args[0])
records = int(args[1]) if len(args) > 1 else 2000
per_record = float(args[2]) if len(args) > 2 else 20e-6
PAYLOAD = b"x" * 1000


def resident_bytes():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def main(worker):
    inp = timely.InputHandle()
    seen = {"records": 0, "peak": 0, "last": 0.0, "network": None}

    def consume(_time, batch):
        time.sleep(per_record * len(batch))
        seen["records"] += len(batch)
        seen["last"] = time.time()
        seen["peak"] = max(seen["peak"], resident_bytes())
        seen["network"] = worker.network_stats()

    with worker.dataflow() as scope:
        probe = scope.input_from(inp).exchange(lambda record: 1).inspect_batch(consume).probe()
    baseline = resident_bytes()
    if worker.index == 0:
        for epoch in range(epochs):
            inp.send_batch([(epoch, i, PAYLOAD) for i in range(records)])
            inp.advance_to(epoch + 1)
            worker.step()
        sys.stdout.write(f"producer: sent {epochs * records} at {time.time()}\n")
    inp.close()
    while not probe.done():
        worker.step_or_park(0.01)
    if worker.index == 1:
        sys.stdout.write(
            f"consumer: records {seen['records']} baseline {baseline} peak {seen['peak']} last {seen['last']}\n"
        )
        stats = seen["network"]
        sys.stdout.write(
            f"network: held {stats['peak_held_bytes']} spilled {stats['spilled_bytes']} "
            f"messages {stats['spilled_messages']} budget {stats['receive_budget']}\n"
        )


timely.execute_from_args(sys.argv[1:], main)

"""Which Dask mechanism carries the engine's messages: Queues, actors or a plain TCP connection.

The engine's traffic (tpsbench.engine.protocol) is small and steady: per worker one
IntervalReport (a few KB of encoded histograms) per interval out, one WorkerStep per step
and a Stop in. What matters is how late a message arrives (the coordinator merges an
interval only once every worker's report is in, and a Stop must act within a second),
what each message costs the driver's CPU, whether one worker's messages stay in order,
and how a worker's death shows.

Each candidate is run on one LocalCluster of 2 worker processes (1 thread each), the
same way: each worker runs a long-running task (seceded) that sends ``--messages``
messages of ``--size`` bytes at ``--rate`` a second to the coordinator, while the
coordinator sends it a small message 10 times a second; both sides time every
message by the wall clock (one host, one clock). CPU is the coordinator's process tree
(coordinator, in-process scheduler, nannies and the worker processes under them) over the
sending window, less the same tree's CPU over an idle window of the same length (Dask's
heartbeats), per message.

- ``queue``: distributed.Queue, one shared outbox and one inbox per worker, through the scheduler;
- ``actor``: one actor per worker holding both mailboxes; the coordinator waits in an
  async method (no polling), the task calls the actor on its own worker;
- ``tcp``: the task opens a multiprocessing.connection to a listener of the coordinator's.

Pub/Sub, the fourth mechanism the issue names, is no longer in distributed (2026.8.0 has
no ``distributed.Pub``), so it is not measured.

    python bench/experiments/dask_channels.py [--rounds 2] [--messages 300] [--rate 30]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from multiprocessing.connection import Client as PipeClient
from multiprocessing.connection import Listener, wait
from pathlib import Path
from typing import Any

from distributed import Client, LocalCluster, Queue, get_worker, secede

from tpsbench.measure.procfs import TICK, tree_cpu

OUT = Path(__file__).parent / "results" / "dask_channels.txt"


class Mailbox:
    """An actor: the worker's outbox and inbox, the coordinator's take() waiting on the event loop."""

    def __init__(self) -> None:
        self.out: deque[Any] = deque()
        self.inbox: deque[Any] = deque()
        self.ready: asyncio.Event | None = None

    def put(self, message: Any) -> None:
        self.out.append(message)
        loop = get_worker().loop.asyncio_loop  # type: ignore[attr-defined]
        loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        if self.ready is not None:
            self.ready.set()

    async def take(self, timeout: float) -> list[Any]:
        if not self.out:
            self.ready = asyncio.Event()
            try:
                await asyncio.wait_for(self.ready.wait(), timeout)
            except TimeoutError:
                pass
        items = list(self.out)
        self.out.clear()
        return items

    def give(self, message: Any) -> None:
        self.inbox.append(message)

    def fetch(self) -> list[Any]:
        items = list(self.inbox)
        self.inbox.clear()
        return items


def sender(kind: str, index: int, where: Any, messages: int, rate: float, size: int) -> list[float]:
    """The task on a worker: send ``messages`` while receiving controls; the control latencies."""
    secede()
    payload = os.urandom(size)
    got: list[float] = []
    done = threading.Event()
    conn: Any = None
    send: Callable[[Any], Any]
    if kind == "queue":
        out, inbox = Queue(where[0]), Queue(where[1][index])
        send = out.put

        def receive() -> list[Any]:
            try:
                return [inbox.get(timeout=0.5)]
            except TimeoutError:
                return []
    elif kind == "actor":
        box = where

        def send(message: Any) -> None:
            box.put(message).result()

        def receive() -> list[Any]:
            items = box.fetch().result()
            if not items:
                time.sleep(0.05)
            return items
    else:
        conn = PipeClient(where[0], authkey=where[1])
        conn.send(index)
        send = conn.send

        def receive() -> list[Any]:
            return [conn.recv()] if conn.poll(0.5) else []

    def listen() -> None:
        while not done.is_set():
            for sent in receive():
                got.append(time.time() - sent)

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    start = time.monotonic()
    for seq in range(messages):
        delay = start + seq / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        send((index, seq, time.time(), payload))
    time.sleep(0.3)  # the controls still on their way
    done.set()
    thread.join(10)
    if conn is not None:
        conn.close()
    return got


def run_channel(client: Client, kind: str, args: argparse.Namespace, workers: list[str]) -> dict[str, Any]:
    tag = secrets.token_hex(4)
    listener: Listener | None = None
    conns: list[Any] = []
    boxes: list[Any] = []
    if kind == "queue":
        out_q, in_q = Queue(f"out-{tag}"), [Queue(f"in-{tag}-{i}") for i in range(len(workers))]
        wheres: list[Any] = [(f"out-{tag}", [f"in-{tag}-{i}" for i in range(len(workers))])] * len(workers)
    elif kind == "actor":
        boxes = [client.submit(Mailbox, actor=True, workers=[w]).result() for w in workers]
        wheres = boxes
    else:
        key = secrets.token_bytes(16)
        listener = Listener(("127.0.0.1", 0), authkey=key)
        wheres = [(listener.address, key)] * len(workers)
    cpu0, t0 = tree_cpu(os.getpid()), time.monotonic()
    futures = [client.submit(sender, kind, i, wheres[i], args.messages, args.rate, args.size,
                             workers=[w], allow_other_workers=False, pure=False) for i, w in enumerate(workers)]
    if listener is not None:
        for _ in workers:
            conn = listener.accept()
            conn.recv()  # the index
            conns.append(conn)
    latencies: list[float] = []
    last = [-1] * len(workers)
    in_order = True
    expected = args.messages * len(workers)
    next_control = time.monotonic()
    while len(latencies) < expected:
        if time.monotonic() >= next_control:
            for i in range(len(workers)):
                message = time.time()
                if kind == "queue":
                    in_q[i].put(message)
                elif kind == "actor":
                    boxes[i].give(message).result()
                else:
                    conns[i].send(message)
            next_control += 0.1
        if kind == "queue":
            try:
                items = [out_q.get(timeout=0.05)]
            except TimeoutError:
                items = []
        elif kind == "actor":
            items = [m for box in boxes for m in box.take(0.05).result()]
        else:
            ready: list[Any] = wait(conns, 0.05)
            items = [c.recv() for c in ready]
        now = time.time()
        for index, seq, sent, _ in items:
            latencies.append(now - sent)
            in_order &= seq == last[index] + 1
            last[index] = seq
    controls = [x for f in futures for x in f.result()]
    cpu = (tree_cpu(os.getpid()) - cpu0) / TICK
    seconds = time.monotonic() - t0
    for conn in conns:
        conn.close()
    if listener is not None:
        listener.close()
    return {"latencies": latencies, "controls": controls, "cpu": cpu, "seconds": seconds, "in_order": in_order}


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--rate", type=float, default=30.0)
    parser.add_argument("--size", type=int, default=6000)
    parser.add_argument("--channels", default="queue,actor,tcp")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        workers = sorted(client.scheduler_info()["workers"])
        window = args.messages / args.rate
        cpu0 = tree_cpu(os.getpid())
        time.sleep(window)
        idle_per_s = (tree_cpu(os.getpid()) - cpu0) / TICK / window
        head = (f"# bench/experiments/dask_channels.py {time.strftime('%Y-%m-%d %H:%M')}: 2 LocalCluster workers, "
                f"each {args.messages} messages of {args.size} B at {args.rate:g}/s out while 10/s come in; idle cluster CPU {idle_per_s * 1000:.1f} ms/s; load average {os.getloadavg()[0]:.1f} on "
                f"{os.cpu_count()} cores (shared with other engineers' tests)")
        lines = [head]
        print(head, flush=True)
        for round_ in range(args.rounds):
            for kind in args.channels.split(","):
                r = run_channel(client, kind, args, workers)
                lat, ctl = r["latencies"], r["controls"]
                busy = r["cpu"] - idle_per_s * r["seconds"]
                line = (f"round {round_ + 1} {kind:6} out: p50 {1000 * statistics.median(lat):6.2f} ms, p99 "
                        f"{1000 * quantile(lat, 0.99):6.2f} ms, max {1000 * max(lat):7.2f} ms; in: p50 "
                        f"{1000 * statistics.median(ctl):6.2f} ms, max {1000 * max(ctl):7.2f} ms; CPU above idle "
                        f"{1000 * busy / len(lat):6.3f} ms/message ({r['cpu']:.2f} s in {r['seconds']:.1f} s); "
                        f"in order: {'yes' if r['in_order'] else 'NO'}")
                print(line, flush=True)
                lines.append(line)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as f:
        f.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main(sys.argv[1:])

"""DualPipe as its runtime runs it: a line-by-line transcription of ``DualPipe.step``
(deepseek-ai/DualPipe, dualpipe/dualpipe.py at 3da1bbe) that records, per rank, its
computations and its batches of point-to-point sends and receives, and a replay of
those programs in which each batch (``_commit_and_wait_comm``: ``batch_isend_irecv``,
then wait for every request) completes only once every peer has posted the matching
operation (a rendezvous, matched first in first out per pair of ranks, as NCCL does).

``calc.pipeline`` models less: a pass waits only for its own input and a send for
nobody. These tests check that its order is the runtime's and that, when
T_F = T_B ≥ T_W (where DeepSeek-V3 Table 2's bubble is exact), the runtime's step is
exactly as long as the simulated one.
"""

from __future__ import annotations

from fractions import Fraction

from calc import pipeline as pp


class _Rank:
    """One rank of ``DualPipe.step``: the same methods, steps and flags, recording
    ("comm", ops) for a batch and ("run", kind, i, d, ...) for a computation, kind as
    in ``calc.pipeline``: F, B (input gradient, W later), BW (whole backward), FB
    (overlapped pair), W; i the micro-batch, d its direction."""

    def __init__(self, rank: int, p: int, m: int) -> None:
        self.rank, self.p, self.h = rank, p, m // 2
        self.first, self.last = rank == 0, rank == p - 1
        self.second = int(rank >= p // 2)
        self.middle = rank in (p // 2 - 1, p // 2)
        self.prog: list[tuple] = []
        self.ops: list[tuple] = []
        self.f_id, self.b_id = [0, 0], [0, 0]
        self.zb_queue: list[tuple[int, int]] = []

    def _f(self, phase: int) -> tuple[int, int]:
        d = phase ^ self.second
        self.f_id[d] += 1
        return self.f_id[d] - 1 + d * self.h, d

    def _b(self, phase: int, zb: bool) -> tuple[int, int]:
        d = phase ^ self.second
        self.b_id[d] += 1
        key = (self.b_id[d] - 1 + d * self.h, d)
        if zb:
            self.zb_queue.append(key)
        return key

    def _post(self, kind: str, data: str, d: int, skip: bool, towards_next: bool) -> None:
        if not skip:
            self.ops.append((kind, self.rank + (1 if towards_next else -1), data, d))

    def _first_stage(self, d: int) -> bool:
        return (self.first and d == 0) or (self.last and d == 1)

    def _last_stage(self, d: int) -> bool:
        return (self.first and d == 1) or (self.last and d == 0)

    def recv_forward(self, phase: int) -> None:
        d = phase ^ self.second
        self._post("recv", "F", d, self._first_stage(d), towards_next=d == 1)

    def send_forward(self, phase: int) -> None:
        d = phase ^ self.second
        self._post("send", "F", d, self._last_stage(d), towards_next=d == 0)

    def recv_backward(self, phase: int) -> None:
        d = phase ^ self.second
        self._post("recv", "B", d, self._last_stage(d), towards_next=d == 0)

    def send_backward(self, phase: int) -> None:
        d = phase ^ self.second
        self._post("send", "B", d, self._first_stage(d), towards_next=d == 1)

    def commit(self) -> None:
        if self.ops:
            self.prog.append(("comm", tuple(self.ops)))
            self.ops = []

    def forward_chunk(self, phase: int, recv: bool = True, send: bool = True) -> None:
        if recv:
            self.recv_forward(phase)
        self.commit()
        self.prog.append(("run", "F", *self._f(phase)))
        if send:
            self.send_forward(phase)

    def backward_chunk(self, phase: int, zb: bool = False, recv: bool = True, send: bool = True) -> None:
        if recv:
            self.recv_backward(phase)
        self.commit()
        self.prog.append(("run", "B" if zb else "BW", *self._b(phase, zb)))
        if send:
            self.send_backward(phase)

    def forward_backward_chunk(self, phase0: int, phase1: int, recv0: bool = True) -> None:
        if recv0:
            self.recv_forward(phase0)
        self.recv_backward(phase1)
        self.commit()
        self.prog.append(("run", "FB", *self._f(phase0), *self._b(phase1, False)))
        self.send_forward(phase0)
        self.send_backward(phase1)

    def weight_chunk(self) -> None:
        self.commit()
        self.prog.append(("run", "W", *self.zb_queue.pop(0)))

    def step(self) -> list[tuple]:
        half, hr = self.p // 2, min(self.rank, self.p - 1 - self.rank)
        for _ in range((half - hr - 1) * 2):  # step 1: nF0
            self.forward_chunk(0)
        self.recv_forward(0)  # step 2: nF0F1
        for i in range(hr + 1):
            self.forward_chunk(0, recv=False, send=self.middle)
            self.recv_forward(0)
            self.forward_chunk(1, send=(not self.middle) or (i < hr))
            if not self.middle:
                self.send_forward(0)
        for _ in range(half - hr - 1):  # step 3: nB1W1F1
            self.backward_chunk(1, zb=True)
            self.recv_forward(1)
            self.weight_chunk()
            self.forward_chunk(1, recv=False)
        for i in range(self.h - self.p + hr + 1):  # step 4: nF0B1F1B0
            if i == 0 and self.middle:
                self.forward_chunk(0, recv=False, send=False)
                self.send_forward(1)
                self.backward_chunk(1, send=False)
                self.send_forward(0)
                self.send_backward(1)
            else:
                self.forward_backward_chunk(0, 1, recv0=i > 0)
            self.forward_backward_chunk(1, 0)
        for _ in range(half - hr - 1):  # step 5: nB1F1B0
            self.backward_chunk(1)
            self.forward_backward_chunk(1, 0)
        zb = False
        for i in range(hr + 1):  # step 6: nB1B0
            if i == (hr + 1) // 2 and hr % 2 == 1:
                zb = True
            self.backward_chunk(1, zb=zb)
            if i == (hr + 1) // 2 and hr % 2 == 0:
                zb = True
            self.backward_chunk(0, zb=zb)
        for _ in range(half - hr - 1):  # step 7: nWB0
            self.weight_chunk()
            self.backward_chunk(0, zb=True)
        for _ in range(hr + 1):  # step 8: nW
            self.weight_chunk()
        self.commit()
        assert not self.zb_queue
        return self.prog


def _programs(p: int, m: int) -> list[list[tuple]]:
    return [_Rank(r, p, m).step() for r in range(p)]


def _runtime_step(p: int, m: int, f: Fraction, b: Fraction, w: Fraction, fb: Fraction) -> Fraction:
    """Length of the step when every batch waits for its peers (zero latency)."""
    progs = _programs(p, m)
    queues: dict[tuple[str, int, int], list[tuple[int, int, str, int]]] = {}
    for r, prog in enumerate(progs):
        for n, item in enumerate(prog):
            for kind, peer, data, d in item[1] if item[0] == "comm" else ():
                pair = (r, peer) if kind == "send" else (peer, r)
                queues.setdefault((kind, *pair), []).append((r, n, data, d))
    peers: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for (kind, src, dst), sends in queues.items():
        if kind == "send":
            recvs = queues[("recv", src, dst)]
            assert len(sends) == len(recvs)
            for (r, n, data, d), (q, k, data2, d2) in zip(sends, recvs):
                assert (data, d) == (data2, d2)  # FIFO matching pairs the right tensors
                peers.setdefault((r, n), []).append((q, k))
                peers.setdefault((q, k), []).append((r, n))
    took = {"F": f, "B": b - w, "BW": b, "FB": fb, "W": w}
    posted: dict[tuple[int, int], Fraction] = {}
    pc, clock = [0] * p, [Fraction(0)] * p
    moved = True
    while moved:
        moved = False
        for r in range(p):
            while pc[r] < len(progs[r]):
                item = progs[r][pc[r]]
                if item[0] == "comm":
                    posted[(r, pc[r])] = clock[r]
                    others = peers.get((r, pc[r]), [])
                    if any(x not in posted for x in others):
                        break
                    clock[r] = max([clock[r], *(posted[x] for x in others)])
                else:
                    clock[r] += took[item[1]]
                pc[r] += 1
                moved = True
    assert all(pc[r] == len(progs[r]) for r in range(p)), "deadlock"
    return max(clock)


WIDGET_GRID = [(p, m) for p in (2, 4, 6, 8) for m in range(2 * p, 33, 2)]  # every shape the pp widget runs
GRID = [(p, m) for p in (2, 4, 6, 8) for m in range(2 * p, 2 * p + 9, 2)] + [(8, 20), (8, 32)]


def test_the_simulated_order_is_dualpipe_step() -> None:
    """``calc.pipeline``'s DualPipe order on every device is the runtime's sequence of
    computations, and every send meets a receive of the same tensor."""
    for p, m in WIDGET_GRID:
        for r, prog in enumerate(_programs(p, m)):
            runs = [item[1:] for item in prog if item[0] == "run"]
            assert runs == [tuple(op) for op in pp._dualpipe_order(p, m, r)], (p, m, r)
        _runtime_step(p, m, Fraction(1), Fraction(2), Fraction(1), Fraction(3))


def test_paired_send_recv_keeps_the_step_when_t_f_equals_t_b() -> None:
    """With T_F = T_B ≥ T_W the rendezvous runtime's step is exactly the simulated
    one, so Table 2's bubble holds for it too: Fig. 5's 66 units at p = 8, m = 20."""
    times = [(1, 2, 1, 3), (1, 2, 1, 2), (1, Fraction(3, 2), Fraction(1, 2), Fraction(5, 2)),
             (2, 3, 1, Fraction(15, 4))]
    for p, m in GRID:
        for f, b, w, fb in times:
            f, b, w, fb = (Fraction(x) for x in (f, b, w, fb))
            events = pp.simulate_schedule(pp=p, microbatches=m, schedule="dualpipe", fwd=float(f), bwd=float(b),
                                          wgrad=float(w), fwd_bwd=float(fb))
            assert _runtime_step(p, m, f, b, w, fb) == max(e.end for e in events), (p, m, f, b, w, fb)
    assert _runtime_step(8, 20, Fraction(1), Fraction(2), Fraction(1), Fraction(3)) == 66

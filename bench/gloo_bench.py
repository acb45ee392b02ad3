#!/usr/bin/python3
# bench/ (outside the library): the torch.distributed gloo side of bench/compare. Times
# allreduce, allgather, reduce_scatter, broadcast and alltoall as weft-perf does (warm-up,
# barrier, iterations back to back, max over ranks of the average, or with -S the span from
# the first rank's start to the last rank's end) and checks every element.
# Started once per rank with RANK, WORLD_SIZE, MASTER_ADDR=127.0.0.1 and MASTER_PORT set.
"""usage: gloo_bench.py [-b MIN] [-e MAX] [-f FACTOR] [-s LIMIT:ITERS:WARMUP,...] [-T SECONDS]
[-S] COLL..."""
import argparse
import sys
import time

import torch
import torch.distributed as dist

COLLS = ["allreduce", "allgather", "reduce_scatter", "broadcast", "alltoall"]
SPLIT = {"allgather", "reduce_scatter", "alltoall"}


def size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = s.upper()
    return int(s[:-1]) * mult[s[-1]] if s[-1] in mult else int(s)


def bands(s):
    out = []
    for tok in s.split(","):
        lim, it, wu = (int(x) for x in tok.split(":"))
        if it < 1 or wu < 0:
            raise ValueError(tok)
        out.append((lim, it, wu))
    return out


def band_for(bs, nbytes):
    for lim, it, wu in bs:
        if lim == 0 or nbytes <= lim:
            return it, wu
    return bs[-1][1], bs[-1][2]


def seconds(s):
    v = float(s)
    if not 0 <= v <= 1e9:  # also refuses nan and inf
        raise ValueError(s)
    return v


def max_over_ranks(t):
    x = torch.tensor([t], dtype=torch.float64)
    dist.all_reduce(x, op=dist.ReduceOp.MAX)
    return float(x)


def per_call(t0, t1, iters, span):
    """weft-perf's time per call: the slowest rank's own loop, or with span (-S) the first
    rank's start to the last rank's end on CLOCK_MONOTONIC (one host's clock); None when the
    starts lie more than BUDGET_SPAN_CLOCKS_S apart (not one clock), as budget.h."""
    if not span:
        return max_over_ranks((t1 - t0) / iters)
    x = torch.tensor([t0, -t0, t1], dtype=torch.float64)
    dist.all_reduce(x, op=dist.ReduceOp.MAX)
    first, last = -float(x[1]), float(x[2])
    if float(x[0]) - first > BUDGET_SPAN_CLOCKS_S:
        return None
    return (last - first) / iters


# The budget never cuts below these (nor raises a band's own count), as weft-perf's -T.
BUDGET_LEAST_ITERS = 20
# -S: starts further apart than this (seconds) say the ranks' clocks are not one.
BUDGET_SPAN_CLOCKS_S = 1.0
BUDGET_LEAST_WARMUP = 5


def budget_count(cap, least, share, per_call):
    """min(cap, max(least, floor(share / per_call))), least itself at most cap."""
    least = max(1, min(least, cap))
    k = share / per_call if per_call > 0 else cap
    return cap if k >= cap else max(least, int(k))


def warm_up(case, budget, iters, warmup):
    """weft-perf's -T rule: one warm-up call timed, a fifth of the budget sets the warm-ups
    (that call among them), the time per call of those after it (or of it alone) sets the
    timed calls; times are the slowest rank's, so every rank runs the same counts. Returns
    the counts that ran and will run; without -T, the band's."""
    if budget <= 0:
        for _ in range(warmup):
            case.post()
        return iters, warmup
    t0 = time.perf_counter()
    case.post()
    t1 = time.perf_counter() - t0
    warmup = max(1, budget_count(warmup, BUDGET_LEAST_WARMUP, 0.2 * budget, max_over_ranks(t1)))
    t0 = time.perf_counter()
    for _ in range(warmup - 1):
        case.post()
    tw = (time.perf_counter() - t0) / (warmup - 1) if warmup > 1 else t1
    return budget_count(iters, BUDGET_LEAST_ITERS, budget, max_over_ranks(tw)), warmup


def gen(op_sum, n, rank, idx):
    """weft-perf's float32 inputs (tools/weft-perf/data.c): exact in any summation order."""
    if not op_sum:
        return ((idx * 7 + rank * 13 + 5) % 251 - 125).to(torch.float32)
    amp = max(1, min(8, 64 // n))
    return ((idx * 7 + rank * 13) % (2 * amp + 1) - amp).to(torch.float32)


def reduce_ref(n, idx):
    acc = torch.zeros(idx.numel(), dtype=torch.float32)
    for r in range(n):
        acc += gen(True, n, r, idx)
    return acc


class Case:
    """One collective at one size: buffers, the call, and the exact expected result."""

    def __init__(self, coll, rank, n, nominal):
        self.coll, self.rank, self.n = coll, rank, n
        elems = nominal // 4
        self.count = elems // n if coll in SPLIT else elems
        self.nbytes = self.count * 4 * n if coll in SPLIT else elems * 4
        c, ar = self.count, torch.arange
        if coll == "allreduce":
            self.send = gen(True, n, rank, ar(c))
            self.want = reduce_ref(n, ar(c))
        elif coll == "reduce_scatter":
            self.send = gen(True, n, rank, ar(c * n))
            self.want = reduce_ref(n, ar(c) + rank * c)
        elif coll == "allgather":
            self.send = gen(False, n, rank, ar(c))
            self.want = torch.cat([gen(False, n, q, ar(c)) for q in range(n)])
        elif coll == "broadcast":
            self.want = gen(False, n, 0, ar(c))
            self.send = None
        else:
            self.send = gen(False, n, rank, ar(c * n))
            self.want = torch.cat([gen(False, n, q, ar(c) + rank * c) for q in range(n)])
        # Every result element starts wrong, so one the collective never writes shows.
        keep = coll == "broadcast" and rank == 0
        self.recv = self.want.clone() if keep else self.want + 1
        self.views = list(self.recv.chunk(n)) if coll == "allgather" else None
        if coll == "allreduce":
            self.recv.copy_(self.send)

    def post(self):
        if self.coll == "allreduce":
            # In place, as torch offers it: the timed calls keep summing the buffer (values
            # only scale by n, to inf after a few hundred calls, which adds no faster or
            # slower), and check() runs one more call from the original input.
            dist.all_reduce(self.recv)
        elif self.coll == "allgather":
            # all_gather_into_tensor is not in the gloo process group; the list form writes
            # into views of one flat buffer.
            dist.all_gather(self.views, self.send)
        elif self.coll == "reduce_scatter":
            dist.reduce_scatter(self.recv, list(self.send.chunk(self.n)))
        elif self.coll == "broadcast":
            dist.broadcast(self.recv, 0)
        else:
            dist.all_to_all_single(self.recv, self.send)

    def wrong(self):
        if self.coll == "allreduce":
            self.recv.copy_(self.send)
            dist.all_reduce(self.recv)
        return int((self.recv != self.want).sum())


def supported(coll, n):
    """The gloo process group refuses some collectives locally (same answer on every rank)."""
    try:
        Case(coll, dist.get_rank(), n, 16 * n).post()
        return None
    except RuntimeError as e:
        return str(e).splitlines()[0]


def mono():
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def one(coll, rank, n, nominal, bs, budget, span):
    case = Case(coll, rank, n, nominal)
    if case.count == 0:
        # gloo's allgather dies with SIGFPE on empty tensors; skip every empty size.
        if rank == 0:
            print("SKIP %s %d %d empty buffers" % (coll, n, case.nbytes), flush=True)
        return 0
    iters, warmup = band_for(bs, nominal)  # by the -b/-e sequence, as weft-perf's runs
    iters, warmup = warm_up(case, budget, iters, warmup)
    dist.barrier()
    t0 = mono()
    for _ in range(iters):
        case.post()
    avg = per_call(t0, mono(), iters, span)
    if avg is None:
        raise SystemExit("gloo_bench: -S: the ranks' clocks differ (not one host)")
    wrong = torch.tensor([case.wrong()], dtype=torch.int64)
    dist.all_reduce(wrong)
    if rank == 0:
        print("ROW %s %d %d %d %.3f %d %d" % (coll, n, case.nbytes, case.count,
                                             avg * 1e6, int(wrong), iters), flush=True)
    return 1 if int(wrong) else 0


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("-b", type=size, default=8)
    p.add_argument("-e", type=size, default=64 << 20)
    p.add_argument("-f", type=int, default=2)
    p.add_argument("-s", type=bands, default=bands("262144:20:5,4194304:10:2,0:4:1"))
    p.add_argument("-T", type=seconds, default=0.0,
                   help="about SECONDS per size, weft-perf's -T rule (default 0: off)")
    p.add_argument("-S", action="store_true",
                   help="time from the first rank's start to the last rank's end (one host)")
    p.add_argument("colls", nargs="+", choices=COLLS)
    a = p.parse_args()
    if a.f < 2 or a.b < 1 or a.b > a.e:
        p.error("need -f >= 2 and 1 <= -b <= -e")
    torch.set_num_threads(1)  # as the C benchmarks: one thread of compute per rank
    dist.init_process_group("gloo")
    rank, n = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        print("LIB torch %s gloo" % torch.__version__, flush=True)
    ret = 0
    for coll in COLLS:
        if coll not in a.colls:
            continue
        why = supported(coll, n)
        if why is not None:
            if rank == 0:
                print("UNSUPPORTED %s %d %s" % (coll, n, why), flush=True)
            continue
        sz = a.b
        while sz <= a.e:
            ret |= one(coll, rank, n, sz, a.s, a.T, a.S)
            sz *= a.f
    dist.barrier()
    dist.destroy_process_group()
    return ret


if __name__ == "__main__":
    sys.exit(main())

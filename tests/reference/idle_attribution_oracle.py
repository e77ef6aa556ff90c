#!/usr/bin/env python3
"""Test oracle: where each device's GPU-idle time went (`drill --json` `idle`), rebuilt from the
rows with SQL and brute force, for checking the Rust sweep (crate/src/drill/idle.rs).

The rules are the ones the core documents (the name catalogue, the precedence, the innermost
range's label); the algorithm is not: per device, the idle gaps are the holes between its kernels
merged in start order, and each gap is cut at every boundary of a call or range of the processes
that launch on the device; each piece goes to the first cause of PRECEDENCE with a call or range
covering all of it, labelled by the covering interval that started last (a `Holding GIL` range
only when no other range of the cause covers it), or to `untraced`.
Standard library only; prints JSON: {device: {"idle_ns": n, "causes": {kind: [ns, label]},
"labels": {kind: [[label, ns], …]}}} (the five labels holding most of each cause, ties by name).

Usage: idle_attribution_oracle.py TRACE
"""
import bisect
import json
import re
import sqlite3
import sys
from collections import defaultdict

PRECEDENCE = ["gc", "gil", "jit", "comm", "sync", "module_load", "alloc", "memop", "launch", "api",
              "osrt", "nvtx", "untraced"]
LAUNCH = re.compile(r"^(cudaLaunchKernel|cudaLaunchKernelExC|cuLaunchKernel|cuLaunchKernelEx|"
                    r"cudaLaunchCooperativeKernel|cuLaunchCooperativeKernel|cudaGraphLaunch|"
                    r"cuGraphLaunch)(_ptsz|_ptds)?(_v\d+)?$")
SYNCS = {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
         "cudaThreadSynchronize", "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize"}
ALLOC = ("cudaEventCreate", "cuEventCreate", "cudaStreamCreate", "cuStreamCreate", "cudaMalloc",
         "cudaFree", "cudaHostAlloc", "cuMemAlloc", "cuMemFree", "cuMemCreate", "cuMemHostAlloc",
         "cudaMallocHost")
MODULE_LOAD = ("cuModuleLoad", "cuModuleUnload", "cuLibraryLoad", "cuLibraryUnload",
               "cuModuleGetFunction", "cuLibraryGetKernel", "cuLibraryGetModule",
               "cudaGetFuncBySymbol")
JIT_API = ("nvrtc", "cuLink", "nvJitLink", "nvPTXCompiler")
COMM = ("nccl", "c10d::", "record_param_comms", "allreduce", "all_reduce", "allgather",
        "all_gather", "reduce_scatter", "reducescatter", "alltoall", "all_to_all", "barrier")


def base_name(name):
    """`cudaLaunchKernel_ptsz_v7000` -> `cudaLaunchKernel`."""
    while True:
        m = re.match(r"^(.+)_v\d+$", name) or re.match(r"^(.+)_(?:ptsz|ptds)$", name)
        if not m:
            return name
        name = m.group(1)


def call_kind(name):
    base = base_name(name)
    if base.startswith(("cudaGraphLaunch", "cuGraphLaunch")) or LAUNCH.match(name):
        return "launch"
    if base in SYNCS:
        return "sync"
    if base.startswith(("cudaMemcpy", "cuMemcpy")):
        return "memop" if "Async" in base else "sync"
    if base.startswith(("cudaMemset", "cuMemset")):
        return "memop"
    if base.startswith(ALLOC):
        return "alloc"
    if base.startswith(MODULE_LOAD):
        return "module_load"
    if base.startswith(JIT_API):
        return "jit"
    return "api"


def without_paths(lower):
    """The words of a name that are no file path (no `/` or `\\`, no `.py`): DLProf's dict
    texts name `torch/_jit_internal.py` in their call stacks, which is no JIT compilation."""
    words = re.split(r"[\s'\"\[\](){},;]", lower)
    return " ".join(w for w in words if "/" not in w and "\\" not in w and ".py" not in w)


def range_kind(name):
    lower = name.lower()
    if "python gc" in lower:
        return "gc"
    if "waiting for gil" in lower:
        return "gil"
    if "holding gil" in lower:
        return "nvtx"
    words = without_paths(lower)
    if re.search(r"compile(?!d)", words) or any(p in words for p in ("nvrtc", "jit", "autotun")):
        return "jit"
    if any(p in words for p in COMM):
        return "comm"
    return "nvtx"


def range_label(name):
    """`aten::item, op_id = 7` -> `aten::item`; `IO 190` -> `IO`."""
    for suffix in (", op_id = ", ", seq = ", ", sizes = "):
        name = name.split(suffix)[0]
    while True:
        head, sep, last = name.rstrip().rpartition(" ")
        if not (sep and head.strip() and re.fullmatch(r"[0-9]+", last)):
            return name.rstrip()
        name = head


def columns(db, table):
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


def process(global_id):
    return (global_id or 0) >> 24


def attribute(path):
    db = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    kernel_pid = "globalPid" if "globalPid" in columns(db, "CUPTI_ACTIVITY_KIND_KERNEL") else "0"
    kernels = db.execute(f"SELECT deviceId, start, end, {kernel_pid} FROM CUPTI_ACTIVITY_KIND_KERNEL"
                         " ORDER BY deviceId, start, end").fetchall()
    pageable = set()
    memcpy = "CUPTI_ACTIVITY_KIND_MEMCPY"
    if memcpy in tables and "globalPid" in columns(db, memcpy):
        pageable = {(process(p), corr) for corr, p in db.execute(
            f"SELECT correlationId, globalPid FROM {memcpy} WHERE srcKind = 0 OR dstKind = 0")}
    calls = []
    runtime = "CUPTI_ACTIVITY_KIND_RUNTIME"
    if runtime in tables:
        tid = "r.globalTid" if "globalTid" in columns(db, runtime) else "0"
        for start, end, t, name, corr in db.execute(
                f"SELECT r.start, r.end, {tid}, s.value, r.correlationId FROM {runtime} r"
                " JOIN StringIds s ON s.id = r.nameId"):
            kind = call_kind(name)
            if kind == "memop" and "Memcpy" in name and (process(t), corr) in pageable:
                kind = "sync"
            calls.append((start, end, process(t), kind, base_name(name), True))
    ranges = []
    if "NVTX_EVENTS" in tables:
        for start, end, t, name in db.execute(
                "SELECT n.start, n.end, n.globalTid, COALESCE(n.text, s.value) FROM NVTX_EVENTS n"
                " LEFT JOIN StringIds s ON s.id = n.textId"
                " WHERE n.end IS NOT NULL AND n.eventType IN (59, 60, 70, 71)"):
            if name is not None:
                strong = "holding gil" not in name.lower()
                ranges.append((start, end, process(t), range_kind(name), range_label(name), strong))
    out = {}
    for device in sorted({k[0] for k in kernels}):
        pids = {process(k[3]) for k in kernels if k[0] == device}
        gaps, busy = [], None
        for d, start, end, _ in kernels:
            if d != device or end <= start:
                continue
            if busy is not None and start > busy:
                gaps.append((busy, start))
            busy = end if busy is None else max(busy, end)
        spans = sorted((s for s in calls + ranges if s[1] > s[0] and s[2] in pids),
                       key=lambda s: (s[0], -s[1]))
        starts = [s[0] for s in spans]
        per_kind = defaultdict(lambda: defaultdict(int))
        for gs, ge in gaps:
            near = [(i, s) for i, s in enumerate(spans[:bisect.bisect_left(starts, ge)]) if s[1] > gs]
            cuts = sorted({gs, ge} | {t for _, s in near for t in s[:2] if gs < t < ge})
            for a, b in zip(cuts, cuts[1:]):
                covering = [(i, s) for i, s in near if s[0] <= a and s[1] >= b]
                kind, label = "untraced", ""
                for k in PRECEDENCE:
                    mine = [(s[5], s[0], i, s[4]) for i, s in covering if s[3] == k]
                    if mine:
                        kind, label = k, max(mine)[3]
                        break
                per_kind[kind][label] += b - a
        causes, held = {}, {}
        for kind, labels in per_kind.items():
            ranked = sorted(labels.items(), key=lambda kv: (-kv[1], kv[0]))
            causes[kind] = [sum(labels.values()), ranked[0][0]]
            held[kind] = [[label, ns] for label, ns in ranked[:5]]
        out[device] = {"idle_ns": sum(e - s for s, e in gaps), "causes": causes, "labels": held}
    return out


if __name__ == "__main__":
    print(json.dumps(attribute(sys.argv[1]), indent=1, sort_keys=True))

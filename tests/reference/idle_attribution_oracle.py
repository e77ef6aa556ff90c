#!/usr/bin/env python3
"""Test oracle: where each device's GPU-idle time went (`drill --json` `idle`), rebuilt from the
rows with SQL and brute force, for checking the Rust sweep (crate/src/drill/idle.rs).

The rules are the ones the core documents (the name catalogue, the precedence, the innermost
range's label); the algorithm is not: per device, the idle gaps are the holes between its kernels
merged in start order, and the stretches from the window's start (the first kernel's start on any
device; the window of the verdict, spec §2) to its first kernel and from its last kernel's end to
the window's end (the last end on any device), and each gap is cut at every boundary of a call or range of the processes
that launch on the device; each piece goes to the first cause of PRECEDENCE with a call, range or
overhead record (the driver's CUPTI_ACTIVITY_KIND_OVERHEAD, nsys's PROFILER_OVERHEAD) covering all
of it (and OS runtime calls, OSRT_API, of a launching thread only: named `function from caller`
when OSRT_CALLCHAINS holds the call's backtrace, the caller being its first frame outside the C
library, the threads library, the loader and the kernel), labelled by the covering
interval that started last (a `Holding GIL` range only when no
other range of the cause covers it), or to `untraced`. Untraced pieces are cut again at every
SCHED_EVENTS switch of a launching thread (one that made a launch call): `cpu_busy` while one is
on a CPU (labelled by the first CPU sample of a launching thread inside, else `untraced code`),
`cpu_waiting` while all with a known state are off (labelled by the latest switch-out's state).
For `host_ahead` time (a launch waiting on a full command buffer), what the other devices ran
meanwhile: the time their rows of each GPU-work table (kernels, graph replays, copies, memsets,
read from the file's own tables) cover inside it, per device and table, and the time any of
them covers.
Standard library only; prints JSON: {device: {"idle_ns": n, "causes": {kind: [ns, label]},
"buckets": {bucket: {kind: ns}} (per gap-size bucket, `[lo, hi)` µs bounds 1, 5, 10, 50, 100,
500, 1000, 5000, numbered 0–8 by the gap's whole length),
"labels": {kind: [[label, ns], …]}, "frames": {kind: [[frame, samples], …]},
"samples": {kind: n}, "meanwhile": {"ns": n, "busy_ns": n, "work": [[device, kind, ns], …]}}}
(the five labels holding most of each cause, the five frames sampled most in it, ties by name,
and every sample in it; `meanwhile` only with host_ahead time, its work largest first, ties by
device then kind).

Usage: idle_attribution_oracle.py TRACE [SPANS_JSON]
"""
import bisect
import json
import re
import sqlite3
import sys
from collections import defaultdict

PRECEDENCE = ["profiler", "gc", "gil", "jit", "comm", "sync", "host_ahead", "module_load",
              "lazy_load", "alloc", "memop", "launch", "api", "osrt", "nvtx", "cpu_busy",
              "cpu_waiting", "untraced"]
# ENUM_CUPTI_OVERHEAD_TYPE id -> (cause, label); ids 0 and 1 (undefined, unknown) say nothing.
DRIVER_OVERHEAD = {2: ("jit", "driver JIT compiler"), 3: ("profiler", None), 4: ("profiler", None),
                   5: ("profiler", None), 6: ("module_load", "runtime module loading"),
                   7: ("lazy_load", "lazy function loading"),
                   8: ("host_ahead", "command buffer full")}
# SCHED_EVENTS.threadState (ENUM_SAMPLING_THREAD_STATE) of a switch-out -> cpu_waiting's label.
OFF_CPU = {1: "runnable, not scheduled", 2: "blocked", 3: "blocked", 7: "blocked", 8: "blocked"}
UNSAMPLED = "untraced code"
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


def frame_label(symbol, module, unresolved):
    """A sample frame's name, or None for the profiler's own frames and nsys's entries."""
    if "libToolsInjection" in module or "nsight-systems" in module or symbol.startswith("["):
        return None
    file = module.rsplit("/", 1)[-1]
    if unresolved or symbol.startswith("0x"):
        return f"{file} (unresolved)" if file else None
    return f"{symbol} ({file})" if file else symbol


# An OS call's own frames: these libraries (by file name start) and the kernel's.
SYSTEM_MODULES = ("libc.so", "libc-", "libpthread", "ld-linux")


def callers(db, tables):
    """Per OSRT_CALLCHAINS id, the name of its first frame outside the system's libraries."""
    if "OSRT_CALLCHAINS" not in tables:
        return {}
    kernel = "c.kernelMode" if "kernelMode" in columns(db, "OSRT_CALLCHAINS") else "0"
    out = {}
    for cid, symbol, module, unresolved, in_kernel in db.execute(
            f"SELECT c.id, s.value, m.value, c.unresolved, {kernel} FROM OSRT_CALLCHAINS c"
            " JOIN StringIds s ON s.id = c.symbol JOIN StringIds m ON m.id = c.module"
            " ORDER BY c.id, c.stackDepth"):
        file = (module or "").rsplit("/", 1)[-1]
        if cid in out or in_kernel or file.startswith("[") or file.startswith(SYSTEM_MODULES):
            continue
        label = frame_label(symbol or "", module or "", bool(unresolved))
        if label is not None:
            out[cid] = label
    return out


def overheads(db, tables):
    """Driver and profiler overhead records as (start, end, pid, kind, label, strong)."""
    out = []
    if "CUPTI_ACTIVITY_KIND_OVERHEAD" in tables:
        for start, end, t, kind, name in db.execute(
                "SELECT o.start, o.end, o.globalTid, o.overheadType, s.value"
                " FROM CUPTI_ACTIVITY_KIND_OVERHEAD o LEFT JOIN StringIds s ON s.id = o.nameId"):
            if kind in DRIVER_OVERHEAD and t is not None:
                cause, label = DRIVER_OVERHEAD[kind]
                out.append((start, end, process(t), cause, label or name or "profiler overhead",
                            True))
    if "PROFILER_OVERHEAD" in tables:
        for start, end, t, name in db.execute(
                "SELECT p.start, p.end, p.globalTid, s.value FROM PROFILER_OVERHEAD p"
                " LEFT JOIN StringIds s ON s.id = p.nameId"):
            if t is not None:
                out.append((start, end, process(t), "profiler", name or "profiler overhead", True))
    return out


def sched_events(db, tables):
    """(at, tid, on_cpu, off_label) in time order, ties in table order."""
    if "SCHED_EVENTS" not in tables:
        return []
    state = "threadState" if "threadState" in columns(db, "SCHED_EVENTS") else "NULL"
    rows = db.execute(f"SELECT start, globalTid, isSchedIn, {state} FROM SCHED_EVENTS"
                      " ORDER BY start, rowid").fetchall()
    return [(at, t, bool(on), OFF_CPU.get(st, "off-CPU")) for at, t, on, st in rows]


def samples(db, tables):
    """(at, tid, frame) of every sample with a telling frame, in time order."""
    if not {"COMPOSITE_EVENTS", "SAMPLING_CALLCHAINS"} <= tables:
        return []
    frames = {}
    for sid, symbol, module, unresolved in db.execute(
            "SELECT c.id, s.value, m.value, c.unresolved FROM SAMPLING_CALLCHAINS c"
            " JOIN StringIds s ON s.id = c.symbol JOIN StringIds m ON m.id = c.module"
            " ORDER BY c.id, c.stackDepth"):
        if sid not in frames:
            label = frame_label(symbol or "", module or "", bool(unresolved))
            if label is not None:
                frames[sid] = label
    rows = db.execute("SELECT id, start, globalTid FROM COMPOSITE_EVENTS ORDER BY start, id")
    return [(at, t, frames[i]) for i, at, t in rows if i in frames]


def cpu_pieces(a, b, sched, threads, sampled):
    """Untraced time [a, b) split at the launching threads' switches: (start, end, kind, label)."""
    cuts = sorted({a, b} | {e[0] for e in sched if e[1] in threads and a < e[0] < b})
    out = []
    for x, y in zip(cuts, cuts[1:]):
        state, last_off = {}, None
        for at, t, on, off in sched:
            if at > x:
                break
            if t in threads:
                state[t] = on
                if not on:
                    last_off = off
        if any(state.values()):
            first = next((f for at, t, f in sampled if x <= at < y and t in threads), UNSAMPLED)
            out.append((x, y, "cpu_busy", first))
        elif state:
            out.append((x, y, "cpu_waiting", last_off))
        else:
            out.append((x, y, "untraced", ""))
    return out


# The GPU-work tables and the kind of work each holds, as the drill-down names them.
WORK_TABLES = [("CUPTI_ACTIVITY_KIND_KERNEL", "kernels"),
               ("CUPTI_ACTIVITY_KIND_GRAPH_TRACE", "graph replays"),
               ("CUPTI_ACTIVITY_KIND_MEMCPY", "copies"), ("CUPTI_ACTIVITY_KIND_MEMSET", "memsets")]


def union(intervals):
    """Sorted, merged [start, end] pairs of the non-empty intervals."""
    out = []
    for s, e in sorted(i for i in intervals if i[1] > i[0]):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def overlap(a, b):
    """Time two sorted, merged interval lists share."""
    i = j = n = 0
    while i < len(a) and j < len(b):
        n += max(0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return n


def meanwhile(db, tables, device, ahead):
    """What the other devices ran during `ahead` (the device's host_ahead pieces)."""
    ahead = union(ahead)
    work, every = [], []
    for table, kind in WORK_TABLES:
        if table not in tables:
            continue
        rows = defaultdict(list)
        for d, s, e in db.execute(f"SELECT deviceId, start, end FROM main.{table}"):
            if d != device:
                rows[d].append((s, e))
                every.append((s, e))
        for d, spans in rows.items():
            ns = overlap(ahead, union(spans))
            if ns > 0:
                work.append([d, kind, ns])
    work.sort(key=lambda w: (-w[2], w[0], w[1]))
    return {"ns": sum(e - s for s, e in ahead), "busy_ns": overlap(ahead, union(every)),
            "work": work}


def columns(db, table):
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


def process(global_id):
    return (global_id or 0) >> 24


def attribute(path, spans=None):
    """Per device, its idle gaps swept; with `spans` ({device: [[start, end], …]}, device keys
    as JSON writes them), those spans of those devices instead (the ranks' spans before their
    collectives, `ranks --json` `cause`), with every label's time (`label_ns`)."""
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
            calls.append((start, end, process(t), kind, base_name(name), True, t))
    ranges = []
    if "NVTX_EVENTS" in tables:
        for start, end, t, name in db.execute(
                "SELECT n.start, n.end, n.globalTid, COALESCE(n.text, s.value) FROM NVTX_EVENTS n"
                " LEFT JOIN StringIds s ON s.id = n.textId"
                " WHERE n.end IS NOT NULL AND n.eventType IN (59, 60, 70, 71)"):
            if name is not None:
                strong = "holding gil" not in name.lower()
                ranges.append((start, end, process(t), range_kind(name), range_label(name), strong))
    records = overheads(db, tables)
    os_calls = []
    if "OSRT_API" in tables:
        chain = "o.callchainId" if "callchainId" in columns(db, "OSRT_API") else "0"
        by_chain = callers(db, tables)
        os_calls = [(start, end, process(t), "osrt",
                     f"{name} from {by_chain[c]}" if c and c in by_chain else name, True, t)
                    for start, end, t, name, c in db.execute(
                        f"SELECT o.start, o.end, o.globalTid, s.value, {chain} FROM OSRT_API o"
                        " JOIN StringIds s ON s.id = o.nameId") if t is not None]
    sched, sampled = sched_events(db, tables), samples(db, tables)
    launchers = {c[6] for c in calls if c[3] == "launch"}
    out = {}
    window = (min((k[1] for k in kernels), default=0), max((k[2] for k in kernels), default=0))
    swept = {int(d): [tuple(x) for x in v] for d, v in spans.items()} if spans is not None else None
    for device in sorted({k[0] for k in kernels}):
        if swept is not None and device not in swept:
            continue
        pids = {process(k[3]) for k in kernels if k[0] == device}
        threads = {t for t in launchers if process(t) in pids}
        mine = [e for e in sched if e[1] in threads]
        mine_samples = [x for x in sampled if x[1] in threads]
        has_cpu = bool(mine) or bool(mine_samples)
        gaps, busy = [], None
        for d, start, end, _ in kernels:
            if d != device or end <= start:
                continue
            if busy is None and start > window[0]:
                gaps.append((window[0], start))
            if busy is not None and start > busy:
                gaps.append((busy, start))
            busy = end if busy is None else max(busy, end)
        if busy is not None and window[1] > busy:
            gaps.append((busy, window[1]))
        elif busy is None and window[1] > window[0]:
            gaps.append(window)
        if swept is not None:
            gaps = [(a, b) for a, b in swept[device] if b > a]
        mine_os = [c for c in os_calls if c[6] in threads]
        spans = sorted((s[:6] for s in calls + records + mine_os + ranges
                        if s[1] > s[0] and s[2] in pids),
                       key=lambda s: (s[0], -s[1]))
        frames = defaultdict(lambda: defaultdict(int))
        ahead = []
        starts = [s[0] for s in spans]
        per_kind = defaultdict(lambda: defaultdict(int))
        per_bucket = defaultdict(lambda: defaultdict(int))
        for gs, ge in gaps:
            bucket = sum(ge - gs >= hi * 1000 for hi in (1, 5, 10, 50, 100, 500, 1000, 5000))
            near = [(i, s) for i, s in enumerate(spans[:bisect.bisect_left(starts, ge)]) if s[1] > gs]
            cuts = sorted({gs, ge} | {t for _, s in near for t in s[:2] if gs < t < ge})
            for a, b in zip(cuts, cuts[1:]):
                covering = [(i, s) for i, s in near if s[0] <= a and s[1] >= b]
                kind, label = "untraced", ""
                for k in PRECEDENCE:
                    held = [(s[5], s[0], i, s[4]) for i, s in covering if s[3] == k]
                    if held:
                        kind, label = k, max(held)[3]
                        break
                pieces = [(a, b, kind, label)]
                if kind == "untraced" and has_cpu:
                    pieces = cpu_pieces(a, b, mine, threads, mine_samples)
                for x, y, k, lab in pieces:
                    per_kind[k][lab] += y - x
                    per_bucket[str(bucket)][k] += y - x
                    if k == "host_ahead":
                        ahead.append((x, y))
                    for at, _, f in mine_samples:
                        if x <= at < y:
                            frames[k][f] += 1
        causes, held = {}, {}
        for kind, labels in per_kind.items():
            ranked = sorted(labels.items(), key=lambda kv: (-kv[1], kv[0]))
            causes[kind] = [sum(labels.values()), ranked[0][0]]
            held[kind] = [[label, ns] for label, ns in ranked[:5]]
        sampled_frames = {k: [[f, n] for f, n in sorted(fs.items(), key=lambda kv: (-kv[1], kv[0]))[:5]]
                          for k, fs in frames.items()}
        totals = {k: sum(fs.values()) for k, fs in frames.items()}
        out[device] = {"idle_ns": sum(e - s for s, e in gaps), "causes": causes, "labels": held,
                       "buckets": {b: dict(kinds) for b, kinds in per_bucket.items()},
                       "frames": sampled_frames, "samples": totals}
        if swept is not None:
            out[device]["label_ns"] = {k: dict(labels) for k, labels in per_kind.items()}
        if ahead:
            out[device]["meanwhile"] = meanwhile(db, tables, device, ahead)
    return out


if __name__ == "__main__":
    spans = json.loads(sys.argv[2]) if len(sys.argv) > 2 else None
    print(json.dumps(attribute(sys.argv[1], spans), indent=1, sort_keys=True))

#!/usr/bin/env python3
"""Test oracle: the reference `detect_host_overhead.py` behaviour, rebuilt from its written
specification (docs/reference/trtllm-skill-spec.md §3) with the same SQL the scripts run.

It exists so the `trtllm-skill` profile is checked against an independent implementation that
uses SQLite itself for LIKE, SUM and the row selection (the Rust core does all of that in Rust).
Standard library only; prints the reference JSON (json.dumps(indent=2)).

Usage: detect_host_overhead_oracle.py TRACE [--no-m3]
"""
import json
import re
import sqlite3
import sys

DEFAULTS = {
    "gpu_idle_ratio": 0.30, "launch_overhead_ratio": 0.10, "host_prep_exposed_ratio": 0.50,
    "host_prep_perf_impact": 0.05, "host_prep_idle_attribution": 0.50, "gpu_utilization": 0.60,
    "nccl_ratio_caveat": 0.20,
}
GEN_OVERRIDES = {"gpu_idle_ratio": 0.15, "gpu_utilization": 0.80}
STEP_RE = re.compile(r"_forward_step\s+(\d+):\s+(\d+)\s+ctx reqs,\s+(\d+)\s+gen reqs")
PREP_PATTERNS = ["%_prepare_tp_inputs%", "%_prepare_inputs%", "%prepare_inputs%"]


def metrics(db, ws, we, total_us, compute_m3):
    out = {"gpu_idle_ratio": 0.0, "launch_overhead_ratio": 0.0, "gpu_utilization": 0.0, "nccl_ratio": 0.0,
           "host_prep_exposed_ratio": None, "host_prep_perf_impact": None, "host_prep_idle_attribution": None}
    if total_us <= 0:
        return out
    rows = db.execute("SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start >= ? AND start < ? ORDER BY start",
                      (ws, we)).fetchall()
    merged = []
    for s, e in sorted(rows):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    active = sum([(e - s) / 1000.0 for s, e in merged])
    idle = total_us - active
    out["gpu_idle_ratio"] = idle / total_us
    out["gpu_utilization"] = active / total_us
    launch = db.execute("SELECT SUM(r.end - r.start) / 1000.0 FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s "
                        "ON r.nameId = s.id WHERE s.value = 'cudaLaunchKernel' AND r.start >= ? AND r.start < ?",
                        (ws, we)).fetchone()[0] or 0.0
    out["launch_overhead_ratio"] = launch / total_us
    nccl = db.execute("SELECT SUM(k.end - k.start) / 1000.0 FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
                      "ON k.shortName = s.id WHERE s.value LIKE '%nccl%' AND k.start >= ? AND k.start < ?",
                      (ws, we)).fetchone()[0] or 0.0
    out["nccl_ratio"] = nccl / active if active > 0 else 0.0
    if compute_m3:
        ranges = []
        for pat in PREP_PATTERNS:
            ranges = db.execute("SELECT n.start, n.end FROM NVTX_EVENTS n JOIN StringIds s ON n.textId = s.id "
                                "WHERE n.end > 0 AND s.value LIKE ? AND n.start >= ? AND n.end <= ?",
                                (pat, ws, we)).fetchall()
            if ranges:
                break
        if ranges:
            prep_total = sum([(e - s) / 1000.0 for s, e in ranges])
            gaps = [(merged[i][1], merged[i + 1][0]) for i in range(len(merged) - 1) if merged[i + 1][0] > merged[i][1]]
            exposed = 0.0
            for ns, ne in ranges:
                for gs, ge in gaps:
                    exposed += max(0, min(ne, ge) - max(ns, gs)) / 1000.0
            if prep_total > 0:
                out["host_prep_exposed_ratio"] = exposed / prep_total
                out["host_prep_perf_impact"] = exposed / total_us
                out["host_prep_idle_attribution"] = exposed / idle if idle > 0 else 0.0
    return out


def verdict(m, t):
    crossed = {"gpu_idle_ratio": m["gpu_idle_ratio"] > t["gpu_idle_ratio"],
               "launch_overhead_ratio": m["launch_overhead_ratio"] > t["launch_overhead_ratio"],
               "gpu_utilization": m["gpu_utilization"] < t["gpu_utilization"]}
    if m["host_prep_exposed_ratio"] is not None:
        crossed["host_prep_exposed_ratio"] = m["host_prep_exposed_ratio"] > t["host_prep_exposed_ratio"]
        crossed["host_prep_perf_impact"] = m["host_prep_perf_impact"] > t["host_prep_perf_impact"]
        crossed["host_prep_idle_attribution"] = m["host_prep_idle_attribution"] > t["host_prep_idle_attribution"]
    n = sum(crossed.values())
    return {"verdict": "YES" if n >= 2 else "NO", "crossed_count": n, "applicable_count": len(crossed),
            "host_prep_confirmed": bool(crossed.get("host_prep_perf_impact") and crossed.get("host_prep_idle_attribution")),
            "nccl_caveat": m["nccl_ratio"] > t["nccl_ratio_caveat"], "crossed_details": crossed}


def rounded(m):
    return {k: (round(v, 4) if v is not None else None) for k, v in m.items()}


def main():
    path = sys.argv[1]
    compute_m3 = "--no-m3" not in sys.argv
    db = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    ws, we = db.execute("SELECT MIN(start), MAX(end) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    if ws is None:
        print(json.dumps({"error": "No GPU kernels found in trace"}, indent=2))
        return
    agg = metrics(db, ws, we, (we - ws) / 1000.0, compute_m3)
    v = verdict(agg, DEFAULTS)
    steps = db.execute("SELECT s.value, n.start, n.end FROM NVTX_EVENTS n JOIN StringIds s ON n.textId = s.id "
                       "WHERE n.end > 0 AND s.value LIKE '%[Executor] _forward_step%' ORDER BY n.start").fetchall()
    ctx, gen = [], []
    for text, s, e in steps:
        mt = STEP_RE.search(text)
        if not mt:
            continue
        if int(mt.group(2)) > 0:
            ctx.append((s, e))
        elif int(mt.group(3)) > 0:
            gen.append((s, e))
    phases = {}
    for name, ranges, thr in (("context", ctx, dict(DEFAULTS)), ("generation", gen, {**DEFAULTS, **GEN_OVERRIDES})):
        if not ranges:
            continue
        ps, pe = min(r[0] for r in ranges), max(r[1] for r in ranges)
        pm = metrics(db, ps, pe, (pe - ps) / 1000.0, compute_m3)
        pv = verdict(pm, thr)
        phases[name] = {"iteration_count": len(ranges), "verdict": pv["verdict"], "crossed_count": pv["crossed_count"],
                        "applicable_count": pv["applicable_count"], "host_prep_confirmed": pv["host_prep_confirmed"],
                        "metrics": rounded(pm)}
    overall = "YES" if "YES" in [v["verdict"]] + [p["verdict"] for p in phases.values()] else "NO"
    result = {"verdict": overall, "aggregate_metrics": rounded(agg), "crossed_count": v["crossed_count"],
              "applicable_count": v["applicable_count"], "host_prep_confirmed": v["host_prep_confirmed"],
              "nccl_caveat": v["nccl_caveat"], "crossed_details": v["crossed_details"], "phases": phases}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

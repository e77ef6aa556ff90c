#!/usr/bin/env python3
"""Test oracle: the reference `analyze_host_overhead.py` behaviour, rebuilt from its written
specification (docs/reference/trtllm-skill-spec.md §7-§8) with the SQL the script runs.

SQLite does the LIKE matching, the JOINs, GROUP BY, SUM and the row selection (the Rust core
does all of that in Rust), so the `trtllm-skill` profile of `nsys-lens analyze` is checked
against an independent implementation. Two choices the specification leaves open are fixed
as it recommends: equal totals are ordered by name, equal step starts by end.
Standard library only.

Usage: analyze_host_overhead_oracle.py BASELINE [TARGET] [--tp-size N]
           [--baseline-label L] [--target-label L] [--json]
Prints the report (reference §8.3-8.4), or with --json {"baseline": dict, "target": dict|null}
holding the dicts `analyze_single_trace` returns.
"""
import json
import re
import sqlite3
import sys

STEP_RE = re.compile(r"_forward_step\s+(\d+):\s+(\d+)\s+ctx reqs,\s+(\d+)\s+gen reqs")
GAP_NS = 1_000_000
PHASE_GAP_NS = 100_000_000
DEDUP_NS = 100_000
RULE = "=" * 80


def compute_stats(values):
    if not values:
        return {"avg": 0, "min": 0, "max": 0, "p50": 0, "p90": 0, "count": 0}
    s = sorted(values)
    n = len(s)
    return {"avg": sum(values) / n, "min": s[0], "max": s[-1], "p50": s[n // 2],
            "p90": s[int(n * 0.9)], "count": n}


def allreduce_iterations(db):
    rows = db.execute("SELECT k.start, k.end FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
                      "ON k.shortName = s.id WHERE s.value LIKE '%allreduce%' ORDER BY k.start").fetchall()
    iters = []
    if not rows:
        return iters
    g_start, g_end, count = rows[0][0], rows[0][1], 1
    for i in range(1, len(rows)):
        gap = rows[i][0] - rows[i - 1][1]
        if gap > GAP_NS:
            iters.append({"start": g_start, "end": g_end, "kernel_count": count,
                          "wall_time_us": (g_end - g_start) / 1000})
            g_start, g_end, count = rows[i][0], rows[i][1], 1
        else:
            g_end = max(g_end, rows[i][1])
            count += 1
    iters.append({"start": g_start, "end": g_end, "kernel_count": count,
                  "wall_time_us": (g_end - g_start) / 1000})
    return iters


def forward_steps(db):
    rows = db.execute("SELECT s.value, n.start, n.end, (n.end - n.start) / 1000.0 FROM NVTX_EVENTS n "
                      "JOIN StringIds s ON n.textId = s.id WHERE n.end > 0 AND "
                      "s.value LIKE '%[Executor] _forward_step%' ORDER BY n.start, n.end").fetchall()
    steps = []
    for text, start, end, dur in rows:
        m = STEP_RE.search(text)
        num, ctx, gen = (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else (-1, 0, 0)
        steps.append({"text": text, "start": start, "end": end, "dur_us": dur,
                      "step_num": num, "ctx_reqs": ctx, "gen_reqs": gen})
    return steps


def dedup_tp_steps(steps):
    out, i = [], 0
    while i < len(steps):
        group = [steps[i]]
        while (i + len(group) < len(steps)
               and abs(steps[i + len(group)]["start"] - steps[i]["start"]) < DEDUP_NS
               and steps[i + len(group)]["step_num"] == steps[i]["step_num"]):
            group.append(steps[i + len(group)])
        merged = dict(group[0])
        merged["start"] = min(g["start"] for g in group)
        merged["end"] = max(g["end"] for g in group)
        merged["dur_us"] = max(g["dur_us"] for g in group)
        out.append(merged)
        i += len(group)
    return out


def mode_first_seen(values):
    counts = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    best = None
    for v, c in counts.items():
        if best is None or c > best[1]:
            best = (v, c)
    return best[0]


def split_phases(iters):
    phases, ps = [], 0
    for i in range(1, len(iters)):
        if iters[i]["start"] - iters[i - 1]["end"] > PHASE_GAP_NS:
            phases.append((ps, i - 1))
            ps = i
    phases.append((ps, len(iters) - 1))
    return phases


def breakdown(db, sql, lo, hi, limit):
    return db.execute(sql + " GROUP BY s.value ORDER BY total_us DESC, s.value ASC LIMIT ?",
                      (lo, hi, limit)).fetchall()


def analyze(db, label, tp_size, out):
    res = {"label": label, "bench_found": False}
    row = db.execute("SELECT MIN(start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    t0 = row[0] if row and row[0] is not None else 0
    out.append(f"\n\n{RULE}\nANALYSIS: {label}\n{RULE}")
    iters, method = allreduce_iterations(db), "allreduce"
    if not iters:
        iters = [{"start": s["start"], "end": s["end"], "kernel_count": 1, "wall_time_us": s["dur_us"]}
                 for s in dedup_tp_steps(forward_steps(db))]
        method = "nvtx"
    out.append(f"\n--- Iteration Detection (method: {method}) ---")
    out.append(f"  Total iterations: {len(iters)}")
    if not iters:
        out.append("  Phases detected: 0")
        out.append("\n  WARNING: Could not identify benchmark phase.")
        return res
    common = mode_first_seen([it["kernel_count"] for it in iters])
    if method == "allreduce":
        out.append(f"  Most common iteration size: {common} allreduce kernels")
    phases = split_phases(iters)
    out.append(f"  Phases detected: {len(phases)}")
    for i, (ps, pe) in enumerate(phases):
        n = pe - ps + 1
        cc = sum(1 for it in iters[ps:pe + 1] if it["kernel_count"] == common)
        out.append(f"    Phase {i}: iters {ps}-{pe} ({n} iters), t={(iters[ps]['start'] - t0) / 1e9:.2f}s-"
                   f"{(iters[pe]['end'] - t0) / 1e9:.2f}s, {cc}/{n} have common size")
    bench = None
    for ps, pe in reversed(phases):
        n = pe - ps + 1
        cc = sum(1 for it in iters[ps:pe + 1] if it["kernel_count"] == common)
        if cc >= 0.5 * n and n >= 5:
            bench = (ps, pe)
            break
    if bench is None:
        out.append("\n  WARNING: Could not identify benchmark phase.")
        return res
    bs, be = bench
    b_iters = iters[bs:be + 1]
    res["bench_found"] = True
    res["bench_iter_count"] = len(b_iters)
    res["wall_time_stats"] = compute_stats([it["wall_time_us"] for it in b_iters])
    res["gap_stats"] = compute_stats([(b_iters[i]["start"] - b_iters[i - 1]["end"]) / 1000
                                      for i in range(1, len(b_iters))])
    ts, te = (b_iters[0]["start"] - t0) / 1e9, (b_iters[-1]["end"] - t0) / 1e9
    w, g = res["wall_time_stats"], res["gap_stats"]
    out.append(f"\n  Benchmark phase: iters {bs}-{be} ({len(b_iters)} iters)")
    out.append(f"  Time range: t={ts:.4f}s - {te:.4f}s ({te - ts:.4f}s)")
    out.append(f"  Avg iteration wall time: {w['avg']:.1f} us")
    out.append(f"  P50: {w['p50']:.1f} us, P90: {w['p90']:.1f} us")
    out.append(f"\n  Inter-iteration gap: avg={g['avg']:.1f} us, P50={g['p50']:.1f} us, P90={g['p90']:.1f} us")
    steady_state(db, res, tp_size, out)
    return res


def steady_state(db, res, tp_size, out):
    out.append("\n--- Steady-State Forward Step Analysis ---")
    all_steps = forward_steps(db)
    if not all_steps:
        out.append("  No [Executor] _forward_step NVTX ranges found.")
        res["steady_step_count"] = 0
        return
    max_gen = max(s["gen_reqs"] for s in all_steps)
    steady = [s for s in all_steps if s["ctx_reqs"] == 0 and s["gen_reqs"] == max_gen]
    unique = dedup_tp_steps(steady)
    n = len(unique)
    res["steady_step_count"] = n
    out.append(f"  Max generation requests observed: {max_gen}")
    out.append(f"  Steady-state steps (0 ctx, {max_gen} gen): {len(steady)}")
    out.append(f"  Unique steady-state steps: {n}")
    if n < 5:
        return
    res["step_dur_stats"] = compute_stats([s["dur_us"] for s in unique])
    res["step_gap_stats"] = compute_stats([(unique[i]["start"] - unique[i - 1]["end"]) / 1000
                                           for i in range(1, n)])
    ss_start, ss_end = unique[0]["start"], unique[-1]["end"]
    ss_wall = (ss_end - ss_start) / 1000.0
    res["ss_wall_per_step"] = ss_wall / n
    d, g = res["step_dur_stats"], res["step_gap_stats"]
    out.append(f"\n  Step duration: avg={d['avg']:.1f} us, P50={d['p50']:.1f} us, P90={d['p90']:.1f} us")
    out.append(f"  Inter-step gap: avg={g['avg']:.1f} us, P50={g['p50']:.1f} us, P90={g['p90']:.1f} us")
    out.append(f"\n  Steady-state wall time: {ss_wall:.1f} us ({ss_wall / 1e6:.4f}s)")
    out.append(f"  Wall time per step: {res['ss_wall_per_step']:.1f} us")
    short = (lambda x: x[:55] + "..." if len(x) > 55 else x)
    out.append("\n--- NVTX Breakdown (steady-state) ---")
    rows = breakdown(db, "SELECT s.value, COUNT(*) AS cnt, SUM(n.end - n.start) / 1000.0 AS total_us "
                         "FROM NVTX_EVENTS n JOIN StringIds s ON n.textId = s.id WHERE n.end > 0 AND "
                         "n.start >= ? AND n.end <= ? AND s.value NOT LIKE '%[Executor]%'", ss_start, ss_end, 30)
    res["nvtx_per_step"] = {}
    for name, cnt, total in rows:
        per_step = total / tp_size / n
        res["nvtx_per_step"][name] = per_step
        out.append(f"    {short(name):60}: {per_step:8.1f} us/step  (total={total / tp_size:.0f}us, cnt={cnt // tp_size})")
    out.append("\n--- GPU Kernels (steady-state) ---")
    rows = breakdown(db, "SELECT s.value, COUNT(*) AS cnt, SUM(k.end - k.start) / 1000.0 AS total_us "
                         "FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON k.shortName = s.id "
                         "WHERE k.start >= ? AND k.start < ?", ss_start, ss_end, 15)
    for name, cnt, total in rows:
        out.append(f"    {short(name):60}: {total / n:7.1f} us/step  (cnt={cnt}, total={total:.0f}us)")
    res["gpu_per_step"] = sum(r[2] for r in rows) / n
    res["kernels_per_step"] = sum(r[1] for r in rows) / n
    res["kernel_per_step"] = {r[0]: r[2] / n for r in rows}
    out.append(f"  Total GPU per step: {res['gpu_per_step']:.1f} us")
    out.append(f"  Kernel launches per step: {res['kernels_per_step']:.1f}")
    out.append("\n--- CUDA API (steady-state) ---")
    rows = breakdown(db, "SELECT s.value, COUNT(*) AS cnt, SUM(r.end - r.start) / 1000.0 AS total_us "
                         "FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON r.nameId = s.id "
                         "WHERE r.start >= ? AND r.start < ?", ss_start, ss_end, 15)
    res["api_per_step"] = {}
    for name, cnt, total in rows:
        res["api_per_step"][name] = total / n
        out.append(f"    {name:50}: {total / n:7.1f} us/step  (cnt={cnt})")


def pct(d, b):
    return d / b * 100 if b else 0


def versus(b, t):
    return f"{b:.1f} vs {t:.1f} us  ({t - b:+.1f} us, {pct(t - b, b):+.1f}%)"


def compare(b, t, out):
    out.append(f"\n\n{RULE}\nCOMPARISON: {b['label']} vs {t['label']}\n{RULE}")
    if not (b["bench_found"] and t["bench_found"]):
        out.append("\n  Cannot compare: benchmark phase not found in one or both traces.")
        return
    out.append("\n--- Allreduce Iteration Comparison ---")
    out.append(f"  Benchmark iterations: {b['bench_iter_count']} vs {t['bench_iter_count']}")
    out.append(f"  Avg iteration wall time: {versus(b['wall_time_stats']['avg'], t['wall_time_stats']['avg'])}")
    out.append(f"  Inter-iter gap avg: {versus(b['gap_stats']['avg'], t['gap_stats']['avg'])}")
    out.append(f"  Inter-iter gap P50: {b['gap_stats']['p50']:.1f} vs {t['gap_stats']['p50']:.1f} us")
    both = b.get("ss_wall_per_step") and t.get("ss_wall_per_step")
    if both:
        out.append("\n--- Steady-State Per-Step Comparison ---")
        out.append(f"  Wall time per step: {versus(b['ss_wall_per_step'], t['ss_wall_per_step'])}")
        out.append(f"  Step duration avg: {versus(b['step_dur_stats']['avg'], t['step_dur_stats']['avg'])}")
        out.append(f"  Inter-step gap P50: {versus(b['step_gap_stats']['p50'], t['step_gap_stats']['p50'])}")
    bn, tn = b.get("nvtx_per_step", {}), t.get("nvtx_per_step", {})
    all_ops = sorted(set(bn) | set(tn))
    all_ops.sort(key=lambda k: abs(tn.get(k, 0) - bn.get(k, 0)), reverse=True)
    if bn or tn:
        out.append("\n--- NVTX Per-Step Comparison (steady-state) ---")
        out.append(f"  {'Operation'.ljust(40)} {'Baseline'.rjust(10)} {'Target'.rjust(10)} "
                   f"{'Delta'.rjust(10)} {'Delta%'.rjust(8)}  Status")
        out.append(f"  {'-' * 40} {'-' * 10} {'-' * 10} {'-' * 10} {'-' * 8}  ------")
        for op in all_ops[:20]:
            bv, tv = bn.get(op, 0), tn.get(op, 0)
            delta = tv - bv
            p = delta / bv * 100 if bv > 0 else float("inf")
            status = ("NEW" if bv == 0 else "REMOVED" if tv == 0 else "REGRESSION" if p > 50
                      else "IMPROVED" if p < -30 else "")
            pct_str = f"{p:+.0f}%" if bv > 0 else "NEW"
            short_op = op[:38] + ".." if len(op) > 40 else op
            out.append(f"  {short_op:<40} {bv:10.1f} {tv:10.1f} {delta:+10.1f} {pct_str:>8}  {status}")
    if b.get("gpu_per_step", 0) or t.get("gpu_per_step", 0):
        bg, tg = b.get("gpu_per_step", 0), t.get("gpu_per_step", 0)
        bk, tk = b.get("kernels_per_step", 0), t.get("kernels_per_step", 0)
        out.append("\n--- GPU Per-Step Comparison ---")
        out.append(f"  GPU time per step: {versus(bg, tg)}")
        out.append(f"  Kernels per step: {bk:.1f} vs {tk:.1f}  ({tk - bk:+.1f})")
    out.append("\n--- Summary ---")
    if not both:
        return
    d = t["ss_wall_per_step"] - b["ss_wall_per_step"]
    dur_delta = t["step_dur_stats"]["avg"] - b["step_dur_stats"]["avg"]
    gap_delta = t["step_gap_stats"]["p50"] - b["step_gap_stats"]["p50"]
    out.append(f"  Per-step wall time regression: {d:+.1f} us ({pct(d, b['ss_wall_per_step']):+.1f}%)")
    out.append(f"    Step duration contribution: {dur_delta:+.1f} us")
    out.append(f"    Inter-step gap contribution (P50): {gap_delta:+.1f} us")
    if gap_delta > dur_delta:
        out.append("\n  CONCLUSION: Regression is primarily in INTER-STEP HOST OVERHEAD.")
        out.append("    The gap between forward steps increased more than step execution.")
    else:
        out.append("\n  CONCLUSION: Regression is primarily in STEP EXECUTION TIME.")
        out.append("    Forward step duration increased more than inter-step gap.")
    if bn and tn:
        out.append("\n  Top regression sources (us/step):")
        grew = [(op, tn.get(op, 0) - bn.get(op, 0)) for op in all_ops if tn.get(op, 0) - bn.get(op, 0) > 0]
        grew.sort(key=lambda x: x[1], reverse=True)
        for op, delta in grew[:5]:
            bv, tv = bn.get(op, 0), tn.get(op, 0)
            out.append(f"    {op}: {bv:.0f} -> {tv:.0f}  (+{delta:.0f})" if bv > 0 else f"    {op}: NEW  (+{delta:.0f})")


def option(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def main():
    values = {option(o, None) for o in ("--tp-size", "--baseline-label", "--target-label")}
    paths = [a for a in sys.argv[1:] if not a.startswith("--") and a not in values]
    tp_size = int(option("--tp-size", "1"))
    out = []
    results = []
    for path, label in zip(paths, (option("--baseline-label", "baseline"), option("--target-label", "target"))):
        db = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
        results.append(analyze(db, label, tp_size, out))
    if len(results) == 2:
        compare(results[0], results[1], out)
    if "--json" in sys.argv:
        print(json.dumps({"baseline": results[0], "target": results[1] if len(results) == 2 else None}, indent=2))
    else:
        sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()

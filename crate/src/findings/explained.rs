//! Findings of the explainer's sections: launch storms, copies and memory, syncs and
//! allocations, and the host side's own when the capture has no kernel.

use super::{Finding, Severity, device_share, finding, idle_held, ms, ms_ns, pct, sort};
use crate::drill::DrillReport;
use crate::drill::idle::CauseKind;
use crate::explain::api::CallSummary;
use crate::explain::{ExplainReport, Window, WindowBasis};
use crate::format;
use crate::names::api::{ApiKind, api_kind};

/// Findings of the explainer's sections. With kernels (a drill-down `d`), each is as severe as
/// the GPU-idle time its cause holds (a pattern that holds no idle time is informational);
/// blocking syncs, allocations and the other causes of idle time are the idle findings. Without
/// kernel records, the host side's own: syncs, allocations and copies over the whole capture.
pub fn explain_findings(e: &ExplainReport, d: Option<&DrillReport>) -> Vec<Finding> {
    let Some(d) = d else {
        return host_side_findings(e);
    };
    let mut out = Vec::new();
    let storm = &e.launch_storm;
    if storm.storm {
        let held = idle_held(d, CauseKind::Launch, |_| true);
        let share = device_share(d, held);
        out.push(finding(
            Severity::of_share(share),
            "launches",
            "Launch storm: many tiny kernels at a high launch rate".into(),
            format!(
                "{} launches/s from the busiest process; {} of kernels are shorter than {}; launch calls hold {} of GPU-idle time ({} of device time)",
                format::mean(storm.max_process_launches_per_s, 0),
                pct(storm.tiny_share),
                ms(storm.tiny_threshold_us),
                ms_ns(held),
                pct(share)
            ),
            Some("GRAPH_EXPAND, CUSTOM_OP"),
            "Capture the launch sequence in a CUDA graph (GRAPH_EXPAND) or fuse the small kernels (CUSTOM_OP) so the host issues fewer launches.",
            held as f64 / 1000.0,
        ));
    }
    out.extend(memory_findings(e, d));
    if e.nvtx.kernel_us > 0.0 && e.nvtx.coverage < 0.5 && e.nvtx.ranges > 0 {
        out.push(finding(
            Severity::Info,
            "nvtx",
            "Most GPU time is not attributed to any NVTX range".into(),
            format!(
                "{} of kernel time was launched inside an NVTX range",
                pct(e.nvtx.coverage)
            ),
            None,
            "Add NVTX ranges around the model's phases and host work (torch.cuda.nvtx.range) so gaps and kernels map to source.",
            0.0,
        ));
    }
    sort(&mut out);
    out
}

fn memory_findings(e: &ExplainReport, d: &DrillReport) -> Vec<Finding> {
    let m = &e.memory.in_window;
    let (scope, counted) = scope_words(&e.window);
    let mut out = Vec::new();
    if m.pageable_async_copies > 0 {
        // The attribution gives an async copy from pageable memory to `sync`, labelled by its API
        // (runtime or driver: `cudaMemcpyAsync`, `cuMemcpyHtoDAsync`).
        let held = idle_held(d, CauseKind::Sync, |l| {
            api_kind(l) == ApiKind::Memcpy { is_async: true }
        });
        let share = device_share(d, held);
        out.push(finding(
            Severity::of_share(share),
            "memory",
            format!("Async copies from pageable host memory ({counted})"),
            format!(
                "{}; they hold {} of GPU-idle time ({} of device time)",
                pageable_copies(m.pageable_async_copies, scope),
                ms_ns(held),
                pct(share)
            ),
            Some("ALLOC"),
            "Allocate pinned host buffers once at initialization (cudaHostAlloc, tensor.pin_memory()) and copy through them.",
            held as f64 / 1000.0,
        ));
    }
    if m.synchronous_copies + m.synchronous_memsets > 0 {
        let held = idle_held(d, CauseKind::Sync, |l| {
            matches!(
                api_kind(l),
                ApiKind::Memcpy { is_async: false } | ApiKind::Memset { is_async: false }
            )
        });
        let share = device_share(d, held);
        out.push(finding(
            Severity::of_share(share),
            "memory",
            format!("Synchronous copies or memsets ({counted})"),
            format!(
                "{}; they hold {} of GPU-idle time ({} of device time)",
                synchronous_ops(m.synchronous_copies, m.synchronous_memsets, scope),
                ms_ns(held),
                pct(share)
            ),
            Some("SYNC"),
            "Use the async variants on a stream (cudaMemcpyAsync, non_blocking=True) and synchronize only where the result is needed.",
            held as f64 / 1000.0,
        ));
    }
    out
}

/// Findings of a trace without kernel records: what blocked the host, counted over the whole
/// capture (there is no GPU-idle time to attribute).
fn host_side_findings(e: &ExplainReport) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(call_finding(
        &e.syncs,
        &e.window,
        "syncs",
        "Blocking host-device synchronization",
        "SYNC, HOIST",
        "Replace blocking syncs in the loop: pre-compute values on the CPU (SYNC), pass them from step level (HOIST), or wait on events asynchronously.",
    ));
    out.extend(call_finding(
        &e.allocations,
        &e.window,
        "allocations",
        "Runtime object creation or allocation",
        "ALLOC",
        "Create events/streams and allocate buffers once at initialization and reuse them.",
    ));
    out.extend(host_memory_findings(e));
    sort(&mut out);
    out
}

/// A finding on API calls of one class, from the calls inside the explainer's window only; the
/// title says what was counted: per step (when there are steps), in the kernel window, or the
/// whole capture (no kernel records).
fn call_finding(
    c: &CallSummary,
    window: &Window,
    source: &str,
    what: &str,
    pattern: &str,
    fix: &str,
) -> Option<Finding> {
    let w = &c.in_window;
    let window_us = window.duration_us.max(f64::MIN_POSITIVE);
    let per_step = c.calls_per_step.filter(|&n| n > 0.0);
    // The union of the calls: the time at least one of them held a thread, never above 100 %.
    let busy = (w.busy_us / window_us).min(1.0);
    if w.calls == 0 || (per_step.is_none() && Severity::of_share(busy) == Severity::Info) {
        return None;
    }
    let (scope, counted) = scope_words(window);
    let title = match per_step {
        Some(n) => format!("{what}: {n:.1} calls per steady-state step"),
        None => format!("{what} ({counted})"),
    };
    let top: Vec<String> = w
        .by_name
        .iter()
        .take(3)
        .map(|a| format!("{} ×{} ({})", a.name, a.count, ms(a.total_us)))
        .collect();
    let mut evidence = format!(
        "{} call(s) {scope}, running {} of its {} ({}): {}",
        format::count(w.calls),
        ms(w.busy_us),
        ms(window.duration_us),
        pct(busy),
        top.join(", ")
    );
    if w.total_us > w.busy_us * 1.001 && w.threads > 1 {
        let summed = w.total_us / window_us;
        evidence += &format!(
            "; {} threads of {} process(es) block at the same time, so summed over threads they take {} ({} of the window{})",
            w.threads,
            w.processes,
            ms(w.total_us),
            pct(summed),
            if summed > 1.0 {
                ": above 100 % only because the threads overlap"
            } else {
                ""
            }
        );
    }
    if c.calls > w.calls {
        evidence += &format!(
            "; {} more call(s) lie outside the window (set-up or tear-down): {} of call time outside it is not counted",
            c.calls - w.calls,
            ms((c.total_us - w.total_us).max(0.0))
        );
    }
    Some(finding(
        Severity::of_share(busy).min(Severity::Low),
        source,
        title,
        evidence,
        Some(pattern),
        fix,
        w.busy_us,
    ))
}

/// What a window-scoped count covers, in words: for a sentence, and for a title.
fn scope_words(window: &Window) -> (&'static str, &'static str) {
    match window.basis {
        WindowBasis::Kernels => ("in the kernel window", "in the kernel window"),
        WindowBasis::Capture => ("in the whole capture", "whole capture: no kernel records"),
    }
}

/// Copies that stall the host, counted in the explainer's window (without kernels: the whole
/// capture).
fn host_memory_findings(e: &ExplainReport) -> Vec<Finding> {
    let m = &e.memory.in_window;
    let (scope, counted) = scope_words(&e.window);
    let mut out = Vec::new();
    if m.pageable_async_copies > 0 {
        out.push(finding(
            Severity::Low,
            "memory",
            format!("Async copies from pageable host memory ({counted})"),
            pageable_copies(m.pageable_async_copies, scope),
            Some("ALLOC"),
            "Allocate pinned host buffers once at initialization (cudaHostAlloc, tensor.pin_memory()) and copy through them.",
            0.0,
        ));
    }
    if m.synchronous_copies + m.synchronous_memsets > 0 {
        out.push(finding(
            Severity::Low,
            "memory",
            format!("Synchronous copies or memsets ({counted})"),
            synchronous_ops(m.synchronous_copies, m.synchronous_memsets, scope),
            Some("SYNC"),
            "Use the async variants on a stream (cudaMemcpyAsync, non_blocking=True) and synchronize only where the result is needed.",
            0.0,
        ));
    }
    out
}

/// The async copies of `scope` from pageable memory, counted in words.
fn pageable_copies(copies: u64, scope: &str) -> String {
    let (touch, them) = if copies == 1 {
        ("touches", "it")
    } else {
        ("touch", "them")
    };
    format!(
        "{} {scope} {touch} pageable memory: the driver stages {them} synchronously",
        format::counted(
            copies,
            "cudaMemcpyAsync-style copy",
            "cudaMemcpyAsync-style copies"
        )
    )
}

/// The synchronous copies and memsets of `scope`, counted in words ("1 copy and 0 memsets …").
fn synchronous_ops(copies: u64, memsets: u64, scope: &str) -> String {
    format!(
        "{} and {} {scope} were issued through synchronous APIs, blocking the host",
        format::counted(copies, "copy", "copies"),
        format::counted(memsets, "memset", "memsets")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_counts_read_in_the_singular_for_one() {
        assert_eq!(
            synchronous_ops(1, 0, "in the kernel window"),
            "1 copy and 0 memsets in the kernel window were issued through synchronous APIs, blocking the host"
        );
        assert_eq!(
            synchronous_ops(1_200, 1, "in the whole capture"),
            "1,200 copies and 1 memset in the whole capture were issued through synchronous APIs, blocking the host"
        );
        assert_eq!(
            pageable_copies(1, "in the kernel window"),
            "1 cudaMemcpyAsync-style copy in the kernel window touches pageable memory: the driver stages it synchronously"
        );
        assert_eq!(
            pageable_copies(4, "in the kernel window"),
            "4 cudaMemcpyAsync-style copies in the kernel window touch pageable memory: the driver stages them synchronously"
        );
    }
}

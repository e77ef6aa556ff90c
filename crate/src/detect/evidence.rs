//! Evidence behind the numbers: numerator/denominator per metric, per-device and per-process
//! rows, and warnings about what a profile cannot see.

use std::collections::BTreeMap;

use super::measure::{PartOf, Prepared, ScopeMeasure};
use super::result::{DeviceMetrics, Evidence, EvidencePart, ProcessMetrics};
use super::verdict::Outcome;
use crate::detect::config::Thresholds;
use crate::names::launch::LaunchApis;

/// One line per metric on what it means, shown beside the number.
const MEANINGS: [(&str, &str); 7] = [
    (
        "gpu_idle_ratio",
        "share of the window in which the GPU ran nothing: no kernel, graph replay, copy or memset (trtllm-skill: no kernel)",
    ),
    (
        "launch_overhead_ratio",
        "share of the window the CPU spent inside kernel-launch API calls",
    ),
    (
        "gpu_utilization",
        "share of the window in which the GPU ran something: a kernel, graph replay, copy or memset (trtllm-skill: a kernel)",
    ),
    (
        "nccl_ratio",
        "share of GPU busy time spent in NCCL kernels (communication); caveat only",
    ),
    (
        "host_prep_exposed_ratio",
        "share of host input preparation that ran while the GPU was idle",
    ),
    (
        "host_prep_perf_impact",
        "exposed host preparation as a share of the whole window",
    ),
    (
        "host_prep_idle_attribution",
        "share of GPU idle time explained by host input preparation",
    ),
];

/// The evidence table of one scope.
pub fn table(
    p: &Prepared<'_>,
    m: &ScopeMeasure,
    t: &Thresholds,
    o: &Outcome,
) -> BTreeMap<&'static str, Evidence> {
    let pid = |i: crate::model::ProcessIdx| p.trace.processes.pid.get(i as usize).copied();
    let values = [
        m.metrics.gpu_idle_ratio,
        m.metrics.launch_overhead_ratio,
        m.metrics.gpu_utilization,
        m.metrics.nccl_ratio,
        m.metrics.host_prep_exposed_ratio,
        m.metrics.host_prep_perf_impact,
        m.metrics.host_prep_idle_attribution,
    ];
    let thresholds = [
        t.gpu_idle_ratio,
        t.launch_overhead_ratio,
        t.gpu_utilization,
        t.nccl_ratio_caveat,
        t.host_prep_exposed_ratio,
        t.host_prep_perf_impact,
        t.host_prep_idle_attribution,
    ];
    let crossed = [
        o.crossed.gpu_idle_ratio,
        o.crossed.launch_overhead_ratio,
        o.crossed.gpu_utilization,
        None,
        o.crossed.host_prep_exposed_ratio,
        o.crossed.host_prep_perf_impact,
        o.crossed.host_prep_idle_attribution,
    ];
    MEANINGS
        .iter()
        .enumerate()
        .map(|(i, &(key, meaning))| {
            let ev = Evidence {
                value: values[i],
                numerator_us: values[i].and(m.numerators.get(key).copied()),
                denominator_us: values[i].and(m.denominators.get(key).copied()),
                parts: values[i]
                    .and(m.parts.get(key))
                    .into_iter()
                    .flatten()
                    .map(|part| EvidencePart {
                        device: match part.of {
                            PartOf::Device(d) => Some(d),
                            PartOf::Process(_) => None,
                        },
                        pid: match part.of {
                            PartOf::Process(i) => pid(i),
                            PartOf::Device(_) => None,
                        },
                        numerator_us: part.numerator_us,
                        denominator_us: part.denominator_us,
                        value: part.value,
                    })
                    .collect(),
                threshold: thresholds[i],
                direction: if key == "gpu_utilization" {
                    "below"
                } else {
                    "above"
                },
                crossed: crossed[i],
                meaning,
            };
            (key, ev)
        })
        .collect()
}

pub fn devices(p: &Prepared<'_>, m: &ScopeMeasure) -> Vec<DeviceMetrics> {
    m.devices
        .iter()
        .filter_map(|d| {
            let device = d.device?;
            let gpu_name = p
                .trace
                .gpus
                .iter()
                .find(|g| g.id == i64::from(device))
                .map(|g| g.name.clone());
            Some(DeviceMetrics {
                device,
                gpu_name,
                kernels: d.kernels,
                busy_us: d.busy_us,
                window_us: m.window_us,
                gpu_idle_ratio: d.gpu_idle_ratio,
                gpu_utilization: d.gpu_utilization,
                nccl_us: d.nccl_us,
                nccl_ratio: d.nccl_ratio,
            })
        })
        .collect()
}

pub fn processes(p: &Prepared<'_>, m: &ScopeMeasure) -> Vec<ProcessMetrics> {
    if !p.sw.per_device {
        return Vec::new();
    }
    let procs = &p.trace.processes;
    m.processes
        .iter()
        .map(|pm| {
            let i = pm.process as usize;
            let prep = pm.prep.as_ref();
            ProcessMetrics {
                pid: procs.pid.get(i).copied().unwrap_or(0),
                global_pid: procs
                    .global_pid
                    .get(i)
                    .map_or_else(String::new, |g| g.to_string()),
                name: procs.name.get(i).cloned().unwrap_or_default(),
                devices: pm.devices.clone(),
                launch_calls: pm.launch_calls,
                launch_us: pm.launch_us,
                launch_overhead_ratio: pm.launch_ratio,
                host_prep_pattern: prep.map(|x| x.pattern.to_string()),
                host_prep_us: prep.map(|x| x.prep_us),
                host_prep_exposed_us: prep.map(|x| x.exposed_us),
                idle_us: prep.map(|x| x.idle_us),
                host_prep_exposed_ratio: prep.map(|x| x.exposed_ratio),
                host_prep_perf_impact: prep.map(|x| x.perf_impact),
                host_prep_idle_attribution: prep.map(|x| x.idle_attribution),
            }
        })
        .collect()
}

/// Things the user should know when reading the numbers.
pub fn warnings(
    p: &Prepared<'_>,
    agg: &ScopeMeasure,
    steps: crate::steps::StepCounts,
) -> Vec<String> {
    let mut w = Vec::new();
    let trace = p.trace;
    let devices = &p.kernels.facts.devices;
    if !p.sw.per_device && devices.len() > 1 {
        w.push(format!(
            "{} devices are pooled into one busy union (trtllm-skill rule): GPU idle is the time no device ran a kernel; the standard profile measures each device",
            devices.len()
        ));
    }
    if p.sw.launch_apis == LaunchApis::ExactCudaLaunchKernel {
        let versioned = p.launched_any(|s| {
            s.starts_with("cudaLaunchKernel_v")
                || s.starts_with("cuLaunchKernel")
                || s.starts_with("cudaGraphLaunch")
        });
        if versioned {
            w.push("launch calls carry versioned or driver/graph names (e.g. cudaLaunchKernel_v7000, cuLaunchKernel, cudaGraphLaunch): the trtllm-skill profile counts only the exact name cudaLaunchKernel, so its launch overhead ratio misses them".into());
        }
    }
    if !p.sw.nvtx_text_fallback && trace.nvtx.has_inline_text_names() {
        w.push("some NVTX ranges carry their name only in the inline `text` column: the trtllm-skill profile (textId names only) does not see them".into());
    }
    let (raw_steps, dedup) = (steps.raw, steps.distinct);
    if p.sw.dedup_steps && raw_steps > steps.steps {
        let merged = steps.steps;
        w.push(format!("{raw_steps} forward-step ranges were merged into {merged} steps (TP ranks' copies of the same step)"));
    } else if !p.sw.dedup_steps && raw_steps > 0 && dedup < raw_steps {
        w.push(format!("iteration counts include TP-rank duplicates ({raw_steps} ranges for {dedup} distinct steps; trtllm-skill rule)"));
    }
    if let Some(nccl) = agg.metrics.nccl_ratio
        && nccl > 0.20
    {
        w.push(format!("NCCL kernels take {:.1}% of GPU busy time: idle gaps may be communication waits rather than host overhead", nccl * 100.0));
    }
    if trace.meta.traces_whole_graphs() && !p.kernels.facts.any_graph_node {
        let graph_launches = p.launched_any(|s| s.starts_with(crate::names::launch::GRAPH_LAUNCH));
        if graph_launches {
            let replays = p
                .kernels
                .work
                .as_ref()
                .map_or(0, |w| w.devices.iter().map(|d| d.replays).sum::<u64>());
            w.push(match replays {
                0 => "CUDA graphs were traced as whole graphs (--cuda-graph-trace=graph) but no replay was recorded: the GPU time of the graphs is missing; re-capture with --cuda-graph-trace=node".into(),
                n => format!("CUDA graphs were traced as whole graphs (--cuda-graph-trace=graph): their {n} replays are measured as GPU busy time; only the kernels inside are not itemized (re-capture with --cuda-graph-trace=node when their names matter)"),
            });
        }
    }
    w
}

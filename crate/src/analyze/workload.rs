//! Workload facts of a trace and the comparability check: two traces are only comparable per
//! step when they ran the same workload (batch, ctx/gen mix, TP size, GPU, capture options).

use serde::Serialize;

use std::collections::BTreeSet;

use crate::model::Trace;
use crate::model::rows::KernelRow;

/// Capture options whose difference changes what a trace records (or what it costs).
const CAPTURE_KEYS: [&str; 5] = [
    "CAPTURE_EVENT_TYPE",
    "CUDA_GRAPH_TRACE_OPTIONS:MODE",
    "CUDA_TRACE_SCOPE",
    "CUDA_SKIP_SOME_API_CALLS",
    "RATE_HZ",
];

/// Context shares further apart than this (absolute) make the per-step figures incomparable.
pub const MIX_TOLERANCE: f64 = 0.10;

/// Which processes launched kernels and on which devices, fed one kernel at a time.
#[derive(Debug, Clone)]
pub struct KernelSpread {
    processes: Vec<bool>,
    devices: BTreeSet<u32>,
}

impl KernelSpread {
    /// For kernels of the processes of `trace`.
    pub fn new(trace: &Trace) -> KernelSpread {
        KernelSpread {
            processes: vec![false; trace.processes.len()],
            devices: BTreeSet::new(),
        }
    }

    pub fn push(&mut self, k: &KernelRow) {
        if let Some(s) = self.processes.get_mut(k.process as usize) {
            *s = true;
        }
        self.devices.insert(k.device);
    }
}

/// What ran, as far as the trace says.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workload {
    /// Processes that launched kernels (TP ranks in one file).
    pub ranks: usize,
    pub devices: Vec<u32>,
    /// Distinct GPU models (`TARGET_INFO_GPU`), sorted.
    pub gpu_models: Vec<String>,
    /// The steady-state generation batch (largest `gen reqs`).
    pub steady_batch: Option<u64>,
    /// Context steps (C > 0) and generation-only steps among the analysed steps.
    pub context_steps: usize,
    pub generation_steps: usize,
    /// `META_DATA_CAPTURE` options that matter for comparison, `(name, value)`, values of a
    /// repeated option joined with `+`.
    pub capture: Vec<(String, String)>,
}

impl Workload {
    /// Facts of a trace: the kernels' spread over processes and devices (read in a pass over
    /// the kernels), its GPUs and capture options; the step facts come from the analysis.
    pub fn from_spread(
        trace: &Trace,
        spread: KernelSpread,
        steady_batch: Option<u64>,
        context: usize,
        generation: usize,
    ) -> Workload {
        let mut gpu_models: Vec<String> = trace.gpus.iter().map(|g| g.name.clone()).collect();
        gpu_models.sort();
        gpu_models.dedup();
        Workload {
            ranks: spread.processes.iter().filter(|&&s| s).count(),
            devices: spread.devices.into_iter().collect(),
            gpu_models,
            steady_batch,
            context_steps: context,
            generation_steps: generation,
            capture: capture(trace),
        }
    }

    /// Share of context steps among the analysed steps.
    pub fn context_share(&self) -> Option<f64> {
        let n = self.context_steps + self.generation_steps;
        (n > 0).then(|| self.context_steps as f64 / n as f64)
    }
}

fn capture(trace: &Trace) -> Vec<(String, String)> {
    CAPTURE_KEYS
        .iter()
        .filter_map(|&key| {
            let mut values: Vec<&str> = trace
                .meta
                .capture
                .iter()
                .filter(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
                .collect();
            values.sort_unstable();
            (!values.is_empty()).then(|| (key.to_string(), values.join("+")))
        })
        .collect()
}

/// One warning per workload difference between baseline `b` and target `t`.
pub fn comparability(b: &Workload, t: &Workload) -> Vec<String> {
    let mut out = Vec::new();
    if b.steady_batch != t.steady_batch {
        out.push(format!(
            "steady-state batch size differs ({} vs {} generation requests): per-step times scale with the batch; compare equal batch sizes",
            show(b.steady_batch),
            show(t.steady_batch)
        ));
    }
    if let (Some(bs), Some(ts)) = (b.context_share(), t.context_share())
        && (bs - ts).abs() > MIX_TOLERANCE
    {
        out.push(format!(
            "ctx/gen mix differs: {:.0}% vs {:.0}% of the analysed steps carry context requests",
            bs * 100.0,
            ts * 100.0
        ));
    }
    if b.ranks != t.ranks {
        out.push(format!(
            "TP size differs: {} vs {} ranks (processes launching kernels)",
            b.ranks, t.ranks
        ));
    }
    if b.gpu_models != t.gpu_models {
        out.push(format!(
            "GPU model differs: {} vs {}",
            models(&b.gpu_models),
            models(&t.gpu_models)
        ));
    }
    for (key, bv) in &b.capture {
        let tv = t.capture.iter().find(|(k, _)| k == key).map(|(_, v)| v);
        if tv.is_some_and(|tv| tv != bv) {
            out.push(format!(
                "nsys capture option {key} differs: {bv} vs {}",
                tv.map_or("", String::as_str)
            ));
        }
    }
    out
}

fn show(v: Option<u64>) -> String {
    v.map_or_else(|| "unknown".to_string(), |v| v.to_string())
}

fn models(m: &[String]) -> String {
    if m.is_empty() {
        "unknown".into()
    } else {
        m.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w() -> Workload {
        Workload {
            ranks: 2,
            devices: vec![0, 1],
            gpu_models: vec!["NVIDIA H100".into()],
            steady_batch: Some(64),
            context_steps: 3,
            generation_steps: 40,
            capture: vec![("CUDA_GRAPH_TRACE_OPTIONS:MODE".into(), "Graph".into())],
        }
    }

    #[test]
    fn identical_workloads_are_comparable() {
        assert!(comparability(&w(), &w()).is_empty());
    }

    #[test]
    fn each_difference_is_one_warning() {
        let mut t = w();
        t.steady_batch = Some(32);
        t.context_steps = 20;
        t.ranks = 1;
        t.gpu_models = vec!["NVIDIA B200".into()];
        t.capture[0].1 = "Node".into();
        let warnings = comparability(&w(), &t);
        assert_eq!(warnings.len(), 5, "{warnings:?}");
        assert!(warnings[0].contains("64 vs 32"));
        assert!(warnings[1].contains("7% vs 33%"), "{}", warnings[1]);
        assert!(warnings[4].contains("Graph vs Node"));
        // A small mix difference is tolerated.
        let mut t = w();
        t.context_steps = 5;
        assert!(comparability(&w(), &t).is_empty());
    }
}

//! The optimization hand-off block (spec §4, reference §10.3): the ops to profile next, their
//! TensorRT-LLM source functions, and a ready-to-paste `TLLM_LINE_PROFILER_FUNCTIONS=…` line.

use serde::Serialize;

/// NVTX range → (class.method as the reference names it, module holding the class), from the
/// reference's hand-off table (§10.3) and NVTX range reference (§11).
const SOURCES: [(&str, &str, &str); 6] = [
    (
        "_prepare_tp_inputs",
        "PyTorchModelEngine._prepare_tp_inputs",
        "tensorrt_llm._torch.pyexecutor.model_engine",
    ),
    (
        "_fetch_new_requests",
        "PyExecutor._fetch_new_requests",
        "tensorrt_llm._torch.pyexecutor.py_executor",
    ),
    (
        "broadcast_requests",
        "PyExecutor.broadcast_requests",
        "tensorrt_llm._torch.pyexecutor.py_executor",
    ),
    (
        "_update_requests",
        "PyExecutor._update_requests",
        "tensorrt_llm._torch.pyexecutor.py_executor",
    ),
    (
        "_process_requests",
        "PyExecutor._process_requests",
        "tensorrt_llm._torch.pyexecutor.py_executor",
    ),
    (
        "_sample_async",
        "PyExecutor._sample_async",
        "tensorrt_llm._torch.pyexecutor.py_executor",
    ),
];

/// Ops listed in the block.
pub const TOP_OPS: usize = 5;

/// The source function of an NVTX range, as the reference writes it (`PyExecutor._update_requests`).
pub fn source_function(nvtx_name: &str) -> Option<&'static str> {
    SOURCES
        .iter()
        .find(|(n, _, _)| *n == nvtx_name.trim())
        .map(|&(_, f, _)| f)
}

/// The importable path `TLLM_LINE_PROFILER_FUNCTIONS` expects (`module.Class.method`).
fn profiler_path(nvtx_name: &str) -> Option<String> {
    SOURCES
        .iter()
        .find(|(n, _, _)| *n == nvtx_name.trim())
        .map(|(_, f, m)| format!("{m}.{f}"))
}

/// One op of the block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HandoffOp {
    pub nvtx_name: String,
    /// Target's (or the single trace's) time per step, µs.
    pub us_per_step: f64,
    /// Change per step against the baseline, µs (comparisons only).
    pub delta_us_per_step: Option<f64>,
    pub source_function: Option<&'static str>,
}

impl HandoffOp {
    pub fn new(nvtx_name: &str, us_per_step: f64, delta_us_per_step: Option<f64>) -> HandoffOp {
        HandoffOp {
            nvtx_name: nvtx_name.to_string(),
            us_per_step,
            delta_us_per_step,
            source_function: source_function(nvtx_name),
        }
    }
}

/// Stopping criteria and where to start profiling.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Handoff {
    /// A comparison's ops whose time per step grew, largest growth first (the reference's key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_regressing_ops: Option<Vec<HandoffOp>>,
    /// One trace's heaviest ops per step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_ops: Option<Vec<HandoffOp>>,
    /// The first op's source function (else `_prepare_tp_inputs`'s when it was seen).
    pub recommended_first_target: Option<&'static str>,
    pub wall_time_per_step_us: Option<f64>,
    pub inter_step_gap_p50_us: Option<f64>,
    pub kernels_per_step: Option<f64>,
    /// `TLLM_LINE_PROFILER_FUNCTIONS="…"` for the ops with a known source, if any.
    pub line_profiler: Option<String>,
    /// The block as text, ready to paste into an issue or hand to the optimization step.
    pub text: String,
    /// The ops are measured in self time ([`Handoff::measured_as`]), as the text's heading says.
    #[serde(skip)]
    self_time: bool,
}

/// Per-step figures the block repeats as stopping criteria.
#[derive(Debug, Clone, Copy, Default)]
pub struct Criteria {
    pub wall_time_per_step_us: Option<f64>,
    pub inter_step_gap_p50_us: Option<f64>,
    pub kernels_per_step: Option<f64>,
}

impl Handoff {
    /// Builds the block from `ops` (already ranked) and the figures to stop at.
    pub fn new(ops: Vec<HandoffOp>, regressions: bool, seen_prep: bool, c: Criteria) -> Handoff {
        let ops: Vec<HandoffOp> = ops.into_iter().take(TOP_OPS).collect();
        let paths: Vec<String> = ops
            .iter()
            .filter_map(|o| profiler_path(&o.nvtx_name))
            .collect();
        let line_profiler = (!paths.is_empty())
            .then(|| format!("TLLM_LINE_PROFILER_FUNCTIONS=\"{}\"", paths.join(",")));
        let recommended_first_target = ops.iter().find_map(|o| o.source_function).or_else(|| {
            seen_prep
                .then(|| source_function("_prepare_tp_inputs"))
                .flatten()
        });
        let mut h = Handoff {
            top_regressing_ops: regressions.then(|| ops.clone()),
            top_ops: (!regressions).then(|| ops.clone()),
            recommended_first_target,
            wall_time_per_step_us: c.wall_time_per_step_us,
            inter_step_gap_p50_us: c.inter_step_gap_p50_us,
            kernels_per_step: c.kernels_per_step,
            line_profiler,
            text: String::new(),
            self_time: false,
        };
        h.text = h.render(&ops);
        h
    }

    /// The block with its ops measured in self time (`standard`'s NVTX ops: an op's time less
    /// its nested children's), said in its heading; the reference's block measures total time.
    pub fn measured_as(mut self, self_time: bool) -> Handoff {
        self.self_time = self_time;
        let text = self.render(self.ops());
        self.text = text;
        self
    }

    /// The listed ops, whichever kind.
    pub fn ops(&self) -> &[HandoffOp] {
        self.top_regressing_ops
            .as_deref()
            .or(self.top_ops.as_deref())
            .unwrap_or(&[])
    }

    fn render(&self, ops: &[HandoffOp]) -> String {
        let mut out = String::from("optimization_handoff:\n");
        let (key, order) = match self.top_regressing_ops.is_some() {
            true => ("top_regressing_ops", "largest growth first"),
            false => ("top_ops", "heaviest first"),
        };
        let unit = if self.self_time {
            "self µs/step"
        } else {
            "µs/step"
        };
        out.push_str(&format!("  {key} ({unit}, {order}):\n"));
        if ops.is_empty() {
            out.push_str("    (none)\n");
        }
        for op in ops {
            let amount = match op.delta_us_per_step {
                Some(d) => format!("{d:+.1}"),
                None => format!("{:.1}", op.us_per_step),
            };
            let source = op.source_function.unwrap_or("source unknown");
            out.push_str(&format!("    {} {amount}  ({source})\n", op.nvtx_name));
        }
        let fig = |v: Option<f64>| v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.1}"));
        out.push_str(&format!(
            "  recommended_first_target: {}\n  wall_time_per_step_us: {}\n  inter_step_gap_p50_us: {}\n  kernels_per_step: {}\n",
            self.recommended_first_target.unwrap_or("n/a"),
            fig(self.wall_time_per_step_us),
            fig(self.inter_step_gap_p50_us),
            fig(self.kernels_per_step),
        ));
        if let Some(line) = &self.line_profiler {
            out.push_str(&format!("{line}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_ops_get_their_source_and_the_profiler_line() {
        let ops = vec![
            HandoffOp::new("_update_requests", 723.0, Some(310.0)),
            HandoffOp::new("my_custom_range", 50.0, Some(40.0)),
            HandoffOp::new("_fetch_new_requests", 270.0, Some(234.0)),
        ];
        let h = Handoff::new(ops, true, false, Criteria::default());
        assert_eq!(
            h.ops()[0].source_function,
            Some("PyExecutor._update_requests")
        );
        assert_eq!(h.ops()[1].source_function, None);
        assert!(h.top_ops.is_none() && h.top_regressing_ops.is_some());
        assert_eq!(
            h.line_profiler.as_deref(),
            Some(
                "TLLM_LINE_PROFILER_FUNCTIONS=\"tensorrt_llm._torch.pyexecutor.py_executor.PyExecutor._update_requests,tensorrt_llm._torch.pyexecutor.py_executor.PyExecutor._fetch_new_requests\""
            )
        );
        assert_eq!(
            h.recommended_first_target,
            Some("PyExecutor._update_requests")
        );
        assert!(
            h.text
                .contains("_update_requests +310.0  (PyExecutor._update_requests)"),
            "{}",
            h.text
        );
    }

    #[test]
    fn without_known_ops_host_prep_is_the_default_target() {
        let h = Handoff::new(vec![], true, true, Criteria::default());
        assert_eq!(
            h.recommended_first_target,
            Some("PyTorchModelEngine._prepare_tp_inputs")
        );
        assert_eq!(h.line_profiler, None);
        assert!(
            Handoff::new(vec![], true, false, Criteria::default())
                .recommended_first_target
                .is_none()
        );
    }
}

//! Importable names for `TLLM_LINE_PROFILER_FUNCTIONS`: TensorRT-LLM's host profiler takes
//! `module.Class.method` for methods and `module::function` for module-level functions
//! (`tensorrt_llm/tools/profiler/host_profile_tools/host_profiler.py`, `_parse_env_targets`).
//! line_profiler prints only a function's file and `co_name`, so the class comes from the
//! profiler's own default targets and the nsys hand-off's table, the module from the file path.

/// (module, class, method) of the methods the host profiler profiles by default
/// (`_DEFAULT_PROFILE_CONFIG`) and of the hand-off's sources, plus the engine's forward.
const KNOWN: [(&str, &str, &str); 31] = [
    (PYEXEC_EXECUTOR, "PyExecutor", "_prepare_and_schedule_batch"),
    (PYEXEC_EXECUTOR, "PyExecutor", "_schedule"),
    (PYEXEC_EXECUTOR, "PyExecutor", "_forward_step"),
    (PYEXEC_EXECUTOR, "PyExecutor", "_sample_async"),
    (PYEXEC_EXECUTOR, "PyExecutor", "_update_requests"),
    (PYEXEC_EXECUTOR, "PyExecutor", "_update_request_states"),
    (
        PYEXEC_EXECUTOR,
        "PyExecutor",
        "_fetch_and_activate_new_requests",
    ),
    (PYEXEC_EXECUTOR, "PyExecutor", "_handle_responses"),
    (PYEXEC_EXECUTOR, "PyExecutor", "_handle_canceled_requests"),
    (PYEXEC_EXECUTOR, "PyExecutor", "_enqueue_responses"),
    (PYEXEC_EXECUTOR, "PyExecutor", "_fetch_new_requests"),
    (PYEXEC_EXECUTOR, "PyExecutor", "broadcast_requests"),
    (PYEXEC_EXECUTOR, "PyExecutor", "_process_requests"),
    (PYEXEC_EXECUTOR, "PyExecutor", "event_loop"),
    (PYEXEC_SAMPLER, "TorchSampler", "sample_async"),
    (PYEXEC_SAMPLER, "TorchSampler", "update_requests"),
    (PYEXEC_SAMPLER, "TorchSampler", "_process_requests"),
    (PYEXEC_SAMPLER, "TorchSampler", "_write_finish_reasons"),
    (PYEXEC_SAMPLER, "TorchSampler", "prepare_beam_search"),
    (PYEXEC_SAMPLER, "TorchSampler", "_select_generated_logits"),
    (
        PYEXEC_SAMPLER,
        "TorchSampler",
        "_sample_batched_by_strategy",
    ),
    (PYEXEC_RESOURCES, "ResourceManager", "prepare_resources"),
    (PYEXEC_RESOURCES, "ResourceManager", "update_resources"),
    (PYEXEC_RESOURCES, "ResourceManager", "free_resources"),
    (PYEXEC_SCHEDULER, "RequestScheduler", "schedule_request"),
    (PYEXEC_QUEUE, "ExecutorRequestQueue", "fetch_new_requests"),
    (
        PYEXEC_QUEUE,
        "ExecutorRequestQueue",
        "_fetch_and_process_requests",
    ),
    (PYEXEC_QUEUE, "ExecutorRequestQueue", "_merge_requests"),
    (PYEXEC_ENGINE, "PyTorchModelEngine", "forward"),
    (PYEXEC_ENGINE, "PyTorchModelEngine", "_prepare_tp_inputs"),
    (PYEXEC_ENGINE, "PyTorchModelEngine", "_prepare_inputs"),
];

const PYEXEC_EXECUTOR: &str = "tensorrt_llm._torch.pyexecutor.py_executor";
const PYEXEC_SAMPLER: &str = "tensorrt_llm._torch.pyexecutor.sampler";
const PYEXEC_RESOURCES: &str = "tensorrt_llm._torch.pyexecutor.resource_manager";
const PYEXEC_SCHEDULER: &str = "tensorrt_llm._torch.pyexecutor.scheduler";
const PYEXEC_QUEUE: &str = "tensorrt_llm._torch.pyexecutor.executor_request_queue";
const PYEXEC_ENGINE: &str = "tensorrt_llm._torch.pyexecutor.model_engine";

/// The attribute a TensorRT-LLM object is reached by (`self.model_engine.forward`) → its module.
const ATTRIBUTES: [(&str, &str); 6] = [
    ("model_engine", PYEXEC_ENGINE),
    ("sampler", PYEXEC_SAMPLER),
    ("resource_manager", PYEXEC_RESOURCES),
    ("scheduler", PYEXEC_SCHEDULER),
    ("executor_request_queue", PYEXEC_QUEUE),
    ("py_executor", PYEXEC_EXECUTOR),
];

/// The importable module of a source path: from `tensorrt_llm/` (or after `site-packages/`)
/// on, `.py` and `__init__` dropped. None when the path says nothing of its package.
pub fn module_of(file: &str) -> Option<String> {
    let path = file.replace('\\', "/");
    let rel = if let Some(i) = path.find("site-packages/") {
        &path[i + "site-packages/".len()..]
    } else if let Some(i) = path.rfind("/tensorrt_llm/") {
        &path[i + 1..]
    } else if path.starts_with("tensorrt_llm/") {
        path.as_str()
    } else {
        return None;
    };
    let rel = rel.strip_suffix(".py")?;
    let rel = rel.strip_suffix("/__init__").unwrap_or(rel);
    Some(rel.replace('/', ".")).filter(|m| !m.is_empty())
}

/// The class of a known method of `module`.
fn class_of(module: &str, method: &str) -> Option<&'static str> {
    KNOWN
        .iter()
        .find(|(m, _, f)| *m == module && *f == method)
        .map(|&(_, c, _)| c)
}

/// How sure a qualified name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Certainty {
    /// From the host profiler's targets or the hand-off's table.
    Known,
    /// Assumed from the caller's module (a bare call taken as a function of the same module).
    Assumed,
}

/// `module.Class.method` of a profiled function (file + name). Newer line_profiler prints the
/// qualified name (`Function: PyExecutor._schedule at line 12`), older ones only the method's.
pub fn profiled_name(file: &str, name: &str) -> Option<(String, Certainty)> {
    let module = module_of(file)?;
    if name.contains('.') {
        return Some((format!("{module}.{name}"), Certainty::Known));
    }
    let class = class_of(&module, name)?;
    Some((format!("{module}.{class}.{name}"), Certainty::Known))
}

/// The method part of a printed function name (`PyExecutor._schedule` → `_schedule`).
pub fn method_of(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// The importable name of a callee seen on a line of a function in `file`.
pub fn callee_name(callee: &str, caller_file: &str, caller: &str) -> Option<(String, Certainty)> {
    let parts: Vec<&str> = callee.split('.').collect();
    let method = *parts.last()?;
    let caller_module = module_of(caller_file);
    match parts.as_slice() {
        // self.model_engine.forward / self.sampler.update_requests
        [.., attr, _] if *attr != "self" => {
            let module = ATTRIBUTES
                .iter()
                .find(|(a, _)| a == attr)
                .map(|&(_, m)| m)?;
            let class = class_of(module, method)?;
            Some((format!("{module}.{class}.{method}"), Certainty::Known))
        }
        // self._prepare_tp_inputs: the caller's class, when the caller is a known method
        ["self", _] => {
            let module = caller_module?;
            if let Some((class, _)) = caller.rsplit_once('.') {
                return Some((format!("{module}.{class}.{method}"), Certainty::Known));
            }
            let class = class_of(&module, caller).or_else(|| class_of(&module, method))?;
            let certainty = if class_of(&module, method).is_some() {
                Certainty::Known
            } else {
                Certainty::Assumed
            };
            Some((format!("{module}.{class}.{method}"), certainty))
        }
        [_] => {
            let module = caller_module?;
            Some((format!("{module}::{method}"), Certainty::Assumed))
        }
        _ => None,
    }
}

/// The functions of a `TLLM_LINE_PROFILER_FUNCTIONS="…"` line (or of a bare comma list).
pub fn functions_of_line(line: &str) -> Vec<String> {
    let value = line
        .trim()
        .strip_prefix("TLLM_LINE_PROFILER_FUNCTIONS=")
        .unwrap_or(line.trim());
    value
        .trim_matches(|c| c == '"' || c == '\'')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The ready line for the given functions, in order, without repeats.
pub fn profiler_line(functions: &[String]) -> Option<String> {
    let mut seen: Vec<&str> = Vec::new();
    for f in functions {
        if !seen.contains(&f.as_str()) {
            seen.push(f);
        }
    }
    (!seen.is_empty()).then(|| format!("TLLM_LINE_PROFILER_FUNCTIONS=\"{}\"", seen.join(",")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_comes_from_the_package_path() {
        assert_eq!(
            module_of("/usr/lib/python3/site-packages/tensorrt_llm/_torch/pyexecutor/sampler.py")
                .as_deref(),
            Some("tensorrt_llm._torch.pyexecutor.sampler")
        );
        assert_eq!(
            module_of("/src/TensorRT-LLM/tensorrt_llm/_torch/pyexecutor/py_executor.py").as_deref(),
            Some("tensorrt_llm._torch.pyexecutor.py_executor")
        );
        assert_eq!(module_of("bench.py"), None);
    }

    #[test]
    fn callees_resolve_by_attribute_self_or_module() {
        let f = "/x/tensorrt_llm/_torch/pyexecutor/py_executor.py";
        assert_eq!(
            callee_name("self.model_engine.forward", f, "_forward_step"),
            Some((
                "tensorrt_llm._torch.pyexecutor.model_engine.PyTorchModelEngine.forward".into(),
                Certainty::Known
            ))
        );
        assert_eq!(
            callee_name("self._merge_batches", f, "_forward_step"),
            Some((
                "tensorrt_llm._torch.pyexecutor.py_executor.PyExecutor._merge_batches".into(),
                Certainty::Assumed
            ))
        );
        assert_eq!(
            callee_name("build_batch", f, "_forward_step"),
            Some((
                "tensorrt_llm._torch.pyexecutor.py_executor::build_batch".into(),
                Certainty::Assumed
            ))
        );
        assert_eq!(callee_name("helper.run", f, "_forward_step"), None);
        assert_eq!(
            callee_name("self._merge", f, "PyExecutor._schedule").map(|(n, _)| n),
            Some("tensorrt_llm._torch.pyexecutor.py_executor.PyExecutor._merge".into()),
            "a qualified caller names its class"
        );
        assert_eq!(
            profiled_name(f, "MyExecutor.step").map(|(n, _)| n),
            Some("tensorrt_llm._torch.pyexecutor.py_executor.MyExecutor.step".into())
        );
    }
}

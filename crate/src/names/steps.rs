//! Step markers: the names that mark one step of a serving or training loop, parsed into
//! [`StepName`]s. One catalogue of built-in markers ([`StepStyle`]: TensorRT-LLM, vLLM, SGLang,
//! PyTorch; where each name comes from is in `docs/step-markers.md`) and the user's own
//! ([`StepSource`]: a regex, or a phase map).

use std::sync::OnceLock;

use regex::Regex;

/// A parsed `[Executor] _forward_step N: C ctx reqs, G gen reqs` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct StepName {
    pub step: u64,
    pub ctx: u64,
    pub gen_reqs: u64,
}

/// A built-in step marker: the NVTX range a framework opens around one step of its loop.
/// `ALL` lists them in the order a name is tried (the first that parses names the step).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum StepStyle {
    /// TensorRT-LLM's `[Executor] _forward_step N: C ctx reqs, G gen reqs`.
    #[default]
    TensorrtLlm,
    /// vLLM v1 under the CUDA profiler wrapper: `execute_context_C(T)_generation_G(T)`, or the
    /// older `execute_new_C_cached_G` (new requests count as context, cached as generation).
    Vllm,
    /// SGLang's scheduler: `scheduler.run_batch`, one per batch run, with no request counts.
    Sglang,
    /// PyTorch's profiler: `ProfilerStep#N`.
    Pytorch,
}

impl StepStyle {
    pub const ALL: [StepStyle; 4] = [
        StepStyle::TensorrtLlm,
        StepStyle::Vllm,
        StepStyle::Sglang,
        StepStyle::Pytorch,
    ];

    /// The name used in JSON, on the command line and in the page's marker field.
    pub fn key(self) -> &'static str {
        match self {
            StepStyle::TensorrtLlm => "tensorrt-llm",
            StepStyle::Vllm => "vllm",
            StepStyle::Sglang => "sglang",
            StepStyle::Pytorch => "pytorch",
        }
    }

    pub fn from_key(key: &str) -> Option<StepStyle> {
        StepStyle::ALL.into_iter().find(|s| s.key() == key)
    }

    /// The range name, as a reader would recognise it.
    pub fn pattern(self) -> &'static str {
        match self {
            StepStyle::TensorrtLlm => "[Executor] _forward_step N: C ctx reqs, G gen reqs",
            StepStyle::Vllm => "execute_context_C(T)_generation_G(T) | execute_new_C_cached_G",
            StepStyle::Sglang => "scheduler.run_batch",
            StepStyle::Pytorch => "ProfilerStep#N",
        }
    }

    /// Host-side scopes the framework opens inside a step (reported as NVTX ops of the step,
    /// like any range; listed so the reader knows what to expect).
    pub fn host_ops(self) -> &'static [&'static str] {
        match self {
            StepStyle::TensorrtLlm => &["_prepare_tp_inputs", "_fetch_new_requests"],
            StepStyle::Vllm => &[
                "gpu_model_runner: preprocess",
                "gpu_model_runner: forward",
                "gpu_model_runner: postprocess",
                "gpu_model_runner: sample",
            ],
            StepStyle::Sglang => &[
                "scheduler.recv_requests",
                "scheduler.process_input_requests",
                "scheduler.get_next_batch_to_run",
                "scheduler.process_batch_result",
            ],
            StepStyle::Pytorch => &[],
        }
    }

    /// The step `name` stands for under this marker.
    pub fn parse(self, name: &str) -> Option<StepName> {
        match self {
            StepStyle::TensorrtLlm => parse_step(name),
            StepStyle::Vllm => parse_vllm(name),
            StepStyle::Sglang => (name == SGLANG_STEP).then_some(StepName {
                step: 0,
                ctx: 0,
                gen_reqs: 1,
            }),
            StepStyle::Pytorch => parse_profiler_step(name),
        }
    }
}

/// The first built-in marker that parses `name`, with its step.
pub fn parse_builtin(name: &str) -> Option<(StepStyle, StepName)> {
    StepStyle::ALL
        .into_iter()
        .find_map(|style| style.parse(name).map(|s| (style, s)))
}

const SGLANG_STEP: &str = "scheduler.run_batch";

/// `execute_context_C(T)_generation_G(T)` (token counts in parentheses) or
/// `execute_new_C_cached_G`, the whole name.
fn parse_vllm(name: &str) -> Option<StepName> {
    let rest = name.strip_prefix("execute_")?;
    let (ctx, gen_reqs) = match rest.strip_prefix("context_") {
        Some(rest) => {
            let (ctx, rest) = ascii_digits(rest)?;
            let rest = tokens(rest)?;
            let (gen_reqs, rest) = ascii_digits(rest.strip_prefix("_generation_")?)?;
            tokens(rest)?.is_empty().then_some((ctx, gen_reqs))?
        }
        None => {
            let (ctx, rest) = ascii_digits(rest.strip_prefix("new_")?)?;
            let (gen_reqs, rest) = ascii_digits(rest.strip_prefix("_cached_")?)?;
            rest.is_empty().then_some((ctx, gen_reqs))?
        }
    };
    Some(StepName {
        step: 0,
        ctx: ctx.parse().ok()?,
        gen_reqs: gen_reqs.parse().ok()?,
    })
}

/// What follows `(T)` (a token count) at the start of `rest`.
fn tokens(rest: &str) -> Option<&str> {
    let (_, rest) = ascii_digits(rest.strip_prefix('(')?)?;
    rest.strip_prefix(')')
}

/// `ProfilerStep#N`, the whole name.
fn parse_profiler_step(name: &str) -> Option<StepName> {
    let (n, rest) = ascii_digits(name.strip_prefix("ProfilerStep#")?)?;
    rest.is_empty().then_some(())?;
    Some(StepName {
        step: n.parse().ok()?,
        ctx: 0,
        gen_reqs: 1,
    })
}

/// A leading run of ASCII digits and what follows.
fn ascii_digits(rest: &str) -> Option<(&str, &str)> {
    let end = rest
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(rest.len());
    (end > 0).then(|| rest.split_at(end))
}

/// Which phase steps belong to when their marker carries no request counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StepsPhase {
    Context,
    #[default]
    Generation,
}

/// A user-defined step marker (another framework's NVTX step ranges): a regex with optional
/// named groups `step`, `ctx` and `gen`. Without `ctx`/`gen`, every step joins `default_phase`.
#[derive(Debug, Clone)]
pub struct StepMarker {
    regex: Regex,
    default_phase: StepsPhase,
}

impl StepMarker {
    /// Compiles the marker; a bad regex is a usage error worth showing verbatim.
    pub fn new(pattern: &str, default_phase: StepsPhase) -> Result<StepMarker, String> {
        let regex =
            Regex::new(pattern).map_err(|e| format!("invalid step regex `{pattern}`: {e}"))?;
        Ok(StepMarker {
            regex,
            default_phase,
        })
    }

    /// Built-in markers by framework name.
    pub fn builtin(name: &str) -> Option<StepMarker> {
        let (pattern, phase) = match name {
            "pytorch" => (r"^ProfilerStep#(?P<step>\d+)$", StepsPhase::Generation),
            _ => return None,
        };
        StepMarker::new(pattern, phase).ok()
    }

    pub fn pattern(&self) -> &str {
        self.regex.as_str()
    }

    pub fn parse(&self, name: &str) -> Option<StepName> {
        let c = self.regex.captures(name)?;
        let group = |g: &str| c.name(g).and_then(|m| m.as_str().parse::<u64>().ok());
        let has_counts = c.name("ctx").is_some() || c.name("gen").is_some();
        let (ctx, gen_reqs) = if has_counts {
            (group("ctx").unwrap_or(0), group("gen").unwrap_or(0))
        } else {
            match self.default_phase {
                StepsPhase::Context => (1, 0),
                StepsPhase::Generation => (0, 1),
            }
        };
        Some(StepName {
            step: group("step").unwrap_or(0),
            ctx,
            gen_reqs,
        })
    }
}

/// Where a trace's steps come from: a built-in marker (chosen by the user or found in the
/// trace), a user's regex, or a user's phase map. (Steps inferred from the kernel stream will
/// join as another source.)
#[derive(Debug, Clone)]
pub enum StepSource {
    Builtin(StepStyle),
    Regex(StepMarker),
    PhaseMap(super::phase_map::PhaseMap),
}

/// Equal when they read the same names the same way (their patterns and phases, as `Debug`
/// prints them: a compiled regex has no other equality).
impl PartialEq for StepSource {
    fn eq(&self, other: &StepSource) -> bool {
        format!("{self:?}") == format!("{other:?}")
    }
}

impl Eq for StepSource {}

impl StepSource {
    /// The step `name` stands for under this source.
    pub fn parse(&self, name: &str) -> Option<StepName> {
        match self {
            StepSource::Builtin(style) => style.parse(name),
            StepSource::Regex(m) => m.parse(name),
            StepSource::PhaseMap(m) => m.parse(name),
        }
    }

    /// The built-in marker, if this is one.
    pub fn style(&self) -> Option<StepStyle> {
        match self {
            StepSource::Builtin(style) => Some(*style),
            _ => None,
        }
    }

    /// What the reports say of the source; `auto`: found in the trace rather than chosen.
    pub fn report(&self, auto: bool) -> StepMarkerReport {
        let (source, marker, pattern) = match self {
            StepSource::Builtin(style) => {
                ("builtin", Some(style.key()), style.pattern().to_string())
            }
            StepSource::Regex(m) => ("regex", None, m.pattern().to_string()),
            StepSource::PhaseMap(m) => ("phase-map", None, m.names().join(", ")),
        };
        StepMarkerReport {
            source: source.into(),
            marker: marker.map(str::to_string),
            pattern,
            auto,
        }
    }
}

impl StepMarkerReport {
    /// The marker in one phrase: which, how chosen, and the names it reads.
    pub fn describe(&self) -> String {
        let kind = match (&self.marker, self.source.as_str()) {
            (Some(key), _) => format!("built-in marker {key}"),
            (None, "regex") => "regex".to_string(),
            (None, "phase-map") => "phase map".to_string(),
            (None, other) => other.to_string(),
        };
        let how = if self.auto {
            "found in the trace"
        } else {
            "given"
        };
        format!("{kind} ({how}): {}", self.pattern)
    }
}

/// The page's marker field: empty or `auto` (the first built-in marker met), a built-in key
/// (`vllm` …), a phase map (`{"phase": ["pattern", …]}`), or else a regex (steps without counts
/// join the generation phase unless the regex names `ctx`/`gen` groups).
pub fn parse_marker_spec(spec: &str) -> Result<Option<StepSource>, String> {
    let spec = spec.trim();
    if spec.is_empty() || spec == "auto" {
        return Ok(None);
    }
    if let Some(style) = StepStyle::from_key(spec) {
        return Ok(Some(StepSource::Builtin(style)));
    }
    if spec.starts_with('{') {
        return super::phase_map::PhaseMap::from_json(spec).map(|m| Some(StepSource::PhaseMap(m)));
    }
    StepMarker::new(spec, StepsPhase::Generation).map(|m| Some(StepSource::Regex(m)))
}

/// The step marker a report used (`step_marker` in the JSON of detect, analyze and drill).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StepMarkerReport {
    /// `builtin`, `regex` or `phase-map`.
    pub source: String,
    /// The built-in marker's key (`tensorrt-llm`, `vllm`, `sglang`, `pytorch`).
    pub marker: Option<String>,
    /// The range name it reads (a regex, or the phase map's phases).
    pub pattern: String,
    /// Found in the trace (no marker was given).
    pub auto: bool,
}

/// The TensorRT-LLM forward-step marker, `_forward_step N: C ctx reqs, G gen reqs`, searched
/// anywhere in the name like the reference's `re.search` of
/// `_forward_step\s+(\d+):\s+(\d+)\s+ctx reqs,\s+(\d+)\s+gen reqs`.
const STEP_MARKER: &str = "_forward_step";

/// Parses a forward-step range name. Hand-written rather than a regex: it runs over every
/// distinct string of a trace (one per step on TensorRT-LLM traces), where capture groups cost
/// three regex passes per name; a test checks it against the regex.
pub fn parse_step(name: &str) -> Option<StepName> {
    // The leftmost occurrence that matches wins; numbers that do not fit give no step.
    static FINDER: OnceLock<memchr::memmem::Finder<'static>> = OnceLock::new();
    let finder = FINDER.get_or_init(|| memchr::memmem::Finder::new(STEP_MARKER));
    // The marker is ASCII, so every match is at a character boundary.
    finder
        .find_iter(name.as_bytes())
        .find_map(|at| step_fields(name.get(at + STEP_MARKER.len()..)?))
        .and_then(|[step, ctx, gen_reqs]| {
            Some(StepName {
                step: step.parse().ok()?,
                ctx: ctx.parse().ok()?,
                gen_reqs: gen_reqs.parse().ok()?,
            })
        })
}

/// The three digit runs of `\s+N:\s+C\s+ctx reqs,\s+G\s+gen reqs` at the start of `rest`.
fn step_fields(rest: &str) -> Option<[&str; 3]> {
    let rest = spaces(rest)?;
    let (step, rest) = digits(rest)?;
    let rest = spaces(rest.strip_prefix(':')?)?;
    let (ctx, rest) = digits(rest)?;
    let rest = spaces(spaces(rest)?.strip_prefix("ctx reqs,")?)?;
    let (gen_reqs, rest) = digits(rest)?;
    spaces(rest)?
        .starts_with("gen reqs")
        .then_some([step, ctx, gen_reqs])
}

/// `rest` after one or more whitespace characters (`\s+`).
fn spaces(rest: &str) -> Option<&str> {
    let trimmed = rest.trim_start_matches(char::is_whitespace);
    (trimmed.len() < rest.len()).then_some(trimmed)
}

/// A leading run of digits (`\d+`, Unicode decimal digits as in the regex) and what follows.
fn digits(rest: &str) -> Option<(&str, &str)> {
    let end = rest
        .char_indices()
        .find(|&(_, c)| !is_decimal_digit(c))
        .map_or(rest.len(), |(i, _)| i);
    (end > 0).then(|| rest.split_at(end))
}

/// Unicode `Nd` as the regex's `\d` sees it; non-ASCII digits then fail to parse, as before.
fn is_decimal_digit(c: char) -> bool {
    c.is_ascii_digit()
        || (!c.is_ascii() && decimal_digit_regex().is_match(c.encode_utf8(&mut [0; 4])))
}

fn decimal_digit_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^\d$").unwrap_or_else(|e| unreachable!("constant regex: {e}")))
}

/// The `trtllm-skill` profile's forward-step prefilter.
pub const EXECUTOR_STEP: &str = "%[Executor] _forward_step%";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_markers_take_counts_or_a_default_phase() {
        let torch = StepMarker::builtin("pytorch").expect("builtin");
        assert_eq!(
            torch.parse("ProfilerStep#12"),
            Some(StepName {
                step: 12,
                ctx: 0,
                gen_reqs: 1
            })
        );
        assert_eq!(torch.parse("ProfilerStep#12 extra"), None);
        let ctx = StepMarker::new(r"prefill (?P<step>\d+)", StepsPhase::Context).expect("regex");
        assert_eq!(
            ctx.parse("prefill 3"),
            Some(StepName {
                step: 3,
                ctx: 1,
                gen_reqs: 0
            })
        );
        let counts = StepMarker::new(
            r"step (?P<step>\d+) c=(?P<ctx>\d+) g=(?P<gen>\d+)",
            StepsPhase::Generation,
        )
        .expect("regex");
        assert_eq!(
            counts.parse("step 9 c=0 g=4"),
            Some(StepName {
                step: 9,
                ctx: 0,
                gen_reqs: 4
            })
        );
        assert!(StepMarker::new("(", StepsPhase::Generation).is_err());
    }

    #[test]
    fn builtin_markers_parse_their_own_names_only() {
        let step = |step, ctx, gen_reqs| StepName {
            step,
            ctx,
            gen_reqs,
        };
        let cases = [
            (
                "execute_context_2(300)_generation_14(14)",
                Some((StepStyle::Vllm, step(0, 2, 14))),
            ),
            (
                "execute_new_1_cached_7",
                Some((StepStyle::Vllm, step(0, 1, 7))),
            ),
            ("execute_context_2(300)_generation_14", None),
            ("execute_new_1_cached_7 x", None),
            (
                "scheduler.run_batch",
                Some((StepStyle::Sglang, step(0, 0, 1))),
            ),
            ("scheduler.recv_requests", None),
            (
                "ProfilerStep#12",
                Some((StepStyle::Pytorch, step(12, 0, 1))),
            ),
            ("ProfilerStep#", None),
            (
                "[Executor] _forward_step 3: 1 ctx reqs, 2 gen reqs",
                Some((StepStyle::TensorrtLlm, step(3, 1, 2))),
            ),
            ("gpu_model_runner: forward", None),
        ];
        for (name, want) in cases {
            assert_eq!(parse_builtin(name), want, "{name}");
        }
        for style in StepStyle::ALL {
            assert_eq!(StepStyle::from_key(style.key()), Some(style));
        }
    }

    #[test]
    fn the_marker_field_reads_builtins_maps_and_regexes() {
        assert_eq!(parse_marker_spec(" auto "), Ok(None));
        assert_eq!(parse_marker_spec(""), Ok(None));
        assert_eq!(
            parse_marker_spec("sglang"),
            Ok(Some(StepSource::Builtin(StepStyle::Sglang)))
        );
        let map = parse_marker_spec(r#"{"decode": ["run_batch"]}"#).expect("map");
        assert_eq!(
            map.map(|m| m.report(false).source),
            Some("phase-map".into())
        );
        let re = parse_marker_spec(r"^step (?P<step>\d+)$").expect("regex");
        assert_eq!(re.map(|m| m.report(false).source), Some("regex".into()));
        assert!(parse_marker_spec("(").is_err());
    }

    #[test]
    fn parses_forward_steps_anywhere_in_the_name() {
        assert_eq!(
            parse_step("[Executor] _forward_step 12: 3 ctx reqs, 61 gen reqs"),
            Some(StepName {
                step: 12,
                ctx: 3,
                gen_reqs: 61
            })
        );
        assert_eq!(
            parse_step("x _forward_step  7:  0  ctx reqs,  8 gen reqs tail"),
            Some(StepName {
                step: 7,
                ctx: 0,
                gen_reqs: 8
            })
        );
        assert_eq!(parse_step("[Executor] _forward_step 12"), None);
    }

    /// The hand parser against the reference's regex (`re.search`, then `int` of each group).
    #[test]
    fn step_parser_agrees_with_the_reference_regex() {
        let re = Regex::new(r"_forward_step\s+(\d+):\s+(\d+)\s+ctx reqs,\s+(\d+)\s+gen reqs")
            .expect("regex");
        let by_regex = |name: &str| {
            let c = re.captures(name)?;
            let num = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u64>().ok());
            Some(StepName {
                step: num(1)?,
                ctx: num(2)?,
                gen_reqs: num(3)?,
            })
        };
        let parts = [
            "_forward_step",
            " ",
            "\t",
            "\u{3000}",
            "12",
            "0",
            "٣",
            ":",
            " ctx reqs,",
            "ctx reqs,",
            " gen reqs",
            "gen reqs",
            "x",
            "99999999999999999999999",
            "_forward_step 1: 2 ctx reqs, 3 gen reqs",
        ];
        let mut names = vec![String::new()];
        for _ in 0..4 {
            let grown: Vec<String> = names
                .iter()
                .flat_map(|n| parts.iter().map(move |p| format!("{n}{p}")))
                .collect();
            names.extend(grown);
        }
        names.push("[Executor] _forward_step 1: x _forward_step 2: 1 ctx reqs, 3 gen reqs".into());
        names.push("_forward_step  7 :  0 ctx reqs, 1 gen reqs".into());
        names.push("_forward_step 7:0 ctx reqs, 1 gen reqs".into());
        names.push("_forward_step 7: 0 ctx reqs,1 gen reqs".into());
        names.push("_forward_step 7: 0 ctx reqs, 1 gen reqsX".into());
        let mut steps = 0;
        for name in &names {
            let want = by_regex(name);
            steps += usize::from(want.is_some());
            assert_eq!(parse_step(name), want, "{name:?}");
        }
        assert!(steps > 10, "the corpus holds step names ({steps})");
    }
}

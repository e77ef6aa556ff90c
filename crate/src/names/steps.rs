//! Forward-step markers: the names that mark one step of a serving loop (TensorRT-LLM's
//! `[Executor] _forward_step N: C ctx reqs, G gen reqs`, or a user's regex), parsed into
//! [`StepName`]s.

use std::sync::OnceLock;

use regex::Regex;

use super::launch::{LaunchApis, is_launch_api};
use super::patterns::matches_other_rules;
use crate::sqlike::{Like, contains_folded};

/// A parsed `[Executor] _forward_step N: C ctx reqs, G gen reqs` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StepName {
    pub step: u64,
    pub ctx: u64,
    pub gen_reqs: u64,
}

/// What the page keeps of a forward-step name it does not hold (a long trace names every step
/// differently): the parsed step, and whether the name passed the `trtllm-skill` profile's
/// prefilter (`LIKE '%[Executor] _forward_step%'`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StepText {
    pub name: StepName,
    pub executor: bool,
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

/// What the page keeps of a forward-step name, not the name ([`StepText`]): a long trace names
/// every step differently. Only for names no other rule matches (launch API, NCCL, host prep,
/// under either profile's matching), so that a name not held is one only the step parsers read.
pub fn step_text(name: &str) -> Option<StepText> {
    let step = parse_step(name)?;
    // Every other rule's text holds `nccl` or `prepare` (any case, as `LIKE` compares).
    let bytes = name.as_bytes();
    let may_match = contains_folded(bytes, b"nccl") || contains_folded(bytes, b"prepare");
    if (may_match && matches_other_rules(name))
        || is_launch_api(name, LaunchApis::AllVersioned)
        || is_launch_api(name, LaunchApis::ExactCudaLaunchKernel)
    {
        return None;
    }
    Some(StepText {
        name: step,
        executor: executor_prefilter().matches(name),
    })
}

/// A label for a forward step whose name is not held: TensorRT-LLM's own form,
/// `[Executor] _forward_step N: C ctx reqs, G gen reqs` (the prefix when the name passed the
/// `trtllm-skill` prefilter), which gives back the name itself on every trace it writes.
pub fn step_label(s: &StepText) -> String {
    let prefix = if s.executor { "[Executor] " } else { "" };
    let n = &s.name;
    format!(
        "{prefix}_forward_step {}: {} ctx reqs, {} gen reqs",
        n.step, n.ctx, n.gen_reqs
    )
}

pub(crate) fn executor_prefilter() -> &'static Like {
    static LIKE: OnceLock<Like> = OnceLock::new();
    LIKE.get_or_init(|| Like::new(EXECUTOR_STEP))
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

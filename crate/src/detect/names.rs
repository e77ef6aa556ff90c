//! Name classification, done once per distinct string rather than once per event.
//!
//! Millions of kernels and API calls share a few hundred names, so every pattern (launch API,
//! NCCL, host prep, forward step) is evaluated over the string table and looked up by
//! [`NameId`] in the hot loops.

use std::sync::OnceLock;

use regex::Regex;

use super::config::{LaunchApis, NameMatch, Switches};
use crate::model::{NameFlags, NameId, NvtxRow, StepText, Strings, flag};
use crate::sqlike::{Like, contains_folded};

/// Host-prep NVTX name patterns, most specific first (reference `detect_host_overhead.py`).
pub const PREP_PATTERNS: [&str; 3] = ["_prepare_tp_inputs", "_prepare_inputs", "prepare_inputs"];

pub use crate::model::StepName;

fn launch_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^(cudaLaunchKernel|cudaLaunchKernelExC|cuLaunchKernel|cuLaunchKernelEx|cudaLaunchCooperativeKernel|cuLaunchCooperativeKernel|cudaGraphLaunch|cuGraphLaunch)(_ptsz|_ptds)?(_v\d+)?$",
        )
        .unwrap_or_else(|e| unreachable!("constant regex: {e}"))
    })
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

/// The forward step a name not held stands for under `sw`: every profile's parser reads it but
/// `trtllm-skill`'s, which takes only names its prefilter passes. A custom step marker needs
/// the names themselves (the page's streamed open, which holds none, takes no marker).
pub fn unheld_step(text: &StepText, sw: &Switches) -> Option<StepName> {
    (sw.name_match != NameMatch::SqliteLike || text.executor).then_some(text.name)
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

/// Whether `name` is an NCCL kernel's: `LIKE '%nccl%'` (`like`), else a case-insensitive
/// substring.
fn is_nccl_name(name: &str, like: bool) -> bool {
    static LIKE: OnceLock<Like> = OnceLock::new();
    match like {
        true => LIKE.get_or_init(|| Like::new("%nccl%")).matches(name),
        false => name.to_ascii_lowercase().contains("nccl"),
    }
}

/// Whether `name` matches host-prep pattern `p` (of [`PREP_PATTERNS`]): `LIKE '%p%'` (`like`),
/// else a substring.
fn is_prep_name(name: &str, p: usize, like: bool) -> bool {
    static LIKES: OnceLock<Vec<Like>> = OnceLock::new();
    let likes = || {
        PREP_PATTERNS
            .map(|pat| Like::new(&format!("%{pat}%")))
            .to_vec()
    };
    match like {
        true => LIKES
            .get_or_init(likes)
            .get(p)
            .is_some_and(|l| l.matches(name)),
        false => PREP_PATTERNS.get(p).is_some_and(|pat| name.contains(pat)),
    }
}

/// Whether an NCCL or host-prep rule of either profile's matching takes `name`.
fn matches_other_rules(name: &str) -> bool {
    [true, false].into_iter().any(|like| {
        is_nccl_name(name, like) || (0..PREP_PATTERNS.len()).any(|p| is_prep_name(name, p, like))
    })
}

fn executor_prefilter() -> &'static Like {
    static LIKE: OnceLock<Like> = OnceLock::new();
    LIKE.get_or_init(|| Like::new(EXECUTOR_STEP))
}

/// The `trtllm-skill` profile's forward-step prefilter.
const EXECUTOR_STEP: &str = "%[Executor] _forward_step%";

/// Whether a range of this name may be a forward step or a host-prep range under some
/// profile: SQLite `LIKE` (case-insensitive, `_` a wildcard) or a substring test. Broader than
/// every rule, never narrower, so a load keeping only such ranges loses no window.
pub fn may_define_windows(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    (lower.contains("forward") && lower.contains("step"))
        || (lower.contains("prepare") && lower.contains("inputs"))
}

/// Whether an API name launches kernels under the profile's rules.
pub fn is_launch_api(name: &str, apis: LaunchApis) -> bool {
    match apis {
        LaunchApis::ExactCudaLaunchKernel => name == "cudaLaunchKernel",
        // Every launch API starts with `cu`: most names skip the regex.
        LaunchApis::AllVersioned => name.starts_with("cu") && launch_regex().is_match(name),
    }
}

/// Per-name lookup tables for one profile.
pub struct NameTables {
    pub launch: NameFlags,
    pub nccl: NameFlags,
    /// For each prep pattern, which names match it.
    pub prep: [NameFlags; 3],
    /// Names of ranges that may define windows under some profile ([`may_define_windows`]).
    pub windows: NameFlags,
}

/// Forward-step names by [`NameId`]: a table built by the caller (the reference's own rules), or
/// [`StepNames::parser`], which parses on each lookup — a TensorRT-LLM trace has a distinct name
/// per step, so a table as long as the string table would cost more than it saves.
pub struct StepNames(pub Vec<Option<StepName>>);

impl StepNames {
    /// The profile's forward-step name parser ([`StepParser`]) over `strings`.
    pub fn parser<'s>(
        strings: &'s Strings,
        sw: &Switches,
        marker: Option<&StepMarker>,
    ) -> impl Fn(NameId) -> Option<StepName> + 's {
        let parser = StepParser::new(sw, marker);
        move |id| parser.parse_id(strings, id)
    }

    pub fn get(&self, id: NameId) -> Option<StepName> {
        self.0.get(id as usize).copied().flatten()
    }
}

/// A profile's forward-step name parser: `marker`'s, else the TensorRT-LLM marker (under
/// `LIKE` matching, only names `LIKE '%[Executor] _forward_step%'`).
pub struct StepParser {
    prefilter: Option<Like>,
    marker: Option<StepMarker>,
}

impl StepParser {
    pub fn new(sw: &Switches, marker: Option<&StepMarker>) -> StepParser {
        StepParser {
            prefilter: (sw.name_match == NameMatch::SqliteLike).then(|| Like::new(EXECUTOR_STEP)),
            marker: marker.cloned(),
        }
    }

    /// The step string `id` names (none for a name not held: see [`unheld_step`]).
    pub fn parse_id(&self, strings: &Strings, id: NameId) -> Option<StepName> {
        self.parse(strings.get(id))
    }

    pub fn parse(&self, name: &str) -> Option<StepName> {
        if self.prefilter.as_ref().is_some_and(|p| !p.matches(name)) {
            return None;
        }
        match &self.marker {
            Some(m) => m.parse(name),
            None => parse_step(name),
        }
    }
}

impl NameTables {
    pub fn build(strings: &Strings, sw: &Switches) -> NameTables {
        let mut tables = NameTables {
            launch: NameFlags::default(),
            nccl: NameFlags::default(),
            prep: Default::default(),
            windows: NameFlags::default(),
        };
        tables.extend(strings, sw);
        tables
    }

    /// Classifies the strings interned since the tables were built (inline NVTX texts met
    /// while the ranges stream).
    pub fn extend(&mut self, strings: &Strings, sw: &Switches) {
        if self.launch.len() == strings.len() {
            return;
        }
        let like = sw.name_match == NameMatch::SqliteLike;
        strings.classify_more(&mut self.launch, |s| is_launch_api(s, sw.launch_apis));
        strings.classify_more(&mut self.nccl, |s| is_nccl_name(s, like));
        for (p, table) in self.prep.iter_mut().enumerate() {
            strings.classify_more(table, |s| is_prep_name(s, p, like));
        }
        strings.classify_more(&mut self.windows, may_define_windows);
    }

    /// Whether an NVTX range may be a forward step or a host-prep range under some profile
    /// (a name not held is a step's).
    pub fn may_define_windows(&self, row: &NvtxRow) -> bool {
        row.has_unheld_name()
            || flag(&self.windows, row.name)
            || flag(&self.windows, row.text_id_name)
    }

    pub fn is_launch(&self, id: NameId) -> bool {
        flag(&self.launch, id)
    }

    pub fn is_nccl(&self, id: NameId) -> bool {
        flag(&self.nccl, id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_apis_by_profile() {
        for name in [
            "cudaLaunchKernel",
            "cudaLaunchKernel_v7000",
            "cuLaunchKernelEx",
            "cudaGraphLaunch_v10000",
            "cudaLaunchKernel_ptsz_v7000",
        ] {
            assert!(is_launch_api(name, LaunchApis::AllVersioned), "{name}");
        }
        for name in [
            "cudaLaunchHostFunc_v10000",
            "cudaMemcpyAsync_v3020",
            "cudaLaunchKernelFoo",
        ] {
            assert!(!is_launch_api(name, LaunchApis::AllVersioned), "{name}");
        }
        assert!(is_launch_api(
            "cudaLaunchKernel",
            LaunchApis::ExactCudaLaunchKernel
        ));
        assert!(!is_launch_api(
            "cudaLaunchKernel_v7000",
            LaunchApis::ExactCudaLaunchKernel
        ));
    }

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

    /// A forward-step name not held reads as the name under both profiles' parsers, and the
    /// name tables classify the table without it as they do with it; names another rule
    /// matches are held.
    #[test]
    fn step_names_not_held_read_as_their_names() {
        use crate::detect::Profile;
        let names = [
            "[Executor] _forward_step 977: 8 ctx reqs, 56 gen reqs",
            "_forward_step 3: 0 ctx reqs, 1 gen reqs",
            "x _forward_step  7:  0  ctx reqs,  8 gen reqs tail",
            "[executor] _forward_step 4: 1 ctx reqs, 2 gen reqs",
            "[Executor] _forward_step 5: 1 ctx reqs, 2 gen reqs NCCL",
            "[Executor] _forward_step 6: 1 ctx reqs, 2 gen reqs _prepare_inputs",
            "[Executor] _forward_step 7: 1 ctx reqs, 2 gen reqs xprepareXinputs",
            "[Executor] _forward_step 99999999999999999999999: 1 ctx reqs, 2 gen reqs",
            "[Executor] _forward_step 12",
            "cudaLaunchKernel",
            "ncclKernel_AllReduce",
            "_prepare_tp_inputs",
        ];
        let kept = Strings::from_rows(
            names
                .iter()
                .enumerate()
                .map(|(i, n)| (i as i64, n.to_string()))
                .collect(),
        );
        let mut unheld = Strings::without_step_names();
        for (i, n) in names.iter().enumerate() {
            match step_text(n) {
                Some(_) => unheld.push_row_unheld(i as i64),
                None => unheld.push_row(i as i64, n),
            }
        }
        unheld.finish_rows();
        let not_held: Vec<bool> = (0..names.len() as NameId)
            .map(|id| unheld.is_unheld(id))
            .collect();
        assert_eq!(
            not_held,
            [
                true, true, true, true, false, false, false, false, false, false, false, false
            ],
            "unheld only where no other rule matches"
        );
        for (id, name) in names.iter().enumerate() {
            let expect = if not_held[id] { "" } else { *name };
            assert_eq!(
                unheld.get(id as NameId),
                expect,
                "held values keep their ids"
            );
        }
        for profile in [Profile::Standard, Profile::TrtllmSkill] {
            let sw = profile.switches();
            let parser = StepParser::new(&sw, None);
            for name in names {
                if let Some(text) = step_text(name) {
                    assert_eq!(
                        unheld_step(&text, &sw),
                        parser.parse(name),
                        "{profile:?}: {name}"
                    );
                }
            }
            let (a, b) = (
                NameTables::build(&kept, &sw),
                NameTables::build(&unheld, &sw),
            );
            assert_eq!(a.launch, b.launch, "{profile:?}");
            assert_eq!(a.nccl, b.nccl, "{profile:?}");
            assert_eq!(a.prep, b.prep, "{profile:?}");
        }
        // The `trtllm-skill` prefilter (`LIKE`, any case) survives: `[executor]` passes it,
        // a name without the prefix does not.
        let skill = Profile::TrtllmSkill.switches();
        let text = |i: usize| step_text(names[i]).expect("a step");
        assert_eq!(unheld_step(&text(1), &skill), None);
        assert!(unheld_step(&text(3), &skill).is_some());
        // Labels without the name: TensorRT-LLM's form comes back as it was.
        for i in [0, 1] {
            assert_eq!(step_label(&text(i)), names[i]);
        }
        // Interned texts come after every row, held or not.
        let id = unheld.intern("_update_requests");
        assert_eq!(id as usize, names.len());
        assert_eq!(unheld.get(id), "_update_requests");
        assert_eq!(unheld.find_text("_update_requests"), Some(id));
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

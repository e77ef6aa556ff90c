//! nsys-llm-explainer's phase map as a step marker: `{"phase": ["pattern", …], …}` read from
//! JSON. A pattern with the `re:` prefix is a regex searched in the range name, any other a
//! case-insensitive substring; phases are tried in the file's order and the first match wins;
//! a range no pattern matches is "unmapped" (not a step).

use std::fmt;

use regex::Regex;
use serde::de::{Deserializer, MapAccess, Visitor};

use super::steps::{StepName, StepsPhase};

/// One pattern of a phase.
#[derive(Debug, Clone)]
enum NamePattern {
    Regex(Regex),
    /// Lower-cased.
    Substring(String),
}

impl NamePattern {
    fn new(text: &str) -> Result<NamePattern, String> {
        match text.strip_prefix("re:") {
            Some(re) => Regex::new(re)
                .map(NamePattern::Regex)
                .map_err(|e| format!("invalid regex `{re}` in the phase map: {e}")),
            None if text.is_empty() => {
                Err("an empty pattern in the phase map matches every range: remove it".into())
            }
            None => Ok(NamePattern::Substring(text.to_lowercase())),
        }
    }

    fn matches(&self, name: &str, lower: &mut Option<String>) -> bool {
        match self {
            NamePattern::Regex(re) => re.is_match(name),
            NamePattern::Substring(s) => lower
                .get_or_insert_with(|| name.to_lowercase())
                .contains(s.as_str()),
        }
    }
}

/// A phase of the map: its name, the nsys-lens phase its steps join, its patterns.
#[derive(Debug, Clone)]
struct MappedPhase {
    name: String,
    joins: StepsPhase,
    patterns: Vec<NamePattern>,
}

/// A user's phase map (see the module doc).
#[derive(Debug, Clone)]
pub struct PhaseMap {
    phases: Vec<MappedPhase>,
}

impl PhaseMap {
    /// Reads `{"phase": ["pattern", …]}`; a bad document or pattern is a usage error worth showing.
    pub fn from_json(text: &str) -> Result<PhaseMap, String> {
        let mut de = serde_json::Deserializer::from_str(text);
        let entries = de
            .deserialize_map(OrderedEntries)
            .and_then(|e| de.end().map(|()| e))
            .map_err(|e| {
                format!("the phase map must be a JSON object {{\"phase\": [\"pattern\", …]}}: {e}")
            })?;
        if entries.is_empty() {
            return Err("the phase map names no phase".into());
        }
        let phases = entries
            .into_iter()
            .map(|(name, patterns)| {
                Ok(MappedPhase {
                    joins: joins(&name),
                    patterns: patterns
                        .iter()
                        .map(|p| NamePattern::new(p))
                        .collect::<Result<_, String>>()?,
                    name,
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(PhaseMap { phases })
    }

    /// The index of the first phase one of whose patterns matches `name`.
    pub fn phase_of(&self, name: &str) -> Option<usize> {
        let mut lower = None;
        self.phases
            .iter()
            .position(|p| p.patterns.iter().any(|pat| pat.matches(name, &mut lower)))
    }

    /// The phases' names, in the file's order.
    pub fn names(&self) -> Vec<String> {
        self.phases.iter().map(|p| p.name.clone()).collect()
    }

    /// `name` as a step of its phase: one context or one generation request, by the phase's name.
    pub fn parse(&self, name: &str) -> Option<StepName> {
        let phase = self.phases.get(self.phase_of(name)?)?;
        let (ctx, gen_reqs) = match phase.joins {
            StepsPhase::Context => (1, 0),
            StepsPhase::Generation => (0, 1),
        };
        Some(StepName {
            step: 0,
            ctx,
            gen_reqs,
        })
    }
}

/// A phase named like a prefill (`prefill`, `context`, `ctx`, any case) holds context steps;
/// every other phase generation steps.
fn joins(phase: &str) -> StepsPhase {
    let lower = phase.to_lowercase();
    if ["prefill", "context", "ctx"]
        .iter()
        .any(|k| lower.contains(k))
    {
        StepsPhase::Context
    } else {
        StepsPhase::Generation
    }
}

/// The object's entries in the file's order (first match wins, so order matters).
struct OrderedEntries;

impl<'de> Visitor<'de> for OrderedEntries {
    type Value = Vec<(String, Vec<String>)>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of phase names to lists of patterns")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(entry) = map.next_entry::<String, Vec<String>>()? {
            out.push(entry);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_matching_phase_wins_and_the_rest_is_unmapped() {
        let map = PhaseMap::from_json(
            r#"{"decode": ["re:^execute_context_0\\("], "prefill": ["EXECUTE_CONTEXT"], "sample": ["sample"]}"#,
        )
        .expect("map");
        assert_eq!(map.names(), ["decode", "prefill", "sample"]);
        assert_eq!(
            map.phase_of("execute_context_0(0)_generation_4(4)"),
            Some(0)
        );
        assert_eq!(
            map.phase_of("execute_context_2(90)_generation_4(4)"),
            Some(1)
        );
        assert_eq!(map.phase_of("gpu_model_runner: Sample"), Some(2));
        assert_eq!(map.phase_of("gpu_model_runner: forward"), None);
        let prefill = map
            .parse("execute_context_2(90)_generation_4(4)")
            .expect("step");
        assert_eq!((prefill.ctx, prefill.gen_reqs), (1, 0));
        let decode = map
            .parse("execute_context_0(0)_generation_4(4)")
            .expect("step");
        assert_eq!((decode.ctx, decode.gen_reqs), (0, 1));
    }

    #[test]
    fn bad_maps_say_what_is_wrong() {
        assert!(PhaseMap::from_json("[]").is_err());
        assert!(PhaseMap::from_json("{}").is_err());
        assert!(PhaseMap::from_json(r#"{"a": "x"}"#).is_err());
        let bad = PhaseMap::from_json(r#"{"a": ["re:("]}"#).expect_err("bad regex");
        assert!(bad.contains("re:") || bad.contains("regex"), "{bad}");
    }
}

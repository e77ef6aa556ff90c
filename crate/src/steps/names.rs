//! Step names under a profile: which names a profile's parser reads as steps — a step source
//! given by the user ([`StepSource`]), else the first built-in marker the trace's ranges show
//! (in table order, so every reader of the trace chooses the same), with `trtllm-skill` reading
//! TensorRT-LLM's marker only, through its `LIKE` prefilter.

use std::cell::{Cell, RefCell};

use super::StepLookup;
use crate::model::{NameId, Strings};
use crate::names::patterns::NameMatch;
use crate::names::steps::{
    EXECUTOR_STEP, StepMarkerReport, StepName, StepSource, StepStyle, parse_builtin,
};
use crate::profile::Switches;
use crate::sqlike::Like;

/// Forward-step names by [`NameId`]: a table built by the caller (the reference's own rules), or
/// [`StepNames::parser`], which parses on each lookup — a TensorRT-LLM trace has a distinct name
/// per step, so a table as long as the string table would cost more than it saves.
pub struct StepNames(pub Vec<Option<StepName>>);

impl StepNames {
    /// The profile's step name parser ([`StepParser`]) over `strings`: `source`'s, else the first
    /// built-in marker met.
    pub fn parser<'s>(
        strings: &'s Strings,
        sw: &Switches,
        source: Option<&StepSource>,
    ) -> ParsedNames<'s> {
        ParsedNames {
            parser: StepParser::new(sw, source),
            strings,
        }
    }

    pub fn get(&self, id: NameId) -> Option<StepName> {
        self.0.get(id as usize).copied().flatten()
    }
}

/// A [`StepParser`] over a string table: the [`StepLookup`] of a loaded trace.
pub struct ParsedNames<'s> {
    pub parser: StepParser,
    strings: &'s Strings,
}

impl StepLookup for ParsedNames<'_> {
    fn step_name(&self, id: NameId) -> Option<StepName> {
        self.parser.parse_id(self.strings, id)
    }
}

/// A parser over the string table as a scan has it so far: a fold handed the ranges one at a
/// time (the page's host side) holds the parser, not the strings.
impl StepLookup for (&StepParser, &Strings) {
    fn step_name(&self, id: NameId) -> Option<StepName> {
        self.0.parse_id(self.1, id)
    }
}

/// A profile's step name parser: the user's source, else the built-in markers, the first one met
/// chosen for the rest of the trace (under `LIKE` matching, TensorRT-LLM's only, and only names
/// `LIKE '%[Executor] _forward_step%'`).
pub struct StepParser {
    prefilter: Option<Like>,
    source: Option<StepSource>,
    /// The built-in marker met first, when no source was given.
    chosen: Cell<Option<StepStyle>>,
    /// One bit per name id that parsed as no step: it never will (the chosen marker does not
    /// change once set), and most ranges repeat a handful of names that are not steps.
    not_steps: RefCell<Vec<u64>>,
}

impl StepParser {
    pub fn new(sw: &Switches, source: Option<&StepSource>) -> StepParser {
        let skill = sw.name_match == NameMatch::SqliteLike;
        let source = if skill {
            Some(StepSource::Builtin(StepStyle::TensorrtLlm))
        } else {
            source.cloned()
        };
        StepParser {
            prefilter: skill.then(|| Like::new(EXECUTOR_STEP)),
            source,
            chosen: Cell::new(None),
            not_steps: RefCell::new(Vec::new()),
        }
    }

    /// The step string `id` names.
    pub fn parse_id(&self, strings: &Strings, id: NameId) -> Option<StepName> {
        let (word, bit) = (id as usize / 64, 1u64 << (id % 64));
        if self
            .not_steps
            .borrow()
            .get(word)
            .is_some_and(|w| w & bit != 0)
        {
            return None;
        }
        let step = self.parse(strings.get(id));
        // Only the table's ids are remembered (`NO_NAME` would take half a GiB of bits).
        if step.is_none() && (id as usize) < strings.len() {
            let mut seen = self.not_steps.borrow_mut();
            if seen.len() <= word {
                seen.resize(word + 1, 0);
            }
            seen[word] |= bit;
        }
        step
    }

    pub fn parse(&self, name: &str) -> Option<StepName> {
        if self.prefilter.as_ref().is_some_and(|p| !p.matches(name)) {
            return None;
        }
        match &self.source {
            Some(source) => source.parse(name),
            // Once chosen, only its marker is tried: no name parses under two markers (each
            // fixes the whole name, or TensorRT-LLM's `_forward_step` no other can hold), so
            // the first that parses is the chosen one or none is.
            None => match self.chosen.get() {
                Some(style) => style.parse(name),
                None => {
                    let (style, step) = parse_builtin(name)?;
                    self.accept(style).then_some(step)
                }
            },
        }
    }

    /// Whether `style` is the trace's marker: the first one met is.
    fn accept(&self, style: StepStyle) -> bool {
        match self.chosen.get() {
            Some(chosen) => chosen == style,
            None => {
                self.chosen.set(Some(style));
                true
            }
        }
    }

    /// The source steps were read under: the user's, or the built-in marker met first (`None`
    /// when no range was a step).
    pub fn used(&self) -> Option<StepMarkerReport> {
        match (&self.source, self.chosen.get()) {
            (Some(source), _) => Some(source.report(false)),
            (None, Some(style)) => Some(StepSource::Builtin(style).report(true)),
            (None, None) => None,
        }
    }
}

/// A borrowed [`StepParser`] over a string table that grows as ranges stream (the page's
/// builders keep the parser and are handed the table each time).
pub struct ParserOn<'a>(pub &'a StepParser, pub &'a Strings);

impl StepLookup for ParserOn<'_> {
    fn step_name(&self, id: NameId) -> Option<StepName> {
        self.0.parse_id(self.1, id)
    }
}

/// Every built-in marker at once, no marker chosen: each name is parsed under the marker that
/// reads it (no name is a step under two), and that marker is [`AnyBuiltin::last_style`] —
/// for a reader that keeps every marker's steps and chooses one after.
pub struct AnyBuiltin<'s> {
    strings: &'s Strings,
    last: Cell<Option<StepStyle>>,
}

impl<'s> AnyBuiltin<'s> {
    pub fn new(strings: &'s Strings) -> AnyBuiltin<'s> {
        AnyBuiltin {
            strings,
            last: Cell::new(None),
        }
    }

    /// The marker of the last name read as a step.
    pub fn last_style(&self) -> Option<StepStyle> {
        self.last.get()
    }
}

impl StepLookup for AnyBuiltin<'_> {
    fn step_name(&self, id: NameId) -> Option<StepName> {
        let (style, step) = parse_builtin(self.strings.get(id))?;
        self.last.set(Some(style));
        Some(step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;

    #[test]
    fn a_name_read_again_parses_as_it_did_the_first_time() {
        let strings = Strings::from_rows(vec![
            (1, "_schedule".into()),
            (
                2,
                "[Executor] _forward_step 7: 1 ctx reqs, 3 gen reqs".into(),
            ),
            (3, "execute_context_1(5)_generation_2(2)".into()),
            (
                4,
                "[Executor] _forward_step 8: 0 ctx reqs, 4 gen reqs".into(),
            ),
        ]);
        let sw = Profile::Standard.switches();
        let parser = StepParser::new(&sw, None);
        let id = |sqlite_id: i64| strings.resolve(sqlite_id);
        for _ in 0..2 {
            assert_eq!(parser.parse_id(&strings, id(1)), None);
            let seven = parser.parse_id(&strings, id(2)).map(|s| s.step);
            assert_eq!(seven, Some(7), "a step parses every time");
            // vLLM's marker parses this name, but TensorRT-LLM's was met first.
            assert_eq!(parser.parse_id(&strings, id(3)), None);
            let eight = parser.parse_id(&strings, id(4)).map(|s| s.step);
            assert_eq!(eight, Some(8));
        }
        assert_eq!(parser.parse(strings.get(id(3))), None);
        assert_eq!(parser.parse_id(&strings, crate::model::NO_NAME), None);
        assert!(
            parser.not_steps.borrow().len() <= 1,
            "a name outside the table is not remembered"
        );
    }
}

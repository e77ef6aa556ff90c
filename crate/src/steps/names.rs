//! Forward-step names under a profile: which names a profile's parser reads as steps (the
//! TensorRT-LLM marker, with `trtllm-skill`'s `LIKE` prefilter, or a user's marker).

use crate::model::{NameId, Strings};
use crate::names::patterns::NameMatch;
use crate::names::steps::{EXECUTOR_STEP, StepMarker, StepName, StepText, parse_step};
use crate::profile::Switches;
use crate::sqlike::Like;

/// The forward step a name not held stands for under `sw`: every profile's parser reads it but
/// `trtllm-skill`'s, which takes only names its prefilter passes. A custom step marker needs
/// the names themselves (the page's streamed open, which holds none, takes no marker).
pub fn unheld_step(text: &StepText, sw: &Switches) -> Option<StepName> {
    (sw.name_match != NameMatch::SqliteLike || text.executor).then_some(text.name)
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

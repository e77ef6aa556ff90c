//! Name classification, done once per distinct string rather than once per event.
//!
//! Millions of kernels and API calls share a few hundred names, so every pattern of the
//! catalogue ([`crate::names`]: launch API, NCCL, host prep) is evaluated over the string table
//! under the profile's matching and looked up by [`NameId`] in the hot loops.

use crate::model::{NameFlags, NameId, Strings, flag};
use crate::names::launch::{is_graph_launch, is_launch_api};
use crate::names::patterns::NameMatch;
use crate::names::patterns::{is_nccl_name, is_prep_name};
use crate::profile::Switches;

/// Per-name lookup tables for one profile.
pub struct NameTables {
    pub launch: NameFlags,
    /// CUDA-graph launch APIs (whatever the profile: they mark steps when no marker does).
    pub graph_launch: NameFlags,
    pub nccl: NameFlags,
    /// For each prep pattern, which names match it.
    pub prep: [NameFlags; 3],
}

impl NameTables {
    pub fn build(strings: &Strings, sw: &Switches) -> NameTables {
        let mut tables = NameTables {
            launch: NameFlags::default(),
            graph_launch: NameFlags::default(),
            nccl: NameFlags::default(),
            prep: Default::default(),
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
        strings.classify_more(&mut self.graph_launch, is_graph_launch);
        strings.classify_more(&mut self.nccl, |s| is_nccl_name(s, like));
        for (p, table) in self.prep.iter_mut().enumerate() {
            strings.classify_more(table, |s| is_prep_name(s, p, like));
        }
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
    use crate::names::steps::{step_label, step_text};
    use crate::steps::names::{StepParser, unheld_step};

    /// A forward-step name not held reads as the name under both profiles' parsers, and the
    /// name tables classify the table without it as they do with it; names another rule
    /// matches are held.
    #[test]
    fn step_names_not_held_read_as_their_names() {
        use crate::profile::Profile;
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
}

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

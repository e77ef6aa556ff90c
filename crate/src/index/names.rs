//! The catalogue's API and kernel classes ([`crate::names`]) evaluated once per distinct string
//! of one trace, looked up by [`NameId`] in the drill-down's and explainer's loops.

use crate::model::{NameFlags, NameId, Trace};
use crate::names::api::{ApiKind, api_kind};
use crate::names::kernels::{KernelCategory, is_collective, kernel_category};

/// Per-name lookup tables for one trace's string table.
pub struct Names {
    pub api: Vec<ApiKind>,
    pub category: Vec<KernelCategory>,
    pub collective: NameFlags,
}

impl Names {
    /// Classifies the names kernels and API calls use (NVTX names, often one per step, are
    /// many and need no class).
    pub fn build(trace: &Trace) -> Names {
        let strings = &trace.strings;
        let used = |ids: &[NameId]| {
            let mut seen = vec![false; strings.len()];
            for &id in ids {
                if let Some(s) = seen.get_mut(id as usize) {
                    *s = true;
                }
            }
            seen
        };
        let kernel_names = used(&trace.kernels.short_name);
        let api_names = used(&trace.runtime.name);
        let api = (0..strings.len())
            .map(|i| match api_names[i] {
                true => api_kind(strings.get(i as NameId)),
                false => ApiKind::Other,
            })
            .collect();
        let category = (0..strings.len())
            .map(|i| match kernel_names[i] {
                true => kernel_category(strings.get(i as NameId)),
                false => KernelCategory::Other,
            })
            .collect();
        let collective = (0..strings.len())
            .map(|i| kernel_names[i] && is_collective(strings.get(i as NameId)))
            .collect();
        Names {
            api,
            category,
            collective,
        }
    }

    pub fn api(&self, id: NameId) -> ApiKind {
        self.api.get(id as usize).copied().unwrap_or(ApiKind::Other)
    }

    pub fn category(&self, id: NameId) -> KernelCategory {
        self.category
            .get(id as usize)
            .copied()
            .unwrap_or(KernelCategory::Other)
    }

    pub fn is_collective(&self, id: NameId) -> bool {
        crate::model::flag(&self.collective, id)
    }
}

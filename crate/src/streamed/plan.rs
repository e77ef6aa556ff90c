//! What the kernel pass needs to know before it starts: for each profile, the windows and
//! host-prep ranges detect measures kernels in, and the process table they refer to. The page's
//! analysis worker builds the host's detect plans right after loading NVTX ([`HostPlans`]),
//! keeps them for the verdict, and sends their sweep parts to the worker that streams the
//! kernel table, so both tables are read at the same time.

use serde::{Deserialize, Serialize};

use super::{PROFILES, profile_config};
use crate::detect::steps::Step;
use rusqlite::Connection;

use crate::detect::launches::LaunchSweep;
use crate::detect::{Plan, Profile, SweepPlan};
use crate::error::{Error, Result};
use crate::model::{Ns, Trace};
use crate::trace::{LaunchCall, LaunchSink, ProgressFn, StagedLoad, kernel_edges};

/// The host side's detect plan for each entry of [`PROFILES`], built once: after NVTX for the
/// kernel pass, then reused by every verdict (building one classifies every string).
pub struct HostPlans {
    plans: Vec<Plan>,
}

impl HostPlans {
    /// The plans of a host trace loaded at least up to its NVTX ranges (the kernel table is
    /// not read).
    pub fn of(host: &Trace) -> HostPlans {
        let plans = PROFILES
            .iter()
            .map(|&profile| Plan::new(host, &profile_config(profile, "")))
            .collect();
        HostPlans { plans }
    }

    /// The plans, still valid for `host` (they are rebuilt if its string table changed since;
    /// plans whose launch calls were swept cannot be, the calls are not held).
    pub(super) fn for_trace(self, host: &Trace) -> Result<HostPlans> {
        let valid = self.plans.len() == PROFILES.len()
            && self
                .plans
                .iter()
                .all(|p| p.string_count() == host.strings.len());
        match (valid, self.swept()) {
            (true, _) => Ok(self),
            (false, false) => Ok(HostPlans::of(host)),
            (false, true) => Err(Error::Internal {
                detail: "the string table changed after the launch calls were swept".into(),
            }),
        }
    }

    /// Whether M2 comes from launch calls swept rather than held.
    pub fn swept(&self) -> bool {
        self.plans.iter().any(Plan::launches_swept)
    }

    /// Indexes the launch API calls of `host` (loaded whole now) for every verdict to come:
    /// the page does it while the other worker still streams kernels.
    pub fn index_launches(&mut self, host: &Trace) {
        for plan in &mut self.plans {
            plan.index_launches(host);
        }
    }

    /// Sweeps the kernel-launch API calls in start order for every plan's M2 instead of loading
    /// them (`staged` then loads no runtime calls). `Ok(false)`: they must be loaded (no
    /// runtime or kernel table, too many sorted runs, odd columns) — then index them after the
    /// load with [`HostPlans::index_launches`].
    pub fn sweep_launches(
        &mut self,
        conn: &Connection,
        path: &str,
        staged: &mut StagedLoad,
        progress: ProgressFn<'_>,
    ) -> Result<bool> {
        let Some((hull_start, settled_until)) = kernel_edges(conn, staged.schema(), path)? else {
            return Ok(false);
        };
        let mut sink = PlanSweeps {
            plans: &self.plans,
            edges: (hull_start, settled_until),
            sweeps: Vec::new(),
        };
        sink.restart();
        let swept = staged.sweep_launches(conn, path, progress, &mut sink)?;
        if swept {
            let results: Vec<_> = sink.sweeps.into_iter().map(LaunchSweep::finish).collect();
            for (plan, result) in self.plans.iter_mut().zip(results) {
                plan.set_swept_launches(result);
            }
        }
        Ok(swept)
    }

    pub fn get(&self, profile: Profile) -> Option<&Plan> {
        let i = PROFILES.iter().position(|&p| p == profile)?;
        self.plans.get(i)
    }

    /// The forward steps of the timeline's step lane (the standard profile's).
    pub fn timeline_steps(&self) -> &[Step] {
        self.get(Profile::Standard).map_or(&[], Plan::steps)
    }
}

/// One launch sweep per plan, fed the same calls.
struct PlanSweeps<'p> {
    plans: &'p [Plan],
    /// The first kernel row's start and the last kernel row's end.
    edges: (Ns, Ns),
    sweeps: Vec<LaunchSweep>,
}

impl LaunchSink for PlanSweeps<'_> {
    fn push(&mut self, call: LaunchCall) {
        self.sweeps.iter_mut().for_each(|s| s.push(call));
    }

    fn restart(&mut self) {
        let (start, until) = self.edges;
        self.sweeps = self
            .plans
            .iter()
            .map(|plan| LaunchSweep::new(plan, start, until))
            .collect();
    }
}

/// The host-side facts the one-pass kernel analyses depend on, without the host tables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelPlan {
    /// `globalPid`s in process-id order, so the kernel pass numbers processes the same way.
    pub processes: Vec<i64>,
    /// One sweep plan per entry of [`PROFILES`] (default windows, M3 on).
    pub sweeps: Vec<SweepPlan>,
    /// `StringIds.id` per name id of the host side ([`crate::model::Strings::sqlite_ids`]): the
    /// pass names kernels as the host side does without reading the strings.
    pub names: Vec<i64>,
    /// Whether the verdict reads kernels' `graphNodeId` (a whole-graph capture of a trace that
    /// launches graphs: its warning asks whether any kernel has one).
    pub graph_nodes: bool,
}

impl KernelPlan {
    /// The plan of a host trace loaded up to its NVTX ranges, from its detect plans.
    pub fn of(host: &Trace, plans: &HostPlans) -> KernelPlan {
        let sweeps = PROFILES
            .iter()
            .zip(&plans.plans)
            .map(|(&profile, plan)| plan.sweep_plan(&profile_config(profile, "")))
            .collect();
        KernelPlan {
            processes: host.processes.global_pid.clone(),
            sweeps,
            names: host.strings.sqlite_ids().to_vec(),
            graph_nodes: crate::detect::reads_graph_nodes(&host.meta, &host.strings),
        }
    }

    /// Compact binary: the plan carries every host-prep range (one per step and rank).
    pub fn to_bytes(&self) -> Vec<u8> {
        postcard::to_allocvec(self).unwrap_or_default()
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<KernelPlan> {
        postcard::from_bytes(bytes).map_err(|e| Error::Internal {
            detail: format!("the kernel pass's plan did not decode: {e}"),
        })
    }
}

//! What the kernel pass needs to know before it starts: for each profile, the windows and
//! host-prep ranges detect measures kernels in, and the process table they refer to. The page's
//! analysis worker builds the host's detect plans right after loading NVTX ([`HostPlans`]),
//! keeps them for the verdict, and sends their sweep parts to the worker that streams the
//! kernel table, so both tables are read at the same time.

use serde::{Deserialize, Serialize};

use super::{ByteSink, PROFILES, profile_config};
use crate::timeline::{StepLane, StepLaneBuilder};
use rusqlite::Connection;

use super::feed::{CHUNK_ROWS, FeedChunk, FeedWriter};
use crate::detect::host_facts::HostFactsBuilder;
use crate::detect::launch_sweep::LaunchSweep;
use crate::detect::sweep::FedSweep;
use crate::detect::sweep::SweepInputsRef;
use crate::detect::{HostFacts, SweepInputs};
use crate::error::{Error, Result};
use crate::model::{Ns, RowIds, Trace};
use crate::profile::Profile;
use crate::trace::{LaunchCall, LaunchSink, ProgressFn, StagedLoad, kernel_edges};

/// The host side's detect plan for each entry of [`PROFILES`], built once: after NVTX for the
/// kernel pass, then reused by every verdict (building one classifies every string).
pub struct HostPlans {
    plans: Vec<HostFacts>,
    /// Whether the kernel pass is fed the windows as NVTX was read ([`super::feed`]), rather
    /// than given them whole in its plan (an NVTX table out of start order).
    fed: bool,
    /// The standard profile's forward steps for the timeline, until it takes them.
    step_lane: Option<StepLane>,
    /// The first kernel row's start and the last one's end, once the launch calls were
    /// swept or found to need loading ([`HostPlans::sweep_launches`]).
    kernel_edges: Option<(Ns, Ns)>,
}

impl HostPlans {
    /// The plans of a host trace loaded at least up to its NVTX ranges (the kernel table is
    /// not read).
    pub fn of(host: &Trace) -> HostPlans {
        let mut lane = StepLane::builder();
        let plans = PROFILES
            .iter()
            .map(|&profile| {
                let mut sink = lane_steps(profile, &mut lane);
                HostFacts::with_steps(host, &profile_config(profile, ""), &mut sink)
            })
            .collect();
        let step_lane = lane.finish();
        HostPlans {
            plans,
            fed: false,
            step_lane,
            kernel_edges: None,
        }
    }

    /// The page's plans, built from the NVTX ranges as `staged` reads them (none kept, so the
    /// analysis worker never holds the NVTX table), the windows and host-prep ranges fed to the
    /// kernel pass on the way as chunks of bytes (`feed`, [`super::feed`]). A table whose
    /// ranges are out of start order is loaded and read whole instead, then let go; the chunks
    /// fed so far are then void (the plan says so, [`KernelPlan::fed`]).
    pub fn load(
        staged: &mut StagedLoad,
        conn: &Connection,
        path: &str,
        progress: ProgressFn<'_>,
        feed: &mut dyn FnMut(Vec<u8>),
    ) -> Result<HostPlans> {
        HostPlans::load_chunked(staged, (conn, path), progress, (feed, CHUNK_ROWS))
    }

    /// [`HostPlans::load`], `chunk_rows` NVTX ranges per chunk of windows (tests take small
    /// ones to see many chunks on a small trace).
    pub fn load_chunked(
        staged: &mut StagedLoad,
        (conn, path): (&Connection, &str),
        progress: ProgressFn<'_>,
        (feed, chunk_rows): (&mut dyn FnMut(Vec<u8>), u64),
    ) -> Result<HostPlans> {
        let strings = &staged.trace().strings;
        let mut builders: Vec<(Profile, HostFactsBuilder)> = PROFILES
            .iter()
            .map(|&p| (p, HostFactsBuilder::fed(strings, &profile_config(p, ""))))
            .collect();
        let mut lane = StepLane::builder();
        let mut writer = FeedWriter::new(PROFILES.len(), chunk_rows, feed);
        let mut prep = Vec::new();
        let read = staged.stream_nvtx(conn, path, progress, &mut |row, strings, threads| {
            let fed = builders.iter_mut().enumerate().all(|(i, (profile, b))| {
                let Some(out) = writer.profile(i) else {
                    return false;
                };
                let mut sink = (lane_steps(*profile, &mut lane), &mut *out);
                let add = &mut |slot, k, r| prep.push((slot, k, r));
                let Ok(until) = b.feed(row, (strings, threads), &mut sink, add) else {
                    return false;
                };
                prep.drain(..).for_each(|(slot, k, r)| out.prep(slot, k, r));
                until.into_iter().for_each(|t| out.until(t));
                true
            });
            writer.row_done();
            fed
        })?;
        if !read {
            staged.nvtx(conn, path, true, progress)?;
            let plans = HostPlans::of(staged.trace());
            staged.forget_nvtx_ranges();
            return Ok(plans);
        }
        let processes = staged.trace().processes.len();
        let plans = builders
            .into_iter()
            .enumerate()
            .map(|(i, (profile, b))| {
                let lane = lane_steps(profile, &mut lane);
                match writer.profile(i) {
                    Some(out) => b.finish(processes, &mut (lane, out)),
                    None => b.finish(processes, &mut (lane, ())),
                }
            })
            .collect();
        writer.finish();
        let step_lane = lane.finish();
        Ok(HostPlans {
            plans,
            fed: true,
            step_lane,
            kernel_edges: None,
        })
    }

    /// The page's step after NVTX (loaded): the plans and the kernel pass's plan as bytes
    /// ([`HostPlans::kernel_plan`]), the NVTX ranges let go.
    pub fn for_kernel_pass(staged: &mut StagedLoad) -> (HostPlans, Vec<u8>) {
        let mut plans = HostPlans::of(staged.trace());
        staged.forget_nvtx_ranges();
        let plan = plans.kernel_plan(staged.trace());
        (plans, plan)
    }

    /// The kernel pass's plan as bytes ([`KernelPlan::encode`]); then what only the sweeps read
    /// is let go (the verdict needs only what the plans took from it).
    pub fn kernel_plan(&mut self, host: &Trace) -> Vec<u8> {
        let mut bytes = Vec::new();
        self.write_kernel_plan(host, &mut bytes);
        bytes
    }

    /// [`HostPlans::kernel_plan`] into `sink`, in pieces: the page writes them into a JS
    /// buffer, so the plan (tens of MB on a long trace) is never whole in wasm memory.
    pub fn write_kernel_plan(&mut self, host: &Trace, sink: &mut dyn ByteSink) {
        KernelPlan::write(host, self, sink);
        self.plans
            .iter_mut()
            .for_each(HostFacts::forget_sweep_inputs);
    }

    /// The plans, checked to be valid for `host`: built on its string table (loading after
    /// NVTX adds no string), which they index by name id. They cannot be rebuilt here: the
    /// NVTX ranges were let go and the swept launch calls are not held.
    pub(super) fn for_trace(self, host: &Trace) -> Result<HostPlans> {
        let valid = self.plans.len() == PROFILES.len()
            && self
                .plans
                .iter()
                .all(|p| p.string_count() == host.strings.len());
        if valid {
            Ok(self)
        } else {
            Err(Error::Internal {
                detail: "the string table changed after the detect plans were built".into(),
            })
        }
    }

    /// Whether M2's launch calls were swept ahead (from the file, or loaded): the plans then
    /// measure the default windows only.
    pub fn swept(&self) -> bool {
        self.plans.iter().any(HostFacts::launches_swept)
    }

    /// Sweeps the launch API calls of `host` (loaded whole now, [`HostPlans::sweep_launches`]
    /// having said they must be) once for every verdict to come: the page does it while the
    /// other worker still streams kernels. Without a kernel table there is no verdict to sweep
    /// them for.
    pub fn sweep_loaded_launches(&mut self, host: &Trace) {
        let Some(edges) = self.kernel_edges else {
            return;
        };
        for plan in &mut self.plans {
            plan.sweep_loaded_launches(host, edges);
        }
    }

    /// Sweeps the kernel-launch API calls in start order for every plan's M2 instead of loading
    /// them (`staged` then loads no runtime calls). The plans fed their sweeps read the phase
    /// windows from the chunks [`HostPlans::load`] wrote (`feed(i)`: chunk `i`, kept by the page
    /// outside wasm memory). `Ok(false)`: they must be loaded (no runtime or kernel table, too
    /// many sorted runs, odd columns) — then sweep them after the load with
    /// [`HostPlans::sweep_loaded_launches`]; fed plans get their windows back from NVTX loaded
    /// whole.
    pub fn sweep_launches(
        &mut self,
        conn: &Connection,
        path: &str,
        (staged, progress): (&mut StagedLoad, ProgressFn<'_>),
        feed: &mut dyn FnMut(usize) -> Option<Vec<u8>>,
    ) -> Result<bool> {
        self.kernel_edges = kernel_edges(conn, staged.schema(), path)?;
        let Some((hull_start, settled_until)) = self.kernel_edges else {
            return self.whole_windows(conn, path, (staged, progress));
        };
        let mut sink = PlanSweeps {
            plans: &self.plans,
            edges: (hull_start, settled_until),
            sweeps: Vec::new(),
            fed: self.fed.then_some(Feed {
                chunks: feed,
                next: 0,
                error: None,
            }),
        };
        sink.restart();
        let swept = staged.sweep_launches(conn, path, progress, &mut sink)?;
        if !swept {
            return self.whole_windows(conn, path, (staged, progress));
        }
        let mut sweeps = sink.sweeps;
        if let Some(mut feed) = sink.fed {
            // The windows past the last call: measured against the unions still open.
            while feed.next_into(&mut sweeps) {
                sweeps.iter_mut().for_each(|s| s.trim(Ns::MAX));
            }
            if let Some(e) = feed.error {
                return Err(e);
            }
        }
        let results: Vec<_> = sweeps.into_iter().map(LaunchSweep::finish).collect();
        for (plan, result) in self.plans.iter_mut().zip(results) {
            plan.set_swept_launches(result);
        }
        Ok(true)
    }

    /// `Ok(false)` from [`HostPlans::sweep_launches`]: the launch calls will be loaded and
    /// swept in the phase windows, which fed plans did not keep, so they are rebuilt from NVTX
    /// loaded whole (then let go).
    fn whole_windows(
        &mut self,
        conn: &Connection,
        path: &str,
        (staged, progress): (&mut StagedLoad, ProgressFn<'_>),
    ) -> Result<bool> {
        if self.fed {
            staged.nvtx(conn, path, true, progress)?;
            self.plans = HostPlans::of(staged.trace()).plans;
            staged.forget_nvtx_ranges();
        }
        Ok(false)
    }

    pub fn get(&self, profile: Profile) -> Option<&HostFacts> {
        let i = PROFILES.iter().position(|&p| p == profile)?;
        self.plans.get(i)
    }

    /// The timeline's forward-step lane (the standard profile's steps), once.
    pub fn take_step_lane(&mut self) -> Option<StepLane> {
        self.step_lane.take()
    }
}

/// The chunks of windows a fed launch sweep reads, by index (a sweep that restarts reads them
/// again from the first).
struct Feed<'f> {
    chunks: &'f mut dyn FnMut(usize) -> Option<Vec<u8>>,
    next: usize,
    error: Option<Error>,
}

impl Feed<'_> {
    /// Feeds the next chunk to `sweeps`; `false` once there is none (they are then told so) or
    /// one failed (kept in `error`).
    fn next_into(&mut self, sweeps: &mut [LaunchSweep<'_>]) -> bool {
        let Some(bytes) = (self.chunks)(self.next).filter(|_| self.error.is_none()) else {
            sweeps.iter_mut().for_each(FedSweep::feed_done);
            return false;
        };
        self.next += 1;
        match FeedChunk::from_bytes(&bytes).and_then(|c| c.apply(sweeps)) {
            Ok(_) => true,
            Err(e) => {
                self.error = Some(e);
                sweeps.iter_mut().for_each(FedSweep::feed_done);
                false
            }
        }
    }
}

/// Where a profile's forward steps go as its plan reads them: the standard profile's make the
/// timeline's step lane.
fn lane_steps(profile: Profile, lane: &mut StepLaneBuilder) -> Option<&mut StepLaneBuilder> {
    (profile == Profile::Standard).then_some(lane)
}

/// One launch sweep per plan, fed the same calls (and the windows, when fed).
struct PlanSweeps<'p, 'f> {
    plans: &'p [HostFacts],
    /// The first kernel row's start and the last kernel row's end.
    edges: (Ns, Ns),
    sweeps: Vec<LaunchSweep<'p>>,
    fed: Option<Feed<'f>>,
}

impl LaunchSink for PlanSweeps<'_, '_> {
    fn push(&mut self, call: LaunchCall) {
        if let Some(feed) = &mut self.fed {
            while !self.sweeps.iter().all(|s| s.ready_for(call.end)) {
                feed.next_into(&mut self.sweeps);
            }
        }
        self.sweeps.iter_mut().for_each(|s| s.push(call));
    }

    fn restart(&mut self) {
        let (start, until) = self.edges;
        let fed = self.fed.is_some();
        if let Some(feed) = &mut self.fed {
            feed.next = 0;
        }
        self.sweeps = self
            .plans
            .iter()
            .map(|plan| {
                if fed {
                    LaunchSweep::fed(plan, start, until)
                } else {
                    LaunchSweep::new(plan, start, until)
                }
            })
            .collect();
    }
}

/// The host-side facts the one-pass kernel analyses depend on, without the host tables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelPlan {
    /// `globalPid`s in process-id order, so the kernel pass numbers processes the same way.
    pub processes: Vec<i64>,
    /// One sweep plan per entry of [`PROFILES`] (default windows, M3 on).
    pub sweeps: Vec<SweepInputs>,
    /// `StringIds.id` per name id of the host side ([`crate::model::Strings::row_ids`]): the
    /// pass names kernels as the host side does without reading the strings.
    pub names: RowIds,
    /// Whether the verdict reads kernels' `graphNodeId` (a whole-graph capture of a trace that
    /// launches graphs: its warning asks whether any kernel has one).
    pub graph_nodes: bool,
    /// The sweeps are fed their windows and host-prep ranges as NVTX is read ([`super::feed`]);
    /// else `sweeps` carry them whole.
    pub fed: bool,
}

/// A [`KernelPlan`] borrowed from the host trace and its plans: the same bytes, no copy of the
/// windows, host-prep ranges and name index (tens of MB on a long trace).
#[derive(Serialize)]
struct KernelPlanRef<'a> {
    processes: &'a [i64],
    sweeps: Vec<SweepInputsRef<'a>>,
    names: &'a RowIds,
    graph_nodes: bool,
    fed: bool,
}

impl KernelPlan {
    /// The plan of a host trace loaded at least up to its NVTX ranges, from its detect plans,
    /// as compact bytes ([`KernelPlan::from_bytes`] reads them): the plan carries every
    /// host-prep range (one per step and rank) and phase window piece.
    pub fn encode(host: &Trace, plans: &HostPlans) -> Vec<u8> {
        let mut bytes = Vec::new();
        KernelPlan::write(host, plans, &mut bytes);
        bytes
    }

    /// [`KernelPlan::encode`] into `sink`.
    fn write(host: &Trace, plans: &HostPlans, sink: &mut dyn ByteSink) {
        let sweeps = PROFILES
            .iter()
            .zip(&plans.plans)
            .map(|(&profile, plan)| {
                let sweep = plan.sweep_inputs_ref(&profile_config(profile, ""));
                if plans.fed {
                    sweep.without_windows()
                } else {
                    sweep
                }
            })
            .collect();
        let plan = KernelPlanRef {
            processes: &host.processes.global_pid,
            sweeps,
            names: host.strings.row_ids(),
            graph_nodes: crate::trace::reads_graph_nodes(&host.meta, &host.strings),
            fed: plans.fed,
        };
        super::encode_to(&plan, sink);
    }

    /// The plan [`KernelPlan::encode`] encodes.
    pub fn of(host: &Trace, plans: &HostPlans) -> Result<KernelPlan> {
        KernelPlan::from_bytes(&KernelPlan::encode(host, plans))
    }

    /// Compact binary (what [`KernelPlan::encode`] writes for the plan it came from).
    pub fn to_bytes(&self) -> Vec<u8> {
        super::encode(self)
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<KernelPlan> {
        postcard::from_bytes(bytes).map_err(|e| Error::Internal {
            detail: format!("the kernel pass's plan did not decode: {e}"),
        })
    }
}

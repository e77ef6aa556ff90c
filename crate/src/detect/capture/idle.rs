//! Where each device's idle time lies, kept in bounded memory as the kernel sweep passes: per
//! device its busy time, its idle time between kernels, and its [`KEPT_GAPS`] largest gaps,
//! each with every device's busy time up to the gap's end (so the metrics of the window after
//! any kept gap are exact). The warm-up check reads the kept gaps against the warm-up spans.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use crate::model::{KernelRow, Ns};

/// Largest gaps kept per device. Warm-up stalls are the longest gaps of a capture (module loads,
/// compiles: milliseconds to seconds); the share they hold is read from these, a lower bound.
pub const KEPT_GAPS: usize = 64;

/// One kept idle gap of a device.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct KeptGap {
    pub start: Ns,
    pub end: Ns,
    /// `(device, busy ns before `end`)` by device, for every device busy before it (others: 0).
    pub busy_before: Vec<(u32, Ns)>,
}

impl KeptGap {
    pub fn ns(&self) -> Ns {
        self.end - self.start
    }

    /// Busy time of `device` before the gap's end.
    pub fn busy_of(&self, device: u32) -> Ns {
        self.busy_before
            .iter()
            .find(|(d, _)| *d == device)
            .map_or(0, |&(_, ns)| ns)
    }
}

/// One device's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceIdleProfile {
    pub device: u32,
    /// Union of its busy rows' intervals (every GPU operation under `standard`).
    pub busy_ns: Ns,
    /// Total of its gaps between merged busy intervals.
    pub idle_ns: Ns,
    pub gaps: u64,
    /// Its largest gaps (at most [`KEPT_GAPS`]), in start order.
    pub kept: Vec<KeptGap>,
}

/// What [`IdleSweep`] leaves: per device, ascending.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IdleProfile {
    pub devices: Vec<DeviceIdleProfile>,
}

/// A device's running state.
#[derive(Debug, Clone, Default)]
struct Lane {
    device: u32,
    /// The open merged interval.
    open: Option<(Ns, Ns)>,
    /// Busy time of the closed intervals.
    closed: Ns,
    idle: Ns,
    gaps: u64,
    /// Min-heap by length: the smallest kept gap is evicted first.
    kept: BinaryHeap<Reverse<(Ns, KeptGap)>>,
}

impl Lane {
    /// Busy time before `t`, given that no later kernel of this device starts before `t`.
    fn busy_before(&self, t: Ns) -> Ns {
        self.closed + self.open.map_or(0, |(s, e)| (e.min(t) - s).max(0))
    }
}

/// Folds kernels in start order (the kernel sweep's order) into an [`IdleProfile`]. A kernel
/// taking no time splits no gap (as `drill::gaps::IdleLane`).
#[derive(Debug, Clone, Default)]
pub struct IdleSweep {
    lanes: Vec<Lane>,
}

impl IdleSweep {
    pub fn push(&mut self, ev: &KernelRow) {
        if ev.end <= ev.start {
            return;
        }
        let i = match self.lanes.iter().position(|l| l.device == ev.device) {
            Some(i) => i,
            None => {
                self.lanes.push(Lane {
                    device: ev.device,
                    ..Lane::default()
                });
                self.lanes.len() - 1
            }
        };
        let Some((s, e)) = self.lanes[i].open else {
            self.lanes[i].open = Some((ev.start, ev.end));
            return;
        };
        if ev.start <= e {
            self.lanes[i].open = Some((s, e.max(ev.end)));
            return;
        }
        let (gap_start, gap_end) = (e, ev.start);
        let lane = &mut self.lanes[i];
        lane.closed += e - s;
        lane.open = Some((ev.start, ev.end));
        lane.idle += gap_end - gap_start;
        lane.gaps += 1;
        let len = gap_end - gap_start;
        let full = lane.kept.len() >= KEPT_GAPS;
        if full
            && lane
                .kept
                .peek()
                .is_some_and(|Reverse((min, _))| *min >= len)
        {
            return;
        }
        // Every kernel starting before `gap_end` was pushed: the busy times before it are final.
        // By device, zeros left out: the same whatever the order of kernels starting together.
        let mut busy_before: Vec<(u32, Ns)> = self
            .lanes
            .iter()
            .map(|l| {
                let b = if l.device == ev.device {
                    l.closed
                } else {
                    l.busy_before(gap_end)
                };
                (l.device, b)
            })
            .filter(|&(_, b)| b > 0)
            .collect();
        busy_before.sort_unstable();
        let lane = &mut self.lanes[i];
        if full {
            lane.kept.pop();
        }
        lane.kept.push(Reverse((
            len,
            KeptGap {
                start: gap_start,
                end: gap_end,
                busy_before,
            },
        )));
    }

    pub fn finish(self) -> IdleProfile {
        let mut devices: Vec<DeviceIdleProfile> = self
            .lanes
            .into_iter()
            .map(|l| {
                let busy_ns = l.closed + l.open.map_or(0, |(s, e)| e - s);
                let mut kept: Vec<KeptGap> = l.kept.into_iter().map(|Reverse((_, g))| g).collect();
                kept.sort();
                DeviceIdleProfile {
                    device: l.device,
                    busy_ns,
                    idle_ns: l.idle,
                    gaps: l.gaps,
                    kept,
                }
            })
            .collect();
        devices.sort_by_key(|d| d.device);
        IdleProfile { devices }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::intervals::IntervalSet;

    fn ev(start: Ns, end: Ns, device: u32) -> KernelRow {
        KernelRow {
            row: 0,
            start,
            end,
            device,
            stream: 0,
            process: 0,
            short_name: 0,
            graph_node: 0,
            ..KernelRow::default()
        }
    }

    /// Busy and idle per device, and every kept gap's busy times, against brute force.
    #[test]
    fn kept_gaps_carry_every_devices_exact_busy_time_before_their_end() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut rnd = |n: i64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            ((seed >> 33) % n as u64) as Ns
        };
        for _ in 0..50 {
            let mut ks: Vec<(Ns, Ns, u32)> = (0..200)
                .map(|_| {
                    let s = rnd(10_000);
                    (s, s + rnd(60), rnd(3) as u32)
                })
                .collect();
            ks.sort_by_key(|k| k.0);
            let mut sweep = IdleSweep::default();
            for &(s, e, d) in &ks {
                sweep.push(&ev(s, e, d));
            }
            let profile = sweep.finish();
            let union = |d: u32| {
                IntervalSet::from_unsorted(
                    ks.iter()
                        .filter(|k| k.2 == d && k.1 > k.0)
                        .map(|k| (k.0, k.1))
                        .collect(),
                )
            };
            for dev in &profile.devices {
                let u = union(dev.device);
                assert_eq!(dev.busy_ns, u.measure());
                assert_eq!(dev.idle_ns, u.interior_gaps().measure());
                assert!(dev.kept.len() <= KEPT_GAPS);
                for g in &dev.kept {
                    for d in 0..3 {
                        let before =
                            union(d).intersection_measure(&IntervalSet::single(Ns::MIN / 2, g.end));
                        assert_eq!(g.busy_of(d), before, "device {d} before {}", g.end);
                    }
                }
            }
        }
    }
}

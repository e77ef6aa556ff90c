//! What bounds the run: the host (the verdict's YES), or else the GPU work that fills its time —
//! compute, communication or transfers — or no single one (`docs/gpu-work.md`).
//!
//! Why from exclusive shares: each device's busy time is split by precedence (compute, then
//! communication outside compute, then transfers outside both: [`super::sweep::work`]), so a
//! copy hidden under a kernel never makes a run transfer-bound.

use serde::Serialize;

use super::sweep::work::{CopyTally, WorkSummary};
use crate::model::Ns;

/// A kind of work holding at least this share of the busy time bounds the run.
pub const DOMINANT_SHARE: f64 = 0.5;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
pub enum BoundKind {
    #[serde(rename = "host-bound")]
    Host,
    #[serde(rename = "gpu-compute-bound")]
    Compute,
    #[serde(rename = "transfer-bound")]
    Transfer,
    #[serde(rename = "communication-bound")]
    Communication,
    #[serde(rename = "mixed")]
    Mixed,
}

impl BoundKind {
    pub fn label(self) -> &'static str {
        match self {
            BoundKind::Host => "host-bound",
            BoundKind::Compute => "GPU-compute-bound",
            BoundKind::Transfer => "transfer-bound",
            BoundKind::Communication => "communication-bound",
            BoundKind::Mixed => "mixed",
        }
    }
}

/// Shares of the window's device time (window × devices); they sum to 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Shares {
    pub compute: f64,
    pub communication: f64,
    pub transfer: f64,
    pub idle: f64,
}

/// Shares of the busy time (they sum to 1 when the GPU did anything).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BusyShares {
    pub compute: f64,
    pub communication: f64,
    /// Copies and memsets.
    pub transfer: f64,
}

/// The copies of one direction over all devices.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CopySummary {
    pub direction: String,
    pub count: u64,
    pub bytes: u64,
    pub ns: Ns,
    /// Bytes over summed duration.
    pub gb_per_s: Option<f64>,
    pub pageable: u64,
    pub streams: Vec<u32>,
}

/// The `bound` key of `detect --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bound {
    pub kind: BoundKind,
    /// The kind as the reports write it (`GPU-compute-bound`).
    pub label: &'static str,
    pub shares: Shares,
    /// The same split as shares of the busy time.
    pub of_busy: BusyShares,
    /// Device time of the window (its length × devices with GPU work).
    pub window_ns: Ns,
    pub busy_ns: Ns,
    pub compute_ns: Ns,
    pub communication_ns: Ns,
    pub transfer_ns: Ns,
    /// Copy and memset time hidden under compute or communication.
    pub transfer_hidden_ns: Ns,
    pub replays: u64,
    pub replay_ns: Ns,
    pub memsets: u64,
    /// Per direction, largest time first.
    pub copies: Vec<CopySummary>,
    /// The sentence that says why, with the shares that decide it.
    pub evidence: String,
    /// Per device, as measured.
    pub per_device: Vec<super::sweep::work::DeviceWork>,
}

/// `ns` as a share of `of` (0 when `of` is not positive).
fn share(ns: Ns, of: Ns) -> f64 {
    if of > 0 { ns as f64 / of as f64 } else { 0.0 }
}

/// The run's bound from the verdict and the work of `devices` devices over a window of
/// `window_len` ns each.
pub fn classify(host_bound: bool, work: &WorkSummary, window_len: Ns) -> Bound {
    let sum = |f: fn(&super::sweep::work::DeviceWork) -> Ns| {
        work.devices.iter().map(f).fold(0, Ns::saturating_add)
    };
    let window_ns = window_len.max(0).saturating_mul(work.devices.len() as Ns);
    let (busy, compute, comm, transfer) = (
        sum(|d| d.busy_ns),
        sum(|d| d.compute_ns),
        sum(|d| d.communication_ns),
        sum(|d| d.transfer_ns),
    );
    let of = |ns: Ns| share(ns, window_ns);
    let shares = Shares {
        compute: of(compute),
        communication: of(comm),
        transfer: of(transfer),
        idle: of((window_ns - busy).max(0)),
    };
    let of_busy = |ns: Ns| share(ns, busy);
    let of_busy_shares = BusyShares {
        compute: of_busy(compute),
        communication: of_busy(comm),
        transfer: of_busy(transfer),
    };
    let kind = if host_bound {
        BoundKind::Host
    } else if of_busy(compute) >= DOMINANT_SHARE {
        BoundKind::Compute
    } else if of_busy(transfer) >= DOMINANT_SHARE {
        BoundKind::Transfer
    } else if of_busy(comm) >= DOMINANT_SHARE {
        BoundKind::Communication
    } else {
        BoundKind::Mixed
    };
    let copies = copies(work);
    let mut bound = Bound {
        kind,
        label: kind.label(),
        shares,
        of_busy: of_busy_shares,
        window_ns,
        busy_ns: busy,
        compute_ns: compute,
        communication_ns: comm,
        transfer_ns: transfer,
        transfer_hidden_ns: sum(|d| d.transfer_union_ns) - transfer,
        replays: work.devices.iter().map(|d| d.replays).sum(),
        replay_ns: sum(|d| d.replay_ns),
        memsets: work.devices.iter().map(|d| d.memsets).sum(),
        copies,
        evidence: String::new(),
        per_device: work.devices.clone(),
    };
    bound.evidence = evidence(&bound);
    bound
}

impl Bound {
    /// The bound in one phrase, as the reports lead with it: `GPU-compute-bound — kernels and
    /// graph replays fill most of the busy time; of the window's device time, …`.
    pub fn sentence(&self) -> String {
        format!("{} — {}", self.kind.label(), self.evidence)
    }

    /// The busy time split by kind, in words: `compute 2.2%, communication 0.0%, transfers
    /// (copies, memsets) 97.8% of busy time; busy 99.5% of device time`.
    pub fn busy_split(&self) -> String {
        let b = &self.of_busy;
        format!(
            "compute {}, communication {}, transfers (copies, memsets) {} of busy time; busy {} of device time",
            pct(b.compute),
            pct(b.communication),
            pct(b.transfer),
            pct(1.0 - self.shares.idle)
        )
    }
}

fn copies(work: &WorkSummary) -> Vec<CopySummary> {
    let mut out: Vec<CopySummary> = Vec::new();
    for c in work.devices.iter().flat_map(|d| &d.copies) {
        let i = match out.iter().position(|o| o.direction == c.direction) {
            Some(i) => i,
            None => {
                out.push(empty(c));
                out.len() - 1
            }
        };
        let o = &mut out[i];
        o.count += c.count;
        o.bytes = o.bytes.saturating_add(c.bytes);
        o.ns = o.ns.saturating_add(c.ns);
        o.pageable += c.pageable;
        for s in &c.streams {
            if !o.streams.contains(s) {
                o.streams.push(*s);
            }
        }
    }
    for o in &mut out {
        o.streams.sort_unstable();
        o.gb_per_s = (o.ns > 0).then(|| o.bytes as f64 / o.ns as f64);
    }
    out.sort_by_key(|o| std::cmp::Reverse(o.ns));
    out
}

fn empty(c: &CopyTally) -> CopySummary {
    CopySummary {
        direction: c.direction.clone(),
        count: 0,
        bytes: 0,
        ns: 0,
        gb_per_s: None,
        pageable: 0,
        streams: Vec::new(),
    }
}

fn pct(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

fn evidence(b: &Bound) -> String {
    let s = &b.shares;
    let split = format!(
        "of the window's device time, compute {}, communication {}, transfers {} (beyond what compute hid), idle {}",
        pct(s.compute),
        pct(s.communication),
        pct(s.transfer),
        pct(s.idle)
    );
    let lead = match b.kind {
        BoundKind::Host => {
            "the host-overhead verdict is YES: the GPU waits on the host".to_string()
        }
        BoundKind::Compute => "kernels and graph replays fill most of the busy time".to_string(),
        BoundKind::Transfer => match b.copies.first() {
            Some(c) => format!(
                "copies and memsets fill most of the busy time: the largest, {} {} copies, {} in {}{}",
                c.count,
                c.direction,
                crate::format::bytes(c.bytes),
                crate::format::duration_ns(c.ns),
                c.gb_per_s
                    .map(|g| format!(" ({g:.1} GB/s)"))
                    .unwrap_or_default()
            ),
            None => "memsets fill most of the busy time".to_string(),
        },
        BoundKind::Communication => {
            "NCCL kernels outside compute fill most of the busy time".to_string()
        }
        BoundKind::Mixed => format!(
            "no kind of GPU work holds {} of the busy time",
            pct(DOMINANT_SHARE)
        ),
    };
    format!("{lead}; {split}")
}

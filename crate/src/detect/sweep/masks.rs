//! Standard M3: how long each set of simultaneously busy devices lasts ([`MaskSweep`]), credited
//! to each window and to each process's host-prep ranges inside it (host prep ∩ idle is what no
//! device of the process covers).

use std::collections::HashMap;

use crate::model::{KernelRow, Ns, ProcessIdx};
use crate::steps::spans::{overlap_at, overlap_within};

use super::queues::{QueueRef, Queues};
use super::scope::ScopeAcc;

/// Device sets are 64-bit masks: a trace with more devices than this gets no standard M3.
pub const MAX_MASK_DEVICES: usize = 64;

/// Per-mask time accumulators of one window (standard M3), or of host-prep ranges inside it.
#[derive(Debug, Clone, Default)]
pub(super) struct MaskAcc {
    /// Where time counts: these spans, or `None` for the kernel hull (every busy instant lies
    /// inside it) ...
    pub(super) spans: Option<QueueRef>,
    /// ... intersected with these, when set (host-prep ranges inside a window).
    pub(super) within: Option<QueueRef>,
    pub(super) cursor: usize,
    pub(super) within_cursor: usize,
    pub(super) by_mask: Vec<Ns>,
}

impl MaskAcc {
    /// Credits each stretch `(start, end, mask id)`, in time order, with the time it lies in
    /// this accumulator's spans (none when a queue it names does not exist).
    fn add_all(&mut self, q: &Queues, stretches: &[Stretch]) {
        let (cursor, within_cursor, by_mask) =
            (&mut self.cursor, &mut self.within_cursor, &mut self.by_mask);
        match (self.spans.map(|s| q.get(s)), self.within.map(|w| q.get(w))) {
            (Some(Some(s)), Some(Some(w))) => {
                for &(a, b, id) in stretches {
                    let ns = overlap_within((s, &mut *cursor), (w, &mut *within_cursor), a, b);
                    credit(by_mask, id, ns);
                }
            }
            (Some(Some(s)), None) => {
                for &(a, b, id) in stretches {
                    credit(by_mask, id, overlap_at(s, &mut *cursor, a, b));
                }
            }
            (None, _) => {
                for &(a, b, id) in stretches {
                    credit(by_mask, id, b - a);
                }
            }
            _ => {}
        }
    }
}

/// A stretch of constant busy-device mask: start, end, mask id.
type Stretch = (Ns, Ns, usize);

/// Stretches held before they are credited: each accumulator then takes them in one loop.
const STRETCHES: usize = 64;

fn credit(by_mask: &mut Vec<Ns>, mask_id: usize, ns: Ns) {
    if ns > 0 {
        if by_mask.len() <= mask_id {
            by_mask.resize(mask_id + 1, 0);
        }
        by_mask[mask_id] = by_mask[mask_id].saturating_add(ns);
    }
}

/// Standard M3 of one process and pattern in one scope: busy time per mask inside its host-prep
/// ranges ∩ the window, and how long those ranges cover the window.
#[derive(Debug, Clone)]
pub(super) struct PrepAcc {
    pub(super) process: ProcessIdx,
    pub(super) pattern: usize,
    pub(super) busy: MaskAcc,
    /// `prep ∩ window` measured up to `measured_to`, with cursors of its own.
    pub(super) inside_ns: Ns,
    measured_to: Ns,
    cursor: usize,
    within_cursor: usize,
}

impl PrepAcc {
    pub(super) fn new(process: usize, pattern: usize, window: Option<QueueRef>) -> PrepAcc {
        PrepAcc {
            process: process as ProcessIdx,
            pattern,
            busy: MaskAcc {
                spans: Some(QueueRef::Prep(process, pattern)),
                within: window,
                ..MaskAcc::default()
            },
            inside_ns: 0,
            measured_to: Ns::MIN,
            cursor: 0,
            within_cursor: 0,
        }
    }

    /// Measures `prep ∩ window` on `[measured_to, to)`, from `from` at the earliest (the hull
    /// scope's first start).
    pub(super) fn measure_to(&mut self, q: &Queues, from: Ns, to: Ns) {
        let a = self.measured_to.max(from);
        if to <= a {
            return;
        }
        let Some(prep) = q.get(QueueRef::Prep(self.process as usize, self.pattern)) else {
            return;
        };
        self.inside_ns += match self.busy.within.and_then(|w| q.get(w)) {
            Some(w) => overlap_within(
                (prep, &mut self.cursor),
                (w, &mut self.within_cursor),
                a,
                to,
            ),
            None => overlap_at(prep, &mut self.cursor, a, to),
        };
        self.measured_to = to;
    }
}

/// The global sweep over busy-device masks (standard M3): how long each set of simultaneously
/// busy devices lasts, inside each window and each process's prep ranges. The devices of a
/// process are only known at the end; summing the masks that intersect them then gives the busy
/// time of their union exactly.
pub(super) struct MaskSweep {
    /// Device of each bit, in order of first appearance.
    bits: Vec<u32>,
    /// Per bit: end of the device's current merged busy interval.
    busy_until: Vec<Ns>,
    pub(super) clock: Ns,
    masks: Vec<u64>,
    mask_ids: HashMap<u64, usize>,
    /// The last mask looked up: the busy set changes far less often than stretches end.
    last_mask: Option<(u64, usize)>,
    /// Stretches not credited yet (at most [`STRETCHES`]; none after [`MaskSweep::credit`]).
    stretches: Vec<Stretch>,
    pub(super) overflow: bool,
}

impl MaskSweep {
    pub(super) fn new() -> MaskSweep {
        MaskSweep {
            bits: Vec::new(),
            busy_until: Vec::new(),
            clock: Ns::MIN,
            masks: Vec::new(),
            mask_ids: HashMap::new(),
            last_mask: None,
            stretches: Vec::with_capacity(STRETCHES),
            overflow: false,
        }
    }

    pub(super) fn push(&mut self, ev: &KernelRow, scopes: &mut [ScopeAcc], q: &Queues) {
        if self.overflow {
            return;
        }
        self.advance(ev.start, scopes, q);
        if ev.end <= ev.start {
            return;
        }
        match self.bit(ev.device) {
            Some(b) => self.busy_until[b] = self.busy_until[b].max(ev.end),
            None => self.overflow = true,
        }
    }

    pub(super) fn finish(&mut self, scopes: &mut [ScopeAcc], q: &Queues) {
        if self.overflow {
            return;
        }
        let end = self.busy_until.iter().copied().max().unwrap_or(Ns::MIN);
        self.advance(end, scopes, q);
        self.credit(scopes, q);
    }

    /// Credits the stretches held to every window and prep accumulator: before the queues are
    /// trimmed to the clock, and at the end.
    pub(super) fn credit(&mut self, scopes: &mut [ScopeAcc], q: &Queues) {
        if self.stretches.is_empty() {
            return;
        }
        for s in scopes.iter_mut() {
            s.busy_masks.add_all(q, &self.stretches);
            for m in &mut s.prep_masks {
                m.busy.add_all(q, &self.stretches);
            }
        }
        self.stretches.clear();
    }

    /// The device's bit; `None` past [`MAX_MASK_DEVICES`] devices.
    fn bit(&mut self, device: u32) -> Option<usize> {
        if let Some(b) = self.bits.iter().position(|&d| d == device) {
            return Some(b);
        }
        if self.bits.len() >= MAX_MASK_DEVICES {
            return None;
        }
        self.bits.push(device);
        self.busy_until.push(Ns::MIN);
        Some(self.bits.len() - 1)
    }

    /// Moves the clock to `to` (no kernel starts before it any more), holding each stretch of
    /// constant busy-device mask for every window and prep accumulator.
    fn advance(&mut self, to: Ns, scopes: &mut [ScopeAcc], q: &Queues) {
        while self.clock < to {
            let mut next = to;
            let mut mask = 0u64;
            for (b, &until) in self.busy_until.iter().enumerate() {
                if until > self.clock {
                    mask |= 1 << b;
                    next = next.min(until);
                }
            }
            if mask != 0 {
                let id = self.mask_id(mask);
                self.stretches.push((self.clock, next, id));
                if self.stretches.len() >= STRETCHES {
                    self.credit(scopes, q);
                }
            }
            self.clock = next;
        }
    }

    fn mask_id(&mut self, mask: u64) -> usize {
        if let Some((m, id)) = self.last_mask
            && m == mask
        {
            return id;
        }
        let next = self.masks.len();
        let id = *self.mask_ids.entry(mask).or_insert(next);
        if id == next {
            self.masks.push(mask);
        }
        self.last_mask = Some((mask, id));
        id
    }

    /// Each mask id's mask over positions in the sorted device list (`facts.devices`).
    pub(super) fn remapped(&self, sorted: &[u32]) -> Vec<u64> {
        let pos: Vec<u32> = self
            .bits
            .iter()
            .map(|d| sorted.binary_search(d).map_or(0, |i| i as u32))
            .collect();
        self.masks
            .iter()
            .map(|&m| {
                (0..self.bits.len())
                    .filter(|&b| m & (1 << b) != 0)
                    .fold(0u64, |acc, b| acc | 1u64.checked_shl(pos[b]).unwrap_or(0))
            })
            .collect()
    }
}

/// Mask ids → masks over sorted device positions, dropping empty entries.
pub(super) fn remap_masks(by_id: &[Ns], remap: &[u64]) -> Vec<(u64, Ns)> {
    by_id
        .iter()
        .enumerate()
        .filter(|&(_, &ns)| ns > 0)
        .filter_map(|(id, &ns)| Some((*remap.get(id)?, ns)))
        .collect()
}

//! What the other GPUs of the trace ran while a device idled for `host_ahead`: a launch that
//! waited for room in the device's command queue (the driver's "command buffer full" record)
//! says the host was ahead, not slow, so the question is what the GPUs were doing or waiting
//! on meanwhile.
//!
//! The kernel pass hands over GPU work in start order, every device at once, and a device's
//! idle gap is attributed when its next row arrives (at the gap's end): by then every row that
//! can overlap the gap has been seen, some of them before the gap was known. So each device
//! with command-buffer-full records on its launching processes keeps an [`AheadWatch`]: the
//! other devices' work (merged per device and kind, as it comes) that overlaps those records
//! and ends after the device's busy time, which is the only work a later `host_ahead` stretch
//! of it can meet. What it holds is dropped as the device's busy time passes it: the other
//! devices' work during one idle stretch of the device, within its command-buffer-full records.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::format::percent;
use crate::model::Ns;
use crate::model::WorkTable;
use crate::model::rows::KernelRow;

/// What the other devices ran during a cause's time (`host_ahead`): `idle` in `drill --json`
/// gives it per device, a gap's cause per gap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meanwhile {
    /// The time it describes (the cause's).
    pub ns: Ns,
    /// How many other devices the trace has.
    pub other_devices: u32,
    /// The time any other device ran any GPU work, and its share of `ns`.
    pub busy_ns: Ns,
    pub busy_share: f64,
    /// Per other device and kind of work, its time inside `ns` and share of it, largest first.
    pub work: Vec<OtherWork>,
    /// [`Meanwhile::sentence`], for readers that show it as it is (the page).
    #[serde(default)]
    pub sentence: String,
}

/// One other device's work of one kind during a cause's time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OtherWork {
    pub device: u32,
    /// `kernels`, `graph replays`, `copies` or `memsets`.
    pub work: String,
    pub ns: Ns,
    pub share: f64,
}

/// The plural a kind of GPU work is named by.
pub fn work_name(table: WorkTable) -> &'static str {
    match table {
        WorkTable::Kernels => "kernels",
        WorkTable::Replays => "graph replays",
        WorkTable::Memcpy => "copies",
        WorkTable::Memset => "memsets",
    }
}

/// [`Meanwhile`] as it is gathered, gap by gap, and merged like the tallies it rides in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MeanwhileTally {
    /// The `host_ahead` time measured.
    pub ns: Ns,
    pub other_devices: u32,
    /// Time any other device was busy inside it.
    pub busy: Ns,
    /// Per (other device, kind of work), its time inside it.
    pub per: Vec<(u32, WorkTable, Ns)>,
}

impl MeanwhileTally {
    pub fn is_empty(&self) -> bool {
        self.ns == 0
    }

    pub fn clear(&mut self) {
        self.ns = 0;
        self.busy = 0;
        self.per.clear();
    }

    pub fn merge(&mut self, other: &MeanwhileTally) {
        self.ns = self.ns.saturating_add(other.ns);
        self.busy += other.busy;
        self.other_devices = self.other_devices.max(other.other_devices);
        for &(device, table, ns) in &other.per {
            self.add(device, table, ns);
        }
    }

    fn add(&mut self, device: u32, table: WorkTable, ns: Ns) {
        match self
            .per
            .iter_mut()
            .find(|(d, t, _)| *d == device && *t == table)
        {
            Some(e) => e.2 += ns,
            None => self.per.push((device, table, ns)),
        }
    }

    /// The report, `None` when no time was measured.
    pub fn report(&self) -> Option<Meanwhile> {
        if self.ns <= 0 {
            return None;
        }
        let share = |ns: Ns| (ns as f64 / self.ns as f64).min(1.0);
        let mut work: Vec<OtherWork> = self
            .per
            .iter()
            .filter(|e| e.2 > 0)
            .map(|&(device, table, ns)| OtherWork {
                device,
                work: work_name(table).to_string(),
                ns,
                share: share(ns),
            })
            .collect();
        work.sort_by(|a, b| {
            (b.ns.cmp(&a.ns))
                .then(a.device.cmp(&b.device))
                .then(a.work.cmp(&b.work))
        });
        let mut meanwhile = Meanwhile {
            ns: self.ns,
            other_devices: self.other_devices,
            busy_ns: self.busy,
            busy_share: share(self.busy),
            work,
            sentence: String::new(),
        };
        meanwhile.sentence = meanwhile.sentence();
        Some(meanwhile)
    }
}

impl Meanwhile {
    /// In words: `device 1 ran copies for 89.9% of it and kernels for 8.4%; no GPU work for
    /// the other 1.7%`, or that the trace shows no GPU work then.
    pub fn sentence(&self) -> String {
        if self.other_devices == 0 {
            return "the trace shows no GPU work then (it has no other device)".to_string();
        }
        if self.busy_ns <= 0 {
            return "the trace shows no GPU work on the other devices then".to_string();
        }
        let mut devices: Vec<u32> = Vec::new();
        for w in &self.work {
            if !devices.contains(&w.device) {
                devices.push(w.device);
            }
        }
        let per_device: Vec<String> = devices
            .iter()
            .map(|&d| {
                let kinds: Vec<String> = self
                    .work
                    .iter()
                    .filter(|w| w.device == d)
                    .enumerate()
                    .map(|(i, w)| match i {
                        0 => format!("{} for {} of it", w.work, percent(w.share)),
                        _ => format!("{} for {}", w.work, percent(w.share)),
                    })
                    .collect();
                format!("device {d} ran {}", and_list(&kinds))
            })
            .collect();
        let mut s = per_device.join("; ");
        let idle = self.ns - self.busy_ns;
        if idle > 0 {
            s += &format!(
                "; the trace shows no GPU work for the other {}",
                percent(idle as f64 / self.ns as f64)
            );
        }
        s
    }
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// One device's watch over the other devices' work during its command-buffer-full records.
#[derive(Debug, Clone)]
pub struct AheadWatch {
    /// The device's command-buffer-full records, merged: sorted, disjoint.
    records: Vec<(Ns, Ns)>,
    /// Per (other device, kind of work), its work overlapping `records` and ending after the
    /// device's busy time, merged in start order.
    held: Vec<Lane>,
    other_devices: u32,
}

/// One other device's work of one kind: (device, kind, merged intervals in start order).
type Lane = (u32, WorkTable, VecDeque<(Ns, Ns)>);

impl AheadWatch {
    /// The watch over `records` (any order), `None` when there are none; `other_devices` is how
    /// many other devices the trace has.
    pub fn new(mut records: Vec<(Ns, Ns)>, other_devices: u32) -> Option<AheadWatch> {
        records.retain(|r| r.1 > r.0);
        if records.is_empty() {
            return None;
        }
        records.sort_unstable();
        let mut merged: Vec<(Ns, Ns)> = Vec::with_capacity(records.len());
        for (s, e) in records {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        Some(AheadWatch {
            records: merged,
            held: Vec::new(),
            other_devices,
        })
    }

    /// Another device's row of work, in start order; `busy_until` is the end of this device's
    /// busy time so far (its later gaps start no earlier).
    pub fn offer(&mut self, row: &KernelRow, busy_until: Option<Ns>) {
        let (s, e) = (row.start, row.end);
        if e <= s || busy_until.is_some_and(|b| e <= b) {
            return;
        }
        // The first record ending after the row starts must start before it ends.
        let at = self.records.partition_point(|r| r.1 <= s);
        if self.records.get(at).is_none_or(|r| r.0 >= e) {
            return;
        }
        let table = WorkTable::of(row.work);
        let lane = match self
            .held
            .iter()
            .position(|(d, t, _)| *d == row.device && *t == table)
        {
            Some(i) => &mut self.held[i].2,
            None => {
                self.held.push((row.device, table, VecDeque::new()));
                let last = self.held.len() - 1;
                &mut self.held[last].2
            }
        };
        match lane.back_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => lane.push_back((s, e)),
        }
    }

    /// Drops the work ending by `until`: this device is busy up to there.
    pub fn prune(&mut self, until: Ns) {
        for (_, _, lane) in &mut self.held {
            while lane.front().is_some_and(|w| w.1 <= until) {
                lane.pop_front();
            }
        }
    }

    /// Measures the other devices' work inside `pieces` (sorted, disjoint: a gap's `host_ahead`
    /// time) into `into`.
    pub fn measure(&self, pieces: &[(Ns, Ns)], into: &mut MeanwhileTally) {
        into.other_devices = into.other_devices.max(self.other_devices);
        let mut all: Vec<(Ns, Ns)> = Vec::new();
        for &(x, y) in pieces {
            if y <= x {
                continue;
            }
            into.ns = into.ns.saturating_add(y - x);
            all.clear();
            for (device, table, lane) in &self.held {
                let mut ns = 0;
                for &(s, e) in lane.iter().take_while(|w| w.0 < y) {
                    let (a, b) = (s.max(x), e.min(y));
                    if b > a {
                        ns += b - a;
                        all.push((a, b));
                    }
                }
                if ns > 0 {
                    into.add(*device, *table, ns);
                }
            }
            all.sort_unstable();
            let mut end = x;
            for &(a, b) in &all {
                let a = a.max(end);
                if b > a {
                    into.busy += b - a;
                    end = b;
                }
            }
        }
    }

    /// How many intervals are held (for the boundedness tests).
    pub fn held(&self) -> usize {
        self.held.iter().map(|(_, _, l)| l.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Work;

    fn row(device: u32, work: Work, (start, end): (Ns, Ns)) -> KernelRow {
        KernelRow {
            device,
            start,
            end,
            work,
            ..KernelRow::default()
        }
    }

    /// Records 100..200 and 300..400 of device 0; device 1 copies 150..350 and runs a kernel
    /// 320..500; device 2 a memset 0..50 (before any record: not held). host_ahead 100..200
    /// and 300..400: the copy covers 50 + 50, the kernel 80, any work 50 + 100 of the 200.
    #[test]
    fn other_devices_work_inside_host_ahead_time_is_measured_per_device_and_kind() {
        let mut w = AheadWatch::new(vec![(300, 400), (100, 200)], 2).expect("records");
        let copy = Work::Copy {
            kind: 1,
            pageable: false,
        };
        w.offer(&row(2, Work::Memset, (0, 50)), None);
        w.offer(&row(1, copy, (150, 350)), Some(100));
        w.offer(&row(1, Work::Kernel, (320, 500)), Some(100));
        assert_eq!(w.held(), 2);
        let mut t = MeanwhileTally::default();
        w.measure(&[(100, 200), (300, 400)], &mut t);
        let m = t.report().expect("measured");
        assert_eq!((m.ns, m.busy_ns, m.other_devices), (200, 150, 2));
        let got: Vec<(u32, &str, Ns)> = m
            .work
            .iter()
            .map(|w| (w.device, w.work.as_str(), w.ns))
            .collect();
        assert_eq!(got, vec![(1, "copies", 100), (1, "kernels", 80)]);
        assert_eq!(
            m.sentence(),
            "device 1 ran copies for 50.0% of it and kernels for 40.0%; the trace shows no GPU work for the other 25.0%"
        );
        w.prune(400);
        assert_eq!(w.held(), 1, "the kernel ends after 400");
    }

    #[test]
    fn no_other_work_or_no_other_device_is_said_so() {
        let mut t = MeanwhileTally {
            ns: 10,
            ..MeanwhileTally::default()
        };
        let alone = t.report().expect("measured");
        assert!(alone.sentence().contains("no other device"), "{alone:?}");
        t.other_devices = 1;
        let idle = t.report().expect("measured");
        assert_eq!(
            idle.sentence(),
            "the trace shows no GPU work on the other devices then"
        );
        assert!(AheadWatch::new(vec![(5, 5)], 1).is_none());
    }
}

//! What the kernel pass needs to know before it starts: the forward-step and host-prep NVTX
//! ranges (they define the windows detect measures) and the process and thread tables they
//! refer to. The page's analysis worker builds it right after loading NVTX and sends it to the
//! worker that streams the kernel table, so both tables are read at the same time.

use serde::{Deserialize, Serialize};

use crate::detect::names::may_define_windows;
use crate::error::{Error, Result};
use crate::model::{NO_NAME, NameId, Ns, PresentTables, Strings, Trace};

/// The host-side facts the one-pass kernel analyses depend on, without the host tables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelPlan {
    /// `globalPid`s in process-id order, so the kernel pass numbers processes the same way.
    pub processes: Vec<i64>,
    /// `globalTid`s in thread-id order.
    pub threads: Vec<i64>,
    /// The NVTX ranges whose name could be a forward step or a host-prep range, by any profile's
    /// rules (a superset: extra ranges change nothing).
    pub nvtx: Vec<PlanRange>,
    /// Distinct inline texts the ranges refer to (a host-prep name repeats once per step).
    pub texts: Vec<String>,
    pub nvtx_present: bool,
    pub runtime_present: bool,
}

/// One NVTX range as the loader read it: its inline text, else its `textId`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanRange {
    pub start: Ns,
    pub end: Ns,
    pub thread: u32,
    pub event_type: u8,
    /// Index into [`KernelPlan::texts`]: the range's inline text, when it has one.
    pub text: Option<u32>,
    pub text_id: Option<i64>,
}

impl KernelPlan {
    /// The plan of a host trace loaded up to its NVTX ranges.
    pub fn of(host: &Trace) -> KernelPlan {
        let s = &host.strings;
        let relevant: Vec<bool> = s.classify(may_define_windows);
        let matters = |id: NameId| crate::model::flag(&relevant, id);
        let nv = &host.nvtx;
        let mut texts: Vec<String> = Vec::new();
        let mut text_index: std::collections::HashMap<NameId, u32> = Default::default();
        let nvtx = (0..nv.len())
            .filter(|&i| matters(nv.name[i]) || matters(nv.text_id_name[i]))
            .map(|i| {
                let inline = nv.name[i] != nv.text_id_name[i];
                let text = inline.then(|| {
                    *text_index.entry(nv.name[i]).or_insert_with(|| {
                        texts.push(s.get(nv.name[i]).to_string());
                        (texts.len() - 1) as u32
                    })
                });
                PlanRange {
                    start: nv.start[i],
                    end: nv.end[i],
                    thread: nv.thread[i],
                    event_type: nv.event_type[i],
                    text,
                    text_id: s.sqlite_id(nv.text_id_name[i]),
                }
            })
            .collect();
        KernelPlan {
            processes: host.processes.global_pid.clone(),
            threads: host.threads.global_tid.clone(),
            nvtx,
            texts,
            nvtx_present: host.present.nvtx,
            runtime_present: host.present.runtime,
        }
    }

    /// The host trace the kernel pass works with: `strings` (its own copy of `StringIds`, so
    /// kernel name ids agree) with the plan's ranges, processes and threads.
    pub fn into_trace(self, strings: Strings) -> Trace {
        let mut t = Trace {
            strings,
            present: PresentTables {
                nvtx: self.nvtx_present,
                runtime: self.runtime_present,
                ..PresentTables::default()
            },
            ..Trace::default()
        };
        for gpid in self.processes {
            t.processes.intern(gpid);
        }
        for gtid in self.threads {
            t.threads.intern(gtid, &mut t.processes);
        }
        let texts: Vec<NameId> = self.texts.iter().map(|x| t.strings.intern(x)).collect();
        for r in self.nvtx {
            let by_id = r.text_id.map_or(NO_NAME, |id| t.strings.resolve(id));
            let inline = r.text.and_then(|i| texts.get(i as usize).copied());
            let n = &mut t.nvtx;
            n.start.push(r.start);
            n.end.push(r.end);
            n.thread.push(r.thread);
            n.event_type.push(r.event_type);
            n.name.push(inline.unwrap_or(by_id));
            n.text_id_name.push(by_id);
        }
        t
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<KernelPlan> {
        serde_json::from_slice(bytes).map_err(|e| Error::Internal {
            detail: format!("the kernel pass's plan did not decode: {e}"),
        })
    }
}

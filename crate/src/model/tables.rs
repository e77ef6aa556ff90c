//! Processes and threads, keyed by `globalPid` / `globalTid`.

use hashbrown::HashMap;

use super::ids::{GLOBAL_PID_MASK, NO_NAME, NameId, ProcessIdx, ThreadIdx, os_pid};
use serde::Serialize;

/// Processes seen in any event table, keyed by `globalPid`.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Processes {
    /// `globalPid` (upper bits of `globalTid`), as a string because it exceeds 2^53.
    #[serde(skip)]
    pub global_pid: Vec<i64>,
    /// OS process id.
    pub pid: Vec<u32>,
    /// Process name from `PROCESSES`, when present.
    pub name: Vec<String>,
    #[serde(skip)]
    index: HashMap<i64, ProcessIdx>,
}

impl Processes {
    /// The index of the process holding `global_id` (a globalPid or a globalTid), added if new.
    pub fn intern(&mut self, global_id: i64) -> ProcessIdx {
        let gpid = global_id & GLOBAL_PID_MASK;
        if let Some(&i) = self.index.get(&gpid) {
            return i;
        }
        let i = self.global_pid.len() as ProcessIdx;
        self.global_pid.push(gpid);
        self.pid.push(os_pid(gpid));
        self.name.push(String::new());
        self.index.insert(gpid, i);
        i
    }

    /// Interns every process of `other` (named as there when unnamed here), in its order: the
    /// ids `other`'s processes take here, by their id there. A table read apart from the rest
    /// (the kernels, on a thread of their own) joins the others' numbering so.
    pub fn absorb(&mut self, other: &Processes) -> Vec<ProcessIdx> {
        (0..other.len())
            .map(|i| {
                let p = self.intern(other.global_pid[i]);
                let name = &mut self.name[p as usize];
                if name.is_empty() {
                    name.clone_from(&other.name[i]);
                }
                p
            })
            .collect()
    }

    pub fn find(&self, global_id: i64) -> Option<ProcessIdx> {
        self.index.get(&(global_id & GLOBAL_PID_MASK)).copied()
    }

    pub fn len(&self) -> usize {
        self.global_pid.len()
    }

    pub fn is_empty(&self) -> bool {
        self.global_pid.is_empty()
    }
}

/// Threads seen in the runtime and NVTX tables, keyed by `globalTid`.
#[derive(Debug, Default, Clone)]
pub struct Threads {
    pub global_tid: Vec<i64>,
    pub process: Vec<ProcessIdx>,
    /// Thread name from `ThreadNames`, or `NO_NAME`.
    pub name: Vec<NameId>,
    index: HashMap<i64, ThreadIdx>,
}

impl Threads {
    /// The index of `global_tid`, added (with its process) if new.
    pub fn intern(&mut self, global_tid: i64, processes: &mut Processes) -> ThreadIdx {
        if let Some(&i) = self.index.get(&global_tid) {
            return i;
        }
        let i = self.global_tid.len() as ThreadIdx;
        self.global_tid.push(global_tid);
        self.process.push(processes.intern(global_tid));
        self.name.push(NO_NAME);
        self.index.insert(global_tid, i);
        i
    }

    pub fn find(&self, global_tid: i64) -> Option<ThreadIdx> {
        self.index.get(&global_tid).copied()
    }

    pub fn len(&self) -> usize {
        self.global_tid.len()
    }

    pub fn is_empty(&self) -> bool {
        self.global_tid.is_empty()
    }
}

//! Hand-built traces for unit tests: a few rows whose answers are worked out by hand.

use crate::model::{NameId, Ns, Trace};

/// One process (pid 7) with one thread; rows appended by name (on another thread and process
/// after [`TraceBuilder::thread`]).
pub struct TraceBuilder {
    pub trace: Trace,
    thread: u32,
}

impl TraceBuilder {
    pub fn new() -> TraceBuilder {
        let mut trace = Trace::default();
        let gtid = (7i64 << 24) | 7;
        let thread = trace.threads.intern(gtid, &mut trace.processes);
        trace.present.kernels = true;
        trace.present.runtime = true;
        trace.present.nvtx = true;
        trace.present.memcpy = true;
        TraceBuilder { trace, thread }
    }

    /// Rows appended from now on are on thread `tid` of process `pid`.
    pub fn thread(&mut self, pid: i64, tid: i64) {
        self.thread = self
            .trace
            .threads
            .intern((pid << 24) | tid, &mut self.trace.processes);
    }

    fn name(&mut self, s: &str) -> NameId {
        self.trace.strings.intern(s)
    }

    /// A runtime call; returns its correlation id (row + 1).
    pub fn call(&mut self, name: &str, start: Ns, end: Ns) -> u32 {
        let name = self.name(name);
        let rt = &mut self.trace.runtime;
        let corr = rt.len() as u32 + 1;
        rt.start.push(start);
        rt.end.push(end);
        rt.thread.push(self.thread);
        rt.correlation.push(corr);
        rt.name.push(name);
        corr
    }

    /// A kernel on device 0, stream 7, launched by call `corr` (0: none).
    pub fn kernel(&mut self, name: &str, start: Ns, end: Ns, corr: u32) {
        self.kernel_on((0, 7), name, (start, end), corr);
    }

    /// A kernel of the current thread's process on `(device, stream)`.
    pub fn kernel_on(
        &mut self,
        (device, stream): (u32, u32),
        name: &str,
        (start, end): (Ns, Ns),
        corr: u32,
    ) {
        let name = self.name(name);
        let process = self.trace.threads.process[self.thread as usize];
        let k = &mut self.trace.kernels;
        k.start.push(start);
        k.end.push(end);
        k.device.push(device);
        k.stream.push(stream);
        k.process.push(process);
        k.correlation.push(corr);
        k.short_name.push(name);
        k.demangled_name.push(name);
    }

    /// A push/pop NVTX range on the thread.
    pub fn range(&mut self, name: &str, start: Ns, end: Ns) {
        let name = self.name(name);
        let n = &mut self.trace.nvtx;
        n.start.push(start);
        n.end.push(end);
        n.thread.push(self.thread);
        n.event_type.push(59);
        n.domain.push(0);
        n.name.push(name);
        n.text_id_name.push(name);
    }

    /// A memcpy of `kind` (copyKind) with source/destination memory kinds, issued by `corr`.
    pub fn memcpy(&mut self, kind: u8, src_mem: u8, dst_mem: u8, corr: u32) {
        let m = &mut self.trace.memcpy;
        let t = 1_000 * (m.len() as Ns + 1);
        m.start.push(t);
        m.end.push(t + 500);
        m.device.push(0);
        m.stream.push(7);
        m.process.push(0);
        m.correlation.push(corr);
        m.bytes.push(4096);
        m.kind.push(kind);
        m.src_mem.push(src_mem);
        m.dst_mem.push(dst_mem);
    }

    /// Two kernels (400..401 µs and 500..501 µs) with a blocking sync between them, allocations
    /// before the first (set-up) and after the last (tear-down): 100 + 200 µs before, 300 + 300
    /// µs after, none inside the kernel window.
    pub fn setup_and_teardown() -> TraceBuilder {
        let mut b = TraceBuilder::new();
        b.call("cudaHostAlloc_v3020", 0, 100_000);
        b.call("cudaMalloc_v3020", 100_000, 300_000);
        let l1 = b.call("cudaLaunchKernel_v7000", 300_000, 300_010);
        b.kernel("a", 400_000, 401_000, l1);
        b.call("cudaStreamSynchronize_v3020", 401_000, 499_000);
        let l2 = b.call("cudaLaunchKernel_v7000", 499_000, 499_010);
        b.kernel("b", 500_000, 501_000, l2);
        b.call("cudaFree_v3020", 600_000, 900_000);
        b.call("cudaFreeHost_v3020", 900_000, 1_200_000);
        b
    }
}

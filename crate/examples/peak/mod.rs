//! The process's peak resident memory, for the examples that print figures. Linux only.

pub type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The peak resident set so far (`VmHWM` of /proc/self/status), in MiB.
pub fn peak_mib() -> Res<f64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .ok_or("no VmHWM in /proc/self/status")?;
    Ok(kib / 1024.0)
}

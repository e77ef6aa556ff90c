//! What to call a rank: what NCCL said (its communicator ranges' payloads), else a rank number
//! in the file's name, else its process and device.

use serde::Serialize;

use crate::model::NcclRank;

/// Which source named a rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum NamedBy {
    /// The payload of NCCL's `ncclCommInitRank*` NVTX range in its process.
    #[serde(rename = "nccl")]
    Nccl,
    /// A rank number in the file's name (`rank3`, `_r3`, `procid3`), the file holding one rank.
    #[serde(rename = "file-name")]
    FileName,
    /// Its process id and CUDA device.
    #[serde(rename = "process-device")]
    ProcessDevice,
}

/// A rank's name and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub name: String,
    pub number: Option<u32>,
    pub nranks: Option<u32>,
    pub by: NamedBy,
}

/// What NCCL said of the rank of process `pid` on `device`: of its communicators, the one with
/// most ranks (the world, rather than a tensor-parallel group); among a process's devices
/// (one process driving several GPUs), the payload whose CUDA device is `device`.
pub fn by_nccl(said: &[NcclRank], pid: u32, device: u32) -> Option<Named> {
    let mine: Vec<&NcclRank> = said.iter().filter(|r| r.pid == pid).collect();
    let devices = {
        let mut d: Vec<u32> = mine.iter().map(|r| r.cuda_device).collect();
        d.sort_unstable();
        d.dedup();
        d.len()
    };
    let best = mine
        .iter()
        .filter(|r| devices < 2 || r.cuda_device == device)
        .max_by_key(|r| (r.nranks, std::cmp::Reverse(r.rank)))?;
    Some(by_nccl_name(best.rank, best.nranks))
}

/// The name of rank `rank` of a communicator of `nranks`, as NCCL said.
pub fn by_nccl_name(rank: u32, nranks: u32) -> Named {
    Named {
        name: format!("rank {rank}"),
        number: Some(rank),
        nranks: Some(nranks),
        by: NamedBy::Nccl,
    }
}

/// A rank number in a file's name, as `nsys profile -o trace_%q{RANK}` and the like write it:
/// `rank3`, `rank_3`, `RANK-3`, `procid3` (`SLURM_PROCID`), or `r3` between separators
/// (`trace_r3.sqlite`). Only the file's own name counts (not its folder); a bare number
/// (`report1`, nsys's default) is not a rank.
pub fn number_in_file_name(path: &str) -> Option<u32> {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let stem = name.split('.').next().unwrap_or(name).to_ascii_lowercase();
    for word in ["rank", "procid"] {
        let mut from = 0;
        while let Some(at) = stem.get(from..).and_then(|s| s.find(word)) {
            let after = from + at + word.len();
            let rest = stem.get(after..).unwrap_or("");
            let rest = rest.strip_prefix(['_', '-', '=']).unwrap_or(rest);
            if let Some(n) = leading_number(rest) {
                return Some(n);
            }
            from = after;
        }
    }
    let bytes = stem.as_bytes();
    let sep = |b: u8| matches!(b, b'_' | b'-' | b'.');
    for (i, _) in stem.match_indices('r') {
        let before_ok = i == 0 || bytes.get(i - 1).copied().is_some_and(sep);
        let rest = stem.get(i + 1..).unwrap_or("");
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let after_ok = rest.as_bytes().get(digits).is_none_or(|&b| sep(b));
        if before_ok && digits > 0 && after_ok {
            return leading_number(rest);
        }
    }
    None
}

/// The decimal number `s` starts with.
fn leading_number(s: &str) -> Option<u32> {
    let digits: &str = &s[..s.bytes().take_while(u8::is_ascii_digit).count()];
    digits.parse().ok()
}

/// The name of a rank known only by its process and device.
pub fn by_process(pid: u32, device: u32) -> Named {
    Named {
        name: format!("pid {pid} GPU {device}"),
        number: None,
        nranks: None,
        by: NamedBy::ProcessDevice,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_numbers_in_file_names() {
        for (path, n) in [
            ("out/trace_rank3.sqlite", Some(3)),
            ("RANK_12.nsys-rep.sqlite", Some(12)),
            ("job-rank-7", Some(7)),
            ("profile_r3.sqlite", Some(3)),
            ("r0.sqlite", Some(0)),
            ("run_procid5.sqlite", Some(5)),
            ("node2_rank1_step4.sqlite", Some(1)),
            ("report1.sqlite", None),
            ("trace_3.sqlite", None),
            ("rank_dir3/report1.sqlite", None),
            ("ranks.sqlite", None),
            ("mfu_2gpu_before.sqlite", None),
            ("err3.sqlite", None),
            ("", None),
        ] {
            assert_eq!(number_in_file_name(path), n, "{path}");
        }
    }

    #[test]
    fn nccl_names_the_world_rank_of_a_process() {
        let r = |pid, comm, nranks, rank, dev| NcclRank {
            pid,
            communicator: comm,
            nranks,
            rank,
            cuda_device: dev,
        };
        // A TP group of 2 and the world of 8: the world's rank names it.
        let said = [r(10, 1, 2, 1, 0), r(10, 2, 8, 5, 0), r(11, 2, 8, 4, 0)];
        assert_eq!(by_nccl(&said, 10, 1).map(|n| n.name), Some("rank 5".into()));
        assert_eq!(by_nccl(&said, 11, 3).and_then(|n| n.nranks), Some(8));
        assert_eq!(by_nccl(&said, 12, 0), None);
        // One process, two GPUs: by device.
        let said = [r(20, 3, 2, 0, 0), r(20, 3, 2, 1, 1)];
        assert_eq!(by_nccl(&said, 20, 1).and_then(|n| n.number), Some(1));
        assert_eq!(by_nccl(&said, 20, 2), None);
    }
}

//! The processes under a process, read from /proc: what `-p PID` records besides PID itself
//! (its children, theirs, ... as they are at the attach; the ones forked later the kernel half
//! follows).

use std::collections::HashMap;

/// `pid` and its descendants now, parents before children. A process that vanishes while
/// /proc is read is simply not there.
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
            if let Some(ppid) = parent_of(&stat) {
                children.entry(ppid).or_default().push(p);
            }
        }
    }
    tree(pid, &children)
}

/// The parent's pid in a /proc/PID/stat line: the field after the state, after the command's
/// closing parenthesis (a command may hold spaces and parentheses).
fn parent_of(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// `root` and everything under it in `children`, parents first; each at most once.
fn tree(root: u32, children: &HashMap<u32, Vec<u32>>) -> Vec<u32> {
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        for &c in children.get(&out[i]).map(Vec::as_slice).unwrap_or(&[]) {
            if !out.contains(&c) {
                out.push(c);
            }
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_and_trees() {
        assert_eq!(parent_of("42 (a b) c)) S 7 42 42 0"), Some(7));
        assert_eq!(parent_of("garbage"), None);
        let children: HashMap<u32, Vec<u32>> = [(1, vec![2, 3]), (3, vec![4]), (4, vec![1])].into();
        assert_eq!(tree(1, &children), vec![1, 2, 3, 4], "a loop is followed once");
        assert_eq!(tree(9, &children), vec![9]);
        // This test's own process is found under its parent.
        assert!(descendants(std::os::unix::process::parent_id()).contains(&std::process::id()));
    }
}

//! The failed I/Os a job went on after (`--continue-on-error`, fio's continue_on_error): how
//! many, and the first one with its call, errno, file and place; fio's `total_err` and
//! `first_error`. A job that ends at its first error has none: its `error` names it.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IoErrors {
    /// Failed I/Os the job went on after, all its threads together.
    pub count: u64,
    /// The first of them (the earliest of its threads' firsts).
    pub first: FirstError,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FirstError {
    /// The call in words: `read`, `write`, `flush`, `trim`, ...
    pub call: String,
    /// Its errno, and the errno's name (`ENOSPC`; the number where none is known).
    pub errno: i32,
    pub errno_name: String,
    pub file: String,
    /// Where and how long, for reads, writes and trims.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub len: Option<u64>,
    /// When it happened, ns since the Unix epoch.
    pub unix_ns: u64,
    /// The whole error in words.
    pub text: String,
}

impl IoErrors {
    /// Another thread's errors added: the counts summed, the earlier first kept.
    pub fn add(&mut self, o: &IoErrors) {
        if self.count == 0 || (o.count > 0 && o.first.unix_ns < self.first.unix_ns) {
            self.first = o.first.clone();
        }
        self.count += o.count;
    }
}

impl fmt::Display for IoErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed I/O gone on after; the first: {}", self.count, self.first.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_add_up_and_the_earliest_first_stays() {
        let e = |count, ns, text: &str| IoErrors {
            count,
            first: FirstError { unix_ns: ns, text: text.into(), ..Default::default() },
        };
        let mut a = IoErrors::default();
        a.add(&e(3, 20, "b"));
        a.add(&e(2, 10, "a"));
        a.add(&e(0, 0, ""));
        a.add(&e(1, 30, "c"));
        assert_eq!((a.count, a.first.text.as_str()), (6, "a"));
        assert_eq!(a.to_string(), "6 failed I/O gone on after; the first: a");
    }
}

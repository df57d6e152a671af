//! The errors a block job goes on after (`--continue-on-error`, `--ignore-error`: fio's
//! continue_on_error and ignore_error), as a wrapper around its source, outermost: a call
//! that failed with an errno its direction's list holds is counted (how many, and the first
//! with its call, errno, file and place) instead of ending the job; any other failure ends it
//! as before. Only a job with such a list runs the wrapper, and it looks at nothing but
//! failures, so a job's I/O that succeeds costs one branch more.

use super::{Call, Source, SourceError};
use crate::error::{CallError, Cause};
use iolab_model::{FirstError, IoErrors};
use iolab_spec::on_error::{errno_name, OnError};
use std::io;

pub struct GoingOn<S> {
    inner: S,
    on: OnError,
    errors: IoErrors,
}

impl<S: Source> GoingOn<S> {
    pub fn new(inner: S, on: OnError) -> Self {
        GoingOn { inner, on, errors: IoErrors::default() }
    }

    /// Whether the job goes on after `e`, a failure of `call` (counted if so).
    #[cold]
    fn goes_on(&mut self, call: &Call, e: &SourceError) -> bool {
        let SourceError::Call(CallError { op, path, at, cause: Cause::Os(os) }) = e else { return false };
        let (Some(errno), Call::Data { kind, .. }) = (os.raw_os_error(), call) else { return false };
        if !self.on.goes_on(kind.reads(), errno) {
            return false;
        }
        if self.errors.count == 0 {
            self.errors.first = FirstError {
                call: op.to_string(),
                errno,
                errno_name: errno_name(errno),
                file: path.clone(),
                offset: at.map(|a| a.1),
                len: at.map(|a| a.0 as u64),
                unix_ns: iolab_verify::now_ns(),
                text: e.to_string(),
            };
        }
        self.errors.count += 1;
        true
    }
}

impl<S: Source> Source for GoingOn<S> {
    forward_to_inner!(plain, start, next);
    #[inline]
    fn completed(&mut self, call: &Call, buf: &[u8], result: &io::Result<usize>) -> Result<(), SourceError> {
        match self.inner.completed(call, buf, result) {
            Err(e) if self.goes_on(call, &e) => Ok(()),
            r => r,
        }
    }
    fn io_errors(&self) -> Option<IoErrors> {
        (self.errors.count > 0).then(|| self.errors.clone())
    }
}

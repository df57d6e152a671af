//! Flow between jobs around any source (`--flow`, fio's flow.c): the threads of a phase's jobs
//! that share a flow id keep their I/O counts in proportion to their weights. Each thread
//! counts its own I/Os and the flow's (one atomic counter, starting at 1 as fio's does); a
//! thread whose share of the flow's I/Os is above its share of the weights stalls (what it has
//! in flight completed, then `sleep`, as fio's io_u_quiesce then usleep: once found ahead it
//! sleeps even if the others caught up while it drained) and looks again. A thread leaves the
//! flow (its weight is taken off) when its source is dropped, so one that ended holds no one
//! back. A wrapper, chosen only for a job with a flow.

use super::{Call, Ctx, Next, Source};
use crate::clock::Stamp;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// One flow of a phase: the I/Os issued in it, and the weights of the threads in it.
#[derive(Debug)]
pub struct Flow {
    ios: AtomicU64,
    weights: AtomicU64,
}

impl Flow {
    /// A flow whose threads weigh `weights` in all (every thread of its jobs, counted before
    /// any starts, as fio counts every job at its setup).
    pub fn new(weights: u64) -> Arc<Flow> {
        Arc::new(Flow { ios: AtomicU64::new(1), weights: AtomicU64::new(weights) })
    }
}

pub struct Flowing<S> {
    inner: S,
    flow: Arc<Flow>,
    weight: u64,
    sleep: Duration,
    /// This thread's I/Os in the flow.
    mine: u64,
    /// Sleeping until this instant after a stall.
    until: Option<Stamp>,
    /// Found ahead: draining what is in flight, then sleeping whatever the flow does meanwhile
    /// (fio's io_u_quiesce then usleep, with no second look between them).
    stalled: bool,
}

impl<S: Source> Flowing<S> {
    pub fn new(inner: S, flow: Arc<Flow>, f: iolab_spec::flow::Flow) -> Self {
        Flowing { inner, flow, weight: f.weight as u64, sleep: f.sleep, mine: 0, until: None, stalled: false }
    }

    /// fio's flow_threshold_exceeded: this thread's share of the flow's I/Os above its share
    /// of the weights.
    fn ahead(&self) -> bool {
        let ios = self.flow.ios.load(Ordering::Relaxed).max(1) as f64;
        let weights = self.flow.weights.load(Ordering::Relaxed).max(1) as f64;
        self.mine as f64 / ios > self.weight as f64 / weights
    }
}

impl<S> Drop for Flowing<S> {
    fn drop(&mut self) {
        self.flow.weights.fetch_sub(self.weight, Ordering::Relaxed);
    }
}

/// A read or a write (what fio counts).
fn is_block(call: &Call) -> bool {
    matches!(call, Call::Data { kind, .. } if kind.reads() || kind.writes())
}

impl<S: Source> Source for Flowing<S> {
    forward_to_inner!(plain, start, completed, io_errors);

    fn next(&mut self, ctx: &mut Ctx) -> Next {
        if !ctx.ending {
            if let Some(t) = self.until {
                if ctx.now < t {
                    return Next::WaitUntil(t);
                }
                self.until = None;
            }
            if self.stalled || self.ahead() {
                if self.sleep.is_zero() {
                    // fio retries at once; iolab reaps or yields a moment meanwhile.
                    return Next::WaitUntil(ctx.now + Duration::from_micros(10));
                }
                self.stalled = true;
                if ctx.inflight > 0 {
                    return Next::Drain;
                }
                self.stalled = false;
                let t = ctx.now + self.sleep;
                self.until = Some(t);
                return Next::WaitUntil(t);
            }
        }
        let next = self.inner.next(ctx);
        if let Next::Issue(i) = &next {
            if is_block(&i.call) {
                self.mine += 1;
                self.flow.ios.fetch_add(1, Ordering::Relaxed);
            }
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use crate::{run_plan, Control, NoSink};
    use iolab_spec::{Bytes, JobPatch, Phase, Plan, Rw};
    use std::time::Duration;

    /// Two jobs on real files for 2 s: 4 KiB reads with flow weight 1 and 64 KiB writes with
    /// weight 3 (fio's flow.fio shape): the writes make about three I/Os for each read. Without
    /// the flow each runs flat out, and the small reads far outnumber the large writes.
    #[test]
    fn jobs_in_a_flow_keep_their_counts_in_proportion_to_their_weights() {
        let dir = tempfile::tempdir().unwrap();
        let run = |flows: Option<(u32, u32)>| {
            let job = |name: &str, rw: Rw, weight: Option<u32>, bs: u64| {
                JobPatch {
                    target: Some(dir.path().join(name)),
                    rw: Some(rw),
                    bs: Some(iolab_spec::BlockSizes::single(Bytes::kib(bs))),
                    size: Some(Bytes::mib(4)),
                    runtime: Some(Duration::from_secs(2)),
                    flow: weight,
                    flow_sleep: weight.map(|_| Duration::from_micros(200)),
                    ..Default::default()
                }
                .resolve(name)
                .unwrap()
            };
            // The second job's I/Os are 16 times larger: alone it makes far fewer.
            let jobs =
                vec![job("a", Rw::RandRead, flows.map(|f| f.0), 4), job("b", Rw::RandWrite, flows.map(|f| f.1), 64)];
            let plan = Plan { phases: vec![Phase { name: "f".into(), jobs }] };
            plan.validate().unwrap();
            let r = run_plan(&plan, &Control::default(), &mut NoSink).unwrap();
            let p = &r.phases[0];
            (p.jobs[0].total.read().ops as f64, p.jobs[1].total.write().ops as f64)
        };
        let (a, b) = run(Some((1, 3)));
        let ratio = b / a;
        assert!((2.5..=3.5).contains(&ratio), "weights 1:3 give {a} and {b} I/Os ({ratio:.2})");
        let (a, b) = run(None);
        assert!(b / a < 2.0, "without a flow: {a} and {b}");
    }

    /// An endless reader of 4 KiB blocks.
    struct Reads;

    impl super::Source for Reads {
        fn buffer_len(&self) -> usize {
            4096
        }
        fn next(&mut self, _ctx: &mut super::Ctx) -> super::Next {
            super::Next::Issue(crate::source::Issue::now(super::Call::Data {
                kind: crate::source::OpKind::Read,
                file: 0,
                offset: 0,
                len: 4096,
            }))
        }
        fn completed(
            &mut self,
            _: &super::Call,
            _: &[u8],
            _: &std::io::Result<usize>,
        ) -> Result<(), crate::source::SourceError> {
            Ok(())
        }
    }

    /// Found ahead with I/Os in flight, a thread drains them and then sleeps its flow_sleep,
    /// even when the others caught up while it drained: fio's io_u_quiesce then usleep, with no
    /// second look between them (looking again let iolab's flowed jobs run 10-20% faster than
    /// fio's).
    #[test]
    fn a_thread_found_ahead_drains_then_sleeps_whatever_happens_meanwhile() {
        use super::{Ctx, Flowing, Next, Source};
        use crate::clock::Stamp;
        use crate::names::Names;
        let flow = super::Flow::new(2);
        let f = iolab_spec::flow::Flow { id: 0, weight: 1, sleep: Duration::from_millis(1) };
        let mut a = Flowing::new(Reads, flow.clone(), f);
        let mut names = Names::default();
        let mut at = |s: &mut Flowing<Reads>, ms: u64, inflight: usize| {
            let mut ctx = Ctx { now: Stamp(ms * 1_000_000), inflight, ending: false, names: &mut names };
            s.next(&mut ctx)
        };
        // Alone in a flow of two equal weights (its counter from 1), its second I/O puts it
        // ahead (2 of 3 > 1/2).
        assert!(matches!(at(&mut a, 0, 0), Next::Issue(_)));
        assert!(matches!(at(&mut a, 0, 1), Next::Issue(_)));
        assert!(matches!(at(&mut a, 0, 2), Next::Drain));
        // The other thread's I/Os meanwhile: no longer ahead, yet it sleeps once drained.
        flow.ios.fetch_add(10, std::sync::atomic::Ordering::Relaxed);
        assert!(matches!(at(&mut a, 0, 1), Next::Drain));
        assert!(matches!(at(&mut a, 0, 0), Next::WaitUntil(t) if t == Stamp(1_000_000)));
        // Awake, behind: it issues again.
        assert!(matches!(at(&mut a, 1, 0), Next::Issue(_)));
    }
}

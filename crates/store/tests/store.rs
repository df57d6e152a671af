//! The results database on real files: migrations, round trips of real runs with their
//! histograms, files it must refuse and leave untouched, selectors, and concurrent writers.

use iolab_model::{RunResult, Status};
use iolab_spec::{JobPatch, Phase, Plan, Rw};
use iolab_store::{schema, ListFilter, Store, StoreError};
use iolab_workload::{run_plan_kept, Control, NoSink};
use rusqlite::Connection;
use std::collections::BTreeMap;
use std::time::Duration;

fn real_run(dir: &std::path::Path) -> RunResult {
    let job = JobPatch {
        target: Some(dir.join("f")),
        size: Some(iolab_spec::Bytes::mib(4)),
        rw: Some(Rw::RandRw),
        runtime: Some(Duration::from_millis(1500)),
        fsync_every: Some(50),
        ..Default::default()
    }
    .resolve("mixed")
    .unwrap();
    let plan = Plan { phases: vec![Phase { name: "p1".into(), jobs: vec![job] }] };
    let ctl = Control { sample_interval: Some(Duration::from_millis(250)), ..Default::default() };
    run_plan_kept(&plan, &ctl, &mut NoSink).unwrap()
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn save(store: &Store, r: &RunResult, l: &[(&str, &str)]) -> i64 {
    let host = iolab_sysstat::host_facts(None);
    let id = store.begin_run(iolab_model::RunKind::Run, "test", &labels(l), &host, &r.plan, r.started_unix_s).unwrap();
    for (i, p) in r.phases.iter().enumerate() {
        for t in &p.timeline {
            store.add_tick(id, i, &host.hostname, t).unwrap();
        }
        store.add_phase(id, i, &host.hostname, p).unwrap();
    }
    store.finish_run(id, r.status, r.error.as_deref(), r.started_unix_s + 2.0).unwrap();
    id
}

#[test]
fn migrates_from_empty_and_from_every_earlier_version() {
    let dir = tempfile::tempdir().unwrap();
    for from in 0..schema::VERSION {
        let path = dir.path().join(format!("v{from}.db"));
        {
            let c = Connection::open(&path).unwrap();
            for (i, m) in schema::MIGRATIONS.iter().take(from as usize).enumerate() {
                c.execute_batch(m).unwrap();
                c.pragma_update(None, "user_version", i as u32 + 1).unwrap();
            }
        }
        let s = Store::open(&path).unwrap();
        assert_eq!(s.schema_version(), schema::VERSION, "from version {from}");
        // Opening again changes nothing.
        drop(s);
        assert_eq!(Store::open(&path).unwrap().schema_version(), schema::VERSION);
    }
}

#[test]
fn a_real_run_round_trips_with_histograms() {
    let dir = tempfile::tempdir().unwrap();
    let r = real_run(dir.path());
    let store = Store::open(&dir.path().join("results.db")).unwrap();
    let id = save(&store, &r, &[("config", "ext4 barrier=0")]);
    let back = store.load(id).unwrap();
    assert_eq!(back.labels["config"], "ext4 barrier=0");
    assert_eq!(back.result.status, Status::Complete);
    assert_eq!(back.result.plan, r.plan);
    let (a, b) = (&r.phases[0], &back.result.phases[0]);
    assert_eq!(a.total.read().ops, b.total.read().ops);
    assert_eq!(a.total.write().bytes, b.total.write().bytes);
    assert_eq!(a.total.read().lat_ns, b.total.read().lat_ns);
    assert_eq!(a.total.sync().ops, b.total.sync().ops);
    assert_eq!(a.timeline.len(), b.timeline.len());
    assert_eq!(a.jobs[0].total.write().iops, b.jobs[0].total.write().iops);
    let (sa, sb) = (a.system.as_ref().unwrap(), b.system.as_ref().unwrap());
    assert_eq!(sa.samples.len(), sb.samples.len());
    assert_eq!(sa.mean.cpu, sb.mean.cpu);
    // Histograms come back whole: the same quantiles, and they still merge.
    let (ha, hb) = (a.total.read().hist.as_ref().unwrap(), b.total.read().hist.as_ref().unwrap());
    for q in [0.5, 0.9, 0.99, 0.999] {
        assert_eq!(ha.value_at_quantile(q), hb.value_at_quantile(q));
    }
    let mut merged = hb.clone();
    merged.add(b.jobs[0].total.read().hist.as_ref().unwrap()).unwrap();
    assert_eq!(merged.len(), 2 * ha.len());
}

fn bytes(p: &std::path::Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

#[test]
fn newer_corrupt_and_foreign_files_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let newer = dir.path().join("newer.db");
    {
        let c = Connection::open(&newer).unwrap();
        c.execute_batch("CREATE TABLE runs (id INTEGER PRIMARY KEY);").unwrap();
        c.pragma_update(None, "user_version", schema::VERSION + 7).unwrap();
    }
    let before = bytes(&newer);
    let e = Store::open(&newer).err().unwrap();
    assert!(matches!(e, StoreError::Newer { .. }) && e.to_string().contains("newer iolab"), "{e}");
    assert_eq!(bytes(&newer), before);

    let corrupt = dir.path().join("corrupt.db");
    std::fs::write(&corrupt, b"this is not an sqlite file, it is a grocery list: eggs, milk".repeat(100)).unwrap();
    let before = bytes(&corrupt);
    let e = Store::open(&corrupt).err().unwrap();
    assert!(matches!(e, StoreError::Corrupt { .. }) && e.to_string().contains("left as it is"), "{e}");
    assert_eq!(bytes(&corrupt), before);

    let foreign = dir.path().join("other-app.db");
    {
        let c = Connection::open(&foreign).unwrap();
        c.execute_batch("CREATE TABLE inventory (sku TEXT); INSERT INTO inventory VALUES ('a');").unwrap();
    }
    let before = bytes(&foreign);
    let e = Store::open(&foreign).err().unwrap();
    assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
    assert_eq!(bytes(&foreign), before);

    let missing = dir.path().join("nope.db");
    assert!(matches!(Store::open_existing(&missing).err().unwrap(), StoreError::Missing(_)));
    assert!(!missing.exists());
}

#[test]
fn selectors_and_listing() {
    let dir = tempfile::tempdir().unwrap();
    let r = real_run(dir.path());
    let store = Store::open(&dir.path().join("results.db")).unwrap();
    let a = save(&store, &r, &[("config", "ext4"), ("proto", "A")]);
    let b = save(&store, &r, &[("config", "drbd"), ("proto", "A")]);
    let c = save(&store, &r, &[("config", "drbd"), ("proto", "C")]);
    assert_eq!(store.resolve("last").unwrap(), [c]);
    assert_eq!(store.resolve("last~2").unwrap(), [a]);
    assert_eq!(store.resolve(&b.to_string()).unwrap(), [b]);
    assert_eq!(store.resolve("config=drbd").unwrap(), [b, c]);
    assert_eq!(store.resolve("config=drbd,proto=C").unwrap(), [c]);
    assert_eq!(store.resolve_all(&["last".into(), "config=drbd".into()]).unwrap(), [c, b]);
    for bad in ["999", "last~9", "config=zfs"] {
        let e = store.resolve(bad).unwrap_err();
        assert!(matches!(e, StoreError::NotFound(_)) && e.to_string().contains("iolab runs"), "{e}");
    }
    assert!(matches!(store.resolve("bogus").unwrap_err(), StoreError::BadSelector(_)));
    let f = ListFilter { labels: vec![("proto".into(), "A".into())], ..Default::default() };
    assert_eq!(store.list(&f).unwrap().iter().map(|r| r.id).collect::<Vec<_>>(), [a, b]);
    assert_eq!(store.remove(&[b]).unwrap(), 1);
    assert_eq!(store.resolve("config=drbd").unwrap(), [c]);
    assert!(store.load(b).is_err());
}

/// Every kind word an iolab has stored reads back as its kind; a word this iolab does not know
/// (a newer iolab's) is refused naming the run and the word, in `list` and `load` alike.
#[test]
fn run_kinds_read_back_from_their_words_and_an_unknown_word_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let store = Store::open(&path).unwrap();
    let host = iolab_sysstat::host_facts(None);
    let plan = Plan { phases: Vec::new() };
    let mut ids = Vec::new();
    for k in iolab_model::RunKind::ALL {
        ids.push((k, store.begin_run(k, "k", &BTreeMap::new(), &host, &plan, 1.0).unwrap()));
    }
    let c = Connection::open(&path).unwrap();
    for (k, id) in &ids {
        let word: String = c.query_row("SELECT kind FROM runs WHERE id = ?1", [id], |r| r.get(0)).unwrap();
        assert_eq!(word, k.as_str(), "stored as today's word");
        assert_eq!(store.load(*id).unwrap().kind, *k);
    }
    let listed: Vec<_> = store.list(&ListFilter::default()).unwrap().into_iter().map(|r| r.kind).collect();
    assert_eq!(listed, iolab_model::RunKind::ALL);
    let (_, last) = ids[ids.len() - 1];
    c.execute("UPDATE runs SET kind = 'steady' WHERE id = ?1", [last]).unwrap();
    for e in [store.load(last).unwrap_err(), store.list(&ListFilter::default()).unwrap_err()] {
        assert!(matches!(e, StoreError::UnknownKind { run, .. } if run == last), "{e}");
        assert!(e.to_string().contains("`steady`") && e.to_string().contains("newer iolab"), "{e}");
    }
}

#[test]
fn two_writers_at_once_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let r = real_run(dir.path());
    let path = dir.path().join("results.db");
    Store::open(&path).unwrap();
    let ids: Vec<i64> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2)
            .map(|w| {
                let (path, r) = (&path, &r);
                s.spawn(move || {
                    let store = Store::open(path).unwrap();
                    let host = iolab_sysstat::host_facts(None);
                    let mut ids = Vec::new();
                    for k in 0..10 {
                        let id = store
                            .begin_run(
                                iolab_model::RunKind::Run,
                                &format!("w{w}-{k}"),
                                &BTreeMap::new(),
                                &host,
                                &r.plan,
                                0.0,
                            )
                            .unwrap();
                        for t in 0..20 {
                            let mut p = r.phases[0].timeline[0].clone();
                            p.t_s = t as f64 + 1.0;
                            store.add_tick(id, 0, "n", &p).unwrap();
                        }
                        store.add_phase(id, 0, "n", &r.phases[0]).unwrap();
                        store.finish_run(id, Status::Complete, None, 1.0).unwrap();
                        ids.push(id);
                    }
                    ids
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let store = Store::open(&path).unwrap();
    assert_eq!(store.list(&ListFilter::default()).unwrap().len(), 20);
    for id in ids {
        let run = store.load(id).unwrap();
        assert_eq!(run.result.phases.len(), 1);
        assert!(run.result.phases[0].timeline.len() >= 20);
    }
}

#[test]
fn many_openers_of_a_new_database_all_succeed() {
    // Two iolab processes starting together both create the database: none may see it half
    // made and call it foreign (a race the whole-command test once hit).
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("new{round}.db"));
        let barrier = std::sync::Barrier::new(8);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    barrier.wait();
                    let store = Store::open(&path).unwrap_or_else(|e| panic!("round {round}: {e}"));
                    assert_eq!(store.schema_version(), schema::VERSION);
                });
            }
        });
    }
}

/// A database written by the iolab before operation classes (schema version 1: totals with
/// read/write/sync rows and latency columns, phase JSON without `classes`, plans without
/// `workload`) opens, migrates and reads back with the same figures.
#[test]
fn a_version_1_database_with_runs_reads_back_after_migrating() {
    let dir = tempfile::tempdir().unwrap();
    let r = real_run(dir.path());
    let path = dir.path().join("v1.db");
    let strip = |v: &mut serde_json::Value, key: &str| {
        fn walk(v: &mut serde_json::Value, key: &str) {
            match v {
                serde_json::Value::Object(m) => {
                    m.remove(key);
                    m.values_mut().for_each(|x| walk(x, key));
                }
                serde_json::Value::Array(a) => a.iter_mut().for_each(|x| walk(x, key)),
                _ => {}
            }
        }
        walk(v, key)
    };
    {
        let c = Connection::open(&path).unwrap();
        c.execute_batch(schema::MIGRATIONS[0]).unwrap();
        c.pragma_update(None, "user_version", 1).unwrap();
        let mut plan = serde_json::to_value(&r.plan).unwrap();
        strip(&mut plan, "workload");
        let host = serde_json::to_string(&iolab_sysstat::host_facts(None)).unwrap();
        c.execute(
            "INSERT INTO runs (id, kind, name, status, started_unix_s, ended_unix_s, node, pid, iolab_version, plan_json, host_json) VALUES (1, 'run', 'old', 'complete', 1.0, 3.0, 'oldhost', 1, '0.1.0', ?1, ?2)",
            rusqlite::params![plan.to_string(), host],
        )
        .unwrap();
        let p = &r.phases[0];
        let mut slim = serde_json::to_value(p).unwrap();
        slim["timeline"] = serde_json::json!([]);
        slim["system"] = serde_json::Value::Null;
        strip(&mut slim, "classes");
        strip(&mut slim, "per_thread"); // not written before schema 3
        c.execute(
            "INSERT INTO phases (run_id, idx, node, name, elapsed_s, interrupted, result_json) VALUES (1, 0, 'oldhost', ?1, ?2, 0, ?3)",
            rusqlite::params![p.name, p.elapsed_s, slim.to_string()],
        )
        .unwrap();
        for (dir, t) in [("read", p.total.read()), ("write", p.total.write()), ("sync", p.total.sync())] {
            c.execute(
                "INSERT INTO totals (run_id, phase_idx, node, job, dir, ops, bytes, iops, bw_bytes, lat_p50_ns, lat_p99_ns, hist) VALUES (1, 0, 'oldhost', '', ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                rusqlite::params![dir, t.ops as i64, t.bytes as i64, t.iops, t.bw_bytes, t.lat_ns.p50 as i64, t.lat_ns.p99 as i64, t.hist.as_ref().and_then(iolab_model::hist::to_v2)],
            )
            .unwrap();
        }
        for t in &p.timeline {
            let mut v = serde_json::to_value(t).unwrap();
            strip(&mut v, "ops");
            c.execute(
                "INSERT INTO timeline (run_id, phase_idx, node, t_s, point_json) VALUES (1, 0, 'oldhost', ?1, ?2)",
                rusqlite::params![t.t_s, v.to_string()],
            )
            .unwrap();
        }
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version(), schema::VERSION);
    let back = store.load(1).unwrap();
    assert_eq!(back.result.plan, r.plan, "an old plan reads as block jobs");
    assert_eq!(back.result.node, "oldhost");
    let (a, b) = (&r.phases[0], &back.result.phases[0]);
    assert_eq!(b.total.read().ops, a.total.read().ops);
    assert_eq!(b.total.write().bytes, a.total.write().bytes);
    assert_eq!(b.total.sync().ops, a.total.sync().ops);
    assert_eq!(b.total.read().lat_ns, a.total.read().lat_ns);
    assert_eq!(b.total.read().hist.as_ref().map(|h| h.len()), Some(a.total.read().ops));
    assert_eq!(b.timeline.len(), a.timeline.len());
    assert_eq!(b.timeline.iter().map(|t| t.read_ops).sum::<u64>(), a.total.read().ops);
    assert!(!b.jobs.is_empty() && b.jobs.iter().all(|j| j.per_thread.is_empty()), "no thread rows before schema 3");
    // The latency columns are gone: nothing keeps a value no one reads.
    let c = Connection::open(&path).unwrap();
    let cols: Vec<String> = c
        .prepare("SELECT name FROM pragma_table_info('totals')")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .flatten()
        .collect();
    assert!(!cols.iter().any(|c| c.starts_with("lat_")), "{cols:?}");
}

/// Two nodes' rows of one run stay apart: each node's phases, seconds and histograms load
/// only with that node.
#[test]
fn rows_are_keyed_by_node() {
    let dir = tempfile::tempdir().unwrap();
    let r = real_run(dir.path());
    let store = Store::open(&dir.path().join("results.db")).unwrap();
    let host = iolab_sysstat::host_facts(None);
    let id = store.begin_run(iolab_model::RunKind::Run, "two", &labels(&[]), &host, &r.plan, r.started_unix_s).unwrap();
    let p = &r.phases[0];
    for t in &p.timeline {
        store.add_tick(id, 0, &host.hostname, t).unwrap();
        store
            .add_tick(
                id,
                0,
                "node-b",
                &iolab_model::TimelinePoint { read_ops: 1, ops: Default::default(), ..t.clone() },
            )
            .unwrap();
    }
    store.add_phase(id, 0, &host.hostname, p).unwrap();
    store.finish_run(id, Status::Complete, None, r.started_unix_s + 2.0).unwrap();
    let mut nodes = store.nodes(id).unwrap();
    nodes.sort();
    let mut want = vec![host.hostname.clone(), "node-b".to_string()];
    want.sort();
    assert_eq!(nodes, want);
    let mine = store.load(id).unwrap();
    assert_eq!(mine.result.phases.len(), 1);
    assert_eq!(mine.result.phases[0].timeline.len(), p.timeline.len(), "no second counted twice");
    assert_eq!(mine.result.phases[0].total.read().ops, p.total.read().ops);
    let b = store.phases_of(id, "node-b", &r.plan).unwrap();
    assert_eq!(b.len(), 1, "node b's cut-off phase, rebuilt from its seconds");
    assert_eq!(b[0].total.read().ops, p.timeline.len() as u64);
}

/// A second is saved as it is measured; a worker's late report that lands in a second already
/// shown changes the phase's timeline, and the phase's end saves that second's new counts (and
/// any second that was never ticked), so the stored seconds add up to the totals.
#[test]
fn a_second_changed_after_its_tick_is_saved_with_the_phase() {
    let dir = tempfile::tempdir().unwrap();
    let r = real_run(dir.path());
    let store = Store::open(&dir.path().join("results.db")).unwrap();
    let host = iolab_sysstat::host_facts(None);
    let id =
        store.begin_run(iolab_model::RunKind::Run, "late", &labels(&[]), &host, &r.plan, r.started_unix_s).unwrap();
    let p = &r.phases[0];
    assert!(p.timeline.len() >= 2, "a 1.5 s phase has two seconds");
    // The first second was shown short of one read; the last was never ticked.
    let mut early = p.timeline[0].clone();
    early.read_ops = early.read_ops.saturating_sub(1);
    store.add_tick(id, 0, &host.hostname, &early).unwrap();
    for t in &p.timeline[1..p.timeline.len() - 1] {
        store.add_tick(id, 0, &host.hostname, t).unwrap();
    }
    store.add_phase(id, 0, &host.hostname, p).unwrap();
    store.finish_run(id, Status::Complete, None, r.started_unix_s + 2.0).unwrap();
    let back = store.load(id).unwrap();
    let b = &back.result.phases[0];
    assert_eq!(b.timeline.len(), p.timeline.len());
    assert_eq!(b.timeline[0].read_ops, p.timeline[0].read_ops, "the late report is kept");
    assert_eq!(b.timeline.iter().map(|t| t.read_ops).sum::<u64>(), p.timeline.iter().map(|t| t.read_ops).sum::<u64>());
}

/// While a phase runs, each second saves its seconds, samples and the phase as it stands in one
/// transaction: a run that dies there reads back per job and per thread and is counted; the
/// phase's end replaces the provisional row.
#[test]
fn a_phase_saved_as_it_stands_reads_back_and_its_end_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let r = real_run(dir.path());
    let store = Store::open(&dir.path().join("results.db")).unwrap();
    let host = iolab_sysstat::host_facts(None);
    let node = &host.hostname;
    let id =
        store.begin_run(iolab_model::RunKind::Run, "stands", &labels(&[]), &host, &r.plan, r.started_unix_s).unwrap();
    let p = &r.phases[0];
    let samples = &p.system.as_ref().unwrap().samples;
    assert!(!p.jobs[0].per_thread.is_empty());
    // A provisional phase: the first second, half the samples, totals a little short.
    let mut so_far = p.clone();
    so_far.interrupted = true;
    so_far.timeline.clear();
    so_far.system = None;
    so_far.elapsed_s = 1.0;
    so_far.jobs[0].per_thread[0].ops -= 1;
    store.add_second(id, 0, node, &p.timeline[..1], &samples[..samples.len() / 2], Some(&so_far)).unwrap();
    let list = store.list(&ListFilter::default()).unwrap();
    assert_eq!(list[0].phases, 1, "a phase saved as it stands is counted");
    let mid = store.load(id).unwrap();
    let m = &mid.result.phases[0];
    assert!(m.interrupted && m.elapsed_s == 1.0);
    assert_eq!(m.timeline.len(), 1);
    assert_eq!(m.jobs.len(), p.jobs.len());
    assert_eq!(m.jobs[0].per_thread, so_far.jobs[0].per_thread);
    assert_eq!(m.jobs[0].total.read().hist.as_ref().map(|h| h.len()), Some(p.jobs[0].total.read().ops));
    let (tl, sm) = store.series(id, node, 0).unwrap();
    assert_eq!((tl.len(), sm.len()), (1, samples.len() / 2));
    // The rest, then the phase's end.
    store.add_second(id, 0, node, &p.timeline[1..], &samples[samples.len() / 2..], None).unwrap();
    let mut slim = p.clone();
    slim.timeline.clear();
    slim.system.as_mut().unwrap().samples.clear();
    store.add_phase(id, 0, node, &slim).unwrap();
    store.finish_run(id, Status::Complete, None, r.started_unix_s + 2.0).unwrap();
    let back = store.load(id).unwrap();
    let b = &back.result.phases[0];
    assert!(!b.interrupted && b.elapsed_s == p.elapsed_s);
    assert_eq!(b.jobs[0].per_thread, p.jobs[0].per_thread, "the end's figures replace the provisional ones");
    assert_eq!(b.timeline.len(), p.timeline.len());
    assert_eq!(b.system.as_ref().unwrap().samples, *samples, "samples read back as the summary kept them");
    assert_eq!(store.list(&ListFilter::default()).unwrap()[0].phases, 1);
}

/// The aggregate of two nodes' totals, as the coordinator builds it: counts summed, histograms
/// merged, rates over the longer node's time.
fn merged(a: &iolab_model::Totals, b: &iolab_model::Totals, elapsed: f64) -> iolab_model::Totals {
    let mut t = a.clone();
    for (class, x) in b.iter() {
        let m = t.get_mut(class);
        m.ops += x.ops;
        m.bytes += x.bytes;
        match (&mut m.hist, &x.hist) {
            (Some(h), Some(y)) => h.add(y).unwrap(),
            (None, Some(y)) => m.hist = Some(y.clone()),
            _ => {}
        }
        m.iops = m.ops as f64 / elapsed;
        m.bw_bytes = m.bytes as f64 / elapsed;
        m.lat_ns = m.hist.as_ref().map(iolab_model::LatNs::from_hist).unwrap_or_default();
    }
    t
}

fn node_result(name: &str, p: &iolab_model::PhaseResult, skew: i64) -> iolab_model::NodeResult {
    iolab_model::NodeResult {
        name: name.into(),
        start_skew_ns: skew,
        elapsed_s: p.elapsed_s,
        interrupted: false,
        error: None,
        total: p.total.clone(),
        cpu: p.cpu,
        system: p.system.clone(),
        verify: p.verify.clone(),
    }
}

/// A run of two nodes whose jobs share a name, recorded as the coordinator does: each node's
/// own rows, the aggregate under `*`, the nodes and the verdict. It loads back as the aggregate
/// with each node's total and every job (histograms included, nothing of one node lost under
/// the other's job of the same name), while each node's phases stay readable on their own.
#[test]
fn a_run_of_two_nodes_round_trips_with_its_aggregate_nodes_and_verdict() {
    use iolab_model::{JobResult, Limit, NodeInfo, Verdict};
    use iolab_store::AGGREGATE;
    let dir = tempfile::tempdir().unwrap();
    let (da, db) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&da).unwrap();
    std::fs::create_dir_all(&db).unwrap();
    let (ra, rb) = (real_run(&da), real_run(&db));
    let (pa, pb) = (&ra.phases[0], &rb.phases[0]);
    assert_eq!(pa.jobs[0].name, pb.jobs[0].name, "the jobs share a name");
    let store = Store::open(&dir.path().join("results.db")).unwrap();
    let host = iolab_sysstat::host_facts(None);
    let id = store
        .begin_run(iolab_model::RunKind::Scenario, "locking", &labels(&[]), &host, &ra.plan, ra.started_unix_s)
        .unwrap();
    for (name, p) in [("a", pa), ("b", pb)] {
        let samples = &p.system.as_ref().unwrap().samples;
        store.add_second(id, 0, name, &p.timeline, samples, None).unwrap();
        let mut slim = p.clone();
        slim.timeline.clear();
        slim.system.as_mut().unwrap().samples.clear();
        store.add_phase(id, 0, name, &slim).unwrap();
    }
    let elapsed = pa.elapsed_s.max(pb.elapsed_s);
    let seconds: Vec<iolab_model::TimelinePoint> = pa
        .timeline
        .iter()
        .zip(&pb.timeline)
        .map(|(x, y)| iolab_model::TimelinePoint { read_ops: x.read_ops + y.read_ops, ..x.clone() })
        .collect();
    let tag = |n: &str, j: &JobResult| JobResult { node: Some(n.into()), ..j.clone() };
    let aggregate = iolab_model::PhaseResult {
        verify: None,
        workload: Default::default(),
        notes: Vec::new(),
        name: pa.name.clone(),
        elapsed_s: elapsed,
        interrupted: false,
        total: merged(&pa.total, &pb.total, elapsed),
        jobs: vec![tag("a", &pa.jobs[0]), tag("b", &pb.jobs[0])],
        timeline: Vec::new(),
        cpu: pa.cpu,
        system: None,
        nodes: vec![node_result("a", pa, 120_000), node_result("b", pb, -80_000)],
        started_unix_s: None,
        first_done_s: Some(pa.elapsed_s.min(pb.elapsed_s)),
        last_done_s: Some(elapsed),
    };
    store.add_second(id, 0, AGGREGATE, &seconds, &[], None).unwrap();
    store.add_phase(id, 0, AGGREGATE, &aggregate).unwrap();
    let infos = vec![
        NodeInfo {
            name: "a".into(),
            address: "ssh://root@10.0.0.1".into(),
            hostname: "ha".into(),
            iolab_version: "0.1.0".into(),
            clock_offset_ns: 1500,
            rtt_ns: 90_000,
            clock_offset_uncertainty_ns: 45000,
            dir: Some("/mnt/shared".into()),
        },
        NodeInfo { name: "b".into(), address: "10.0.0.2:7070".into(), dir: None, ..Default::default() },
    ];
    store.set_nodes(id, &infos).unwrap();
    let verdict = Verdict {
        scenario: "locking".into(),
        limit: Limit::Network,
        reasons: vec!["the link ran at 95% of 100 Mbit/s".into()],
        figures: [("link_mbs".to_string(), 12.5)].into(),
    };
    store.set_verdict(id, &verdict).unwrap();
    store.finish_run(id, Status::Complete, None, ra.started_unix_s + 3.0).unwrap();

    assert_eq!(store.nodes(id).unwrap(), ["a", "b"], "`*` is no node");
    assert_eq!(store.list(&ListFilter::default()).unwrap()[0].phases, 1, "one phase, however many nodes");
    let back = store.load(id).unwrap();
    assert_eq!(back.result.nodes, infos);
    assert_eq!(back.result.verdict.as_ref(), Some(&verdict));
    let p = &back.result.phases[0];
    assert_eq!((p.first_done_s, p.last_done_s), (aggregate.first_done_s, aggregate.last_done_s));
    assert_eq!(p.total.read().ops, pa.total.read().ops + pb.total.read().ops);
    assert_eq!(p.total.read().hist.as_ref().unwrap().len(), pa.total.read().ops + pb.total.read().ops);
    assert_eq!(p.timeline.len(), seconds.len());
    assert_eq!(p.timeline[0].read_ops, seconds[0].read_ops, "the aggregate's own seconds");
    // Both jobs of the same name, each with its own node's figures, histograms and threads.
    assert_eq!(p.jobs.len(), 2);
    for (j, src, node) in [(&p.jobs[0], pa, "a"), (&p.jobs[1], pb, "b")] {
        assert_eq!(j.node.as_deref(), Some(node));
        assert_eq!(j.total.write().ops, src.jobs[0].total.write().ops);
        assert_eq!(j.total.write().hist.as_ref().unwrap().len(), src.jobs[0].total.write().ops, "node {node}");
        assert_eq!(j.per_thread, src.jobs[0].per_thread, "node {node}");
    }
    assert_ne!(pa.jobs[0].total.write().ops, 0);
    // Each node's share, with its histograms and its samples from its own rows.
    assert_eq!(p.nodes.len(), 2);
    for (n, src, skew) in [(&p.nodes[0], pa, 120_000), (&p.nodes[1], pb, -80_000)] {
        assert_eq!(n.start_skew_ns, skew);
        assert_eq!(n.total.read().ops, src.total.read().ops);
        let h = n.total.read().hist.as_ref().unwrap();
        assert_eq!(h.value_at_quantile(0.99), src.total.read().hist.as_ref().unwrap().value_at_quantile(0.99));
        assert_eq!(n.system.as_ref().unwrap().samples.len(), src.system.as_ref().unwrap().samples.len());
    }
    // Each node's own phases, apart.
    let a = store.phases_of(id, "a", &ra.plan).unwrap();
    assert_eq!(a[0].total.read().ops, pa.total.read().ops);
    assert!(a[0].nodes.is_empty() && a[0].jobs[0].node.is_none());
    assert_eq!(a[0].timeline.len(), pa.timeline.len());
}

/// A run of two nodes killed in its second phase, before the coordinator saved that phase's
/// aggregate: the first phase reads as saved, the second is merged from the nodes' own rows
/// (interrupted, each node's share and jobs, the nodes' seconds summed).
#[test]
fn a_run_of_two_nodes_killed_mid_phase_shows_each_node_partial_phase() {
    use iolab_model::NodeInfo;
    use iolab_store::AGGREGATE;
    let dir = tempfile::tempdir().unwrap();
    let r = real_run(dir.path());
    let p = &r.phases[0];
    let mut plan = r.plan.clone();
    plan.phases.push(iolab_spec::Phase { name: "p2".into(), jobs: plan.phases[0].jobs.clone() });
    let store = Store::open(&dir.path().join("results.db")).unwrap();
    let host = iolab_sysstat::host_facts(None);
    let id = store.begin_run(iolab_model::RunKind::Run, "two", &labels(&[]), &host, &plan, r.started_unix_s).unwrap();
    store
        .set_nodes(
            id,
            &[NodeInfo { name: "a".into(), ..Default::default() }, NodeInfo { name: "b".into(), ..Default::default() }],
        )
        .unwrap();
    for n in ["a", "b"] {
        store.add_phase(id, 0, n, p).unwrap();
    }
    let whole = iolab_model::PhaseResult {
        verify: None,
        nodes: vec![node_result("a", p, 0), node_result("b", p, 0)],
        total: merged(&p.total, &p.total, p.elapsed_s),
        ..p.clone()
    };
    store.add_phase(id, 0, AGGREGATE, &whole).unwrap();
    // Phase 2: node a saved a provisional row, node b only its first second.
    let mut so_far = p.clone();
    so_far.name = "p2".into();
    so_far.interrupted = true;
    so_far.timeline.clear();
    store.add_second(id, 1, "a", &p.timeline[..1], &[], Some(&so_far)).unwrap();
    store.add_second(id, 1, "b", &p.timeline[..1], &[], None).unwrap();
    store.finish_run(id, Status::Interrupted, Some("node b unreachable"), r.started_unix_s + 3.0).unwrap();
    let back = store.load(id).unwrap();
    let ph = &back.result.phases;
    assert_eq!(ph.len(), 2);
    assert_eq!(ph[0].nodes.len(), 2);
    assert!(!ph[0].interrupted);
    let cut = &ph[1];
    assert_eq!(cut.name, "p2");
    assert!(cut.interrupted);
    assert_eq!(cut.nodes.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    assert!(cut.nodes[0].interrupted && cut.nodes[1].interrupted);
    assert_eq!(cut.nodes[0].total.read().ops, p.total.read().ops, "a's provisional totals");
    assert_eq!(cut.nodes[1].total.read().ops, p.timeline[0].read_ops, "b's, from its one second");
    assert_eq!(cut.total.read().ops, p.total.read().ops + p.timeline[0].read_ops);
    assert_eq!(cut.jobs.len(), 1, "only a saved jobs");
    assert_eq!(cut.jobs[0].node.as_deref(), Some("a"));
    assert_eq!(cut.timeline.len(), 1);
    assert_eq!(cut.timeline[0].read_ops, 2 * p.timeline[0].read_ops, "the nodes' seconds summed");
    // Where the coordinator saved the aggregate's seconds (but no phase row), those are kept.
    let mut sum = p.timeline[0].clone();
    sum.read_ops = 7;
    store.add_second(id, 1, AGGREGATE, &[sum], &[], None).unwrap();
    let back = store.load(id).unwrap();
    let cut = &back.result.phases[1];
    assert_eq!(cut.timeline.iter().map(|t| t.read_ops).collect::<Vec<_>>(), [7]);
    assert_eq!(cut.nodes.len(), 2, "still each node's share");
    assert_eq!(store.nodes(id).unwrap(), ["a", "b"]);
}

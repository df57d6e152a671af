//! The schema as an ordered list of migrations. `PRAGMA user_version` holds how many have been
//! applied; opening a database applies the missing ones in one transaction each, and refuses a
//! database whose version is newer than this iolab knows, without writing to it.

/// Migration `i` takes a database from version `i` to `i + 1`. Append; never edit one that shipped.
pub const MIGRATIONS: &[&str] = &[
    // 1: runs, their labels, phases as they end, totals with histograms, timeline and samples.
    r#"
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        status TEXT NOT NULL,
        error TEXT,
        started_unix_s REAL NOT NULL,
        ended_unix_s REAL,
        node TEXT NOT NULL,
        pid INTEGER NOT NULL,
        iolab_version TEXT NOT NULL,
        plan_json TEXT NOT NULL,
        host_json TEXT NOT NULL
    );
    CREATE TABLE labels (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (run_id, key)
    );
    CREATE INDEX labels_by_pair ON labels(key, value);
    CREATE TABLE phases (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        node TEXT NOT NULL,
        name TEXT NOT NULL,
        elapsed_s REAL NOT NULL,
        interrupted INTEGER NOT NULL,
        result_json TEXT NOT NULL,
        PRIMARY KEY (run_id, idx, node)
    );
    CREATE TABLE totals (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        phase_idx INTEGER NOT NULL,
        node TEXT NOT NULL,
        job TEXT NOT NULL,
        dir TEXT NOT NULL,
        ops INTEGER NOT NULL,
        bytes INTEGER NOT NULL,
        iops REAL NOT NULL,
        bw_bytes REAL NOT NULL,
        lat_p50_ns INTEGER NOT NULL,
        lat_p99_ns INTEGER NOT NULL,
        hist BLOB,
        PRIMARY KEY (run_id, phase_idx, node, job, dir)
    );
    CREATE TABLE timeline (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        phase_idx INTEGER NOT NULL,
        node TEXT NOT NULL,
        t_s REAL NOT NULL,
        point_json TEXT NOT NULL,
        PRIMARY KEY (run_id, phase_idx, node, t_s)
    );
    CREATE TABLE samples (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        phase_idx INTEGER NOT NULL,
        node TEXT NOT NULL,
        t_s REAL NOT NULL,
        sample_json TEXT NOT NULL,
        PRIMARY KEY (run_id, phase_idx, node, t_s)
    );
    "#,
    // 2: totals keep latencies in their histogram; the p50/p99 copies were never read.
    r#"
    ALTER TABLE totals DROP COLUMN lat_p50_ns;
    ALTER TABLE totals DROP COLUMN lat_p99_ns;
    "#,
    // 3: a phase is saved once a second while it runs (`final` 0) and for good when it ends
    // (`final` 1), so a killed run keeps its per-job rows; each thread's end and volume.
    r#"
    ALTER TABLE phases ADD COLUMN final INTEGER NOT NULL DEFAULT 1;
    CREATE TABLE threads (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        phase_idx INTEGER NOT NULL,
        node TEXT NOT NULL,
        job TEXT NOT NULL,
        thread INTEGER NOT NULL,
        elapsed_s REAL NOT NULL,
        ops INTEGER NOT NULL,
        bytes INTEGER NOT NULL,
        error TEXT,
        PRIMARY KEY (run_id, phase_idx, node, job, thread)
    );
    "#,
    // 4: a run of several nodes: its nodes (addresses, clocks) and a scenario's verdict, as JSON.
    // Per-node rows carry the node's name; the aggregate of each phase is saved under the
    // reserved node `*`, its jobs keyed `NODE\x1fJOB` and each node's total `NODE\x1f`.
    r#"
    ALTER TABLE runs ADD COLUMN nodes_json TEXT;
    ALTER TABLE runs ADD COLUMN verdict_json TEXT;
    "#,
];

pub const VERSION: u32 = MIGRATIONS.len() as u32;

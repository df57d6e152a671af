//! Agents placed by real launchers and shipped as real packages (docs/launchers.md): a one-node
//! Slurm cluster (munged, slurmctld and slurmd from Debian's slurm-wlm and munge, in a scratch
//! directory, on ports of their own) running the docs' sbatch script as written; Open MPI's
//! `mpirun` and MPICH's `mpiexec` placing agents that take their rank from the launcher; the
//! Debian package built by scripts/package-deb.sh, installed with dpkg and run; the OCI image
//! built by scripts/oci-image.sh, run by podman as an agent in a testbed node's network
//! namespace writing to its sshfs mount; and the Kubernetes manifests of the docs read by
//! kubectl. Each test says why it skipped where its tools are missing.

mod common;

use common::testbed::{Fs, Testbed};
use common::{disk_tempdir, iolab_process, skip};
use serde_json::Value;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(1) == Some("0")))
        .unwrap_or(false)
}

/// The first of `tools` not found on PATH (or in /usr/sbin, /sbin).
fn missing<'a>(tools: &[&'a str]) -> Option<&'a str> {
    let path = std::env::var("PATH").unwrap_or_default();
    tools
        .iter()
        .copied()
        .find(|t| !path.split(':').chain(["/usr/sbin", "/sbin"]).any(|d| Path::new(d).join(t).is_file()))
}

/// The directory holding the iolab binary under test, to put first on a launcher's PATH.
fn bin_dir() -> PathBuf {
    assert_cmd::cargo::cargo_bin("iolab").parent().expect("the binary has a directory").to_path_buf()
}

fn path_with_iolab() -> String {
    format!("{}:{}", bin_dir().display(), std::env::var("PATH").unwrap_or_default())
}

/// A TCP port free on this machine now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// The body of the first fenced block of `lang` after `heading` in docs/launchers.md.
fn docs_block(heading: &str, lang: &str) -> String {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/launchers.md")).unwrap();
    let after = doc.split_once(heading).unwrap_or_else(|| panic!("docs/launchers.md has no `{heading}`")).1;
    let fence = format!("```{lang}\n");
    let body = after.split_once(&fence).unwrap_or_else(|| panic!("no ```{lang} block after `{heading}`")).1;
    body.split_once("\n```").expect("the block ends").0.to_string() + "\n"
}

/// Processes killed (TERM, then KILL) and reaped when dropped, also when a test fails.
struct Daemons(Vec<(String, Child)>);

impl Daemons {
    fn spawn(&mut self, name: &str, cmd: &mut Command) {
        let child = cmd.stdin(Stdio::null()).spawn().unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        self.0.push((name.to_string(), child));
    }
    /// Each still running (a daemon that exited at once failed to start).
    fn check(&mut self, logs: &Path) {
        for (name, c) in &mut self.0 {
            if let Ok(Some(st)) = c.try_wait() {
                panic!("{name} exited ({st}); its log:\n{}", read_logs(logs));
            }
        }
    }
}

impl Drop for Daemons {
    fn drop(&mut self) {
        for (_, c) in self.0.iter_mut().rev() {
            let _ = Command::new("kill").arg("-TERM").arg(c.id().to_string()).status();
        }
        let until = Instant::now() + Duration::from_secs(10);
        for (_, c) in self.0.iter_mut().rev() {
            while Instant::now() < until && matches!(c.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn read_logs(dir: &Path) -> String {
    let mut out = String::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(20).collect();
        out += &format!("== {}\n{}\n", e.path().display(), tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
    }
    out
}

/// A one-node Slurm cluster in a scratch directory: its own munge key and socket, its own
/// slurm.conf (`SLURM_CONF`), ports and state, torn down when dropped.
struct Slurm {
    dir: tempfile::TempDir,
    conf: PathBuf,
    _daemons: Daemons,
}

impl Slurm {
    fn unavailable() -> Option<String> {
        if !is_root() {
            return Some("a Slurm cluster needs root (slurmd runs jobs as their users)".into());
        }
        missing(&["munged", "slurmctld", "slurmd", "sbatch", "srun", "sinfo", "setpriv"])
            .map(|t| format!("{t} is not installed (apt-get install slurm-wlm munge)"))
    }

    fn up() -> Slurm {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // munged runs as the munge user: it must reach its key and socket through this dir.
        set_mode(d, 0o755);
        for sub in ["key", "run", "state", "spool", "log"] {
            std::fs::create_dir(d.join(sub)).unwrap();
        }
        set_mode(&d.join("run"), 0o755);
        let key: Vec<u8> = (0..1024).map(|i| (i * 7919 % 251) as u8 ^ (std::process::id() as u8)).collect();
        std::fs::write(d.join("key/munge.key"), key).unwrap();
        let chown = |p: &Path| {
            let st = Command::new("chown").arg("-R").arg("munge:munge").arg(p).status().unwrap();
            assert!(st.success(), "chown munge {}", p.display());
        };
        chown(&d.join("key"));
        chown(&d.join("run"));
        set_mode(&d.join("key"), 0o700);
        set_mode(&d.join("key/munge.key"), 0o400);
        let host = Command::new("hostname").arg("-s").output().unwrap();
        let host = String::from_utf8_lossy(&host.stdout).trim().to_string();
        let (ctld, slurmd) = (free_port(), free_port());
        let conf = d.join("slurm.conf");
        let text = format!(
            "ClusterName=iolabtest\nSlurmctldHost={host}\nSlurmUser=root\nSlurmctldPort={ctld}\n\
             SlurmdPort={slurmd}\nAuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket={d}/run/munge.sock\n\
             StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\nSlurmctldPidFile={d}/slurmctld.pid\n\
             SlurmdPidFile={d}/slurmd.pid\nSlurmctldLogFile={d}/log/slurmctld.log\nSlurmdLogFile={d}/log/slurmd.log\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nSelectType=select/cons_tres\n\
             SelectTypeParameters=CR_Core\nMpiDefault=none\nReturnToService=2\nJobCompType=jobcomp/none\n\
             AccountingStorageType=accounting_storage/none\nSchedulerType=sched/builtin\n\
             NodeName={host} CPUs=2 RealMemory=1000 State=UNKNOWN\n\
             PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4\n",
            d = d.display()
        );
        std::fs::write(&conf, text).unwrap();
        let mut daemons = Daemons(Vec::new());
        daemons.spawn(
            "munged",
            Command::new("setpriv")
                .args(["--reuid=munge", "--regid=munge", "--init-groups", "munged", "-F"])
                .arg(format!("--key-file={}/key/munge.key", d.display()))
                .arg(format!("--socket={}/run/munge.sock", d.display()))
                .arg(format!("--pid-file={}/run/munged.pid", d.display()))
                .arg(format!("--log-file={}/run/munged.log", d.display()))
                .arg(format!("--seed-file={}/key/seed", d.display())),
        );
        wait_for("munged's socket", Duration::from_secs(20), || d.join("run/munge.sock").exists());
        daemons.spawn("slurmctld", Command::new("slurmctld").args(["-D", "-c", "-f"]).arg(&conf));
        daemons.spawn("slurmd", Command::new("slurmd").args(["-D", "-f"]).arg(&conf));
        let logs = d.join("log");
        let started = Instant::now();
        loop {
            daemons.check(&logs);
            let out = Command::new("sinfo").args(["-h", "-o", "%t"]).env("SLURM_CONF", &conf).output().unwrap();
            if String::from_utf8_lossy(&out.stdout).trim() == "idle" {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the Slurm node never came up idle:\n{}",
                read_logs(&logs)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        Slurm { dir, conf, _daemons: daemons }
    }
}

fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < limit, "waited {limit:?} for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn slurm_runs_the_docs_sbatch_script_as_written() {
    if let Some(why) = Slurm::unavailable() {
        return skip(&why);
    }
    let slurm = Slurm::up();
    // The user's side: a home with the token, a scratch directory on a disk that takes
    // O_DIRECT (the script asks for --direct), the script as docs/launchers.md has it.
    let home = tempfile::tempdir().unwrap();
    let scratch = disk_tempdir();
    std::fs::write(home.path().join(".iolab-token"), "slurm-token-for-the-test\n").unwrap();
    set_mode(&home.path().join(".iolab-token"), 0o600);
    let script = home.path().join("iolab.sbatch");
    std::fs::write(&script, docs_block("## Slurm: an sbatch script", "bash")).unwrap();
    let out = home.path().join("job.out");
    // Options on sbatch's command line win over the script's #SBATCH lines: this cluster has
    // one node. The script's own variables take the scratch directory, size and port.
    let st = Command::new("sbatch")
        .args(["--wait", "--nodes=1", "--ntasks-per-node=1", "--time=00:05:00"])
        .arg(format!("--output={}", out.display()))
        .arg(format!("--chdir={}", home.path().display()))
        .arg(&script)
        .env("SLURM_CONF", &slurm.conf)
        .env("HOME", home.path())
        .env("PATH", path_with_iolab())
        .env("IOLAB_SCRATCH", scratch.path())
        .env("IOLAB_SIZE", "16M")
        .env("IOLAB_PORT", free_port().to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let printed = std::fs::read_to_string(&out).unwrap_or_default();
    assert!(
        st.status.success(),
        "sbatch --wait: {}\n{}\njob output:\n{printed}\n{}",
        st.status,
        String::from_utf8_lossy(&st.stderr),
        read_logs(&slurm.dir.path().join("log"))
    );
    let job = String::from_utf8_lossy(&st.stdout).split_whitespace().last().unwrap_or_default().to_string();
    // The agent took its rank from srun, the scenario ran on the one node and gave its
    // verdict, and `iolab show last` printed the run.
    assert!(printed.contains("rank 0 (from SLURM_PROCID)"), "{printed}");
    assert!(printed.contains("scaling"), "{printed}");
    let db = home.path().join("iolab/results.db");
    let runs = Command::new(assert_cmd::cargo::cargo_bin("iolab"))
        .args(["runs", "--output", "json", "--label", &format!("job={job}"), "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(runs.status.success(), "{}", String::from_utf8_lossy(&runs.stderr));
    let runs: Value = serde_json::from_slice(&runs.stdout).unwrap();
    let runs = runs.as_array().expect("a list of runs");
    assert_eq!(runs.len(), 1, "one run labelled job={job}: {runs:?}");
    assert_eq!(runs[0]["status"], "complete", "{:?}", runs[0]);
    // On the same cluster (its daemons started once): srun placing two agents on one node,
    // each with its rank from SLURM_PROCID, joining one coordinator.
    two_agents_by(
        &["srun", "--nodes=1", "--ntasks-per-node=2", "--time=00:05:00"],
        "SLURM_PROCID",
        &[("SLURM_CONF", &slurm.conf)],
    );
}

/// A coordinator waiting for `n` joined agents, and the address it listens on.
fn coordinator(
    token: &Path,
    n: usize,
    dirs: &[PathBuf],
    listen: &str,
) -> (Child, String, std::sync::Arc<std::sync::Mutex<String>>) {
    let mut c = iolab_process();
    c.args(["run", "--no-store", "-o", "json", "--sample-interval", "0", "--listen", listen])
        .args(["--expect", &n.to_string(), "--join-timeout", "60s"])
        .args(["--target", "f", "--rw", "write", "--bs", "1M", "--size", "8M", "--token-file"])
        .arg(token);
    for (r, d) in dirs.iter().enumerate() {
        c.arg("--node").arg(format!("rank{r}=join:{r},dir={}", d.display()));
    }
    let mut child = c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = line.split("join on ").nth(1).and_then(|r| r.split_whitespace().next()).expect(&line).to_string();
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let log2 = log.clone();
    std::thread::spawn(move || {
        for l in err.lines().map_while(Result::ok) {
            log2.lock().unwrap().push_str(&(l + "\n"));
        }
    });
    (child, addr, log)
}

/// Two agents placed by `launcher` (which gives each its rank in `var`; `env` is the launcher's
/// own, e.g. `SLURM_CONF`) join a coordinator; each writes its file in its own directory.
fn two_agents_by(launcher: &[&str], var: &str, env: &[(&str, &Path)]) {
    let d = disk_tempdir();
    let token = d.path().join("token");
    std::fs::write(&token, "mpi-token\n").unwrap();
    let dirs: Vec<PathBuf> = (0..2).map(|r| d.path().join(format!("r{r}"))).collect();
    for dir in &dirs {
        std::fs::create_dir(dir).unwrap();
    }
    let (coord, addr, log) = coordinator(&token, 2, &dirs, "127.0.0.1:0");
    let mut c = Command::new(launcher[0]);
    c.args(&launcher[1..]).arg(assert_cmd::cargo::cargo_bin("iolab"));
    c.args(["agent", "--join", &addr, "--token-file"]).arg(&token).arg("--allow").arg(d.path());
    for v in ["SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "JOB_COMPLETION_INDEX"] {
        c.env_remove(v);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    let agents = c.env("PATH", path_with_iolab()).output().unwrap();
    let out = coord.wait_with_output().unwrap();
    let agents_said = String::from_utf8_lossy(&agents.stderr).to_string();
    assert!(agents.status.success(), "{launcher:?}: {}\n{agents_said}", agents.status);
    assert!(out.status.success(), "coordinator: {}", log.lock().unwrap());
    for r in 0..2 {
        assert!(agents_said.contains(&format!("rank {r} (from {var})")), "{agents_said}");
    }
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = v["nodes"].as_array().unwrap().iter().map(|n| n["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["rank0", "rank1"]);
    assert_eq!(v["phases"][0]["total"]["write"]["bytes"].as_u64(), Some(16 << 20), "{v}");
    for dir in &dirs {
        assert_eq!(std::fs::metadata(dir.join("f")).unwrap().len(), 8 << 20, "{}", dir.display());
    }
}

#[test]
fn open_mpi_mpirun_places_agents_with_their_ranks() {
    if let Some(t) = missing(&["mpirun.openmpi"]) {
        return skip(&format!("{t} is not installed (apt-get install openmpi-bin)"));
    }
    // As root, Open MPI wants to be told; --oversubscribe: two ranks on this one host.
    two_agents_by(
        &["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", "2"],
        "OMPI_COMM_WORLD_RANK",
        &[],
    );
}

#[test]
fn mpich_mpiexec_places_agents_with_their_ranks() {
    if let Some(t) = missing(&["mpiexec.mpich"]) {
        return skip(&format!("{t} is not installed (apt-get install mpich)"));
    }
    two_agents_by(&["mpiexec.mpich", "-n", "2"], "PMI_RANK", &[]);
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn the_debian_package_installs_with_dpkg_and_runs() {
    if let Some(t) = missing(&["dpkg-deb", "dpkg", "strip"]) {
        return skip(&format!("{t} is not installed (a Debian system with binutils has it)"));
    }
    let d = tempfile::tempdir().unwrap();
    let out = Command::new("bash")
        .arg(repo().join("scripts/package-deb.sh"))
        .arg(assert_cmd::cargo::cargo_bin("iolab"))
        .arg(d.path().join("out"))
        .output()
        .unwrap();
    assert!(out.status.success(), "package-deb.sh: {}", String::from_utf8_lossy(&out.stderr));
    let deb = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let contents = Command::new("dpkg-deb").arg("--contents").arg(&deb).output().unwrap();
    let contents = String::from_utf8_lossy(&contents.stdout);
    for f in [
        "./usr/bin/iolab",
        "./usr/share/man/man1/iolab.1.gz",
        "./usr/share/bash-completion/completions/iolab",
        "./usr/share/zsh/vendor-completions/_iolab",
        "./usr/share/fish/vendor_completions.d/iolab.fish",
    ] {
        assert!(contents.contains(f), "{f} not in the package:\n{contents}");
    }
    // dpkg -i as it would run on this machine: its dependencies are met (a dry run against the
    // system's own database)...
    let dry = Command::new("dpkg").args(["--dry-run", "-i"]).arg(&deb).output().unwrap();
    assert!(dry.status.success(), "dpkg --dry-run -i: {}", String::from_utf8_lossy(&dry.stderr));
    // ... and installed for real into a root of its own, with its own database and log, so the
    // test leaves the system as it was.
    let root = d.path().join("root");
    for sub in ["var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers", "var/log"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    std::fs::write(root.join("var/lib/dpkg/status"), "").unwrap();
    let inst = Command::new("dpkg")
        .arg(format!("--root={}", root.display()))
        .arg(format!("--log={}", root.join("var/log/dpkg.log").display()))
        .args(["--force-depends", "--force-not-root", "-i"])
        .arg(&deb)
        .output()
        .unwrap();
    assert!(inst.status.success(), "dpkg -i: {}", String::from_utf8_lossy(&inst.stderr));
    let st = Command::new("dpkg").arg(format!("--root={}", root.display())).args(["-s", "iolab"]).output().unwrap();
    assert!(String::from_utf8_lossy(&st.stdout).contains("Status: install ok installed"));
    let bin = root.join("usr/bin/iolab");
    let v = Command::new(&bin).arg("--version").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&v.stdout).trim(), format!("iolab {}", env!("CARGO_PKG_VERSION")));
    // Stripped: no symbol table left.
    let syms = Command::new("nm").arg(&bin).output().unwrap();
    assert!(String::from_utf8_lossy(&syms.stderr).contains("no symbols"), "not stripped");
    // The installed binary does real work.
    let work = tempfile::tempdir().unwrap();
    let run = Command::new(&bin)
        .args([
            "run",
            "--no-store",
            "--sample-interval",
            "0",
            "-o",
            "json",
            "--rw",
            "write",
            "--size",
            "1M",
            "--target",
        ])
        .arg(work.path().join("f"))
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(std::fs::metadata(work.path().join("f")).unwrap().len(), 1 << 20);
    // The man page and the bash completion load.
    let man = root.join("usr/share/man/man1/iolab.1.gz");
    let text = Command::new("sh").arg("-c").arg(format!("gzip -dc '{}'", man.display())).output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains(".TH iolab"), "no man page");
    let comp = root.join("usr/share/bash-completion/completions/iolab");
    let loaded = Command::new("bash")
        .arg("-c")
        .arg(format!("source '{}' && complete -p iolab", comp.display()))
        .output()
        .unwrap();
    assert!(loaded.status.success() && String::from_utf8_lossy(&loaded.stdout).contains("iolab"));
}

/// podman as it runs here: runc (crun refuses this machine's hybrid cgroups), cgroupfs, and no
/// default ulimits (setrlimit is refused in this sandbox).
fn podman(conf: &Path) -> Command {
    let mut c = Command::new("podman");
    c.env("CONTAINERS_CONF", conf).args(["--runtime", "runc", "--cgroup-manager=cgroupfs"]);
    c
}

#[test]
fn the_oci_image_runs_as_an_agent_on_a_testbed_node() {
    if let Some(t) = missing(&["podman", "runc", "strip"]) {
        return skip(&format!("{t} is not installed (apt-get install podman runc binutils)"));
    }
    let tb = match Testbed::up(2, 1, Fs::Sshfs, "100mbit") {
        Ok(t) => t,
        Err(why) => return skip(&why),
    };
    let d = tempfile::tempdir().unwrap();
    let conf = d.path().join("containers.conf");
    std::fs::write(&conf, "[containers]\ndefault_ulimits = []\n").unwrap();
    let tag = format!("localhost/iolab-test:{}", std::process::id());
    let built = Command::new("bash")
        .arg(repo().join("scripts/oci-image.sh"))
        .arg(assert_cmd::cargo::cargo_bin("iolab"))
        .arg(&tag)
        .env("CONTAINERS_CONF", &conf)
        .output()
        .unwrap();
    assert!(built.status.success(), "oci-image.sh: {}", String::from_utf8_lossy(&built.stderr));
    struct Image<'a>(&'a str, &'a Path);
    impl Drop for Image<'_> {
        fn drop(&mut self) {
            let _ = podman(self.1).args(["rmi", "-f", self.0]).output();
        }
    }
    let _image = Image(&tag, &conf);
    let v = podman(&conf).args(["run", "--rm", &tag, "--version"]).output().unwrap();
    assert!(v.status.success(), "podman run: {}", String::from_utf8_lossy(&v.stderr));
    assert_eq!(String::from_utf8_lossy(&v.stdout).trim(), format!("iolab {}", env!("CARGO_PKG_VERSION")));

    // The agent runs in the container, in node n1's network namespace, doing its I/O on n1's
    // sshfs mount (bound into the container), and joins a coordinator on the management network.
    let token = d.path().join("token");
    std::fs::write(&token, "oci-token\n").unwrap();
    let shared = tb.sshfs_mount("n1").join("oci");
    std::fs::create_dir_all(&shared).unwrap();
    let listen = format!("{}:0", tb.get("TESTBED_MGMT_ADDR").expect("the management address"));
    let (coord, addr, log) = coordinator(&token, 1, &[PathBuf::from("/shared")], &listen);
    let agent = podman(&conf)
        .args(["run", "--rm", "--network"])
        .arg(format!("ns:/var/run/netns/{}", tb.netns("n1")))
        .arg("-v")
        .arg(format!("{}:/shared", shared.display()))
        .arg("-v")
        .arg(format!("{}:/token:ro", token.display()))
        .args([&tag, "agent", "--join", &addr, "--rank", "0", "--token-file", "/token", "--allow", "/shared"])
        .output()
        .unwrap();
    let out = coord.wait_with_output().unwrap();
    assert!(agent.status.success(), "the agent in podman: {}", String::from_utf8_lossy(&agent.stderr));
    assert!(out.status.success(), "coordinator: {}", log.lock().unwrap());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["phases"][0]["total"]["write"]["bytes"].as_u64(), Some(8 << 20), "{v}");
    // The file went through n1's sshfs to the server's export.
    let on_server = tb.sshfs_export().join("oci/f");
    assert_eq!(std::fs::metadata(&on_server).map(|m| m.len()).unwrap_or(0), 8 << 20, "{}", on_server.display());
}

#[test]
fn the_kubernetes_manifests_of_the_docs_read_with_kubectl() {
    if let Some(t) = missing(&["kubectl"]) {
        return skip(&format!("{t} is not installed (the Kubernetes client)"));
    }
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("iolab.yaml");
    let yaml = docs_block("## Kubernetes: an Indexed Job", "yaml");
    std::fs::write(&file, &yaml).unwrap();
    // Client-side only (no API server here): kubectl decodes every object of the file.
    let out = Command::new("kubectl")
        .args(["label", "--local", "--dry-run=client", "-o", "name", "checked=yes", "-f"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "kubectl: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().collect::<Vec<_>>(),
        ["service/iolab-coordinator", "pod/iolab-coordinator", "job.batch/iolab-agents"]
    );
    // The containers run the image scripts/oci-image.sh builds, and iolab takes their command
    // lines: each is parsed up to a `--help` put at its end (an unknown option or a bad value
    // stops clap before it gets there).
    let json = Command::new("kubectl")
        .args(["label", "--local", "--dry-run=client", "-o", "json", "checked=yes", "-f"])
        .arg(&file)
        .output()
        .unwrap();
    // One JSON object per manifest, one after the other.
    let items: Vec<Value> = serde_json::Deserializer::from_slice(&json.stdout)
        .into_iter()
        .collect::<Result<_, _>>()
        .expect("kubectl -o json");
    let mut containers = Vec::new();
    for item in &items {
        let spec = if item["kind"] == "Job" { &item["spec"]["template"]["spec"] } else { &item["spec"] };
        containers.extend(spec["containers"].as_array().into_iter().flatten().cloned());
    }
    assert_eq!(containers.len(), 2, "{items:?}");
    for c in &containers {
        assert_eq!(c["image"], format!("localhost/iolab:{}", env!("CARGO_PKG_VERSION")), "{c}");
        let words: Vec<&str> = c["command"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
        assert_eq!(words[0], "iolab", "{c}");
        let parsed =
            Command::new(assert_cmd::cargo::cargo_bin("iolab")).args(&words[1..]).arg("--help").output().unwrap();
        assert!(parsed.status.success(), "iolab does not take {words:?}: {}", String::from_utf8_lossy(&parsed.stderr));
    }
}

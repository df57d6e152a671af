//! System metrics on real devices: iolab's sampler against sysstat's `iostat -x` over the
//! same workload, the path-to-device mapping through loop devices, ext4 and device-mapper,
//! and `iolab watch`. Each test that needs root, losetup, dmsetup or iostat says why it skipped.
#![allow(clippy::disallowed_macros)] // a test prints its skips with eprintln!, not user text

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// A loop device over a sparse file in a disk-backed temp dir, detached on drop.
struct Loop {
    dev: String,
    _dir: tempfile::TempDir,
    mount: Option<PathBuf>,
    dm: Option<String>,
}

impl Loop {
    fn new(size_mb: u64) -> Option<Loop> {
        let dir = disk_tempdir();
        let img = dir.path().join("disk.img");
        std::fs::File::create(&img).ok()?.set_len(size_mb << 20).ok()?;
        let out = Command::new("losetup").args(["--find", "--show", "--direct-io=on"]).arg(&img).output().ok()?;
        if !out.status.success() {
            return None;
        }
        Some(Loop { dev: String::from_utf8_lossy(&out.stdout).trim().to_string(), _dir: dir, mount: None, dm: None })
    }

    fn name(&self) -> String {
        self.dev.trim_start_matches("/dev/").to_string()
    }

    fn mount_ext4(&mut self) -> Option<PathBuf> {
        let ok = Command::new("mkfs.ext4").args(["-q", "-F", &self.dev]).status().ok()?.success();
        let mnt = self._dir.path().join("mnt");
        std::fs::create_dir_all(&mnt).ok()?;
        if !ok || !Command::new("mount").arg(&self.dev).arg(&mnt).status().ok()?.success() {
            return None;
        }
        self.mount = Some(mnt.clone());
        Some(mnt)
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        if let Some(m) = &self.mount {
            let _ = Command::new("umount").arg(m).status();
        }
        if let Some(d) = &self.dm {
            let _ = Command::new("dmsetup").args(["remove", d]).status();
        }
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

/// The devices under the filesystem holding `p`, as iolab reports them in a run.
fn devices_of_run(target: &Path, extra: &[&str]) -> (Vec<String>, Value) {
    let mut args = vec!["run", "--target", target.to_str().unwrap(), "--size", "4M", "--rw", "write", "--bs", "64k"];
    args.extend_from_slice(extra);
    let v = run_json(&args);
    let t = &v["phases"][0]["system"]["target"];
    let devs = t["devices"].as_array().unwrap().iter().map(|d| d.as_str().unwrap().to_string()).collect();
    (devs, t.clone())
}

#[test]
fn ext4_on_a_loop_device_maps_to_loop_then_its_backing_disk() {
    let Some(mut lp) = Loop::new(64) else { return skip("losetup unavailable (needs root and loop devices)") };
    let Some(mnt) = lp.mount_ext4() else { return skip("mkfs.ext4 or mount failed") };
    let (devs, t) = devices_of_run(&mnt.join("f"), &[]);
    assert_eq!(t["fstype"], "ext4");
    assert_eq!(t["mount_source"], lp.dev.as_str());
    assert_eq!(devs[0], lp.name(), "{devs:?}");
    // Then the device holding the image file (the disk under the temp dir), if it is a block device.
    let host = iolab_sysstat::describe(lp._dir.path(), &Default::default());
    assert_eq!(&devs[1..], &host.devices[..], "the loop device's backing file's devices follow");
}

#[test]
fn device_mapper_maps_through_its_members() {
    let Some(mut lp) = Loop::new(32) else { return skip("losetup unavailable (needs root and loop devices)") };
    let name = format!("iolab-test-{}", std::process::id());
    let table = format!("0 {} linear {} 0", 32 * 2048, lp.dev);
    let ok = Command::new("dmsetup").args(["create", &name, "--table", &table]).status();
    if !matches!(ok, Ok(s) if s.success()) {
        return skip("dmsetup create failed (needs root and device-mapper)");
    }
    lp.dm = Some(name.clone());
    let mapper = PathBuf::from(format!("/dev/mapper/{name}"));
    let (devs, _) = devices_of_run(&mapper, &["--device"]);
    assert!(devs[0].starts_with("dm-"), "{devs:?}");
    assert_eq!(devs[1], lp.name(), "{devs:?}");
}

/// iostat's mean of a field over its JSON report's intervals.
fn iostat_mean(report: &Value, dev: &str, field: &str) -> f64 {
    let stats = report["sysstat"]["hosts"][0]["statistics"].as_array().unwrap();
    let vals: Vec<f64> = stats
        .iter()
        .filter_map(|s| {
            s["disk"].as_array()?.iter().find(|d| d["disk_device"] == dev).map(|d| d[field].as_f64().unwrap())
        })
        .collect();
    assert!(!vals.is_empty(), "iostat reported no {field} for {dev}: {report}");
    vals.iter().sum::<f64>() / vals.len() as f64
}

#[test]
fn sampler_agrees_with_iostat() {
    if Command::new("iostat").arg("-V").output().is_err() {
        return skip("iostat (sysstat) is not installed");
    }
    let Some(lp) = Loop::new(256) else { return skip("losetup unavailable (needs root and loop devices)") };
    // A steady load on a device nothing else touches: 300 direct 64 KiB writes a second for 6 s.
    let run = iolab_process()
        .args([
            "run",
            "--target",
            &lp.dev,
            "--device",
            "--rw",
            "randwrite",
            "--bs",
            "64k",
            "--direct",
            "--rate-iops",
            "300",
            "--runtime",
            "6s",
            "--output",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let io = Command::new("iostat").args(["-x", "-d", "-y", "-o", "JSON", &lp.name(), "1", "4"]).output().unwrap();
    let out = run.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let report: Value = serde_json::from_slice(&io.stdout)
        .unwrap_or_else(|e| panic!("iostat JSON: {e}: {}", String::from_utf8_lossy(&io.stdout)));
    let ours = &v["phases"][0]["system"]["disks"][lp.name()];
    let (w, wkb) = (ours["w_s"].as_f64().unwrap(), ours["wkb_s"].as_f64().unwrap());
    // %util follows the backing disk's latency, which other tests running beside this one move
    // from second to second: compare it over the seconds both tools sampled (iostat's four
    // intervals from 0.7 s, iolab's samples ending at 2..5 s), not iolab's whole window.
    let samples = v["phases"][0]["system"]["samples"].as_array().unwrap();
    let util_in: Vec<f64> = samples
        .iter()
        .filter(|x| (1.5..=5.5).contains(&x["t_s"].as_f64().unwrap_or(0.0)))
        .filter_map(|x| x["disks"][lp.name()]["util_pct"].as_f64())
        .collect();
    assert!(!util_in.is_empty(), "iolab kept per-second samples of {}", lp.name());
    let util = util_in.iter().sum::<f64>() / util_in.len() as f64;
    let (iw, iwkb, iutil) = (
        iostat_mean(&report, &lp.name(), "w/s"),
        iostat_mean(&report, &lp.name(), "wkB/s"),
        iostat_mean(&report, &lp.name(), "util"),
    );
    eprintln!("iolab w/s {w:.1} wkB/s {wkb:.0} util {util:.1}% | iostat w/s {iw:.1} wkB/s {iwkb:.0} util {iutil:.1}%");
    assert!((w / iw - 1.0).abs() <= 0.10, "w/s: iolab {w} vs iostat {iw}");
    assert!((wkb / iwkb - 1.0).abs() <= 0.10, "wkB/s: iolab {wkb} vs iostat {iwkb}");
    assert!((util - iutil).abs() <= 5.0, "%util: iolab {util} vs iostat {iutil}");
    // And the sampler agrees with iolab's own count of what it issued.
    let ops_s = v["phases"][0]["total"]["write"]["iops"].as_f64().unwrap();
    assert!((w / ops_s - 1.0).abs() <= 0.10, "device w/s {w} vs iolab's {ops_s} IOPS");
}

#[test]
fn sampling_interval_and_off() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s");
    let fs = f.to_str().unwrap();
    let v = run_json(&[
        "run",
        "--target",
        fs,
        "--size",
        "4M",
        "--rw",
        "randread",
        "--runtime",
        "1.5s",
        "--sample-interval",
        "250ms",
    ]);
    let sys = &v["phases"][0]["system"];
    let n = sys["samples"].as_array().unwrap().len();
    assert!((5..=7).contains(&n), "1.5 s at 250 ms: {n} samples");
    assert_eq!(sys["interval_s"], 0.25);
    let t = sys["samples"][n - 1]["t_s"].as_f64().unwrap();
    assert!((1.3..1.8).contains(&t), "samples cover the measured window: {t}");
    let c = &sys["cpu"];
    let sum: f64 =
        ["user_pct", "nice_pct", "system_pct", "iowait_pct", "irq_pct", "softirq_pct", "steal_pct", "idle_pct"]
            .iter()
            .map(|k| c[k].as_f64().unwrap())
            .sum();
    assert!((sum - 100.0).abs() < 0.01, "{c}");
    let v = run_json(&["run", "--target", fs, "--rw", "randread", "--runtime", "0.3s", "--sample-interval", "0"]);
    assert!(v["phases"][0].get("system").is_none());
}

#[test]
fn ramp_is_not_sampled() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("r");
    let v = run_json(&[
        "run",
        "--target",
        f.to_str().unwrap(),
        "--size",
        "4M",
        "--rw",
        "randread",
        "--ramp",
        "1s",
        "--runtime",
        "1s",
    ]);
    let t = v["phases"][0]["system"]["t_s"].as_f64().unwrap();
    assert!((0.8..1.4).contains(&t), "the sampled window is the measured second, not the ramp: {t}");
}

#[test]
fn watch_prints_lines_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let out =
        iolab().args(["watch", dir.path().to_str().unwrap(), "--count", "2", "--interval", "200ms"]).output().unwrap();
    assert!(out.status.success());
    let s = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(lines.len(), 3, "{s}");
    assert!(lines[0].starts_with("watching ") && lines[1].contains("cpu us") && lines[2].contains("wa"), "{s}");
    let out =
        iolab().args(["watch", dir.path().to_str().unwrap(), "-c", "3", "-i", "100ms", "-o", "json"]).output().unwrap();
    let rows: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 3);
    assert!(rows.iter().all(|r| r["cpu"]["idle_pct"].is_number() && r["target"]["fstype"].is_string()));
    assert!(rows[2]["t_s"].as_f64().unwrap() > rows[0]["t_s"].as_f64().unwrap());
    // --duration: as many intervals as fit, the first of --count and --duration ends it.
    let lines = |args: &[&str]| {
        let out = iolab().args(["watch", dir.path().to_str().unwrap(), "-o", "json"]).args(args).output().unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    assert_eq!(lines(&["--duration", "450ms", "-i", "100ms"]), 4);
    assert_eq!(lines(&["--duration", "1s", "-i", "100ms", "-c", "2"]), 2);
    let out = iolab().args(["watch", "/no/such/path", "-c", "1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `iolab watch --db --label` keeps what it sampled as a run of kind `watch` while direct writes
/// run beside it: `runs` lists it, `show` reads its samples back, `report` charts them; a watch
/// killed mid-way reads back as interrupted with the samples it saved.
#[test]
fn a_stored_watch_is_listed_shown_and_charted() {
    let dir = disk_tempdir();
    let db = dir.path().join("watch.db");
    let db = db.to_str().unwrap();
    let work = dir.path().join("io");
    let mut writer = iolab_process()
        .args(["run", "--no-store", "--target", work.to_str().unwrap(), "--size", "64M", "--rw", "write"])
        .args(["--bs", "64k", "--direct", "--runtime", "3s", "--output", "json"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = iolab()
        .args(["watch", dir.path().to_str().unwrap(), "--count", "4", "--interval", "300ms", "--db", db])
        .args(["--label", "what=startup"])
        .output()
        .unwrap();
    assert!(writer.wait().unwrap().success(), "the writer beside the watch ran");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.lines().last().is_some_and(|l| l.starts_with("stored as run 1 in ")), "{text}");
    let list = run_json(&["runs", "--db", db]);
    let run = &list[0];
    assert_eq!(
        (&run["kind"], &run["status"], &run["labels"]["what"]),
        (&"watch".into(), &"complete".into(), &"startup".into())
    );
    assert_eq!(run["phases"], 1);
    let shown = run_json(&["show", "--db", db, "1"]);
    let p = &shown[0]["result"]["phases"][0];
    assert_eq!((&p["name"], &p["interrupted"]), (&"watch".into(), &false.into()));
    let sys = &p["system"];
    assert_eq!(sys["samples"].as_array().map(Vec::len), Some(4), "every sample, in order: {sys}");
    assert!(sys["samples"][3]["t_s"].as_f64() > sys["samples"][0]["t_s"].as_f64());
    let busiest =
        |v: &Value| v["disks"].as_object().map(|d| d.values().filter_map(|d| d["w_s"].as_f64()).fold(0.0, f64::max));
    assert!(busiest(&sys["max"]) >= busiest(&sys["samples"][1]), "the summary's max covers the samples");
    assert!(busiest(&sys["max"]).is_some_and(|w| w > 0.0), "the direct writes show: {sys}");
    let human = iolab().args(["show", "--db", db, "1"]).output().unwrap();
    let human = String::from_utf8_lossy(&human.stdout);
    assert!(human.contains("phase watch") && human.contains("system: cpu us") && !human.contains("│ job"), "{human}");
    let html = dir.path().join("w.html");
    let out = iolab().args(["report", "--db", db, "1", "-o", html.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success());
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(html.contains("data-chart=\"cpu-watch\""), "the CPU chart of the watch");

    // Killed mid-way: interrupted, with what it saved.
    let mut w = iolab_process()
        .args(["watch", dir.path().to_str().unwrap(), "--interval", "100ms", "--db", db])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    w.kill().unwrap();
    let _ = w.wait();
    let shown = run_json(&["show", "--db", db, "2"]);
    assert_eq!(shown[0]["result"]["status"], "interrupted");
    let p = &shown[0]["result"]["phases"][0];
    let n = p["system"]["samples"].as_array().map_or(0, Vec::len);
    assert!(p["interrupted"] == true && n >= 3, "{n} samples saved before the kill");
}

/// sshd on a free loopback port with throwaway keys, an sshfs mount of a temp dir through it;
/// both torn down on drop.
struct Sshfs {
    dir: tempfile::TempDir,
    sshd: std::process::Child,
    mounted: bool,
}

impl Sshfs {
    fn start() -> Result<Sshfs, String> {
        for tool in ["/usr/sbin/sshd", "/usr/bin/sshfs", "/usr/bin/ssh-keygen"] {
            if !Path::new(tool).exists() {
                return Err(format!("{tool} is not installed"));
            }
        }
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let d = dir.path();
        for key in ["hostkey", "userkey"] {
            let ok = Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(d.join(key)).status();
            if !matches!(ok, Ok(s) if s.success()) {
                return Err("ssh-keygen failed".into());
            }
        }
        std::fs::copy(d.join("userkey.pub"), d.join("authorized")).map_err(|e| e.to_string())?;
        let port =
            std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(|e| e.to_string())?.port();
        let cfg = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/hostkey\nAuthorizedKeysFile {d}/authorized\nPermitRootLogin prohibit-password\nPasswordAuthentication no\nStrictModes no\nUsePAM no\nPidFile {d}/sshd.pid\nSubsystem sftp internal-sftp\n",
            d = d.display()
        );
        std::fs::write(d.join("sshd_config"), cfg).map_err(|e| e.to_string())?;
        let _ = std::fs::create_dir_all("/run/sshd");
        std::fs::create_dir_all(d.join("export")).map_err(|e| e.to_string())?;
        std::fs::create_dir_all(d.join("mnt")).map_err(|e| e.to_string())?;
        let sshd = Command::new("/usr/sbin/sshd")
            .arg("-D")
            .arg("-f")
            .arg(d.join("sshd_config"))
            .arg("-E")
            .arg(d.join("sshd.log"))
            .spawn()
            .map_err(|e| format!("sshd: {e}"))?;
        let mut s = Sshfs { dir, sshd, mounted: false };
        let d = s.dir.path().to_path_buf();
        // sshd needs a moment to listen.
        for _ in 0..50 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let opts = format!(
            "port={port},IdentityFile={}/userkey,StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null",
            d.display()
        );
        let ok = Command::new("sshfs")
            .args(["-o", &opts])
            .arg(format!("root@127.0.0.1:{}/export", d.display()))
            .arg(d.join("mnt"))
            .status();
        if !matches!(ok, Ok(st) if st.success()) {
            return Err(format!(
                "sshfs mount failed (FUSE unavailable?); sshd log: {}",
                std::fs::read_to_string(d.join("sshd.log")).unwrap_or_default()
            ));
        }
        s.mounted = true;
        Ok(s)
    }

    fn mnt(&self) -> PathBuf {
        self.dir.path().join("mnt")
    }
}

impl Drop for Sshfs {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Command::new("umount").arg(self.mnt()).status();
        }
        let _ = self.sshd.kill();
        let _ = self.sshd.wait();
    }
}

#[test]
fn sshfs_maps_to_its_interface_and_its_traffic_shows_there() {
    let fs = match Sshfs::start() {
        Ok(fs) => fs,
        Err(why) => return skip(&format!("no sshfs over loopback: {why}")),
    };
    let f = fs.mnt().join("data");
    let v = run_json(&[
        "run",
        "--no-store",
        "--target",
        f.to_str().unwrap(),
        "--size",
        "64M",
        "--rw",
        "write",
        "--bs",
        "1M",
        // Flushed inside the phase (dd conv=fsync): sshfs may still hold written data when
        // the last write returns. 64 MiB, so the sampler's start, a few ms after the workers'
        // on a loaded machine, is a small part of the window.
        "--end-fsync",
    ]);
    let sys = &v["phases"][0]["system"];
    let t = &sys["target"];
    assert_eq!(t["fstype"], "fuse.sshfs", "{t}");
    assert_eq!(t["network"], true);
    assert!(t["mount_source"].as_str().unwrap().contains("127.0.0.1"));
    assert_eq!(t["interfaces"][0]["name"], "lo", "the server is on loopback: {t}");
    assert!(t["devices"].as_array().unwrap().is_empty(), "no block device under sshfs");
    // The 64 MiB crossed the loopback interface while iolab wrote them.
    let written = u(&v["phases"][0]["total"]["write"]["bytes"]) as f64;
    let lo_bytes = sys["net"]["lo"]["tx_bytes_s"].as_f64().unwrap() * sys["t_s"].as_f64().unwrap();
    assert!(lo_bytes >= written * 0.9, "lo carried {lo_bytes} bytes for {written} written");
    assert_eq!(std::fs::metadata(fs.dir.path().join("export/data")).unwrap().len(), 64 << 20);
}

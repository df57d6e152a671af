//! The multi-node testbed is real: files cross nodes through sshfs and GlusterFS, the links run
//! at the tbf rate seed 000's network had (100 Mbit), and `ssh` to a node runs in that node's
//! network namespace. Plain tools only (dd, cat, ssh); the cluster code is tested on top of it.
//! Testbed ids 8 and 9 are this file's.

mod common;
use common::testbed::{spawn_dd, wait_dd, Fs, Testbed};
use common::*;

const MIB: u32 = 24;

#[test]
fn sshfs_testbed_shares_files_shapes_links_and_reaches_nodes() {
    let tb = match Testbed::up(8, 2, Fs::Sshfs, "100mbit") {
        Ok(t) => t,
        Err(why) => return skip(&why),
    };
    assert_eq!(tb.nodes(), ["n1", "n2"]);
    let (m1, m2) = (tb.sshfs_mount("n1"), tb.sshfs_mount("n2"));

    // (a) Written through n1's mount (by a process in n1's namespace), read through n2's mount
    // (by one in n2's) and in the server's export directory.
    let text = "written on n1";
    let hello1 = format!("{}/hello", m1.display());
    let out = tb.exec("n1", "sh", &["-c", r#"printf %s "$1" > "$2""#, "sh", text, &hello1]).output().expect("sh runs");
    assert!(out.status.success(), "writing on n1 failed: {}", String::from_utf8_lossy(&out.stderr));
    let seen = tb.exec("n2", "cat", &[&format!("{}/hello", m2.display())]).output().expect("cat runs");
    assert!(seen.status.success(), "n2 cannot read n1's file: {}", String::from_utf8_lossy(&seen.stderr));
    assert_eq!(String::from_utf8_lossy(&seen.stdout), text);
    assert_eq!(std::fs::read_to_string(tb.sshfs_export().join("hello")).expect("the export holds it"), text);

    // (c) ssh from the root namespace lands in n1's network namespace: its interfaces (the
    // management link and its own storage link), not n2's, not the machine's.
    let dev = tb.ssh("n1").arg("cat /proc/net/dev").output().expect("ssh runs");
    assert!(dev.status.success(), "ssh n1 failed: {}", String::from_utf8_lossy(&dev.stderr));
    let dev = String::from_utf8_lossy(&dev.stdout);
    let ifaces: Vec<&str> = dev.lines().skip(2).filter_map(|l| l.split(':').next()).map(str::trim).collect();
    println!("n1's interfaces over ssh: {ifaces:?}");
    let link1 = tb.get("NODE_n1_SSHFS_LINK").expect("n1's link").to_string();
    let link2 = tb.get("NODE_n2_SSHFS_LINK").expect("n2's link").to_string();
    assert!(ifaces.contains(&link1.as_str()), "n1's storage link {link1} missing from {ifaces:?}");
    assert!(!ifaces.contains(&link2.as_str()), "n2's link {link2} seen from n1: {ifaces:?}");
    assert!(!ifaces.contains(&"eth0"), "the machine's eth0 seen from n1: {ifaces:?}");
    // ...and sees the global mounts.
    let ls = tb.ssh("n1").arg(format!("cat {}/hello", m2.display())).output().expect("ssh runs");
    assert_eq!(String::from_utf8_lossy(&ls.stdout), text, "n1 over ssh does not see n2's mount");

    // (b) dd with conv=fsync from n1's namespace runs at the link's rate (100 Mbit/s is 12.5 MB/s
    // on the wire; sshfs gets about 11.8).
    let alone = wait_dd(spawn_dd(&tb, "n1", &m1.join("alone"), MIB));
    println!("n1 alone: {alone:.1} MB/s ({MIB} MiB, conv=fsync, 100mbit)");
    assert!((4.0..13.0).contains(&alone), "n1 alone wrote at {alone:.1} MB/s, not what a 100 Mbit link allows");

    // Two writers on n1 share n1's one link: each gets less than one alone did.
    let (a, b) = (spawn_dd(&tb, "n1", &m1.join("two_a"), MIB), spawn_dd(&tb, "n1", &m1.join("two_b"), MIB));
    let (a, b) = (wait_dd(a), wait_dd(b));
    println!("two at once on n1: {a:.1} and {b:.1} MB/s");
    assert!(a < alone * 0.85 && b < alone * 0.85, "two writers on n1's link ({a:.1}, {b:.1}) against {alone:.1} alone");

    // n1 and n2 at once: each node has its own link to the server, and sshfs is no cluster
    // filesystem, so each keeps about its alone rate and together they move more.
    let (a, b) = (spawn_dd(&tb, "n1", &m1.join("both_1"), MIB), spawn_dd(&tb, "n2", &m2.join("both_2"), MIB));
    let (a, b) = (wait_dd(a), wait_dd(b));
    println!("n1 and n2 at once: {a:.1} and {b:.1} MB/s");
    assert!(a < 13.0 && b < 13.0, "a 100 Mbit link carried more: {a:.1}, {b:.1}");
    assert!(a + b > alone * 1.4, "n1 and n2 share a bottleneck: {a:.1} + {b:.1} against {alone:.1} alone");
}

#[test]
fn gluster_testbed_replicates_to_both_bricks_and_locks_a_shared_file() {
    let tb = match Testbed::up(9, 2, Fs::Gluster, "100mbit") {
        Ok(t) => t,
        Err(why) => return skip(&why),
    };
    if let Some(why) = tb.gluster_error() {
        return skip(&format!("GlusterFS did not start: {why}"));
    }
    let (g1, g2) = (tb.gluster_mount("n1"), tb.gluster_mount("n2"));

    // (d) A file written through n1's mount lands in both bricks (replica 2) and n2 reads it.
    let out = tb
        .exec(
            "n1",
            "dd",
            &["if=/dev/urandom", &format!("of={}/replicated", g1.display()), "bs=64k", "count=4", "conv=fsync"],
        )
        .output()
        .expect("dd runs");
    assert!(out.status.success(), "dd on n1 failed: {}", String::from_utf8_lossy(&out.stderr));
    let written = std::fs::read(g1.join("replicated")).expect("read back through n1");
    assert_eq!(written.len(), 4 * 65536);
    let bricks = tb.gluster_bricks();
    assert_eq!(bricks.len(), 2);
    for brick in &bricks {
        let held =
            std::fs::read(brick.join("replicated")).unwrap_or_else(|e| panic!("{} lacks it: {e}", brick.display()));
        assert!(held == written, "brick {} holds other bytes", brick.display());
    }
    let seen = tb.exec("n2", "cat", &[&format!("{}/replicated", g2.display())]).output().expect("cat runs");
    assert!(seen.stdout == written, "n2 reads other bytes than n1 wrote");

    // Seed 000's check 4 on one shared file: alone n1 gets the link's rate; n1 and n2 writing
    // the same file at once each get less (Gluster serialises the two writers), although each
    // node has links of its own.
    let alone = wait_dd(spawn_dd(&tb, "n1", &g1.join("shared"), MIB));
    println!("gluster, n1 alone: {alone:.1} MB/s ({MIB} MiB, conv=fsync, 100mbit)");
    assert!((4.0..13.0).contains(&alone), "n1 alone wrote at {alone:.1} MB/s through Gluster over 100 Mbit links");
    let (a, b) = (spawn_dd(&tb, "n1", &g1.join("shared"), MIB), spawn_dd(&tb, "n2", &g2.join("shared"), MIB));
    let (a, b) = (wait_dd(a), wait_dd(b));
    println!("gluster, n1 and n2 at once on one file: {a:.1} and {b:.1} MB/s");
    assert!(a < alone * 0.85 && b < alone * 0.85, "no cost of sharing a file: {a:.1}, {b:.1} against {alone:.1}");
}

//! A replica and a load balancer started by a process do not outlive it when it is killed (SIGKILL runs no
//! destructor): their watchdogs stop them.

use std::{
    io::{BufRead, BufReader},
    os::unix::fs::PermissionsExt,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use edge_cluster::{Balancer, Replica, ReplicaSpec, free_port};

/// Set in the owner process this test starts (this same test binary).
const OWNER: &str = "EDGE_WATCHDOG_TEST_OWNER";

/// Whether `pid` runs (a zombie, ended but not reaped, does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')))
}

/// The processes whose parent is `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // `pid (comm) state ppid …`
        let parent = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        if parent == Some(pid) {
            children.push(child);
        }
    }
    children
}

/// The owner: starts a "replica" (a script that stays) and the balancer in front of it, prints their process
/// ids, and waits to be killed.
fn owner(dir: &std::path::Path) {
    let script = dir.join("replica.sh");
    std::fs::write(&script, "#!/bin/sh\necho 'Edge Console: http://127.0.0.1/'\nexec sleep 600\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let port = free_port().unwrap();
    let replica = Replica::start(ReplicaSpec {
        name: "a".into(),
        binary: script,
        data_dir: dir.join("replica-a"),
        port,
        database_url: None,
        args: vec![],
        env: vec![],
    })
    .unwrap();
    let listen = std::net::SocketAddr::from(([127, 0, 0, 1], free_port().unwrap()));
    let _balancer = Balancer::start(&dir.join("balancer"), listen, &[port]).unwrap();
    let children = children_of(std::process::id());
    println!("replica {}", replica.pid().unwrap());
    println!("children {}", children.iter().map(u32::to_string).collect::<Vec<_>>().join(" "));
    std::thread::sleep(Duration::from_secs(600));
}

#[test]
fn the_replica_and_the_balancer_stop_when_their_owner_is_killed() {
    if let Some(dir) = std::env::var_os(OWNER) {
        return owner(std::path::Path::new(&dir));
    }
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "the_replica_and_the_balancer_stop_when_their_owner_is_killed", "--nocapture"])
        .env(OWNER, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines().map_while(Result::ok);
    let mut pids: Vec<u32> = Vec::new();
    for line in lines.by_ref() {
        if let Some(rest) = line.strip_prefix("replica ") {
            pids.push(rest.trim().parse().unwrap());
        }
        if let Some(rest) = line.strip_prefix("children ") {
            pids.extend(rest.split_whitespace().map(|p| p.parse::<u32>().unwrap()));
            break;
        }
    }
    pids.sort();
    pids.dedup();
    let ran = pids.iter().all(|&p| running(p));

    child.kill().unwrap();
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while pids.iter().any(|&p| running(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let left: Vec<u32> = pids.iter().copied().filter(|&p| running(p)).collect();
    for p in &left {
        let _ = Command::new("kill").args(["-KILL", &p.to_string()]).status();
    }
    assert!(left.is_empty(), "still running after their owner was killed: {left:?}");
    // The replica, the balancer and the two watchdogs (and nothing else the owner started).
    assert_eq!(pids.len(), 4, "the owner's children: {pids:?}");
    assert!(ran, "they ran: {pids:?}");
}

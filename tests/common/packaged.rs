//! The packaged agent run as a service runs it: as an unprivileged user with
//! exactly the capabilities the package grants (`setpriv`), and what the
//! kernel says it holds. Used by tests/it/deb.rs and tests/it/rpm.rs.

use std::path::Path;
use std::process::Command;

use super::Agent;

/// `binary run --config CONFIG` as `user` and `group` (names or ids), with
/// `capabilities` only (as setpriv names them: `bpf`, `sys_ptrace`...;
/// none: none) in its inheritable, ambient and bounding sets, its stderr in
/// `log`.
pub fn agent_as(
    binary: &Path,
    (user, group): (&str, &str),
    capabilities: &[&str],
    config: &Path,
    port: u16,
    log: &Path,
) -> Agent {
    let caps: Vec<String> = capabilities.iter().map(|c| format!("+{c}")).collect();
    let caps = caps.join(",");
    let mut command = Command::new("setpriv");
    command
        .arg(format!("--reuid={user}"))
        .arg(format!("--regid={group}"))
        .args(["--init-groups", "--no-new-privs"]);
    if caps.is_empty() {
        command.args(["--inh-caps=-all", "--bounding-set=-all"]);
    } else {
        command
            .arg(format!("--inh-caps=-all,{caps}"))
            .arg(format!("--ambient-caps=-all,{caps}"))
            .arg(format!("--bounding-set=-all,{caps}"));
    }
    command
        .arg(binary)
        .args(["run", "--config"])
        .arg(config)
        .stderr(std::fs::File::create(log).unwrap());
    Agent::from_child(port, command.spawn().unwrap())
}

/// The BPF programs process `pid` holds open: its file descriptors the
/// kernel names `anon_inode:bpf-prog`.
pub fn bpf_programs_held(pid: u32) -> usize {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter(|target| target.to_string_lossy() == "anon_inode:bpf-prog")
        .count()
}

/// How many programs the BPF source defines (`SEC("usdt")`), which a
/// loaded agent holds one descriptor each of.
pub fn usdt_programs() -> usize {
    let source = super::root().join("src/sources/ebpf/safepoints.bpf.c");
    std::fs::read_to_string(source)
        .unwrap()
        .matches("SEC(\"usdt\")")
        .count()
}

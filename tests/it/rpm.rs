//! The RPM package: built by `packaging/build-rpm.sh` (cargo-generate-rpm),
//! read back with `rpm` itself (`-qlp`, `--scripts`, file flags, requires,
//! digests), then installed into an empty root (`rpm --root`, scripts off:
//! the root has no shell) where the shipped binary checks the shipped
//! configuration, and systemd's own `systemd-sysusers` and `systemd-tmpfiles`
//! apply the package's sysusers.d and tmpfiles.d files, as its post-install
//! script does on a host: the `pausewatch` user and its 0750 state directory.
//! The binary, built with `--features ebpf`, requires the system's libelf and
//! zlib, and run from that root as `nobody` with `CAP_BPF` and `CAP_PERFMON`
//! it holds the eBPF probes' programs open; without them it says
//! `permission_denied` and holds none.
//!
//! The expected contents are the .deb's (tests/it/deb.rs), in RPM's places.
//!
//! Needs root (`rpm --root` sets owners), rpm and cargo-generate-rpm
//! (`.ci/run` installs them); without one the test is skipped (`common::skip`). It builds
//! the release binary, which tests/it/deb.rs builds too.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common::packaged::{agent_as, bpf_programs_held, usdt_programs};
use crate::common::{run_stdout, toml_string};

use crate::common;

const CONFFILE: &str = "/etc/pausewatch/pausewatch.toml";
const SYSUSERS: &str = "/usr/lib/sysusers.d/pausewatch.conf";
const TMPFILES: &str = "/usr/lib/tmpfiles.d/pausewatch.conf";
/// The user and group the installed binary runs as here (the root's own
/// `pausewatch` user is not the host's): nobody, nogroup on Debian.
const NOBODY: u32 = 65534;
const NOBODY_ID: &str = "65534";
/// Every file of the package but the user guide, as `rpm -qlp` lists them
/// (sorted).
const FILES: [&str; 20] = [
    CONFFILE,
    "/usr/bin/pausewatch",
    "/usr/lib/systemd/system/pausewatch.service",
    SYSUSERS,
    TMPFILES,
    "/usr/share/bash-completion/completions/pausewatch",
    "/usr/share/doc/pausewatch/README.md",
    "/usr/share/fish/vendor_completions.d/pausewatch.fish",
    "/usr/share/man/man1/pausewatch-analyze.1.gz",
    "/usr/share/man/man1/pausewatch-check-config.1.gz",
    "/usr/share/man/man1/pausewatch-compare.1.gz",
    "/usr/share/man/man1/pausewatch-completions.1.gz",
    "/usr/share/man/man1/pausewatch-man.1.gz",
    "/usr/share/man/man1/pausewatch-replay.1.gz",
    "/usr/share/man/man1/pausewatch-report.1.gz",
    "/usr/share/man/man1/pausewatch-rules.1.gz",
    "/usr/share/man/man1/pausewatch-run.1.gz",
    "/usr/share/man/man1/pausewatch.1.gz",
    "/usr/share/man/man5/pausewatch.toml.5.gz",
    "/usr/share/zsh/site-functions/_pausewatch",
];

/// Why the test cannot run here, if it cannot.
fn missing_prerequisite() -> Option<String> {
    common::missing_root_or_tool(
        "rpm --root sets file owners",
        &[
            ("rpm", &["--version"]),
            ("cargo", &["generate-rpm", "--version"]),
            ("systemd-sysusers", &["--version"]),
            ("systemd-tmpfiles", &["--version"]),
            ("setpriv", &["--version"]),
        ],
    )
}

/// `rpm -qp --queryformat FORMAT PACKAGE`.
fn query(rpm: &Path, format: &str) -> String {
    run_stdout(
        "rpm",
        &["-qp", "--queryformat", format, rpm.to_str().unwrap()],
    )
}

#[test]
fn the_rpm_holds_the_debs_files_and_its_scripts_make_the_user_and_state_directory() {
    if let Some(reason) = missing_prerequisite() {
        return common::skip(reason);
    }
    let rpm = common::build_package("build-rpm.sh");
    let path = rpm.to_str().unwrap();

    // Intact, named and versioned as the crate.
    run_stdout("rpm", &["-K", "--nosignature", path]);
    assert_eq!(
        query(&rpm, "%{NAME} %{VERSION}"),
        format!("pausewatch {}", env!("CARGO_PKG_VERSION"))
    );

    let mut files: Vec<String> = run_stdout("rpm", &["-qlp", path])
        .lines()
        .map(str::to_string)
        .collect();
    files.sort();
    // ... and every page of the user guide, which README links to.
    let mut expected: Vec<String> = FILES.iter().map(|f| f.to_string()).collect();
    expected.extend(
        common::docs::guide_pages().map(|page| format!("/usr/share/doc/pausewatch/docs/{page}")),
    );
    expected.sort();
    assert_eq!(files, expected);
    // The configuration survives upgrades when edited (%config(noreplace)).
    assert_eq!(run_stdout("rpm", &["-qcp", path]).trim(), CONFFILE);
    let flags = query(&rpm, "[%{FILEFLAGS:fflags} %{FILENAMES}\n]");
    assert!(
        flags.lines().any(|l| l == format!("cn {CONFFILE}")),
        "{flags}"
    );
    let requires = run_stdout("rpm", &["-qpR", path]);
    // rpm's own find-requires, from the binary's dynamic section.
    for expected in ["systemd", "libelf.so.1()(64bit)", "libz.so.1()(64bit)"] {
        assert!(
            requires.lines().any(|l| l.trim() == expected),
            "no {expected} in:\n{requires}"
        );
    }

    // The scripts: the user and state directory after install, the
    // service stopped on erase and restarted on upgrade; valid sh.
    let scripts = run_stdout("rpm", &["-qp", "--scripts", path]);
    for expected in [
        "postinstall scriptlet",
        &format!("systemd-sysusers {SYSUSERS}"),
        &format!("systemd-tmpfiles --create {TMPFILES}"),
        "preuninstall scriptlet",
        "disable --now pausewatch.service",
        "postuninstall scriptlet",
        "try-restart pausewatch.service",
    ] {
        assert!(scripts.contains(expected), "no {expected:?} in:\n{scripts}");
    }
    for tag in ["POSTIN", "PREUN", "POSTUN"] {
        let script = query(&rpm, &format!("%{{{tag}}}"));
        let syntax = Command::new("sh")
            .args(["-n", "-c", &script])
            .output()
            .unwrap();
        assert!(syntax.status.success(), "{tag}: {syntax:?}\n{script}");
    }

    // Installed into an empty root.
    let tmp = tempfile::tempdir().unwrap();
    // Open to `nobody`, who runs the installed binary below.
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = tmp.path();
    let root_arg = format!("--root={}", root.display());
    run_stdout("rpm", &[&root_arg, "--initdb"]);
    run_stdout(
        "rpm",
        &[
            &root_arg,
            "-i",
            "--nodeps",
            "--noscripts",
            "--notriggers",
            path,
        ],
    );
    let installed = |file: &str| root.join(file.trim_start_matches('/'));
    let binary = installed("/usr/bin/pausewatch");
    let sections = run_stdout("readelf", &["-S", binary.to_str().unwrap()]);
    assert!(!sections.contains(".debug_info"), "not stripped");
    run_stdout(
        binary.to_str().unwrap(),
        &["check-config", installed(CONFFILE).to_str().unwrap()],
    );
    assert_eq!(
        std::fs::read_to_string(installed("/usr/lib/systemd/system/pausewatch.service")).unwrap(),
        std::fs::read_to_string(common::root().join("packaging/debian/pausewatch.service"))
            .unwrap()
    );

    // What the post-install script does, by systemd's tools in that root
    // (which read the package's files there: the only ones in it).
    std::fs::create_dir_all(installed("/etc")).unwrap();
    run_stdout("systemd-sysusers", &[&root_arg]);
    run_stdout("systemd-tmpfiles", &[&root_arg, "--create"]);
    let passwd = std::fs::read_to_string(installed("/etc/passwd")).unwrap();
    let user: Vec<&str> = passwd
        .lines()
        .find(|l| l.starts_with("pausewatch:"))
        .unwrap_or_else(|| panic!("no pausewatch user in:\n{passwd}"))
        .split(':')
        .collect();
    let uid: u32 = user[2].parse().unwrap();
    assert!(uid > 0 && uid < 1000, "not a system user: {user:?}");
    assert_eq!(user[5], "/var/lib/pausewatch");
    let state = std::fs::metadata(installed("/var/lib/pausewatch")).unwrap();
    assert_eq!((state.uid(), state.gid()), (uid, user[3].parse().unwrap()));
    assert_eq!(state.mode() & 0o7777, 0o750);

    // The eBPF probes, loaded at start with discovery on (which finds no
    // JVM here: its filter matches none).
    for (name, capabilities) in [("with", &["bpf", "perfmon"][..]), ("without", &[][..])] {
        let state = tmp.path().join(format!("state-{name}"));
        std::fs::create_dir(&state).unwrap();
        std::os::unix::fs::chown(&state, Some(NOBODY), Some(NOBODY)).unwrap();
        let port = common::free_port();
        let config = tmp.path().join(format!("{name}.toml"));
        std::fs::write(
            &config,
            format!(
                "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = {}\n\
                 [discovery]\ninclude = \"-Dno.such.jvm=rpm-test\"\n",
                toml_string(&state)
            ),
        )
        .unwrap();
        std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();
        let log = tmp.path().join(format!("{name}.stderr"));
        let agent = agent_as(
            &binary,
            (NOBODY_ID, NOBODY_ID),
            capabilities,
            &config,
            port,
            &log,
        );
        agent.metrics_when(Duration::from_secs(20), |m| m.ends_with("# EOF\n"));
        let held = bpf_programs_held(agent.pid());
        let stderr = std::fs::read_to_string(&log).unwrap();
        if capabilities.is_empty() {
            assert_eq!(held, 0, "{stderr}");
            assert!(stderr.contains("permission_denied"), "{stderr}");
        } else {
            assert_eq!(held, usdt_programs(), "{stderr}");
        }
    }
}

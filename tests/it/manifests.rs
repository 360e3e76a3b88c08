//! The Kubernetes manifests under `packaging/kubernetes/`: `yamllint` and
//! `kubernetes-validate --strict` (PyPI, installed by `.ci/run`) accept them
//! and reject a broken copy (so the validators are really checking), and
//! the DaemonSet grants what the agent needs and nothing more.

use std::path::Path;
use std::process::Command;

use serde::Deserialize;
use serde_yaml_ng::Value;

use crate::common;

fn manifests() -> std::path::PathBuf {
    common::root().join("packaging/kubernetes")
}

/// Status and output of a validator, or `None` (after skipping) when it is not installed.
fn validate(tool: &str, args: &[&str], files: &[&Path]) -> Option<(bool, String)> {
    let output = match Command::new(tool).args(args).args(files).output() {
        Ok(output) => output,
        Err(error) => {
            common::skip(format_args!(
                "{tool} cannot run ({error}); `pip install yamllint kubernetes-validate`"
            ));
            return None;
        }
    };
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    Some((output.status.success(), text))
}

#[test]
fn manifests_pass_yamllint_and_kubernetes_validate_and_a_broken_copy_does_not() {
    let dir = manifests();
    let lint_config = dir.join(".yamllint");
    let lint = ["-s", "-c", lint_config.to_str().unwrap()];
    let daemonset = dir.join("daemonset.yaml");
    let podmonitor = dir.join("podmonitor.yaml");
    let files = [daemonset.as_path(), podmonitor.as_path()];
    let Some((ok, text)) = validate("yamllint", &lint, &files) else {
        return;
    };
    assert!(ok, "yamllint: {text}");
    let Some((ok, text)) = validate("kubernetes-validate", &["--strict"], &files) else {
        return;
    };
    assert!(ok, "kubernetes-validate: {text}");
    assert!(text.contains("daemonset/pausewatch"), "{text}");

    let tmp = tempfile::tempdir().unwrap();
    let broken = tmp.path().join("daemonset.yaml");
    let original = std::fs::read_to_string(&daemonset).unwrap();
    std::fs::write(
        &broken,
        original.replace("hostPID: true", "hostPID: sometimes"),
    )
    .unwrap();
    let (ok, text) = validate("kubernetes-validate", &["--strict"], &[&broken]).unwrap();
    assert!(!ok, "a string hostPID passed: {text}");
    std::fs::write(
        &broken,
        original.replace("    type: RollingUpdate", "   type: RollingUpdate"),
    )
    .unwrap();
    let (ok, text) = validate("yamllint", &lint, &[&broken]).unwrap();
    assert!(!ok, "bad indentation passed: {text}");
}

#[test]
fn the_daemonset_grants_four_capabilities_and_mounts_the_host_read_only() {
    let text = std::fs::read_to_string(manifests().join("daemonset.yaml")).unwrap();
    let daemonset = serde_yaml_ng::Deserializer::from_str(&text)
        .map(|document| Value::deserialize(document).unwrap())
        .find(|d| d["kind"] == "DaemonSet")
        .expect("a DaemonSet");
    let pod = &daemonset["spec"]["template"]["spec"];
    assert_eq!(pod["hostPID"], Value::Bool(true));
    assert_eq!(pod["securityContext"]["runAsNonRoot"], Value::Bool(true));
    let container = &pod["containers"][0];
    let capabilities = &container["securityContext"]["capabilities"];
    let names = |v: &Value| -> Vec<String> {
        v.as_sequence()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        names(&capabilities["add"]),
        ["DAC_READ_SEARCH", "SYS_PTRACE", "BPF", "PERFMON"]
    );
    assert_eq!(names(&capabilities["drop"]), ["ALL"]);
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    for kind in ["requests", "limits"] {
        assert!(container["resources"][kind]["memory"].is_string(), "{kind}");
        assert!(container["resources"][kind]["cpu"].is_string(), "{kind}");
    }
    let host_paths: Vec<(String, String)> = pod["volumes"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|v| {
            Some((
                v["name"].as_str()?.to_string(),
                v["hostPath"]["path"].as_str()?.to_string(),
            ))
        })
        .collect();
    for mount in container["volumeMounts"].as_sequence().unwrap() {
        let name = mount["name"].as_str().unwrap();
        let Some((_, host)) = host_paths.iter().find(|(n, _)| n == name) else {
            continue;
        };
        let read_only = mount["readOnly"] == Value::Bool(true);
        assert_eq!(
            read_only,
            host != "/var/lib/pausewatch",
            "{host} mounted as {mount:?}"
        );
    }
    let hosts: Vec<&str> = host_paths.iter().map(|(_, h)| h.as_str()).collect();
    for host in ["/var/log", "/tmp", "/proc", "/var/lib/pausewatch"] {
        assert!(hosts.contains(&host), "{host} not mounted: {hosts:?}");
    }
    let annotations = &daemonset["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(annotations["prometheus.io/scrape"], "true");
}

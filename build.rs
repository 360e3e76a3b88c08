//! Stamps the binary with the commit it was built from, for `--version`: a
//! bug report then names the exact source. A build outside git (a source
//! tarball) says so instead of failing. With the `ebpf` feature it also
//! compiles the eBPF safepoint source's BPF program (clang, through
//! libbpf-cargo), which the binary embeds.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    (output.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

fn main() {
    let commit =
        git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown commit".to_string());
    println!("cargo:rustc-env=PAUSEWATCH_COMMIT={commit}");
    // Rebuilt when HEAD moves (a commit, a checkout); `logs/HEAD` grows on both.
    if let Some(git_dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={git_dir}/HEAD");
        println!("cargo:rerun-if-changed={git_dir}/logs/HEAD");
    }
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "ebpf")]
    build_bpf();
}

/// Compiles each BPF program (the eBPF safepoint source's and the kernel
/// request-latency source's) into `OUT_DIR` with its generated skeleton,
/// which the binary includes. Debian's UAPI headers (`asm/types.h`) live
/// under the multiarch directory, which clang's BPF target does not search.
#[cfg(feature = "ebpf")]
fn build_bpf() {
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let multiarch = format!(
        "-I/usr/include/{}-linux-gnu",
        std::env::var("CARGO_CFG_TARGET_ARCH").expect("CARGO_CFG_TARGET_ARCH")
    );
    for (dir, name, header) in [
        ("src/sources/ebpf", "safepoints", "safepoints.h"),
        ("src/sources/requests", "requests", "requests.h"),
    ] {
        let dir = std::path::Path::new(dir);
        let source = dir.join(format!("{name}.bpf.c"));
        libbpf_cargo::SkeletonBuilder::new()
            .source(&source)
            .obj(out.join(format!("{name}.bpf.o")))
            .clang_args([
                multiarch.clone(),
                format!("-I{}", dir.display()),
                "-Isrc/sources/ebpf".to_string(),
            ])
            .build_and_generate(out.join(format!("{name}.skel.rs")))
            .unwrap_or_else(|e| {
                panic!("the ebpf feature compiles {} with clang (Debian: clang libelf-dev zlib1g-dev pkg-config): {e:#}", source.display())
            });
        for file in [
            source,
            dir.join(header),
            "src/sources/ebpf/budget.bpf.h".into(),
        ] {
            println!("cargo:rerun-if-changed={}", file.display());
        }
    }
}

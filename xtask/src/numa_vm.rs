//! `cargo xtask numa-vm [--nodes 2|4] [--cpus N] [--timeout SECS]`: the
//! NUMA tests on a real multi-node kernel.
//!
//! This machine has one NUMA node, so every multi-node result elsewhere
//! comes from a synthetic hwloc topology whose bindings are recorded, not
//! made. Here the tests meet a kernel that has several nodes: an emulated
//! x86-64 guest (QEMU, TCG: KVM hung at boot on this machine) with
//! `-numa node,...` nodes, each with its own RAM backend and CPUs, booted
//! straight into an initramfs that holds busybox, the test binaries and the
//! shared libraries they load. The guest's init runs them, their output
//! comes back over the serial console (printed here with a `[guest]`
//! prefix), and the last line the guest prints is a marker with their
//! status, which becomes this command's status. No network, no disk image,
//! nothing downloaded at run time; a wall-clock limit kills a guest that
//! hangs.
//!
//! The guest is emulated: every node is the same host memory and TCG runs
//! everything many times slower, so what it shows are binding and locality
//! facts measured by the guest kernel, never timings.

use crate::steps::{Runner, cargo, root};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Debian packages the guest is built from.
const APT_PACKAGES: &[&str] = &[
    "qemu-system-x86",
    "linux-image-amd64",
    "busybox-static",
    "cpio",
];

/// The line the guest's init prints last, followed by the status.
const MARKER: &str = "HOTMEM-NUMA-VM-STATUS:";

/// Guest RAM per node, in MiB.
const MIB_PER_NODE: u32 = 384;

/// Default wall-clock limit for one guest run.
const DEFAULT_TIMEOUT_SECS: u32 = 900;

/// The guest's shape.
#[derive(Copy, Clone, Debug)]
pub(crate) struct VmShape {
    /// NUMA nodes.
    pub(crate) nodes: u32,
    /// CPUs in all, spread evenly over the nodes.
    pub(crate) cpus: u32,
    /// Wall-clock limit for the boot and every test in it.
    pub(crate) timeout: Duration,
}

impl VmShape {
    /// `nodes` nodes of `cpus_per_node` CPUs each.
    pub(crate) fn new(nodes: u32, cpus_per_node: u32) -> VmShape {
        VmShape {
            nodes,
            cpus: nodes * cpus_per_node,
            timeout: Duration::from_secs(u64::from(DEFAULT_TIMEOUT_SECS)),
        }
    }
}

/// What the host has to boot a guest with.
struct Tools {
    qemu: PathBuf,
    kernel: PathBuf,
    busybox: PathBuf,
}

/// Whether the guest can run here.
pub(crate) enum Availability {
    Ready,
    /// The packages are missing and cannot be installed; the reason, with
    /// the exact command to run.
    Unavailable(String),
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The newest `/boot/vmlinuz-*` (by name; Debian names them by version).
fn kernel() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/boot")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("vmlinuz-") && !n.ends_with(".dpkg-new"))
        })
        .collect();
    found.sort();
    found.pop()
}

fn busybox() -> Option<PathBuf> {
    ["/bin/busybox", "/usr/bin/busybox"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

fn find_tools() -> Result<Tools, Vec<&'static str>> {
    let qemu = on_path("qemu-system-x86_64");
    let kernel = kernel();
    let busybox = busybox();
    let cpio = on_path("cpio");
    match (qemu, kernel, busybox, cpio) {
        (Some(qemu), Some(kernel), Some(busybox), Some(_)) => Ok(Tools {
            qemu,
            kernel,
            busybox,
        }),
        (q, k, b, c) => {
            let mut missing = Vec::new();
            if q.is_none() {
                missing.push("qemu-system-x86_64 (qemu-system-x86)");
            }
            if k.is_none() {
                missing.push("/boot/vmlinuz-* (linux-image-amd64)");
            }
            if b.is_none() {
                missing.push("busybox (busybox-static)");
            }
            if c.is_none() {
                missing.push("cpio");
            }
            Err(missing)
        }
    }
}

/// Finds the guest's tools, installing their packages through the same
/// path as the build's own (`apt-get` as root on Debian; otherwise the
/// exact command to run).
pub(crate) fn ensure_tools() -> Availability {
    let missing = match find_tools() {
        Ok(_) => return Availability::Ready,
        Err(m) => m,
    };
    let missing_list = missing.join(", ");
    eprintln!("xtask numa-vm: missing {missing_list}");
    if let Err(e) = crate::system::install_apt_packages(APT_PACKAGES) {
        return Availability::Unavailable(format!("missing {missing_list}: {e}"));
    }
    match find_tools() {
        Ok(_) => Availability::Ready,
        Err(still) => {
            Availability::Unavailable(format!("still missing after apt-get: {}", still.join(", ")))
        }
    }
}

/// A binary to run in the guest, with its arguments.
struct GuestProgram {
    /// Name in the guest (`/hotmem/NAME`) and in the output.
    name: String,
    host_path: PathBuf,
    args: Vec<String>,
}

/// The executables a cargo command with `--message-format=json` produced,
/// with each target's name: only lines of compiler artifacts that have one.
fn executables(json: &str) -> Vec<(String, PathBuf)> {
    json.lines()
        .filter(|l| l.contains("\"reason\":\"compiler-artifact\""))
        .filter_map(|l| {
            let exe = string_field(l, "executable")?;
            let name = string_field(l, "name")?;
            Some((name, PathBuf::from(exe)))
        })
        .collect()
}

/// The first `"key":"value"` string of a JSON line (paths and target names
/// here have no escapes; a value with one is skipped).
fn string_field(line: &str, key: &str) -> Option<String> {
    let pat = format!("\"{key}\":\"");
    let start = line.find(&pat)? + pat.len();
    let len = line[start..].find('"')?;
    let value = &line[start..start + len];
    (!value.contains('\\')).then(|| value.to_string())
}

/// Runs a cargo build step and returns its JSON messages.
fn cargo_json(r: &mut Runner, name: &str, args: &[&str]) -> Result<String, String> {
    let mut c = cargo(args);
    c.arg("--message-format=json");
    // The step's name as a file name: "numa-vm: build hotmem tests" ->
    // "build-hotmem-tests.json".
    let stem: String = name
        .trim_start_matches("numa-vm: ")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let out_file = root().join("target/numa-vm").join(format!("{stem}.json"));
    std::fs::create_dir_all(out_file.parent().expect("has a parent"))
        .map_err(|e| format!("create target/numa-vm: {e}"))?;
    let file = std::fs::File::create(&out_file).map_err(|e| format!("{e}"))?;
    c.stdout(file);
    r.step(name, &mut c)?;
    std::fs::read_to_string(&out_file).map_err(|e| format!("read {}: {e}", out_file.display()))
}

/// Builds what runs in the guest: the test binaries (debug, as `cargo
/// test` builds them) and the `numa_relocation` example.
fn build_programs(r: &mut Runner) -> Result<Vec<GuestProgram>, String> {
    let mut programs = Vec::new();
    let quiet = |s: &str| vec![s.to_string(), "--test-threads=1".to_string()];
    for (pkg, targets) in [
        (
            "hotmem-numa",
            &["--lib", "--test", "real_binding", "--test", "kernel_numa"][..],
        ),
        ("hotmem", &["--test", "numa_guest"][..]),
    ] {
        let mut args = vec!["test", "--no-run", "-p", pkg];
        args.extend_from_slice(targets);
        let json = cargo_json(r, &format!("numa-vm: build {pkg} tests"), &args)?;
        for (name, path) in executables(&json) {
            let name = if name == pkg.replace('-', "_") {
                format!("{name}-lib")
            } else {
                name
            };
            programs.push(GuestProgram {
                name,
                host_path: path,
                args: quiet("--nocapture"),
            });
        }
    }
    let json = cargo_json(
        r,
        "numa-vm: build the numa_relocation example",
        &[
            "build",
            "-p",
            "hotmem-examples",
            "--example",
            "numa_relocation",
        ],
    )?;
    let example = executables(&json)
        .into_iter()
        .find(|(n, _)| n == "numa_relocation")
        .ok_or("cargo built no numa_relocation executable")?;
    programs.push(GuestProgram {
        name: example.0,
        host_path: example.1,
        args: Vec::new(),
    });
    Ok(programs)
}

/// The shared libraries `binary` loads, as `ldd` lists them (the dynamic
/// loader included).
fn shared_libraries(binary: &Path) -> Result<Vec<PathBuf>, String> {
    let out = Command::new("ldd")
        .arg(binary)
        .output()
        .map_err(|e| format!("cannot run ldd: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "ldd {} failed: {}",
            binary.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mut libs = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        // "libx.so.1 => /usr/lib/.../libx.so.1 (0x...)" or
        // "/lib64/ld-linux-x86-64.so.2 (0x...)"; "linux-vdso.so.1 (0x...)"
        // has no file.
        let path = match line.split_once("=>") {
            Some((_, right)) => right.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        if let Some(p) = path.filter(|p| p.starts_with('/')) {
            libs.push(PathBuf::from(p));
        }
    }
    Ok(libs)
}

/// Copies `from` (following links) to `to` under the staging root.
fn copy_into(staging: &Path, guest_path: &Path, from: &Path) -> Result<(), String> {
    let rel = guest_path.strip_prefix("/").unwrap_or(guest_path);
    let to = staging.join(rel);
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
    }
    std::fs::copy(from, &to)
        .map(|_| ())
        .map_err(|e| format!("copy {} -> {}: {e}", from.display(), to.display()))
}

/// The guest's `/init`: mounts what hwloc reads, runs every program in
/// turn, prints the marker with the first failing status (0 when all
/// passed), and powers the guest off.
fn init_script(programs: &[GuestProgram], lib_dirs: &[String], shape: VmShape) -> String {
    let mut s = String::new();
    s.push_str("#!/bin/busybox sh\n");
    s.push_str("# Written by `cargo xtask numa-vm` (xtask/src/numa_vm.rs).\n");
    s.push_str("/bin/busybox --install -s /bin\n");
    s.push_str("mkdir -p /proc /sys /dev /tmp\n");
    s.push_str("mount -t proc proc /proc\n");
    s.push_str("mount -t sysfs sysfs /sys\n");
    s.push_str("mount -t devtmpfs devtmpfs /dev 2>/dev/null\n");
    s.push_str("mount -t tmpfs tmpfs /tmp\n");
    s.push_str(&format!("export LD_LIBRARY_PATH={}\n", lib_dirs.join(":")));
    s.push_str("export PATH=/bin RUST_BACKTRACE=1 HOTMEM_GUEST=numa-vm\n");
    s.push_str(&format!(
        "echo \"numa-vm guest: emulated (QEMU TCG), {} nodes x {} CPUs; locality and binding facts only, timings here are not NUMA timings\"\n",
        shape.nodes,
        shape.cpus / shape.nodes
    ));
    s.push_str("echo \"numa-vm guest: kernel $(uname -r), $(nproc) CPUs online\"\n");
    s.push_str(
        "for n in /sys/devices/system/node/node*; do \
         echo \"numa-vm guest: $(basename $n) cpus=$(cat $n/cpulist) $(grep MemTotal $n/meminfo | sed 's/  */ /g; s/^Node [0-9]* //')\"; done\n",
    );
    s.push_str("status=0\n");
    for p in programs {
        let args = p.args.join(" ");
        s.push_str(&format!(
            "echo \"numa-vm guest: ==> {name} {args}\"\n\
             /hotmem/{name} {args}\n\
             rc=$?\n\
             echo \"numa-vm guest: <== {name} exit $rc\"\n\
             if [ $rc -ne 0 ] && [ $status -eq 0 ]; then status=$rc; fi\n",
            name = p.name
        ));
    }
    s.push_str(&format!("echo \"{MARKER} $status\"\n"));
    s.push_str("sync\npoweroff -f\n");
    s
}

/// Packs busybox, the programs and their libraries into a newc cpio
/// archive; returns its path.
fn pack(programs: &[GuestProgram], tools: &Tools, shape: VmShape) -> Result<PathBuf, String> {
    let dir = root().join("target/numa-vm");
    let staging = dir.join(format!("root-{}n", shape.nodes));
    if staging.exists() {
        std::fs::remove_dir_all(&staging)
            .map_err(|e| format!("clean {}: {e}", staging.display()))?;
    }
    copy_into(&staging, Path::new("/bin/busybox"), &tools.busybox)?;
    let mut libs: Vec<PathBuf> = Vec::new();
    for p in programs {
        let guest = PathBuf::from("/hotmem").join(&p.name);
        copy_into(&staging, &guest, &p.host_path)?;
        // Debug info is most of a test binary's size and the archive is
        // unpacked into the guest's RAM: strip it where `strip` exists.
        let _ = Command::new("strip")
            .arg("--strip-debug")
            .arg(staging.join(guest.strip_prefix("/").expect("absolute")))
            .status();
        for lib in shared_libraries(&p.host_path)? {
            if !libs.contains(&lib) {
                libs.push(lib);
            }
        }
    }
    let mut lib_dirs: Vec<String> = Vec::new();
    for lib in &libs {
        copy_into(&staging, lib, lib)?;
        // Also under the name's real directory, so that the loader finds a
        // library whichever of /lib or /usr/lib it looks in.
        if let Ok(real) = std::fs::canonicalize(lib) {
            let real_dir = real
                .parent()
                .map(|d| d.join(lib.file_name().expect("file")));
            if let Some(alt) = real_dir.filter(|a| a != lib) {
                copy_into(&staging, &alt, lib)?;
            }
        }
        let d = lib
            .parent()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        if !lib_dirs.contains(&d) {
            lib_dirs.push(d);
        }
    }
    let init = staging.join("init");
    std::fs::write(&init, init_script(programs, &lib_dirs, shape))
        .map_err(|e| format!("write init: {e}"))?;
    let chmod = Command::new("chmod")
        .args(["0755"])
        .arg(&init)
        .status()
        .map_err(|e| format!("chmod: {e}"))?;
    if !chmod.success() {
        return Err("chmod of the guest's init failed".into());
    }
    let archive = dir.join(format!("initramfs-{}n.cpio", shape.nodes));
    let out = std::fs::File::create(&archive).map_err(|e| format!("{e}"))?;
    let status = Command::new("sh")
        .args(["-c", "find . | cpio -o -H newc --quiet"])
        .current_dir(&staging)
        .stdout(out)
        .status()
        .map_err(|e| format!("cannot run cpio: {e}"))?;
    if !status.success() {
        return Err(format!("cpio failed: {status}"));
    }
    let size = std::fs::metadata(&archive).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "xtask numa-vm: initramfs {} ({:.1} MiB, {} programs, {} shared libraries)",
        archive.display(),
        size as f64 / (1 << 20) as f64,
        programs.len(),
        libs.len()
    );
    Ok(archive)
}

/// The QEMU command line for `shape`.
fn qemu_command(tools: &Tools, initrd: &Path, shape: VmShape) -> Command {
    let mut c = Command::new(&tools.qemu);
    let per_node = shape.cpus / shape.nodes;
    c.args(["-accel", "tcg", "-cpu", "max"])
        .args(["-smp", &shape.cpus.to_string()])
        .args(["-m", &format!("{}M", MIB_PER_NODE * shape.nodes)]);
    for k in 0..shape.nodes {
        let first = k * per_node;
        let last = first + per_node - 1;
        let cpus = if first == last {
            first.to_string()
        } else {
            format!("{first}-{last}")
        };
        c.args([
            "-object",
            &format!("memory-backend-ram,size={MIB_PER_NODE}M,id=m{k}"),
            "-numa",
            &format!("node,nodeid={k},cpus={cpus},memdev=m{k}"),
        ]);
    }
    c.args(["-nographic", "-no-reboot", "-nic", "none"])
        .arg("-kernel")
        .arg(&tools.kernel)
        .arg("-initrd")
        .arg(initrd)
        .args([
            "-append",
            "console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init",
        ]);
    c
}

/// What the serial console said: the guest's status from the marker line.
enum GuestEnd {
    Status(i32),
    /// The console closed without the marker (the guest crashed).
    NoMarker,
    TimedOut,
}

/// `line` without terminal escape sequences (the firmware clears the
/// screen) and other control characters.
fn plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // ESC [ params final-byte, or ESC and one character.
            if chars.next_if_eq(&'[').is_some() {
                for p in chars.by_ref() {
                    if ('@'..='~').contains(&p) {
                        break;
                    }
                }
            } else {
                chars.next();
            }
        } else if !c.is_control() {
            out.push(c);
        }
    }
    out
}

/// Boots the guest and streams its console, each line prefixed `[guest]`.
fn boot(r: &mut Runner, tools: &Tools, initrd: &Path, shape: VmShape) -> Result<(), String> {
    let mut cmd = qemu_command(tools, initrd, shape);
    let step = format!(
        "numa-vm guest ({} nodes x {} CPUs, emulated)",
        shape.nodes,
        shape.cpus / shape.nodes
    );
    eprintln!("\n==> [{step}] {}", crate::steps::show(&cmd));
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", tools.qemu.display()))?;
    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).split(b'\n') {
            let Ok(line) = line else { break };
            let text = String::from_utf8_lossy(&line)
                .trim_end_matches(['\r', '\n'])
                .to_string();
            if tx.send(text).is_err() {
                break;
            }
        }
    });
    let deadline = started + shape.timeout;
    let end = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break GuestEnd::TimedOut;
        }
        match rx.recv_timeout(left) {
            Ok(line) => {
                let shown = plain(&line);
                println!("[guest] {shown}");
                if let Some(rest) = shown.trim().strip_prefix(MARKER) {
                    match rest.trim().parse::<i32>() {
                        Ok(s) => break GuestEnd::Status(s),
                        Err(_) => eprintln!("xtask numa-vm: unreadable marker `{shown}`"),
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => break GuestEnd::TimedOut,
            Err(mpsc::RecvTimeoutError::Disconnected) => break GuestEnd::NoMarker,
        }
    };
    // The guest powers itself off after the marker; give it a moment, then
    // make sure no QEMU outlives the run.
    let grace = Instant::now() + Duration::from_secs(20);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < grace && !matches!(end, GuestEnd::TimedOut) => {
                std::thread::sleep(Duration::from_millis(100));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
        }
    }
    drop(rx);
    let _ = reader.join();
    let took = started.elapsed();
    let result = match end {
        GuestEnd::Status(0) => Ok(()),
        GuestEnd::Status(s) => Err(format!(
            "[{step}] a program in the guest failed (status {s})"
        )),
        GuestEnd::NoMarker => Err(format!(
            "[{step}] the guest's console closed without the `{MARKER}` line (crash or panic in the guest)"
        )),
        GuestEnd::TimedOut => Err(format!(
            "[{step}] timed out after {}s; QEMU was killed",
            shape.timeout.as_secs()
        )),
    };
    eprintln!(
        "<== [{step}] {} in {:.1}s",
        if result.is_ok() { "ok" } else { "FAILED" },
        took.as_secs_f64()
    );
    r.record(&step, took);
    result
}

/// Builds, packs and boots one guest of `shape`.
pub(crate) fn run(r: &mut Runner, shape: VmShape) -> Result<(), String> {
    let tools = find_tools().map_err(|m| format!("missing {}", m.join(", ")))?;
    let programs = build_programs(r)?;
    let initrd = pack(&programs, &tools, shape)?;
    boot(r, &tools, &initrd, shape)
}

/// Runs the guests of `shapes`, or, where the packages cannot be had,
/// says so clearly and succeeds (the caller is `test`/`ci`).
pub(crate) fn run_or_skip(r: &mut Runner, shapes: &[VmShape]) -> Result<(), String> {
    match ensure_tools() {
        Availability::Ready => shapes.iter().try_for_each(|&s| run(r, s)),
        Availability::Unavailable(why) => {
            eprintln!(
                "\nxtask: SKIPPED the NUMA guest tests (numa-vm): {why}\n\
                 xtask: the multi-node kernel checks did not run on this machine"
            );
            Ok(())
        }
    }
}

/// `cargo xtask numa-vm [--nodes 2|4] [--cpus N] [--timeout SECS]`.
pub(crate) fn cmd(r: &mut Runner, args: &[String]) -> Result<(), String> {
    let nodes = crate::steps::flag_value(args, "--nodes")?.unwrap_or(2);
    if !matches!(nodes, 2 | 4) {
        return Err(format!("--nodes must be 2 or 4, not {nodes}"));
    }
    let cpus = crate::steps::flag_value(args, "--cpus")?.unwrap_or(4);
    if cpus < nodes || cpus % nodes != 0 {
        return Err(format!(
            "--cpus {cpus} must be a multiple of --nodes {nodes} (every node gets the same CPUs)"
        ));
    }
    let mut shape = VmShape::new(nodes, cpus / nodes);
    if let Some(t) = crate::steps::flag_value(args, "--timeout")? {
        shape.timeout = Duration::from_secs(u64::from(t));
    }
    match ensure_tools() {
        Availability::Ready => run(r, shape),
        Availability::Unavailable(why) => Err(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn executables_come_from_compiler_artifacts_with_one() {
        let json = concat!(
            r#"{"reason":"compiler-artifact","target":{"kind":["lib"],"name":"hotmem_numa"},"executable":null}"#,
            "\n",
            r#"{"reason":"compiler-artifact","target":{"kind":["test"],"name":"kernel_numa"},"profile":{"test":true},"executable":"/t/deps/kernel_numa-0123"}"#,
            "\n",
            r#"{"reason":"build-finished","success":true}"#,
            "\n",
        );
        assert_eq!(
            executables(json),
            [(
                "kernel_numa".to_string(),
                PathBuf::from("/t/deps/kernel_numa-0123")
            )]
        );
        assert_eq!(string_field(r#"{"name":"a\"b"}"#, "name"), None);
    }

    #[test]
    fn console_lines_lose_escape_sequences() {
        assert_eq!(
            plain("\u{1b}c\u{1b}[?7l\u{1b}[2J\u{1b}[0mSeaBIOS (version 1)\r"),
            "SeaBIOS (version 1)"
        );
        assert_eq!(
            plain("HOTMEM-NUMA-VM-STATUS: 0"),
            "HOTMEM-NUMA-VM-STATUS: 0"
        );
    }

    #[test]
    fn qemu_gets_one_memory_backend_and_cpu_range_per_node() {
        let tools = Tools {
            qemu: PathBuf::from("qemu-system-x86_64"),
            kernel: PathBuf::from("/boot/vmlinuz-x"),
            busybox: PathBuf::from("/bin/busybox"),
        };
        let args = |shape| -> Vec<String> {
            qemu_command(&tools, Path::new("/i.cpio"), shape)
                .get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        };
        let two = args(VmShape::new(2, 2));
        let joined = two.join(" ");
        assert!(
            joined.contains("-accel tcg -cpu max -smp 4 -m 768M"),
            "{joined}"
        );
        assert!(joined.contains("-numa node,nodeid=0,cpus=0-1,memdev=m0"));
        assert!(joined.contains("-numa node,nodeid=1,cpus=2-3,memdev=m1"));
        assert!(joined.contains("-nic none"));
        let four = args(VmShape::new(4, 1)).join(" ");
        assert!(
            four.contains("-numa node,nodeid=3,cpus=3,memdev=m3"),
            "{four}"
        );
        assert!(four.contains("memory-backend-ram,size=384M,id=m3"));
    }

    #[test]
    fn init_runs_every_program_and_reports_the_first_failure() {
        let programs = [
            GuestProgram {
                name: "kernel_numa".into(),
                host_path: PathBuf::from("/x"),
                args: vec!["--test-threads=1".into()],
            },
            GuestProgram {
                name: "numa_relocation".into(),
                host_path: PathBuf::from("/y"),
                args: Vec::new(),
            },
        ];
        let init = init_script(&programs, &["/lib64".into()], VmShape::new(2, 2));
        assert!(init.starts_with("#!/bin/busybox sh\n"));
        assert!(init.contains("/hotmem/kernel_numa --test-threads=1\n"));
        assert!(init.contains("/hotmem/numa_relocation \n"));
        assert!(init.contains("if [ $rc -ne 0 ] && [ $status -eq 0 ]; then status=$rc; fi"));
        assert!(init.contains(&format!("echo \"{MARKER} $status\"")));
        assert!(init.trim_end().ends_with("poweroff -f"));
        assert!(init.contains("timings here are not NUMA timings"));
    }
}

//! The kernel request-latency source against the client's own record: real
//! Java HTTP services (a selector with a worker pool, a blocking
//! thread-per-connection server, and the selector over TLS, which needs no
//! payload either) with full GCs of 100 ms and more, driven
//! at a constant rate by `HttpLoad.java`, which records each request's send
//! and completion. The JVMs have no flag; the selector service's access
//! log is read beside the kernel's figures, named by a discovery label.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::Value;

/// A minute's figures as the client or the agent saw them.
#[derive(Debug, Clone, Copy)]
struct Figures {
    count: u64,
    p999: f64,
    max: f64,
}

/// The nearest-rank quantile `q` of sorted `values`.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn figures(mut durations: Vec<f64>) -> Figures {
    durations.sort_by(f64::total_cmp);
    Figures {
        count: durations.len() as u64,
        p999: quantile(&durations, 0.999),
        max: *durations.last().unwrap_or(&0.0),
    }
}

/// The client's requests completed in each minute (by start, Unix
/// seconds): their send-to-completion durations.
fn client_minutes(record: &Path) -> BTreeMap<i64, Vec<f64>> {
    let text = std::fs::read_to_string(record).unwrap();
    let mut minutes: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace().map(|f| f.parse::<i64>().unwrap());
        let (send, done) = (fields.next().unwrap(), fields.next().unwrap());
        let minute = done.div_euclid(1_000_000_000).div_euclid(60) * 60;
        minutes
            .entry(minute)
            .or_default()
            .push((done - send) as f64 / 1e9);
    }
    minutes
}

/// The service's own access log's durations of the requests that began
/// in minute `start`: the server's view, as a witness.
fn access_log_durations(log: &Path, start: i64) -> Vec<f64> {
    let text = std::fs::read_to_string(log).unwrap();
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|request| {
            let begun = chrono::DateTime::parse_from_rfc3339(request["start"].as_str().unwrap());
            begun.unwrap().timestamp().div_euclid(60) * 60 == start
        })
        .map(|request| request["duration_ms"].as_f64().unwrap() / 1e3)
        .collect()
}

/// The access log's durations of the requests that completed in minute
/// `start`, as the agent files an access log's requests.
fn access_log_completed(log: &Path, start: i64) -> Vec<f64> {
    let text = std::fs::read_to_string(log).unwrap();
    let durations = (text.lines()).filter_map(|line| {
        let request = serde_json::from_str::<Value>(line).ok()?;
        let begun = chrono::DateTime::parse_from_rfc3339(request["start"].as_str()?).ok()?;
        let seconds = request["duration_ms"].as_f64()? / 1e3;
        let done = begun.timestamp_micros() + (seconds * 1e6) as i64;
        (done.div_euclid(60_000_000) * 60 == start).then_some(seconds)
    });
    durations.collect()
}

/// The agent's latency of minute `start` for the JVM `pid`, once
/// attributed, and its attribution.
fn agent_minute(agent: &Agent, pid: u32, start: i64) -> Option<(Figures, Value, Value)> {
    let body = agent.get("/api/v1/minutes")?;
    let json: Value = serde_json::from_str(&body).ok()?;
    let jvm = (json["jvms"].as_array()?.iter())
        .find(|jvm| jvm["labels"]["pid"] == pid.to_string().as_str())?;
    let minute = (jvm["minutes"].as_array()?.iter()).find(|minute| {
        let begun = chrono::DateTime::parse_from_rfc3339(minute["start"].as_str().unwrap());
        begun.unwrap().timestamp() == start
    })?;
    minute.get("attribution")?;
    let read = |latency: &Value| {
        Some(Figures {
            count: latency["count"].as_u64()?,
            p999: latency["p999_seconds"].as_f64()?,
            max: latency["max_seconds"].as_f64()?,
        })
    };
    let figures = read(&minute["latency"])?;
    // Each service listens on one port: its figures are the JVM's.
    let ports = minute["ports"].as_object().expect("the minute's ports");
    assert_eq!(ports.len(), 1, "{ports:?}");
    let port = read(ports.values().next().unwrap()).expect("the port's figures");
    assert_eq!(
        (port.count, port.p999, port.max),
        (figures.count, figures.p999, figures.max)
    );
    Some((figures, minute["attribution"].clone(), minute.clone()))
}

/// Waits for `file` (a port the service writes once it listens).
fn port_in(file: &Path, children: &mut Children) -> u16 {
    let deadline = Instant::now() + Duration::from_secs(60);
    children.wait_until(deadline, "the service to listen", |_| {
        std::fs::read_to_string(file).is_ok_and(|text| text.ends_with('\n'))
    });
    std::fs::read_to_string(file)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// An `HttpService` of `args`, discovered by `marker`, with JVM `options`.
fn java_service(
    classes: &Path,
    marker: &str,
    dir: &Path,
    options: &[&str],
    args: &[&str],
) -> Command {
    let mut command = Command::new("java");
    command
        .current_dir(dir)
        .args(["-XX:+UseParallelGC", "-Xmx256m", "-Dhs.keystore=keys.p12"])
        .args(options)
        .arg(marker)
        .arg("-cp")
        .arg(classes)
        .arg("HttpService")
        .args(args);
    command
}

/// SO_LINGER 0: closing `stream` sends a reset.
fn reset_on_close(stream: &std::net::TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a socket of ours and a linger value of the size given.
    let set = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(set, 0, "SO_LINGER: {}", std::io::Error::last_os_error());
}

/// The turn of one test, its directory, the workloads' classes and the
/// marker of its JVMs; `None` (and a SKIPPED line) when it cannot run.
fn alone_with_workloads() -> Option<(
    std::sync::MutexGuard<'static, ()>,
    tempfile::TempDir,
    std::path::PathBuf,
    String,
)> {
    let alone = crate::alone();
    if !bpf_or_skip() {
        return None;
    }
    let (dir, classes, marker) = workloads_or_skip()?;
    Some((alone, dir, classes, marker))
}

fn within(measured: f64, truth: f64) -> bool {
    (measured - truth).abs() <= (0.10 * truth).max(0.005)
}

#[test]
fn request_latency_from_the_kernel_is_the_latency_the_client_recorded() {
    let Some((_alone, dir, classes, marker)) = alone_with_workloads() else {
        return;
    };
    let dir = dir.path();
    // The selector service's own access log, read beside the kernel's
    // figures: named by the label its rule gives.
    let access_log = format!(
        "[[access_log]]\npath = {}\nformat = \"json\"\ntime_field = \"start\"\nduration_field = \"duration_ms\"\nduration_unit = \"ms\"\nstart_at = \"beginning\"\njvm = {{ labels = {{ service = \"selector\" }} }}\n",
        toml_string(&dir.join("selector.jsonl"))
    );
    let more = "[[discovery.rule]]\nmatch = \"HttpService selector\"\nlabels = { service = \"selector\" }\n[correlation]\nslo = \"50ms\"\n";
    let (agent, mut children) = discovering_agent(dir, &marker, &format!("{more}{access_log}"));
    // The sink answers the selector service's own outgoing calls: those
    // are the sink's requests, never the selector service's.
    children.spawn_service(
        "sink",
        &mut java_service(
            &classes,
            &marker,
            dir,
            &EVERY_15_S,
            &["sink", "sink.port", "sink.jsonl"],
        ),
    );
    let sink_port = port_in(&dir.join("sink.port"), &mut children).to_string();
    // The TLS service's key and certificate, which its client trusts.
    let keytool = Command::new("keytool")
        .current_dir(dir)
        .args([
            "-genkeypair",
            "-alias",
            "service",
            "-keyalg",
            "EC",
            "-keystore",
            "keys.p12",
        ])
        .args([
            "-storetype",
            "PKCS12",
            "-storepass",
            "changeit",
            "-dname",
            "CN=localhost",
        ])
        .output()
        .unwrap();
    assert!(keytool.status.success(), "keytool: {keytool:?}");
    let shapes = ["selector", "blocking", "tls"];
    for shape in shapes {
        let (port_file, access) = (format!("{shape}.port"), format!("{shape}.jsonl"));
        let mut args = vec![shape, port_file.as_str(), access.as_str()];
        if shape == "selector" {
            args.push(&sink_port);
        }
        children.spawn_service(
            shape,
            &mut java_service(&classes, &marker, dir, &EVERY_15_S, &args),
        );
    }
    let ports: Vec<u16> = (shapes.iter())
        .map(|shape| port_in(&dir.join(format!("{shape}.port")), &mut children))
        .collect();
    let pids: Vec<u32> = ["sink", "selector", "blocking", "tls"]
        .iter()
        .map(|name| children.pid(name))
        .collect();
    agent.metrics_when(Duration::from_secs(30), |metrics| {
        pids.iter().all(|pid| {
            metrics.lines().any(|line| {
                line.starts_with("pausewatch_jvm_discovered{")
                    && line.contains(&format!("pid=\"{pid}\""))
                    && line.contains("latency_source=\"kernel\"")
            })
        })
    });
    // Load until one whole minute has passed under it.
    let now = chrono::Utc::now().timestamp();
    let whole = (now.div_euclid(60) + 1) * 60;
    let seconds = (whole + 62 - now).to_string();
    for (shape, port) in shapes.iter().zip(&ports) {
        let record = format!("{shape}.record");
        let mut load = Command::new("java");
        load.current_dir(dir).arg("-cp").arg(&classes);
        if *shape == "tls" {
            load.args(["-Dload.tls=true", "-Djavax.net.ssl.trustStore=keys.p12"])
                .arg("-Djavax.net.ssl.trustStorePassword=changeit");
        }
        load.arg("HttpLoad");
        load.args([&port.to_string(), "250", "25", &seconds, &record]);
        children.spawn_job(&format!("load-{shape}"), &mut load);
    }
    // Beside the load, in the whole minute: 1,000 idle keep-alive
    // connections to the selector service, and requests reset before any
    // answer, on both services: neither is a request, and neither may
    // disturb the others.
    let into_the_minute = whole + 1 - chrono::Utc::now().timestamp();
    std::thread::sleep(Duration::from_secs(into_the_minute.max(0) as u64));
    pausewatch::follow::raise_open_files_limit().unwrap();
    let idle: Vec<std::net::TcpStream> = (0..1000)
        .map(|_| std::net::TcpStream::connect(("127.0.0.1", ports[0])).unwrap())
        .collect();
    for _ in 0..20 {
        for port in &ports {
            let mut reset = std::net::TcpStream::connect(("127.0.0.1", *port)).unwrap();
            std::io::Write::write_all(&mut reset, b"GET /work?i=reset HTTP/1.1\r\nHo").unwrap();
            reset_on_close(&reset);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let deadline = Instant::now() + Duration::from_secs(200);
    children.wait_until(deadline, "the load to end", |children| {
        (shapes.iter()).all(|shape| children.exited(&format!("load-{shape}")).is_some())
    });
    for shape in shapes {
        let status = children.exited(&format!("load-{shape}")).unwrap();
        assert!(status.success(), "load-{shape}: {status}");
    }
    drop(idle);
    // The minute is attributed 15 s after it ends.
    let mut agent_figures: BTreeMap<u32, (Figures, Value, Value)> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    children.wait_until(deadline, "the agent's whole minute", |_| {
        agent_figures = (pids.iter())
            .filter_map(|pid| Some((*pid, agent_minute(&agent, *pid, whole)?)))
            .collect();
        agent_figures.len() == pids.len()
    });
    for (shape, pid) in shapes.iter().zip(&pids[1..]) {
        let client = client_minutes(&dir.join(format!("{shape}.record")));
        let client = figures_of(&client, whole);
        let (kernel, attribution, minute) = agent_figures[pid].clone();
        let access = figures(access_log_durations(
            &dir.join(format!("{shape}.jsonl")),
            whole,
        ));
        eprintln!("{shape}: client {client:?}, kernel {kernel:?}, access log {access:?}");
        let close_count = kernel.count.abs_diff(client.count) as f64 <= 0.01 * client.count as f64;
        assert!(
            close_count,
            "{shape}: {} requests, the client completed {}",
            kernel.count, client.count
        );
        assert!(
            within(kernel.p999, client.p999),
            "{shape}: p99.9 {} against the client's {}",
            kernel.p999,
            client.p999
        );
        assert!(
            within(kernel.max, client.max),
            "{shape}: max {} against the client's {}",
            kernel.max,
            client.max
        );
        assert!(
            client.max >= 0.1,
            "{shape}: no stop of 100 ms in the minute ({})",
            client.max
        );
        // Is the tail GC? Every request over the 50 ms SLO here waited
        // for a stop of 100 ms or more, most of them after it ended,
        // behind its backlog: the queued rule finds them all, the
        // stop-covered rule a part.
        let count = |field: &str| attribution[field].as_u64().unwrap();
        let slow = count("slow_requests");
        let (affected, queued) = (
            count("slow_requests_stop_affected"),
            count("slow_requests_queued_behind_stops"),
        );
        eprintln!("{shape}: slow {slow}, stop-affected {affected}, queued behind stops {queued}");
        assert!(
            slow > 0 && queued as f64 >= 0.9 * slow as f64,
            "{shape}: {attribution}"
        );
        // GcDrivenTail's share takes either rule: here every slow request.
        let gc_driven = count("slow_requests_gc_driven");
        assert!(
            gc_driven >= affected.max(queued) && gc_driven as f64 >= 0.97 * slow as f64,
            "{shape}: {attribution}"
        );
        // The access log read beside the kernel: the selector's only.
        let beside = minute.get("access_log_latency");
        assert_eq!(beside.is_some(), *shape == "selector", "{shape}: {minute}");
        if let Some(beside) = beside {
            let log = figures(access_log_completed(
                &dir.join(format!("{shape}.jsonl")),
                whole,
            ));
            let (count, p999) = (
                beside["count"].as_u64().unwrap(),
                beside["p999_seconds"].as_f64().unwrap(),
            );
            eprintln!("{shape}: access log beside the kernel: {count} requests, p99.9 {p999}; the log's own {log:?}");
            assert_eq!(count, log.count, "{shape}: {beside}");
            assert!(within(p999, log.p999), "{shape}: {beside} against {log:?}");
            // What the server never saw: the time requests waited in the
            // kernel before it read them.
            assert!(
                kernel.p999 - p999 > 0.1 * kernel.p999,
                "{shape}: {p999} beside {kernel:?}"
            );
        }
        // The witness: the server's own view misses the time requests
        // waited in the kernel behind each stop.
        assert!(
            access.p999 < 0.9 * client.p999,
            "{shape}: the access log's p99.9 {} is not below the client's {}",
            access.p999,
            client.p999
        );
    }
    // One request at a time on every connection, TLS's included: none is
    // taken for multiplexed.
    let metrics = agent.get("/metrics").unwrap();
    // The unseen wait is a gauge of the JVM both measure, and of no other.
    let unseen = "pausewatch_request_wait_unseen_by_server_p999_seconds{";
    let with_gauge: Vec<&str> = (metrics.lines())
        .filter(|l| l.starts_with(unseen))
        .collect();
    assert!(
        with_gauge
            .iter()
            .all(|l| l.contains(&format!("pid=\"{}\"", pids[1]))),
        "{with_gauge:?}"
    );
    for pid in &pids {
        let pid = format!("pid=\"{pid}\"");
        let family = "pausewatch_multiplexed_connections_total";
        let exported = (metrics.lines()).any(|l| l.starts_with(family) && l.contains(&pid));
        assert!(exported, "{family} of {pid}");
        assert_eq!(sum(&metrics, family, &[&pid]), 0.0, "{pid}");
    }
    // Each of the selector's requests made one call to the sink: the sink
    // served them, and the selector counted none of them as its own.
    let (sink, selector) = (agent_figures[&pids[0]].0, agent_figures[&pids[1]].0);
    assert!(
        sink.count.abs_diff(selector.count) as f64 <= 0.01 * selector.count as f64,
        "the sink served {} requests, the selector {}",
        sink.count,
        selector.count
    );
}

fn figures_of(minutes: &BTreeMap<i64, Vec<f64>>, start: i64) -> Figures {
    figures(minutes.get(&start).cloned().unwrap_or_default())
}

/// Sends `count` requests on one connection to `port`, the next before the
/// answer to the last (100 µs apart), and reads every answer.
fn pipeline(port: u16, count: usize) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_nodelay(true).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    for i in 0..count {
        let request = format!("GET /work?i=pipelined-{i} HTTP/1.1\r\nHost: x\r\n\r\n");
        stream.write_all(request.as_bytes()).unwrap();
        std::thread::sleep(Duration::from_micros(100));
    }
    let (mut answers, mut read) = (0, Vec::new());
    let mut buffer = [0u8; 65536];
    while answers < count {
        let n = stream.read(&mut buffer).expect("the pipelined answers");
        assert!(n > 0, "closed after {answers} answers");
        read.extend_from_slice(&buffer[..n]);
        answers = String::from_utf8_lossy(&read)
            .matches("HTTP/1.1 200")
            .count();
    }
}

/// Sends `count` requests on one connection to `port`, one at a time:
/// the duration of each, from its send to its answer's last byte.
fn one_at_a_time(port: u16, count: usize) -> Vec<f64> {
    use std::io::{BufRead, BufReader, Read, Write};
    let stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    let mut durations = Vec::with_capacity(count);
    for i in 0..count {
        let request = format!("GET /work?i={i} HTTP/1.1\r\nHost: x\r\n\r\n");
        let sent = Instant::now();
        writer.write_all(request.as_bytes()).unwrap();
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap();
            }
            if line == "\r\n" {
                break;
            }
        }
        reader.read_exact(&mut vec![0; length]).unwrap();
        durations.push(sent.elapsed().as_secs_f64());
    }
    durations
}

/// An agent discovering the test's JVMs, with `more` configuration, and
/// the children whose output a failure shows.
fn discovering_agent(dir: &Path, marker: &str, more: &str) -> (Agent, Children) {
    let port = free_port();
    let agent = Agent::start(
        dir,
        port,
        &format!(
            "listen = \"127.0.0.1:{port}\"\ncheckpoint_dir = {}\n[discovery]\ninclude = [{}]\ninterval = \"1s\"\n{more}",
            toml_string(&dir.join("checkpoints")),
            discovery_include(marker),
        ),
    );
    let mut children = Children::new(dir);
    children.dump_on_failure(
        &[port],
        &[
            "pausewatch_jvm_discovered",
            "pausewatch_requests_total",
            "pausewatch_errors_total",
        ],
    );
    (agent, children)
}

/// The options of the measured services: a full GC every 15 s besides
/// those the load causes.
const EVERY_15_S: [&str; 1] = ["-Dhs.gcEverySec=15"];

/// The options of a small service: no GC on schedule, a small cache.
const SMALL: [&str; 2] = ["-Dhs.gcEverySec=0", "-Dhs.live=0.02"];

/// Whether `metrics` list the JVM `pid` as discovered with `label`.
fn discovered(pid: u32, label: &'static str) -> impl Fn(&str) -> bool {
    move |metrics: &str| {
        metrics.lines().any(|line| {
            line.starts_with("pausewatch_jvm_discovered{")
                && line.contains(&format!("pid=\"{pid}\""))
                && line.contains(label)
        })
    }
}

/// Starts a blocking service `name` with JVM `options` and waits until the
/// agent measures its requests from the kernel: its port and its pid.
fn measured_service(
    agent: &Agent,
    children: &mut Children,
    (classes, marker, dir): (&Path, &str, &Path),
    name: &str,
    options: &[&str],
) -> (u16, u32) {
    let args = ["blocking", "blocking.port", "blocking.jsonl"];
    children.spawn_service(
        name,
        &mut java_service(classes, marker, dir, options, &args),
    );
    let port = port_in(&dir.join("blocking.port"), children);
    let pid = children.pid(name);
    agent.metrics_when(
        Duration::from_secs(30),
        discovered(pid, "latency_source=\"kernel\""),
    );
    (port, pid)
}

#[test]
fn a_pipelining_connection_is_left_out_and_an_excluded_port_is_not_measured() {
    let Some((_alone, dir, classes, marker)) = alone_with_workloads() else {
        return;
    };
    let dir = dir.path();
    let excluded = free_port();
    let rule =
        format!("[[discovery.rule]]\nmatch = \"HttpService sink\"\nexclude_ports = [{excluded}]\n");
    let (agent, mut children) = discovering_agent(dir, &marker, &rule);
    let port_option = format!("-Dhs.port={excluded}");
    let args = ["sink", "sink.port", "sink.jsonl"];
    let sink = java_service(
        &classes,
        &marker,
        dir,
        &[SMALL[0], SMALL[1], &port_option],
        &args,
    );
    children.spawn_service("sink", &mut { sink });
    let workloads = (classes.as_path(), marker.as_str(), dir);
    let (blocking, service) =
        measured_service(&agent, &mut children, workloads, "blocking", &SMALL);
    assert_eq!(port_in(&dir.join("sink.port"), &mut children), excluded);
    let sink = children.pid("sink");
    agent.metrics_when(
        Duration::from_secs(30),
        discovered(sink, "latency_reason=\"ports_excluded\""),
    );
    // The excluded port's requests are not measured; the other JVM's
    // are, one at a time, until a connection pipelines.
    one_at_a_time(excluded, 20);
    one_at_a_time(blocking, 20);
    let requests = |pid: u32| {
        let metrics = agent.get("/metrics").unwrap();
        sum(
            &metrics,
            "pausewatch_requests_total",
            &[&format!("pid=\"{pid}\"")],
        )
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    children.wait_until(deadline, "the 20 requests", |_| requests(service) == 20.0);
    pipeline(blocking, 200);
    let multiplexed = format!("pid=\"{service}\"");
    let metrics = agent.metrics_when(Duration::from_secs(20), |metrics| {
        sum(
            metrics,
            "pausewatch_multiplexed_connections_total",
            &[&multiplexed],
        ) == 1.0
    });
    // Once it is seen, the connection is left out: a few of its requests
    // may count before that, not its 200.
    std::thread::sleep(Duration::from_secs(3));
    let counted = requests(service) - 20.0;
    eprintln!(
        "pipelined: {counted} of 200 counted; {}",
        sum(
            &metrics,
            "pausewatch_multiplexed_connections_total",
            &[&multiplexed]
        )
    );
    assert!(
        counted < 50.0,
        "{counted} of the 200 pipelined requests counted"
    );
    assert_eq!(requests(sink), 0.0, "the excluded port's requests");
}

/// The hostile user's own HTTP server and client, in a network namespace
/// of its own, on the port number the victim JVM listens on: `count`
/// keep-alive requests, answered.
const NAMESPACED_TWIN: &str = r#"
import socket, sys, threading
port, count = int(sys.argv[1]), int(sys.argv[2])
server = socket.socket()
server.bind(("127.0.0.1", port))
server.listen()
def serve():
    connection, _ = server.accept()
    for _ in range(count):
        request = b""
        while not request.endswith(b"\r\n\r\n"):
            request += connection.recv(4096)
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
threading.Thread(target=serve, daemon=True).start()
client = socket.create_connection(("127.0.0.1", port))
for i in range(count):
    client.sendall(b"GET /work?i=%d HTTP/1.1\r\nHost: x\r\n\r\n" % i)
    answer = b""
    while not answer.endswith(b"ok"):
        answer += client.recv(4096)
print("answered", count)
"#;

#[test]
fn a_hostile_user_cannot_add_requests_to_another_users_jvm() {
    let Some((_alone, dir, classes, marker)) = alone_with_workloads() else {
        return;
    };
    let dir = dir.path();
    let (agent, mut children) = discovering_agent(dir, &marker, "");
    let workloads = (classes.as_path(), marker.as_str(), dir);
    let (victim_port, victim) =
        measured_service(&agent, &mut children, workloads, "victim", &SMALL);
    let pid = format!("pid=\"{victim}\"");
    // Another user, in a user and network namespace of its own (no
    // privilege needed), serves 2,000 requests on the victim's port number.
    let twin = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["unshare", "-Urn", "sh", "-c"])
        .arg("ip link set lo up 2>/dev/null; exec /usr/bin/python3 -c \"$0\" \"$@\"")
        .args([NAMESPACED_TWIN, &victim_port.to_string(), "2000"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&twin.stdout);
    assert!(
        twin.status.success() && said.contains("answered 2000"),
        "the namespaced twin: {twin:?}"
    );
    // In the host's namespace the same user opens 500 connections to the
    // victim that send half a request and reset: no request either.
    let resets = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c"])
        .arg("import socket, struct, sys\nfor _ in range(500):\n    s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))\n    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))\n    s.sendall(b'GET /work HTTP/1.1\\r\\nHo')\n    s.close()\n")
        .arg(victim_port.to_string())
        .output()
        .unwrap();
    assert!(resets.status.success(), "the resets: {resets:?}");
    // The victim's own 100 requests, and nothing else, are counted.
    one_at_a_time(victim_port, 100);
    let requests = || {
        let metrics = agent.get("/metrics").unwrap();
        sum(&metrics, "pausewatch_requests_total", &[])
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    children.wait_until(deadline, "the victim's 100 requests", |_| {
        requests() >= 100.0
    });
    std::thread::sleep(Duration::from_secs(3));
    let metrics = agent.get("/metrics").unwrap();
    assert_eq!(sum(&metrics, "pausewatch_requests_total", &[&pid]), 100.0);
    assert_eq!(
        sum(&metrics, "pausewatch_requests_total", &[]),
        100.0,
        "requests of no JVM"
    );
}

#[test]
fn arrivals_from_tcp_probe_count_every_request_the_client_sent() {
    let Some((_alone, dir, classes, marker)) = alone_with_workloads() else {
        return;
    };
    let dir = dir.path();
    // The arrival a kernel before 6.6 has, chosen here; the requests
    // written out for `analyze` too.
    let requests_dir = dir.join("requests");
    let ebpf = format!(
        "[ebpf]\nrequest_arrival = \"tcp_probe\"\nrequests_dir = {}\n",
        toml_string(&requests_dir)
    );
    let (agent, mut children) = discovering_agent(dir, &marker, &ebpf);
    // A full GC every second: some requests wait for it.
    let options = [
        "-Dhs.live=0.02",
        "-Dhs.gcEverySec=1",
        "-Xlog:gc:file=gc.log",
    ];
    let workloads = (classes.as_path(), marker.as_str(), dir);
    let (port, service) = measured_service(&agent, &mut children, workloads, "service", &options);
    let client = one_at_a_time(port, 2000);
    let pid = format!("pid=\"{service}\"");
    // The issue's bar, 1 %: through tcp_probe a request is missed now and
    // then (1 of 2,000 in 1 of 9 runs; see docs/discovery.md), never counted twice.
    let metrics = agent.metrics_when(Duration::from_secs(20), |metrics| {
        sum(metrics, "pausewatch_requests_total", &[&pid]) >= 1980.0
    });
    std::thread::sleep(Duration::from_secs(3));
    let metrics_now = agent.get("/metrics").unwrap();
    let counted = sum(&metrics_now, "pausewatch_requests_total", &[&pid]);
    eprintln!("tcp_probe: {counted} of 2,000 requests counted");
    assert!((1980.0..=2000.0).contains(&counted), "{counted} of 2,000");
    // Each request from its arrival to its answer's send: the client's
    // time less the loopback's, summed.
    let kernel = sum(&metrics, "pausewatch_request_duration_seconds_sum", &[&pid]);
    let (total, slowest) = (
        client.iter().sum::<f64>(),
        client.iter().cloned().fold(0.0, f64::max),
    );
    eprintln!("tcp_probe: kernel {kernel:.4} s, client {total:.4} s, slowest {slowest:.4} s");
    assert!(
        kernel <= total && kernel >= 0.7 * total,
        "kernel {kernel} s, client {total} s"
    );
    // The requests written out, read back by `analyze` as an access log.
    let written = requests_dir.join(format!("HttpService-{service}.jsonl"));
    let output = Command::new(PAUSEWATCH)
        .args(["analyze", "--format", "json", "--slo", "10ms", "--latency"])
        .arg(&written)
        .arg(dir.join("gc.log"))
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    assert_eq!(report["latency"]["count"], counted as u64, "{output:?}");
    assert_eq!(report["access_logs"][0]["malformed"], 0, "{report}");
    let analyzed = report["latency"]["max_seconds"].as_f64().unwrap();
    assert!(
        within(analyzed, slowest),
        "analyze's max {analyzed} s, the client's {slowest} s"
    );
}

#[test]
fn a_jvm_listening_on_thousands_of_ports_leaves_room_for_the_others() {
    let Some((_alone, dir, classes, marker)) = alone_with_workloads() else {
        return;
    };
    let dir = dir.path();
    let (agent, mut children) = discovering_agent(dir, &marker, "");
    // Another user's JVM listens on 4,100 ports, more than the kernel's
    // map of listeners holds (4,096).
    use std::os::unix::fs::PermissionsExt;
    let attacker_dir = dir.join("attacker");
    std::fs::create_dir(&attacker_dir).unwrap();
    for open in [dir, attacker_dir.as_path()] {
        std::fs::set_permissions(open, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let ready = attacker_dir.join("ready");
    let mut attacker = Command::new("setpriv");
    attacker
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "java",
            &marker,
            "-cp",
        ])
        .arg(&classes)
        .args(["ManyListeners", "4100"])
        .arg(&ready);
    children.spawn_service("attacker", &mut attacker);
    let deadline = Instant::now() + Duration::from_secs(60);
    children.wait_until(deadline, "the 4,100 listeners", |_| ready.exists());
    let attacker = children.pid("attacker");
    agent.metrics_when(
        Duration::from_secs(30),
        discovered(attacker, "latency_source=\"kernel\""),
    );
    // Two looks at its ports.
    std::thread::sleep(Duration::from_secs(5));
    let workloads = (classes.as_path(), marker.as_str(), dir);
    let (port, victim) = measured_service(&agent, &mut children, workloads, "victim", &SMALL);
    std::thread::sleep(Duration::from_secs(3));
    one_at_a_time(port, 100);
    let pid = format!("pid=\"{victim}\"");
    let metrics = agent.metrics_when(Duration::from_secs(20), |metrics| {
        sum(metrics, "pausewatch_requests_total", &[&pid]) >= 100.0
    });
    assert_eq!(sum(&metrics, "pausewatch_requests_total", &[&pid]), 100.0);
}

//! The generic JSON webhook sink: transitions are posted once each, in order,
//! Alertmanager's re-sends are not, and a receiver that fails at first still
//! gets everything once it answers. What it posts is what
//! `schemas/webhook.schema.json` documents.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use pausewatch::alerts::sinks::{sender_loop, Sink};
use pausewatch::alerts::AlertEngine;
use pausewatch::config::Endpoint;
use pausewatch::model::alerts::{Alert, AlertState, AlertsConfig, DeliveryCounters, Notification};
use pausewatch::model::jvm::JvmState;
use pausewatch::store::{AgentState, StreamId, StreamState};
use serde_json::Value;

/// Accepts HTTP requests; answers 503 to the first `failures`, then 200.
/// Each accepted body (JSON) goes to the channel.
fn receiver(failures: usize) -> (String, mpsc::Receiver<Value>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hooks/pausewatch", listener.local_addr().unwrap());
    let (bodies, received) = mpsc::channel();
    std::thread::spawn(move || {
        for (index, stream) in listener.incoming().enumerate() {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line.trim().is_empty() {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let status = if index < failures {
                "503 Service Unavailable"
            } else {
                "200 OK"
            };
            write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            )
            .unwrap();
            if index >= failures {
                bodies.send(serde_json::from_slice(&body).unwrap()).unwrap();
            }
        }
    });
    (url, received)
}

fn alert(state: AlertState) -> Alert {
    let now = Utc::now();
    Alert {
        alertname: "PauseBudgetExceeded".to_string(),
        state,
        labels: BTreeMap::from([
            ("alertname".to_string(), "PauseBudgetExceeded".to_string()),
            ("log".to_string(), "/var/log/pricing/gc.log".to_string()),
        ]),
        annotations: BTreeMap::from([(
            "summary".to_string(),
            "longest GC pause 104.3 ms".to_string(),
        )]),
        value: 0.104303,
        active_since: now,
        fired_at: Some(now),
        resolved_at: (state == AlertState::Resolved).then_some(now),
    }
}

#[test]
fn webhook_gets_each_transition_once_and_survives_a_failing_receiver() {
    let (url, received) = receiver(1);
    let (notify, notifications) = mpsc::channel();
    let counters = Arc::new(Mutex::new(DeliveryCounters::default()));
    let thread_counters = counters.clone();
    std::thread::spawn(move || {
        sender_loop(
            Sink::Webhook(Endpoint::plain(url)),
            notifications,
            thread_counters,
        )
    });
    for (state, repeat) in [
        (AlertState::Firing, false),
        (AlertState::Firing, true),
        (AlertState::Resolved, false),
    ] {
        notify
            .send(Notification {
                alert: alert(state),
                repeat,
            })
            .unwrap();
    }
    // The first attempt gets a 503; the retry comes after the 2 s backoff.
    let first = received.recv_timeout(Duration::from_secs(10)).unwrap();
    let second = received.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(first["state"], "firing");
    assert_eq!(first["labels"]["alertname"], "PauseBudgetExceeded");
    assert_eq!(first["annotations"]["summary"], "longest GC pause 104.3 ms");
    assert_eq!(second["state"], "resolved");
    assert!(second["resolved_at"].is_string());
    assert!(
        received.recv_timeout(Duration::from_secs(1)).is_err(),
        "the re-send is Alertmanager's alone"
    );
    let counters = counters.lock().unwrap();
    assert_eq!(counters.delivered.get("webhook"), Some(&2));
    assert_eq!(counters.failed.get("webhook"), Some(&1));
}

fn schema() -> jsonschema::Validator {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/schemas/webhook.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).expect("a valid JSON Schema")
}

fn problems(validator: &jsonschema::Validator, body: &Value) -> Vec<String> {
    validator
        .iter_errors(body)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// The alert engine on a real log (five full GCs of 76-104 ms in 02:21:
/// PauseBudgetExceeded and FullGc), firing at 02:22 and resolving at 02:23, through the real sender to a real
/// socket: both bodies, and the documented example, match the schema, and
/// the schema is not vacuous (a body without `state` does not).
#[test]
fn webhook_payloads_validate_against_the_published_schema() {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/latency/jdk17-parallel/gc.log"
    );
    let (events, parser) =
        pausewatch::commands::analyze::parse_files(&[fixture.into()], None).unwrap();
    let mut jvm = JvmState::default();
    jvm.ingest(parser.run(), &events, None);
    let mut state = AgentState::default();
    state.streams.insert(
        StreamId(1),
        StreamState {
            log: fixture.to_string(),
            readable: true,
            last_event_processed_at: jvm.last_event,
            jvm,
            ..StreamState::default()
        }
        .into(),
    );
    let config = AlertsConfig::default();
    let mut engine = AlertEngine::default();
    let (url, received) = receiver(0);
    let (notify, notifications) = mpsc::channel();
    let counters = Arc::new(Mutex::new(DeliveryCounters::default()));
    std::thread::spawn(move || {
        sender_loop(Sink::Webhook(Endpoint::plain(url)), notifications, counters)
    });
    for now in ["2026-11-30T02:22:00Z", "2026-11-30T02:23:00Z"] {
        for notification in engine.evaluate(&config, &state, now.parse().unwrap()) {
            notify.send(notification).unwrap();
        }
    }
    let validator = schema();
    let mut states = Vec::new();
    while let Ok(body) = received.recv_timeout(Duration::from_secs(5)) {
        assert_eq!(problems(&validator, &body), Vec::<String>::new(), "{body}");
        states.push((body["alertname"].clone(), body["state"].clone()));
    }
    assert_eq!(
        states,
        [
            (Value::from("PauseBudgetExceeded"), Value::from("firing")),
            (Value::from("FullGc"), Value::from("firing")),
            (Value::from("PauseBudgetExceeded"), Value::from("resolved")),
            (Value::from("FullGc"), Value::from("resolved")),
        ]
    );
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/schemas/webhook.example.json");
    let mut example: Value =
        serde_json::from_str(&std::fs::read_to_string(example).unwrap()).unwrap();
    assert_eq!(problems(&validator, &example), Vec::<String>::new());
    example.as_object_mut().unwrap().remove("state");
    assert!(!problems(&validator, &example).is_empty());
}

/// A buffer the log lines of one thread go to.
#[derive(Clone, Default)]
struct LogLines(Arc<Mutex<Vec<u8>>>);

impl Write for LogLines {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failed_delivery_logs_no_secret_of_the_webhook_url() {
    // A listener that hangs up on every connection: every delivery fails.
    // Held for the whole test, so that no process started beside it (the
    // fleet tests bind ports of their own) can take the port and answer.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for connection in listener.incoming() {
            drop(connection);
        }
    });
    let url = format!("http://127.0.0.1:{port}/services/T0/B0/PathSecret?token=QuerySecret");
    let lines = LogLines::default();
    let writer = lines.clone();
    let (notify, notifications) = mpsc::channel();
    let counters = Arc::new(Mutex::new(DeliveryCounters::default()));
    // tracing caches each callsite's interest for the whole process, worked
    // out on the thread that reaches it first: the test beside this one
    // reaches the failed-delivery warning with no subscriber, which cached
    // it as never wanted, and this test's log stayed empty (2 runs in 3).
    // A global subscriber that wants everything keeps the cache from
    // turning a callsite off; the scoped one below is the one that writes.
    let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry());
    std::thread::spawn(move || {
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let _logging = tracing::subscriber::set_default(subscriber);
        sender_loop(Sink::Webhook(Endpoint::plain(url)), notifications, counters);
    });
    notify
        .send(Notification {
            alert: alert(AlertState::Firing),
            repeat: false,
        })
        .unwrap();
    // Generous for a loaded host; the test ends as soon as the line is there.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let log = loop {
        let log = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
        if log.contains("alert delivery failed") || std::time::Instant::now() > deadline {
            break log;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(log.contains("alert delivery failed"), "{log}");
    assert!(log.contains(&format!("http://127.0.0.1:{port}:")), "{log}");
    assert!(
        !log.contains("Secret") && !log.contains("/services"),
        "{log}"
    );
}

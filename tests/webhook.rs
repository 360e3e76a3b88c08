//! The generic JSON webhook sink: transitions are posted once each, in order,
//! Alertmanager's re-sends are not, and a receiver that fails at first still
//! gets everything once it answers.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use pausewatch::alerts::sinks::{sender_loop, Sink};
use pausewatch::model::alerts::{Alert, AlertState, DeliveryCounters, Notification};
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
    std::thread::spawn(move || sender_loop(Sink::Webhook(url), notifications, thread_counters));
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

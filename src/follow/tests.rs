//! The follower through rotations, truncations, restarts and JDK 8 rings.

use super::*;
use std::io::Write;
use std::os::unix::fs::FileExt;

fn append(path: &Path, text: &str) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

fn starting(start_at: StartAt) -> FollowOptions {
    FollowOptions {
        start_at,
        ..FollowOptions::default()
    }
}

fn poll_text(follower: &mut Follower) -> String {
    let mut bytes = Vec::new();
    follower.poll(&mut |chunk| bytes.extend_from_slice(chunk));
    String::from_utf8(bytes).unwrap()
}

#[test]
fn start_at_end_skips_history_but_not_a_started_line() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("gc.log");
    append(&log, "old 1\nold 2\npart");
    let mut follower = Follower::new(log.clone(), starting(StartAt::End), None);
    assert_eq!(poll_text(&mut follower), "part");
    append(&log, "ial\nnew\n");
    assert_eq!(poll_text(&mut follower), "ial\nnew\n");
}

#[test]
fn rename_rotation_finishes_the_old_file_then_reads_every_newer_one() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("gc.log");
    append(&log, "a1\n");
    let mut follower = Follower::new(log.clone(), starting(StartAt::Beginning), None);
    assert_eq!(poll_text(&mut follower), "a1\n");
    append(&log, "a2\n");
    // Two rotations before the next poll: a -> .0, b -> .1, c live.
    std::fs::rename(&log, dir.path().join("gc.log.0")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    append(&log, "b1\n");
    std::fs::rename(&log, dir.path().join("gc.log.1")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    append(&log, "c1\n");
    assert_eq!(poll_text(&mut follower), "a2\nb1\nc1\n");
    append(&log, "c2\n");
    assert_eq!(poll_text(&mut follower), "c2\n");
}

/// A file one process writes: its own rotations are followed while it
/// runs; once it has exited, a new file at its name (its next run's) ends
/// the follower after the old file's last bytes, and the rotated files from
/// before `written_since` are not read at the beginning.
#[test]
fn a_file_of_one_writer_ends_when_it_is_replaced_after_the_writer_exited() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("gc.log");
    append(&dir.path().join("gc.log.1"), "previous run\n");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let since = SystemTime::now();
    append(&log, "a1\n");
    let alive = std::sync::Arc::new(AtomicBool::new(true));
    let writer = alive.clone();
    let options = FollowOptions {
        written_since: Some(since),
        ..starting(StartAt::Beginning)
    };
    let mut follower = Follower::new(log.clone(), options, None)
        .of_one_writer(Box::new(move || writer.load(Ordering::Relaxed)));
    assert_eq!(poll_text(&mut follower), "a1\n");
    // Its own rotation, while it runs.
    append(&log, "a2\n");
    std::fs::rename(&log, dir.path().join("gc.log.0")).unwrap();
    append(&log, "b1\n");
    assert_eq!(poll_text(&mut follower), "a2\nb1\n");
    // It exits after a last line; its next run archives the file.
    append(&log, "b2\n");
    alive.store(false, Ordering::Relaxed);
    std::fs::rename(&log, dir.path().join("gc.log.2")).unwrap();
    append(&log, "next run\n");
    let mut bytes = Vec::new();
    let outcome = follower.poll(&mut |chunk| bytes.extend_from_slice(chunk));
    assert_eq!(String::from_utf8(bytes).unwrap(), "b2\n");
    assert!(
        outcome.notes.contains(&Note::WriterExited),
        "{:?}",
        outcome.notes
    );
    append(&log, "more of the next run\n");
    assert_eq!(poll_text(&mut follower), "");
}

#[test]
fn beginning_reads_the_rotated_files_there_oldest_first_then_the_live_file() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("gc.log");
    for (name, text) in [
        ("gc.log.1", "b\n"),
        ("gc.log.0", "c\n"),
        ("gc.log.2", "a\n"),
    ] {
        append(&dir.path().join(name), text);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    append(&log, "d\n");
    let mut by_mtime = Follower::new(log.clone(), starting(StartAt::Beginning), None);
    assert_eq!(poll_text(&mut by_mtime), "b\nc\na\nd\n");
    let by_content = FollowOptions {
        order: |mut paths| {
            paths.sort_by_key(|path| std::fs::read(path).unwrap());
            paths
        },
        ..starting(StartAt::Beginning)
    };
    let mut follower = Follower::new(log.clone(), by_content, None);
    assert_eq!(poll_text(&mut follower), "a\nb\nc\nd\n");
}

#[test]
fn copytruncate_recovers_unread_bytes_from_the_copy() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("gc.log");
    append(&log, "line 1\n");
    let mut follower = Follower::new(log.clone(), starting(StartAt::Beginning), None);
    assert_eq!(poll_text(&mut follower), "line 1\n");
    append(&log, "line 2\n");
    std::fs::copy(&log, dir.path().join("gc.log.1")).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&log)
        .unwrap();
    append(&log, "line 3 after truncation, longer than before\n");
    assert_eq!(
        poll_text(&mut follower),
        "line 2\nline 3 after truncation, longer than before\n"
    );
}

/// logrotate's copytruncate of a file whose writer does not use
/// O_APPEND: the writer goes on at its own offset, so after the first
/// truncation the file starts with a hole of NULs, and after the next
/// its head is the same NULs. The bytes just before the read position
/// tell the second truncation, and pick the right copy.
#[test]
fn copytruncate_behind_a_writer_without_o_append_is_seen_every_time() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("gc.log");
    let writer = std::fs::File::create(&log).unwrap();
    let mut at = 0;
    let mut write = |text: &str| {
        writer.write_all_at(text.as_bytes(), at).unwrap();
        at += text.len() as u64;
    };
    let copytruncate = || {
        // Each copy replaces the last (`rotate 1`).
        std::fs::copy(&log, dir.path().join("gc.log.1")).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&log)
            .unwrap()
            .set_len(0)
            .unwrap();
    };
    let mut follower = Follower::new(log.clone(), starting(StartAt::Beginning), None);
    let mut read = String::new();
    let mut written = String::new();
    for round in 0..3 {
        // Over a KiB before each truncation: the hole covers the whole head.
        let read_lines = format!("read {round}\n").repeat(200);
        for text in [read_lines, format!("unread {round}\n")] {
            write(&text);
            written += &text;
            if text.starts_with("read") {
                read += &poll_text(&mut follower);
            }
        }
        // The agent lags: "unread" is in the file, not yet read.
        copytruncate();
        let text = format!("after {round}\n");
        write(&text);
        written += &text;
        read += &poll_text(&mut follower);
    }
    assert_eq!(read.replace('\0', ""), written);
}

#[test]
fn checkpoint_resumes_in_a_file_rotated_while_down() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("gc.log");
    append(&log, "first run line 1\n");
    let mut follower = Follower::new(log.clone(), starting(StartAt::Beginning), None);
    assert_eq!(poll_text(&mut follower), "first run line 1\n");
    let checkpoint = follower.position();
    drop(follower);
    append(&log, "first run line 2\n");
    std::fs::rename(&log, dir.path().join("gc.log.0")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    append(&log, "first run line 1\n");
    let mut follower = Follower::new(log.clone(), starting(StartAt::End), checkpoint);
    assert_eq!(
        poll_text(&mut follower),
        "first run line 2\nfirst run line 1\n"
    );
}

/// A JDK 8 JVM writing `gc.log` with `-XX:+UseGCLogFileRotation
/// -XX:NumberOfGCLogFiles=N`, by the file operations of HotSpot 8's
/// `gcLogFileStream` (`ostream.cpp`): start with `fopen("gc.log.0.current",
/// "w")`; rotate by writing the "Saved as" line, closing, removing an old
/// `gc.log.K`, renaming `gc.log.K.current` to `gc.log.K`, opening
/// `gc.log.K+1.current` (or `.0.current` after the last) with `"w"`,
/// writing the "created" line and header, then removing an old
/// `gc.log.K+1`.
struct Jdk8Ring {
    ring: PathBuf,
    files: usize,
    number: usize,
    written: String,
}

impl Jdk8Ring {
    fn file(&self, number: usize, current: bool) -> PathBuf {
        let suffix = if current { ".current" } else { "" };
        let name = self.ring.file_name().unwrap().to_string_lossy();
        self.ring.with_file_name(format!("{name}.{number}{suffix}"))
    }

    fn start(ring: PathBuf, files: usize) -> Jdk8Ring {
        let mut jvm = Jdk8Ring {
            ring,
            files,
            number: 0,
            written: String::new(),
        };
        std::fs::File::create(jvm.file(0, true)).unwrap();
        jvm.write("Java HotSpot(TM) 64-Bit Server VM (25.45-b02)\n");
        jvm
    }

    fn write(&mut self, text: &str) {
        append(&self.file(self.number, true), text);
        self.written.push_str(text);
    }

    fn rotate(&mut self) {
        // Rotations happen at GC safepoints, never within one clock tick.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let saved = self.file(self.number, false);
        self.write(&format!(
            "GC log file has reached the maximum size. Saved as {}\n",
            saved.display()
        ));
        let _ = std::fs::remove_file(&saved);
        std::fs::rename(self.file(self.number, true), &saved).unwrap();
        self.number = (self.number + 1) % self.files;
        std::fs::File::create(self.file(self.number, true)).unwrap();
        let created = self.file(self.number, false);
        self.write(&format!("GC log file created {}\n", created.display()));
        let _ = std::fs::remove_file(created);
    }
}

#[test]
fn a_jdk8_ring_is_followed_through_renames_and_wraps_from_before_the_jvm_starts() {
    let dir = tempfile::tempdir().unwrap();
    let ring = dir.path().join("gc.log");
    let mut follower = Follower::new(ring.clone(), starting(StartAt::End), None);
    assert_eq!(follower.poll(&mut |_| {}).notes, vec![Note::Missing]);
    let mut jvm = Jdk8Ring::start(ring.clone(), 3);
    let mut read = poll_text(&mut follower);
    for round in 0..8 {
        jvm.write(&format!("pause {round}\n"));
        jvm.rotate();
        jvm.write(&format!("pause {round} after\n"));
        if round % 3 == 1 {
            // Two rotations before the agent looks again.
            jvm.rotate();
        }
        read += &poll_text(&mut follower);
    }
    assert_eq!(read, jvm.written, "every line once, in order");
    assert!(follower
        .live_file
        .ends_with(format!("gc.log.{}.current", jvm.number)));
}

#[test]
fn a_jdk8_ring_resumes_where_its_checkpoint_is_after_rotations_while_down() {
    let dir = tempfile::tempdir().unwrap();
    let ring = dir.path().join("gc.log");
    let mut jvm = Jdk8Ring::start(ring.clone(), 4);
    jvm.write("first\n");
    let mut follower = Follower::new(ring.clone(), starting(StartAt::Beginning), None);
    let mut read = poll_text(&mut follower);
    let checkpoint = follower.position();
    drop(follower);
    for round in 0..2 {
        jvm.write(&format!("while down {round}\n"));
        jvm.rotate();
    }
    jvm.write("after restart\n");
    let mut follower = Follower::new(ring, starting(StartAt::End), checkpoint);
    read += &poll_text(&mut follower);
    assert_eq!(read, jvm.written);
}

#[test]
fn a_restarted_jdk8_jvm_is_followed_past_the_current_file_its_last_run_left() {
    let dir = tempfile::tempdir().unwrap();
    let ring = dir.path().join("gc.log");
    let mut first_run = Jdk8Ring::start(ring.clone(), 4);
    first_run.rotate();
    first_run.rotate();
    first_run.write("first run, last line\n");
    // It exits writing gc.log.2.current, which stays.
    let mut follower = Follower::new(ring.clone(), starting(StartAt::End), None);
    assert_eq!(poll_text(&mut follower), "");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let mut second_run = Jdk8Ring::start(ring.clone(), 4);
    second_run.write("second run\n");
    let mut read = poll_text(&mut follower);
    // The third opens the stale gc.log.2.current again with "w".
    second_run.rotate();
    second_run.rotate();
    read += &poll_text(&mut follower);
    second_run.rotate();
    read += &poll_text(&mut follower);
    assert_eq!(read, second_run.written, "nothing of the stale file");
}

#[test]
fn a_checkpoint_in_the_current_file_of_a_jdk8_run_that_exited_is_finished_first() {
    let dir = tempfile::tempdir().unwrap();
    let ring = dir.path().join("gc.log");
    let mut first_run = Jdk8Ring::start(ring.clone(), 4);
    first_run.rotate();
    first_run.rotate();
    let mut follower = Follower::new(ring.clone(), starting(StartAt::Beginning), None);
    let mut read = poll_text(&mut follower);
    let checkpoint = follower.position();
    drop(follower);
    // While the agent is down the run writes its last line and exits,
    // leaving gc.log.2.current; the next run starts in gc.log.0.current.
    first_run.write("first run, last line\n");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let mut second_run = Jdk8Ring::start(ring.clone(), 4);
    second_run.write("second run\n");
    let mut follower = Follower::new(ring, starting(StartAt::End), checkpoint);
    read += &poll_text(&mut follower);
    assert_eq!(read, first_run.written + &second_run.written);
}

#[test]
fn missing_and_unreadable_files_are_reported_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("gc.log");
    let mut follower = Follower::new(log.clone(), starting(StartAt::Beginning), None);
    let outcome = follower.poll(&mut |_| {});
    assert_eq!(outcome.notes, vec![Note::Missing]);
    // A directory where the log should be cannot be read, even by root.
    std::fs::create_dir(&log).unwrap();
    let outcome = follower.poll(&mut |_| {});
    assert!(!outcome.readable);
    assert!(
        matches!(&outcome.notes[..], [Note::Unreadable(m)] if m.contains("not a regular file"))
    );
    assert!(follower.poll(&mut |_| {}).notes.is_empty(), "reported once");
    std::fs::remove_dir(&log).unwrap();
    append(&log, "x\n");
    assert_eq!(poll_text(&mut follower), "x\n");
}

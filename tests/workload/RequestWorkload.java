// Request workload used to generate the latency fixtures under tests/fixtures/latency/.
//
// Usage: java [jvm flags] -cp DIR RequestWorkload <seconds> <rate-per-second>
//            <access-log-out> <gc-events-out> <mxbean-json-out> [<nginx-log-out>]
//
// Simulates a service under a constant arrival rate WITHOUT coordinated omission:
// a scheduler thread computes the intended start time of request i as
// t0 + i/rate and hands the request to a small worker pool as soon as that time has
// come (after a stall -- GC pause, SIGSTOP, CPU starvation -- it catches up at once
// with every request whose intended start has passed). A request's latency is its
// completion time minus its INTENDED start, so anything that stops the JVM shows up
// in the latency of every request that should have started meanwhile.
//
// A request: a lookup in a large on-heap LRU cache (LinkedHashMap of small byte[]
// values holding about half of the heap; a miss inserts a new value, evicting the
// eldest), sometimes an update of the value, a "session" object that is kept for
// a few seconds (long enough to be promoted, then it dies in the old generation),
// a response buffer (short-lived garbage) and a few hundred microseconds of CPU.
// With the Parallel collector, -Xmx256m -Xmn40m (tests/latency/run.sh) this gives
// young GCs of a few ms about every second and, every few seconds, full GCs of
// ~100-300 ms (the cache is ~125k entries of 0.25-2 KB, which makes full GCs slow).
//
// Outputs:
//   <access-log-out>  one JSON line per request, written when it completes:
//       {"start":"2026-11-30T01:02:03.123456Z","duration_ms":12.345,"status":200,"path":"/price"}
//       start = intended start (UTC, microseconds), duration_ms = completion - start.
//   <nginx-log-out>   (default <access-log-out>.nginx) the same requests in nginx
//       preset form, with nginx's semantics: $time_local and $msec are the completion
//       time, $request_time = $msec - (intended start truncated to ms), 3 decimals:
//       127.0.0.1 - - [30/Nov/2026:01:02:03 +0000] "GET /price HTTP/1.1" 200 512 "-" "workload" 0.012 1796004123.135
//   <gc-events-out>   the JVM's own record of its collections: the first line is
//       {"jvm_start_ms":N}  (RuntimeMXBean.getStartTime()), then one line per
//       GarbageCollectionNotificationInfo, in the order they are delivered:
//       {"gc":"PS Scavenge","action":"end of minor GC","cause":"Allocation Failure","id":N,
//        "start_uptime_ms":N,"end_uptime_ms":N,"duration_ms":N}
//       (GcInfo start/end/duration). Wall-clock ms = jvm_start_ms + *_uptime_ms:
//       GcInfo times and getStartTime() share their origin (this matches the
//       `time` decorator of the GC log within ~1 ms), while
//       RuntimeMXBean.getUptime() and the GC log's `uptime` decorator count from an
//       earlier origin (~15-25 ms before) -- do not mix the two.
//   <mxbean-json-out> GarbageCollectorMXBean / RuntimeMXBean snapshot taken as the
//       very last action before Runtime.halt(0) (MxBeanSnapshot.java, as in GcWorkload),
//       with the fields below added: requests, requests_scheduled, rate_per_second,
//       t0_ms, drained_ms, clock_drift_us, and per collector its notifications and
//       count_at_close (its collection count when gc-events.jsonl was closed: the
//       snapshot's own allocation can start a collection after that).
//
// Wall-clock times are derived from System.nanoTime() and one Instant.now() read at
// start-up (so that they are monotonic and consistent with the latencies); the
// drift against Instant.now() at the end of the run is reported in the snapshot.
//
// Stdout: "RequestWorkload: started t0_ms=<epoch ms of the first intended start>"
// when the first request is scheduled (tests/latency/run.sh waits for it to time
// its SIGSTOP freezes), and a summary line at the end.
//
// Knobs (system properties): -Dwl.workers=4 (worker threads), -Dwl.live=0.55 (cache
// size as a fraction of the max heap), -Dwl.minObj=256 / -Dwl.maxObj=2048 (cache
// value sizes), -Dwl.keys=1.25 (key space / cache capacity: 1 - 1/keys of the
// lookups miss), -Dwl.update=0.5 (probability that a hit replaces the value),
// -Dwl.sessionKB=32 / -Dwl.sessionSec=5 (per-request object kept that long, 0 = none),
// -Dwl.respKB=96 (response buffer per request), -Dwl.cpuUs=300 (CPU per request),
// -Dwl.quiesceMs=300 (idle time before the final snapshot), -Dwl.untilMs=EPOCH_MS (no
// request is scheduled to start at or after this wall-clock time, however long the
// JVM took to start and fill its cache: a test that lines runs up with wall-clock
// minutes ends them on time on a loaded machine).
//
// Compile with the other workload files: javac --release 17 -d OUT tests/workload/*.java

import com.sun.management.GarbageCollectionNotificationInfo;
import com.sun.management.GcInfo;
import java.io.BufferedWriter;
import java.io.IOException;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.RuntimeMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import javax.management.Notification;
import javax.management.NotificationEmitter;
import javax.management.NotificationListener;
import javax.management.openmbean.CompositeData;

public final class RequestWorkload {

    /** Prevents escape analysis from removing allocations / the CPU loop. */
    static volatile Object blackhole;
    static volatile long sink;

    // Knobs.
    static int workers;
    static double liveFraction;
    static int minObj;
    static int maxObj;
    static double keysFactor;
    static double updateProb;
    static int respBytes;
    static long cpuNanos;
    static int sessionBytes;
    static double sessionSec;

    // Wall clock: wall_us(nanoTime) = wallBaseUs + (nanoTime - nanoBase) / 1000.
    static long wallBaseUs;
    static long nanoBase;

    static Cache cache;
    static int keySpace;
    /** FIFO ring of per-request "session" objects that live sessionSec seconds. */
    static byte[][] sessions;
    static long sessionNext;

    static final long POISON = -1L;
    static final LinkedBlockingQueue<Long> queue = new LinkedBlockingQueue<>();
    static long t0Nanos;
    static double ratePerSec;

    // Access logs (written under accessLock).
    static final Object accessLock = new Object();
    static BufferedWriter jsonLog;
    static BufferedWriter nginxLog;
    static final AtomicLong completed = new AtomicLong();
    static final AtomicLong maxLatencyUs = new AtomicLong();

    // GC notifications (written under gcLock).
    static final Object gcLock = new Object();
    static BufferedWriter gcLog;
    static boolean gcLogClosed;
    static long[] notified;      // per collector, index as in gcBeans
    static long lateNotifications;

    // Pre-fetched so that the final snapshot does not have to initialise JMX.
    static GarbageCollectorMXBean[] gcBeans;
    static RuntimeMXBean runtimeBean;

    static final String[] MONTHS = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

    /** LRU cache of byte[] values; all operations synchronized on the instance. */
    static final class Cache extends LinkedHashMap<Integer, byte[]> {
        private static final long serialVersionUID = 1L;
        final int capacity;

        Cache(int capacity) {
            super(capacity * 4 / 3 + 16, 0.75f, true);
            this.capacity = capacity;
        }

        @Override
        protected boolean removeEldestEntry(Map.Entry<Integer, byte[]> eldest) {
            return size() > capacity;
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5 && args.length != 6) {
            System.err.println("usage: RequestWorkload <seconds> <rate-per-second> <access-log-out> <gc-events-out> <mxbean-json-out> [<nginx-log-out>]");
            Runtime.getRuntime().halt(2);
        }
        double seconds = Double.parseDouble(args[0]);
        ratePerSec = Double.parseDouble(args[1]);
        Path accessOut = Paths.get(args[2]);
        Path gcOut = Paths.get(args[3]);
        Path mxOut = Paths.get(args[4]);
        Path nginxOut = args.length == 6 ? Paths.get(args[5]) : Paths.get(args[2] + ".nginx");
        if (!(seconds > 0) || !(ratePerSec > 0)) {
            System.err.println("seconds and rate must be > 0");
            Runtime.getRuntime().halt(2);
        }

        workers = Integer.getInteger("wl.workers", 4);
        liveFraction = dbl("wl.live", 0.55);
        minObj = Integer.getInteger("wl.minObj", 256);
        maxObj = Integer.getInteger("wl.maxObj", 2048);
        keysFactor = dbl("wl.keys", 1.25);
        updateProb = dbl("wl.update", 0.5);
        respBytes = Math.max(1, Integer.getInteger("wl.respKB", 96)) * 1024;
        cpuNanos = Long.getLong("wl.cpuUs", 300L) * 1000L;
        sessionBytes = Integer.getInteger("wl.sessionKB", 32) * 1024;
        sessionSec = dbl("wl.sessionSec", 5.0);

        calibrateWallClock();

        List<GarbageCollectorMXBean> beans = ManagementFactory.getGarbageCollectorMXBeans();
        gcBeans = beans.toArray(new GarbageCollectorMXBean[0]);
        runtimeBean = ManagementFactory.getRuntimeMXBean();
        notified = new long[gcBeans.length];

        // GC truth file: the start-up line first, then one line per notification.
        gcLog = Files.newBufferedWriter(gcOut, StandardCharsets.UTF_8);
        gcLog.write("{\"jvm_start_ms\":" + runtimeBean.getStartTime() + "}\n");
        gcLog.flush();
        for (int i = 0; i < gcBeans.length; i++) {
            final int idx = i;
            NotificationListener l = (n, hb) -> onGc(idx, n);
            ((NotificationEmitter) gcBeans[i]).addNotificationListener(l, null, null);
        }

        jsonLog = Files.newBufferedWriter(accessOut, StandardCharsets.UTF_8);
        nginxLog = Files.newBufferedWriter(nginxOut, StandardCharsets.UTF_8);

        // Fill the cache before the first request.
        long maxHeap = Runtime.getRuntime().maxMemory();
        int avgObj = (minObj + maxObj) / 2;
        int capacity = (int) Math.max(16, (long) (maxHeap * liveFraction) / Math.max(1, avgObj));
        keySpace = (int) Math.max(capacity + 1, (long) (capacity * keysFactor));
        cache = new Cache(capacity);
        sessions = new byte[(int) Math.max(1, Math.round(ratePerSec * sessionSec))][];
        {
            SplittableRandom r = new SplittableRandom(42);
            for (int k = 0; k < capacity; k++) {
                cache.put(k, newValue(r));
            }
        }
        System.out.printf("RequestWorkload seconds=%.1f rate=%.1f/s maxHeap=%dMB workers=%d cache=%d entries (~%dMB, live=%.2f) keys=%d update=%.2f resp=%dKB cpu=%dus session=%dKBx%d%n",
                seconds, ratePerSec, maxHeap >> 20, workers, capacity, ((long) capacity * avgObj) >> 20, liveFraction,
                keySpace, updateProb, respBytes >> 10, cpuNanos / 1000, sessionBytes >> 10, sessions.length);

        Thread[] pool = new Thread[workers];
        for (int t = 0; t < workers; t++) {
            final int id = t;
            pool[t] = new Thread(() -> work(id), "worker-" + t);
            pool[t].setDaemon(true);
            pool[t].start();
        }

        // ---- scheduler (this thread)
        t0Nanos = System.nanoTime() + 50_000_000L;
        long total = (long) Math.floor(seconds * ratePerSec);
        Long untilMs = Long.getLong("wl.untilMs");
        if (untilMs != null) {
            double secondsLeft = (untilMs * 1000L - wallUs(t0Nanos)) / 1e6;
            total = Math.min(total, (long) Math.max(0.0, Math.ceil(secondsLeft * ratePerSec)));
        }
        System.out.println("RequestWorkload: started t0_ms=" + (wallUs(t0Nanos) / 1000L) + " requests=" + total);
        System.out.flush();
        for (long i = 0; i < total; i++) {
            long due = intendedNanos(i);
            long now;
            while ((now = System.nanoTime()) < due) {
                LockSupport.parkNanos(due - now);
            }
            queue.put(i);
        }
        for (int t = 0; t < workers; t++) {
            queue.put(POISON);
        }
        for (Thread w : pool) {
            w.join();
        }
        synchronized (accessLock) {
            jsonLog.close();
            nginxLog.close();
        }
        long drainedNanos = System.nanoTime();

        // No allocation from here on: let pending GC notifications arrive.
        Thread.sleep(Long.getLong("wl.quiesceMs", 300L));
        snapshotAndHalt(mxOut, total, drainedNanos);
    }

    static long intendedNanos(long i) {
        return t0Nanos + (long) Math.floor(i * 1e9 / ratePerSec);
    }

    static void calibrateWallClock() {
        long bestSpread = Long.MAX_VALUE;
        for (int i = 0; i < 20; i++) {
            long n1 = System.nanoTime();
            Instant w = Instant.now();
            long n2 = System.nanoTime();
            if (n2 - n1 < bestSpread) {
                bestSpread = n2 - n1;
                nanoBase = n1 + (n2 - n1) / 2;
                wallBaseUs = w.getEpochSecond() * 1_000_000L + w.getNano() / 1000;
            }
        }
    }

    static long wallUs(long nanos) {
        return wallBaseUs + Math.floorDiv(nanos - nanoBase, 1000L);
    }

    static double dbl(String prop, double def) {
        String v = System.getProperty(prop);
        return v == null ? def : Double.parseDouble(v);
    }

    static byte[] newValue(SplittableRandom r) {
        int sz = minObj >= maxObj ? minObj : r.nextInt(minObj, maxObj + 1);
        byte[] b = new byte[sz];
        b[0] = (byte) sz;
        b[sz - 1] = (byte) (sz >> 8);
        return b;
    }

    // ------------------------------------------------------------------ workers

    static void work(int id) {
        SplittableRandom r = new SplittableRandom(1000 + id);
        StringBuilder json = new StringBuilder(160);
        StringBuilder nginx = new StringBuilder(160);
        while (true) {
            long i;
            try {
                i = queue.take();
            } catch (InterruptedException e) {
                return;
            }
            if (i == POISON) {
                return;
            }
            long intended = intendedNanos(i);
            handle(r);
            long done = System.nanoTime();
            log(intended, done, json, nginx);
        }
    }

    /** One request: cache lookup (+ insert on a miss, sometimes an update), a response buffer, CPU. */
    static void handle(SplittableRandom r) {
        int key = r.nextInt(keySpace);
        byte[] v;
        synchronized (cache) {
            v = cache.get(key);
        }
        if (v == null || r.nextDouble() < updateProb) {
            byte[] nv = newValue(r);
            if (v != null) {
                System.arraycopy(v, 0, nv, 0, Math.min(64, Math.min(v.length, nv.length)));
            }
            synchronized (cache) {
                cache.put(key, nv);
            }
            v = nv;
        }
        if (sessionBytes > 0) {
            byte[] sess = new byte[sessionBytes];
            sess[0] = (byte) key;
            synchronized (sessions) {
                sessions[(int) (sessionNext++ % sessions.length)] = sess;
            }
        }
        byte[] resp = new byte[respBytes];
        int n = Math.min(v.length, resp.length);
        System.arraycopy(v, 0, resp, 0, n);
        // CPU: hash the response until cpuNanos have passed.
        long begin = System.nanoTime();
        long h = 1125899906842597L;
        int p = 0;
        do {
            for (int k = 0; k < 512; k++) {
                h = 31 * h + resp[p];
                p += 97;
                if (p >= resp.length) {
                    p -= resp.length;
                }
                resp[p] ^= (byte) h;
            }
        } while (System.nanoTime() - begin < cpuNanos);
        sink = h;
        blackhole = resp;
    }

    static void log(long intendedNanos, long doneNanos, StringBuilder json, StringBuilder nginx) {
        long startUs = wallUs(intendedNanos);
        long endUs = wallUs(doneNanos);
        long durUs = endUs - startUs;
        long startMs = Math.floorDiv(startUs, 1000L);
        long endMs = Math.floorDiv(endUs, 1000L);

        json.setLength(0);
        json.append("{\"start\":\"");
        rfc3339(json, startUs);
        json.append("\",\"duration_ms\":");
        fixed3(json, durUs);
        json.append(",\"status\":200,\"path\":\"/price\"}\n");

        nginx.setLength(0);
        nginx.append("127.0.0.1 - - [");
        timeLocal(nginx, Math.floorDiv(endMs, 1000L));
        nginx.append("] \"GET /price HTTP/1.1\" 200 512 \"-\" \"workload\" ");
        fixed3(nginx, endMs - startMs);
        nginx.append(' ');
        fixed3(nginx, endMs);
        nginx.append('\n');

        synchronized (accessLock) {
            try {
                jsonLog.append(json);
                nginxLog.append(nginx);
            } catch (IOException e) {
                e.printStackTrace();
                Runtime.getRuntime().halt(3);
            }
        }
        completed.incrementAndGet();
        maxLatencyUs.accumulateAndGet(durUs, Math::max);
    }

    /** value / 1000 with exactly 3 decimals (value >= 0). */
    static void fixed3(StringBuilder b, long v) {
        b.append(v / 1000).append('.');
        pad(b, v % 1000, 3);
    }

    static void pad(StringBuilder b, long v, int width) {
        String s = Long.toString(v);
        for (int i = s.length(); i < width; i++) {
            b.append('0');
        }
        b.append(s);
    }

    // Civil-from-days (H. Hinnant), UTC.
    static long[] civil(long epochSec) {
        long days = Math.floorDiv(epochSec, 86400L);
        long secs = Math.floorMod(epochSec, 86400L);
        long z = days + 719468;
        long era = Math.floorDiv(z, 146097);
        long doe = z - era * 146097;
        long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        long y = yoe + era * 400;
        long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        long mp = (5 * doy + 2) / 153;
        long d = doy - (153 * mp + 2) / 5 + 1;
        long m = mp < 10 ? mp + 3 : mp - 9;
        if (m <= 2) {
            y++;
        }
        return new long[] {y, m, d, secs / 3600, (secs / 60) % 60, secs % 60};
    }

    static void rfc3339(StringBuilder b, long epochUs) {
        long[] c = civil(Math.floorDiv(epochUs, 1_000_000L));
        pad(b, c[0], 4);
        b.append('-');
        pad(b, c[1], 2);
        b.append('-');
        pad(b, c[2], 2);
        b.append('T');
        pad(b, c[3], 2);
        b.append(':');
        pad(b, c[4], 2);
        b.append(':');
        pad(b, c[5], 2);
        b.append('.');
        pad(b, Math.floorMod(epochUs, 1_000_000L), 6);
        b.append('Z');
    }

    /** nginx $time_local in UTC: 30/Nov/2026:01:02:03 +0000 */
    static void timeLocal(StringBuilder b, long epochSec) {
        long[] c = civil(epochSec);
        pad(b, c[2], 2);
        b.append('/').append(MONTHS[(int) c[1] - 1]).append('/');
        pad(b, c[0], 4);
        b.append(':');
        pad(b, c[3], 2);
        b.append(':');
        pad(b, c[4], 2);
        b.append(':');
        pad(b, c[5], 2);
        b.append(" +0000");
    }

    // ------------------------------------------------------------------ GC notifications

    static void onGc(int idx, Notification n) {
        if (!GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION.equals(n.getType())) {
            return;
        }
        GarbageCollectionNotificationInfo info = GarbageCollectionNotificationInfo.from((CompositeData) n.getUserData());
        GcInfo gi = info.getGcInfo();
        StringBuilder sb = new StringBuilder(200);
        sb.append("{\"gc\":").append(MxBeanSnapshot.str(info.getGcName()))
          .append(",\"action\":").append(MxBeanSnapshot.str(info.getGcAction()))
          .append(",\"cause\":").append(MxBeanSnapshot.str(info.getGcCause()))
          .append(",\"id\":").append(gi.getId())
          .append(",\"start_uptime_ms\":").append(gi.getStartTime())
          .append(",\"end_uptime_ms\":").append(gi.getEndTime())
          .append(",\"duration_ms\":").append(gi.getDuration())
          .append("}\n");
        synchronized (gcLock) {
            if (gcLogClosed) {
                lateNotifications++;
                return;
            }
            try {
                gcLog.write(sb.toString());
            } catch (IOException e) {
                e.printStackTrace();
                Runtime.getRuntime().halt(3);
            }
            notified[idx]++;
        }
    }

    // ------------------------------------------------------------------ snapshot

    static void snapshotAndHalt(Path out, long total, long drainedNanos) {
        int n = gcBeans.length;
        long[] counts = new long[n];
        // Wait (up to ~3 s) until every collection has been notified, then close the file.
        long[] notifiedCopy = new long[n];
        long[] countsAtClose = new long[n];
        for (int wait = 0; wait < 60; wait++) {
            boolean complete = true;
            synchronized (gcLock) {
                for (int i = 0; i < n; i++) {
                    counts[i] = gcBeans[i].getCollectionCount();
                    if (notified[i] != counts[i]) {
                        complete = false;
                    }
                }
                if (complete || wait == 59) {
                    gcLogClosed = true;
                    try {
                        gcLog.close();
                    } catch (IOException e) {
                        e.printStackTrace();
                        Runtime.getRuntime().halt(3);
                    }
                    System.arraycopy(notified, 0, notifiedCopy, 0, n);
                    System.arraycopy(counts, 0, countsAtClose, 0, n);
                    break;
                }
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                break;
            }
        }
        long nowNanos = System.nanoTime();
        Instant now = Instant.now();
        long driftUs = (now.getEpochSecond() * 1_000_000L + now.getNano() / 1000) - wallUs(nowNanos);
        System.out.printf("RequestWorkload: done requests=%d/%d max_latency=%.3fms gc_notifications=%s clock_drift=%dus%n",
                completed.get(), total, maxLatencyUs.get() / 1000.0, java.util.Arrays.toString(notifiedCopy), driftUs);
        System.out.flush();
        String extra = MxBeanSnapshot.field("requests", completed.get())
                + MxBeanSnapshot.field("requests_scheduled", total)
                + MxBeanSnapshot.field("rate_per_second", ratePerSec)
                + MxBeanSnapshot.field("t0_ms", wallUs(t0Nanos) / 1000L)
                + MxBeanSnapshot.field("drained_ms", wallUs(drainedNanos) / 1000L)
                + MxBeanSnapshot.field("clock_drift_us", driftUs);
        MxBeanSnapshot.writeAndHalt(out, gcBeans, runtimeBean, "requests", extra,
                i -> MxBeanSnapshot.member("notifications", notifiedCopy[i])
                        + MxBeanSnapshot.member("count_at_close", countsAtClose[i]));
    }
}

// GC workload used to generate the JVM GC log fixtures under tests/fixtures/jvm/.
//
// Usage: java [jvm flags] -cp DIR GcWorkload <scenario> <seconds> <mxbean-json-out>
//
// Scenarios: steady, concurrent, humongous, systemgc, full, evacfail, stall, degenerated.
// Every scenario's knobs have defaults chosen here and can be overridden with
// system properties: -Dwl.threads= (allocating threads), -Dwl.rate= (MB/s per
// thread, 0 = unthrottled), -Dwl.live= (retained set as a fraction of the max heap),
// -Dwl.replace= (probability that an allocation replaces a retained object),
// -Dwl.fifo= (replace retained objects in FIFO order), -Dwl.minObj= / -Dwl.maxObj=
// (byte[] sizes), -Dwl.burstMs= / -Dwl.periodMs= (allocate only during bursts),
// -Dwl.gcs= (System.gc() calls in "systemgc"), -Dwl.rounds= (fill-to-OOM rounds in
// "full"), -Dwl.quiesceMs= (idle time before the final snapshot, default 500).
//
// As its very last action the program snapshots the GarbageCollectorMXBeans and
// the RuntimeMXBean into a JSON file and calls Runtime.halt(0), so that no GC can
// run between the snapshot and the exit. If a GC completes while the JSON is
// being written, the snapshot is retaken (see MxBeanSnapshot.java).
//
// Compile with the other workload files: javac --release 17 -d OUT tests/workload/*.java

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.RuntimeMXBean;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

public final class GcWorkload {

    /** Prevents escape analysis from removing allocations. */
    static volatile Object blackhole;

    static volatile boolean running = true;

    // Scenario parameters (resolved in main()).
    static String scenario;
    static long deadlineNanos;
    static int threads;
    static double ratePerThreadMBs; // 0 = unlimited
    static double liveFraction;     // of Runtime.maxMemory()
    static double replaceProb;      // probability an allocation replaces a live slot
    static int minObj;
    static int maxObj;
    static int explicitGcs;
    static int fullRounds;
    static boolean fifo;
    static long burstMs;            // >0: allocate at full speed for burstMs out of every periodMs
    static long periodMs;            // replace live slots in FIFO order instead of randomly

    /** Shared retained ("live") set: a ring of byte arrays replaced over time. */
    static Object[] live;

    // Pre-fetched so that the final snapshot does not have to initialise JMX.
    static GarbageCollectorMXBean[] gcBeans;
    static RuntimeMXBean runtimeBean;

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: GcWorkload <scenario> <seconds> <mxbean-json-out>");
            Runtime.getRuntime().halt(2);
        }
        scenario = args[0];
        double seconds = Double.parseDouble(args[1]);
        Path out = Paths.get(args[2]);

        List<GarbageCollectorMXBean> beans = ManagementFactory.getGarbageCollectorMXBeans();
        gcBeans = beans.toArray(new GarbageCollectorMXBean[0]);
        runtimeBean = ManagementFactory.getRuntimeMXBean();

        configure(scenario);
        long maxHeap = Runtime.getRuntime().maxMemory();
        System.out.printf("GcWorkload scenario=%s seconds=%.1f maxHeap=%dMB threads=%d rate=%.0fMB/s/thread live=%.2f replace=%.3f obj=%d..%d fifo=%s burst=%d/%dms%n",
                scenario, seconds, maxHeap >> 20, threads, ratePerThreadMBs, liveFraction, replaceProb, minObj, maxObj, fifo, burstMs, periodMs);

        long start = System.nanoTime();
        deadlineNanos = start + (long) (seconds * 1e9);

        // Build the initial live set.
        int avgObj = (minObj + maxObj) / 2;
        int liveSlots = (int) Math.max(1, (long) (maxHeap * liveFraction) / Math.max(1, avgObj));
        live = new Object[liveSlots];
        if (!scenario.equals("full")) {
            SplittableRandom r = new SplittableRandom(42);
            int fill = scenario.equals("concurrent") ? liveSlots / 4 : liveSlots;
            for (int i = 0; i < fill; i++) {
                live[i] = new byte[size(r)];
            }
        }

        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int id = t;
            workers[t] = new Thread(() -> work(id), "worker-" + t);
            workers[t].setDaemon(true);
            workers[t].start();
        }

        if (scenario.equals("systemgc")) {
            // Spread explicit GCs over the run: at 1/(n+1), 2/(n+1), ...
            for (int i = 1; i <= explicitGcs; i++) {
                long at = start + (long) (seconds * 1e9 * i / (explicitGcs + 1));
                sleepUntil(at);
                System.out.println("GcWorkload: System.gc() #" + i);
                System.gc();
            }
        }
        sleepUntil(deadlineNanos);
        running = false;
        for (Thread w : workers) {
            w.join();
        }
        // Drop everything and let in-flight concurrent cycles (ZGC/Shenandoah/G1 marking)
        // finish before the snapshot, without allocating.
        live = null;
        blackhole = null;
        Thread.sleep(Long.getLong("wl.quiesceMs", 500L));
        MxBeanSnapshot.writeAndHalt(out, gcBeans, runtimeBean, scenario, "", null);
    }

    static void configure(String s) {
        // defaults
        threads = 1;
        ratePerThreadMBs = 60;
        liveFraction = 0.30;
        replaceProb = 0.125;
        minObj = 256;
        maxObj = 16 * 1024;
        explicitGcs = 3;
        fullRounds = 2;
        fifo = false;
        burstMs = 0;
        periodMs = 1000;
        switch (s) {
            case "steady":
                break;
            case "systemgc":
                break;
            case "concurrent":
                // Grows the old-gen live set to ~55% of the heap and keeps replacing it
                // (old-gen garbage), so that G1 starts concurrent cycles and mixed GCs.
                ratePerThreadMBs = 80;
                liveFraction = 0.55;
                replaceProb = 0.5;
                break;
            case "humongous":
                // Objects of 0.6..3 MB: humongous with -XX:G1HeapRegionSize=1m.
                ratePerThreadMBs = 80;
                liveFraction = 0.0; // own ring, see work()
                minObj = 600 * 1024;
                maxObj = 3 * 1024 * 1024;
                break;
            case "full":
                ratePerThreadMBs = 0;
                liveFraction = 0.0;
                minObj = 32 * 1024;
                maxObj = 64 * 1024;
                break;
            case "evacfail":
                // Lots of young objects that are still alive at the young GC while the
                // old gen is nearly full: survivor/old regions run out during evacuation.
                // Every allocation goes into a FIFO ring, so each object lives exactly
                // as long as it takes to allocate the ring's size again: with a large young
                // gen (-Xmn) most of eden is live at each young GC.
                ratePerThreadMBs = 100;
                liveFraction = 0.50;
                replaceProb = 1.0;
                fifo = true;
                minObj = 1024;
                maxObj = 8 * 1024;
                break;
            case "stall":
                // Bursts of unthrottled allocation from several threads: the collector
                // cannot keep up during a burst, so allocating threads stall.
                threads = 2;
                ratePerThreadMBs = 0;
                liveFraction = 0.60;
                replaceProb = 0.05;
                burstMs = 40;
                break;
            case "degenerated":
                // Like "stall" with a smaller margin: Shenandoah runs out of memory during
                // a concurrent cycle and finishes it in a degenerated (STW) pause.
                threads = 2;
                ratePerThreadMBs = 0;
                liveFraction = 0.50;
                replaceProb = 0.10;
                burstMs = 40;
                break;
            default:
                System.err.println("unknown scenario " + s);
                Runtime.getRuntime().halt(2);
        }
        threads = Integer.getInteger("wl.threads", threads);
        ratePerThreadMBs = dbl("wl.rate", ratePerThreadMBs);
        liveFraction = dbl("wl.live", liveFraction);
        replaceProb = dbl("wl.replace", replaceProb);
        minObj = Integer.getInteger("wl.minObj", minObj);
        maxObj = Integer.getInteger("wl.maxObj", maxObj);
        explicitGcs = Integer.getInteger("wl.gcs", explicitGcs);
        fullRounds = Integer.getInteger("wl.rounds", fullRounds);
        burstMs = Long.getLong("wl.burstMs", burstMs);
        periodMs = Long.getLong("wl.periodMs", periodMs);
        fifo = Boolean.parseBoolean(System.getProperty("wl.fifo", Boolean.toString(fifo)));
    }

    static double dbl(String prop, double def) {
        String v = System.getProperty(prop);
        return v == null ? def : Double.parseDouble(v);
    }

    static int size(SplittableRandom r) {
        return minObj >= maxObj ? minObj : r.nextInt(minObj, maxObj + 1);
    }

    static void sleepUntil(long nanos) throws InterruptedException {
        long now;
        while ((now = System.nanoTime()) < nanos) {
            long ms = Math.min(100, (nanos - now) / 1_000_000L);
            if (ms <= 0) {
                Thread.onSpinWait();
            } else {
                Thread.sleep(ms);
            }
        }
    }

    // ------------------------------------------------------------------ workers

    static void work(int id) {
        SplittableRandom r = new SplittableRandom(1000 + id);
        long bytesPerSec = (long) (ratePerThreadMBs * 1024 * 1024);
        long t0 = System.nanoTime();
        long allocated = 0;
        switch (scenario) {
            case "full":
                fillUntilOom();
                return;
            case "humongous":
                humongous(r, bytesPerSec);
                return;
            default:
                break;
        }
        Object[] churn = new Object[256];
        int c = 0;
        Object[] liveSet = live;
        int liveLen = liveSet.length;
        // In "concurrent" the live set is first grown to its full size, then churned.
        int grow = scenario.equals("concurrent") ? liveLen / 4 : (fifo ? 0 : liveLen);
        while (running && System.nanoTime() < deadlineNanos) {
            int sz = size(r);
            byte[] b = new byte[sz];
            allocated += sz;
            if (r.nextDouble() < replaceProb) {
                if (fifo) {
                    liveSet[grow++ % liveLen] = b;
                } else if (grow < liveLen) {
                    liveSet[grow++] = b;
                } else {
                    liveSet[r.nextInt(liveLen)] = b;
                }
            } else {
                churn[c++ & 255] = b;
            }
            if (bytesPerSec > 0 && (allocated & 0xFFFF) < sz) {
                pace(t0, allocated, bytesPerSec);
            }
            if (burstMs > 0 && (allocated & 0xFFFF) < sz) {
                long pos = ((System.nanoTime() - t0) / 1_000_000L) % periodMs;
                if (pos >= burstMs) {
                    try {
                        Thread.sleep(periodMs - pos);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }
        }
        blackhole = churn;
    }

    static void pace(long t0, long allocated, long bytesPerSec) {
        long due = t0 + (long) (allocated * 1e9 / bytesPerSec);
        long now = System.nanoTime();
        if (due - now > 1_000_000L) {
            try {
                Thread.sleep((due - now) / 1_000_000L);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    static void humongous(SplittableRandom r, long bytesPerSec) {
        Object[] ring = new Object[6];
        Object[] small = new Object[256];
        long t0 = System.nanoTime();
        long allocated = 0;
        int i = 0;
        while (running && System.nanoTime() < deadlineNanos) {
            int sz = size(r);
            ring[i++ % ring.length] = new byte[sz];
            allocated += sz;
            // Some ordinary churn in between so that young GCs also happen.
            for (int k = 0; k < 64; k++) {
                int s = r.nextInt(256, 16 * 1024);
                small[k & 255] = new byte[s];
                allocated += s;
            }
            if (bytesPerSec > 0) {
                pace(t0, allocated, bytesPerSec);
            }
        }
        blackhole = ring;
    }

    /** Retained chunks of the "full" scenario (a field, so that it can be dropped reliably). */
    static Object[][] fullChunks;

    /** Fills the heap until OutOfMemoryError, releases, repeats (fullRounds times). */
    static void fillUntilOom() {
        SplittableRandom r = new SplittableRandom(7);
        int rounds = 0;
        while (running && rounds < fullRounds && System.nanoTime() < deadlineNanos) {
            try {
                fullChunks = new Object[64][];
                int n = 0;
                while (running && System.nanoTime() < deadlineNanos) {
                    Object[] chunk = new Object[64];
                    for (int j = 0; j < chunk.length; j++) {
                        chunk[j] = new byte[size(r)];
                    }
                    if (n == fullChunks.length) {
                        Object[][] bigger = new Object[n * 2][];
                        System.arraycopy(fullChunks, 0, bigger, 0, n);
                        fullChunks = bigger;
                    }
                    fullChunks[n++] = chunk;
                    // some short-lived garbage too
                    blackhole = new byte[size(r)];
                }
            } catch (OutOfMemoryError oom) {
                fullChunks = null;
                blackhole = null;
                rounds++;
                System.out.println("GcWorkload: OutOfMemoryError caught, round " + rounds);
            }
            fullChunks = null;
            // Churn a bit between rounds so young GCs happen in a mostly empty heap.
            long until = Math.min(deadlineNanos, System.nanoTime() + 300_000_000L);
            try {
                Object[] churn = new Object[64];
                int c = 0;
                while (running && System.nanoTime() < until) {
                    churn[c++ & 63] = new byte[size(r)];
                    Thread.sleep(1); // ~50 MB/s
                }
            } catch (OutOfMemoryError oom) {
                System.out.println("GcWorkload: OutOfMemoryError caught while churning");
            } catch (InterruptedException e) {
                return;
            }
        }
    }
}

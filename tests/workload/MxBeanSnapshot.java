// The last act of the workloads (GcWorkload, RequestWorkload): a JSON snapshot of
// the GarbageCollectorMXBeans and the RuntimeMXBean, then Runtime.halt(0), so that
// no GC can run between the snapshot and the exit.
//
// The file (tests read it as `mxbeans.json`):
//   {
//     "java_version": "17.0.15", "vm_version": "...", "vm_name": "...",
//     "scenario": "<scenario>",
//     "jvm_args": ["-Xmx128m", ...],
//     "start_time_ms": N, "uptime_ms": N,
//     "snapshot_attempts": N,
//     "process_cpu_ns_before": N, "process_cpu_ns": N,
//     <the caller's extra fields, in order>
//     "collectors": [
//       {"name": "G1 Young Generation", "count": N, "time_ms": N<, the caller's extra collector fields>},
//       ...
//     ]
//   }
// one member a line, as the committed fixtures show. If a collection finishes
// while the file is being written, the snapshot is retaken (up to 10 times;
// `snapshot_attempts` says how many it took).
//
// With -Dwl.hsperf=FILE the JVM's own PerfData file (/tmp/hsperfdata_USER/PID) is
// copied to FILE within the same attempt, and the snapshot also has "threads"
// (live, daemon, peak), "classes" (loaded, unloaded) and "memory_pools" (name, type,
// used, committed, max): the truth the hsperfdata parser is checked against.
// With -Dwl.cpuSettleMs=N the JVM idles N ms between process_cpu_ns_before and the
// snapshot, so that an agent reading the process's CPU time every < N ms reads it
// between process_cpu_ns_before and process_cpu_ns.
//
// Compiled together with the workloads: javac --release 17 -d OUT tests/workload/*.java

import java.lang.management.ClassLoadingMXBean;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryUsage;
import java.lang.management.RuntimeMXBean;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.function.IntFunction;

final class MxBeanSnapshot {

    private MxBeanSnapshot() {
    }

    /**
     * Writes the snapshot to {@code out} and halts the JVM with status 0 (3 if the
     * file cannot be written).
     *
     * @param gcBeans        the collectors, fetched early so that the snapshot does
     *                       not have to initialise JMX
     * @param scenario       the value of the "scenario" field
     * @param extraFields    members written after "snapshot_attempts", each made by
     *                       {@link #field} (may be empty)
     * @param collectorExtra for collector {@code i}, members appended to its entry,
     *                       each made by {@link #member}; null for none
     */
    static void writeAndHalt(Path out, GarbageCollectorMXBean[] gcBeans, RuntimeMXBean runtimeBean,
                             String scenario, String extraFields, IntFunction<String> collectorExtra) {
        int n = gcBeans.length;
        long[] counts = new long[n];
        long[] times = new long[n];
        // Fetched first: the first use of each bean initialises it, which
        // costs tens of milliseconds of CPU.
        com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        ThreadMXBean threadBean = ManagementFactory.getThreadMXBean();
        ClassLoadingMXBean classBean = ManagementFactory.getClassLoadingMXBean();
        List<MemoryPoolMXBean> pools = ManagementFactory.getMemoryPoolMXBeans();
        // The process's CPU time before the snapshot's own work, and in each
        // attempt: an agent's reading taken in between lies between the two.
        // The idle wait gives an agent that samples more often than
        // wl.cpuSettleMs a reading in between, however late its last one was.
        long cpuBefore = os.getProcessCpuTime();
        try {
            Thread.sleep(Long.getLong("wl.cpuSettleMs", 0L));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        String hsperfCopy = System.getProperty("wl.hsperf");
        for (int attempt = 0; attempt < 10; attempt++) {
            for (int i = 0; i < n; i++) {
                counts[i] = gcBeans[i].getCollectionCount();
                times[i] = gcBeans[i].getCollectionTime();
            }
            StringBuilder sb = new StringBuilder(1024);
            sb.append("{\n");
            sb.append(field("java_version", System.getProperty("java.version")));
            sb.append(field("vm_version", System.getProperty("java.vm.version")));
            sb.append(field("vm_name", System.getProperty("java.vm.name")));
            sb.append(field("scenario", scenario));
            sb.append("  \"jvm_args\": [");
            List<String> jvmArgs = runtimeBean.getInputArguments();
            for (int i = 0; i < jvmArgs.size(); i++) {
                sb.append(i == 0 ? "" : ", ").append(str(jvmArgs.get(i)));
            }
            sb.append("],\n");
            sb.append(field("start_time_ms", runtimeBean.getStartTime()));
            sb.append(field("uptime_ms", runtimeBean.getUptime()));
            sb.append(field("snapshot_attempts", attempt + 1));
            sb.append(field("process_cpu_ns_before", cpuBefore));
            sb.append(field("process_cpu_ns", os.getProcessCpuTime()));
            sb.append(extraFields);
            long classesLoaded = classBean.getTotalLoadedClassCount();
            if (hsperfCopy != null) {
                sb.append("  \"threads\": {\"live\": ").append(threadBean.getThreadCount())
                  .append(member("daemon", threadBean.getDaemonThreadCount()))
                  .append(member("peak", threadBean.getPeakThreadCount())).append("},\n");
                sb.append("  \"classes\": {\"loaded\": ").append(classesLoaded)
                  .append(member("unloaded", classBean.getUnloadedClassCount())).append("},\n");
                sb.append("  \"memory_pools\": [");
                for (int i = 0; i < pools.size(); i++) {
                    MemoryPoolMXBean pool = pools.get(i);
                    MemoryUsage usage = pool.getUsage();
                    sb.append(i == 0 ? "\n" : ",\n");
                    sb.append("    {\"name\": ").append(str(pool.getName()))
                      .append(member("type", pool.getType().toString()))
                      .append(member("used", usage.getUsed()))
                      .append(member("committed", usage.getCommitted()))
                      .append(member("max", usage.getMax())).append('}');
                }
                sb.append("\n  ],\n");
                // Last, so that nothing the snapshot loads or starts is missing from the copy.
                copyPerfData(Paths.get(hsperfCopy));
            }
            sb.append("  \"collectors\": [");
            for (int i = 0; i < n; i++) {
                sb.append(i == 0 ? "\n" : ",\n");
                sb.append("    {\"name\": ").append(str(gcBeans[i].getName()))
                  .append(member("count", counts[i]))
                  .append(member("time_ms", times[i]));
                if (collectorExtra != null) {
                    sb.append(collectorExtra.apply(i));
                }
                sb.append('}');
            }
            sb.append("\n  ]\n}\n");
            try {
                Files.write(out, sb.toString().getBytes(StandardCharsets.UTF_8));
            } catch (Exception e) {
                e.printStackTrace();
                Runtime.getRuntime().halt(3);
            }
            // Re-check without allocating: if a collection finished meanwhile, redo.
            boolean same = hsperfCopy == null || classBean.getTotalLoadedClassCount() == classesLoaded;
            for (int i = 0; i < n; i++) {
                if (gcBeans[i].getCollectionCount() != counts[i]) {
                    same = false;
                }
            }
            if (same) {
                Runtime.getRuntime().halt(0);
            }
        }
        Runtime.getRuntime().halt(0);
    }

    /** Copies this JVM's PerfData file, as any reader of /tmp/hsperfdata_USER sees it. */
    static void copyPerfData(Path to) {
        // HotSpot always writes under /tmp, whatever java.io.tmpdir says.
        Path own = Paths.get("/tmp", "hsperfdata_" + System.getProperty("user.name"), Long.toString(ProcessHandle.current().pid()));
        try {
            Files.copy(own, to, StandardCopyOption.REPLACE_EXISTING);
        } catch (Exception e) {
            e.printStackTrace();
            Runtime.getRuntime().halt(3);
        }
    }

    /** A top-level member on a line of its own: {@code   "name": value,\n}. */
    static String field(String name, Object value) {
        return "  " + str(name) + ": " + json(value) + ",\n";
    }

    /** A member of a collector's entry: {@code , "name": value}. */
    static String member(String name, Object value) {
        return ", " + str(name) + ": " + json(value);
    }

    /** A string (or null) as a JSON string; anything else (a number) as Java prints it. */
    static String json(Object value) {
        return value == null || value instanceof String ? str((String) value) : String.valueOf(value);
    }

    /** {@code s} as a JSON string, {@code null} for null. */
    static String str(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder(s.length() + 2);
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            switch (ch) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                case '\b': b.append("\\b"); break;
                case '\f': b.append("\\f"); break;
                default:
                    if (ch < 0x20) {
                        b.append(String.format("\\u%04x", (int) ch));
                    } else {
                        b.append(ch);
                    }
            }
        }
        return b.append('"').toString();
    }
}

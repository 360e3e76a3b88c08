import java.util.concurrent.locks.LockSupport;

/** A JVM at RATE safepoints/s (one Thread.getAllStackTraces() each, a
 *  safepoint VM operation) while its main thread counts operations of a
 *  fixed CPU loop: prints "ops_per_second safepoints_per_second". */
public class SafepointLoad {
    public static void main(String[] args) throws Exception {
        double seconds = Double.parseDouble(args[0]);
        int rate = Integer.parseInt(args[1]);
        // Two threads: one alone does ~500/s on a loaded 2-core guest.
        Runnable stopper = () -> {
            long period = 2_000_000_000L / rate;
            long next = System.nanoTime();
            while (true) {
                Thread.getAllStackTraces();
                next += period;
                long wait = next - System.nanoTime();
                if (wait > 0) LockSupport.parkNanos(wait);
            }
        };
        var runtime = sun.management.ManagementFactoryHelper.getHotspotRuntimeMBean();
        for (int i = 0; i < 2; i++) {
            Thread thread = new Thread(stopper);
            thread.setDaemon(true);
            thread.start();
        }
        Thread.sleep(1000); // warm-up
        long before = runtime.getSafepointCount();
        long start = System.nanoTime();
        long end = start + (long) (seconds * 1e9);
        long ops = 0, x = 1;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 10_000; i++) x = x * 6364136223846793005L + 1442695040888963407L;
            ops++;
        }
        double took = (System.nanoTime() - start) / 1e9;
        long count = runtime.getSafepointCount() - before;
        System.out.println((ops / took) + " " + (count / took) + " " + (x == 42 ? "!" : ""));
    }
}

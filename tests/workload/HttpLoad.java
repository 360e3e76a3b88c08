// Constant-rate HTTP/1.1 load client for HttpService.java: records when each request
// was written and when its response was read, for comparison with the latency the
// agent measures in the kernel. See tests/latency/README.md, "HTTP workloads".
//
// Usage: java -cp DIR HttpLoad <port> <rate-per-second> <connections> <seconds> <record-file>
// (a rate of 0: closed loop, as fast as the connections allow, for <seconds>;
// -Dload.tls=true with -Djavax.net.ssl.trustStore=...: over TLS)
//
// Opens <connections> keep-alive connections (TCP_NODELAY) to 127.0.0.1:<port> up
// front, each with its own thread and at most one request outstanding. Request i
// (GET /work?i=<i>) is due at t0 + i/rate; the scheduler hands it to an idle
// connection at that time or, if none is idle (a GC pause in the service), waits for
// the first one to become idle ("waited" in the summary) and then catches up, sending
// every overdue request at once: no coordinated omission in the schedule.
//
// <record-file>, one line per completed request, in completion order:
//   <send_epoch_nanos> <done_epoch_nanos> <local_port>
// send = right before the write(2) of the request, done = right after the last byte
// of the response body (Content-Length) was read; local_port = the client side of the
// connection. Times are System.nanoTime() (CLOCK_MONOTONIC) anchored once to
// Instant.now(): differences are exact, the epoch offset is good to ~1 us.
// Failed requests (reset, EOF, 10 s timeout) are counted, not recorded; the
// connection is then reopened for its next request.
//
// Stdout, at the end: "HttpLoad: sent=N completed=N failed=N waited=N max_ms=F".
// Exit status 0, failures or not.

import java.io.BufferedInputStream;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;

public final class HttpLoad {
    /** -Dload.tls=true: TLS, trusting the certificates of -Djavax.net.ssl.trustStore. */
    static final boolean TLS = Boolean.getBoolean("load.tls");
    static int port;
    static BufferedWriter records;
    static final AtomicLong sent = new AtomicLong();
    static final AtomicLong completed = new AtomicLong();
    static final AtomicLong failed = new AtomicLong();
    static final AtomicLong maxNs = new AtomicLong();
    static volatile boolean stopping;
    static BlockingQueue<Conn> idle;

    /** A keep-alive connection and its thread; one request at a time. */
    static final class Conn {
        final BlockingQueue<Long> job = new ArrayBlockingQueue<>(1);
        final StringBuilder sb = new StringBuilder(128);
        Socket s;
        InputStream in;
        int localPort;

        void open() throws IOException {
            InetAddress lo = InetAddress.getLoopbackAddress();
            s = TLS ? SSLSocketFactory.getDefault().createSocket(lo, port) : new Socket(lo, port);
            s.setTcpNoDelay(true);
            if (s instanceof SSLSocket tls) {
                tls.startHandshake(); // before the load, as a pool opens its connections
            }
            s.setSoTimeout(10_000);
            in = new BufferedInputStream(s.getInputStream(), 16384);
            localPort = s.getLocalPort();
        }

        void close() {
            try {
                if (s != null) {
                    s.close();
                }
            } catch (IOException ignored) {
                // already gone
            }
            s = null;
        }

        void loop() {
            while (true) {
                long i;
                try {
                    i = job.take();
                } catch (InterruptedException e) {
                    return;
                }
                byte[] req = ("GET /work?i=" + i + " HTTP/1.1\r\nHost: localhost\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII);
                try {
                    sent.incrementAndGet();
                    if (s == null) {
                        open();
                    }
                    long send = wallNs();
                    s.getOutputStream().write(req);
                    in.skipNBytes(HttpService.readHead(in, sb));
                    record(send, wallNs(), localPort);
                    completed.incrementAndGet();
                } catch (IOException e) {
                    failed.incrementAndGet();
                    close();
                }
                idle.add(this);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: HttpLoad <port> <rate-per-second> <connections> <seconds> <record-file>");
            System.exit(2);
        }
        port = Integer.parseInt(args[0]);
        double rate = Double.parseDouble(args[1]);
        int n = Integer.parseInt(args[2]);
        double seconds = Double.parseDouble(args[3]);
        records = Files.newBufferedWriter(Paths.get(args[4]), StandardCharsets.US_ASCII);
        RequestWorkload.calibrateWallClock();

        idle = new ArrayBlockingQueue<>(n);
        for (int c = 0; c < n; c++) {
            Conn conn = new Conn();
            conn.open();
            Thread t = new Thread(conn::loop, "conn-" + c);
            t.setDaemon(true);
            t.start();
            idle.add(conn);
        }
        long t0 = System.nanoTime() + 20_000_000L;

        // A rate of 0: closed loop, each request sent as soon as a connection
        // is free, until <seconds> have passed (a service's throughput).
        boolean closed = rate <= 0;
        long end = t0 + (long) (seconds * 1e9);
        long total = closed ? Long.MAX_VALUE : (long) Math.floor(seconds * rate);
        long waited = 0;
        for (long i = 0; i < total && !(closed && System.nanoTime() >= end); i++) {
            long due = closed ? t0 : t0 + (long) Math.floor(i * 1e9 / rate);
            long now;
            while ((now = System.nanoTime()) < due) {
                LockSupport.parkNanos(due - now);
            }
            Conn c = idle.poll();
            if (c == null) {
                waited++;
                c = idle.take();
            }
            c.job.put(i);
        }
        // Drain: every connection idle again (a request can take at most the 10 s timeout).
        stopping = true;
        for (int c = 0; c < n; c++) {
            if (idle.poll(30, TimeUnit.SECONDS) == null) {
                System.err.println("HttpLoad: connections still busy after 30 s");
                break;
            }
        }
        synchronized (records) {
            records.close();
        }
        System.out.printf("HttpLoad: sent=%d completed=%d failed=%d waited=%d max_ms=%.3f%n",
                sent.get(), completed.get(), failed.get(), waited, maxNs.get() / 1e6);
        System.out.flush();
        System.exit(0);
    }

    static void record(long send, long done, int localPort) throws IOException {
        maxNs.accumulateAndGet(done - send, Math::max);
        synchronized (records) {
            records.write(send + " " + done + " " + localPort + "\n");
        }
    }

    /** The wall clock now in epoch nanoseconds, from RequestWorkload's calibration. */
    static long wallNs() {
        return RequestWorkload.wallBaseUs * 1000L + (System.nanoTime() - RequestWorkload.nanoBase);
    }
}

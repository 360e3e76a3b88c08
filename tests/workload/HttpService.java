// HTTP/1.1 service with GC pauses of 100 ms and more, for the test that compares the
// request latency the agent measures in the kernel (eBPF) with what HttpLoad.java
// recorded. See tests/latency/README.md, "HTTP workloads".
//
// Usage: java -XX:+UseParallelGC -Xmx256m [-Xlog:gc...] -cp DIR HttpService
//            selector|blocking|tls|sink <port-file> <access-log> [<outgoing-port>]
//   selector  com.sun.net.httpserver.HttpServer, 4 executor threads; it writes the
//             head and the body of a response in TWO write(2) calls (TCP_NODELAY)
//   blocking  ServerSocket, a thread per connection, keep-alive, TCP_NODELAY, each
//             response in ONE write(2)
//   tls       the selector shape over TLS (com.sun.net.httpserver.HttpsServer), its
//             key and certificate from the PKCS12 keystore -Dhs.keystore (password
//             "changeit")
//   sink      the blocking code answering 200 "ok" at once, no cache: the target of
//             another instance's <outgoing-port>
// Listens on 127.0.0.1:<-Dhs.port, default 0>; once listening (the cache filled) writes "<port>\n" to
// <port-file> atomically (temporary file + rename).
//
// GET /work?<query>: look-up in an on-heap LRU cache (LinkedHashMap of 32-256 byte
// values, ~60 % of the heap with their overhead: ~700k objects make full GCs slow; a
// miss inserts, half of the hits replace, so the old generation fills with garbage),
// a 32 KB temporary, ~200 us of CPU; 200 with a 64-512 byte body. Other paths: 404.
// With -Xmx256m and default generation sizes the old generation is nearly full, so
// ParallelGC runs full GCs (Ergonomics) of ~110-240 ms every 2-3 s at 500 req/s; with
// -Xmn40m only young GCs (5-40 ms) plus the System.gc() (~150 ms) that a daemon
// thread calls every hs.gcEverySec seconds (first after one interval).
// With <outgoing-port>, each /work request first makes a keep-alive GET / to
// 127.0.0.1:<outgoing-port> on its handler thread's own connection (502 if it fails).
//
// <access-log>: a JSON line per request, written when it completes:
//   {"start":"2026-12-06T09:30:01.123456Z","duration_ms":0.412,"status":200,"path":"/work"}
// start = the handler began (request head parsed); duration = until the response was
// handed to the kernel (blocking: write returned; selector: exchange closed), from
// System.nanoTime() anchored once to Instant.now(). Flushed every 100 ms and by the
// shutdown hook (SIGTERM; exit status 143).
//
// Knobs: -Dhs.live=0.4 (value bytes / max heap) -Dhs.minObj=32 -Dhs.maxObj=256
// -Dhs.update=0.5 -Dhs.garbageKB=32 -Dhs.cpuUs=200 -Dhs.threads=4 (selector)
// -Dhs.gcEverySec=15 (0 = never). Compile with the other workloads (HttpLoad.java uses
// readLine/readHead below): javac --release 17 -d OUT tests/workload/*.java

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import java.io.*;
import java.net.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.security.KeyStore;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.*;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;

public final class HttpService {
    /** Keep the JIT from removing the allocations and the CPU loop. */
    static volatile Object blackhole;
    static volatile long sink;

    static int minObj = Integer.getInteger("hs.minObj", 32);
    static int maxObj = Integer.getInteger("hs.maxObj", 256);
    static double updateProb = Double.parseDouble(System.getProperty("hs.update", "0.5"));
    static int garbageBytes = Integer.getInteger("hs.garbageKB", 32) * 1024;
    static long cpuNanos = Long.getLong("hs.cpuUs", 200L) * 1000L;
    static boolean isSink;
    static int outgoingPort = -1;
    static Cache cache;
    static int keySpace;

    static long wallBaseUs;
    static long nanoBase;
    static final DateTimeFormatter ISO =
            DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSSSSS'Z'").withZone(ZoneOffset.UTC);
    static final Object logLock = new Object();
    static BufferedWriter accessLog;
    static boolean logClosed;
    static final AtomicLong served = new AtomicLong();

    record Reply(int status, byte[] body) {}

    /** LRU cache of byte[] values; all operations synchronized on the instance. */
    static final class Cache extends LinkedHashMap<Integer, byte[]> {
        private static final long serialVersionUID = 1L;
        final int capacity;
        Cache(int capacity) { super(capacity * 4 / 3 + 16, 0.75f, true); this.capacity = capacity; }
        @Override protected boolean removeEldestEntry(Map.Entry<Integer, byte[]> e) { return size() > capacity; }
    }

    public static void main(String[] args) throws Exception {
        String shape = args.length > 0 ? args[0] : "";
        isSink = shape.equals("sink");
        if ((args.length != 3 && args.length != 4) || !(isSink || shape.equals("selector") || shape.equals("blocking") || shape.equals("tls"))) {
            System.err.println("usage: HttpService selector|blocking|tls|sink <port-file> <access-log> [<outgoing-port>]");
            System.exit(2);
        }
        Path portFile = Paths.get(args[1]);
        outgoingPort = args.length == 4 ? Integer.parseInt(args[3]) : -1;
        calibrateWallClock();
        accessLog = Files.newBufferedWriter(Paths.get(args[2]), StandardCharsets.UTF_8);
        if (!isSink) {
            // Filled before listening: the start-up GCs are over when the port file appears.
            double live = Double.parseDouble(System.getProperty("hs.live", "0.4"));
            int capacity = (int) Math.max(16, Runtime.getRuntime().maxMemory() * live / ((minObj + maxObj) / 2));
            keySpace = capacity + capacity / 4; // 20 % of the look-ups miss
            cache = new Cache(capacity);
            SplittableRandom r = new SplittableRandom(42);
            for (int k = 0; k < capacity; k++) cache.put(k, newValue(r));
        }

        InetAddress lo = InetAddress.getLoopbackAddress();
        ServerSocket listener = null;
        int port;
        if (shape.equals("selector") || shape.equals("tls")) {
            // Read once, when the server class loads: without it Nagle holds the body
            // (written after the head) until the client's delayed ACK, ~40 ms.
            System.setProperty("sun.net.httpserver.nodelay", "true");
            InetSocketAddress address = new InetSocketAddress(lo, Integer.getInteger("hs.port", 0));
            HttpServer server = shape.equals("tls") ? tlsServer(address) : HttpServer.create(address, 256);
            // HttpsServer reads a TLS connection's request on an executor thread,
            // blocking until it comes: a thread per keep-alive connection.
            server.setExecutor(shape.equals("tls") ? Executors.newCachedThreadPool()
                    : Executors.newFixedThreadPool(Integer.getInteger("hs.threads", 4)));
            server.createContext("/", HttpService::handleExchange);
            server.start(); // its dispatcher thread keeps the JVM alive
            port = server.getAddress().getPort();
        } else {
            listener = new ServerSocket(Integer.getInteger("hs.port", 0), 256, lo);
            port = listener.getLocalPort();
        }
        long gcEveryNanos = (long) (Double.parseDouble(System.getProperty("hs.gcEverySec", "15")) * 1e9);
        daemon("flush-and-gc", () -> {
            for (long nextGc = System.nanoTime() + gcEveryNanos; ; Thread.sleep(100)) {
                synchronized (logLock) {
                    if (!logClosed) accessLog.flush();
                }
                if (!isSink && gcEveryNanos > 0 && System.nanoTime() >= nextGc) {
                    System.gc();
                    nextGc += gcEveryNanos;
                }
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            synchronized (logLock) {
                logClosed = true;
                try {
                    accessLog.close();
                } catch (IOException e) {
                    e.printStackTrace();
                }
            }
            System.out.println("HttpService: stopped, served=" + served.get());
        }));

        Path tmp = portFile.resolveSibling(portFile.getFileName() + ".tmp");
        Files.writeString(tmp, port + "\n");
        Files.move(tmp, portFile, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        System.out.println("HttpService: " + shape + " listening on 127.0.0.1:" + port
                + (cache != null ? " cache=" + cache.capacity + " entries" : "")
                + (outgoingPort > 0 ? " outgoing=" + outgoingPort : ""));
        while (listener != null) {
            Socket s = listener.accept();
            daemon("conn-" + s.getPort(), () -> serveConnection(s));
        }
    }

    interface Body { void run() throws Exception; }

    static void daemon(String name, Body body) {
        Thread t = new Thread(() -> {
            try {
                body.run();
            } catch (Exception e) {
                e.printStackTrace();
            }
        }, name);
        t.setDaemon(true);
        t.start();
    }

    // ------------------------------------------------------------------ requests

    /** selector shape: HttpServer has parsed the head when this runs. */
    static void handleExchange(HttpExchange ex) throws IOException {
        long start = System.nanoTime();
        String path = ex.getRequestURI().getRawPath();
        Reply r;
        try {
            ex.getRequestBody().readAllBytes();
            r = reply(path, ex.getRequestURI().getRawQuery());
            ex.getResponseHeaders().set("Content-Type", "text/plain");
            ex.sendResponseHeaders(r.status, r.body.length);
            ex.getResponseBody().write(r.body);
        } finally {
            ex.close();
        }
        log(start, System.nanoTime(), r.status, path);
    }

    /** blocking and sink shapes: the keep-alive loop of one connection. */
    static void serveConnection(Socket s) {
        try (s) {
            s.setTcpNoDelay(true);
            InputStream in = new BufferedInputStream(s.getInputStream(), 8192);
            OutputStream out = s.getOutputStream();
            StringBuilder sb = new StringBuilder(256);
            while (true) {
                String requestLine = readLine(in, sb);
                if (requestLine == null) return;
                if (requestLine.isEmpty()) continue; // tolerated before a request line (RFC 9112 2.2)
                long contentLength = 0;
                boolean close = requestLine.endsWith("HTTP/1.0");
                String h;
                while (!(h = readLine(in, sb)).isEmpty()) { // NullPointerException at EOF: ends the connection
                    int c = h.indexOf(':');
                    String name = c < 0 ? h : h.substring(0, c).trim();
                    String value = c < 0 ? "" : h.substring(c + 1).trim();
                    if (name.equalsIgnoreCase("Content-Length")) contentLength = Long.parseLong(value);
                    if (name.equalsIgnoreCase("Connection")) close = value.equalsIgnoreCase("close");
                }
                in.skipNBytes(contentLength);
                long start = System.nanoTime();
                String[] parts = requestLine.split(" ");
                String target = parts.length > 1 ? parts[1] : "/";
                int q = target.indexOf('?');
                String path = q < 0 ? target : target.substring(0, q);
                Reply r = reply(path, q < 0 ? null : target.substring(q + 1));
                byte[] head = ("HTTP/1.1 " + r.status + (r.status == 200 ? " OK" : " Error")
                        + "\r\nContent-Type: text/plain\r\nContent-Length: " + r.body.length
                        + (close ? "\r\nConnection: close" : "") + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
                byte[] resp = new byte[head.length + r.body.length];
                System.arraycopy(head, 0, resp, 0, head.length);
                System.arraycopy(r.body, 0, resp, head.length, r.body.length);
                out.write(resp); // one write(2), one sendmsg in the kernel
                log(start, System.nanoTime(), r.status, path);
                if (close) return;
            }
        } catch (IOException | RuntimeException e) {
            // peer reset or closed, or a malformed request: end of this connection
        }
    }

    static Reply reply(String path, String query) {
        if (isSink) return new Reply(200, new byte[] {'o', 'k'});
        if (!path.equals("/work")) return new Reply(404, "not found\n".getBytes(StandardCharsets.US_ASCII));
        if (outgoingPort > 0) {
            try {
                Outgoing.call();
            } catch (IOException e) {
                return new Reply(502, ("outgoing: " + e + "\n").getBytes(StandardCharsets.UTF_8));
            }
        }
        return new Reply(200, work(query));
    }

    /** Cache look-up (insert on a miss, sometimes replace), 32 KB of garbage, ~200 us of CPU. */
    static byte[] work(String query) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        int h = query == null ? rnd.nextInt() : query.hashCode() * 0x9E3779B9;
        int key = Math.floorMod(h, keySpace);
        byte[] v;
        synchronized (cache) { v = cache.get(key); }
        if (v == null || rnd.nextDouble() < updateProb) {
            v = newValue(new SplittableRandom(h));
            synchronized (cache) { cache.put(key, v); }
        }
        byte[] tmp = new byte[garbageBytes];
        System.arraycopy(v, 0, tmp, 0, Math.min(v.length, tmp.length));
        long begin = System.nanoTime();
        long acc = h;
        int p = 0;
        do {
            for (int k = 0; k < 512; k++) {
                acc = 31 * acc + tmp[p];
                p = (p + 97) % tmp.length;
                tmp[p] ^= (byte) acc;
            }
        } while (System.nanoTime() - begin < cpuNanos);
        sink = acc;
        blackhole = tmp;
        byte[] body = new byte[64 + Math.floorMod(h >>> 7, 449)];
        for (int i = 0; i < body.length - 1; i++) body[i] = (byte) ('a' + (tmp[i] & 15));
        body[body.length - 1] = '\n';
        return body;
    }

    static byte[] newValue(SplittableRandom r) {
        byte[] b = new byte[minObj >= maxObj ? minObj : r.nextInt(minObj, maxObj + 1)];
        b[0] = (byte) b.length;
        return b;
    }

    /** The handler thread's keep-alive connection to 127.0.0.1:<outgoing-port>. */
    static final class Outgoing {
        static final ThreadLocal<Outgoing> CONN = ThreadLocal.withInitial(Outgoing::new);
        static final byte[] REQUEST = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
        final StringBuilder sb = new StringBuilder(128);
        Socket s;
        InputStream in;

        static void call() throws IOException {
            Outgoing o = CONN.get();
            for (int attempt = 0; ; attempt++) {
                try {
                    if (o.s == null) {
                        o.s = new Socket(InetAddress.getLoopbackAddress(), outgoingPort);
                        o.s.setTcpNoDelay(true);
                        o.s.setSoTimeout(10_000);
                        o.in = new BufferedInputStream(o.s.getInputStream(), 4096);
                    }
                    o.s.getOutputStream().write(REQUEST);
                    o.in.skipNBytes(readHead(o.in, o.sb));
                    return;
                } catch (IOException e) {
                    if (o.s != null) o.s.close();
                    o.s = null;
                    if (attempt > 0) throw e; // else retry: the sink may have closed an idle connection
                }
            }
        }
    }

    // ------------------------------------------------------------------ HTTP parsing (also HttpLoad)

    /** One CRLF- (or LF-) terminated line without its terminator; null at EOF before any byte. */
    static String readLine(InputStream in, StringBuilder sb) throws IOException {
        sb.setLength(0);
        for (int c; (c = in.read()) != '\n'; ) {
            if (c < 0) {
                if (sb.length() == 0) return null;
                throw new EOFException("EOF inside a line");
            }
            if (c != '\r') sb.append((char) c);
        }
        return sb.toString();
    }

    /** Reads a response's status line and headers; returns its Content-Length (0 if absent). */
    static long readHead(InputStream in, StringBuilder sb) throws IOException {
        long length = 0;
        String h = readLine(in, sb); // status line
        while (h != null && !(h = readLine(in, sb)).isEmpty()) {
            if (h.regionMatches(true, 0, "Content-Length:", 0, 15)) length = Long.parseLong(h.substring(15).trim());
        }
        if (h == null) throw new EOFException("connection closed in or before the response head");
        return length;
    }

    // ------------------------------------------------------------------ access log

    /** Monotonic wall clock: nanoTime anchored once (the anchor is good to ~1 us). */
    /** An HTTPS server whose key and certificate are those of -Dhs.keystore. */
    static HttpsServer tlsServer(InetSocketAddress address) throws Exception {
        char[] password = "changeit".toCharArray();
        KeyStore keys = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(Paths.get(System.getProperty("hs.keystore")))) {
            keys.load(in, password);
        }
        KeyManagerFactory managers = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        managers.init(keys, password);
        SSLContext tls = SSLContext.getInstance("TLS");
        tls.init(managers.getKeyManagers(), null, null);
        HttpsServer server = HttpsServer.create(address, 256);
        server.setHttpsConfigurator(new HttpsConfigurator(tls));
        return server;
    }

    static void calibrateWallClock() {
        nanoBase = System.nanoTime();
        Instant w = Instant.now();
        wallBaseUs = w.getEpochSecond() * 1_000_000L + w.getNano() / 1000;
    }

    static void log(long startNanos, long doneNanos, int status, String path) {
        long startUs = wallBaseUs + Math.floorDiv(startNanos - nanoBase, 1000L);
        long durUs = (doneNanos - startNanos) / 1000L;
        String line = "{\"start\":\"" + ISO.format(Instant.ofEpochSecond(0, startUs * 1000L))
                + "\",\"duration_ms\":" + String.format("%d.%03d", durUs / 1000, durUs % 1000)
                + ",\"status\":" + status + ",\"path\":" + MxBeanSnapshot.str(path) + "}\n";
        synchronized (logLock) {
            if (logClosed) return;
            try {
                accessLog.write(line);
            } catch (IOException e) {
                e.printStackTrace();
            }
        }
        served.incrementAndGet();
    }
}

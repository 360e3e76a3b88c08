// A process that listens on many TCP ports of 127.0.0.1 and does nothing else:
// the hostile user of the test that the agent's bounded map of listening ports
// keeps room for every other JVM (tests/solo/kernel_latency.rs).
//
// Usage: java -cp DIR ManyListeners <count> <ready-file>
// Opens <count> listening sockets on ephemeral ports, then writes "<count>\n" to
// <ready-file> and sleeps until killed.

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

public class ManyListeners {
    public static void main(String[] args) throws Exception {
        int count = Integer.parseInt(args[0]);
        InetAddress lo = InetAddress.getLoopbackAddress();
        List<ServerSocket> open = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            open.add(new ServerSocket(0, 1, lo));
        }
        Files.writeString(Path.of(args[1]), count + "\n");
        Thread.sleep(Long.MAX_VALUE);
    }
}

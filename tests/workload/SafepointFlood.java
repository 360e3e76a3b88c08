// A JVM that stops the world as fast as it can, the way any user's own
// JVM can: every Thread.getAllStackTraces() is a safepoint (a thread dump
// VM operation), tens of thousands a second on two cores.
//
// Usage: java -cp DIR SafepointFlood <seconds>
// Prints how many safepoints it asked for on stdout when done.
public final class SafepointFlood {
    public static void main(String[] args) {
        long deadline = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
        long dumps = 0;
        while (System.nanoTime() < deadline) {
            Thread.getAllStackTraces();
            dumps++;
        }
        System.out.println(dumps);
    }
}

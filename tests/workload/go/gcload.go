// gcload: a Go program whose GC the tests watch through GODEBUG=gctrace=1.
//
//	gcload alloc SECONDS       allocates garbage over a live set, with a
//	                           runtime.GC() every second (forced cycles)
//	gcload serve ADDR ACCESS   serves GET / on ADDR, each request allocating,
//	                           and appends one JSON line per request to ACCESS;
//	                           GET /quit ends it. A goroutine spins without
//	                           preemption points now and then: run with
//	                           GODEBUG=asyncpreemptoff=1, a collection must
//	                           wait for it, so its stop-the-world pause (and
//	                           the requests in flight) last milliseconds.
//
// Both print, as their last act, the runtime's own accounting as one JSON
// object on stdout: NumGC, NumForcedGC, PauseTotalNs, and the end and
// duration of every pause still in the runtime's ring (the last 256) — the
// truth the tests compare pausewatch's reading of the gctrace lines with;
// and GCCPUFraction with the wall time and GOMAXPROCS.
// No collection starts after the figures are read (SetGCPercent(-1) also
// waits for one under way), so the trace holds exactly NumGC lines.
package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"time"
)

type pause struct {
	EndNs int64  `json:"end_unix_ns"`
	Ns    uint64 `json:"ns"`
}

type truth struct {
	NumGC        uint32  `json:"num_gc"`
	NumForcedGC  uint32  `json:"num_forced_gc"`
	PauseTotalNs uint64  `json:"pause_total_ns"`
	Pauses       []pause `json:"pauses"`
	// The runtime's own share of the available CPU used by the collector
	// since the program started, with the wall time and GOMAXPROCS that
	// turn it into CPU seconds.
	GCCPUFraction float64 `json:"gc_cpu_fraction"`
	WallSeconds   float64 `json:"wall_s"`
	GOMAXPROCS    int     `json:"gomaxprocs"`
}

var started = time.Now()

func report() {
	debug.SetGCPercent(-1)
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	t := truth{NumGC: m.NumGC, NumForcedGC: m.NumForcedGC, PauseTotalNs: m.PauseTotalNs,
		GCCPUFraction: m.GCCPUFraction, WallSeconds: time.Since(started).Seconds(),
		GOMAXPROCS: runtime.GOMAXPROCS(0)}
	kept := m.NumGC
	if kept > 256 {
		kept = 256
	}
	for i := m.NumGC - kept; i < m.NumGC; i++ {
		t.Pauses = append(t.Pauses, pause{int64(m.PauseEnd[i%256]), m.PauseNs[i%256]})
	}
	out, _ := json.Marshal(t)
	fmt.Println(string(out))
}

var sink [][]byte

// churn allocates n small objects, keeping a window of them live.
func churn(n int, live int) {
	for i := 0; i < n; i++ {
		b := make([]byte, 1024+i%4096)
		if len(sink) < live {
			sink = append(sink, b)
		} else {
			sink[i%live] = b
		}
	}
}

func alloc(seconds int) {
	end := time.Now().Add(time.Duration(seconds) * time.Second)
	nextForced := time.Now().Add(time.Second)
	for time.Now().Before(end) {
		churn(20000, 4000)
		if time.Now().After(nextForced) {
			runtime.GC()
			// runtime.GC returns before its cycle has printed its trace
			// line, and the runtime prints " (forced)" from a flag that a
			// heap-triggered cycle started meanwhile resets: NumForcedGC
			// would count a cycle the trace does not mark (a CI run had 2
			// against 1). ReadMemStats stops the world, which the ending
			// cycle holds until it has printed.
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			nextForced = time.Now().Add(time.Second)
		}
	}
}

var spinSink uint64

// spin loops for about d without a function call: with asynchronous
// preemption off, nothing can stop it before it returns.
func spin(iterations uint64) {
	x := spinSink
	for i := uint64(0); i < iterations; i++ {
		x = x*6364136223846793005 + i
	}
	spinSink = x
}

func serve(addr, accessPath string) {
	access, err := os.OpenFile(accessPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		panic(err)
	}
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(7 * time.Millisecond):
				spin(20_000_000)
			}
		}
	}()
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		mu.Lock()
		churn(2000, 20000)
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		w.Write([]byte("ok\n"))
		elapsed := time.Since(start)
		line := fmt.Sprintf("{\"start\":\"%s\",\"duration_ms\":%s}\n",
			start.UTC().Format(time.RFC3339Nano),
			strconv.FormatFloat(float64(elapsed.Nanoseconds())/1e6, 'f', 3, 64))
		mu.Lock()
		access.WriteString(line)
		mu.Unlock()
	})
	server := &http.Server{Addr: addr}
	http.HandleFunc("/quit", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("bye\n"))
		go func() { close(done); server.Close() }()
	})
	if err := server.ListenAndServe(); err != http.ErrServerClosed {
		panic(err)
	}
	access.Close()
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: gcload alloc SECONDS | gcload serve ADDR ACCESS_LOG")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "alloc":
		seconds, err := strconv.Atoi(os.Args[2])
		if err != nil {
			panic(err)
		}
		alloc(seconds)
	case "serve":
		serve(os.Args[2], os.Args[3])
	default:
		os.Exit(2)
	}
	report()
}

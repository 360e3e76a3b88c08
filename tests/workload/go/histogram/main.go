// A service's request-latency histogram served by Prometheus' own Go client
// (client_golang), for tests/it/agent_histogram.rs. Before each scrape of
// /metrics it observes, through the client's Histogram, the latencies given
// on the command line (seconds, comma-separated), so every scrape adds the
// same known requests. It prints its port, then serves until killed.
//
//	histogram 0.04,0.04,0.3
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: histogram SECONDS,SECONDS,...")
		os.Exit(2)
	}
	var latencies []float64
	for _, field := range strings.Split(os.Args[1], ",") {
		seconds, err := strconv.ParseFloat(field, 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		latencies = append(latencies, seconds)
	}
	requests := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "http_server_requests_seconds",
		Help:    "Request latency.",
		Buckets: prometheus.DefBuckets,
	}, []string{"method", "uri", "status"})
	registry := prometheus.NewRegistry()
	registry.MustRegister(requests)
	price := requests.WithLabelValues("GET", "/price", "200")
	// Another route, which the agent's matcher must leave out.
	other := requests.WithLabelValues("GET", "/health", "200")
	metrics := promhttp.HandlerFor(registry, promhttp.HandlerOpts{})
	http.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		for _, seconds := range latencies {
			price.Observe(seconds)
			other.Observe(9)
		}
		metrics.ServeHTTP(w, r)
	})
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(listener.Addr().(*net.TCPAddr).Port)
	if err := http.Serve(listener, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Command orders is a small event-driven system that is not Elves: what tier 4 judges with a
// SystemUnderTest (tests/e2e/test_foreign_system.py, docs/own-system.md). One binary, two roles:
//
//	orders api     POST /orders answers 202 once RabbitMQ has confirmed the order as a
//	               persistent message on the queue orders.in (publisher confirms), carrying
//	               the request's X-Test-Id header and a fresh order id;
//	orders worker  consumes orders.in with manual acks, INSERTs each order into PostgreSQL
//	               (id primary key, ON CONFLICT DO NOTHING) and acks only after the insert
//	               has committed.
//
// So a worker killed at any moment loses nothing (its unacked messages go back to the queue
// and are delivered again) and stores nothing twice (a redelivered order that was already
// inserted conflicts on its id). Both roles serve /metrics (Prometheus' text format, written
// by hand: three series do not need a client library) and /healthz; the worker's
// orders_stored{test_id} is read from the database at each scrape, so the persisted count
// survives the worker that stored it.
//
// Settings come from the environment: AMQP_URL, DATABASE_URL (worker), QUEUE (orders.in),
// LISTEN (:8080), PREFETCH (worker, 20), STORE_DELAY (worker, 0s: a Go duration each order
// takes before its insert, so that a test can make a worker slower than its load and a backlog
// build). SIGTERM stops either role gracefully.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TestIDHeader carries the test id from the HTTP request into the message and so into the row.
const TestIDHeader = "X-Test-Id"

type settings struct {
	amqpURL     string
	databaseURL string
	queue       string
	listen      string
	prefetch    int
	storeDelay  time.Duration
}

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func readSettings() (settings, error) {
	s := settings{
		amqpURL:     os.Getenv("AMQP_URL"),
		databaseURL: os.Getenv("DATABASE_URL"),
		queue:       env("QUEUE", "orders.in"),
		listen:      env("LISTEN", ":8080"),
	}
	prefetch, err := strconv.Atoi(env("PREFETCH", "20"))
	if err != nil || prefetch < 1 {
		return s, fmt.Errorf("PREFETCH must be a positive integer, not %q", os.Getenv("PREFETCH"))
	}
	s.prefetch = prefetch
	storeDelay, err := time.ParseDuration(env("STORE_DELAY", "0s"))
	if err != nil || storeDelay < 0 {
		return s, fmt.Errorf("STORE_DELAY must be a duration of 0 or more (e.g. 100ms), not %q", os.Getenv("STORE_DELAY"))
	}
	s.storeDelay = storeDelay
	if s.amqpURL == "" {
		return s, errors.New("AMQP_URL is not set")
	}
	return s, nil
}

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds | log.LUTC)
	if len(os.Args) != 2 || (os.Args[1] != "api" && os.Args[1] != "worker") {
		fmt.Fprintln(os.Stderr, "usage: orders api|worker")
		os.Exit(2)
	}
	s, err := readSettings()
	if err != nil {
		log.Fatal(err)
	}
	// SIGTERM (the kubelet stopping the pod) cancels ctx: each role then finishes what it
	// holds and closes its connections in order.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if os.Args[1] == "api" {
		err = runAPI(ctx, s)
	} else {
		err = runWorker(ctx, s)
	}
	if err != nil {
		log.Fatalf("%s: %v", os.Args[1], err)
	}
	log.Printf("%s: stopped", os.Args[1])
}

// retry calls connect until it succeeds or ctx ends: the broker and the database may start
// after this process (a pod's containers start in any order).
func retry[T any](ctx context.Context, what string, connect func(context.Context) (T, error)) (T, error) {
	delay := 500 * time.Millisecond
	for {
		v, err := connect(ctx)
		if err == nil {
			return v, nil
		}
		log.Printf("%s not reachable yet: %v", what, err)
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// serve runs the HTTP server until ctx ends, then lets the requests in flight finish.
func serve(ctx context.Context, listen string, mux *http.ServeMux) error {
	server := &http.Server{Addr: listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	failed := make(chan error, 1)
	go func() { failed <- server.ListenAndServe() }()
	log.Printf("listening on %s", listen)
	select {
	case err := <-failed:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return server.Shutdown(shutdown)
}

// openQueue connects to RabbitMQ (waiting for it), prepares a channel with setup (publisher
// confirms for the api, a prefetch for the worker) and declares the durable queue on it. Both
// roles declare it, whichever starts first: the default exchange drops what it cannot route,
// and confirms it all the same, so the api must never publish before the queue exists.
func openQueue(ctx context.Context, s settings, setup func(*amqp.Channel) error) (*amqp.Connection, *amqp.Channel, error) {
	conn, err := retry(ctx, "RabbitMQ", func(context.Context) (*amqp.Connection, error) { return amqp.Dial(s.amqpURL) })
	if err != nil {
		return nil, nil, err
	}
	channel, err := conn.Channel()
	if err == nil {
		err = setup(channel)
	}
	if err == nil {
		_, err = channel.QueueDeclare(s.queue, true, false, false, false, nil)
	}
	if err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("a channel on %s: %w", s.queue, err)
	}
	return conn, channel, nil
}

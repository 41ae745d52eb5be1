package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// confirmTimeout bounds how long a request waits for RabbitMQ's confirm before answering 503.
const confirmTimeout = 10 * time.Second

// api is the HTTP role: it accepts an order only once RabbitMQ holds it.
type api struct {
	queue string
	// Serialises the publishes on the one channel (each takes the next delivery tag), not the
	// waits for their confirms, which overlap.
	publishing sync.Mutex
	channel    *amqp.Channel
	accepted   *counters
	failed     *counters
}

func runAPI(ctx context.Context, s settings) error {
	// Publisher confirms: RabbitMQ acks a persistent message to a durable queue once it has
	// written it, which is what the 202 promises.
	conn, channel, err := openQueue(ctx, s, func(channel *amqp.Channel) error { return channel.Confirm(false) })
	if err != nil {
		return err
	}
	defer conn.Close()
	a := &api{
		queue:    s.queue,
		channel:  channel,
		accepted: newCounters("orders_accepted_total", "Orders answered 202: confirmed by RabbitMQ.", "test_id"),
		failed:   newCounters("orders_failed_total", "Orders answered 503: not confirmed by RabbitMQ.", "test_id"),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", a.placeOrder)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.Handle("GET /metrics", metricsHandler(func(w io.Writer) error {
		a.accepted.write(w)
		a.failed.write(w)
		return nil
	}))
	return serveWhileConnected(ctx, conn, s.listen, mux)
}

// serveWhileConnected serves HTTP until ctx ends or RabbitMQ closes the connection. The
// process lives as long as its connection: when the broker goes, it exits with an error and
// Kubernetes starts it again, instead of reconnecting in code that would need tests of its own.
func serveWhileConnected(ctx context.Context, conn *amqp.Connection, listen string, mux *http.ServeMux) error {
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	serving, cancel := context.WithCancel(ctx)
	defer cancel()
	lost := make(chan error, 1)
	go func() {
		select {
		case err := <-closed:
			lost <- fmt.Errorf("RabbitMQ closed the connection: %v", err)
			cancel()
		case <-serving.Done():
		}
	}()
	err := serve(serving, listen, mux)
	select {
	case err := <-lost:
		return err
	default:
		return err
	}
}

func (a *api) placeOrder(w http.ResponseWriter, r *http.Request) {
	testID := r.Header.Get(TestIDHeader)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
	if err != nil || !json.Valid(body) {
		http.Error(w, "the body must be a JSON order of at most 64 KiB", http.StatusBadRequest)
		return
	}
	id, err := newOrderID()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), confirmTimeout)
	defer cancel()
	if err := a.publish(ctx, id, testID, body); err != nil {
		a.failed.inc(testID)
		log.Printf("order %s (test %q) not accepted: %v", id, testID, err)
		http.Error(w, "order not accepted: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	a.accepted.inc(testID)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = fmt.Fprintf(w, "{\"id\": %q}\n", id)
}

// publish sends the order as a persistent message and waits for RabbitMQ's confirm.
func (a *api) publish(ctx context.Context, id, testID string, body []byte) error {
	message := amqp.Publishing{
		ContentType:  "application/json",
		DeliveryMode: amqp.Persistent,
		MessageId:    id, // the worker's primary key: a redelivery cannot store the order twice
		Timestamp:    time.Now(),
		Headers:      amqp.Table{TestIDHeader: testID},
		Body:         body,
	}
	a.publishing.Lock()
	confirm, err := a.channel.PublishWithDeferredConfirmWithContext(ctx, "", a.queue, false, false, message)
	a.publishing.Unlock()
	if err != nil {
		return err
	}
	acked, err := confirm.WaitContext(ctx)
	if err != nil {
		return err
	}
	if !acked {
		return errors.New("RabbitMQ nacked the message")
	}
	return nil
}

// newOrderID is a random 128-bit id, unique without asking anyone.
func newOrderID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

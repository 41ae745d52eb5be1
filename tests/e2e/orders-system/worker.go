package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"
)

const schema = `
CREATE TABLE IF NOT EXISTS orders (
    id        text PRIMARY KEY,
    test_id   text NOT NULL,
    body      text NOT NULL,
    stored_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS orders_test_id ON orders (test_id);`

// The insert is its own transaction: when Exec returns without error, the row is committed.
const insertOrder = `INSERT INTO orders (id, test_id, body) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING`

// worker is the consuming role: each order is acked only after its row is committed.
type worker struct {
	pool        *pgxpool.Pool
	storeDelay  time.Duration // each order's work before its insert (STORE_DELAY)
	consuming   atomic.Bool
	stored      *counters
	redelivered *counters
	rejected    *counters
}

func runWorker(ctx context.Context, s settings) error {
	if s.databaseURL == "" {
		return errors.New("DATABASE_URL is not set")
	}
	pool, err := retry(ctx, "PostgreSQL", func(ctx context.Context) (*pgxpool.Pool, error) {
		pool, err := pgxpool.New(ctx, s.databaseURL)
		if err == nil {
			if err = pool.Ping(ctx); err != nil {
				pool.Close()
			}
		}
		return pool, err
	})
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, schema); err != nil {
		return fmt.Errorf("creating the orders table: %w", err)
	}
	// At most PREFETCH unacked orders in this process: what goes back to the queue if it dies.
	conn, channel, err := openQueue(ctx, s, func(channel *amqp.Channel) error { return channel.Qos(s.prefetch, 0, false) })
	if err != nil {
		return err
	}
	defer conn.Close()
	const consumer = "orders-worker"
	deliveries, err := channel.Consume(s.queue, consumer, false, false, false, false, nil)
	if err != nil {
		return fmt.Errorf("consuming %s: %w", s.queue, err)
	}
	w := &worker{
		pool:        pool,
		storeDelay:  s.storeDelay,
		stored:      newCounters("orders_worker_stored_total", "Orders this process inserted and acked.", "test_id"),
		redelivered: newCounters("orders_worker_redelivered_total", "Redelivered orders this process acked (inserted before or not).", "test_id"),
		rejected:    newCounters("orders_worker_rejected_total", "Messages without an order id, dropped.", "test_id"),
	}
	w.consuming.Store(true)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, r *http.Request) {
		if !w.consuming.Load() {
			http.Error(rw, "not consuming", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(rw, "ok\n")
	})
	mux.Handle("GET /metrics", metricsHandler(w.writeMetrics))
	// The listener outlives the consumer a little: it is stopped (and waited for) last but for
	// the connections, so a scrape during shutdown still reads the database's count.
	serving, stopServing := context.WithCancel(context.Background())
	served, listenerDone := make(chan error, 1), make(chan struct{})
	go func() { served <- serve(serving, s.listen, mux); close(listenerDone) }()
	defer func() { stopServing(); <-listenerDone }()

	for {
		select {
		case <-ctx.Done():
			// Stop the deliveries, then leave: the orders prefetched but not stored are still
			// unacked, and go back to the queue when the channel closes.
			w.consuming.Store(false)
			_ = channel.Cancel(consumer, false)
			return nil
		case err := <-served:
			return fmt.Errorf("the metrics listener stopped: %w", err)
		case delivery, open := <-deliveries:
			if !open {
				return errors.New("RabbitMQ closed the channel")
			}
			w.store(delivery)
		}
	}
}

// store inserts one order and acks it once committed. It runs to the end even after SIGTERM
// (its own deadline, not the process's context): an order is either stored and acked, or
// left unacked for another worker.
func (w *worker) store(d amqp.Delivery) {
	testID, _ := d.Headers[TestIDHeader].(string)
	if d.MessageId == "" {
		// Without an id the insert could not be made idempotent: drop it, say so.
		log.Printf("message without an order id (test %q) dropped", testID)
		w.rejected.inc(testID)
		_ = d.Reject(false)
		return
	}
	time.Sleep(w.storeDelay) // the order's work; it ends even after SIGTERM, as the insert does
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := w.pool.Exec(ctx, insertOrder, d.MessageId, testID, string(d.Body)); err != nil {
		log.Printf("order %s not stored, back to the queue: %v", d.MessageId, err)
		_ = d.Nack(false, true)
		time.Sleep(time.Second) // the database is in trouble: do not spin on the redelivery
		return
	}
	if err := d.Ack(false); err != nil {
		// The row is committed; the message will be delivered again and conflict on its id.
		log.Printf("order %s stored, but its ack failed: %v", d.MessageId, err)
		return
	}
	w.stored.inc(testID)
	if d.Redelivered {
		w.redelivered.inc(testID)
	}
}

// writeMetrics counts the stored orders per test id in the database itself: the count does
// not die with the worker that stored them, and every replica reports the same number
// (the SystemUnderTest's ledger takes their max).
func (w *worker) writeMetrics(out io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	rows, err := w.pool.Query(ctx, `SELECT test_id, count(*) FROM orders GROUP BY test_id`)
	if err != nil {
		return err
	}
	defer rows.Close()
	counts := map[string]float64{}
	for rows.Next() {
		var testID string
		var n int64
		if err := rows.Scan(&testID, &n); err != nil {
			return err
		}
		counts[testID] = float64(n)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	writeFamily(out, "orders_stored", "Orders stored in PostgreSQL per test id, counted in the database at each scrape.",
		"gauge", "test_id", counts)
	w.stored.write(out)
	w.redelivered.write(out)
	w.rejected.write(out)
	return nil
}

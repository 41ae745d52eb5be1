package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// counters is a labelled counter family in Prometheus' text exposition format: what the two
// roles export beside the database's count needs no client library.
type counters struct {
	name, help, label string
	mu                sync.Mutex
	values            map[string]float64
}

func newCounters(name, help, label string) *counters {
	return &counters{name: name, help: help, label: label, values: map[string]float64{}}
}

func (c *counters) inc(labelValue string) {
	c.mu.Lock()
	c.values[labelValue]++
	c.mu.Unlock()
}

func (c *counters) write(w io.Writer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	writeFamily(w, c.name, c.help, "counter", c.label, c.values)
}

// writeFamily writes one metric family, its series sorted by label value.
func writeFamily(w io.Writer, name, help, kind, label string, values map[string]float64) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, kind)
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "%s{%s=\"%s\"} %s\n", name, label, escapeLabel(k), strconv.FormatFloat(values[k], 'f', -1, 64))
	}
}

// escapeLabel escapes a label value as the text format requires (backslash, quote, newline).
func escapeLabel(v string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v)
}

// metricsHandler serves what write writes, or a 500 when it fails: a failed scrape leaves the
// count absent for that scrape (the ledger waits for the next one) instead of reading 0.
func metricsHandler(write func(io.Writer) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body bytes.Buffer
		if err := write(&body); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(body.Bytes())
	}
}

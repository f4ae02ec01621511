package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The server's ring counters the client scrapes at the window's edges:
// CQEs over enters is reported as cqes_per_enter, SQEs and CQEs over the
// window's messages as server_sqes_per_msg and server_cqes_per_msg (zero
// when the server's readers waited in Go's netpoller, not on its rings).
const (
	metricSQEs   = "uringrt_sqes_submitted_total"
	metricCQEs   = "uringrt_cqes_reaped_total"
	metricEnters = "uringrt_enter_calls_total"
)

// scrape fetches url and returns the sum over labels of each wanted metric.
func scrape(ctx context.Context, url string, wanted ...string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return sumMetrics(resp.Body, wanted...)
}

// sumMetrics parses the Prometheus text format (name{labels} value
// [timestamp]) and sums the samples of each wanted metric over its labels.
func sumMetrics(r io.Reader, wanted ...string) (map[string]float64, error) {
	sums := make(map[string]float64, len(wanted))
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := splitName(line)
		found := false
		for _, w := range wanted {
			found = found || name == w
		}
		if !found {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return nil, fmt.Errorf("metric %s: no value in %q", name, line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metric %s: %v", name, err)
		}
		sums[name] += v
	}
	return sums, sc.Err()
}

// splitName splits a sample line into its metric name and what follows the
// labels (value and optional timestamp). Label values may hold any
// character, including '}' and escaped quotes.
func splitName(line string) (name, rest string) {
	i := strings.IndexAny(line, "{ \t")
	if i < 0 {
		return line, ""
	}
	name = line[:i]
	if line[i] != '{' {
		return name, line[i:]
	}
	inQuote := false
	for j := i + 1; j < len(line); j++ {
		switch c := line[j]; {
		case inQuote && c == '\\':
			j++
		case c == '"':
			inQuote = !inQuote
		case !inQuote && c == '}':
			return name, line[j+1:]
		}
	}
	return name, ""
}

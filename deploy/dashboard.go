package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// MetricPrefix is the namespace of every metric the uringrt runtime exports.
const MetricPrefix = "uringrt_"

// histogramSuffixes are the series suffixes Prometheus adds to a histogram
// (or summary) family. uringrt names no family with one of these endings, so
// stripping them always yields the family name.
var histogramSuffixes = []string{"_bucket", "_sum", "_count"}

var (
	identRE = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	// stringRE matches PromQL string literals: "..." and '...' with
	// backslash escapes, and `...` raw strings.
	stringRE = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
)

// DashboardMetricNames reads the Grafana dashboard JSON at path and returns
// the sorted, de-duplicated uringrt metric family names that its queries use:
// every panel target's "expr" (at any depth, so rows and library panels
// count) and every templating variable's query. Histogram series names
// (name_bucket, name_sum, name_count) are reported as the family name.
//
// Names are found by tokenizing each expression, after removing string
// literals (label values), into identifiers matching
// ^[a-zA-Z_:][a-zA-Z0-9_:]*$ and keeping those that start with "uringrt_".
// Grafana variables such as $__rate_interval or ${datasource} never do.
func DashboardMetricNames(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("deploy: dashboard %s: %w", path, err)
	}
	exprs := DashboardExprs(doc)
	if len(exprs) == 0 {
		return nil, fmt.Errorf("deploy: dashboard %s has no query expressions", path)
	}
	seen := make(map[string]bool)
	for _, e := range exprs {
		for _, name := range ExprMetricNames(e) {
			seen[name] = true
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// DashboardExprs returns the PromQL expressions of a decoded dashboard: the
// value of every "expr" key anywhere in it, and the query of every
// templating variable of type "query".
func DashboardExprs(doc any) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				if s, ok := c.(string); ok && k == "expr" {
					out = append(out, s)
					continue
				}
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(doc)

	root, _ := doc.(map[string]any)
	templating, _ := root["templating"].(map[string]any)
	list, _ := templating["list"].([]any)
	for _, item := range list {
		v, _ := item.(map[string]any)
		if v["type"] != "query" {
			continue
		}
		switch q := v["query"].(type) {
		case string:
			out = append(out, q)
		case map[string]any:
			if s, ok := q["query"].(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// ExprMetricNames returns the uringrt metric family names used in one
// PromQL expression, in order of first use, histogram suffixes stripped.
func ExprMetricNames(expr string) []string {
	expr = stringRE.ReplaceAllString(expr, `""`)
	var out []string
	seen := make(map[string]bool)
	for _, tok := range identRE.FindAllString(expr, -1) {
		if !strings.HasPrefix(tok, MetricPrefix) {
			continue
		}
		for _, suf := range histogramSuffixes {
			if base, ok := strings.CutSuffix(tok, suf); ok {
				tok = base
				break
			}
		}
		if !seen[tok] {
			seen[tok] = true
			out = append(out, tok)
		}
	}
	return out
}

// Command report turns the benchmark's JSON lines into a markdown table and
// a PNG chart.
//
// Each input line is one run: {"server", "config", "round", ...the fields of
// echo-client -json...}, or {"server", "config", "round", "failed": "why"}
// for a run that did not happen. For every config and server the table shows
// the median msgs/s with its min..max, the median p50 and p99 latency, the
// median server CPU per message and context switches per 1000 messages, and
// the ratios of msgs/s and CPU per message to the "std" server's medians.
//
//	report [-png out.png] [-baseline std] [results.jsonl ...]
//
// With no file it reads standard input.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	png := flag.String("png", "", "write a chart of msgs/s and CPU/msg to this `file`")
	baseline := flag.String("baseline", "std", "server the ratios are relative to")
	flag.Parse()
	runs, err := readAll(flag.Args())
	if err != nil {
		fmt.Fprintf(os.Stderr, "report: %v\n", err)
		os.Exit(1)
	}
	groups := aggregate(runs)
	w := bufio.NewWriter(os.Stdout)
	writeTable(w, groups, *baseline)
	if err := w.Flush(); err != nil {
		fmt.Fprintf(os.Stderr, "report: %v\n", err)
		os.Exit(1)
	}
	if *png != "" {
		if err := writeChart(*png, groups); err != nil {
			fmt.Fprintf(os.Stderr, "report: chart: %v\n", err)
			os.Exit(1)
		}
	}
}

// readAll reads the runs of every named file, or of stdin if none.
func readAll(names []string) ([]run, error) {
	if len(names) == 0 {
		return readRuns(os.Stdin, "stdin")
	}
	var all []run
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		runs, err := readRuns(f, name)
		f.Close()
		if err != nil {
			return nil, err
		}
		all = append(all, runs...)
	}
	return all, nil
}

// readRuns parses JSON lines; blank lines are skipped.
func readRuns(r io.Reader, name string) ([]run, error) {
	var runs []run
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(trimSpace(b)) == 0 {
			continue
		}
		rn, err := parseRun(b)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, line, err)
		}
		runs = append(runs, rn)
	}
	return runs, sc.Err()
}

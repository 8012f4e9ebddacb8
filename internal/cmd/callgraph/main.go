// Command callgraph measures the calls between the files of a tree of C
// and assembly (package callgraph): by default the runtime's,
// runtime/src. It prints how many files there are, the calls,
// references and includes between them, and the circles of files that
// reach each other. Given a layer map (-layers, e.g. runtime/layers.txt)
// it prints each call running up from a lower layer to a higher one, and
// the circles between layers; with -check it exits 1 when there is any.
//
//	go run ./internal/cmd/callgraph -layers runtime/layers.txt -check
//
// It exits 2 on a tree or a layer map it cannot read.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"ftpatch/internal/callgraph"
)

func main() {
	failed, err := run(os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "callgraph:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// errUsage: the command line is wrong (flag has said why).
var errUsage = errors.New("usage: callgraph [-layers FILE [-check]] [-files] [DIR]")

// run measures the tree the arguments name and reports it to stdout;
// failed: -check found a call running up or a circle between layers.
func run(args []string, stdout, stderr io.Writer) (failed bool, err error) {
	fl := flag.NewFlagSet("callgraph", flag.ContinueOnError)
	fl.SetOutput(stderr)
	layersFile := fl.String("layers", "", "the layer `map`: a line per layer, lowest first (package callgraph's Layers)")
	check := fl.Bool("check", false, "print only the calls running up and the circles between layers, and exit 1 if there is any")
	files := fl.Bool("files", false, "also list each file's definitions and its calls into other files")
	if err := fl.Parse(args); err != nil {
		return false, errUsage
	}
	dir := "runtime/src"
	switch fl.NArg() {
	case 0:
	case 1:
		dir = fl.Arg(0)
	default:
		return false, errUsage
	}
	if *check && *layersFile == "" {
		return false, fmt.Errorf("-check needs -layers")
	}
	if st, err := os.Stat(dir); err != nil {
		return false, err
	} else if !st.IsDir() {
		return false, fmt.Errorf("%s: not a directory", dir)
	}
	g, err := callgraph.Build(os.DirFS(dir))
	if err != nil {
		return false, fmt.Errorf("%s: %w", dir, err)
	}
	var layers *callgraph.Layers
	if *layersFile != "" {
		f, err := os.Open(*layersFile)
		if err != nil {
			return false, err
		}
		defer f.Close()
		if layers, err = callgraph.ParseLayers(f, *layersFile); err != nil {
			return false, err
		}
	}
	m, err := g.Measure(layers)
	if err != nil {
		return false, err
	}
	if *check {
		for _, e := range m.Up {
			fmt.Fprintf(stdout, "running up: %s\n", callgraph.EdgeString(e))
		}
		for _, c := range m.LayerCircles {
			fmt.Fprintf(stdout, "circle between layers: %v\n", c)
		}
		if m.Failed() {
			fmt.Fprintf(stdout, "%d running up (%d calls, %d references, %d includes), %d circles between layers\n",
				len(m.Up), m.UpCount(callgraph.CallEdge), m.UpCount(callgraph.RefEdge), m.UpCount(callgraph.IncludeEdge), len(m.LayerCircles))
		}
		return m.Failed(), nil
	}
	if err := callgraph.WriteReport(stdout, m); err != nil {
		return false, err
	}
	if *files {
		fmt.Fprintln(stdout)
		if err := callgraph.WriteFiles(stdout, g); err != nil {
			return false, err
		}
	}
	return false, nil
}

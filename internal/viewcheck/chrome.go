package viewcheck

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// contextTid is how the Chrome view numbers a context's thread: context
// × 2^22 + the thread's tid.
const contextTid = 1 << 22

// Chrome reads a Chrome trace-event JSON trace: one object with
// traceEvents, displayTimeUnit and otherData, complete events ("X") with
// ts and dur, or instant events ("i", thread-scoped), on threads that
// metadata events name ("thread T", "thread T context N"), in processes
// named by process_name. Each call's depth comes from how the events of
// its thread nest, which must be consistent: every event within the one
// it starts in. A time off the CPU ("sched" complete events, ChromeStates)
// must nest among the calls too, but is no call.
func Chrome(data []byte) ([]Call, error) {
	calls, _, err := chrome(data)
	return calls, err
}

// ChromeStates reads the times off the CPU of a Chrome trace-event JSON
// trace, as Chrome does its calls: complete events of the category
// "sched" named "sleeping" or "pre-empted", with no args, nested among
// the calls of their thread.
func ChromeStates(data []byte) ([]State, error) {
	_, states, err := chrome(data)
	return states, err
}

// chrome reads a Chrome trace's calls and times off the CPU.
func chrome(data []byte) ([]Call, []State, error) {
	var doc struct {
		TraceEvents     []map[string]json.RawMessage
		DisplayTimeUnit string
		OtherData       map[string]any
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, fmt.Errorf("not one JSON object of a trace: %w", err)
	}
	if dec.More() {
		return nil, nil, errors.New("more than one JSON value")
	}
	if doc.DisplayTimeUnit != "ns" || doc.OtherData["exporter"] != "ftpatch" {
		return nil, nil, fmt.Errorf("displayTimeUnit %q, otherData %v", doc.DisplayTimeUnit, doc.OtherData)
	}
	type thread struct{ pid, tid int }
	named := map[thread]string{}
	processes := map[int]bool{}
	byThread := map[thread][]*Call{}
	var calls []*Call
	offs := map[*Call]bool{} // the times off the CPU among them
	for i, raw := range doc.TraceEvents {
		var ev struct {
			Name, Cat, Ph, S string
			Ts, Dur          json.Number
			Pid, Tid         *int
			Args             map[string]any
		}
		for k := range raw {
			if !slices.Contains([]string{"name", "cat", "ph", "s", "ts", "dur", "pid", "tid", "args"}, k) {
				return nil, nil, fmt.Errorf("event %d: field %q", i, k)
			}
		}
		b, _ := json.Marshal(raw)
		if err := json.Unmarshal(b, &ev); err != nil {
			return nil, nil, fmt.Errorf("event %d: %w", i, err)
		}
		if ev.Pid == nil || ev.Tid == nil || ev.Name == "" {
			return nil, nil, fmt.Errorf("event %d: no pid, tid or name: %s", i, b)
		}
		th := thread{*ev.Pid, *ev.Tid}
		switch ev.Ph {
		case "M":
			switch ev.Name {
			case "process_name":
				processes[th.pid] = true
			case "thread_name":
				named[th], _ = ev.Args["name"].(string)
			case "thread_sort_index":
			case "process_labels": // a session's process: "parent PID"
				if l, _ := ev.Args["labels"].(string); !processes[th.pid] || !strings.HasPrefix(l, "parent ") {
					return nil, nil, fmt.Errorf("event %d: process %d labelled %q", i, th.pid, l)
				}
			default:
				return nil, nil, fmt.Errorf("event %d: metadata %q", i, ev.Name)
			}
			continue
		case "X", "i":
		default:
			return nil, nil, fmt.Errorf("event %d: phase %q", i, ev.Ph)
		}
		if !processes[th.pid] || named[th] == "" {
			return nil, nil, fmt.Errorf("event %d: on thread %d/%d, not named before", i, th.pid, th.tid)
		}
		c := &Call{Pid: th.pid, Tid: th.tid % contextTid, Context: uint64(th.tid / contextTid), Func: ev.Name}
		want := fmt.Sprintf("thread %d", c.Tid)
		if c.Context != 0 {
			want += fmt.Sprintf(" context %d", c.Context)
		}
		if named[th] != want {
			return nil, nil, fmt.Errorf("event %d: thread %d named %q, want %q", i, th.tid, named[th], want)
		}
		var err error
		if c.Start, err = nanos(ev.Ts); err != nil {
			return nil, nil, fmt.Errorf("event %d: ts: %w", i, err)
		}
		switch ev.Ph {
		case "X":
			d, err := nanos(ev.Dur)
			if err != nil {
				return nil, nil, fmt.Errorf("event %d: dur: %w", i, err)
			}
			c.End = c.Start + d
		case "i":
			if ev.S != "t" || ev.Dur != "" {
				return nil, nil, fmt.Errorf("event %d: an instant event not of its thread: %s", i, b)
			}
			c.End, c.Instant = c.Start, true
		}
		for k, v := range ev.Args {
			if v != true || (k != "unwound" && k != "open") || c.Note != "" {
				return nil, nil, fmt.Errorf("event %d: args %v", i, ev.Args)
			}
			c.Note = k
		}
		if ev.Cat == "sched" {
			if ev.Ph != "X" || (ev.Name != "sleeping" && ev.Name != "pre-empted") || len(ev.Args) > 0 {
				return nil, nil, fmt.Errorf("event %d: a time off the CPU as %s", i, b)
			}
			offs[c] = true
		} else {
			calls = append(calls, c)
		}
		byThread[th] = append(byThread[th], c)
	}
	for _, cs := range byThread {
		// Callers are written after their callees: of calls starting
		// together, the longer, then the later written, is the outer.
		order := map[*Call]int{}
		for i, c := range cs {
			order[c] = i
		}
		slices.SortStableFunc(cs, func(a, b *Call) int {
			return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(b.End, a.End), cmp.Compare(order[b], order[a]))
		})
		// Times off the CPU nest among the calls as the viewers see
		// them; the calls' depths are among calls alone.
		if err := nest(cs); err != nil {
			return nil, nil, err
		}
		if len(offs) > 0 {
			if err := nest(slices.DeleteFunc(slices.Clone(cs), func(c *Call) bool { return offs[c] })); err != nil {
				return nil, nil, err
			}
		}
	}
	out := make([]Call, len(calls))
	for i, c := range calls {
		out[i] = *c
	}
	Sort(out)
	var states []State
	for c := range offs {
		states = append(states, State{Pid: c.Pid, Tid: c.Tid, Context: c.Context, State: c.Func, Start: c.Start, End: c.End})
	}
	SortStates(states)
	return out, states, nil
}

// nanos reads a time in µs with at most three decimals as ns.
func nanos(n json.Number) (int64, error) {
	s := string(n)
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > 3 || strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("%q: not µs to the ns", s)
	}
	frac += strings.Repeat("0", 3-len(frac))
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	f, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	return w*1000 + f, nil
}

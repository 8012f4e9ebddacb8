package viewcheck

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of Perfetto's protos, written out again here from
// Perfetto's .proto files (not taken from the writer), so that a wrong
// number in the writer does not read back as right.
const (
	tracePacket = 1 // Trace.packet

	packetTimestamp             = 8  // TracePacket.timestamp
	packetTimestampClockID      = 58 // TracePacket.timestamp_clock_id
	packetTrustedSequenceID     = 10 // TracePacket.trusted_packet_sequence_id
	packetTrackEvent            = 11 // TracePacket.track_event
	packetInternedData          = 12 // TracePacket.interned_data
	packetSequenceFlags         = 13 // TracePacket.sequence_flags
	packetTracePacketDefaults   = 59 // TracePacket.trace_packet_defaults
	packetTrackDescriptor       = 60 // TracePacket.track_descriptor
	packetClockSnapshot         = 6  // TracePacket.clock_snapshot
	packetFirstPacketOnSequence = 87 // TracePacket.first_packet_on_sequence
	packetProcessTree           = 2  // TracePacket.process_tree
	treeProcesses               = 1  // ProcessTree.processes
	treePid                     = 1  // ProcessTree.Process.pid
	treePpid                    = 2  // ProcessTree.Process.ppid
	treeCmdline                 = 3  // ProcessTree.Process.cmdline

	seqIncrementalStateCleared = 1 // TracePacket.SequenceFlags
	seqNeedsIncrementalState   = 2

	defaultsTimestampClockID   = 58 // TracePacketDefaults.timestamp_clock_id
	defaultsTrackEventDefaults = 11 // TracePacketDefaults.track_event_defaults
	trackEventDefaultsUUID     = 11 // TrackEventDefaults.track_uuid

	snapshotClocks     = 1 // ClockSnapshot.clocks
	clockClockID       = 1 // ClockSnapshot.Clock.clock_id
	clockTimestamp     = 2 // ClockSnapshot.Clock.timestamp
	clockIsIncremental = 3 // ClockSnapshot.Clock.is_incremental
	builtinBoottime    = 6 // BuiltinClock.BOOTTIME

	descriptorUUID       = 1 // TrackDescriptor.uuid
	descriptorName       = 2 // TrackDescriptor.name
	descriptorProcess    = 3 // TrackDescriptor.process
	descriptorThread     = 4 // TrackDescriptor.thread
	descriptorParentUUID = 5 // TrackDescriptor.parent_uuid
	processPid           = 1 // ProcessDescriptor.pid
	processName          = 6 // ProcessDescriptor.process_name
	threadPid            = 1 // ThreadDescriptor.pid
	threadTid            = 2 // ThreadDescriptor.tid
	threadName           = 5 // ThreadDescriptor.thread_name

	eventType             = 9  // TrackEvent.type
	eventNameIID          = 10 // TrackEvent.name_iid
	eventTrackUUID        = 11 // TrackEvent.track_uuid
	eventDebugAnnotations = 4  // TrackEvent.debug_annotations
	typeSliceBegin        = 1  // TrackEvent.Type
	typeSliceEnd          = 2
	typeInstant           = 3

	internedEventNames = 2  // InternedData.event_names
	eventNameIIDField  = 1  // EventName.iid
	eventNameName      = 2  // EventName.name
	annotationName     = 10 // DebugAnnotation.name
	annotationBool     = 2  // DebugAnnotation.bool_value
)

// A value is one field of a decoded message: its name and value, a
// uint64 for a number, a string for text, a message for a message.
type value struct {
	name string
	v    any
}

// A message is a decoded message: its fields in the order written.
type message []value

// decode decodes data as the message msg of schema: a field the schema
// does not give, or of another wire type, is an error.
func decode(data []byte, msg string) (message, error) {
	spec := schema[msg]
	var m message
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return nil, fmt.Errorf("%s: %w", msg, protowire.ParseError(n))
		}
		data = data[n:]
		f, ok := spec[num]
		want := protowire.BytesType
		if f.msg == "" {
			want = protowire.VarintType
		}
		if !ok || typ != want {
			return nil, fmt.Errorf("%s: field %d of wire type %d not expected", msg, num, typ)
		}
		var v any
		if typ == protowire.VarintType {
			v, n = protowire.ConsumeVarint(data)
		} else {
			var b []byte
			b, n = protowire.ConsumeBytes(data)
			v = string(b)
			if f.msg != "string" && n >= 0 {
				sub, err := decode(b, f.msg)
				if err != nil {
					return nil, fmt.Errorf("%s.%s: %w", msg, f.name, err)
				}
				v = sub
			}
		}
		if n < 0 {
			return nil, fmt.Errorf("%s.%s: %w", msg, f.name, protowire.ParseError(n))
		}
		data = data[n:]
		m = append(m, value{f.name, v})
	}
	return m, nil
}

// num is the number field name holds (its last value), and whether it
// is there.
func (m message) num(name string) (uint64, bool) {
	var v uint64
	ok := false
	for _, f := range m {
		if f.name == name {
			v, ok = f.v.(uint64), true
		}
	}
	return v, ok
}

// str is the text field name holds, or "".
func (m message) str(name string) string {
	s := ""
	for _, f := range m {
		if f.name == name {
			s = f.v.(string)
		}
	}
	return s
}

// all is every message field name holds.
func (m message) all(name string) []message {
	var out []message
	for _, f := range m {
		if f.name == name {
			out = append(out, f.v.(message))
		}
	}
	return out
}

// sub is the message field name holds, or nil.
func (m message) sub(name string) message {
	if all := m.all(name); len(all) > 0 {
		return all[len(all)-1]
	}
	return nil
}

// A track is a TrackDescriptor's.
type track struct {
	parent   uint64
	name     string
	pid, tid int
	process  bool // a process's track
	thread   bool // a thread's track
	states   bool // a thread's (or context's) states: named for it, " state"
}

// A sequence is a packet sequence's state.
type sequence struct {
	cleared bool
	clock   uint64 // the incremental clock's last value (ns)
	track   uint64 // the default track
	names   map[uint64]string
	open    map[uint64][]*Call // per track: the slices begun and not ended
	states  map[uint64]*State  // per state track: the state begun and not ended
	packets int
}

// Perfetto reads a Perfetto protobuf trace as the Perfetto view writes
// it: track descriptors for processes, threads and contexts (each
// declared before its events), and a sequence per track whose first
// packet clears its incremental state, sets its default track and an
// incremental clock, and whose other packets need that state; slices
// begin and end in nesting order, names interned on their sequence
// before their use (an iid names one name on its sequence, as Perfetto
// scopes interned data to the sequence's incremental state). Times are
// ns from the trace clock's reading in the first clock snapshot. Every
// field must be one the view writes, with its wire type. Slices on a
// thread's state track (PerfettoStates) are no calls.
func Perfetto(data []byte) ([]Call, error) {
	calls, _, err := perfetto(data)
	return calls, err
}

// PerfettoStates reads the thread states of a Perfetto trace as the
// view writes them: slices on a track below a thread's (or a context's)
// named for it and " state" ("thread 12 state"), named "running",
// "sleeping" or "runnable (pre-empted)", one after the other (none
// within another), on the sequence of the thread's calls.
func PerfettoStates(data []byte) ([]State, error) {
	_, states, err := perfetto(data)
	return states, err
}

// stateNames are the thread states' slices' names.
var stateNames = []string{"running", "sleeping", "runnable (pre-empted)"}

// perfetto reads a Perfetto trace's calls and thread states.
func perfetto(data []byte) ([]Call, []State, error) {
	trace, err := decode(data, "Trace")
	if err != nil {
		return nil, nil, err
	}
	tracks := map[uint64]*track{}
	seqs := map[uint64]*sequence{}
	var origin uint64
	haveOrigin := false
	var calls []*Call
	var states []*State
	for i, p := range trace.all("packet") {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("packet %d: %s", i, fmt.Sprintf(format, args...))
		}
		seq, _ := p.num("trusted_packet_sequence_id")
		ts, hasTS := p.num("timestamp")
		clockID, hasClock := p.num("timestamp_clock_id")
		flags, hasFlags := p.num("sequence_flags")
		if seq == 0 {
			return nil, nil, fail("no trusted_packet_sequence_id")
		}
		if p.sub("process_tree") != nil {
			continue // PerfettoProcesses reads it
		}
		if d := p.sub("track_descriptor"); d != nil {
			uuid, t, err := readDescriptor(d)
			if err != nil {
				return nil, nil, fail("track descriptor: %v", err)
			}
			if tracks[uuid] != nil || uuid == 0 {
				return nil, nil, fail("track %d declared again", uuid)
			}
			if t.parent != 0 && tracks[t.parent] == nil {
				return nil, nil, fail("track %d's parent %d not declared before it", uuid, t.parent)
			}
			if parent := tracks[t.parent]; parent != nil && t.name == parent.name+" state" {
				if _, _, _, err := placeOf(tracks, parent); err != nil {
					return nil, nil, fail("state track %q: %v", t.name, err)
				}
				t.states = true
			}
			tracks[uuid] = t
			continue
		}
		s := seqs[seq]
		if s == nil {
			s = &sequence{}
			seqs[seq] = s
		}
		s.packets++
		if flags&seqIncrementalStateCleared != 0 {
			if s.packets != 1 {
				return nil, nil, fail("sequence %d cleared again", seq)
			}
			s.cleared, s.names, s.open, s.states = true, map[uint64]string{}, map[uint64][]*Call{}, map[uint64]*State{}
			defaults, snapshot := p.sub("trace_packet_defaults"), p.sub("clock_snapshot")
			if defaults == nil || snapshot == nil || !hasTS || !hasClock || clockID != builtinBoottime {
				return nil, nil, fail("sequence %d opens without its defaults, clock snapshot and a BOOTTIME timestamp", seq)
			}
			clock, _ := defaults.num("timestamp_clock_id")
			track, _ := defaults.sub("track_event_defaults").num("track_uuid")
			if clock < 64 || clock > 127 || tracks[track] == nil {
				return nil, nil, fail("sequence %d's default clock %d (want one of its own, 64-127), track %d (declared?)", seq, clock, track)
			}
			inc, boot, err := readSnapshot(snapshot, clock)
			if err != nil {
				return nil, nil, fail("clock snapshot: %v", err)
			}
			if !haveOrigin {
				origin, haveOrigin = boot, true
			}
			if boot != origin || inc != boot || ts != boot {
				return nil, nil, fail("sequence %d's clocks start at %d, %d, %d; the trace's at %d", seq, inc, boot, ts, origin)
			}
			s.clock, s.track = inc, track
			continue
		}
		if !s.cleared || !hasFlags || flags != seqNeedsIncrementalState || hasClock || !hasTS {
			return nil, nil, fail("sequence %d: a packet without the incremental state it needs (flags %d)", seq, flags)
		}
		s.clock += ts
		for _, in := range p.all("interned_data") {
			if err := readInterned(in, s.names); err != nil {
				return nil, nil, fail("interned data: %v", err)
			}
		}
		ev := p.sub("track_event")
		if ev == nil {
			return nil, nil, fail("no track event")
		}
		typ, _ := ev.num("type")
		iid, _ := ev.num("name_iid")
		trackID, ok := ev.num("track_uuid")
		if !ok {
			trackID = s.track
		}
		note, err := readNote(ev)
		if err != nil {
			return nil, nil, fail("%v", err)
		}
		t := tracks[trackID]
		if t == nil {
			return nil, nil, fail("event on track %d, not declared", trackID)
		}
		if t.states {
			st, err := readState(s, trackID, tracks, typ, iid, note, int64(s.clock-origin))
			if err != nil {
				return nil, nil, fail("%v", err)
			}
			if st != nil {
				states = append(states, st)
			}
			continue
		}
		c := &Call{Start: int64(s.clock - origin)}
		if c.Pid, c.Tid, c.Context, err = placeOf(tracks, t); err != nil {
			return nil, nil, fail("%v", err)
		}
		switch typ {
		case typeSliceBegin, typeInstant:
			name, ok := s.names[iid]
			if !ok {
				return nil, nil, fail("name iid %d not interned on sequence %d", iid, seq)
			}
			c.Func, c.Depth = name, len(s.open[trackID])
			if typ == typeInstant {
				c.End, c.Instant = c.Start, true
			} else {
				s.open[trackID] = append(s.open[trackID], c)
			}
			calls = append(calls, c)
		case typeSliceEnd:
			st := s.open[trackID]
			if len(st) == 0 || iid != 0 {
				return nil, nil, fail("a slice end with no slice open, or a name")
			}
			b := st[len(st)-1]
			s.open[trackID] = st[:len(st)-1]
			b.End, b.Note = c.Start, note
		default:
			return nil, nil, fail("event type %d", typ)
		}
	}
	for id, s := range seqs {
		for _, st := range s.open {
			if len(st) > 0 {
				return nil, nil, fmt.Errorf("sequence %d: %d slices never end", id, len(st))
			}
		}
		for _, st := range s.states {
			return nil, nil, fmt.Errorf("sequence %d: state %v never ends", id, *st)
		}
	}
	out := make([]Call, 0, len(calls))
	for _, c := range calls {
		out = append(out, *c)
	}
	Sort(out)
	var outStates []State
	for _, st := range states {
		outStates = append(outStates, *st)
	}
	SortStates(outStates)
	return out, outStates, nil
}

// readState reads an event of a state track, at ns: a slice's begin
// (returned, its end to come), or its end; a state begins only once the
// one before it has ended.
func readState(s *sequence, trackID uint64, tracks map[uint64]*track, typ, iid uint64, note string, ns int64) (*State, error) {
	open := s.states[trackID]
	switch {
	case note != "":
		return nil, fmt.Errorf("a thread state annotated %s", note)
	case typ == typeSliceBegin:
		name := s.names[iid]
		if !slices.Contains(stateNames, name) {
			return nil, fmt.Errorf("a thread state named %q", name)
		}
		if open != nil {
			return nil, fmt.Errorf("state %q begins within %v", name, *open)
		}
		st := &State{State: name, Start: ns}
		st.Pid, st.Tid, st.Context, _ = placeOf(tracks, tracks[tracks[trackID].parent])
		s.states[trackID] = st
		return st, nil
	case typ == typeSliceEnd:
		if open == nil || iid != 0 {
			return nil, errors.New("a thread state's end with no state begun, or a name")
		}
		open.End = ns
		delete(s.states, trackID)
		return nil, nil
	}
	return nil, fmt.Errorf("a thread state's event of type %d", typ)
}

// placeOf is the thread (and context) a track's events happen on: a
// thread track's, or for a context's track ("context N" below a thread's
// track) that thread's and N.
func placeOf(tracks map[uint64]*track, t *track) (pid, tid int, ctx uint64, err error) {
	if t.thread {
		return t.pid, t.tid, 0, nil
	}
	n, ok := strings.CutPrefix(t.name, "context ")
	parent := tracks[t.parent]
	if !ok || parent == nil || !parent.thread {
		return 0, 0, 0, fmt.Errorf("events on track %q, not a thread's nor a context's below one", t.name)
	}
	if ctx, err = strconv.ParseUint(n, 10, 64); err != nil || ctx == 0 {
		return 0, 0, 0, fmt.Errorf("track %q: not a context", t.name)
	}
	return parent.pid, parent.tid, ctx, nil
}

// readDescriptor reads a TrackDescriptor: a process's, a thread's
// ("thread T") or a context's (named, below a thread's).
func readDescriptor(d message) (uint64, *track, error) {
	uuid, _ := d.num("uuid")
	t := &track{name: d.str("name")}
	t.parent, _ = d.num("parent_uuid")
	if p := d.sub("process"); p != nil {
		pid, _ := p.num("pid")
		t.process, t.pid = true, int(int32(pid))
	}
	if th := d.sub("thread"); th != nil {
		pid, _ := th.num("pid")
		tid, _ := th.num("tid")
		t.thread, t.pid, t.tid, t.name = true, int(int32(pid)), int(int32(tid)), th.str("thread_name")
		if t.name != fmt.Sprintf("thread %d", t.tid) {
			return 0, nil, fmt.Errorf("thread %d named %q", t.tid, t.name)
		}
	}
	return uuid, t, nil
}

// readSnapshot returns the readings of the incremental clock (which must
// be declared incremental) and of BOOTTIME.
func readSnapshot(snap message, incClock uint64) (inc, boot uint64, err error) {
	seen := 0
	for _, c := range snap.all("clocks") {
		id, _ := c.num("clock_id")
		ts, _ := c.num("timestamp")
		incremental, _ := c.num("is_incremental")
		switch {
		case id == incClock && incremental == 1:
			inc = ts
			seen |= 1
		case id == builtinBoottime && incremental == 0:
			boot = ts
			seen |= 2
		default:
			return 0, 0, fmt.Errorf("clock %d (incremental %d)", id, incremental)
		}
	}
	if seen != 3 {
		return 0, 0, errors.New("want the incremental clock and BOOTTIME")
	}
	return inc, boot, nil
}

// readInterned adds the event names interned to names (the sequence's).
func readInterned(in message, names map[uint64]string) error {
	for _, n := range in.all("event_names") {
		iid, _ := n.num("iid")
		name := n.str("name")
		if iid == 0 {
			return errors.New("iid 0")
		}
		if _, ok := names[iid]; ok {
			return fmt.Errorf("iid %d interned twice on its sequence", iid)
		}
		names[iid] = name
	}
	return nil
}

// readNote is what an event's debug annotation says of its call:
// unwound=true or open=true, or nothing.
func readNote(ev message) (string, error) {
	note := ""
	for _, a := range ev.all("debug_annotations") {
		name := a.str("name")
		v, _ := a.num("bool_value")
		if (name != "unwound" && name != "open") || v != 1 || note != "" {
			return "", fmt.Errorf("debug annotation %s=%d", name, v)
		}
		note = name
	}
	return note, nil
}

// A fieldSpec names a field of a message, and the message type of an
// embedded message ("" for a scalar, "string" for text).
type fieldSpec struct{ name, msg string }

// schema is the messages the Perfetto view writes, by name: each field's
// name and type, for Dump.
var schema = map[string]map[protowire.Number]fieldSpec{
	"Trace": {tracePacket: {"packet", "TracePacket"}},
	"TracePacket": {
		packetTimestamp: {"timestamp", ""}, packetTimestampClockID: {"timestamp_clock_id", ""},
		packetTrustedSequenceID: {"trusted_packet_sequence_id", ""}, packetTrackEvent: {"track_event", "TrackEvent"},
		packetInternedData: {"interned_data", "InternedData"}, packetSequenceFlags: {"sequence_flags", ""},
		packetTracePacketDefaults: {"trace_packet_defaults", "TracePacketDefaults"},
		packetTrackDescriptor:     {"track_descriptor", "TrackDescriptor"}, packetClockSnapshot: {"clock_snapshot", "ClockSnapshot"},
		packetFirstPacketOnSequence: {"first_packet_on_sequence", ""}, packetProcessTree: {"process_tree", "ProcessTree"},
	},
	"ProcessTree":         {treeProcesses: {"processes", "Process"}},
	"Process":             {treePid: {"pid", ""}, treePpid: {"ppid", ""}, treeCmdline: {"cmdline", "string"}},
	"TracePacketDefaults": {defaultsTimestampClockID: {"timestamp_clock_id", ""}, defaultsTrackEventDefaults: {"track_event_defaults", "TrackEventDefaults"}},
	"TrackEventDefaults":  {trackEventDefaultsUUID: {"track_uuid", ""}},
	"ClockSnapshot":       {snapshotClocks: {"clocks", "Clock"}},
	"Clock":               {clockClockID: {"clock_id", ""}, clockTimestamp: {"timestamp", ""}, clockIsIncremental: {"is_incremental", ""}},
	"TrackDescriptor": {descriptorUUID: {"uuid", ""}, descriptorName: {"name", "string"}, descriptorProcess: {"process", "ProcessDescriptor"},
		descriptorThread: {"thread", "ThreadDescriptor"}, descriptorParentUUID: {"parent_uuid", ""}},
	"ProcessDescriptor": {processPid: {"pid", ""}, processName: {"process_name", "string"}},
	"ThreadDescriptor":  {threadPid: {"pid", ""}, threadTid: {"tid", ""}, threadName: {"thread_name", "string"}},
	"TrackEvent": {eventType: {"type", ""}, eventNameIID: {"name_iid", ""}, eventTrackUUID: {"track_uuid", ""},
		eventDebugAnnotations: {"debug_annotations", "DebugAnnotation"}},
	"InternedData":    {internedEventNames: {"event_names", "EventName"}},
	"EventName":       {eventNameIIDField: {"iid", ""}, eventNameName: {"name", "string"}},
	"DebugAnnotation": {annotationName: {"name", "string"}, annotationBool: {"bool_value", ""}},
}

// A Process is one process of a Perfetto trace: its name (its process
// track's), its parent and command line (the ProcessTree's).
type Process struct {
	Name    string
	Ppid    int
	Cmdline []string
}

// PerfettoProcesses reads the processes of a Perfetto trace the view
// wrote: each process track's pid and name, and where the trace has a
// ProcessTree (a session's), each process's parent and command line;
// a process in the tree with no track, or two tracks of one pid, is an
// error.
func PerfettoProcesses(data []byte) (map[int]*Process, error) {
	trace, err := decode(data, "Trace")
	if err != nil {
		return nil, err
	}
	out := map[int]*Process{}
	var tree []message
	for _, p := range trace.all("packet") {
		tree = append(tree, p.all("process_tree")...)
		d := p.sub("track_descriptor")
		if d == nil || d.sub("process") == nil {
			continue
		}
		pd := d.sub("process")
		pid, _ := pd.num("pid")
		if out[int(int32(pid))] != nil {
			return nil, fmt.Errorf("process %d has two tracks", int32(pid))
		}
		out[int(int32(pid))] = &Process{Name: pd.str("process_name")}
	}
	for _, t := range tree {
		for _, pr := range t.all("processes") {
			pid, _ := pr.num("pid")
			ppid, _ := pr.num("ppid")
			p := out[int(int32(pid))]
			if p == nil {
				return nil, fmt.Errorf("the process tree's %d has no track", int32(pid))
			}
			p.Ppid = int(int32(ppid))
			for _, f := range pr {
				if f.name == "cmdline" {
					p.Cmdline = append(p.Cmdline, f.v.(string))
				}
			}
		}
	}
	return out, nil
}

// Dump writes a Perfetto trace as text, in protobuf's text format
// (Perfetto's own tests write traces so): every field by its name, a
// message's fields indented in braces. A field the schema does not know
// is an error.
func Dump(data []byte) (string, error) {
	m, err := decode(data, "Trace")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	dump(&b, m, "")
	return b.String(), nil
}

func dump(b *strings.Builder, m message, indent string) {
	for _, f := range m {
		switch v := f.v.(type) {
		case uint64:
			fmt.Fprintf(b, "%s%s: %d\n", indent, f.name, v)
		case string:
			fmt.Fprintf(b, "%s%s: %s\n", indent, f.name, strconv.Quote(v))
		case message:
			fmt.Fprintf(b, "%s%s {\n", indent, f.name)
			dump(b, v, indent+"  ")
			fmt.Fprintf(b, "%s}\n", indent)
		}
	}
}

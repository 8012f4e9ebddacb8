package views

import (
	"bufio"
	"bytes"
	"io"
	"maps"
	"slices"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"

	"ftpatch/ordered"
	"ftpatch/trace"
)

// Field numbers and values of Perfetto's trace protos, as Perfetto
// defines them (protos/perfetto/trace/...): the messages and fields this
// writer uses, nothing else.
const (
	// trace.proto: Trace
	pbTracePacket = 1 // repeated TracePacket packet

	// trace_packet.proto: TracePacket; process_tree.proto: ProcessTree,
	// ProcessTree.Process
	pbPacketProcessTree  = 2  // ProcessTree process_tree
	pbTreeProcesses      = 1  // ProcessTree: repeated Process processes
	pbTreePid            = 1  // Process: int32 pid
	pbTreePpid           = 2  // Process: int32 ppid
	pbTreeCmdline        = 3  // Process: repeated string cmdline
	pbPacketClocks       = 6  // ClockSnapshot clock_snapshot
	pbPacketTimestamp    = 8  // uint64 timestamp
	pbPacketSequenceID   = 10 // uint32 trusted_packet_sequence_id
	pbPacketTrackEvent   = 11 // TrackEvent track_event
	pbPacketInterned     = 12 // InternedData interned_data
	pbPacketSeqFlags     = 13 // uint32 sequence_flags
	pbPacketClockID      = 58 // uint32 timestamp_clock_id
	pbPacketDefaults     = 59 // TracePacketDefaults trace_packet_defaults
	pbPacketDescriptor   = 60 // TrackDescriptor track_descriptor
	pbFirstOnSequence    = 87 // bool first_packet_on_sequence
	pbSeqCleared         = 1  // SequenceFlags SEQ_INCREMENTAL_STATE_CLEARED
	pbSeqNeedsIncrements = 2  // SequenceFlags SEQ_NEEDS_INCREMENTAL_STATE

	// trace_packet_defaults.proto: TracePacketDefaults, and
	// track_event.proto: TrackEventDefaults
	pbDefaultsTrackEvent = 11 // TrackEventDefaults track_event_defaults
	pbDefaultsClockID    = 58 // uint32 timestamp_clock_id
	pbTrackDefaultsUUID  = 11 // TrackEventDefaults: uint64 track_uuid

	// clock_snapshot.proto: ClockSnapshot, ClockSnapshot.Clock; and
	// builtin_clock.proto
	pbSnapshotClocks     = 1  // repeated Clock clocks
	pbClockID            = 1  // Clock: uint32 clock_id
	pbClockTimestamp     = 2  // Clock: uint64 timestamp
	pbClockIsIncremental = 3  // Clock: bool is_incremental
	pbClockBoottime      = 6  // BuiltinClock BOOTTIME: the trace's default clock
	pbClockIncremental   = 64 // a clock of this writer's: 64-127 are a sequence's own

	// track_event/track_descriptor.proto: TrackDescriptor;
	// process_descriptor.proto: ProcessDescriptor;
	// thread_descriptor.proto: ThreadDescriptor
	pbDescUUID    = 1 // uint64 uuid
	pbDescName    = 2 // string name
	pbDescProcess = 3 // ProcessDescriptor process
	pbDescThread  = 4 // ThreadDescriptor thread
	pbDescParent  = 5 // uint64 parent_uuid
	pbProcessPid  = 1 // ProcessDescriptor: int32 pid
	pbProcessName = 6 // ProcessDescriptor: string process_name
	pbThreadPid   = 1 // ThreadDescriptor: int32 pid
	pbThreadTid   = 2 // ThreadDescriptor: int32 tid
	pbThreadName  = 5 // ThreadDescriptor: string thread_name

	// track_event/track_event.proto: TrackEvent, EventName;
	// debug_annotation.proto: DebugAnnotation
	pbEventAnnotations = 4  // repeated DebugAnnotation debug_annotations
	pbEventType        = 9  // Type type
	pbEventNameIID     = 10 // uint64 name_iid
	pbEventTrackUUID   = 11 // uint64 track_uuid: the event's track, not the sequence's default
	pbSliceBegin       = 1  // Type TYPE_SLICE_BEGIN
	pbSliceEnd         = 2  // Type TYPE_SLICE_END
	pbInstant          = 3  // Type TYPE_INSTANT
	pbNameIID          = 1  // EventName: uint64 iid
	pbNameName         = 2  // EventName: string name
	pbAnnotationBool   = 2  // DebugAnnotation: bool bool_value
	pbAnnotationName   = 10 // DebugAnnotation: string name

	// interned_data/interned_data.proto: InternedData
	pbInternedNames = 2 // repeated EventName event_names

	// pbDescriptorSequence is this writer's sequence for the track
	// descriptors; each thread's events have one of their own after it.
	pbDescriptorSequence = 1
)

// Perfetto writes the trace in Perfetto's own format (a Trace of
// TracePackets, protobuf), which the Perfetto UI (https://ui.perfetto.dev)
// and trace_processor open: several times smaller than Chrome's JSON of
// the same trace, and read faster.
//
// Each process has a process track (named for the program) and each
// thread a thread track below it ("thread 123"); a makecontext context's
// calls have a track of their own below their thread's ("context 2").
// Each thread's events are a packet sequence of their own
// (trusted_packet_sequence_id), on which a call is a TYPE_SLICE_BEGIN
// and a TYPE_SLICE_END TrackEvent (a function trace's a TYPE_INSTANT),
// its function's name interned (InternedData.event_names, given on each
// sequence before its first use) and its timestamp a delta from the
// sequence's previous one (a sequence-scoped incremental clock, set by
// the ClockSnapshot that opens the sequence, with the track as the
// sequence's default): a call costs some 25 bytes. The first packet of
// each sequence clears its incremental state, and every later one says
// it needs it. Timestamps are ns of CLOCK_MONOTONIC, given as the trace
// clock (BOOTTIME), starting at the trace's start. A slice whose call was
// left without returning has the debug annotation unwound=true, one
// still running at the end of the trace open=true.
//
// A trace with scheduler events gives each thread track (and each
// context's) a track below it, "thread 123 state" ("context 2 state"),
// whose slices say what the thread was doing, from its first event to
// its last: "running", "sleeping" (it blocked) or "runnable
// (pre-empted)", as Perfetto's own thread states do; its events go on
// the thread's sequence (track_uuid), among its calls'. A context's
// track shows its times off the CPU alone, not "running": a context runs
// only when its thread switches to it.
func Perfetto(w io.Writer, in Input) error {
	m := in.Meta
	bw := bufio.NewWriterSize(w, 64<<10)
	// The tracks are described here, as the threads are taken in order;
	// each thread's sequence is written on a core of its own, after its
	// tracks' descriptors, in the threads' order (ordered.Write).
	var desc bytes.Buffer
	d := perfettoWriter{w: bufio.NewWriter(&desc)}
	type part struct {
		th          Thread
		descriptors []byte // the packets describing its tracks not described before
		seq, track  uint64
		states      uint64 // the track of its thread states; 0: none
	}
	sched := schedRecorded(in) && graphed(in.Meta) // a function trace's calls come without their times off the CPU
	processes := map[int]uint64{}                  // pid: its track
	threads := map[[2]int]uint64{}
	stateTracks := map[[2]int]uint64{} // a thread's states' track
	seq := uint64(pbDescriptorSequence)
	parts := func(yield func(part) bool) {
		for th := range in.Threads {
			proc, ok := processes[th.Pid]
			if !ok {
				proc = d.newUUID()
				processes[th.Pid] = proc
				var pd []byte
				pd = appendVarint(pd, pbProcessPid, uint64(int32(th.Pid)))
				pd = protowire.AppendTag(pd, pbProcessName, protowire.BytesType)
				pd = protowire.AppendString(pd, processName(in, th.Pid))
				var td []byte
				td = appendVarint(td, pbDescUUID, proc)
				td = appendMessage(td, pbDescProcess, pd)
				d.descriptor(td)
			}
			key := [2]int{th.Pid, th.Tid}
			thread, ok := threads[key]
			if !ok {
				thread = d.newUUID()
				threads[key] = thread
				var dd []byte
				dd = appendVarint(dd, pbThreadPid, uint64(int32(th.Pid)))
				dd = appendVarint(dd, pbThreadTid, uint64(int32(th.Tid)))
				dd = protowire.AppendTag(dd, pbThreadName, protowire.BytesType)
				dd = protowire.AppendString(dd, threadName(Thread{Tid: th.Tid}))
				var td []byte
				td = appendVarint(td, pbDescUUID, thread)
				td = appendVarint(td, pbDescParent, proc)
				td = appendMessage(td, pbDescThread, dd)
				d.descriptor(td)
			}
			track, name := thread, threadName(Thread{Tid: th.Tid})
			if th.Context != 0 {
				track, name = d.newUUID(), "context "+itoa(th.Context)
				d.named(track, thread, name)
			}
			var states uint64
			if sched && th.Context == 0 {
				// One a thread, were its calls in several streams.
				if states = stateTracks[key]; states == 0 {
					states = d.newUUID()
					stateTracks[key] = states
					d.named(states, track, name+" state")
				}
			} else if sched {
				states = d.newUUID()
				d.named(states, track, name+" state")
			}
			d.w.Flush()
			seq++
			p := part{th: th, descriptors: bytes.Clone(desc.Bytes()), seq: seq, track: track, states: states}
			desc.Reset()
			if !yield(p) {
				return
			}
		}
	}
	if len(in.Procs) > 0 {
		// A session's processes, each with its parent and command line
		// (ProcessTree), on the descriptors' sequence.
		var tree []byte
		for _, pid := range slices.Sorted(maps.Keys(in.Procs)) {
			pm := in.Procs[pid]
			var pr []byte
			pr = appendVarint(pr, pbTreePid, uint64(int32(pid)))
			pr = appendVarint(pr, pbTreePpid, uint64(int32(pm.Ppid)))
			for _, a := range pm.Cmdline {
				pr = protowire.AppendTag(pr, pbTreeCmdline, protowire.BytesType)
				pr = protowire.AppendString(pr, a)
			}
			tree = appendMessage(tree, pbTreeProcesses, pr)
		}
		pw := perfettoWriter{w: bw}
		b := appendVarint(nil, pbPacketSequenceID, pbDescriptorSequence)
		pw.write(appendMessage(b, pbPacketProcessTree, tree))
	}
	err := ordered.Write(bw, parts, workers(in), func(pt part, out *bufio.Writer) error {
		out.Write(pt.descriptors)
		// The thread's sequence: its clock and default track, then its
		// events, its names interned on it.
		p := perfettoWriter{w: out, iids: map[string]uint64{}}
		p.open(pt.seq, pt.track, m.MonoStart)
		if pt.states == 0 {
			return spans(pt.th, p.w,
				func(fn string, ns float64) { p.event(0, pbSliceBegin, fn, ns, "") },
				func(_ string, _, ns float64, note string) { p.event(0, pbSliceEnd, "", ns, note) },
				func(fn string, ns float64) { p.event(0, pbInstant, fn, ns, "") },
				nil)
		}
		s := threadStates{p: &p, track: pt.states, running: pt.th.Context == 0}
		err := spans(pt.th, p.w,
			func(fn string, ns float64) { s.at(ns); p.event(0, pbSliceBegin, fn, ns, "") },
			func(_ string, _, ns float64, note string) {
				if note != "open" { // the thread's last event, not one of its own
					s.at(ns)
				}
				p.event(0, pbSliceEnd, "", ns, note)
			},
			func(fn string, ns float64) { s.at(ns); p.event(0, pbInstant, fn, ns, "") },
			s.off)
		s.end()
		return err
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

// threadStates writes a thread's states on its track: "running" from
// its first event, but for each time off the CPU ("sleeping",
// "runnable (pre-empted)"), to its last; without running, the times off
// the CPU alone.
type threadStates struct {
	p       *perfettoWriter
	track   uint64
	running bool    // write "running" slices
	started bool    // an event was seen
	resume  bool    // a time off the CPU ended at last: running resumes with the next event
	open    bool    // a "running" slice is open
	last    float64 // ns of the last event seen
}

// offNames are the states' slices' names for each reason off the CPU.
var offNames = map[trace.OffReason]string{trace.Sleeping: "sleeping", trace.Preempted: "runnable (pre-empted)"}

// at notes an event of the thread at ns: the thread was running then.
func (s *threadStates) at(ns float64) {
	if s.running && !s.open && (!s.started || s.resume) {
		from := ns
		if s.resume {
			from = s.last
		}
		s.p.event(s.track, pbSliceBegin, "running", from, "")
		s.open = true
	}
	s.started, s.resume, s.last = true, false, ns
}

// off writes a time off the CPU, from start to end.
func (s *threadStates) off(why trace.OffReason, start, end float64) {
	if s.open {
		s.p.event(s.track, pbSliceEnd, "", start, "")
		s.open = false
	}
	name := offNames[why]
	if name == "" {
		name = why.String()
	}
	s.p.event(s.track, pbSliceBegin, name, start, "")
	s.p.event(s.track, pbSliceEnd, "", end, "")
	s.started, s.resume, s.last = true, true, end
}

// end ends the running slice at the thread's last event.
func (s *threadStates) end() {
	if s.open {
		s.p.event(s.track, pbSliceEnd, "", s.last, "")
		s.open = false
	}
}

// A perfettoWriter writes TracePackets.
type perfettoWriter struct {
	w      *bufio.Writer
	uuids  uint64            // track uuids given out
	iids   map[string]uint64 // event names' interning ids, one per name of the sequence
	seq    uint64            // the sequence being written
	sent   []bool            // by interning id: given on this sequence
	base   uint64            // the trace's start (ns), where each sequence's clock starts
	last   uint64            // this sequence's last timestamp (ns)
	packet []byte            // the packet being made
	inner  []byte            // the message being made inside it
	hdr    []byte            // the packet's field header
}

// newUUID gives a new track its uuid.
func (p *perfettoWriter) newUUID() uint64 {
	p.uuids++
	return p.uuids
}

// write writes a packet as the Trace's next.
func (p *perfettoWriter) write(packet []byte) {
	h := protowire.AppendTag(p.hdr[:0], pbTracePacket, protowire.BytesType)
	p.hdr = protowire.AppendVarint(h, uint64(len(packet)))
	p.w.Write(p.hdr)
	p.w.Write(packet)
}

// descriptor writes a TrackDescriptor, on the descriptors' sequence.
func (p *perfettoWriter) descriptor(td []byte) {
	b := appendVarint(p.packet[:0], pbPacketSequenceID, pbDescriptorSequence)
	b = appendMessage(b, pbPacketDescriptor, td)
	p.packet = b
	p.write(b)
}

// named writes the descriptor of a track named name below parent.
func (p *perfettoWriter) named(track, parent uint64, name string) {
	var td []byte
	td = appendVarint(td, pbDescUUID, track)
	td = appendVarint(td, pbDescParent, parent)
	td = protowire.AppendTag(td, pbDescName, protowire.BytesType)
	td = protowire.AppendString(td, name)
	p.descriptor(td)
}

// open begins the sequence seq, whose events are on track, with its
// incremental clock at base (ns).
func (p *perfettoWriter) open(seq, track, base uint64) {
	p.seq, p.base, p.last = seq, base, base
	clear(p.sent)
	b := appendVarint(p.packet[:0], pbPacketTimestamp, base)
	b = appendVarint(b, pbPacketClockID, pbClockBoottime)
	b = appendVarint(b, pbPacketSequenceID, seq)
	b = appendVarint(b, pbPacketSeqFlags, pbSeqCleared)
	b = appendVarint(b, pbFirstOnSequence, 1)

	var td, d []byte
	td = appendVarint(td, pbTrackDefaultsUUID, track)
	d = appendVarint(d, pbDefaultsClockID, pbClockIncremental)
	d = appendMessage(d, pbDefaultsTrackEvent, td)
	b = appendMessage(b, pbPacketDefaults, d)

	var inc, boot, snap []byte
	inc = appendVarint(inc, pbClockID, pbClockIncremental)
	inc = appendVarint(inc, pbClockTimestamp, base)
	inc = appendVarint(inc, pbClockIsIncremental, 1)
	boot = appendVarint(boot, pbClockID, pbClockBoottime)
	boot = appendVarint(boot, pbClockTimestamp, base)
	snap = appendMessage(snap, pbSnapshotClocks, inc)
	snap = appendMessage(snap, pbSnapshotClocks, boot)
	b = appendMessage(b, pbPacketClocks, snap)
	p.packet = b
	p.write(b)
}

// event writes a TrackEvent of type typ at ns since the trace's start,
// on track (0: the sequence's default); name, when not empty, is its
// name (interned on this sequence first), and note, when not empty, a
// debug annotation note=true.
func (p *perfettoWriter) event(track, typ uint64, name string, ns float64, note string) {
	ts := p.last
	if t := p.base + uint64(roundNS(ns)); t > ts {
		ts = t
	}
	b := appendVarint(p.packet[:0], pbPacketTimestamp, ts-p.last)
	p.last = ts
	b = appendVarint(b, pbPacketSequenceID, p.seq)
	b = appendVarint(b, pbPacketSeqFlags, pbSeqNeedsIncrements)
	ev := appendVarint(p.inner[:0], pbEventType, typ)
	if track != 0 {
		ev = appendVarint(ev, pbEventTrackUUID, track)
	}
	if name != "" {
		iid, ok := p.iids[name]
		if !ok {
			iid = uint64(len(p.iids) + 1) // 0 is no id
			p.iids[name] = iid
		}
		if uint64(len(p.sent)) <= iid {
			p.sent = append(p.sent, make([]bool, int(iid)+1-len(p.sent))...)
		}
		if !p.sent[iid] {
			p.sent[iid] = true
			var en, data []byte
			en = appendVarint(en, pbNameIID, iid)
			en = protowire.AppendTag(en, pbNameName, protowire.BytesType)
			en = protowire.AppendString(en, name)
			data = appendMessage(data, pbInternedNames, en)
			b = appendMessage(b, pbPacketInterned, data)
		}
		ev = appendVarint(ev, pbEventNameIID, iid)
	}
	if note != "" {
		var a []byte
		a = protowire.AppendTag(a, pbAnnotationName, protowire.BytesType)
		a = protowire.AppendString(a, note)
		a = appendVarint(a, pbAnnotationBool, 1)
		ev = appendMessage(ev, pbEventAnnotations, a)
	}
	p.inner = ev
	b = appendMessage(b, pbPacketTrackEvent, ev)
	p.packet = b
	p.write(b)
}

// appendVarint appends a varint field.
func appendVarint(b []byte, field protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, field, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// appendMessage appends an embedded message (or bytes) field.
func appendMessage(b []byte, field protowire.Number, m []byte) []byte {
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendBytes(b, m)
}

// itoa formats an unsigned number.
func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

//go:build !amd64

package tracee

// On other architectures no call is made yet (arm64's registers need
// NT_PRSTATUS and NT_ARM_SYSTEM_CALL for the restart; not written):
// holding and releasing work, a call says ErrUnsupported.

const redZone = 0

type regs struct{}

func (r *regs) sp() uint64  { return 0 }
func (r *regs) pc() uint64  { return 0 }
func (r *regs) ret() uint64 { return 0 }

func (r *regs) syscall() (int, bool) { return 0, false }

var waits = map[int]bool{}

type state struct{ regs }

func (s *state) callRegs(fn, sp uint64, args []uint64) *regs { return &s.regs }

func getRegs(tid int) (*regs, error)   { return nil, ErrUnsupported }
func setRegs(tid int, r *regs) error   { return ErrUnsupported }
func getState(tid int) (*state, error) { return nil, ErrUnsupported }
func setState(tid int, s *state) error { return ErrUnsupported }

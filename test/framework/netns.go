package framework

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// NetNS is a network namespace a test created, joined to the host's
// namespace by a veth pair with a private link-local /30: HostIP on the
// host end, NSIP inside. Processes started in it (Command) see only their
// own loopback and NSIP; the host cannot reach the namespace's loopback.
// Deleting the namespace at test end removes the pair and its addresses.
type NetNS struct {
	Name             string
	HostVeth, NSVeth string
	HostIP, NSIP     string
}

// NewNetNS creates a namespace, or returns nil and the reason when this
// machine cannot (not root, no ip command, no netns support) or
// $CELLFED_TEST_NO_NETNS asks for the loopback fallback.
func NewNetNS(t testing.TB) (*NetNS, string) {
	t.Helper()
	if os.Getenv("CELLFED_TEST_NO_NETNS") != "" {
		return nil, "CELLFED_TEST_NO_NETNS is set"
	}
	if os.Geteuid() != 0 {
		return nil, "not running as root"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, "no ip command"
	}
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	id := hex.EncodeToString(b)
	// 169.254.<b1>.<4*(b2%64)>/30: link-local, never routed off the host.
	base := int(b[2]%63+1) * 4
	n := &NetNS{
		Name:     "cfns" + id,
		HostVeth: "cfh" + id,
		NSVeth:   "cfm" + id,
		HostIP:   fmt.Sprintf("169.254.%d.%d", b[1], base+1),
		NSIP:     fmt.Sprintf("169.254.%d.%d", b[1], base+2),
	}
	if out, err := exec.Command("ip", "netns", "add", n.Name).CombinedOutput(); err != nil {
		return nil, fmt.Sprintf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() {
		// Deleting the namespace destroys its veth end, and with it the pair.
		if out, err := exec.Command("ip", "netns", "del", n.Name).CombinedOutput(); err != nil {
			t.Errorf("deleting netns %s: %v: %s", n.Name, err, out)
		}
		_ = exec.Command("ip", "link", "del", n.HostVeth).Run() // gone already unless the move failed
	})
	steps := [][]string{
		{"link", "add", n.HostVeth, "type", "veth", "peer", "name", n.NSVeth},
		{"link", "set", n.NSVeth, "netns", n.Name},
		{"addr", "add", n.HostIP + "/30", "dev", n.HostVeth},
		{"link", "set", n.HostVeth, "up"},
		{"-n", n.Name, "addr", "add", n.NSIP + "/30", "dev", n.NSVeth},
		{"-n", n.Name, "link", "set", n.NSVeth, "up"},
		{"-n", n.Name, "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			return nil, fmt.Sprintf("ip %s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	return n, ""
}

// Command returns the command line that runs bin with args inside the
// namespace (ip netns exec execs bin, keeping its pid and pdeathsig).
func (n *NetNS) Command(bin string, args ...string) (string, []string) {
	return "ip", append([]string{"netns", "exec", n.Name, bin}, args...)
}

// SetLink sets the namespace's end of the veth up or down. Down drops
// packets silently (no RST, no ICMP): a NAT that lost its state.
func (n *NetNS) SetLink(t testing.TB, up bool) {
	t.Helper()
	if err := n.Link(up); err != nil {
		t.Fatal(err)
	}
}

// Link is SetLink for use off the test goroutine: it returns the error.
func (n *NetNS) Link(up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	if out, err := exec.Command("ip", "-n", n.Name, "link", "set", n.NSVeth, state).CombinedOutput(); err != nil {
		return fmt.Errorf("ip -n %s link set %s %s: %v: %s", n.Name, n.NSVeth, state, err, out)
	}
	return nil
}

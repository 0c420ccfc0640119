package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clientproto "sigs.k8s.io/apiserver-network-proxy/konnectivity-client/proto/client"
	agentproto "sigs.k8s.io/apiserver-network-proxy/proto/agent"

	"github.com/cellfed/cellfed/pkg/proxy"
	"github.com/cellfed/cellfed/test/framework"
)

// rogueAgent opens an agent stream to the hub the way a hostile agent
// would: any certificate, any agent ID, any identifiers. It returns the
// stream when the hub accepted it (sent its server ID), else the error.
func rogueAgent(t *testing.T, plane *framework.Server, ports framework.TunnelPorts, certFile, keyFile, agentID, idents string) (agentproto.AgentService_ConnectClient, error) {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(plane.PKI().CACert())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	creds := credentials.NewTLS(&tls.Config{RootCAs: pool, ServerName: "localhost", Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	cc, err := grpc.NewClient(net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.AgentPort)), grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); cc.Close() })
	ctx = metadata.AppendToOutgoingContext(ctx, "agentID", agentID, "agentIdentifiers", idents)
	stream, err := agentproto.NewAgentServiceClient(cc).Connect(ctx)
	if err != nil {
		return nil, err
	}
	md, err := stream.Header()
	if err != nil {
		return nil, err
	}
	if len(md.Get("serverID")) == 0 {
		// Refused before ANP saw it: the status is the stream's end.
		_, err := stream.Recv()
		if err == nil {
			err = errors.New("no server ID and no error")
		}
		return nil, err
	}
	return stream, nil
}

// TestTunnelImpersonation covers both ANP holes (agents bound to no
// cluster; agent IDs squatted to close others' connections) and the
// separate trust of the agent listener and the client frontends.
func TestTunnelImpersonation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	plane, ports := startTunnelPlane(t, "--default-federated-types=") // federates nothing
	// alpha's agent ID is known to the attacker.
	const alphaAgentID = "alpha/a1"
	alpha := startTunnelledMember(t, plane, ports, "alpha", "--agent-id="+alphaAgentID)
	mallCert, mallKey := framework.IssueAgentCert(t, plane, "mallory", time.Hour)
	alphaClient := alpha.member.Client(t)

	// A watch on alpha through its tunnel, open during the whole test,
	// shown to deliver before anything else happens.
	w := workingWatch(t, alphaClient)
	defer w.Stop()

	refused := []struct {
		name, agentID, idents string
		code                  codes.Code
	}{
		{"mallory's certificate announcing host=alpha", "mallory/x", "host=alpha", codes.PermissionDenied},
		{"mallory announcing both clusters", "mallory/x", "host=mallory&host=alpha", codes.PermissionDenied},
		{"mallory with an agent ID in alpha's name", "alpha/x", "host=mallory", codes.PermissionDenied},
		{"an ipv4 identifier", "mallory/x", "host=mallory&ipv4=127.0.0.1", codes.PermissionDenied},
		{"a default-route identifier", "mallory/x", "default-route=true", codes.PermissionDenied},
		{"a cidr identifier", "mallory/x", "cidr=0.0.0.0/0", codes.PermissionDenied},
	}
	for _, tt := range refused {
		t.Run("refused: "+tt.name, func(t *testing.T) {
			_, err := rogueAgent(t, plane, ports, mallCert, mallKey, tt.agentID, tt.idents)
			if status.Code(err) != tt.code {
				t.Fatalf("got %v, want %s", err, tt.code)
			}
		})
	}
	t.Run("refused: a plane-CA (user) certificate on the agent listener", func(t *testing.T) {
		_, err := rogueAgent(t, plane, ports, plane.PKI().AdminCert(), plane.PKI().AdminKey(), "alpha/x", "host=alpha")
		if err == nil || status.Code(err) == codes.OK {
			t.Fatal("the agent listener accepted the plane admin's certificate")
		}
		t.Logf("refused with: %v", err)
	})
	t.Run("refused: an agent certificate on the gRPC frontend", func(t *testing.T) {
		o := proxy.NewDialerOptions()
		o.Address = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.GRPCPort))
		o.ServerName = "localhost"
		o.CAFile, o.CertFile, o.KeyFile = plane.PKI().CACert(), mallCert, mallKey
		d, err := proxy.NewDialer(o)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { go d.Close() }()
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if c, err := d.DialCluster(dctx, "alpha"); err == nil {
			c.Close()
			t.Fatal("the gRPC frontend dialed alpha for an agent certificate")
		}
	})

	t.Run("mallory squatting alpha's agent ID cannot disturb alpha's connections", func(t *testing.T) {
		// ANP keys connections by agent ID: with alpha's ID, forged
		// closes would end alpha's watch. The hub must refuse the ID;
		// mallory then tries again with an ID of its own.
		stream, err := rogueAgent(t, plane, ports, mallCert, mallKey, alphaAgentID, "host=mallory")
		if err == nil {
			t.Errorf("mallory's agent was accepted with alpha's agent ID %s", alphaAgentID)
		} else if status.Code(err) != codes.PermissionDenied {
			t.Fatalf("squatting: got %v, want PermissionDenied", err)
		} else if stream, err = rogueAgent(t, plane, ports, mallCert, mallKey, "mallory/x", "host=mallory"); err != nil {
			t.Fatalf("mallory's agent for its own cluster was refused: %v", err)
		}
		// Forged closes and data for every small connection ID, and
		// dial answers for guessed dial IDs.
		for id := int64(0); id < 200; id++ {
			for _, pkt := range []*clientproto.Packet{
				{Type: clientproto.PacketType_CLOSE_RSP, Payload: &clientproto.Packet_CloseResponse{CloseResponse: &clientproto.CloseResponse{ConnectID: id}}},
				{Type: clientproto.PacketType_DATA, Payload: &clientproto.Packet_Data{Data: &clientproto.Data{ConnectID: id, Data: []byte("HTTP/1.1 500 forged\r\n\r\n")}}},
				{Type: clientproto.PacketType_DIAL_CLS, Payload: &clientproto.Packet_CloseDial{CloseDial: &clientproto.CloseDial{Random: id}}},
			} {
				if err := stream.Send(pkt); err != nil {
					t.Fatalf("sending forged packets: %v", err)
				}
			}
		}
		// alpha's watch still delivers, and new requests still work.
		name := fmt.Sprintf("after-forgery-%d", time.Now().UnixNano())
		if _, err := alphaClient.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("alpha after mallory's forged packets: %v", err)
		}
		if err := awaitAdded(w, name, 10*time.Second); err != nil {
			t.Fatalf("alpha's watch after mallory's forged packets: %v", err)
		}
	})

	t.Run("a dial for mallory never reaches alpha", func(t *testing.T) {
		// mallory's only agent is the rogue stream above (or none):
		// alpha's agent must not answer for it.
		cfg := alpha.member.RESTConfig(t)
		cfg.Proxy = proxyForCluster(t, plane, ports, "mallory")
		cfg.Timeout = 5 * time.Second
		_, err := kubernetesFor(t, cfg).Discovery().ServerVersion()
		if err == nil {
			t.Fatal("a request for cluster mallory was answered")
		}
		if strings.Contains(err.Error(), "x509") {
			t.Logf("answered by something with another certificate: %v", err)
		}
	})
}

// awaitAdded waits for the ADDED event of config map name on w.
func awaitAdded(w watch.Interface, name string, timeout time.Duration) error {
	deadline := time.After(timeout)
	var seen []string
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("the watch ended; it delivered %v", seen)
			}
			if cm, isCM := ev.Object.(*corev1.ConfigMap); isCM && ev.Type == watch.Added && cm.Name == name {
				return nil
			}
			seen = append(seen, fmt.Sprintf("%s %v", ev.Type, ev.Object))
		case <-deadline:
			return fmt.Errorf("no ADDED %s within %s; it delivered %v", name, timeout, seen)
		}
	}
}

// workingWatch opens a config map watch on c that has delivered an event.
// A member that just started may refuse its first watches while its watch
// cache catches up ("Too large resource version"): those are retried.
func workingWatch(t *testing.T, c kubernetes.Interface) watch.Interface {
	t.Helper()
	ctx := context.Background()
	var w watch.Interface
	err := framework.Poll(ctx, 100*time.Millisecond, 60*time.Second, func(ctx context.Context) (bool, error) {
		var err error
		if w, err = c.CoreV1().ConfigMaps("default").Watch(context.Background(), metav1.ListOptions{}); err != nil {
			return false, err
		}
		name := fmt.Sprintf("watch-check-%d", time.Now().UnixNano())
		if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			w.Stop()
			return false, err
		}
		if err := awaitAdded(w, name, 5*time.Second); err != nil {
			w.Stop()
			return false, err
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("no working watch on alpha: %v", err)
	}
	return w
}

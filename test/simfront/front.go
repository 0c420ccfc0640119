// Package simfront serves many logical member clusters from one real
// kube-apiserver, for the scale simulation (BenchmarkScale in test/bench,
// docs/scale.md): each logical member has its own HTTPS listener and
// bearer token, and its requests reach the real API server rewritten: its
// namespace ns is the real namespace <member>-ns, its cluster-scoped
// objects are prefixed the same way, every object it writes carries the
// label sim.cellfed.io/member=<member>, and its cluster-wide lists and
// watches select on that label, so the real server's storage, watch
// cache, validation and admission do the work, and the member sees only
// its own objects under their logical names.
//
// It rewrites JSON: resource requests are sent to the real server asking
// for JSON (clients asking for protobuf decode it too), create and update
// bodies are read from JSON or protobuf (built-in types) and sent on as
// JSON, and other encodings are refused (415). Patches pass unchanged
// (they name no namespace).
// Non-resource paths (/readyz, /healthz, /version, discovery, OpenAPI)
// are the real server's, shared by all its logical members.
package simfront

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/cellfed/cellfed/pkg/pki"
)

// Member is one logical member served by a Front.
type Member struct {
	// Name is the member's name: its namespace prefix and label value.
	Name string
	// Endpoint is its https://127.0.0.1:<port> address.
	Endpoint string
	// Token is the bearer token it accepts.
	Token string
}

// Front serves logical members of one real API server.
type Front struct {
	Members []Member
	// CABundle verifies every member's serving certificate (PEM).
	CABundle []byte

	upstream *url.URL
	client   *http.Client
	servers  []*http.Server
	wg       sync.WaitGroup
}

// Start serves a logical member for each name on a loopback port, in
// front of the real API server that upstream (an admin configuration)
// reaches. certDir receives the front's CA and serving certificate.
func Start(upstream *rest.Config, certDir string, names []string) (*Front, error) {
	u, err := url.Parse(upstream.Host)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("upstream host %q is not a URL", upstream.Host)
	}
	tr, err := rest.TransportFor(upstream)
	if err != nil {
		return nil, fmt.Errorf("upstream transport: %w", err)
	}
	files := pki.Files{Dir: certDir}
	if err := pki.Ensure(files, pki.Options{AdminUser: "simfront-admin"}); err != nil {
		return nil, fmt.Errorf("front certificates: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(files.ServingCert(), files.ServingKey())
	if err != nil {
		return nil, fmt.Errorf("front serving certificate: %w", err)
	}
	ca, err := os.ReadFile(files.CACert())
	if err != nil {
		return nil, fmt.Errorf("front CA: %w", err)
	}
	f := &Front{CABundle: ca, upstream: u, client: &http.Client{Transport: tr}}
	for _, name := range names {
		if name == "" || strings.ContainsAny(name, "/-.") {
			f.Close()
			return nil, fmt.Errorf("member name %q: want a non-empty name without '/', '-' or '.'", name)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("listening for member %s: %w", name, err)
		}
		raw := make([]byte, 24)
		if _, err := rand.Read(raw); err != nil {
			f.Close()
			return nil, err
		}
		m := Member{Name: name, Endpoint: "https://" + ln.Addr().String(), Token: hex.EncodeToString(raw)}
		srv := &http.Server{
			Handler:           &handler{front: f, member: m, mapper: newMapper(name)},
			TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}},
			ReadHeaderTimeout: 30 * time.Second,
		}
		f.Members = append(f.Members, m)
		f.servers = append(f.servers, srv)
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
				klog.ErrorS(err, "Serving a logical member", "member", m.Name)
			}
		}()
	}
	return f, nil
}

// Close stops every listener and open request.
func (f *Front) Close() {
	for _, s := range f.servers {
		_ = s.Close()
	}
	f.wg.Wait()
}

type handler struct {
	front  *Front
	member Member
	mapper mapper
}

// hopHeaders are not forwarded either way; Authorization is replaced by
// the front's own credentials, Accept-Encoding by the transport's.
var hopHeaders = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
	"Authorization", "Accept-Encoding", "Content-Length",
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if subtle.ConstantTimeCompare([]byte(got), []byte(h.member.Token)) != 1 {
		writeStatus(w, http.StatusUnauthorized, "Unauthorized", "simfront: this logical member needs its bearer token")
		return
	}
	for k := range r.Header {
		if strings.HasPrefix(strings.ToLower(k), "impersonate-") {
			writeStatus(w, http.StatusForbidden, "Forbidden", "simfront: impersonation is not served (the front writes as the real server's admin)")
			return
		}
	}
	if r.Header.Get("Upgrade") != "" {
		writeStatus(w, http.StatusNotImplemented, "NotImplemented", "simfront: upgrades (exec, attach, port-forward) are not served")
		return
	}
	req, err := h.mapper.mapPath(r.URL.Path)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, "BadRequest", "simfront: "+err.Error())
		return
	}
	q, err := h.mapper.mapQuery(req, r.URL.Query())
	if err != nil {
		writeStatus(w, http.StatusBadRequest, "BadRequest", "simfront: "+err.Error())
		return
	}
	body, err := h.requestBody(r, req)
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, errMediaType) {
			code = http.StatusUnsupportedMediaType
		}
		writeStatus(w, code, http.StatusText(code), "simfront: "+err.Error())
		return
	}
	target := *h.front.upstream
	target.Path, target.RawPath, target.RawQuery = req.path, "", q.Encode()
	out, err := http.NewRequestWithContext(r.Context(), r.Method, target.String(), body)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, "BadRequest", "simfront: "+err.Error())
		return
	}
	copyHeaders(out.Header, r.Header) // after requestBody: it may change Content-Type
	if req.resource != "" {
		out.Header.Set("Accept", "application/json")
	}
	resp, err := h.front.client.Do(out)
	if err != nil {
		writeStatus(w, http.StatusBadGateway, "ServiceUnavailable", "simfront: the real member API server: "+err.Error())
		return
	}
	defer resp.Body.Close()
	copyHeaders(w.Header(), resp.Header)
	if req.resource == "" {
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		return
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "application/json" {
		writeStatus(w, http.StatusBadGateway, "InternalError", fmt.Sprintf("simfront: the real server answered %q, not JSON", ct))
		return
	}
	if isWatch(r) && resp.StatusCode == http.StatusOK {
		h.streamWatch(w, resp.Body)
		return
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		writeStatus(w, http.StatusBadGateway, "InternalError", "simfront: reading the real server's answer: "+err.Error())
		return
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		writeStatus(w, http.StatusBadGateway, "InternalError", "simfront: decoding the real server's answer: "+err.Error())
		return
	}
	h.mapper.unmapObject(obj)
	mapped, err := json.Marshal(obj)
	if err != nil {
		writeStatus(w, http.StatusInternalServerError, "InternalError", "simfront: "+err.Error())
		return
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(mapped)
}

var errMediaType = errors.New("unsupported media type")

// requestBody is the body to send on: a create or update of an object
// rewritten, anything else as it came.
func (h *handler) requestBody(r *http.Request, req request) (io.Reader, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if req.resource == "" || (r.Method != http.MethodPost && r.Method != http.MethodPut) {
		return r.Body, nil
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "application/json" && ct != protobuf {
		return nil, fmt.Errorf("%w: a %s body is rewritten from JSON or protobuf only, not %q", errMediaType, r.Method, ct)
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the body: %w", err)
	}
	obj, err := decodeBody(ct, raw)
	if err != nil {
		return nil, fmt.Errorf("decoding the body: %w", err)
	}
	if obj["kind"] != "DeleteOptions" {
		if err := h.mapper.mapBody(req, obj); err != nil {
			return nil, err
		}
	}
	mapped, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	// The real server gets JSON whatever the client sent.
	r.Header.Set("Content-Type", "application/json")
	return bytes.NewReader(mapped), nil
}

const protobuf = "application/vnd.kubernetes.protobuf"

// decodeBody reads a JSON body, or a protobuf one of a built-in type
// (client-go's typed clients send protobuf), as a JSON object.
func decodeBody(ct string, raw []byte) (map[string]any, error) {
	if ct != protobuf {
		var obj map[string]any
		err := json.Unmarshal(raw, &obj)
		return obj, err
	}
	typed, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
	if err != nil {
		return nil, err
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return nil, err
	}
	obj["apiVersion"], obj["kind"] = gvk.GroupVersion().String(), gvk.Kind
	return obj, nil
}

// streamWatch sends each event of a JSON watch stream on, rewritten,
// until either side ends it.
func (h *handler) streamWatch(w http.ResponseWriter, body io.Reader) {
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	dec := json.NewDecoder(body)
	for {
		var ev map[string]any
		if err := dec.Decode(&ev); err != nil {
			return // the real server or the client ended the watch
		}
		h.mapper.unmapEvent(ev)
		raw, err := json.Marshal(ev)
		if err != nil {
			return
		}
		if _, err := w.Write(append(raw, '\n')); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

func isWatch(r *http.Request) bool {
	v := r.URL.Query().Get("watch")
	return v == "true" || v == "1"
}

func copyHeaders(dst, src http.Header) {
	for k, v := range src {
		dst[k] = append([]string(nil), v...)
	}
	for _, k := range hopHeaders {
		dst.Del(k)
	}
}

// writeStatus answers with a Kubernetes Status, as the API server would.
func writeStatus(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"kind": "Status", "apiVersion": "v1", "status": "Failure",
		"message": msg, "reason": reason, "code": code,
	})
}

package board

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/apis/types"
	"github.com/cellfed/cellfed/pkg/registration"
	"github.com/cellfed/cellfed/pkg/rollout"
)

//go:embed static templates
var assets embed.FS

// Runner runs cellfedctl with the board's credentials and returns what
// it printed. The board's actions and printouts go through it, so they
// are exactly what the same command in a terminal does.
type Runner func(ctx context.Context, args ...string) (string, error)

// Config is what a board server needs.
type Config struct {
	// Dynamic and Kube talk to the plane as the signed-in user.
	Dynamic dynamic.Interface
	Kube    kubernetes.Interface
	Run     Runner
	// FedNamespace holds the FederatedTypeConfigs and KubeFedClusters.
	FedNamespace string
	// Namespace is the workspace / opens on.
	Namespace string
	// User names the signed-in user on the page (kubeconfig context).
	User string
}

// CookiePrefix starts the name of every board's session cookie; each
// board adds an ID of its own (Server.CookieName). Browsers keep cookies
// per host, not per port, so two boards on one host with one cookie name
// would sign each other out.
const CookiePrefix = "cellfed-board-"

// Server serves the board.
type Server struct {
	cfg    Config
	launch string // the launch URL's token: exchanged once for a session
	// launched is set by the first exchange of the launch token; every
	// later use of it is refused.
	launched atomic.Bool
	session  string // the session cookie's value, distinct from launch
	cookie   string // the session cookie's name, unique to this board
	csrf     string
	hosts    map[string]bool // Host headers accepted (DNS-rebinding guard)
	tmpl     *template.Template
	ctx      context.Context

	mu     sync.Mutex
	stores map[string]*Store
}

// randomHex is n random bytes in hex.
func randomHex(n int) (string, []byte, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("reading random bytes: %w", err)
	}
	return hex.EncodeToString(b), b, nil
}

// NewServer makes a board server. ctx bounds its watches.
func NewServer(ctx context.Context, cfg Config) (*Server, error) {
	launch, _, err := randomHex(32)
	if err != nil {
		return nil, fmt.Errorf("making the launch token: %w", err)
	}
	session, key, err := randomHex(32)
	if err != nil {
		return nil, fmt.Errorf("making a session token: %w", err)
	}
	id, _, err := randomHex(8)
	if err != nil {
		return nil, fmt.Errorf("making the board's cookie name: %w", err)
	}
	s := &Server{cfg: cfg, launch: launch, session: session, cookie: CookiePrefix + id, ctx: ctx, stores: map[string]*Store{}, hosts: map[string]bool{}}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("csrf"))
	s.csrf = hex.EncodeToString(mac.Sum(nil))
	t, err := template.New("").Funcs(template.FuncMap{"join": strings.Join}).ParseFS(assets, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("parsing the board's templates: %w", err)
	}
	s.tmpl = t
	return s, nil
}

// Token is the one-time token the launch URL carries. Its first use
// sets the session cookie (another random value) and spends it.
func (s *Server) Token() string { return s.launch }

// CookieName is this board's session cookie: CookiePrefix and an ID of
// its own, so boards on other ports of the same host keep their own.
func (s *Server) CookieName() string { return s.cookie }

// AllowHost accepts requests whose Host header is addr (host:port),
// and the loopback spellings of its port.
func (s *Server) AllowHost(addr string) {
	s.hosts[addr] = true
	if _, port, err := net.SplitHostPort(addr); err == nil {
		for _, h := range []string{"127.0.0.1", "localhost", "[::1]"} {
			s.hosts[h+":"+port] = true
		}
	}
}

// Handler is the board's HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/w/"+s.cfg.Namespace, http.StatusSeeOther)
	})
	mux.HandleFunc("GET /w/{ns}", s.boardPage)
	mux.HandleFunc("GET /w/{ns}/events", s.events)
	mux.HandleFunc("GET /w/{ns}/o/{resource}/{name}", s.objectPage)
	mux.HandleFunc("POST /w/{ns}/o/{resource}/{name}/{verb}", s.rolloutAction)
	mux.HandleFunc("GET /cells", s.cellsPage)
	mux.HandleFunc("POST /registrations/{name}/{verb}", s.registrationAction)
	return s.secure(mux)
}

// secure wraps every request: security headers, the Host check, the
// session (cookie, or the launch token once), and CSRF for POSTs.
func (s *Server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if len(s.hosts) > 0 && !s.hosts[r.Host] {
			http.Error(w, "host "+r.Host+" is not this board's address; open the address `cellfedctl board` printed", http.StatusMisdirectedRequest)
			return
		}
		signedIn := false
		if c, err := r.Cookie(s.cookie); err == nil && equal(c.Value, s.session) {
			signedIn = true
		}
		if tok := r.URL.Query().Get("token"); tok != "" {
			if !equal(tok, s.launch) {
				http.Error(w, "this board link's token is not valid (an older board?); open the address `cellfedctl board` printed", http.StatusUnauthorized)
				return
			}
			// The launch token is spent by its first use; a browser
			// signed in already may follow the link again.
			if !s.launched.CompareAndSwap(false, true) && !signedIn {
				http.Error(w, "this board link was used already (its token is one-time): restart `cellfedctl board` for a new link, or go on in the browser that opened it", http.StatusUnauthorized)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: s.session, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q := r.URL.Query()
			q.Del("token")
			u := *r.URL
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		if !signedIn {
			if strings.HasPrefix(r.URL.Path, "/static/") {
				next.ServeHTTP(w, r)
				return
			}
			http.Error(w, "not signed in to this board: open the address `cellfedctl board` printed (it carries a one-time token)", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost {
			if !equal(r.Header.Get("X-CSRF-Token"), s.csrf) {
				writeJSON(w, http.StatusForbidden, result{Error: "missing or wrong CSRF token: act from the board's own pages"})
				return
			}
			if o := r.Header.Get("Origin"); o != "" && !s.hosts[strings.TrimPrefix(strings.TrimPrefix(o, "http://"), "https://")] && len(s.hosts) > 0 {
				writeJSON(w, http.StatusForbidden, result{Error: "cross-origin request refused"})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// result is an action's answer.
type result struct {
	Output string `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// store is the watched board of ns, started on first use.
func (s *Server) store(ctx context.Context, ns string) (*Store, error) {
	if !cellv1alpha1.IsDNSLabel(ns) {
		return nil, fmt.Errorf("%q is not a namespace name", ns)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.stores[ns]; ok {
		return st, nil
	}
	typs, err := FederatedTypes(ctx, s.cfg.Dynamic, s.cfg.FedNamespace)
	if err != nil {
		return nil, err
	}
	st := NewStore(ns, typs)
	// The watches live as long as the server, not the request.
	if err := st.Watch(s.ctx, s.cfg.Dynamic); err != nil {
		return nil, err
	}
	s.stores[ns] = st
	return st, nil
}

// page is what every template gets.
type page struct {
	Title     string
	Namespace string
	User      string
	CSRF      string
	Error     string
	Status    int
	Data      any
}

func (s *Server) render(w http.ResponseWriter, name string, p page) {
	p.CSRF, p.User = s.csrf, s.cfg.User
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if p.Status != 0 {
		w.WriteHeader(p.Status)
	}
	if err := s.tmpl.ExecuteTemplate(w, name, p); err != nil {
		klog.ErrorS(err, "rendering a board page", "page", name)
	}
}

// statusOf is the HTTP status for an error from the plane.
func statusOf(err error) int {
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Code != 0 {
		return int(st.Status().Code)
	}
	return http.StatusBadGateway
}

// errorPage shows why a workspace cannot be shown.
func (s *Server) errorPage(w http.ResponseWriter, ns string, err error) {
	msg := err.Error()
	if apierrors.IsForbidden(err) {
		msg = fmt.Sprintf("You (%s) may not see workspace %s: the plane refused (%s). Ask its platform team for a grant (`cellfedctl tenant grant`).", s.cfg.User, ns, err.Error())
	}
	s.render(w, "error.html", page{Title: "workspace " + ns, Namespace: ns, Error: msg, Status: statusOf(err)})
}

func (s *Server) boardPage(w http.ResponseWriter, r *http.Request) {
	ns := r.PathValue("ns")
	if _, err := s.store(r.Context(), ns); err != nil {
		s.errorPage(w, ns, err)
		return
	}
	s.render(w, "board.html", page{Title: "Release board: " + ns, Namespace: ns})
}

// events streams the board of a workspace as server-sent events: a
// snapshot, then deltas as the watches see changes.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	ns := r.PathValue("ns")
	st, err := s.store(r.Context(), ns)
	if err != nil {
		http.Error(w, err.Error(), statusOf(err))
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	ch, cancel := st.Subscribe()
	defer cancel()
	keepalive := time.NewTicker(20 * time.Second)
	defer keepalive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepalive.C:
			_, _ = fmt.Fprint(w, ": keepalive\n\n")
			fl.Flush()
		case ev, ok := <-ch:
			if !ok {
				return
			}
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Name, ev.Data); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

// can asks the plane whether the user may verb group/resource in ns.
func (s *Server) can(ctx context.Context, verb, group, resource, subresource, ns string) bool {
	review, err := s.cfg.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: verb, Group: group, Resource: resource, Subresource: subresource}},
	}, metav1.CreateOptions{})
	if err != nil {
		klog.V(2).InfoS("access review failed", "err", err)
		return false
	}
	return review.Status.Allowed
}

// objectView is the object page's data.
type objectView struct {
	Row       Row
	Cells     []cellLine
	Ref       string
	Placement string
	Mask      string
	State     string
	Message   string
	Paused    bool
	Actions   []Action
	CanAct    bool
	Status    string
	History   string
	Resource  string
	// Diff is the change from the previous revision to the newest.
	Diff, DiffTitle string
	// Events are the object's newest events; EventsError says why there
	// are none to show (the user may not list events, say).
	Events      []EventLine
	EventsError string
}

func (s *Server) objectPage(w http.ResponseWriter, r *http.Request) {
	ns, res, name := r.PathValue("ns"), r.PathValue("resource"), r.PathValue("name")
	st, err := s.store(r.Context(), ns)
	if err != nil {
		s.errorPage(w, ns, err)
		return
	}
	key := res + "/" + name
	row, ok := st.Row(key)
	obj := st.Object(key)
	if !ok || obj == nil {
		s.render(w, "error.html", page{Title: name, Namespace: ns, Status: http.StatusNotFound,
			Error: fmt.Sprintf("workspace %s has no %s %s (deleted?); go back to the board", ns, res, name)})
		return
	}
	v := objectView{Row: row, Cells: CellLines(st.Columns(), row), Ref: CommandRef(row.Kind, name), Resource: res}
	fed, err := decodeFor(obj)
	if err == nil {
		v.Placement, v.Mask = fed.placement, fed.mask
		v.State, v.Message, v.Paused = fed.state, fed.message, fed.paused
	}
	v.CanAct = s.can(r.Context(), "update", types.GroupName, res, "", ns)
	if v.CanAct {
		v.Actions = Actions(v.Ref, row.Active, v.Paused, row.Placed, row.Released)
	}
	v.Status, _ = s.cfg.Run(r.Context(), "rollout", "status", v.Ref, "-n", ns)
	if out, err := s.cfg.Run(r.Context(), "rollout", "history", v.Ref, "-n", ns); err != nil {
		v.History = err.Error()
	} else {
		v.History = out
	}
	if revs, err := (rollout.History{Client: s.cfg.Dynamic}).List(r.Context(), obj); err != nil {
		v.Diff = err.Error()
	} else if n := len(revs); n >= 2 {
		v.DiffTitle = fmt.Sprintf("r%d → r%d", revs[n-2].Spec.Revision, revs[n-1].Spec.Revision)
		if v.Diff, err = RevisionDiff(&revs[n-2], &revs[n-1]); err != nil {
			v.Diff = err.Error()
		}
	}
	if evs, err := s.cfg.Kube.CoreV1().Events(ns).List(r.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name}); err != nil {
		v.EventsError = "no events shown: " + err.Error()
	} else {
		v.Events = EventLines(evs.Items, row.Kind, name, 20, time.Now())
	}
	s.render(w, "object.html", page{Title: v.Ref + " in " + ns, Namespace: ns, Data: v})
}

func (s *Server) rolloutAction(w http.ResponseWriter, r *http.Request) {
	ns, res, name, verb := r.PathValue("ns"), r.PathValue("resource"), r.PathValue("name"), r.PathValue("verb")
	st, err := s.store(r.Context(), ns)
	if err != nil {
		writeJSON(w, statusOf(err), result{Error: err.Error()})
		return
	}
	row, ok := st.Row(res + "/" + name)
	if !ok {
		writeJSON(w, http.StatusNotFound, result{Error: fmt.Sprintf("workspace %s has no %s %s", ns, res, name)})
		return
	}
	args, err := RolloutArgs(verb, ns, row.Kind, name, r.FormValue("batch"))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, result{Error: err.Error()})
		return
	}
	if !s.can(r.Context(), "update", types.GroupName, res, "", ns) {
		writeJSON(w, http.StatusForbidden, result{Error: fmt.Sprintf("forbidden: %s may not update %s.%s in workspace %s, so cannot run `cellfedctl %s`; ask for the app-team role (`cellfedctl tenant grant`)",
			s.cfg.User, res, types.GroupName, ns, strings.Join(args, " "))})
		return
	}
	s.act(w, r, args)
}

func (s *Server) registrationAction(w http.ResponseWriter, r *http.Request) {
	name, verb := r.PathValue("name"), r.PathValue("verb")
	args, err := RegistrationArgs(verb, name)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, result{Error: err.Error()})
		return
	}
	if !s.can(r.Context(), "update", cellv1alpha1.GroupName, "clusterregistrations", "status", "") {
		writeJSON(w, http.StatusForbidden, result{Error: fmt.Sprintf("forbidden: %s may not decide cluster registrations (update clusterregistrations/status); that is the platform team's", s.cfg.User)})
		return
	}
	s.act(w, r, args)
}

// act runs a cellfedctl command and answers with what it printed.
func (s *Server) act(w http.ResponseWriter, r *http.Request, args []string) {
	klog.InfoS("board action", "user", s.cfg.User, "command", strings.Join(args, " "))
	out, err := s.cfg.Run(r.Context(), args...)
	if err != nil {
		code := http.StatusConflict
		if strings.Contains(err.Error(), "forbidden") {
			code = http.StatusForbidden
		}
		writeJSON(w, code, result{Output: out, Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, result{Output: out})
}

// cellRow is one cell on the cells page.
type cellRow struct {
	Name, Cluster, Ready, Reason, Tenant string
	Objects                              int
}

// registrationRow is one registration on the cells page.
type registrationRow struct {
	Name, Tenant, Phase, Endpoint, Cluster string
	Pending                                bool
}

type cellsView struct {
	Cells         []cellRow
	CellsError    string
	Clusters      []ClusterLine
	ClustersError string
	Status        string
	Registrations []registrationRow
	RegError      string
	CanDecide     bool
}

func (s *Server) cellsPage(w http.ResponseWriter, r *http.Request) {
	ns := r.URL.Query().Get("ns")
	if ns == "" {
		ns = s.cfg.Namespace
	}
	ctx := r.Context()
	v := cellsView{}
	tenant := ""
	if nsObj, err := s.cfg.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
		tenant = nsObj.Labels[cellv1alpha1.LabelTenant]
	}
	if st, err := s.store(ctx, ns); err != nil {
		v.CellsError = err.Error()
	} else {
		counts := st.ObjectCounts()
		list, err := s.cfg.Dynamic.Resource(cellv1alpha1.CellsResource).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			v.CellsError = err.Error()
		} else {
			for _, u := range list.Items {
				c := cellRow{Name: u.GetName(), Tenant: tenant, Objects: counts[u.GetName()], Ready: "Unknown"}
				var cell cellv1alpha1.Cell
				if err := fromUnstructured(u.Object, &cell); err == nil {
					c.Cluster = cell.Spec.Cluster
					for _, cond := range cell.Status.Conditions {
						if cond.Type == cellv1alpha1.CellReady {
							c.Ready, c.Reason = string(cond.Status), cond.Reason
						}
					}
				}
				v.Cells = append(v.Cells, c)
			}
			sort.Slice(v.Cells, func(i, j int) bool { return v.Cells[i].Name < v.Cells[j].Name })
		}
	}
	if list, err := s.cfg.Dynamic.Resource(kubefed.KubeFedClustersResource).Namespace(s.cfg.FedNamespace).List(ctx, metav1.ListOptions{}); err != nil {
		v.ClustersError = "Clusters are not shown: " + err.Error()
	} else {
		v.Clusters = ClusterLines(list.Items, time.Now())
	}
	if out, err := s.cfg.Run(ctx, "status"); err != nil {
		v.Status = err.Error()
	} else {
		v.Status = out
	}
	regs, err := s.cfg.Dynamic.Resource(cellv1alpha1.ClusterRegistrationsResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		v.RegError = "Cluster registrations are not shown: " + err.Error()
	} else {
		for _, u := range regs.Items {
			var reg cellv1alpha1.ClusterRegistration
			if err := fromUnstructured(u.Object, &reg); err != nil {
				continue
			}
			phase := registration.Phase(reg.Status.Conditions)
			v.Registrations = append(v.Registrations, registrationRow{Name: reg.Name, Tenant: reg.Spec.Tenant,
				Phase: string(phase), Endpoint: reg.Spec.APIEndpoint, Cluster: reg.Status.KubeFedCluster, Pending: phase == cellv1alpha1.RegistrationPending})
		}
		sort.Slice(v.Registrations, func(i, j int) bool { return v.Registrations[i].Name < v.Registrations[j].Name })
		v.CanDecide = s.can(ctx, "update", cellv1alpha1.GroupName, "clusterregistrations", "status", "")
	}
	s.render(w, "cells.html", page{Title: "Cells and clusters", Namespace: ns, Data: v})
}

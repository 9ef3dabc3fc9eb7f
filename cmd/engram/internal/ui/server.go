package ui

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Options configures a Server. nil or zero fields mean the documented
// defaults.
type Options struct {
	// Token is the secret every request must carry. Default: 32 random
	// bytes, hex-encoded. Set it only in tests or when another program
	// hands the URL to the person.
	Token string
	// Person names whoever uses the page. Approvals, rejections and
	// restores are attributed to memory.HumanApprover+Person
	// ("human:alice"). Default: PersonName("").
	Person string
	// Model is the model name the context page starts with. Default
	// "gpt-4o".
	Model string
	// PollInterval is how often the live view checks the store for
	// changes made by other processes while a page is open. Default 500ms.
	// Each check costs 2+2N queries for N agents: the agent list, the
	// proposal counts, and per agent its blocks stamp and newest message.
	PollInterval time.Duration
	// MaxChars is how much of a block's content (and of each message and
	// diff) a page shows before it truncates with a "show all" link.
	// Default 20,000 characters.
	MaxChars int
	// HistoryPage is how many changes a block's timeline shows per page.
	// Default 20.
	HistoryPage int
	// Logger receives request errors. Default: none (discarded).
	Logger *slog.Logger
	// InlineDiffChars is the largest block (in characters) whose page
	// computes the diffs of its history page inline. A larger block's page
	// lists its changes with a link each that computes that one diff:
	// every historical version of a block is a full copy of it in memory.
	// Default 65,536.
	InlineDiffChars int
	// HeavyTimeout bounds how long a request may wait for, and spend on,
	// historical versions of a large block (an as-of view, a diff, a
	// proposal's preview); such work runs one request at a time, and a
	// request that cannot start in time gets 503. Other pages are served
	// meanwhile. Default 30s.
	HeavyTimeout time.Duration
	// ReadHeaderTimeout, ReadTimeout and IdleTimeout are the timeouts of
	// the http.Server that HTTPServer returns. Defaults 10s, 30s and 120s.
	ReadHeaderTimeout, ReadTimeout, IdleTimeout time.Duration
	// BasePath is the path the app is mounted at, such as "/ui" (a
	// trailing slash is dropped), for a server that serves other things
	// beside it: its pages, links, forms, redirects, static files, event
	// stream and cookie all lie under it, and requests are taken with
	// their full path (no http.StripPrefix). It is "/" followed by
	// segments of letters, digits and "-._~" (not "." or ".."), so it
	// needs no escaping anywhere. Default "": the root.
	BasePath string
}

// Server is the web app over one store. It is an http.Handler; Close stops
// its live-update loop and ends open event streams.
type Server struct {
	store   *memory.Store
	admin   admin // the store's, for what an agent handle cannot list
	opts    Options
	token   string
	csrf    string
	cookie  string
	session string // the cookie's value: not the token, which works once
	base    string // Options.BasePath without its trailing slash

	loginMu sync.Mutex
	logins  map[string]bool // one-time sign-in tokens → not used yet

	slots chan struct{} // held while historical versions are computed
	// trim gives the C heap's free memory back again a while after heavy
	// work (see heavy); trimMu guards it.
	trimMu    sync.Mutex
	trim      *time.Timer
	trimsLeft int           // trims still to come (see trimLater)
	trimWait  time.Duration // the wait before the next
	closed    bool          // Close stopped the trims
	renders   *renderCache
	pages     map[string]*template.Template
	mux       *http.ServeMux
	handler   http.Handler
	log       *slog.Logger
	live      *hub

	subsMu sync.Mutex
	subs   map[string]func() // (owner, label) → cancel of a document subscription

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns the app over store, which must have an Admin() *memory.Admin
// method (such as *memory.Store; else ErrNoAgentLister). Call Close when
// done.
func New(store *memory.Store, opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Token == "" {
		t, err := randomHex()
		if err != nil {
			return nil, err
		}
		o.Token = t
	}
	o.Person = PersonName(o.Person)
	base, err := basePath(o.BasePath)
	if err != nil {
		return nil, err
	}
	adm, err := storeAdmin(store)
	if err != nil {
		return nil, err
	}
	if o.Model == "" {
		o.Model = "gpt-4o"
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 500 * time.Millisecond
	}
	if o.MaxChars <= 0 {
		o.MaxChars = 20_000
	}
	if o.HistoryPage <= 0 {
		o.HistoryPage = 20
	}
	if o.InlineDiffChars <= 0 {
		o.InlineDiffChars = 64 << 10
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&o.HeavyTimeout, 30 * time.Second}, {&o.ReadHeaderTimeout, 10 * time.Second},
		{&o.ReadTimeout, 30 * time.Second}, {&o.IdleTimeout, 120 * time.Second}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pages, err := parsePages(base)
	if err != nil {
		return nil, err
	}
	session, err := randomHex()
	if err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, []byte(o.Token))
	io.WriteString(mac, "engram ui csrf")
	sum := sha256.Sum256([]byte(o.Token))
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		store: store, admin: adm, opts: o, token: o.Token, csrf: hex.EncodeToString(mac.Sum(nil)),
		// The cookie's name carries a hash of the token: cookies are not
		// per port, so two servers on one host must not overwrite each
		// other's.
		cookie:  "engram_ui_" + hex.EncodeToString(sum[:6]),
		session: session, base: base, logins: map[string]bool{o.Token: true},
		slots: make(chan struct{}, 1), renders: newRenderCache(renderCacheBytes),
		pages: pages, mux: http.NewServeMux(), log: log, live: newHub(),
		subs: map[string]func(){}, ctx: ctx, cancel: cancel, done: make(chan struct{}),
	}
	s.routes()
	// Cross-origin protection (Sec-Fetch-Site / Origin) in front of the
	// CSRF token: a POST from another site fails even before the token is
	// checked.
	s.handler = http.NewCrossOriginProtection().Handler(s.mux)
	go s.watch()
	return s, nil
}

// basePath checks an Options.BasePath and drops its trailing slash.
func basePath(p string) (string, error) {
	p = strings.TrimRight(p, "/")
	if p == "" {
		return "", nil
	}
	segs := strings.Split(p, "/")
	ok := segs[0] == ""
	for _, seg := range segs[1:] {
		ok = ok && seg != "" && seg != "." && seg != ".." &&
			strings.Trim(seg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~") == ""
	}
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrBasePath, p)
	}
	return p, nil
}

// PersonName is the name of whoever decides proposals and restores
// blocks (without the "human:" prefix): as, else $USER, else "local".
func PersonName(as string) string {
	if strings.TrimSpace(as) == "" {
		as = os.Getenv("USER")
	}
	if strings.TrimSpace(as) == "" {
		as = "local"
	}
	return as
}

func randomHex() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("ui: make a secret: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Token is the secret the printed URL carries. It signs in once.
func (s *Server) Token() string { return s.token }

// Person is the name recorded for approvals and restores, with the
// "human:" prefix.
func (s *Server) Person() string { return memory.HumanApprover + s.opts.Person }

// URL is the address to open for a server listening at base (such as
// "http://127.0.0.1:8080"): base and Options.BasePath with the token. It signs in once: the
// browser that opens it gets a session cookie, and the URL stops working
// (LoginURL makes another).
func (s *Server) URL(base string) string {
	return strings.TrimRight(base, "/") + s.base + "/?token=" + url.QueryEscape(s.token)
}

// LoginURL is like URL with a new one-time token, for signing in another
// browser.
func (s *Server) LoginURL(base string) (string, error) {
	t, err := randomHex()
	if err != nil {
		return "", err
	}
	s.loginMu.Lock()
	s.logins[t] = true
	s.loginMu.Unlock()
	return strings.TrimRight(base, "/") + s.base + "/?token=" + url.QueryEscape(t), nil
}

// HTTPServer is an http.Server for the app with its timeouts (see
// Options): a client that sends its headers or body slowly, or keeps an
// idle connection, is cut off. There is no write timeout: event streams
// last as long as their page.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{Handler: s, ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		ReadTimeout: s.opts.ReadTimeout, IdleTimeout: s.opts.IdleTimeout}
}

// Close stops the live-update loop, ends open event streams and cancels
// the document subscriptions. It does not close the store.
func (s *Server) Close() error {
	s.cancel()
	<-s.done
	s.trimMu.Lock()
	s.closed = true
	if s.trim != nil {
		s.trim.Stop()
	}
	s.trimMu.Unlock()
	s.subsMu.Lock()
	for k, cancel := range s.subs {
		cancel()
		delete(s.subs, k)
	}
	s.subsMu.Unlock()
	return nil
}

func (s *Server) routes() {
	m, b := s.mux, s.base
	m.HandleFunc("GET "+b+"/{$}", s.handleOverview)
	if b != "" {
		m.HandleFunc("GET "+b, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, b+"/", http.StatusSeeOther)
		})
	}
	m.HandleFunc("GET "+b+"/agents/{agent}", s.handleAgent)
	m.HandleFunc("GET "+b+"/blocks/{owner}/{label}", s.handleBlock)
	m.HandleFunc("GET "+b+"/blocks/{owner}/{label}/changes/{hash}", s.handleChange)
	m.HandleFunc("POST "+b+"/blocks/{owner}/{label}/restore", s.handleRestore)
	m.HandleFunc("GET "+b+"/proposals", s.handleProposals)
	m.HandleFunc("POST "+b+"/proposals/{id}/approve", s.handleDecide(true))
	m.HandleFunc("POST "+b+"/proposals/{id}/reject", s.handleDecide(false))
	m.HandleFunc("GET "+b+"/context", s.handleContext)
	m.HandleFunc("GET "+b+"/search", s.handleSearch)
	m.HandleFunc("GET "+b+"/events", s.handleEvents)
	static, _ := fs.Sub(assets, "static")
	files := http.StripPrefix(b+"/static/", http.FileServerFS(static))
	m.HandleFunc("GET "+b+"/static/", func(w http.ResponseWriter, r *http.Request) {
		// Files only: no directory listing.
		if strings.HasSuffix(r.URL.Path, "/") {
			s.fail(w, r, http.StatusNotFound, "Page not found", fmt.Sprintf("There is no page at %s.", r.URL.Path))
			return
		}
		files.ServeHTTP(w, r)
	})
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, "Page not found", fmt.Sprintf("There is no page at %s.", r.URL.Path))
	})
}

// ServeHTTP checks the token, sets the security headers and serves.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// No inline script or style anywhere: whatever memory content might
	// slip past escaping still could not run.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	q := r.URL.Query()
	token := q.Get("token")
	signedIn := false
	if c, err := r.Cookie(s.cookie); err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(s.session)) == 1 {
		signedIn = true
	} else if token != "" {
		switch s.useLogin(token) {
		case loginUsed:
			h.Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, "401 unauthorized: this sign-in link was already used; it works once. "+
				"Use the browser that opened it, or restart \"engram ui\" for a new link.\n")
			return
		case loginOK:
			// Secure over TLS: cookies are not per port or scheme, and a
			// plain-HTTP service on the same host must not get it.
			http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: s.session, Path: cmp.Or(s.base, "/"), HttpOnly: true, SameSite: http.SameSiteStrictMode,
				Secure: r.TLS != nil})
			signedIn = true
		}
	}
	if !signedIn {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, "401 unauthorized: open the URL that \"engram ui\" printed (it carries the access token).\n")
		return
	}
	if q.Has("token") && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		// Take the token out of the address bar (and history) now that
		// the cookie carries it, staying on this server and in the app.
		q.Del("token")
		target := r.URL.EscapedPath()
		if !isLocalPath(target) || !s.inApp(target) {
			target = s.base + "/"
		}
		if len(q) > 0 {
			target += "?" + q.Encode()
		}
		http.Redirect(w, r, target, http.StatusSeeOther)
		return
	}
	s.handler.ServeHTTP(w, r)
}

type loginResult int

const (
	loginInvalid loginResult = iota
	loginOK
	loginUsed
)

// useLogin checks a sign-in token and uses it up.
func (s *Server) useLogin(t string) loginResult {
	s.loginMu.Lock()
	defer s.loginMu.Unlock()
	for k, unused := range s.logins {
		if subtle.ConstantTimeCompare([]byte(t), []byte(k)) == 1 {
			if !unused {
				return loginUsed
			}
			s.logins[k] = false
			return loginOK
		}
	}
	return loginInvalid
}

// isLocalPath reports whether p is a path on this server a redirect may
// go to: it starts with one slash, and no browser reads it as another host
// ("//host", "/\host") or a scheme.
func isLocalPath(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\\x00\r\n\t") {
		return false
	}
	u, err := url.Parse(p)
	return err == nil && u.Scheme == "" && u.Host == "" && !strings.HasPrefix(u.Path, "//")
}

// inApp reports whether path p is in the app, under Options.BasePath.
func (s *Server) inApp(p string) bool {
	return s.base == "" || p == s.base || strings.HasPrefix(p, s.base+"/")
}

// path is p (such as "/proposals") under Options.BasePath.
func (s *Server) path(p string) string { return s.base + p }

// checkPost enforces the CSRF token on a state-changing request and
// bounds its body.
func (s *Server) checkPost(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, http.StatusBadRequest, "Bad request", "The form could not be read: "+err.Error())
		return false
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.csrf)) != 1 {
		s.fail(w, r, http.StatusForbidden, "Forbidden", "The form's CSRF token is missing or wrong. Reload the page and try again.")
		return false
	}
	return true
}

// page is what every template gets.
type page struct {
	Title  string
	Nav    string
	CSRF   string
	Person string
	// Live lists the agents whose changes refresh this page; LiveAll
	// refreshes it on any change; neither: the page is not live.
	Live    []string
	LiveAll bool
	Flash   string
	Data    any
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	t, ok := s.pages[name]
	if !ok {
		panic("ui: no template " + name) // a programming error, caught by tests
	}
	p.CSRF, p.Person = s.csrf, s.Person()
	if p.Live == nil {
		p.Live = []string{}
	}
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout", p); err != nil {
		s.log.Error("ui: render", "page", name, "err", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	io.WriteString(w, b.String())
}

type failData struct {
	Status  int
	Heading string
	Message string
}

// fail renders an error page.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, heading, msg string) {
	s.render(w, r, status, "error", page{Title: heading, Data: failData{Status: status, Heading: heading, Message: msg}})
}

// failErr maps a store error to a page: not found → 404, a refused or
// invalid request → 409/400, anything else → 500.
func (s *Server) failErr(w http.ResponseWriter, r *http.Request, what string, err error) {
	switch {
	case errors.Is(err, ErrUnknownAgent), errors.Is(err, memory.ErrNotFound):
		s.fail(w, r, http.StatusNotFound, "Not found", err.Error())
	case errors.Is(err, blocks.ErrPermission):
		s.fail(w, r, http.StatusForbidden, what+" refused", err.Error())
	case errors.Is(err, memory.ErrInvalidArgument), errors.Is(err, memory.ErrNoMatch), errors.Is(err, schema.ErrInvalid),
		errors.Is(err, blocks.ErrLimit), errors.Is(err, blocks.ErrWrongSchema), errors.Is(err, blocks.ErrOutOfRange),
		errors.Is(err, blocks.ErrHistorical):
		// The request cannot apply to memory as it is now (decided already,
		// over the limit, an unknown change): the person's to resolve.
		s.fail(w, r, http.StatusConflict, what+" failed", err.Error())
	case errors.Is(err, ErrBusy):
		w.Header().Set("Retry-After", "5")
		s.fail(w, r, http.StatusServiceUnavailable, what+": busy", err.Error())
	case errors.Is(err, context.Canceled):
		// The browser went away.
	default:
		s.log.Error("ui: "+what, "path", r.URL.Path, "err", err)
		s.fail(w, r, http.StatusInternalServerError, what+" failed", err.Error())
	}
}

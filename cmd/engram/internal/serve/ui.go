package serve

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/memory"
)

// uiCookie names the login cookie of the web UI behind serve.
const uiCookie = "engram_serve_login"

// UIPath is where the web UI is mounted: everything of it, its login and
// sign-out among them, is under UIPath+"/". Options.UI's handler gets the
// requests with their full path, so its app must be mounted there (for
// engram ui's app, ui.Options.BasePath).
const UIPath = "/ui"

// uiLogin is one person's login: the human token it was made from (read
// again on every request, so a revoked token logs out at once) and when
// it ends.
type uiLogin struct {
	tokenID int64
	human   string
	until   time.Time
	// ctx ends with the login (sign-out, revocation or expiry of its
	// token, shutdown): the requests it makes, its page's event stream
	// among them, end with it.
	ctx    context.Context
	cancel context.CancelFunc
}

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>engram — sign in</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><h1>engram</h1>
{{if .}}<p role="alert">{{.}}</p>{{end}}
<form method="post" action="/ui/login">
<label>Access token (from <code>engram token create --human NAME</code>)<br>
<input type="password" name="token" autocomplete="off" size="60" required autofocus></label>
<button type="submit">Sign in</button></form>
</body></html>
`))

// serveUI serves everything but /mcp, /sync, /healthz, /readyz and
// /metrics: /ui/login (a form, a one-time login link /ui/login?link=…
// from engram token login-url, or the login URL /ui/login?token=…; each
// is traded for a cookie and taken out of the address bar), /ui/logout,
// and for a signed-in
// person the web UI itself under /ui/. "/" and "/ui" lead to "/ui/";
// anything else is 404.
func (h *Handler) serveUI(w http.ResponseWriter, r *http.Request) {
	if h.opts.UI == nil {
		http.NotFound(w, r)
		return
	}
	switch p := r.URL.Path; {
	case p == "/" || p == UIPath:
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.NotFound(w, r)
			return
		}
		http.Redirect(w, r, UIPath+"/", http.StatusSeeOther)
		return
	case !strings.HasPrefix(p, UIPath+"/"):
		http.NotFound(w, r)
		return
	}
	switch r.URL.Path {
	case UIPath + "/login":
		h.login(w, r)
		return
	case UIPath + "/logout":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			http.Error(w, "405 method not allowed: sign out with POST", http.StatusMethodNotAllowed)
			return
		}
		if c, err := r.Cookie(uiCookie); err == nil {
			h.endLogin(c.Value)
		}
		clearLoginCookie(w, r)
		http.Redirect(w, r, UIPath+"/login", http.StatusSeeOther)
		return
	}
	signIn := func() {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			http.Redirect(w, r, UIPath+"/login", http.StatusSeeOther)
			return
		}
		http.Error(w, "401 unauthorized: sign in at "+UIPath+"/login", http.StatusUnauthorized)
	}
	login, ok, limited := h.loggedIn(w, r)
	if limited {
		return
	}
	if !ok {
		signIn()
		return
	}
	// A request that waited (for its rate, its turn, its bytes) is
	// checked again: its login may have ended, or its token been
	// revoked, meanwhile.
	loginEnded := func() bool {
		if _, ok, _ := h.checkLogin(w, r, false); !ok {
			signIn()
			return true
		}
		return false
	}
	ok, waited := h.allow(w, r, login.tokenID)
	if !ok || waited && loginEnded() {
		return
	}
	if h.refuseOverCap(w, r) {
		return
	}
	// A turn, and bytes for its body, for each request but the page's
	// event stream, which lasts as long as the page, and its static
	// files, which cost nothing to serve (and whose bodies go unread).
	if !((r.Method == http.MethodGet || r.Method == http.MethodHead) && (r.URL.Path == UIPath+"/events" || strings.HasPrefix(r.URL.Path, UIPath+"/static/"))) {
		done, turnWaited, ok := h.takeTurns(w, r, login.tokenID, 1)
		if !ok {
			return
		}
		defer done()
		bytesWaited, ok := h.payBytes(w, r, login.tokenID, true)
		if !ok || (turnWaited || bytesWaited) && loginEnded() {
			return
		}
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(BodyReadTimeout))
	}
	ui, err := h.ui(login.human)
	if err != nil {
		h.log.Error("serve: make web UI", "human", login.human, "err", err)
		http.Error(w, "500 internal error opening the web UI", http.StatusInternalServerError)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(login.ctx, cancel)()
	ui.ServeHTTP(w, r.WithContext(ctx))
}

// clearLoginCookie tells the browser to drop its login cookie.
func clearLoginCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: uiCookie, Value: "", Path: UIPath, MaxAge: -1, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

// endLogin signs login id out, ending its requests.
func (h *Handler) endLogin(id string) {
	h.mu.Lock()
	l, ok := h.uiLogins[id]
	delete(h.uiLogins, id)
	h.mu.Unlock()
	if ok {
		l.cancel()
	}
}

// endRevokedLogins signs out the logins whose token was revoked or
// expired, or which ran out, since their last request: their open event
// streams would not notice otherwise.
func (h *Handler) endRevokedLogins(ctx context.Context, now time.Time) {
	h.mu.Lock()
	byToken := map[int64][]string{}
	var over []string
	for id, l := range h.uiLogins {
		if !now.Before(l.until) {
			over = append(over, id)
			continue
		}
		byToken[l.tokenID] = append(byToken[l.tokenID], id)
	}
	h.mu.Unlock()
	for tok, ids := range byToken {
		t, err := h.opts.Tokens.Get(ctx, tok)
		if err != nil && !errors.Is(err, memory.ErrNotFound) {
			continue // the store is busy or down: the next sweep decides
		}
		if err == nil && tokenValid(t, now) {
			continue
		}
		over = append(over, ids...)
	}
	for _, id := range over {
		h.endLogin(id)
	}
}

// loggedIn reports the request's login, checking its token again. A
// cookie naming no login is a failed authentication (a guessed cookie, or
// one from before a restart): limited reports that the failed-login
// limit answered the request already.
func (h *Handler) loggedIn(w http.ResponseWriter, r *http.Request) (login uiLogin, ok, limited bool) {
	return h.checkLogin(w, r, true)
}

// checkLogin is loggedIn; with charge false, a cookie of no login is not
// counted as a failed authentication (the request's login was valid
// before it waited, and ended meanwhile: signed out, or its token
// revoked).
func (h *Handler) checkLogin(w http.ResponseWriter, r *http.Request, charge bool) (login uiLogin, ok, limited bool) {
	c, err := r.Cookie(uiCookie)
	if err != nil || c.Value == "" {
		return uiLogin{}, false, false
	}
	h.mu.Lock()
	login, ok = h.uiLogins[c.Value]
	h.mu.Unlock()
	if !ok && !charge {
		clearLoginCookie(w, r)
		return uiLogin{}, false, false
	}
	if !ok {
		// A guessed cookie, or one from before a restart: a failure
		// like a wrong token, though the miss costs no lookup. The
		// browser is told to drop it, or every request it makes (a
		// page's assets, a tab's event stream) would count again and use
		// up its address's budget before the person can sign in.
		clearLoginCookie(w, r)
		if !h.admit(w, r, c.Value) {
			return uiLogin{}, false, true
		}
		h.authFailed(r, c.Value, "unknown login cookie")
		return uiLogin{}, false, false
	}
	if !time.Now().Before(login.until) {
		h.endLogin(c.Value)
		clearLoginCookie(w, r)
		return uiLogin{}, false, false
	}
	t, err := h.opts.Tokens.Get(r.Context(), login.tokenID)
	if err != nil || !tokenValid(t, time.Now()) {
		h.endLogin(c.Value)
		clearLoginCookie(w, r)
		return uiLogin{}, false, false
	}
	if rec, ok := r.Context().Value(recKey{}).(*accessRecord); ok {
		rec.token = &t
	}
	return login, true, false
}

// login shows the sign-in form, or trades a human token (form field or
// the login URL's query) or a one-time login link for a login cookie.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; form-action 'self'; frame-ancestors 'none'")
	var secret, link string
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		q := r.URL.Query()
		secret, link = q.Get("token"), q.Get("link")
		if r.Method == http.MethodHead && secret == "" {
			// Link previewers and scanners probe with HEAD: that must
			// not use up a one-time link.
			link = ""
		}
		if secret == "" && link == "" {
			h.loginForm(w, http.StatusOK, "")
			return
		}
		if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
			// A login URL followed from another site's page: signing in
			// would put whoever's token it carries in place of the
			// person's login (login CSRF). Typed or pasted URLs say
			// "none".
			h.loginForm(w, http.StatusForbidden, "This sign-in link was opened from another site; paste your token here, or open the link by pasting it into the address bar.")
			return
		}
	case http.MethodPost:
		r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
		if err := r.ParseForm(); err != nil {
			h.loginForm(w, http.StatusBadRequest, "The form could not be read.")
			return
		}
		secret = r.PostForm.Get("token")
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "405 method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var t accesstoken.Token
	var err error
	useLink := link != "" && secret == ""
	presented := secret
	if useLink {
		presented = link
	}
	if !h.admit(w, r, presented) {
		return
	}
	if useLink {
		t, err = h.opts.Tokens.UseLoginLink(r.Context(), link)
	} else {
		t, err = h.opts.Tokens.Verify(r.Context(), secret)
	}
	rec, _ := r.Context().Value(recKey{}).(*accessRecord)
	switch {
	case useLink && (errors.Is(err, accesstoken.ErrLoginLinkInvalid) || errors.Is(err, accesstoken.ErrExpired) || errors.Is(err, accesstoken.ErrRevoked)):
		h.authFailed(r, link, err.Error())
		h.loginForm(w, http.StatusUnauthorized, "That sign-in link was used already, has expired, or its token was revoked; ask for a new one (engram token login-url ID) or paste your token here.")
		return
	case errors.Is(err, accesstoken.ErrInvalid), errors.Is(err, accesstoken.ErrExpired), errors.Is(err, accesstoken.ErrRevoked):
		h.authFailed(r, secret, err.Error())
		h.loginForm(w, http.StatusUnauthorized, "That token is unknown, expired or revoked.")
		return
	case err != nil:
		h.log.Error("serve: verify token", "err", err)
		http.Error(w, "500 internal error checking the token", http.StatusInternalServerError)
		return
	case t.Human == "":
		if rec != nil {
			rec.refused = fmt.Sprintf("token %d is an agent's, not a human's", t.ID)
		}
		h.loginForm(w, http.StatusUnauthorized, "That is an agent's token; the web UI takes a person's (engram token create --human NAME).")
		return
	}
	if !useLink {
		// A token may come again (another browser); a link is spent.
		h.authSucceeded(r, secret)
	}
	if rec != nil {
		rec.token = &t
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		http.Error(w, "500 internal error", http.StatusInternalServerError)
		return
	}
	id := base64.RawURLEncoding.EncodeToString(b)
	until := time.Now().Add(h.opts.UISession)
	if !t.ExpiresAt.IsZero() && t.ExpiresAt.Before(until) {
		until = t.ExpiresAt
	}
	lctx, lcancel := context.WithCancel(h.ctx)
	h.mu.Lock()
	h.uiLogins[id] = uiLogin{tokenID: t.ID, human: t.Human, until: until, ctx: lctx, cancel: lcancel}
	h.mu.Unlock()
	// The cookie goes only to the UI's paths: /mcp takes bearer tokens.
	http.SetCookie(w, &http.Cookie{Name: uiCookie, Value: id, Path: UIPath, Expires: until, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, UIPath+"/", http.StatusSeeOther)
}

func (h *Handler) loginForm(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	loginPage.Execute(w, msg)
}

// ui returns human's web UI, made on first use.
func (h *Handler) ui(human string) (http.Handler, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if u, ok := h.uis[human]; ok {
		return u, nil
	}
	u, err := h.opts.UI(h.ctx, human)
	if err != nil {
		return nil, err
	}
	h.uis[human] = u
	return u, nil
}

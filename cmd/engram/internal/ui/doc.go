// Package ui is engram's local web app, served by "engram ui": a person's
// window into a store. It shows each agent's blocks, a block's content and
// history (with a diff per change, an as-of view and restore), the pending
// proposals with approve and reject, the request the builder builds for an
// agent and a model, and search with each result's score explanation.
// Pages follow the store live through server-sent events. Options.BasePath
// mounts the app under a path prefix, as "engram serve" does at /ui.
//
// Everything is standard library: net/http, html/template, and templates,
// a stylesheet and one small script embedded with embed. No build step, no
// CDN.
//
// Security model: the server is meant for loopback. Every request must
// carry the server's random token, first in the URL printed at start,
// which signs in once (the browser gets an HttpOnly, SameSite=Strict
// session cookie holding a separate secret, and the token is stripped from
// the address bar), and afterwards that cookie; anything else gets 401.
// Redirects go to local paths only. HTTPServer adds read-header, read and
// idle timeouts. Historical versions of a large block are computed on
// demand, one request at a time, within Options.HeavyTimeout. State-changing requests (approve, reject, restore) are
// POSTs that must carry a CSRF token derived from the secret and pass
// net/http's cross-origin protection. Memory content is hostile input: it
// is only ever written through html/template's contextual escaping, and a
// strict Content-Security-Policy (no inline script, no inline style)
// stands behind that.
package ui

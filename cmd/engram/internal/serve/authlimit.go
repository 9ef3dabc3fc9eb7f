package serve

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/engram-go/engram/internal/tokenbucket"
)

// maxTracked bounds the addresses with a failure bucket and the secrets
// remembered as good: a guesser spread over many addresses must not grow
// the process without bound (the global bucket still holds it then).
const maxTracked = 1 << 16

// goodFor is how long a secret that authenticated stays known to the
// limiter from the client address it authenticated from: its requests
// from there skip the failure buckets, so a guesser on the same address
// (a NAT, a proxy without TrustedProxies) does not lock it out. The pass
// is per address so that it is no oracle: a limited guesser elsewhere
// gets 429 for the right secret as for a wrong one. The secret is still
// verified against the store on every request.
const goodFor = 10 * time.Minute

// authLimit bounds failed authentications per client address and across
// all addresses. A request presenting a credential the limiter has not
// seen succeed goes on to the store only while its address's bucket and
// the global one have a failure left; a failure is charged after, a
// success costs nothing. Requests in flight at once from one address can
// fail past the burst; each such failure is a debt that keeps the address
// out one more 1/rate, so the sustained rate holds.
type authLimit struct {
	rate, burst             float64
	globalRate, globalBurst float64
	trusted                 []netip.Prefix
	key                     []byte // keys the digests of good secrets

	mu     sync.Mutex
	addrs  map[limitKey]*addrEntry
	global *tokenbucket.Bucket
	good   map[[sha256.Size]byte]time.Time // digest of address and secret → until
}

// addrEntry is one address's failure bucket. One not charged for
// (burst+debt)/rate is full again, what a new address gets, so it can be
// dropped.
type addrEntry struct {
	b    *tokenbucket.Bucket
	last time.Time
	debt int // failures charged to an empty bucket
}

func newAuthLimit(o *Options) (*authLimit, error) {
	a := &authLimit{rate: o.AuthFailureRate, burst: float64(o.AuthFailureBurst),
		globalRate: o.AuthFailureGlobalRate, globalBurst: float64(o.AuthFailureGlobalBurst),
		key: make([]byte, 32), addrs: map[limitKey]*addrEntry{}, good: map[[sha256.Size]byte]time.Time{}}
	if _, err := rand.Read(a.key); err != nil {
		return nil, fmt.Errorf("serve: key for the failed-login limit: %w", err)
	}
	a.global = tokenbucket.Full(a.globalBurst, time.Now())
	for _, p := range o.TrustedProxies {
		pfx, err := parsePrefix(p)
		if err != nil {
			return nil, fmt.Errorf("%w: trusted proxy %q is not an address or CIDR prefix", ErrInvalidOptions, p)
		}
		a.trusted = append(a.trusted, pfx)
	}
	return a, nil
}

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err == nil && p.Addr().Is4In6() && p.Bits() >= 96 {
			// Peers are compared unmapped: an IPv4-mapped prefix as
			// written would match none of them.
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		return p.Masked(), err
	}
	ip, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil {
		return netip.Prefix{}, err
	}
	ip = ip.Unmap()
	return netip.PrefixFrom(ip, ip.BitLen()), nil
}

// limitKey is what a request's failures are counted against: the client
// address (an IPv6 one by its /64) and, when X-Forwarded-For named it,
// the trusted peer that forwarded it. A client that reaches the port
// directly from another address of a trusted prefix and names a victim
// in the header then spends its own count for that name, not the one
// of the victim's requests through the proxy.
type limitKey struct {
	via    netip.Addr // the trusted peer, or zero
	client netip.Prefix
}

// limitKey is r's key.
func (a *authLimit) limitKey(r *http.Request) limitKey {
	peer := peerAddr(r)
	client := a.clientAddr(r)
	k := limitKey{client: addrKey(client)}
	if client != peer {
		k.via = peer
	}
	return k
}

// peerAddr is the connection's peer address, unmapped.
func peerAddr(r *http.Request) netip.Addr {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	var ip netip.Addr
	if err == nil {
		ip = peer.Addr().Unmap()
	} else if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		ip, _ = netip.ParseAddr(host)
		ip = ip.Unmap()
	}
	return ip
}

// clientAddr is the client address of a request's failures: the
// connection's peer, or, when the peer is a trusted proxy, the
// right-most X-Forwarded-For entry that is not itself a trusted proxy
// (entries further left are whatever the client chose to send).
func (a *authLimit) clientAddr(r *http.Request) netip.Addr {
	ip := peerAddr(r)
	if !ip.IsValid() || !a.isTrusted(ip) {
		return ip
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		h := strings.TrimSpace(hops[i])
		if ap, err := netip.ParseAddrPort(h); err == nil {
			h = ap.Addr().String()
		}
		hop, err := netip.ParseAddr(strings.Trim(h, "[]"))
		if err != nil {
			return ip // a hop we cannot read: count against the last one we can trust
		}
		ip = hop.Unmap()
		if !a.isTrusted(ip) {
			return ip
		}
	}
	return ip
}

func (a *authLimit) isTrusted(ip netip.Addr) bool {
	for _, p := range a.trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// addrKey groups an IPv6 client by its /64, which one host usually holds
// whole: per-address counting would otherwise give it 2^64 buckets.
func addrKey(ip netip.Addr) netip.Prefix {
	if !ip.IsValid() {
		return netip.Prefix{}
	}
	if ip.Is4() {
		return netip.PrefixFrom(ip, 32)
	}
	p, _ := ip.Prefix(64)
	return p
}

// digest keys a secret that authenticated from r's client address (and
// the proxy that named it).
func (a *authLimit) digest(r *http.Request, secret string) [sha256.Size]byte {
	m := hmac.New(sha256.New, a.key)
	lk := a.limitKey(r)
	k, _ := lk.client.MarshalBinary()
	m.Write(k)
	m.Write([]byte{0})
	k, _ = lk.via.MarshalBinary()
	m.Write(k)
	m.Write([]byte{0})
	m.Write([]byte(secret))
	var d [sha256.Size]byte
	m.Sum(d[:0])
	return d
}

// known reports whether secret authenticated from r's client address
// within goodFor.
func (a *authLimit) known(r *http.Request, secret string, now time.Time) bool {
	if secret == "" {
		return false
	}
	d := a.digest(r, secret)
	a.mu.Lock()
	defer a.mu.Unlock()
	until, ok := a.good[d]
	return ok && now.Before(until)
}

// check reports how long until r's address and every address have a
// failure left, 0 if they have, and which is short ("address" or
// "global").
func (a *authLimit) check(r *http.Request, now time.Time) (time.Duration, string) {
	key := a.limitKey(r)
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.addrs[key]
	if !ok {
		// An address with no failure on record is not held by the global
		// ceiling: otherwise a guesser spread over enough addresses would
		// keep every new login out for as long as it kept guessing. Its
		// failure puts it on record, so each address gets one lookup past
		// the ceiling per (burst+debt)/rate, the time its entry takes to
		// be dropped. With the table full a new address cannot go on
		// record, so the ceiling holds it as if it had.
		if len(a.addrs) < maxTracked {
			return 0, ""
		}
	} else if wait := e.b.Wait(now, a.rate, a.burst); wait > 0 {
		return wait, "address"
	}
	if wait := a.global.Wait(now, a.globalRate, a.globalBurst); wait > 0 {
		return wait, "global"
	}
	return 0, ""
}

// charge counts one failure against r's address and the global budget.
func (a *authLimit) charge(r *http.Request, now time.Time) {
	key := a.limitKey(r)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.global.Charge(now, a.globalRate, a.globalBurst)
	e, ok := a.addrs[key]
	if !ok {
		if len(a.addrs) >= maxTracked {
			a.pruneLocked(now)
			if len(a.addrs) >= maxTracked {
				return // the global budget holds it
			}
		}
		e = &addrEntry{b: tokenbucket.Full(a.burst, now)}
		a.addrs[key] = e
	}
	if e.b.Wait(now, a.rate, a.burst) > 0 {
		e.debt++
	}
	e.b.Charge(now, a.rate, a.burst)
	e.last = now
}

// remember records secret as good from r's client address for goodFor
// from now; forget drops it (its token was revoked or expired since).
func (a *authLimit) remember(r *http.Request, secret string, now time.Time) {
	d := a.digest(r, secret)
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.good[d]; !ok && len(a.good) >= maxTracked {
		a.pruneLocked(now)
		if len(a.good) >= maxTracked {
			return // it only loses the bypass
		}
	}
	a.good[d] = now.Add(goodFor)
}

func (a *authLimit) forget(r *http.Request, secret string) {
	if secret == "" {
		return
	}
	d := a.digest(r, secret)
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.good, d)
}

// prune drops the address buckets that have refilled (a full bucket is
// what a new address gets) and the good secrets past their time.
func (a *authLimit) prune(now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pruneLocked(now)
}

func (a *authLimit) pruneLocked(now time.Time) {
	for k, e := range a.addrs {
		if now.Sub(e.last).Seconds()*a.rate >= a.burst+float64(e.debt) {
			delete(a.addrs, k)
		}
	}
	for d, until := range a.good {
		if !now.Before(until) {
			delete(a.good, d)
		}
	}
}

// addresses is the number of addresses with failures not yet refilled.
func (a *authLimit) addresses() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.addrs)
}

// retryAfter is a Retry-After value for wait: whole seconds, at least 1.
func retryAfter(wait time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(wait.Seconds()))))
}

// bearerToken is the token of an Authorization: Bearer header, read as
// the go-sdk's bearer middleware reads it, or "".
func bearerToken(r *http.Request) string {
	f := strings.Fields(r.Header.Get("Authorization"))
	if len(f) != 2 || !strings.EqualFold(f[0], "bearer") {
		return ""
	}
	return f[1]
}

// admit lets a request presenting secret go on to be verified: at once
// when secret is "" (nothing to look up) or authenticated recently, else
// while r's address and every address have failures left. Otherwise it
// answers 429 with Retry-After and reports false, nothing looked up.
func (h *Handler) admit(w http.ResponseWriter, r *http.Request, secret string) bool {
	now := time.Now()
	if secret == "" || h.auth.known(r, secret, now) {
		return true
	}
	wait, scope := h.auth.check(r, now)
	if wait <= 0 {
		return true
	}
	h.metrics.limited(scope)
	if rec, ok := r.Context().Value(recKey{}).(*accessRecord); ok {
		rec.refused = "failed-login limit (" + scope + ")"
	}
	w.Header().Del("WWW-Authenticate")
	w.Header().Set("Retry-After", retryAfter(wait))
	msg := "429 too many failed authentications from this address; retry after the Retry-After seconds"
	if scope == "global" {
		msg = "429 too many failed authentications on this server; retry after the Retry-After seconds"
	}
	http.Error(w, msg, http.StatusTooManyRequests)
	return false
}

// authFailed records a refused credential: one failure charged to r's
// address and the global budget, and a secret known as good (a token
// revoked since) forgotten. A request without one is not charged.
func (h *Handler) authFailed(r *http.Request, secret, why string) {
	if rec, ok := r.Context().Value(recKey{}).(*accessRecord); ok {
		rec.refused = why
	}
	if secret == "" {
		return // no credential: nothing was guessed or looked up
	}
	h.auth.forget(r, secret)
	h.auth.charge(r, time.Now())
	h.metrics.authFailure(r.URL.Path)
}

// authSucceeded records a valid credential: a reusable secret skips the
// limit from r's client address for goodFor (a one-time login link is
// not one).
func (h *Handler) authSucceeded(r *http.Request, secret string) {
	if secret != "" {
		h.auth.remember(r, secret, time.Now())
	}
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/memory"
)

// tokenJSON is a token as "token create/list --json" print it; times are
// RFC 3339 in UTC, null for never.
type tokenJSON struct {
	ID         int64      `json:"id"`
	Agent      string     `json:"agent,omitempty"`
	Human      string     `json:"human,omitempty"`
	Name       string     `json:"name"`
	ReadOnly   bool       `json:"read_only"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	// Token is the secret, in "token create --json" only.
	Token string `json:"token,omitempty"`
}

func toTokenJSON(t accesstoken.Token) tokenJSON {
	opt := func(at time.Time) *time.Time {
		if at.IsZero() {
			return nil
		}
		u := at.UTC()
		return &u
	}
	return tokenJSON{ID: t.ID, Agent: t.Agent, Human: t.Human, Name: t.Name, ReadOnly: t.ReadOnly, CreatedAt: t.CreatedAt.UTC(),
		ExpiresAt: opt(t.ExpiresAt), LastUsedAt: opt(t.LastUsedAt), RevokedAt: opt(t.RevokedAt)}
}

func cmdTokenCreate(fs *flag.FlagSet) runFunc {
	var spec accesstoken.Spec
	fs.StringVar(&spec.Agent, "agent", "", "the agent the token acts as (engram serve's /mcp)")
	fs.StringVar(&spec.Human, "human", "", "a person's name: the token opens engram serve's web UI, approvals recorded as human:NAME")
	fs.StringVar(&spec.Name, "name", "", "a label for the token (shown by token list and in access logs)")
	fs.BoolVar(&spec.ReadOnly, "read-only", false, "read and search only: no write tools")
	fs.DurationVar(&spec.Expires, "expires", 0, "lifetime, e.g. 720h (default: until revoked)")
	return func(ctx context.Context, a *app, _ []string) error {
		if (spec.Agent == "") == (spec.Human == "") {
			return usageErrorf("token create: give exactly one of --agent ID and --human NAME (run \"engram token create --help\")")
		}
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		t, secret, err := accesstoken.Of(s).Create(ctx, spec)
		if err != nil {
			return err
		}
		j := toTokenJSON(t)
		j.Token = secret
		return a.output(j, func(w io.Writer) {
			who := "agent " + t.Agent
			if t.Human != "" {
				who = "human " + t.Human
			}
			fmt.Fprintf(w, "token %d for %s%s%s\n", t.ID, who, map[bool]string{true: " (read-only)"}[t.ReadOnly], expiryText(t.ExpiresAt))
			fmt.Fprintln(w, "shown once; engram keeps only its hash:")
			fmt.Fprintln(w, secret)
		})
	}
}

func expiryText(at time.Time) string {
	if at.IsZero() {
		return ", no expiry"
	}
	return ", expires " + at.UTC().Format(time.RFC3339)
}

func cmdTokenList(fs *flag.FlagSet) runFunc {
	return func(ctx context.Context, a *app, _ []string) error {
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		ts, err := accesstoken.Of(s).List(ctx)
		if err != nil {
			return err
		}
		out := make([]tokenJSON, len(ts))
		for i, t := range ts {
			out[i] = toTokenJSON(t)
		}
		return a.output(out, func(w io.Writer) {
			if len(ts) == 0 {
				fmt.Fprintln(w, "no tokens (engram token create --agent ID)")
				return
			}
			when := func(at time.Time) string {
				if at.IsZero() {
					return "-"
				}
				return at.UTC().Format(time.RFC3339)
			}
			rows := make([][]string, len(ts))
			for i, t := range ts {
				who, access := "agent:"+t.Agent, "read-write"
				if t.Human != "" {
					who, access = "human:"+t.Human, "ui"
				} else if t.ReadOnly {
					access = "read-only"
				}
				rows[i] = []string{strconv.FormatInt(t.ID, 10), who, cmpOr(t.Name, "-"), access, when(t.CreatedAt), when(t.LastUsedAt),
					when(t.ExpiresAt), when(t.RevokedAt)}
			}
			a.table("ID\tFOR\tNAME\tACCESS\tCREATED\tLAST USED\tEXPIRES\tREVOKED", rows)
		})
	}
}

func cmdTokenRevoke(fs *flag.FlagSet) runFunc {
	return func(ctx context.Context, a *app, pos []string) error {
		if len(pos) != 1 {
			return usageErrorf("token revoke: want one token ID (run \"engram token list\")")
		}
		id, err := strconv.ParseInt(pos[0], 10, 64)
		if err != nil || id <= 0 {
			return usageErrorf("token revoke: %q is not a token ID (a positive number; run \"engram token list\")", pos[0])
		}
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		if err := accesstoken.Of(s).Revoke(ctx, id); err != nil {
			return tokenError("token revoke", id, err)
		}
		return a.output(map[string]any{"revoked": id}, func(w io.Writer) {
			fmt.Fprintf(w, "token %d revoked; serve refuses it from its next request\n", id)
		})
	}
}

// cmdTokenLoginURL prints a one-time login link of engram serve's web UI
// for a human token: the person opens it once and is signed in, without
// the token itself travelling in a URL.
func cmdTokenLoginURL(fs *flag.FlagSet) runFunc {
	base, ttl := "http://127.0.0.1:8421", 15*time.Minute
	fs.StringVar(&base, "base", base, "engram serve's address as the person's browser reaches it")
	fs.DurationVar(&ttl, "expires", ttl, "how long the link stays usable (once), at most 24h")
	return func(ctx context.Context, a *app, pos []string) error {
		if len(pos) != 1 {
			return usageErrorf("token login-url: want one human token's ID (run \"engram token list\")")
		}
		id, err := strconv.ParseInt(pos[0], 10, 64)
		if err != nil || id <= 0 {
			return usageErrorf("token login-url: %q is not a token ID (a positive number; run \"engram token list\")", pos[0])
		}
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return usageErrorf("token login-url: --base %q is not an http(s) address like http://127.0.0.1:8421", base)
		}
		if ttl <= 0 || ttl > accesstoken.MaxLoginLinkTTL {
			return usageErrorf("token login-url: --expires %v is not between 0 and %v", ttl, accesstoken.MaxLoginLinkTTL)
		}
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		secret, err := accesstoken.Of(s).CreateLoginLink(ctx, id, ttl)
		if err != nil {
			return tokenError("token login-url", id, err)
		}
		link := strings.TrimSuffix(u.String(), "/") + "/ui/login?link=" + url.QueryEscape(secret)
		return a.output(map[string]any{"token_id": id, "url": link, "expires_in": ttl.String()}, func(w io.Writer) {
			fmt.Fprintf(w, "login link for token %d, usable once within %v:\n", id, ttl)
			fmt.Fprintln(w, link)
		})
	}
}

// tokenError says what a token command's error means for token id in
// the command's words; other errors pass as they are.
func tokenError(cmd string, id int64, err error) error {
	switch {
	case errors.Is(err, memory.ErrNotFound):
		return fmt.Errorf("%s: no token %d (run \"engram token list\")", cmd, id)
	case errors.Is(err, accesstoken.ErrRevoked) && cmd == "token revoke":
		return fmt.Errorf("%s: token %d is already revoked", cmd, id)
	case errors.Is(err, accesstoken.ErrRevoked):
		return fmt.Errorf("%s: token %d is revoked", cmd, id)
	case errors.Is(err, accesstoken.ErrExpired):
		return fmt.Errorf("%s: token %d has expired", cmd, id)
	case errors.Is(err, accesstoken.ErrNotHuman):
		return fmt.Errorf("%s: token %d is an agent's; the web UI signs in people (engram token create --human NAME)", cmd, id)
	}
	return err
}

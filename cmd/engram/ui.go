package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/engram-go/engram/cmd/engram/internal/ui"
	"github.com/engram-go/engram/internal/redact"
)

// cmdUI serves the web app until the context ends (Ctrl-C).
func cmdUI(fs *flag.FlagSet) runFunc {
	var addr, person, model string
	fs.StringVar(&addr, "addr", "127.0.0.1:0", "listen address (port 0: a free port); keep it on loopback")
	fs.StringVar(&person, "as", "", `your name, recorded as "human:NAME" on approvals, rejections and restores (default $USER)`)
	fs.StringVar(&model, "model", "gpt-4o", "the model the context page starts with")
	return func(ctx context.Context, a *app, _ []string) error {
		a.serving = true // many searches: keep the full-text index in memory
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		srv, err := ui.New(s, &ui.Options{Person: ui.PersonName(person), Model: model,
			Logger: slog.New(slog.NewTextHandler(a.stderr, nil))})
		if err != nil {
			return err
		}
		defer srv.Close()
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("ui: listen on %s: %w", addr, err)
		}
		tcp := ln.Addr().(*net.TCPAddr)
		host := tcp.IP.String()
		if tcp.IP.IsUnspecified() {
			host = "127.0.0.1"
		}
		if !tcp.IP.IsLoopback() {
			fmt.Fprintf(a.stderr, "engram ui: warning: listening on %s, reachable from other machines; the token is the only protection and HTTP is not encrypted\n", tcp)
		}
		link := srv.URL("http://" + net.JoinHostPort(host, fmt.Sprint(tcp.Port)))
		hs := srv.HTTPServer()
		errc := make(chan error, 1)
		go func() { errc <- hs.Serve(ln) }()
		db := redact.Target(a.db)
		if err := a.output(map[string]any{"url": link, "db": db}, func(w io.Writer) {
			fmt.Fprintf(w, "engram ui for %s\nopen %s\n(Ctrl-C stops it)\n", db, link)
		}); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case err := <-errc:
			return fmt.Errorf("ui: serve: %w", err)
		}
		// Event streams end when the app closes; then the server can drain.
		srv.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("ui: shut down: %w", err)
		}
		return nil
	}
}

package serve

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// recKey carries the accessRecord a request fills in for its log line.
type recKey struct{}

// accessRecord is what authentication learned about a request: for the
// access log, and the server the SDK's getServer hands the request to.
type accessRecord struct {
	token   *accesstoken.Token
	server  *mcp.Server
	refused string // why the token was refused
}

// logWriter records the status and size of a response. It passes
// Flush on (event streams need it) and unwraps for http.ResponseController.
type logWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool
	// onStream, when set, is called as a text/event-stream response
	// starts.
	onStream func()
	// body is the request's body, when it has one.
	body *seenBody
}

// refusalDrain is how long net/http may read the rest of a refused
// request's unread body before the connection closes instead.
const refusalDrain = 100 * time.Millisecond

// seenBody is a request body that records whether it was read to its end.
type seenBody struct {
	io.ReadCloser
	eof bool
}

func (b *seenBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (w *logWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
		if code >= 400 && w.body != nil && !w.body.eof {
			// A refusal with the body unread: net/http reads what is
			// left of it (up to 256 KiB) before answering, to keep the
			// connection. A body already sent is read at once; one a
			// client sends slowly would hold the answer and the
			// connection until the read timeout, so the read gets
			// refusalDrain, and past it the connection closes.
			_ = http.NewResponseController(w.ResponseWriter).SetReadDeadline(time.Now().Add(refusalDrain))
		}
		if w.onStream != nil && strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
			w.onStream()
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *logWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *logWriter) Flush() {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *logWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logRequest writes the access log line: the path without its query (a
// login URL carries a secret there), the token's id and name and whom it
// acts for, never the secret or the Authorization header.
func (h *Handler) logRequest(r *http.Request, w *logWriter, rec *accessRecord, start time.Time) {
	attrs := []slog.Attr{
		slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", w.status),
		slog.Int64("bytes", w.bytes), slog.Float64("ms", float64(time.Since(start).Microseconds())/1000), slog.String("remote", r.RemoteAddr),
	}
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
		attrs = append(attrs, slog.String("session", short(sid)))
	}
	if t := rec.token; t != nil {
		attrs = append(attrs, slog.Int64("token_id", t.ID), slog.String("token_name", t.Name))
		if t.Agent != "" {
			attrs = append(attrs, slog.String("agent", t.Agent))
		} else {
			attrs = append(attrs, slog.String("human", t.Human))
		}
	}
	if rec.refused != "" {
		attrs = append(attrs, slog.String("refused", rec.refused))
	}
	h.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
	h.metrics.request(r.URL.Path, w.status)
}

// short is the start of a session id: enough to follow a session in the
// log, not enough to use it.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

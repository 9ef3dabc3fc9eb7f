package redact_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/redact"
)

func TestTarget(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/var/lib/engram.db", "/var/lib/engram.db"},
		{":memory:", ":memory:"},
		{"postgres://ada:s3cret@db.example:5432/engram?sslmode=disable", "postgres://ada:xxxxx@db.example:5432/engram?sslmode=disable"},
		{"postgres://ada@db/engram", "postgres://ada@db/engram"},
		// A bad escape: url.Parse fails, which once printed it whole.
		{"postgres://user:SECRET%PW@localhost/db", "postgres://user:xxxxx@localhost/db"},
		// Unescaped delimiters in the password.
		{"postgres://user:pa/ss@localhost/db", "postgres://xxxxx@localhost/db"},
		{"postgres://user:p@ss@localhost/db", "postgres://user:xxxxx@localhost/db"},
		{"postgres://h/db?password=s3cret&sslmode=require", "postgres://h/db?password=xxxxx&sslmode=require"},
		{"postgres://h/db?PassWord=s3cret&sslpassword=k&x#frag", "postgres://h/db?PassWord=xxxxx&sslpassword=xxxxx&xxxxx#xxxxx"},
		{"  postgres://u:s3cret@h/db", "  postgres://u:xxxxx@h/db"},
		{"https://key:s3cret@api.example/v1/embeddings?api-key=k&api-version=2024", "https://key:xxxxx@api.example/v1/embeddings?api-key=xxxxx&api-version=2024"},
		{"host=db.example dbname=engram user=ada password=s3cret", "host=db.example dbname=engram user=ada password=xxxxx"},
		{"host=h password = 'it''s \\' s3cret' port=5432", "host=h password=xxxxx port=5432"},
		{"host=h password=a\\ b port=5432", "host=h password=xxxxx port=5432"},
		{"host=h password='unterminated s3cret", "host=h password=xxxxx"},
		{"host=h password=a://b@c", "host=h password=xxxxx"},
		{"x postgres://u:s3cret@h", "xxxxx://u:xxxxx@h"},
		// libpq expands a dbname holding a connection string.
		{"host=h dbname=postgres://u:s3cret@h/db", "host=h dbname=xxxxx"},
		{"postgres://h/db?dbname=postgresql://u:s3cret@x", "postgres://xxxxx@xxxxx"},
		// A word after an unquoted password with a space is part of it.
		{"host=h password=my s3cret dbname=d", "host=h password=xxxxx xxxxx dbname=d"},
		// An '@' in a query value (Azure's user@server) is not the end of
		// a userinfo: what follows it is still the query.
		{"postgres://h:5432/db?user=ada@srv&password=s3cret", "postgres://xxxxx@xxxxx&password=xxxxx"},
	} {
		if got := redact.Target(tc.in); got != tc.want {
			t.Errorf("Target(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzRedactTarget puts a password (marked by a leading "Z", a letter no
// other part of the generated target holds) in every position a
// PostgreSQL DSN or a service URL can carry one, escaped as it should be
// or raw as a user might type it, and checks that Target's output never
// contains it (nor its escaped form).
func FuzzRedactTarget(f *testing.F) {
	f.Add("s3cret", "ada", "db.example", "engram", uint8(0), "")
	f.Add("SECRET%PW", "user", "localhost", "db", uint8(1), "  ")
	f.Add("p@ss/w?rd#x", "u", "h", "d", uint8(3), "")
	f.Add("it's a \\ secret", "u", "h", "d", uint8(4), "")
	f.Add("a://b@c", "u", "h", "d", uint8(6), "")
	f.Add("x&sslmode=y", "", "h:5432", "d", uint8(9), "")
	f.Fuzz(func(t *testing.T, pw, user, host, db string, form uint8, lead string) {
		// "Z" and "Y" mark the password's ends; no other part of the
		// target holds an upper-case letter, so any "Z" or "Y" in the
		// output is (a piece of) the password.
		pw = "Z" + pw + "Y"
		user, host, db = plain(user), plain(host), plain(db)
		if strings.Trim(lead, " \t") != "" {
			lead = ""
		}
		var in string
		escaped := []string{pw}
		switch form % 13 {
		case 0: // userinfo, escaped
			u := &url.URL{Scheme: "postgres", User: url.UserPassword(user, pw), Host: host, Path: "/" + db}
			in = u.String()
			escaped = append(escaped, strings.TrimPrefix(url.UserPassword("", pw).String(), ":"))
		case 1: // userinfo, raw
			in = "postgres://" + user + ":" + pw + "@" + host + "/" + db + "?sslmode=disable"
		case 2: // query, escaped
			in = "postgresql://" + host + "/" + db + "?sslmode=disable&password=" + url.QueryEscape(pw)
			escaped = append(escaped, url.QueryEscape(pw))
		case 3: // query, raw
			in = "postgres://" + user + "@" + host + "/" + db + "?password=" + pw + "&application_name=" + db
		case 4: // keyword, quoted
			q := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(pw)
			in = "host=" + host + " password='" + q + "' dbname=" + db
			escaped = append(escaped, q)
		case 5: // keyword, bare with escapes
			q := strings.NewReplacer(`\`, `\\`, ` `, `\ `, "\t", "\\\t", "\n", "\\\n", "\r", "\\\r", "\f", "\\\f", "\v", "\\\v", `'`, `\'`).Replace(pw)
			in = "host=" + host + " password=" + q + " user=" + user
			escaped = append(escaped, q)
		case 6: // keyword, raw
			in = "host=" + host + " password=" + pw + " dbname=" + db
		case 7: // keyword, spaces around '=' and first
			q := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(pw)
			in = "password = '" + q + "'  host = " + host
			escaped = append(escaped, q)
		case 8: // embedder URL with user:password
			u := &url.URL{Scheme: "https", User: url.UserPassword(user, pw), Host: host, Path: "/v1/embeddings"}
			in = u.String()
			escaped = append(escaped, strings.TrimPrefix(url.UserPassword("", pw).String(), ":"))
		case 9: // embedder URL with a key in the query, raw
			in = "http://" + host + "/v1/embeddings?api-version=1&api-key=" + pw
		case 10: // password only, empty user
			in = "postgres://:" + pw + "@" + host
		case 12: // an '@' in a query value before the password
			in = "postgres://" + host + "/" + db + "?user=" + user + "@" + host + "&password=" + pw
		default: // password in a fragment
			in = "postgres://" + host + "/" + db + "#" + pw
		}
		in = lead + in
		out := redact.Target(in)
		// A raw '&' in a query password, or a raw " key=" in a keyword
		// one, starts a parameter of its own (pgx reads it so): what
		// follows is no longer the password, and a harmless key's value
		// may be shown. Every other piece of the password must be hidden.
		split := (form%13 == 3 || form%13 == 9 || form%13 == 12) && strings.Contains(pw, "&") ||
			(form%13 == 6) && strings.Contains(pw, "=")
		if !split && strings.ContainsAny(out, "ZY") {
			t.Fatalf("Target(%q) = %q still holds (a piece of) the password %q", in, out, pw)
		}
		for _, s := range escaped {
			if strings.Contains(out, s) {
				t.Fatalf("Target(%q) = %q still holds the password %q", in, out, s)
			}
		}
	})
}

// plain keeps the parts around the password to lower-case letters,
// digits, '.', '-' and ':', none of which can hold the password's "Z".
func plain(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return -1
	}, s)
}

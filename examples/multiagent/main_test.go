package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// TestMain lets the test binary play the second process.
func TestMain(m *testing.M) {
	if db := os.Getenv(childEnv); db != "" {
		if err := child(context.Background(), db); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestMultiAgent(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, os.Args[0]); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"20 of 20 updates present", "permission denied", "remote 5"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

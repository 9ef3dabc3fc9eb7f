package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/memory"
)

// FuzzArchivalCaps: whatever an archival entry holds, InsertArchival
// either stores it within every cap and the quota, or refuses it with
// ErrTooLarge, ErrQuota or ErrInvalidArgument and stores nothing; either
// way the agent's usage is what its rows count.
func FuzzArchivalCaps(f *testing.F) {
	f.Add("Ada lives in London", "person", " place ", "chat", uint8(2))
	f.Add(strings.Repeat("é", 40), "t", "t", "", uint8(5))
	f.Add("x", strings.Repeat("long", 3), "", strings.Repeat("m", 50), uint8(1))
	f.Add("  ", "a\x00b", "\xff", "v", uint8(0))
	const (
		maxContent, maxMeta, maxTags, maxTag = 64, 48, 4, 8
		quota                                = 700
	)
	c, err := memory.Open(context.Background(), fresh(filepath.Join(f.TempDir(), "caps.db")), &memory.Options{
		MaxArchivalBytes: maxContent, MaxMetadataBytes: maxMeta, MaxTags: maxTags, MaxTagBytes: maxTag, AgentQuotaBytes: quota})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { c.Close() })
	run := 0
	f.Fuzz(func(t *testing.T, content, tag1, tag2, meta string, ntags uint8) {
		ctx := context.Background()
		run++
		agent := fmt.Sprint("agent", run)
		// A first entry of 300 bytes of the agent's quota, so that the
		// second may or may not fit.
		if _, err := c.Agent(agent).Archival().Insert(ctx, memory.ArchivalEntry{Content: strings.Repeat("f", 36)}); err != nil {
			t.Fatal(err)
		}
		var tags []string
		for i := range int(ntags % 12) {
			tags = append(tags, fmt.Sprint(tag1, i%3), tag2)
		}
		e := memory.ArchivalEntry{Content: content, Tags: tags, Metadata: map[string]any{"m": meta}}
		got, err := c.Agent(agent).Archival().Insert(ctx, e)
		arch, lerr := c.Agent(agent).Archival().List(ctx, &memory.ArchivalQuery{IncludeSuperseded: true})
		if lerr != nil {
			t.Fatal(lerr)
		}
		switch {
		case err == nil:
			metaJSON, _ := json.Marshal(got.Metadata)
			if len(got.Content) > maxContent || len(metaJSON) > maxMeta || len(got.Tags) > maxTags || len(arch) != 2 {
				t.Fatalf("stored past a cap: %d bytes, metadata %d, %d tags, %d entries", len(got.Content), len(metaJSON), len(got.Tags), len(arch))
			}
			for _, tag := range got.Tags {
				if len(tag) > maxTag {
					t.Fatalf("stored a tag of %d bytes", len(tag))
				}
			}
		case errors.Is(err, memory.ErrTooLarge), errors.Is(err, memory.ErrQuota), errors.Is(err, memory.ErrInvalidArgument):
			if len(arch) != 1 {
				t.Fatalf("refused (%v) but %d entries stored", err, len(arch))
			}
		default:
			t.Fatalf("InsertArchival: %v", err)
		}
		used, err := c.Agent(agent).StorageUsed(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := usageOf(t, c, agent); used != want || used > quota {
			t.Fatalf("StorageUsed %d, rows count %d, quota %d", used, want, quota)
		}
	})
}

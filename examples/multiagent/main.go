// Command multiagent shows several agents sharing memory through one store
// file: a planner shares its "plan" block with three workers, who append
// their progress concurrently from goroutines, while a second OS process (this
// program re-executed) writes to the same block on the same file. Every
// update survives: the block is one automerge document and each process
// applies the others' changes before it writes.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// childEnv marks the re-executed second process.
const childEnv = "ENGRAM_MULTIAGENT_DB"

func main() {
	var err error
	if db := os.Getenv(childEnv); db != "" {
		err = child(context.Background(), db)
	} else {
		err = run(context.Background(), os.Stdout, os.Args[0])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "multiagent:", err)
		os.Exit(1)
	}
}

const stepsEach = 5

// run is the first process. self is the program to re-execute as the second.
func run(ctx context.Context, out io.Writer, self string) error {
	dir, err := os.MkdirTemp("", "engram-multiagent-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "team.db")
	store, err := memory.Open(ctx, path, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	plan, err := store.Agent("planner").CreateBlock(ctx, memory.BlockSpec{Label: "plan", Type: blocks.Core,
		Value: "Plan: ship the release.\n", CharLimit: 20000})
	if err != nil {
		return err
	}
	workers := []string{"alice", "bob", "carol", "remote"}
	for _, w := range workers {
		if err := plan.Share(ctx, w, blocks.Append); err != nil {
			return err
		}
	}

	// The second process starts writing while our goroutines do.
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	cmd.Stdout, cmd.Stderr = out, os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start second process: %w", err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(workers))
	for _, w := range workers[:3] {
		wg.Add(1)
		go func(w string) {
			defer wg.Done()
			shared := store.Agent(w).Shared("planner", "plan")
			for i := 1; i <= stepsEach; i++ {
				line := fmt.Sprintf("- %s: step %d done\n", w, i)
				if err := shared.Append(ctx, line); err != nil {
					errs <- fmt.Errorf("%s: %w", w, err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("second process: %w", err)
	}
	// A Replace by a worker is refused: the share grants Append only.
	err = store.Agent("bob").Shared("planner", "plan").SetText(ctx, "bob's plan")
	fmt.Fprintln(out, "bob tries to rewrite the plan:", err)

	text, err := plan.Render(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nplan after %d concurrent writers in two processes:\n%s", len(workers), text)
	lines := strings.Count(text, "\n- ")
	fmt.Fprintf(out, "\n%d of %d updates present\n", lines, len(workers)*stepsEach)
	if lines != len(workers)*stepsEach {
		return fmt.Errorf("lost updates: %d of %d", lines, len(workers)*stepsEach)
	}
	h, err := plan.History(ctx)
	if err != nil {
		return err
	}
	who := map[string]int{}
	for _, c := range h {
		who[c.Actor]++
	}
	fmt.Fprintf(out, "changes by actor: planner/system %d, alice %d, bob %d, carol %d, remote %d\n",
		who["system"], who["alice"], who["bob"], who["carol"], who["remote"])
	return nil
}

// child is the second process: the "remote" worker on the same file.
func child(ctx context.Context, path string) error {
	store, err := memory.Open(ctx, path, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	plan := store.Agent("remote").Shared("planner", "plan")
	for i := 1; i <= stepsEach; i++ {
		line := fmt.Sprintf("- remote: step %d done (pid %d)\n", i, os.Getpid())
		if err := plan.Append(ctx, line); err != nil {
			return err
		}
	}
	return nil
}

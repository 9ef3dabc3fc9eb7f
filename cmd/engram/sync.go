package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/engram-go/engram/syncrepo"
)

// cmdSyncURL prints the automerge: URL an automerge-repo peer opens a
// block by on engram serve's /sync (made on first use, new after a
// rebase).
func cmdSyncURL(fs *flag.FlagSet) runFunc {
	var agent, owner, label string
	fs.StringVar(&agent, "agent", "", "the agent whose peers open the block (it must be able to read it)")
	fs.StringVar(&owner, "owner", "", "the block's owner, for a block shared with the agent (default: the agent)")
	fs.StringVar(&label, "label", "", "the block's label")
	return func(ctx context.Context, a *app, _ []string) error {
		if agent == "" || label == "" {
			return usageErrorf("sync url: --agent and --label are required (run \"engram sync url --help\")")
		}
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		if owner == "" {
			owner = agent
		}
		id, err := s.Agent(agent).Shared(owner, label).DocumentID(ctx)
		if err != nil {
			return err
		}
		u := syncrepo.URL(id)
		return a.output(map[string]string{"url": u}, func(w io.Writer) { fmt.Fprintln(w, u) })
	}
}

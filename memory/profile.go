package memory

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/engram-go/engram/internal/unixnanos"
	"github.com/engram-go/engram/toolrules"
)

// MaxProfileBytes caps a profile's stored JSON: a system prompt, tool
// schemas and rules are what a model reads on every request, so a profile
// many times a context window is a mistake (or an attack), never an agent.
const MaxProfileBytes = 4 << 20

// Profile is what an agent is besides its memory: the system prompt it is
// given, the tools it is offered (definitions only: JSON Schemas and
// descriptions; engram never runs a tool's code), the rules those tools
// follow and the model it runs on. A profile is stored with the agent,
// travels in Export and Import, and is what the builder uses for whatever
// a caller does not set (see builder.Builder).
type Profile struct {
	// System is the agent's system prompt (the builder's base
	// instructions).
	System string `json:"system,omitempty"`
	// Model names the model the agent runs on ("gpt-4o-mini",
	// "claude-sonnet-4-5-20250929"); ContextWindow is its window in tokens
	// when the agent's configuration said (0: the model's known one).
	Model         string `json:"model,omitempty"`
	ContextWindow int    `json:"context_window,omitempty"`
	// Tools are the agent's own tool definitions, names unique.
	Tools []ToolDefinition `json:"tools,omitempty"`
	// ToolRules are the rules the agent's tools follow.
	ToolRules []toolrules.Rule `json:"tool_rules,omitempty"`
	// Extensions keep, per format ("letta"), what that format said about
	// the agent that engram does not model (a provider configuration, a
	// tool's source code, a block's metadata), so that an export to the
	// format writes it back. Each value is a JSON document engram stores
	// and never interprets.
	Extensions map[string]json.RawMessage `json:"extensions,omitempty"`
	// UpdatedAt is when the profile was last set (set by the store).
	UpdatedAt time.Time `json:"updated_at"`
}

// ToolDefinition is one tool an agent is offered, as a model sees it.
type ToolDefinition struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the arguments (an object schema);
	// empty means none.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// IsZero reports whether p says nothing (no prompt, model, tools, rules or
// extensions).
func (p Profile) IsZero() bool {
	return p.System == "" && p.Model == "" && p.ContextWindow == 0 && len(p.Tools) == 0 && len(p.ToolRules) == 0 && len(p.Extensions) == 0
}

// checkProfile refuses a profile the store could not give back or a
// builder could not use: tools without a name or with one twice,
// parameters that are not a JSON object, rules with bad arguments (an
// unknown kind, no tool, a negative count: toolrules.ProblemInvalid), an
// extension that is not JSON, text that is not storable, or more than
// MaxProfileBytes in all. It returns the profile's JSON.
func checkProfile(agent string, p Profile) ([]byte, error) {
	if p.ContextWindow < 0 {
		return nil, invalidArg("profile of %q: context window %d is negative", agent, p.ContextWindow)
	}
	seen := make(map[string]bool, len(p.Tools))
	for i, t := range p.Tools {
		if strings.TrimSpace(t.Name) == "" {
			return nil, invalidArg("profile of %q: tool %d has no name", agent, i)
		}
		if seen[t.Name] {
			return nil, invalidArg("profile of %q: two tools named %q", agent, t.Name)
		}
		seen[t.Name] = true
		if len(bytes.TrimSpace(t.Parameters)) > 0 {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(t.Parameters, &obj); err != nil || obj == nil {
				return nil, invalidArg("profile of %q: tool %q: parameters are not a JSON Schema object", agent, t.Name)
			}
		}
	}
	for _, pr := range toolrules.Validate(p.ToolRules) {
		if pr.Kind == toolrules.ProblemInvalid {
			return nil, invalidArg("profile of %q: tool rule: %s", agent, pr)
		}
	}
	for name, ext := range p.Extensions {
		if !json.Valid(ext) {
			return nil, invalidArg("profile of %q: extension %q is not JSON", agent, name)
		}
	}
	if err := checkStorable(agent, "profile", "", p); err != nil {
		return nil, err
	}
	p.UpdatedAt = time.Time{}
	data, err := json.Marshal(p)
	if err != nil {
		return nil, invalidArg("profile of %q: %v", agent, err)
	}
	if len(data) > MaxProfileBytes {
		return nil, invalidArg("profile of %q is %d bytes of JSON, over the cap of %d (MaxProfileBytes)", agent, len(data), MaxProfileBytes)
	}
	return data, nil
}

// profile implements [Agent.Profile].
func (c *Store) profile(ctx context.Context, agent string) (Profile, error) {
	if err := c.checkOpen(ctx); err != nil {
		return Profile{}, err
	}
	if err := checkAgent(agent); err != nil {
		return Profile{}, err
	}
	st, err := c.prepared(ctx, `SELECT profile_json, updated_at FROM agent_profiles WHERE agent = ?`)
	if err != nil {
		return Profile{}, fmt.Errorf("memory: read the profile of %q: %w", agent, err)
	}
	var (
		js string
		at int64
	)
	if err := st.QueryRowContext(ctx, agent).Scan(&js, unixnanos.Scanner{N: &at}); errors.Is(err, sql.ErrNoRows) {
		return Profile{}, notFound("profile of agent %q", agent)
	} else if err != nil {
		return Profile{}, fmt.Errorf("memory: read the profile of %q: %w", agent, err)
	}
	var p Profile
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		return Profile{}, fmt.Errorf("memory: the stored profile of %q does not decode: %w", agent, err)
	}
	p.UpdatedAt = fromNanos(at)
	return p, nil
}

// setProfile implements [Agent.SetProfile] (checkProfile says what is
// refused).
func (c *Store) setProfile(ctx context.Context, agent string, p Profile) error {
	if err := c.checkOpen(ctx); err != nil {
		return err
	}
	if err := checkAgent(agent); err != nil {
		return err
	}
	data, err := checkProfile(agent, p)
	if err != nil {
		return err
	}
	err = c.write(ctx, agentLock(agent), func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.Exec(`INSERT INTO agent_profiles (agent, profile_json, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (agent) DO UPDATE SET profile_json = excluded.profile_json, updated_at = excluded.updated_at`,
			agent, string(data), c.nanos()); err != nil {
			return err
		}
		return bumpGen(tx, agent)
	})
	if err != nil {
		return fmt.Errorf("memory: set the profile of %q: %w", agent, err)
	}
	return nil
}

// deleteProfile implements [Agent.DeleteProfile].
func (c *Store) deleteProfile(ctx context.Context, agent string) error {
	if err := c.checkOpen(ctx); err != nil {
		return err
	}
	if err := checkAgent(agent); err != nil {
		return err
	}
	err := c.write(ctx, agentLock(agent), func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM agent_profiles WHERE agent = ?`, agent)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound("profile of agent %q", agent)
		}
		return bumpGen(tx, agent)
	})
	if err != nil {
		return fmt.Errorf("memory: delete the profile of %q: %w", agent, err)
	}
	return nil
}

// Profile returns the agent's profile, with UpdatedAt set, or an error
// wrapping [ErrNotFound] when it has none.
func (a *Agent) Profile(ctx context.Context) (Profile, error) {
	if err := a.check(ctx); err != nil {
		return Profile{}, err
	}
	return a.s.profile(ctx, a.id)
}

// SetProfile stores p as the agent's profile, replacing any it had. It is
// refused with [ErrInvalidArgument], and nothing stored, when the store
// could not give it back or a builder could not use it: a tool without a
// name or with one twice, parameters that are not a JSON Schema object, a
// tool rule with bad arguments, an extension that is not JSON, a negative
// context window, text that is not storable, or more than
// [MaxProfileBytes] of JSON in all. The agent's [Agent.BlocksStamp]
// changes, so builders caching what they read under it read the profile
// again.
func (a *Agent) SetProfile(ctx context.Context, p Profile) error {
	if err := a.check(ctx); err != nil {
		return err
	}
	return a.s.setProfile(ctx, a.id, p)
}

// DeleteProfile removes the agent's profile; an agent without one is
// [ErrNotFound]. The agent's [Agent.BlocksStamp] changes, as for
// [Agent.SetProfile].
func (a *Agent) DeleteProfile(ctx context.Context) error {
	if err := a.check(ctx); err != nil {
		return err
	}
	return a.s.deleteProfile(ctx, a.id)
}

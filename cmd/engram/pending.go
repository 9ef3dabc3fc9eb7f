package main

import (
	"context"
	"errors"
)

func cmdContext(ctx context.Context, a *app, args []string) error {
	return errors.New("context: not available yet")
}

func cmdMCP(ctx context.Context, a *app, args []string) error {
	return errors.New("mcp: not available yet")
}
